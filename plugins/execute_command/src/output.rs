//! Collects a command's output within Cline's limits: the 500-line head and tail, the spill to a log file
//! past 1,000 lines or 512 KB with a 100 + 100 summary, and a hard cap on what is held in memory.
//!
//! Beyond Cline: lines that look like errors and fall inside a cut are not lost — the first and last of them
//! are lifted into the result, marked as such, so a failed build is never mistaken for a success.

use regex::Regex;
use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;

/// Cline's `terminalOutputLineLimit` default.
pub const LINE_LIMIT: usize = 500;
/// Lines at which output moves to a log file.
pub const SPILL_LINES: usize = 1000;
/// Bytes at which output moves to a log file.
pub const SPILL_BYTES: usize = 512 * 1024;
/// Lines kept at each end once spilled.
pub const SPILL_KEEP: usize = 100;
/// The longest line held in memory; the log file keeps lines whole.
const MAX_LINE: usize = 8 * 1024;
/// The longest lifted line shown.
const MAX_LIFTED: usize = 500;

/// Lines that look like errors. Compiled by the handler, once (see `Patterns` in lib.rs).
pub fn notable_pattern() -> Option<Regex> {
    Regex::new(r"(?i)\b(error|errors|fatal|panicked|traceback|exception|segmentation fault)\b|\bFAILED\b|\bFAIL\b").ok()
}

struct Spill {
    path: Option<PathBuf>,
    file: Option<std::io::BufWriter<std::fs::File>>,
    head: Vec<String>,
    tail: VecDeque<String>,
}

/// The output of one command, as it arrives.
pub struct Collector {
    lines: Vec<String>,
    bytes: usize,
    total: usize,
    partial: String,
    spill: Option<Spill>,
    spill_dir: Option<PathBuf>,
    /// Error-like lines that might end up inside a cut: the first past each possible head size, and the
    /// recent ones (older ones can never be the last inside a cut).
    first_after: [Option<(usize, String)>; 2],
    recent: VecDeque<(usize, String)>,
    notable: Option<Regex>,
}

/// The collected output, ready for the result text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collected {
    /// What the model sees.
    pub text: String,
    /// The log file holding everything, when the output spilled.
    pub log: Option<PathBuf>,
}

impl Collector {
    /// A collector spilling into `spill_dir`, lifting lines `notable` matches. Cline spills into
    /// `{tmpdir}/cline`, which anyone may have made first; the host hands the task's private scratch
    /// directory, and without one nothing is spilled (the middle is still cut and counted).
    pub fn new(spill_dir: Option<PathBuf>, notable: Option<Regex>) -> Self {
        Self {
            lines: Vec::new(),
            bytes: 0,
            total: 0,
            partial: String::new(),
            spill: None,
            spill_dir,
            first_after: [None, None],
            recent: VecDeque::new(),
            notable,
        }
    }

    /// Adds output as it arrives.
    pub fn push(&mut self, text: &str) {
        let mut rest = text;
        while let Some(newline) = rest.find('\n') {
            self.extend_partial(&rest[..newline]);
            let line = std::mem::take(&mut self.partial);
            self.commit(line, true);
            rest = &rest[newline + 1..];
        }
        self.extend_partial(rest);
    }

    fn extend_partial(&mut self, text: &str) {
        // Below the spill threshold everything is held (bounded by the threshold itself); past it, the log
        // file keeps everything and memory keeps a bounded prefix of the current line.
        if self.spill.is_none() && self.bytes + text.len() >= SPILL_BYTES {
            self.start_spill();
        }
        self.bytes += text.len();
        match &mut self.spill {
            None => self.partial.push_str(text),
            Some(spill) => {
                if let Some(file) = &mut spill.file {
                    let _ = file.write_all(text.as_bytes());
                }
                if self.partial.len() < MAX_LINE {
                    let cut = floor_char_boundary(text, MAX_LINE - self.partial.len());
                    self.partial.push_str(&text[..cut]);
                }
            }
        }
    }

    fn commit(&mut self, line: String, newline: bool) {
        let line = line.trim_end().to_owned();
        let index = self.total;
        self.total += 1;
        if self.notable.as_ref().is_some_and(|re| re.is_match(&line)) {
            self.note(index, &line);
        }
        match &mut self.spill {
            Some(spill) => {
                if let Some(file) = spill.file.as_mut().filter(|_| newline) {
                    let _ = file.write_all(b"\n");
                }
                if spill.head.len() < SPILL_KEEP {
                    spill.head.push(line);
                } else {
                    spill.tail.push_back(line);
                    if spill.tail.len() > SPILL_KEEP {
                        spill.tail.pop_front();
                    }
                }
            }
            None => {
                self.lines.push(line);
                if self.lines.len() >= SPILL_LINES {
                    self.start_spill();
                }
            }
        }
    }

    fn note(&mut self, index: usize, line: &str) {
        let shown: String = line.chars().take(MAX_LIFTED).collect();
        for (slot, head) in self.first_after.iter_mut().zip([SPILL_KEEP, LINE_LIMIT / 2]) {
            if slot.is_none() && index >= head {
                *slot = Some((index, shown.clone()));
            }
        }
        self.recent.push_back((index, shown));
        // The front can only be the last error inside a cut if no later error is more than a tail's length
        // older than the newest line; once its successor is, the front is superseded.
        let tail = LINE_LIMIT / 2;
        while self.recent.len() >= 2 && self.recent[1].0 + tail < index {
            self.recent.pop_front();
        }
    }

    fn start_spill(&mut self) {
        let stamp =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
        let path = self.spill_dir.as_ref().map(|dir| dir.join(format!("large-output-{stamp}-{:x}.log", random())));
        // Without a log file the middle is still cut and counted; only the copy of everything is lost. A new
        // file only, readable by the user alone: never one someone placed there.
        let file = path
            .as_ref()
            .and_then(|path| {
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).ok()
            })
            .map(std::io::BufWriter::new);
        let mut spill = Spill { path: path.filter(|_| file.is_some()), file, head: Vec::new(), tail: VecDeque::new() };
        if let Some(file) = &mut spill.file {
            for line in &self.lines {
                let _ = file.write_all(line.as_bytes());
                let _ = file.write_all(b"\n");
            }
            let _ = file.write_all(self.partial.as_bytes());
        }
        let mut lines = std::mem::take(&mut self.lines).into_iter();
        spill.head = lines.by_ref().take(SPILL_KEEP).collect();
        spill.tail = lines.collect();
        while spill.tail.len() > SPILL_KEEP {
            spill.tail.pop_front();
        }
        self.partial.truncate(floor_char_boundary(&self.partial, MAX_LINE));
        self.spill = Some(spill);
    }

    /// The result text and the log file, if any.
    pub fn finish(mut self) -> Collected {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.commit(line, false);
        }
        match self.spill.take() {
            Some(mut spill) => {
                if let Some(file) = &mut spill.file {
                    let _ = file.flush();
                }
                let skipped = self.total.saturating_sub(spill.head.len() + spill.tail.len());
                let lifted = self.lifted(SPILL_KEEP, SPILL_KEEP);
                let mut text = spill.head.join("\n");
                if skipped == 0 {
                    // Spilled for its bytes, not its lines: every line is shown (the long ones cut).
                    let all: Vec<String> = spill.head.into_iter().chain(spill.tail).collect();
                    return Collected { text: all.join("\n").trim().to_owned(), log: spill.path };
                }
                let place = spill
                    .path
                    .as_ref()
                    .map_or("no log file (it could not be created)".to_owned(), |p| p.display().to_string());
                // Cline's marker is a line of its own that starts and ends with a newline, joined to the kept
                // lines with newlines: a blank line on each side.
                text.push_str(&format!("\n\n... ({skipped} lines written to {place}) ...\n\n"));
                text.push_str(&lifted);
                text.push_str(&Vec::from(spill.tail).join("\n"));
                Collected { text: text.trim().to_owned(), log: spill.path }
            }
            None if self.lines.len() > LINE_LIMIT => {
                let half = LINE_LIMIT / 2;
                let lifted = self.lifted(half, half);
                let mut text = self.lines[..half].join("\n");
                text.push_str("\n... (output truncated) ...\n");
                text.push_str(&lifted);
                text.push_str(&self.lines[self.lines.len() - half..].join("\n"));
                Collected { text: text.trim().to_owned(), log: None }
            }
            None => Collected { text: self.lines.join("\n").trim().to_owned(), log: None },
        }
    }

    /// The first and last error-like lines inside the cut `[head, total - tail)`, one per line, marked.
    fn lifted(&self, head: usize, tail: usize) -> String {
        let end = self.total.saturating_sub(tail);
        let first = self.first_after[usize::from(head != SPILL_KEEP)].as_ref().filter(|(i, _)| *i < end);
        let last = self.recent.iter().rev().find(|(i, _)| *i >= head && *i < end);
        let mut out = String::new();
        for (index, line) in first.into_iter().chain(last.filter(|l| Some(l.0) != first.map(|f| f.0))) {
            out.push_str(&format!("[lifted from the cut output, line {}] {line}\n", index + 1));
        }
        out
    }
}

/// The largest char boundary of `text` at or below `max`.
fn floor_char_boundary(text: &str, max: usize) -> usize {
    let mut cut = text.len().min(max);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0),
    );
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn collect(text: &str, dir: &std::path::Path) -> Collected {
        let mut c = Collector::new(Some(dir.to_owned()), notable_pattern());
        // Arbitrary chunking must not matter.
        for chunk in text.as_bytes().chunks(37) {
            c.push(std::str::from_utf8(chunk).unwrap_or(""));
        }
        c.finish()
    }

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("{i}\n")).collect()
    }

    #[test]
    fn short_output_is_kept_whole_and_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(collect("a  \nb\n\n", dir.path()).text, "a\nb");
    }

    #[test]
    fn over_500_lines_keeps_250_and_250() {
        let dir = tempfile::tempdir().unwrap();
        let out = collect(&numbered(600), dir.path());
        let expect = format!(
            "{}\n... (output truncated) ...\n{}",
            (1..=250).map(|i| i.to_string()).collect::<Vec<_>>().join("\n"),
            (351..=600).map(|i| i.to_string()).collect::<Vec<_>>().join("\n")
        );
        assert_eq!(out, Collected { text: expect, log: None });
    }

    #[test]
    fn errors_inside_the_cut_are_lifted() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for i in 1..=600 {
            match i {
                300 => text.push_str("error[E0308]: mismatched types\n"),
                310 => text.push_str("thread 'main' panicked at src/x.rs:1\n"),
                320 => text.push_str("test result: FAILED. 1 passed; 1 failed\n"),
                _ => text.push_str(&format!("{i}\n")),
            }
        }
        let out = collect(&text, dir.path()).text;
        assert!(out.contains(
            "... (output truncated) ...\n[lifted from the cut output, line 300] error[E0308]: mismatched types\n[lifted from the cut output, line 320] test result: FAILED. 1 passed; 1 failed\n351\n"
        ), "{out}");
    }

    #[test]
    fn large_output_spills_to_a_log_with_100_and_100() {
        let dir = tempfile::tempdir().unwrap();
        let out = collect(&numbered(5000), dir.path());
        let log = out.log.clone().unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), numbered(5000));
        let expect = format!(
            "{}\n\n... (4800 lines written to {}) ...\n\n{}",
            (1..=100).map(|i| i.to_string()).collect::<Vec<_>>().join("\n"),
            log.display(),
            (4901..=5000).map(|i| i.to_string()).collect::<Vec<_>>().join("\n")
        );
        assert_eq!(out.text, expect);
    }

    #[test]
    fn one_huge_line_is_bounded_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Collector::new(Some(dir.path().to_owned()), notable_pattern());
        for _ in 0..2000 {
            c.push(&"x".repeat(1024));
        }
        assert!(c.partial.len() <= MAX_LINE);
        let out = c.finish();
        assert_eq!(out.text.len(), MAX_LINE);
        assert_eq!(std::fs::metadata(out.log.unwrap()).unwrap().len(), 2000 * 1024);
    }
}
