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

use crate::parse::{Chunk, Line};

/// A comparison of a file line with a patch line, both canonicalised.
type Same<'a> = &'a dyn Fn(&str, &str) -> bool;

/// A line with its line break.
type Broken = (String, &'static str);

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
    mapped.replace("\\`", "`").replace("\\'", "'").replace("\\\"", "\"")
}

/// Whether the similarity `(longer - distance) / longer` of two texts reaches `threshold`. The Levenshtein
/// distance is computed only as far as the threshold needs, after two cheap lower bounds.
pub fn similar(a: &[char], b: &[char], threshold: f64) -> bool {
    let longer = a.len().max(b.len());
    if longer == 0 {
        return true;
    }
    let max_distance = ((1.0 - threshold) * longer as f64).floor() as usize;
    let reaches = |distance: usize| (longer - distance.min(longer)) as f64 / longer as f64 >= threshold;
    if !reaches(a.len().abs_diff(b.len())) {
        return false;
    }
    // Every edit changes the character counts by at most two.
    let mut counts = std::collections::HashMap::<char, i64>::new();
    a.iter().for_each(|c| *counts.entry(*c).or_default() += 1);
    b.iter().for_each(|c| *counts.entry(*c).or_default() -= 1);
    let unbalanced: i64 = counts.values().map(|n| n.abs()).sum();
    if !reaches(unbalanced.unsigned_abs().div_ceil(2) as usize) {
        return false;
    }
    // Banded dynamic programming: cells further than `band` from the diagonal cannot stay within budget.
    let band = max_distance + 1;
    let big = usize::MAX / 2;
    let mut previous: Vec<usize> = (0..=b.len()).map(|j| if j <= band { j } else { big }).collect();
    let mut current = vec![big; b.len() + 1];
    for i in 1..=a.len() {
        let from = i.saturating_sub(band).max(1);
        let to = (i + band).min(b.len());
        current.iter_mut().for_each(|c| *c = big);
        current[0] = if i <= band { i } else { big };
        let mut row_min = current[0];
        for j in from..=to {
            let substitution = previous[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            current[j] = substitution.min(previous[j] + 1).min(current[j - 1] + 1);
            row_min = row_min.min(current[j]);
        }
        if row_min > max_distance {
            return false;
        }
        std::mem::swap(&mut previous, &mut current);
    }
    reaches(previous[b.len()])
}

/// Where a chunk's old lines are, and how fuzzily they were found.
fn find(file: &[String], old: &[&str], from: usize, eof: bool, cancelled: &dyn Fn() -> bool) -> Option<(usize, u32)> {
    if old.len() > file.len() {
        return None;
    }
    let last_start = file.len() - old.len();
    let old_canonical: Vec<String> = old.iter().map(|l| canonical(l)).collect();
    let file_canonical: Vec<String> = file.iter().map(|l| canonical(l)).collect();
    let joined_old: Vec<char> = old_canonical.join("\n").chars().collect();
    let search = |from: usize| -> Option<(usize, u32)> {
        let starts = from..=last_start;
        let all = |i: usize, same: &dyn Fn(&str, &str) -> bool| {
            old_canonical.iter().enumerate().all(|(k, o)| same(&file_canonical[i + k], o))
        };
        let passes: [(u32, Same<'_>); 3] =
            [(0, &|f, o| f == o), (1, &|f, o| f.trim_end() == o.trim_end()), (100, &|f, o| f.trim() == o.trim())];
        for (fuzz, same) in passes {
            if let Some(i) = starts.clone().find(|&i| all(i, same)) {
                return Some((i, fuzz));
            }
        }
        starts
            .clone()
            .take_while(|_| !cancelled())
            .find(|&i| {
                similar(&file_canonical[i..i + old.len()].join("\n").chars().collect::<Vec<_>>(), &joined_old, 0.66)
            })
            .map(|i| (i, 1000))
    };
    if eof {
        if let Some(found) = search(last_start) {
            return Some(found);
        }
        return search(from.min(last_start + 1)).map(|(i, fuzz)| (i, fuzz + 10_000));
    }
    if from > last_start {
        return None;
    }
    search(from)
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
        self.lines.into_iter().flat_map(|(line, eol)| [line, eol.to_owned()]).collect()
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
}

/// Applies an update's chunks; returns the new text and the fuzz spent.
pub fn apply(text: &str, chunks: &[Chunk], cancelled: &dyn Fn() -> bool) -> Result<(String, u32), ChunkError> {
    let mut file = FileLines::new(text);
    let contents: Vec<String> = file.lines.iter().map(|(l, _)| l.clone()).collect();
    let mut fuzz = 0;
    let mut cursor = 0;
    // (start, old length, new lines) in file order.
    let mut replacements: Vec<(usize, usize, Vec<Broken>)> = Vec::new();
    for (n, chunk) in chunks.iter().enumerate() {
        for anchor in &chunk.anchors {
            let wanted = canonical(anchor);
            let found = (cursor..contents.len()).find_map(|i| {
                let line = canonical(&contents[i]);
                if line == wanted {
                    Some((i, 0))
                } else if line.trim() == wanted {
                    Some((i, 1))
                } else {
                    None
                }
            });
            let Some((i, anchor_fuzz)) = found else {
                return Err(ChunkError::Anchor { chunk: n + 1, anchor: anchor.clone() });
            };
            cursor = i + 1;
            fuzz += anchor_fuzz;
        }
        let old = chunk.old();
        let start = if old.is_empty() {
            // Pure insertion: after its anchor, at the end of the file without one (as codex does).
            if chunk.anchors.is_empty() {
                contents.len()
            } else {
                cursor
            }
        } else {
            let Some((start, found_fuzz)) = find(&contents, &old, cursor, chunk.eof, cancelled) else {
                return Err(ChunkError::Context { chunk: n + 1, lines: old.iter().map(|l| (*l).to_owned()).collect() });
            };
            fuzz += found_fuzz;
            start
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
        replacements.push((start, at - start, new_lines));
    }
    // Stable: insertions at one point keep their patch order. Applied from the end, so starts stay valid.
    replacements.sort_by_key(|(start, _, _)| *start);
    for (start, old_len, new_lines) in replacements.into_iter().rev() {
        file.lines.splice(start..start + old_len, new_lines);
    }
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
        apply(text, chunks, &|| false)
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
