//! Applying an update's chunks to a file's lines, with the context tiers of Cline's `findContext`.
//!
//! Each chunk's old lines (context and deletions) are searched from where the previous chunk ended, in
//! passes of growing tolerance, the first pass that finds them winning:
//!
//! | pass | lines compared                               | fuzz  |
//! |------|----------------------------------------------|-------|
//! | 1    | canonicalised                                | 0     |
//! | 2    | canonicalised, trailing whitespace ignored   | 1     |
//! | 3    | canonicalised, surrounding whitespace ignored| 100   |
//! | 4    | joined, Levenshtein similarity ≥ 0.66        | 1000  |
//!
//! A chunk marked `*** End of File` is first tried at the end of the file; found elsewhere it adds 10000.
//! Canonicalising maps Unicode dashes, quotes and no-break spaces to ASCII and unescapes `\``, `\'` and `\"`.
//!
//! Unlike Cline, a chunk that is not found fails the whole patch (Cline skips it and reports success), an
//! `@@` anchor that is not found fails too (as codex does), and the file's line breaks are kept per line:
//! context lines keep theirs, an inserted line takes the break of the line it replaces.

//!
//! The cost is near-linear in the file and the patch: the file's lines are canonicalised once and indexed by
//! their form in each exact pass, so a chunk's search looks only at the places where its rarest line occurs
//! (never scanning the file again for each chunk), and the new text is built in one pass over the file instead
//! of a splice per chunk. The similarity pass cannot be made linear (a Levenshtein table per place); it keeps
//! the window's length and character counts as it slides, so the two cheap bounds cost nothing per place, and
//! the tables it does compute share one budget per call, [`Limits::max_similarity_cells`].

use crate::parse::{Chunk, Line};
use std::collections::HashMap;

/// A line with its line break.
type Broken = (String, &'static str);

/// The similarity the last pass needs.
const THRESHOLD: f64 = 0.66;

/// Cline's canonical form of a line for matching.
pub fn canonical(s: &str) -> String {
    let mapped: String = s
        .chars()
        .map(|c| match c {
            '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2212}' => '-',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{AB}' | '\u{BB}' => '"',
            '\u{2018}' | '\u{2019}' | '\u{201B}' => '\'',
            '\u{A0}' | '\u{202F}' => ' ',
            other => other,
        })
        .collect();
    if !mapped.contains('\\') {
        return mapped;
    }
    mapped.replace("\\`", "`").replace("\\'", "'").replace("\\\"", "\"")
}

/// The similarity pass ran out of its budget ([`Limits::max_similarity_cells`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exhausted;

/// Whether `(longer - distance) / longer` reaches `threshold`.
fn reaches(longer: usize, distance: usize, threshold: f64) -> bool {
    (longer - distance.min(longer)) as f64 / longer as f64 >= threshold
}

/// The two cheap lower bounds on the distance of texts of these lengths whose character counts differ by
/// `unbalanced` in all: the length difference, and half the imbalance (every edit changes the counts by at
/// most two). `false` when either already rules the pair out.
fn within_bounds(a_len: usize, b_len: usize, unbalanced: usize, threshold: f64) -> bool {
    let longer = a_len.max(b_len);
    longer == 0
        || (reaches(longer, a_len.abs_diff(b_len), threshold) && reaches(longer, unbalanced.div_ceil(2), threshold))
}

/// Whether the similarity `(longer - distance) / longer` of two texts reaches `threshold`. The Levenshtein
/// distance is computed only as far as the threshold needs, after two cheap lower bounds.
pub fn similar(a: &[char], b: &[char], threshold: f64) -> bool {
    let mut counts = HashMap::<char, i64>::new();
    a.iter().for_each(|c| *counts.entry(*c).or_default() += 1);
    b.iter().for_each(|c| *counts.entry(*c).or_default() -= 1);
    let unbalanced: u64 = counts.values().map(|n| n.unsigned_abs()).sum();
    within_bounds(a.len(), b.len(), unbalanced as usize, threshold)
        && banded(a, b, threshold, &mut { u64::MAX }) == Ok(true)
}

/// The banded Levenshtein test behind [`similar`], spending one unit of `budget` per table cell.
fn banded(a: &[char], b: &[char], threshold: f64, budget: &mut u64) -> Result<bool, Exhausted> {
    let longer = a.len().max(b.len());
    if longer == 0 {
        return Ok(true);
    }
    let max_distance = ((1.0 - threshold) * longer as f64).floor() as usize;
    // Banded dynamic programming: cells further than `band` from the diagonal cannot stay within budget.
    let band = max_distance + 1;
    let big = usize::MAX / 2;
    let mut previous: Vec<usize> = (0..=b.len()).map(|j| if j <= band { j } else { big }).collect();
    let mut current = vec![big; b.len() + 1];
    for i in 1..=a.len() {
        let from = i.saturating_sub(band).max(1);
        let to = (i + band).min(b.len());
        // The row's cells, and the reset of the row before them.
        let cost = (b.len() + 1 + to.saturating_sub(from) + 1) as u64;
        *budget = budget.checked_sub(cost).ok_or(Exhausted)?;
        current.iter_mut().for_each(|c| *c = big);
        current[0] = if i <= band { i } else { big };
        let mut row_min = current[0];
        for j in from..=to {
            let substitution = previous[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            current[j] = substitution.min(previous[j] + 1).min(current[j - 1] + 1);
            row_min = row_min.min(current[j]);
        }
        if row_min > max_distance {
            return Ok(false);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    Ok(reaches(longer, previous[b.len()], threshold))
}

/// Limits on what one call may spend matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The Levenshtein table cells the similarity pass may compute over a whole patch
    /// (`[plugins.config.apply_patch] max_similarity_cells`). Exact passes are not counted: they are linear.
    pub max_similarity_cells: u64,
}

impl Default for Limits {
    fn default() -> Self {
        // About a second of tables in a release build; a chunk found by similarity normally costs a few
        // thousand cells, since the bounds rule out almost every place before a table is built.
        Self { max_similarity_cells: 500_000_000 }
    }
}

/// The comparison form of a line in an exact pass: canonical, then trailing or surrounding whitespace gone.
fn key(pass: usize, canonical: &str) -> &str {
    match pass {
        0 => canonical,
        1 => canonical.trim_end(),
        _ => canonical.trim(),
    }
}

/// The fuzz of each exact pass.
const PASS_FUZZ: [u32; 3] = [0, 1, 100];

/// One exact pass's view of the file: each distinct line form numbered, the form of every line, and where
/// each form occurs.
struct Pass<'a> {
    ids: HashMap<&'a str, u32>,
    of_line: Vec<u32>,
    at: Vec<Vec<usize>>,
}

impl<'a> Pass<'a> {
    fn new(pass: usize, lines: &'a [String]) -> Self {
        let mut ids: HashMap<&'a str, u32> = HashMap::new();
        let mut at: Vec<Vec<usize>> = Vec::new();
        let of_line = lines
            .iter()
            .enumerate()
            .map(|(i, line)| {
                let next = ids.len() as u32;
                let id = *ids.entry(key(pass, line)).or_insert(next);
                if id == next {
                    at.push(Vec::new());
                }
                at[id as usize].push(i);
                id
            })
            .collect();
        Self { ids, of_line, at }
    }

    /// The first start in `from..=last_start` where every line of `old` (canonical) has the file's form.
    /// Only the places of the chunk's rarest line are tried, so a chunk costs what its matches cost.
    fn first(&self, pass: usize, old: &[String], from: usize, last_start: usize) -> Option<usize> {
        if from > last_start {
            return None;
        }
        let wanted: Vec<u32> = old.iter().map(|l| self.ids.get(key(pass, l)).copied()).collect::<Option<_>>()?;
        let Some((k, rarest)) = wanted.iter().copied().enumerate().min_by_key(|(_, id)| self.at[*id as usize].len())
        else {
            return Some(from);
        };
        let places = &self.at[rarest as usize];
        let begin = places.partition_point(|&p| p < from + k);
        places[begin..]
            .iter()
            .take_while(|&&p| p <= last_start + k)
            .map(|&p| p - k)
            .find(|&i| wanted.iter().enumerate().all(|(j, id)| self.of_line[i + j] == *id))
    }
}

/// The character counts of a sliding window of joined lines against a fixed text's, and the sum of their
/// differences, kept up to date one character at a time.
struct Window {
    counts: HashMap<char, i64>,
    unbalanced: u64,
    len: usize,
}

impl Window {
    fn against(text: &[char]) -> Self {
        let mut window = Self { counts: HashMap::new(), unbalanced: 0, len: 0 };
        text.iter().for_each(|&c| window.count(c, -1));
        window.len = 0;
        window
    }

    fn count(&mut self, c: char, by: i64) {
        let n = self.counts.entry(c).or_default();
        let before = n.unsigned_abs();
        *n += by;
        self.unbalanced = self.unbalanced - before + n.unsigned_abs();
        self.len = self.len.wrapping_add_signed(by as isize);
    }

    fn line(&mut self, line: &str, by: i64) {
        line.chars().for_each(|c| self.count(c, by));
    }
}

/// The file, canonicalised once, with each exact pass's index.
struct Index<'a> {
    lines: &'a [String],
    passes: [Pass<'a>; 3],
}

impl<'a> Index<'a> {
    fn new(lines: &'a [String]) -> Self {
        Self { lines, passes: [Pass::new(0, lines), Pass::new(1, lines), Pass::new(2, lines)] }
    }

    /// The first line at or after `from` that is `wanted` (fuzz 0) or is it once trimmed (fuzz 1).
    fn anchor(&self, wanted: &str, from: usize) -> Option<(usize, u32)> {
        let first = |pass: &Pass<'_>| {
            let places = &pass.at[*pass.ids.get(wanted)? as usize];
            places.get(places.partition_point(|&p| p < from)).copied()
        };
        let i = first(&self.passes[0]).into_iter().chain(first(&self.passes[2])).min()?;
        Some((i, u32::from(self.lines[i] != wanted)))
    }

    /// Where a chunk's old lines are, and how fuzzily they were found.
    fn find(
        &self,
        old: &[&str],
        from: usize,
        eof: bool,
        cancelled: &dyn Fn() -> bool,
        budget: &mut u64,
    ) -> Result<Option<(usize, u32)>, Exhausted> {
        if old.len() > self.lines.len() {
            return Ok(None);
        }
        let last_start = self.lines.len() - old.len();
        let old: Vec<String> = old.iter().map(|l| canonical(l)).collect();
        let mut search = |from: usize| -> Result<Option<(usize, u32)>, Exhausted> {
            for (pass, fuzz) in PASS_FUZZ.into_iter().enumerate() {
                if let Some(i) = self.passes[pass].first(pass, &old, from, last_start) {
                    return Ok(Some((i, fuzz)));
                }
            }
            Ok(self.similar_from(&old, from, last_start, cancelled, budget)?.map(|i| (i, 1000)))
        };
        if eof {
            if let Some(found) = search(last_start)? {
                return Ok(Some(found));
            }
            return Ok(search(from.min(last_start + 1))?.map(|(i, fuzz)| (i, fuzz + 10_000)));
        }
        if from > last_start {
            return Ok(None);
        }
        search(from)
    }

    /// The first start in `from..=last_start` whose lines, joined, are similar to the chunk's joined.
    fn similar_from(
        &self,
        old: &[String],
        from: usize,
        last_start: usize,
        cancelled: &dyn Fn() -> bool,
        budget: &mut u64,
    ) -> Result<Option<usize>, Exhausted> {
        if from > last_start {
            return Ok(None);
        }
        let joined: Vec<char> = old.join("\n").chars().collect();
        let count = old.len();
        let mut window = Window::against(&joined);
        self.lines[from..from + count].iter().for_each(|line| window.line(line, 1));
        (1..count).for_each(|_| window.count('\n', 1));
        for i in from..=last_start {
            if cancelled() {
                return Ok(None);
            }
            if i > from {
                window.line(&self.lines[i - 1], -1);
                window.line(&self.lines[i + count - 1], 1);
            }
            if !within_bounds(window.len, joined.len(), window.unbalanced as usize, THRESHOLD) {
                continue;
            }
            let text: Vec<char> = self.lines[i..i + count].join("\n").chars().collect();
            *budget = budget.checked_sub(text.len() as u64).ok_or(Exhausted)?;
            if banded(&text, &joined, THRESHOLD, budget)? {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }
}

/// A file's lines, each with its own line break (`""` for a last line without one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLines {
    lines: Vec<(String, &'static str)>,
    final_break: bool,
    dominant: &'static str,
}

impl FileLines {
    /// Splits a text.
    pub fn new(text: &str) -> Self {
        let lines: Vec<(String, &'static str)> = text
            .split_inclusive('\n')
            .map(|piece| match piece.strip_suffix("\r\n") {
                Some(line) => (line.to_owned(), "\r\n"),
                None => match piece.strip_suffix('\n') {
                    Some(line) => (line.to_owned(), "\n"),
                    None => (piece.to_owned(), ""),
                },
            })
            .collect();
        let crlf = lines.iter().filter(|(_, eol)| *eol == "\r\n").count();
        let lf = lines.iter().filter(|(_, eol)| *eol == "\n").count();
        Self {
            lines,
            final_break: text.is_empty() || text.ends_with('\n'),
            dominant: if crlf > lf { "\r\n" } else { "\n" },
        }
    }

    /// The text back, every line but the last ending with a break, the last as the original's last did.
    pub fn join(mut self) -> String {
        let count = self.lines.len();
        for (i, (_, eol)) in self.lines.iter_mut().enumerate() {
            if i + 1 < count && eol.is_empty() {
                *eol = self.dominant;
            }
            if i + 1 == count {
                *eol = match (self.final_break, eol.is_empty()) {
                    (true, true) => self.dominant,
                    (true, false) => eol,
                    (false, _) => "",
                };
            }
        }
        let mut text = String::with_capacity(self.lines.iter().map(|(line, eol)| line.len() + eol.len()).sum());
        for (line, eol) in &self.lines {
            text.push_str(line);
            text.push_str(eol);
        }
        text
    }
}

/// Why a chunk could not be applied; the caller names the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkError {
    /// An `@@` line is not in the file after the previous chunk.
    Anchor {
        /// The chunk, 1-based.
        chunk: usize,
        /// The anchor text.
        anchor: String,
    },
    /// The chunk's context and deleted lines are not in the file after the previous chunk.
    Context {
        /// The chunk, 1-based.
        chunk: usize,
        /// The lines looked for.
        lines: Vec<String>,
    },
    /// The chunk was not found exactly, and looking for a similar passage used up
    /// [`Limits::max_similarity_cells`].
    Exhausted {
        /// The chunk, 1-based.
        chunk: usize,
        /// The lines looked for.
        lines: Vec<String>,
        /// The limit.
        limit: u64,
    },
    /// An end-of-file chunk was found where an earlier chunk had removed lines, so its change has nowhere to
    /// go.
    Overlap {
        /// The chunk, 1-based.
        chunk: usize,
    },
}

/// Applies an update's chunks; returns the new text and the fuzz spent. `budget` is what is left of
/// [`Limits::max_similarity_cells`] for the whole patch, and shrinks by what this file's chunks spend.
pub fn apply(
    text: &str,
    chunks: &[Chunk],
    cancelled: &dyn Fn() -> bool,
    budget: &mut u64,
) -> Result<(String, u32), ChunkError> {
    let mut file = FileLines::new(text);
    let canonical_lines: Vec<String> = file.lines.iter().map(|(l, _)| canonical(l)).collect();
    let index = Index::new(&canonical_lines);
    let line_count = file.lines.len();
    let limit = *budget;
    let mut fuzz = 0;
    let mut cursor = 0;
    // (start, old length, new lines, chunk) in file order.
    let mut replacements: Vec<(usize, usize, Vec<Broken>, usize)> = Vec::new();
    for (n, chunk) in chunks.iter().enumerate() {
        for anchor in &chunk.anchors {
            let Some((i, anchor_fuzz)) = index.anchor(&canonical(anchor), cursor) else {
                return Err(ChunkError::Anchor { chunk: n + 1, anchor: anchor.clone() });
            };
            cursor = i + 1;
            fuzz += anchor_fuzz;
        }
        let old = chunk.old();
        let start = if old.is_empty() {
            // Pure insertion: after its anchor, at the end of the file without one (as codex does).
            if chunk.anchors.is_empty() {
                line_count
            } else {
                cursor
            }
        } else {
            let lines = || old.iter().map(|l| (*l).to_owned()).collect();
            match index.find(&old, cursor, chunk.eof, cancelled, budget) {
                Ok(Some((start, found_fuzz))) => {
                    fuzz += found_fuzz;
                    start
                }
                Ok(None) => return Err(ChunkError::Context { chunk: n + 1, lines: lines() }),
                Err(Exhausted) => return Err(ChunkError::Exhausted { chunk: n + 1, lines: lines(), limit }),
            }
        };
        let mut new_lines = Vec::new();
        let mut at = start;
        let mut deleted_break: Option<&'static str> = None;
        for line in &chunk.lines {
            match line {
                // The file's own line stays, whatever tolerance found it.
                Line::Context(_) => {
                    new_lines.push(file.lines[at].clone());
                    at += 1;
                    deleted_break = None;
                }
                Line::Delete(_) => {
                    deleted_break = Some(file.lines[at].1);
                    at += 1;
                }
                Line::Insert(text) => {
                    let eol = deleted_break
                        .or_else(|| new_lines.last().map(|(_, eol): &(String, &'static str)| *eol))
                        .or_else(|| start.checked_sub(1).map(|p| file.lines[p].1))
                        .filter(|eol| !eol.is_empty())
                        .unwrap_or(file.dominant);
                    new_lines.push((text.clone(), eol));
                }
            }
        }
        // A pure insertion appended without an anchor does not move the search on (codex keeps its place too).
        if !(old.is_empty() && chunk.anchors.is_empty()) {
            cursor = at;
        }
        replacements.push((start, at - start, new_lines, n + 1));
    }
    // Stable: insertions at one point keep their patch order. The replacements take effect as splicing each
    // in, from the last start to the first, would (an end-of-file chunk may overlap the chunk before it), but
    // in one pass: `kept` is the front of the file no replacement has reached yet, `after` what follows it,
    // last line first, so every step only shortens `kept` and pushes onto `after`.
    replacements.sort_by_key(|(start, ..)| *start);
    let mut kept = std::mem::take(&mut file.lines);
    let mut after: Vec<Broken> = Vec::new();
    for (start, old_len, new_lines, chunk) in replacements.into_iter().rev() {
        let end = start + old_len;
        if end <= kept.len() {
            after.extend(kept.drain(end..).rev());
        } else {
            let reach = end - kept.len();
            if reach > after.len() {
                return Err(ChunkError::Overlap { chunk });
            }
            after.truncate(after.len() - reach);
        }
        kept.truncate(start);
        after.extend(new_lines.into_iter().rev());
    }
    kept.extend(after.into_iter().rev());
    file.lines = kept;
    Ok((file.join(), fuzz))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;
    use crate::parse::Action;
    use pretty_assertions::assert_eq;

    fn update(text: &str, patch_body: &str) -> Result<(String, u32), ChunkError> {
        let actions = parse(&format!("*** Begin Patch\n*** Update File: f\n{patch_body}\n*** End Patch")).unwrap();
        let [Action::Update { chunks, .. }] = actions.as_slice() else { panic!("{actions:?}") };
        apply(text, chunks, &|| false, &mut { u64::MAX })
    }

    #[test]
    fn tiers_and_fuzz() {
        assert_eq!(update("a\nb\nc\n", "@@\n a\n-b\n+B"), Ok(("a\nB\nc\n".to_owned(), 0)));
        assert_eq!(update("a  \nb\nc\n", "@@\n a\n-b\n+B"), Ok(("a  \nB\nc\n".to_owned(), 1)));
        assert_eq!(update("    a\nb\n", "@@\n a\n-b\n+B"), Ok(("    a\nB\n".to_owned(), 100)));
        assert_eq!(
            update("let total = 10;\nx\n", "@@\n-let totl = 10;\n+let total = 11;"),
            Ok(("let total = 11;\nx\n".to_owned(), 1000))
        );
        assert_eq!(update("a \u{2013} b\n", "@@\n-a - b\n+c"), Ok(("c\n".to_owned(), 0)));
    }

    #[test]
    fn misses_name_the_chunk() {
        assert_eq!(
            update("a\nb\n", "@@\n-a\n+A\n@@\n-zzz\n+Z"),
            Err(ChunkError::Context { chunk: 2, lines: vec!["zzz".to_owned()] })
        );
        assert_eq!(
            update("a\n", "@@ fn nowhere()\n-a"),
            Err(ChunkError::Anchor { chunk: 1, anchor: "fn nowhere()".to_owned() })
        );
    }

    #[test]
    fn line_breaks_are_kept_per_line() {
        assert_eq!(
            update("one\r\ntwo\nthree\r\nfour\n", "@@\n one\n two\n-three\n+THREE\n four"),
            Ok(("one\r\ntwo\nTHREE\r\nfour\n".to_owned(), 0))
        );
        assert_eq!(update("a\nb", "@@\n b\n+c\n*** End of File"), Ok(("a\nb\nc".to_owned(), 0)));
        assert_eq!(update("", "@@\n+first"), Ok(("first\n".to_owned(), 0)));
    }

    #[test]
    fn bounded_similarity_agrees_with_the_definition() {
        let chars = |s: &str| s.chars().collect::<Vec<_>>();
        assert!(similar(&chars("kitten"), &chars("sitting"), 0.5));
        assert!(!similar(&chars("kitten"), &chars("sitting"), 0.6));
        assert!(similar(&chars(""), &chars(""), 0.66));
        assert!(!similar(&chars("abc"), &chars("xyz"), 0.66));
    }
}
