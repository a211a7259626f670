//! The pure core of `read_file`: a line window streamed out of any reader, and its rendering in Cline's format.
//!
//! Cline reads the whole file, cuts it at 400 KB and only then applies the line window, so lines past the first
//! 400 KB can never be read. We apply the window to the whole file instead: the reader is streamed in chunks,
//! lines before the window are only counted, the window's lines are decoded and kept (at most the cap), and
//! lines after it are only counted again, because the footer needs the file's line count.

use std::fmt::Write as _;
use std::io::{self, Read};
use toolshed_plugin_api::result::format_bytes;

/// Cline's default window length when no `end_line` is given.
const DEFAULT_MAX_LINES: u64 = 1000;

/// Cline's cap on returned text: 400 KB, counted as JavaScript string length (UTF-16 code units).
pub const MAX_CONTENT_CHARS: usize = 400 * 1024;

/// Read size: large enough that per-read overhead vanishes, small enough to stay in cache while it is counted.
const CHUNK: usize = 256 * 1024;
/// The first read's buffer, doubled after each read that fills it, up to [`CHUNK`].
const FIRST_CHUNK: usize = 16 * 1024;

/// The lines to show, 1-based and inclusive, after Cline's range rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRange {
    /// The first line shown.
    pub start: u64,
    /// The last line asked for; the window stops at the end of the file when it has fewer lines.
    pub end: u64,
}

impl LineRange {
    /// Applies Cline's rules: `start` is at least 1; without `end_line` the window is 1000 lines; an explicit
    /// `end_line` is at least 1, is not capped, and is swapped with `start` when it lies before it.
    pub fn new(start_line: Option<i64>, end_line: Option<i64>) -> Self {
        let start = start_line.map_or(1, |s| s.max(1).unsigned_abs());
        match end_line {
            None => Self { start, end: start.saturating_add(DEFAULT_MAX_LINES - 1) },
            Some(end) => {
                let end = end.max(1).unsigned_abs();
                if end < start {
                    Self { start: end, end: start }
                } else {
                    Self { start, end }
                }
            }
        }
    }
}

/// What [`read_window`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Window {
    /// The file has no text at all; Cline returns an empty result for it, without any footer.
    Empty,
    /// The window fits under the cap.
    Complete {
        /// The window's lines as they are in the file, line endings included.
        text: String,
        /// The file's line count, for the footer.
        total_lines: u64,
    },
    /// The window's text is longer than the cap. Reading stopped at the window's end, because the truncation
    /// marker replaces the footer and so the file's line count is not needed.
    Truncated {
        /// The window's first [`MAX_CONTENT_CHARS`] UTF-16 code units.
        text: String,
        /// The whole window's length in UTF-16 code units.
        len: u64,
    },
}

impl Window {
    /// Cline's `formatFileContentWithLineNumbers` for this window: `{k} | {line}` lines joined by `\n`, then
    /// the continuation hint, the line count, or the truncation marker.
    pub fn render(&self, range: LineRange) -> String {
        match self {
            Window::Empty => String::new(),
            Window::Complete { text, total_lines } => {
                let mut out = number_lines(text, range.start);
                let end = range.end.min(*total_lines);
                if end < *total_lines {
                    let _ = write!(
                        out,
                        "\n\n(Showing lines {}-{end} of {total_lines} total. Use start_line={} to continue reading.)",
                        range.start,
                        end + 1
                    );
                } else {
                    let _ = write!(out, "\n\n(File has {total_lines} lines total.)");
                }
                out
            }
            Window::Truncated { text, len } => {
                let mut out = number_lines(text, range.start);
                out.push_str(&truncation_marker(*len));
                out
            }
        }
    }
}

/// A place a read can begin instead of the stream's start: a byte offset on a character boundary (where
/// chunked decoding already cuts) and the number of newlines before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Checkpoint {
    /// Bytes from the start of the stream.
    pub offset: u64,
    /// Newlines in the bytes before `offset`.
    pub newlines: u64,
}

/// What one whole pass learned about a stream: a checkpoint at every chunk and its line count, so a later
/// window of the same unchanged bytes reads from the checkpoint nearest its start and stops at its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineIndex {
    /// In order of offset; the first is the stream's start.
    pub checkpoints: Vec<Checkpoint>,
    /// The stream's line count, as the footer gives it.
    pub total_lines: u64,
}

impl LineIndex {
    /// The last checkpoint before the start of line `line` (1-based). A checkpoint after `line - 1` newlines
    /// may lie inside that line, past its start, so it must have fewer.
    pub fn before_line(&self, line: u64) -> Checkpoint {
        let before = line.saturating_sub(1);
        let at = self.checkpoints.partition_point(|c| c.newlines < before);
        at.checked_sub(1).map(|i| self.checkpoints[i]).unwrap_or_default()
    }
}

/// Streams `reader` (UTF-8, decoded lossily) and returns the lines of `range`, keeping at most the cap in memory.
pub fn read_window<R: Read>(reader: R, range: LineRange) -> io::Result<Window> {
    read_window_from(reader, range, Resume::Start { record: false }).map(|(window, _)| window)
}

/// Where [`read_window_from`] starts.
pub enum Resume<'a> {
    /// At the stream's start; with `record`, the checkpoints are kept and a whole pass returns its index.
    Start { record: bool },
    /// At a checkpoint of `index` (the reader already positioned there), whose line count the footer takes
    /// instead of reading on past the window.
    At { checkpoint: Checkpoint, index: &'a LineIndex },
}

/// [`read_window`] from where `resume` says; after a whole pass from the start that was asked to, the
/// stream's [`LineIndex`] too.
pub fn read_window_from<R: Read>(
    mut reader: R,
    range: LineRange,
    resume: Resume<'_>,
) -> io::Result<(Window, Option<LineIndex>)> {
    enum Phase {
        Before,
        Inside,
        After,
    }

    // Small at first, growing while reads fill it: most files read are small, and zeroing a whole chunk for
    // each was most of a small file's read (256 KiB written, a page fault or a system call for each page).
    let mut buf = vec![0u8; FIRST_CHUNK];
    // Bytes at the start of `buf` left over from the previous read: an incomplete UTF-8 sequence.
    let mut held = 0;
    let (mut offset, mut newlines, known) = match resume {
        Resume::Start { .. } => (0u64, 0, None),
        Resume::At { checkpoint, index } => (checkpoint.offset, checkpoint.newlines, Some(index.total_lines)),
    };
    let mut checkpoints = matches!(resume, Resume::Start { record: true }).then(Vec::new);
    let mut last_byte = None;
    let mut kept = Collector::default();
    let mut phase = if range.start <= 1 { Phase::Inside } else { Phase::Before };
    loop {
        if let Some(checkpoints) = &mut checkpoints {
            // The held bytes are not counted yet: the checkpoint is where they start.
            checkpoints.push(Checkpoint { offset, newlines });
        }
        let read = match reader.read(&mut buf[held..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let filled = held + read;
        let eof = read == 0;
        // Chunks end on character boundaries, so decoding chunk by chunk equals decoding the whole stream.
        let usable = if eof { filled } else { complete_utf8_prefix(&buf[..filled]) };
        offset += usable as u64;
        let mut rest = &buf[..usable];
        if let Some(&b) = rest.last() {
            last_byte = Some(b);
        }
        while !rest.is_empty() {
            match phase {
                Phase::Before => match after_nth_newline(rest, (range.start - 1).saturating_sub(newlines)) {
                    Ok(at) => {
                        newlines = range.start - 1;
                        rest = &rest[at..];
                        phase = Phase::Inside;
                    }
                    Err(count) => {
                        newlines += count;
                        rest = &[];
                    }
                },
                Phase::Inside => match after_nth_newline(rest, range.end.saturating_sub(newlines)) {
                    Ok(at) => {
                        kept.push_bytes(&rest[..at]);
                        newlines = range.end;
                        rest = &rest[at..];
                        phase = Phase::After;
                        if kept.len > MAX_CONTENT_CHARS as u64 {
                            return Ok((Window::Truncated { text: kept.text, len: kept.len }, None));
                        }
                        if let Some(total_lines) = known {
                            return Ok((Window::Complete { text: kept.text, total_lines }, None));
                        }
                    }
                    Err(count) => {
                        kept.push_bytes(rest);
                        newlines += count;
                        rest = &[];
                    }
                },
                Phase::After => {
                    newlines += memchr::memchr_iter(b'\n', rest).count() as u64;
                    rest = &[];
                }
            }
        }
        if eof {
            break;
        }
        if filled == buf.len() && buf.len() < CHUNK {
            buf.resize((buf.len() * 2).min(CHUNK), 0);
        }
        buf.copy_within(usable..filled, 0);
        held = filled - usable;
    }
    // A last line without a newline still counts, as in Cline's `split(/\r?\n/)`. A read resumed at the end
    // of the text sees no bytes at all, and takes the count its index has.
    let total_lines = known.or(last_byte.map(|last| newlines + u64::from(last != b'\n')));
    Ok(match total_lines {
        None => (Window::Empty, None),
        Some(_) if kept.len > MAX_CONTENT_CHARS as u64 => (Window::Truncated { text: kept.text, len: kept.len }, None),
        Some(total_lines) => {
            let index = checkpoints.map(|checkpoints| LineIndex { checkpoints, total_lines });
            (Window::Complete { text: kept.text, total_lines }, index)
        }
    })
}

/// Where the `n`th newline of `hay` ends (the index just past it), or, when `hay` has fewer, how many it has.
fn after_nth_newline(hay: &[u8], n: u64) -> Result<usize, u64> {
    if n == 0 {
        return Ok(0);
    }
    // Counting is SIMD-fast, so whole chunks before and after the window cost what `wc -l` costs; only the
    // chunk that holds the boundary is walked newline by newline.
    let count = memchr::memchr_iter(b'\n', hay).count() as u64;
    if count < n {
        return Err(count);
    }
    usize::try_from(n - 1).ok().and_then(|skip| memchr::memchr_iter(b'\n', hay).nth(skip)).map(|at| at + 1).ok_or(count)
}

/// The length of the longest prefix of `buf` that does not end inside an incomplete UTF-8 sequence.
///
/// A byte that is not a continuation byte always starts a new unit in lossy decoding, so holding back an
/// incomplete sequence from its lead byte on never changes how the stream decodes.
fn complete_utf8_prefix(buf: &[u8]) -> usize {
    let n = buf.len();
    for back in 1..=n.min(3) {
        let byte = buf[n - back];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let needed = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if needed > back { n - back } else { n };
    }
    n
}

/// The window's decoded text, kept up to the cap, and the whole window's length in UTF-16 code units.
#[derive(Default)]
struct Collector {
    text: String,
    len: u64,
}

impl Collector {
    /// Decodes lossily, one U+FFFD per maximal invalid sequence, exactly as `String::from_utf8_lossy`.
    fn push_bytes(&mut self, mut bytes: &[u8]) {
        // `from_utf8` has an ASCII fast path that `utf8_chunks` lacks; on a window of tens of megabytes that is
        // most of the cost, so it handles the valid runs and only the errors are stepped over by hand.
        loop {
            match std::str::from_utf8(bytes) {
                Ok(valid) => return self.push_str(valid),
                Err(error) => {
                    let (valid, rest) = bytes.split_at(error.valid_up_to());
                    self.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    self.push_str("\u{FFFD}");
                    match error.error_len() {
                        Some(len) => bytes = rest.get(len..).unwrap_or_default(),
                        // An incomplete sequence at the very end is one invalid sequence.
                        None => return,
                    }
                }
            }
        }
    }

    fn push_str(&mut self, s: &str) {
        let units = utf16_len(s);
        let room = (MAX_CONTENT_CHARS as u64).saturating_sub(self.len);
        if units <= room {
            self.text.push_str(s);
        } else if room > 0 {
            self.text.push_str(prefix_of_utf16_len(s, room));
        }
        self.len += units;
    }
}

/// The JavaScript length of `s`: characters outside the BMP count twice.
fn utf16_len(s: &str) -> u64 {
    // Every non-continuation byte starts one character; four-byte lead bytes start a surrogate pair. This form
    // vectorises, unlike `encode_utf16().count()`.
    s.bytes().map(|b| u64::from(b & 0xC0 != 0x80) + u64::from(b >= 0xF0)).sum()
}

/// The longest prefix of `s` at most `units` UTF-16 code units long. JavaScript's `slice` could split a surrogate
/// pair there; a Rust string cannot hold half a pair, so the pair is left out whole.
fn prefix_of_utf16_len(s: &str, units: u64) -> &str {
    let mut used = 0;
    for (at, c) in s.char_indices() {
        used += c.len_utf16() as u64;
        if used > units {
            return &s[..at];
        }
    }
    s
}

/// Numbers `text` from `first` as Cline does: split on `\r?\n`, the empty piece after a final newline dropped.
fn number_lines(text: &str, first: u64) -> String {
    if text.is_empty() {
        return String::new();
    }
    let (body, ends_with_newline) = match text.strip_suffix('\n') {
        Some(body) => (body, true),
        None => (text, false),
    };
    let mut out = String::with_capacity(text.len() + text.len() / 8 + 16);
    let mut pieces = body.split('\n').peekable();
    let mut number = first;
    while let Some(piece) = pieces.next() {
        // Only a `\r` right before a `\n` belongs to the line ending; a lone `\r` at the very end stays.
        let followed_by_newline = pieces.peek().is_some() || ends_with_newline;
        let line = if followed_by_newline { piece.strip_suffix('\r').unwrap_or(piece) } else { piece };
        if number != first {
            out.push('\n');
        }
        let _ = write!(out, "{number} | {line}");
        number += 1;
    }
    out
}

/// Cline's `truncateContent` notice for a window of `len` UTF-16 code units.
pub fn truncation_marker(len: u64) -> String {
    let max = MAX_CONTENT_CHARS as u64;
    format!(
        "\n\n---\n\n[FILE TRUNCATED: This content is {} but only the first {} is shown ({} truncated). Use search_files to find specific patterns, or execute_command with grep/head/tail for targeted reading.]",
        format_bytes(len),
        format_bytes(max),
        format_bytes(len.saturating_sub(max))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::io::{BufWriter, Seek, Write};

    fn read(text: &str, start: Option<i64>, end: Option<i64>) -> String {
        let range = LineRange::new(start, end);
        match read_window(text.as_bytes(), range) {
            Ok(window) => window.render(range),
            Err(e) => panic!("reading from memory failed: {e}"),
        }
    }

    fn ten_lines() -> String {
        (1..=10).map(|i| format!("line{i}")).collect::<Vec<_>>().join("\n")
    }

    /// A reader that hands out at most `step` bytes per call, to put chunk boundaries everywhere.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn range_rules() {
        assert_eq!(LineRange::new(None, None), LineRange { start: 1, end: 1000 });
        assert_eq!(LineRange::new(Some(5), None), LineRange { start: 5, end: 1004 });
        assert_eq!(LineRange::new(Some(-5), Some(3)), LineRange { start: 1, end: 3 });
        assert_eq!(LineRange::new(Some(0), Some(0)), LineRange { start: 1, end: 1 });
        assert_eq!(LineRange::new(Some(5), Some(3)), LineRange { start: 3, end: 5 });
        assert_eq!(LineRange::new(Some(10), Some(-2)), LineRange { start: 1, end: 10 });
        assert_eq!(LineRange::new(Some(1), Some(5000)), LineRange { start: 1, end: 5000 });
        assert_eq!(
            LineRange::new(Some(i64::MAX), None),
            LineRange { start: i64::MAX as u64, end: i64::MAX as u64 + 999 }
        );
        assert_eq!(LineRange::new(Some(i64::MIN), Some(i64::MIN)), LineRange { start: 1, end: 1 });
    }

    #[test]
    fn whole_small_file() {
        assert_eq!(
            read(&ten_lines(), None, None),
            "1 | line1\n2 | line2\n3 | line3\n4 | line4\n5 | line5\n6 | line6\n7 | line7\n8 | line8\n9 | line9\n10 | line10\n\n(File has 10 lines total.)"
        );
    }

    #[test]
    fn explicit_window_shows_the_continuation_hint() {
        assert_eq!(
            read(&ten_lines(), Some(3), Some(5)),
            "3 | line3\n4 | line4\n5 | line5\n\n(Showing lines 3-5 of 10 total. Use start_line=6 to continue reading.)"
        );
    }

    #[test]
    fn inverted_bounds_are_swapped() {
        assert_eq!(read(&ten_lines(), Some(5), Some(3)), read(&ten_lines(), Some(3), Some(5)));
    }

    #[test]
    fn end_is_clamped_to_the_line_count() {
        assert_eq!(
            read(&ten_lines(), Some(8), Some(999)),
            "8 | line8\n9 | line9\n10 | line10\n\n(File has 10 lines total.)"
        );
    }

    #[test]
    fn window_ending_on_the_last_line_gives_the_total() {
        assert_eq!(read(&ten_lines(), Some(9), Some(10)), "9 | line9\n10 | line10\n\n(File has 10 lines total.)");
    }

    #[test]
    fn default_window_is_a_thousand_lines() {
        let text: String = (1..=1010).map(|i| format!("row{i}\n")).collect();
        let out = read(&text, None, None);
        let expected_tail =
            "1000 | row1000\n\n(Showing lines 1-1000 of 1010 total. Use start_line=1001 to continue reading.)";
        assert!(out.starts_with("1 | row1\n2 | row2\n"), "{out}");
        assert!(out.ends_with(expected_tail), "{out}");
        assert_eq!(out.lines().filter(|l| l.contains(" | ")).count(), 1000);
    }

    #[test]
    fn explicit_end_line_has_no_thousand_line_cap() {
        let text: String = (1..=1500).map(|i| format!("row{i}\n")).collect();
        let out = read(&text, Some(1), Some(1200));
        assert!(out.ends_with(
            "1200 | row1200\n\n(Showing lines 1-1200 of 1500 total. Use start_line=1201 to continue reading.)"
        ));
        assert_eq!(out.lines().filter(|l| l.contains(" | ")).count(), 1200);
    }

    #[test]
    fn crlf_is_split_and_output_uses_lf() {
        assert_eq!(read("a\r\nb\r\nc", None, None), "1 | a\n2 | b\n3 | c\n\n(File has 3 lines total.)");
        assert_eq!(read("a\r\nb\r\n", None, None), "1 | a\n2 | b\n\n(File has 2 lines total.)");
        // A `\r` not followed by `\n` is content, as in `split(/\r?\n/)`.
        assert_eq!(read("a\rb\r\nc\r", None, None), "1 | a\rb\n2 | c\r\n\n(File has 2 lines total.)");
    }

    #[test]
    fn trailing_newline_adds_no_line() {
        assert_eq!(read("alpha\nbeta\n", None, None), "1 | alpha\n2 | beta\n\n(File has 2 lines total.)");
        assert_eq!(read("\n", None, None), "1 | \n\n(File has 1 lines total.)");
        assert_eq!(read("a\n\n", None, None), "1 | a\n2 | \n\n(File has 2 lines total.)");
    }

    #[test]
    fn empty_file_is_an_empty_result() {
        assert_eq!(read("", None, None), "");
        assert_eq!(read("", Some(5), Some(10)), "");
    }

    #[test]
    fn start_past_the_end_gives_only_the_footer() {
        assert_eq!(read(&ten_lines(), Some(11), None), "\n\n(File has 10 lines total.)");
        assert_eq!(read("a\nb\n", Some(3), None), "\n\n(File has 2 lines total.)");
        assert_eq!(read("a\nb\n", Some(50), Some(60)), "\n\n(File has 2 lines total.)");
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(read("ok\n", None, None), "1 | ok\n\n(File has 1 lines total.)");
        let bytes: &[u8] = b"caf\xe9\n\xe2\x82\n";
        let window = read_window(bytes, LineRange::new(None, None)).ok();
        assert_eq!(window, Some(Window::Complete { text: "caf\u{FFFD}\n\u{FFFD}\n".to_owned(), total_lines: 2 }));
    }

    #[test]
    fn a_text_read_through_each_growth_of_the_buffer_keeps_every_line_and_character() {
        // Lines of two-, three- and four-byte characters, so that reads of 16, 32, ... 256 KiB end inside one,
        // over more than a whole chunk; read from a slice (each read fills the buffer) and a trickle (none does).
        let lines: Vec<String> = (0..30_000).map(|i| format!("{i} é€😀 {}", "x".repeat(i % 17))).collect();
        let text = lines.join("\n");
        assert!(text.len() > 2 * CHUNK);
        let range = LineRange::new(Some(5_000), Some(5_003));
        let want = Window::Complete { text: format!("{}\n", lines[4_999..5_003].join("\n")), total_lines: 30_000 };
        assert_eq!(read_window(text.as_bytes(), range).ok(), Some(want.clone()));
        assert_eq!(read_window(Trickle { data: text.as_bytes(), step: 4_093 }, range).ok(), Some(want));
        let last = LineRange::new(Some(29_999), None);
        let tail = Window::Complete { text: lines[29_998..].join("\n"), total_lines: 30_000 };
        assert_eq!(read_window(text.as_bytes(), last).ok(), Some(tail));
    }

    #[test]
    fn chunk_boundaries_do_not_change_the_result() {
        let text = "héllo wörld €uro 😀 end\r\nsecond ligne\nthird\u{FFFF}\n\nlast";
        let mut bytes = text.as_bytes().to_vec();
        bytes.extend_from_slice(b"\xf0\x9f\n\xff tail");
        let range = LineRange::new(Some(2), Some(6));
        let whole = read_window(bytes.as_slice(), range).ok();
        for step in 1..8 {
            let trickled = read_window(Trickle { data: &bytes, step }, range).ok();
            assert_eq!(trickled, whole, "step {step}");
        }
        assert_eq!(
            whole,
            Some(Window::Complete {
                text: "second ligne\nthird\u{FFFF}\n\nlast\u{FFFD}\n\u{FFFD} tail".to_owned(),
                total_lines: 6
            })
        );
    }

    #[test]
    fn a_window_read_from_a_checkpoint_equals_the_whole_read() {
        // Short reads put a checkpoint every few bytes, so some fall inside multi-byte characters' reach and
        // next to invalid bytes; each must resume exactly where a whole read would be.
        let mut bytes = Vec::new();
        for n in 0..300 {
            bytes.extend_from_slice(format!("{n} héllo 😀 wörld\r\n").as_bytes());
            if n % 37 == 0 {
                bytes.extend_from_slice(b"\xf0\x9f\xff\n");
            }
        }
        bytes.extend_from_slice("no newline at the end €".as_bytes());
        let first = LineRange::new(Some(1), Some(2));
        let (_, index) =
            read_window_from(Trickle { data: &bytes, step: 7 }, first, Resume::Start { record: true }).unwrap();
        let index = index.expect("a whole pass gives its index");
        assert!(index.checkpoints.len() > 100);
        for (start, end) in [(1, 5), (2, 2), (150, 160), (290, 400), (308, 308), (309, 320), (500, 600)] {
            let range = LineRange::new(Some(start), Some(end));
            let whole = read_window(bytes.as_slice(), range).unwrap();
            let checkpoint = index.before_line(range.start);
            assert!(checkpoint.newlines < range.start.max(1));
            let rest = &bytes[checkpoint.offset as usize..];
            let (resumed, _) = read_window_from(rest, range, Resume::At { checkpoint, index: &index }).unwrap();
            assert_eq!(resumed, whole, "lines {start}-{end} from {checkpoint:?}");
        }
    }

    #[test]
    fn format_bytes_matches_javascript() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(1024), "1.0 KB");
        assert_eq!(format_bytes(1536), "1.5 KB");
        assert_eq!(format_bytes(409_600), "400.0 KB");
        // 400.25 KB is a tie; `toFixed` rounds it up.
        assert_eq!(format_bytes(409_856), "400.3 KB");
        assert_eq!(format_bytes(1_048_575), "1024.0 KB");
        assert_eq!(format_bytes(1_048_576), "1.0 MB");
        assert_eq!(format_bytes(52_428_800), "50.0 MB");
        assert_eq!(format_bytes(u64::MAX), "17592186044416.0 MB");
    }

    #[test]
    fn truncation_marker_text() {
        assert_eq!(
            truncation_marker(1_048_576),
            "\n\n---\n\n[FILE TRUNCATED: This content is 1.0 MB but only the first 400.0 KB is shown (624.0 KB truncated). Use search_files to find specific patterns, or execute_command with grep/head/tail for targeted reading.]"
        );
    }

    #[test]
    fn a_window_over_the_cap_is_truncated_without_a_footer() {
        // 1000 lines of 999 characters plus a newline: 1,000,000 characters in the default window.
        let line = "x".repeat(999);
        let text: String = (0..2000).map(|_| format!("{line}\n")).collect();
        let out = read(&text, None, None);
        let kept_lines = MAX_CONTENT_CHARS / 1000;
        let mut expected: String = (1..=kept_lines).map(|k| format!("{k} | {line}\n")).collect();
        // The cut falls 600 characters into line 410.
        let _ = write!(expected, "{} | {}", kept_lines + 1, "x".repeat(600));
        expected.push_str(&truncation_marker(1_000_000));
        assert_eq!(out, expected);
        assert!(out.ends_with("This content is 976.6 KB but only the first 400.0 KB is shown (576.6 KB truncated). Use search_files to find specific patterns, or execute_command with grep/head/tail for targeted reading.]"));
    }

    #[test]
    fn the_cap_counts_utf16_units_not_bytes() {
        // 204,800 two-byte characters are 409,600 units and fit; one more astral character does not.
        let fits = "é".repeat(MAX_CONTENT_CHARS);
        assert!(matches!(read_window(fits.as_bytes(), LineRange::new(None, None)), Ok(Window::Complete { .. })));
        let over = format!("{}😀", "é".repeat(MAX_CONTENT_CHARS - 1));
        let window = read_window(over.as_bytes(), LineRange::new(None, None)).ok();
        assert_eq!(
            window,
            Some(Window::Truncated { text: "é".repeat(MAX_CONTENT_CHARS - 1), len: MAX_CONTENT_CHARS as u64 + 1 })
        );
    }

    #[test]
    fn the_cap_applies_to_the_window_not_the_file() {
        // Cline could never show line 5000 of this 1 MB file; we can, and the window is far under the cap.
        let text: String = (1..=10_000).map(|i| format!("{i:099}\n")).collect();
        assert_eq!(
            read(&text, Some(5000), Some(5001)),
            format!("5000 | {:099}\n5001 | {:099}\n\n(Showing lines 5000-5001 of 10000 total. Use start_line=5002 to continue reading.)", 5000, 5001)
        );
    }

    #[test]
    fn a_window_deep_in_a_multi_megabyte_file() {
        let file = tempfile::tempfile();
        let Ok(mut file) = file else { panic!("no temp file") };
        {
            let mut w = BufWriter::new(&mut file);
            for i in 1..=300_000u32 {
                let _ = writeln!(w, "line number {i} with some padding to make it longer");
            }
            let _ = w.flush();
        }
        let _ = file.rewind();
        let range = LineRange::new(Some(250_000), Some(250_002));
        let out = read_window(&mut file, range).map(|w| w.render(range)).ok();
        assert_eq!(
            out.as_deref(),
            Some(
                "250000 | line number 250000 with some padding to make it longer\n\
                 250001 | line number 250001 with some padding to make it longer\n\
                 250002 | line number 250002 with some padding to make it longer\n\n\
                 (Showing lines 250000-250002 of 300000 total. Use start_line=250003 to continue reading.)"
            )
        );
        let _ = file.rewind();
        let range = LineRange::new(Some(299_999), None);
        let out = read_window(&mut file, range).map(|w| w.render(range)).ok();
        assert_eq!(
            out.as_deref(),
            Some(
                "299999 | line number 299999 with some padding to make it longer\n\
                 300000 | line number 300000 with some padding to make it longer\n\n\
                 (File has 300000 lines total.)"
            )
        );
    }

    #[test]
    fn a_huge_window_keeps_only_the_cap_but_measures_everything() {
        let text: String = (0..100_000).map(|i| format!("{i:019}\n")).collect();
        let window = read_window(text.as_bytes(), LineRange::new(Some(1), Some(i64::MAX)));
        let Ok(Window::Truncated { text: kept, len }) = window else { panic!("expected a truncated window") };
        assert_eq!(len, 2_000_000);
        assert_eq!(kept.len(), MAX_CONTENT_CHARS);
    }
}
