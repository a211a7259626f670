//! Server-sent-event lines, split in linear time under caps on one line, one event and the whole stream.
//!
//! Hand-rolled because neither SSE crate at hand fits: `eventsource-stream` re-parses its whole buffer from
//! the start on every chunk (quadratic on one long line) and caps nothing, and `sse-stream` (in the tree
//! through rmcp) rejects lines the SSE specification says to ignore and caps nothing either, so a limiter
//! that finds the line ends itself would still be needed in front of it. The driver only needs lines.

/// The longest one line (or one event, its lines together) may be.
pub(super) const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Why the stream was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Overflow {
    /// One line went past [`MAX_LINE_BYTES`].
    Line,
    /// One event (the lines up to a blank one) went past [`MAX_LINE_BYTES`].
    Event,
    /// The stream went past its byte budget.
    Stream(u64),
}

impl Overflow {
    /// The error text the subagent run fails with.
    pub fn message(&self) -> String {
        match self {
            Overflow::Line => format!("The model stream sent a line longer than {MAX_LINE_BYTES} bytes."),
            Overflow::Event => format!("The model stream sent an event longer than {MAX_LINE_BYTES} bytes."),
            Overflow::Stream(max) => format!(
                "The model's answer went past {max} bytes (the limit is [subagents] max_response_bytes = {max})."
            ),
        }
    }
}

/// The lines of an event stream, fed chunk by chunk. Every byte is searched for a line end once and moved
/// at most once, whatever the chunk sizes.
#[derive(Debug)]
pub(super) struct SseLines {
    buffer: Vec<u8>,
    /// Where the next line starts in `buffer`.
    start: usize,
    /// How far `buffer` has been searched for a newline.
    searched: usize,
    /// Bytes of the event being read (its lines since the last blank one).
    event: usize,
    received: u64,
    max_stream: u64,
}

impl SseLines {
    /// Lines of a stream that may carry at most `max_stream` bytes.
    pub fn new(max_stream: u64) -> Self {
        Self { buffer: Vec::new(), start: 0, searched: 0, event: 0, received: 0, max_stream }
    }

    /// Takes the next chunk of the body. Call [`Self::next_line`] until it answers `None` first.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), Overflow> {
        self.received = self.received.saturating_add(chunk.len() as u64);
        if self.received > self.max_stream {
            return Err(Overflow::Stream(self.max_stream));
        }
        if self.start > 0 {
            // Only the unfinished line is left here, and it holds no newline: each byte moves once.
            self.buffer.drain(..self.start);
            self.searched -= self.start;
            self.start = 0;
        }
        self.buffer.extend_from_slice(chunk);
        Ok(())
    }

    /// The next whole line (without its line end), or `None` until more arrives.
    pub fn next_line(&mut self) -> Result<Option<&[u8]>, Overflow> {
        let Some(at) = self.buffer[self.searched..].iter().position(|b| *b == b'\n') else {
            self.searched = self.buffer.len();
            if self.buffer.len() - self.start > MAX_LINE_BYTES {
                return Err(Overflow::Line);
            }
            return Ok(None);
        };
        let end = self.searched + at;
        let line = &self.buffer[self.start..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > MAX_LINE_BYTES {
            return Err(Overflow::Line);
        }
        self.event = if line.is_empty() { 0 } else { self.event + line.len() };
        if self.event > MAX_LINE_BYTES {
            return Err(Overflow::Event);
        }
        self.start = end + 1;
        self.searched = self.start;
        Ok(Some(line))
    }

    /// What is left after the body ended: a last line without its newline.
    pub fn rest(&self) -> &[u8] {
        &self.buffer[self.start..]
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn lines_of(chunks: &[&[u8]]) -> Vec<String> {
        let mut lines = SseLines::new(u64::MAX);
        let mut out = Vec::new();
        for chunk in chunks {
            lines.push(chunk).unwrap();
            while let Some(line) = lines.next_line().unwrap() {
                out.push(String::from_utf8_lossy(line).into_owned());
            }
        }
        out.push(format!("rest={}", String::from_utf8_lossy(lines.rest())));
        out
    }

    #[test]
    fn lines_come_whole_whatever_the_chunks() {
        let expected = ["data: a", "", "data: bc", "", "rest=data: [DO"];
        assert_eq!(lines_of(&[b"data: a\n\ndata: bc\r\n\r\ndata: [DO"]), expected);
        assert_eq!(lines_of(&[b"da", b"ta: a\n", b"\n", b"data: b", b"c\r", b"\n\r\nda", b"ta: [DO"]), expected);
    }

    #[test]
    fn caps_on_lines_events_and_the_stream() {
        let mut lines = SseLines::new(u64::MAX);
        let piece = vec![b'x'; 1 << 16];
        let mut overflow = None;
        for _ in 0..(MAX_LINE_BYTES / piece.len() + 2) {
            lines.push(&piece).unwrap();
            if let Err(e) = lines.next_line() {
                overflow = Some(e);
                break;
            }
        }
        assert_eq!(overflow, Some(Overflow::Line));

        let mut lines = SseLines::new(u64::MAX);
        let line = format!("data: {}\n", "y".repeat(1 << 20));
        let mut overflow = None;
        for _ in 0..8 {
            lines.push(line.as_bytes()).unwrap();
            if let Err(e) = lines.next_line() {
                overflow = Some(e);
                break;
            }
        }
        assert_eq!(overflow, Some(Overflow::Event));

        let mut lines = SseLines::new(10);
        lines.push(b"data: 1\n").unwrap();
        assert_eq!(lines.push(b"data: 2\n"), Err(Overflow::Stream(10)));
        assert!(Overflow::Stream(10).message().contains("[subagents] max_response_bytes = 10"));
    }

    #[test]
    fn one_long_line_in_small_chunks_is_searched_once() {
        // A line of almost the whole cap in 64-byte chunks: the search never goes back over a byte.
        let mut lines = SseLines::new(u64::MAX);
        let chunk = [b'z'; 64];
        let mut searched = 0usize;
        for _ in 0..(MAX_LINE_BYTES / 64 - 1) {
            lines.push(&chunk).unwrap();
            assert_eq!(lines.next_line().unwrap(), None);
            searched += 64;
            assert_eq!(lines.searched, searched, "each byte is searched once");
        }
        lines.push(b"\n").unwrap();
        assert_eq!(lines.next_line().unwrap().map(<[u8]>::len), Some(MAX_LINE_BYTES - 64));
    }
}
