//! Samples, summaries and the table's rows: what one measured figure is, what it is compared with, and whether
//! it met its budget.

use serde_json::{json, Value};

/// What a row's figures measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A duration in nanoseconds (displayed in ns, µs or ms).
    Nanos,
    /// Calls per second.
    PerSecond,
    /// Megabytes (MiB).
    Megabytes,
    /// Kibibytes (KiB): what one of many small things costs.
    Kibibytes,
    /// A number of things (descriptors).
    Count,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::Nanos => "ns",
            Unit::PerSecond => "calls/s",
            Unit::Megabytes => "MiB",
            Unit::Kibibytes => "KiB",
            Unit::Count => "count",
        }
    }

    /// A value of this unit for a person: three significant digits and a readable scale.
    pub fn show(self, value: f64) -> String {
        match self {
            Unit::Nanos if value >= 1e6 => format!("{} ms", sig3(value / 1e6)),
            Unit::Nanos if value >= 1e3 => format!("{} µs", sig3(value / 1e3)),
            Unit::Nanos => format!("{} ns", sig3(value)),
            Unit::PerSecond => format!("{} calls/s", thousands(value)),
            Unit::Megabytes => format!("{} MiB", sig3(value)),
            Unit::Kibibytes => format!("{} KiB", sig3(value)),
            Unit::Count => thousands(value),
        }
    }
}

/// Three significant digits, without a trailing exponent.
fn sig3(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// An integer with thousands separators, as budgets are written ("300,000").
fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The median and 99th percentile of a set of samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    pub median: f64,
    /// Only where latency matters (single calls); absent for totals and rates.
    pub p99: Option<f64>,
    pub samples: usize,
}

impl Figure {
    /// Median and p99 of `samples` (nearest-rank).
    pub fn with_p99(samples: &mut [f64]) -> Self {
        samples.sort_by(f64::total_cmp);
        Self { median: rank(samples, 0.5), p99: Some(rank(samples, 0.99)), samples: samples.len() }
    }

    /// The median of `samples` alone.
    pub fn median(samples: &mut [f64]) -> Self {
        Self { p99: None, ..Self::with_p99(samples) }
    }

    fn show(&self, unit: Unit) -> String {
        match self.p99 {
            Some(p99) => format!("{} (p99 {})", unit.show(self.median), unit.show(p99)),
            None => unit.show(self.median),
        }
    }

    fn json(&self) -> Value {
        json!({ "median": self.median, "p99": self.p99, "samples": self.samples })
    }
}

/// The sample at quantile `q` of sorted samples (nearest rank; 0 for none).
fn rank(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index]
}

/// A row's budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// Our cost divided by the reference's is at most this.
    RatioAtMost(f64),
    /// Our p99 divided by the reference's p99 is at most this: for rows about waiting, where the tail is the
    /// point and the medians may hide it. The ratio column is then the p99s'.
    P99RatioAtMost(f64),
    /// Recorded for the reader; no budget.
    Report,
    /// Not measurable yet (what it waits for is in the row's text): no figures are shown, only the budget it
    /// will be held to. (No row waits now; kept for the next one that does.)
    #[allow(dead_code)]
    Pending(&'static str),
}

/// One line of the table.
#[derive(Debug, Clone)]
pub struct Row {
    /// The issue's row number and a letter: `1a`, `4b`, …
    pub id: String,
    /// What was measured.
    pub what: String,
    pub unit: Unit,
    pub ours: Figure,
    /// What the figure is compared with.
    pub reference_name: String,
    pub reference: Figure,
    pub target: Target,
    /// Whether a higher figure is better (rates): the ratio is then reference / ours, so that every ratio
    /// reads as our cost over the reference's.
    pub higher_is_better: bool,
    /// Context for the reader: what the figures include or leave out.
    pub note: Option<String>,
}

impl Row {
    /// A row that waits for a feature: its id, what it will measure, and the budget it will be held to.
    #[allow(dead_code)]
    pub fn pending(id: &str, what: String, budget: &'static str, unit: Unit, note: Option<String>) -> Self {
        let none = Figure { median: 0.0, p99: None, samples: 0 };
        Self {
            id: id.to_owned(),
            what,
            unit,
            ours: none,
            reference_name: String::new(),
            reference: none,
            target: Target::Pending(budget),
            higher_is_better: false,
            note,
        }
    }

    /// Our cost over the reference's: below 1 means we are cheaper. Medians, or p99s where the budget is on them.
    pub fn ratio(&self) -> f64 {
        let pick = |figure: &Figure| match self.target {
            Target::P99RatioAtMost(_) => figure.p99.unwrap_or(figure.median),
            _ => figure.median,
        };
        let (ours, reference) = (pick(&self.ours), pick(&self.reference));
        let (cost, base) = if self.higher_is_better { (reference, ours) } else { (ours, reference) };
        if base > 0.0 {
            cost / base
        } else {
            f64::INFINITY
        }
    }

    /// Whether the row met its budget; `None` when it has none.
    pub fn pass(&self) -> Option<bool> {
        match self.target {
            Target::RatioAtMost(limit) | Target::P99RatioAtMost(limit) => Some(self.ratio() <= limit),
            Target::Report | Target::Pending(_) => None,
        }
    }

    fn target_text(&self) -> String {
        match self.target {
            Target::RatioAtMost(limit) => format!("≤ {limit}×"),
            Target::P99RatioAtMost(limit) => format!("p99 ≤ {limit}×"),
            Target::Report => "report".to_owned(),
            Target::Pending(budget) => budget.to_owned(),
        }
    }

    /// The row as a Markdown table line.
    pub fn markdown(&self) -> String {
        let mark = match self.pass() {
            Some(true) => "ok",
            Some(false) => "FAIL",
            None => "",
        };
        let what = match &self.note {
            Some(note) => format!("{} ({note})", self.what),
            None => self.what.clone(),
        };
        // A pipe inside a cell (`tail | head`) would end the cell.
        let cell = |text: &str| text.replace('|', "\\|");
        if let Target::Pending(_) = self.target {
            return format!("| {} | {} | pending | – | – | {} | |", self.id, cell(&what), self.target_text());
        }
        format!(
            "| {} | {} | {} | {}: {} | {:.2}× | {} | {mark} |",
            self.id,
            cell(&what),
            self.ours.show(self.unit),
            cell(&self.reference_name),
            self.reference.show(self.unit),
            self.ratio(),
            self.target_text(),
        )
    }

    /// The row with every number, for `latest.json`.
    pub fn json(&self) -> Value {
        let target = match self.target {
            Target::RatioAtMost(limit) => json!({ "ratio_at_most": limit }),
            Target::P99RatioAtMost(limit) => json!({ "p99_ratio_at_most": limit }),
            Target::Report => Value::Null,
            Target::Pending(budget) => json!({ "pending": budget }),
        };
        if let Target::Pending(_) = self.target {
            // No figures at all: zeros here would read as measurements.
            return json!({
                "id": self.id,
                "what": self.what,
                "note": self.note,
                "unit": self.unit.name(),
                "ours": Value::Null,
                "reference": Value::Null,
                "ratio": Value::Null,
                "target": target,
                "pass": Value::Null,
            });
        }
        json!({
            "id": self.id,
            "what": self.what,
            "note": self.note,
            "unit": self.unit.name(),
            "ours": self.ours.json(),
            "reference": { "name": self.reference_name, "figure": self.reference.json() },
            "ratio": self.ratio(),
            "target": target,
            "pass": self.pass(),
        })
    }
}

/// The table's header.
pub const TABLE_HEADER: &str = "| row | what | ours | reference | ratio | target | |\n|---|---|---|---|---|---|---|";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_and_display() {
        let mut samples: Vec<f64> = (1..=100).map(f64::from).collect();
        let figure = Figure::with_p99(&mut samples);
        assert_eq!((figure.median, figure.p99), (50.0, Some(99.0)));
        assert_eq!(Unit::Nanos.show(1234.0), "1.23 µs");
        assert_eq!(Unit::Nanos.show(812.0), "812 ns");
        assert_eq!(Unit::Nanos.show(31_400_000.0), "31.4 ms");
        assert_eq!(Unit::PerSecond.show(1_234_567.4), "1,234,567 calls/s");
    }

    #[test]
    fn rates_compare_as_costs() {
        let figure = |median| Figure { median, p99: None, samples: 1 };
        let row = Row {
            id: "1c".to_owned(),
            what: "w".to_owned(),
            unit: Unit::PerSecond,
            ours: figure(500_000.0),
            reference_name: "r".to_owned(),
            reference: figure(1_000_000.0),
            target: Target::RatioAtMost(4.0),
            higher_is_better: true,
            note: None,
        };
        assert_eq!(row.ratio(), 2.0);
        assert_eq!(row.pass(), Some(true));
        assert_eq!(Row { ours: figure(200_000.0), ..row }.pass(), Some(false));
    }

    #[test]
    fn p99_budgets_compare_the_tails() {
        let figure = |median, p99| Figure { median, p99: Some(p99), samples: 100 };
        let row = Row {
            id: "6g".to_owned(),
            what: "w".to_owned(),
            unit: Unit::Nanos,
            ours: figure(100.0, 500.0),
            reference_name: "r".to_owned(),
            reference: figure(100.0, 200.0),
            target: Target::P99RatioAtMost(2.0),
            higher_is_better: false,
            note: None,
        };
        assert_eq!(row.ratio(), 2.5);
        assert_eq!(row.pass(), Some(false));
        assert!(row.markdown().contains("| 2.50× | p99 ≤ 2× | FAIL |"));
    }

    #[test]
    fn pending_rows_show_no_figures() {
        let row = Row::pending("7b", "later".to_owned(), "≤ 1 MiB per reload", Unit::Megabytes, None);
        assert_eq!(row.pass(), None);
        assert_eq!(row.markdown(), "| 7b | later | pending | – | – | ≤ 1 MiB per reload | |");
        assert_eq!(row.json()["ours"], Value::Null);
    }
}
