//! Cline's result text (`formatResults` and the multi-workspace wrapper of `SearchFilesToolHandler`), byte
//! for byte: the count header, one group per file (`│----` fences, `│`-prefixed lines), the 300-result
//! header, and the 0.25 MB cap with its note.

use crate::search::Hit;

/// Cline's `MAX_RESULTS`.
pub(crate) const MAX_RESULTS: usize = 300;
/// Cline's byte cap: `0.25 * 1024 * 1024`, counted in UTF-8 bytes.
pub(crate) const MAX_BYTES: usize = 262_144;
/// Appended when the cap cut the output, if it still fits.
pub(crate) const TRUNCATION_NOTE: &str =
    "\n[Results truncated due to exceeding the 0.25MB size limit. Please use a more specific search pattern.]";
/// Opens a file's group (after its path) and separates two results within it.
const FENCE: &str = "│----\n";
/// Closes a file's group.
const CLOSE: &str = "│----\n\n";

/// One file's results, under the path shown for it.
pub(crate) struct Group<'a> {
    /// The path relative to the workspace root, with `/` separators.
    pub(crate) path: String,
    /// Its results, in line order.
    pub(crate) hits: &'a [Hit],
}

/// One workspace root's part of an all-roots search.
pub(crate) struct RootResults {
    /// The root's name.
    pub(crate) name: String,
    /// Its results as [`results`] renders them.
    pub(crate) text: String,
    /// How many results it has.
    pub(crate) count: usize,
}

/// The text of one search: `count` results (at most [`MAX_RESULTS`] are passed) in `groups`.
pub(crate) fn results(groups: &[Group<'_>], count: usize) -> String {
    let mut out = if count >= MAX_RESULTS {
        format!("Showing first {MAX_RESULTS} of {MAX_RESULTS}+ results. Use a more specific search if necessary.\n\n")
    } else {
        format!("Found {}.\n\n", plural(count))
    };
    let limited = !append_groups(&mut out, groups);
    if limited && out.len() + TRUNCATION_NOTE.len() < MAX_BYTES {
        out.push_str(TRUNCATION_NOTE);
    }
    out.trim().to_owned()
}

/// Appends the groups while the output stays under [`MAX_BYTES`]; `false` when the cap stopped it. As in
/// Cline, a piece that would reach the cap is not written, and a result is written whole or not at all.
fn append_groups(out: &mut String, groups: &[Group<'_>]) -> bool {
    let fits = |out: &String, extra: usize| out.len() + extra < MAX_BYTES;
    for group in groups {
        let heading = format!("{}\n{FENCE}", group.path);
        if !fits(out, heading.len()) {
            return false;
        }
        out.push_str(&heading);
        for (index, hit) in group.hits.iter().enumerate() {
            let mut block = String::new();
            for line in hit.before.iter().chain(std::iter::once(&hit.text)).chain(&hit.after) {
                let piece = format!("│{}\n", line.trim_end());
                if !fits(out, block.len() + piece.len()) {
                    return false;
                }
                block.push_str(&piece);
            }
            out.push_str(&block);
            if index + 1 < group.hits.len() {
                if !fits(out, FENCE.len()) {
                    return false;
                }
                out.push_str(FENCE);
            }
        }
        if !fits(out, CLOSE.len()) {
            return false;
        }
        out.push_str(CLOSE);
    }
    true
}

/// The text of a search across every workspace root: Cline's `Found {n} across {k} workspaces.` and one
/// `## Workspace: {name}` block per root with results (its own text without the count header).
///
/// Fix of Cline: a root that hit the 300-result cap is kept (Cline's count parser reads its "Showing
/// first …" header as 0 results and drops the whole root), and the header then says the total is a floor.
pub(crate) fn across_roots(roots: &[RootResults], searched: usize) -> String {
    let total: usize = roots.iter().map(|root| root.count).sum();
    if total == 0 {
        return "Found 0 results.".to_owned();
    }
    let workspaces = if searched == 1 { "workspace" } else { "workspaces" };
    let header = if roots.iter().any(|root| root.count >= MAX_RESULTS) {
        let n = grouped(total);
        format!(
            "Showing first {n} of {n}+ results across {searched} {workspaces}. Use a more specific search if necessary."
        )
    } else {
        format!("Found {} across {searched} {workspaces}.", plural(total))
    };
    let blocks: Vec<String> = roots
        .iter()
        .filter(|root| root.count > 0)
        .filter_map(|root| {
            let lines: Vec<&str> = root.text.split('\n').collect();
            let body = if lines.len() > 2 { lines[2..].join("\n") } else { root.text.clone() };
            (!body.trim().is_empty()).then(|| format!("## Workspace: {}\n{body}", root.name))
        })
        .collect();
    format!("{header}\n\n{}", blocks.join("\n\n"))
}

/// `1 result` or `{n} results`, with `n` grouped as JavaScript's `toLocaleString` does in English.
fn plural(n: usize) -> String {
    if n == 1 {
        "1 result".to_owned()
    } else {
        format!("{} results", grouped(n))
    }
}

/// `1234567` as `1,234,567`.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn hit(line: u64, before: &[&str], text: &str, after: &[&str]) -> Hit {
        Hit {
            line,
            before: before.iter().map(|s| (*s).to_owned()).collect(),
            text: text.to_owned(),
            after: after.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn clines_example_with_context_on_its_own_match() {
        let hits = [hit(2, &["l1"], "l2 TODO a", &["l3"]), hit(7, &["l6"], "l7 TODO b", &["l8  "])];
        let text = results(&[Group { path: "rgt/a.txt".into(), hits: &hits }], 2);
        assert_eq!(
            text,
            "Found 2 results.\n\nrgt/a.txt\n│----\n│l1\n│l2 TODO a\n│l3\n│----\n│l6\n│l7 TODO b\n│l8\n│----"
        );
    }

    #[test]
    fn headers_for_one_none_and_the_cap() {
        let one = [hit(1, &[], "x", &[])];
        assert_eq!(results(&[Group { path: "a".into(), hits: &one }], 1), "Found 1 result.\n\na\n│----\n│x\n│----");
        assert_eq!(results(&[], 0), "Found 0 results.");
        let many: Vec<Hit> = (1..=300).map(|i| hit(i, &[], "x", &[])).collect();
        let text = results(&[Group { path: "a".into(), hits: &many }, Group { path: "b".into(), hits: &one }], 300);
        assert!(text.starts_with(
            "Showing first 300 of 300+ results. Use a more specific search if necessary.\n\na\n│----\n│x\n│----\n│x\n"
        ));
        assert!(text.ends_with("│x\n│----\n\nb\n│----\n│x\n│----"));
    }

    #[test]
    fn the_byte_cap_cuts_before_the_limit_and_adds_its_note() {
        // 20 results of 20 KiB lines: about 12 fit in 256 KiB.
        let line = "y".repeat(20 * 1024);
        let hits: Vec<Hit> = (1..=20).map(|i| hit(i, &[], &line, &[])).collect();
        let text = results(&[Group { path: "big.txt".into(), hits: &hits }], 20);
        assert!(text.len() < MAX_BYTES);
        assert!(text.ends_with(&format!("│----\n{TRUNCATION_NOTE}")));
        let shown = text.lines().filter(|l| l.starts_with("│y")).count();
        assert_eq!(shown, 12);
        // The cut falls between whole results: the group's opening fence and one after each shown result.
        assert_eq!(text.matches("│----").count(), 13);
    }

    #[test]
    fn a_result_that_cannot_fit_is_dropped_whole() {
        let line = "z".repeat(MAX_BYTES);
        let hits = [hit(1, &["before"], &line, &["after"])];
        let text = results(&[Group { path: "huge.min.js".into(), hits: &hits }], 1);
        assert_eq!(text, "Found 1 result.\n\nhuge.min.js\n│----\n\n[Results truncated due to exceeding the 0.25MB size limit. Please use a more specific search pattern.]");
    }

    #[test]
    fn across_roots_drops_headers_and_empty_roots() {
        let a = RootResults {
            name: "front".into(),
            text: "Found 1 result.\n\nsrc/a.ts\n│----\n│x\n│----".into(),
            count: 1,
        };
        let b = RootResults { name: "back".into(), text: "Found 0 results.".into(), count: 0 };
        let c = RootResults {
            name: "docs".into(),
            text: "Found 2 results.\n\nd.md\n│----\n│x\n│----\n│x\n│----".into(),
            count: 2,
        };
        assert_eq!(
            across_roots(&[a, b, c], 3),
            "Found 3 results across 3 workspaces.\n\n## Workspace: front\nsrc/a.ts\n│----\n│x\n│----\n\n## Workspace: docs\nd.md\n│----\n│x\n│----\n│x\n│----"
        );
        let none = RootResults { name: "a".into(), text: "Found 0 results.".into(), count: 0 };
        assert_eq!(across_roots(&[none], 2), "Found 0 results.");
    }

    #[test]
    fn across_roots_keeps_a_capped_root() {
        let capped = RootResults {
            name: "a".into(),
            text: "Showing first 300 of 300+ results. Use a more specific search if necessary.\n\nf\n│----\n│x\n│----"
                .into(),
            count: 300,
        };
        let other =
            RootResults { name: "b".into(), text: "Found 1 result.\n\ng\n│----\n│y\n│----".into(), count: 1 };
        assert_eq!(
            across_roots(&[capped, other], 2),
            "Showing first 301 of 301+ results across 2 workspaces. Use a more specific search if necessary.\n\n## Workspace: a\nf\n│----\n│x\n│----\n\n## Workspace: b\ng\n│----\n│y\n│----"
        );
    }

    #[test]
    fn counts_are_grouped_like_to_locale_string() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1234567), "1,234,567");
        assert_eq!(plural(1200), "1,200 results");
    }
}
