//! Name ordering as Cline's `a.localeCompare(b, undefined, { numeric: true, sensitivity: "base" })`,
//! made total so that Rust's sort can rely on it.
//!
//! JavaScript's `localeCompare` uses ICU's root collation. At `sensitivity: "base"` only primary weights
//! count: case and accents are ignored, control characters are ignorable, whitespace and punctuation sort
//! before digits, and digits before letters. `numeric: true` compares each run of ASCII digits by its value,
//! leading zeros ignored, so `file2` sorts before `file10`. This module reproduces that for ASCII exactly
//! (the weights below were checked against Node 22 with ICU 78) and for the Latin letters of
//! U+00C0–U+023F through a table of their base letters; other characters sort after `z` by lower-cased
//! code point, which keeps scripts together but is not ICU's order for symbols outside ASCII.
//!
//! Names that ICU calls equal (`README` and `readme`, `file01` and `file1`) are then ordered by their bytes:
//! Rust's sort may panic on a comparator that is not a total order, and a fixed order keeps output stable.

use std::cmp::Ordering;

/// Compares two names the way Cline sorts path components, with a byte-wise tie break.
pub(crate) fn compare(a: &str, b: &str) -> Ordering {
    compare_base(a, b).then_with(|| a.cmp(b))
}

/// The `localeCompare` part alone: `Equal` for names ICU considers equal at base sensitivity.
fn compare_base(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (Keys::new(a), Keys::new(b));
    loop {
        match (x.next(), y.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) => match p.cmp(&q) {
                Ordering::Equal => {}
                other => return other,
            },
        }
    }
}

/// The primary weight of every printable ASCII character that is not a digit or a letter, in ICU's order
/// (whitespace first, then punctuation and symbols).
const PUNCTUATION: &str = "\t\n\u{b}\u{c}\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";
/// Where a run of digits sorts: after all punctuation, before all letters.
const DIGITS: u32 = 100;
/// The first letter weight; `a` is `LETTERS`, `z` is `LETTERS + 25`.
const LETTERS: u32 = 200;
/// Characters this module has no ICU weight for sort after every letter, by code point.
const OTHERS: u32 = 1000;

/// One collation element: a weight, and for a run of digits its value as digits without leading zeros.
/// The derived order compares the weight, then the number of digits, then the digits: a numeric order
/// that never overflows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key<'a> {
    weight: u32,
    digit_count: usize,
    digits: &'a str,
}

impl<'a> Key<'a> {
    fn weight(weight: u32) -> Self {
        Key { weight, digit_count: 0, digits: "" }
    }

    fn number(digits: &'a str) -> Self {
        Key { weight: DIGITS, digit_count: digits.len(), digits }
    }
}

/// The collation elements of a name, in order.
struct Keys<'a> {
    rest: &'a str,
    /// The letters still to emit of a character that expands to several (`ß` is `ss`).
    pending: &'static str,
}

impl<'a> Keys<'a> {
    fn new(name: &'a str) -> Self {
        Keys { rest: name, pending: "" }
    }
}

impl<'a> Iterator for Keys<'a> {
    type Item = Key<'a>;

    fn next(&mut self) -> Option<Key<'a>> {
        loop {
            let mut pending = self.pending.chars();
            if let Some(letter) = pending.next() {
                self.pending = pending.as_str();
                return Some(Key::weight(letter_weight(letter)));
            }
            let mut chars = self.rest.chars();
            let c = chars.next()?;
            if c.is_ascii_digit() {
                let end = self.rest.find(|d: char| !d.is_ascii_digit()).unwrap_or(self.rest.len());
                let (digits, rest) = self.rest.split_at_checked(end).unwrap_or((self.rest, ""));
                self.rest = rest;
                return Some(Key::number(digits.trim_start_matches('0')));
            }
            self.rest = chars.as_str();
            if c.is_ascii_alphabetic() {
                return Some(Key::weight(letter_weight(c)));
            }
            if c.is_ascii() {
                match PUNCTUATION.find(c) {
                    // The offset is below 40, so the cast cannot truncate.
                    Some(offset) => return Some(Key::weight(1 + offset as u32)),
                    // The remaining ASCII characters are controls, which ICU ignores.
                    None => continue,
                }
            }
            match latin_base(c) {
                Some("") | None => {
                    let lower = c.to_lowercase().next().unwrap_or(c);
                    return Some(Key::weight(OTHERS + u32::from(lower)));
                }
                Some(base) => self.pending = base,
            }
        }
    }
}

fn letter_weight(letter: char) -> u32 {
    LETTERS + u32::from(letter.to_ascii_lowercase()).saturating_sub(u32::from('a'))
}

/// The base letters ICU gives an accented Latin letter at primary strength, if the table covers it.
fn latin_base(c: char) -> Option<&'static str> {
    let index = u32::from(c).checked_sub(LATIN_FIRST)?;
    LATIN_BASE.get(usize::try_from(index).ok()?).copied()
}

/// The first code point of [`LATIN_BASE`].
const LATIN_FIRST: u32 = 0xC0;

/// For each code point from U+00C0 to U+023F: the ASCII letters ICU's root collation treats it as equal to
/// at base sensitivity, or `""` when it is a letter of its own (or not a letter). Generated with Node's
/// `localeCompare` against every one- and two-letter string.
const LATIN_BASE: [&str; 384] = [
    /* U+00C0 */ "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",
    /* U+00D0 */ "d", "n", "o", "o", "o", "o", "o", "", "o", "u", "u", "u", "u", "y", "", "ss",
    /* U+00E0 */ "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",
    /* U+00F0 */ "d", "n", "o", "o", "o", "o", "o", "", "o", "u", "u", "u", "u", "y", "", "y",
    /* U+0100 */ "a", "a", "a", "a", "a", "a", "c", "c", "c", "c", "c", "c", "c", "c", "d", "d",
    /* U+0110 */ "d", "d", "e", "e", "e", "e", "e", "e", "e", "e", "e", "e", "g", "g", "g", "g",
    /* U+0120 */ "g", "g", "g", "g", "h", "h", "h", "h", "i", "i", "i", "i", "i", "i", "i", "i",
    /* U+0130 */ "i", "", "ij", "ij", "j", "j", "k", "k", "", "l", "l", "l", "l", "l", "l", "l",
    /* U+0140 */ "l", "l", "l", "n", "n", "n", "n", "n", "n", "", "", "", "o", "o", "o", "o",
    /* U+0150 */ "o", "o", "oe", "oe", "r", "r", "r", "r", "r", "r", "s", "s", "s", "s", "s", "s",
    /* U+0160 */ "s", "s", "t", "t", "t", "t", "", "", "u", "u", "u", "u", "u", "u", "u", "u",
    /* U+0170 */ "u", "u", "u", "u", "w", "w", "y", "y", "y", "z", "z", "z", "z", "z", "z", "s",
    /* U+0180 */ "", "", "", "", "", "", "", "", "", "", "", "", "", "zw", "", "", /* U+0190 */ "", "", "",
    "", "", "", "", "", "", "", "", "", "", "", "", "", /* U+01A0 */ "o", "o", "", "", "", "", "", "", "", "", "",
    "", "", "", "", "u", /* U+01B0 */ "u", "", "", "", "", "", "", "", "", "", "", "", "", "", "ts", "",
    /* U+01C0 */ "", "", "", "", "dz", "dz", "dz", "lj", "lj", "lj", "nj", "nj", "nj", "a", "a", "i",
    /* U+01D0 */ "i", "o", "o", "u", "u", "u", "u", "u", "u", "u", "u", "u", "u", "", "a", "a",
    /* U+01E0 */ "a", "a", "ae", "ae", "", "", "g", "g", "k", "k", "o", "o", "o", "o", "", "",
    /* U+01F0 */ "j", "dz", "dz", "dz", "g", "g", "", "", "n", "n", "a", "a", "ae", "ae", "o", "o",
    /* U+0200 */ "a", "a", "a", "a", "e", "e", "e", "e", "i", "i", "i", "i", "o", "o", "o", "o",
    /* U+0210 */ "r", "r", "r", "r", "u", "u", "u", "u", "s", "s", "t", "t", "", "", "h", "h",
    /* U+0220 */ "", "", "", "", "", "", "a", "a", "e", "e", "o", "o", "o", "o", "o", "o", /* U+0230 */ "o",
    "o", "y", "y", "", "", "", "", "db", "qp", "", "", "", "", "", "",
];

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn sorted(names: &[&str]) -> Vec<String> {
        let mut names: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
        names.sort_by(|a, b| compare(a, b));
        names
    }

    #[test]
    fn digits_compare_by_value() {
        assert_eq!(
            sorted(&["file10", "file2", "file1", "file02", "file", "file100"]),
            ["file", "file1", "file02", "file2", "file10", "file100"]
        );
        // Longer than any integer type, still ordered by value.
        assert_eq!(
            sorted(&["x100000000000000000000000", "x99999999999999999999999"]),
            ["x99999999999999999999999", "x100000000000000000000000"]
        );
    }

    #[test]
    fn case_is_ignored_then_broken_by_bytes() {
        assert_eq!(sorted(&["b", "B", "a", "A", "C"]), ["A", "a", "B", "b", "C"]);
        assert_eq!(compare_base("README.md", "readme.MD"), Ordering::Equal);
        assert_eq!(compare_base("file01", "file1"), Ordering::Equal);
    }

    #[test]
    fn punctuation_digits_letters_in_icu_order() {
        // The order Node prints for `["a", ...].sort((x, y) => x.localeCompare(y, undefined, {numeric: true,
        // sensitivity: "base"}))`.
        let input =
            ["az", "a$", "a~", "a1", "a_", "a-", "a.", "a ", "a", "a(", "a@", "a/", "a#", "a+", "a=", "aB", "a,"];
        assert_eq!(
            sorted(&input),
            ["a", "a ", "a_", "a-", "a,", "a.", "a(", "a@", "a/", "a#", "a+", "a=", "a~", "a$", "a1", "aB", "az"]
        );
    }

    #[test]
    fn accents_are_ignored_and_controls_skipped() {
        assert_eq!(compare_base("résumé", "resume"), Ordering::Equal);
        assert_eq!(compare_base("Straße", "strasse"), Ordering::Equal);
        assert_eq!(compare_base("a\u{1}b", "ab"), Ordering::Equal);
        assert_eq!(sorted(&["f", "é", "e", "d"]), ["d", "e", "é", "f"]);
        // Greek after Latin, as in ICU.
        assert_eq!(sorted(&["α", "z"]), ["z", "α"]);
    }
}
