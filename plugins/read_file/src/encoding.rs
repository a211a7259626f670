//! How the start of a file decides how it is read: byte-order marks, the binary heuristic, and UTF-16.
//!
//! Cline asks jschardet for the encoding and only when that fails (and the file has an extension) asks
//! isbinaryfile whether to refuse it. We decode UTF-8 (lossily) and the UTF-16 forms that announce themselves
//! with a byte-order mark, and apply isbinaryfile's check to files without one.

use std::io::{self, Read};

/// How much of the file the binary heuristic looks at.
pub const SNIFF_LEN: usize = 8 * 1024;

/// A byte-order mark at the start of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bom {
    /// `EF BB BF`: UTF-8; the mark is dropped, as iconv-lite drops it.
    Utf8,
    /// `FF FE`: UTF-16, little-endian.
    Utf16Le,
    /// `FE FF`: UTF-16, big-endian.
    Utf16Be,
}

impl Bom {
    /// The mark at the start of `sample`, if any.
    pub fn detect(sample: &[u8]) -> Option<Self> {
        match sample {
            [0xEF, 0xBB, 0xBF, ..] => Some(Bom::Utf8),
            [0xFF, 0xFE, ..] => Some(Bom::Utf16Le),
            [0xFE, 0xFF, ..] => Some(Bom::Utf16Be),
            _ => None,
        }
    }

    /// The mark's length in bytes.
    pub fn len(self) -> u64 {
        match self {
            Bom::Utf8 => 3,
            Bom::Utf16Le | Bom::Utf16Be => 2,
        }
    }
}

/// Whether a file that starts with `sample` is binary: isbinaryfile 5's `isBinaryCheck` (a PDF header, a NUL
/// byte, or more than 10% bytes that are neither printable ASCII, common control characters, nor part of a
/// two- or three-byte UTF-8 sequence), except that valid UTF-8 is always text.
///
/// Cline consults isbinaryfile only when jschardet finds no encoding, and jschardet recognises valid UTF-8, so
/// isbinaryfile's verdict on, say, emoji-dense text (four-byte sequences count as suspicious) never applies.
/// Its last step (parsing the sample as protobuf when it has two suspicious bytes) is left out for the same
/// reason: it flags text in legacy encodings, which jschardet recognises first.
pub fn looks_binary(sample: &[u8]) -> bool {
    let total = sample.len();
    if total == 0 {
        return false;
    }
    // Marks of UTF-8, UTF-32 (both orders), GB 18030 and UTF-16 (both orders) declare text; PDF is binary.
    let declared_text = sample.starts_with(&[0xEF, 0xBB, 0xBF])
        || sample.starts_with(&[0x00, 0x00, 0xFE, 0xFF])
        || sample.starts_with(&[0xFF, 0xFE, 0x00, 0x00])
        || sample.starts_with(&[0x84, 0x31, 0x95, 0x33]);
    if declared_text {
        return false;
    }
    if sample.starts_with(b"%PDF-") {
        return true;
    }
    if sample.starts_with(&[0xFE, 0xFF]) || sample.starts_with(&[0xFF, 0xFE]) {
        return false;
    }
    if memchr::memchr(0, sample).is_some() {
        return true;
    }
    // A sequence cut off by the end of the sample does not make it invalid.
    if std::str::from_utf8(sample).map_or_else(|e| e.error_len().is_none(), |_| true) {
        return false;
    }
    let continuation = |i: usize| sample.get(i).is_some_and(|b| (0x80..0xC0).contains(b));
    let mut suspicious = 0usize;
    let mut i = 0;
    while i < total {
        let byte = sample[i];
        let plain = (7..=14).contains(&byte) || (32..=127).contains(&byte);
        if !plain {
            // Well-formed two- and three-byte UTF-8 sequences are not suspicious; isbinaryfile skips past the
            // bytes it examined either way.
            if (0xC2..0xE0).contains(&byte) && i + 1 < total {
                i += 1;
                if continuation(i) {
                    i += 1;
                    continue;
                }
            } else if (0xE0..0xF0).contains(&byte) && i + 2 < total {
                i += 1;
                if continuation(i) && continuation(i + 1) {
                    i += 2;
                    continue;
                }
            }
            suspicious += 1;
            if i >= 32 && suspicious * 100 / total > 10 {
                return true;
            }
        }
        i += 1;
    }
    suspicious * 100 / total > 10
}

/// Transcodes UTF-16 (after its byte-order mark) to UTF-8 on the fly, so a UTF-16 file streams through the same
/// line window as any other; unpaired surrogates and a dangling odd byte become U+FFFD.
pub struct Utf16Reader<R> {
    inner: R,
    big_endian: bool,
    raw: Vec<u8>,
    odd_byte: Option<u8>,
    high_surrogate: Option<u16>,
    out: Vec<u8>,
    served: usize,
    done: bool,
}

impl<R: Read> Utf16Reader<R> {
    /// Wraps `inner`, positioned just past the byte-order mark.
    pub fn new(inner: R, big_endian: bool) -> Self {
        Self {
            inner,
            big_endian,
            raw: vec![0; 64 * 1024],
            odd_byte: None,
            high_surrogate: None,
            out: Vec::new(),
            served: 0,
            done: false,
        }
    }

    fn refill(&mut self) -> io::Result<()> {
        self.out.clear();
        self.served = 0;
        let n = loop {
            match self.inner.read(&mut self.raw) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        let Self { big_endian, raw, odd_byte, high_surrogate, out, .. } = self;
        if n == 0 {
            self.done = true;
            for _ in odd_byte.take().into_iter().chain(high_surrogate.take().map(|_| 0)) {
                out.extend_from_slice("\u{FFFD}".as_bytes());
            }
            return Ok(());
        }
        let mut bytes = &raw[..n];
        let unit = |pair: [u8; 2]| {
            if *big_endian {
                u16::from_be_bytes(pair)
            } else {
                u16::from_le_bytes(pair)
            }
        };
        if let Some(first) = odd_byte.take()
            && let Some((&second, rest)) = bytes.split_first()
        {
            push_unit(out, high_surrogate, unit([first, second]));
            bytes = rest;
        }
        let mut pairs = bytes.chunks_exact(2);
        for pair in &mut pairs {
            push_unit(out, high_surrogate, unit([pair[0], pair[1]]));
        }
        *odd_byte = pairs.remainder().first().copied();
        Ok(())
    }
}

fn push_unit(out: &mut Vec<u8>, high_surrogate: &mut Option<u16>, unit: u16) {
    let mut utf8 = [0u8; 4];
    let mut emit = |c: char| out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
    if let Some(high) = high_surrogate.take() {
        if (0xDC00..0xE000).contains(&unit) {
            let code = 0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(unit) - 0xDC00);
            emit(char::from_u32(code).unwrap_or('\u{FFFD}'));
            return;
        }
        emit('\u{FFFD}');
    }
    if (0xD800..0xDC00).contains(&unit) {
        *high_surrogate = Some(unit);
    } else {
        emit(char::from_u32(u32::from(unit)).unwrap_or('\u{FFFD}'));
    }
}

impl<R: Read> Read for Utf16Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.served == self.out.len() {
            if self.done {
                return Ok(0);
            }
            self.refill()?;
        }
        let n = buf.len().min(self.out.len() - self.served);
        buf[..n].copy_from_slice(&self.out[self.served..self.served + n]);
        self.served += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn transcode(bytes: &[u8], big_endian: bool) -> String {
        let mut out = String::new();
        match Utf16Reader::new(bytes, big_endian).read_to_string(&mut out) {
            Ok(_) => out,
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn boms() {
        assert_eq!(Bom::detect(b"\xEF\xBB\xBFabc"), Some(Bom::Utf8));
        assert_eq!(Bom::detect(b"\xFF\xFEa\0"), Some(Bom::Utf16Le));
        assert_eq!(Bom::detect(b"\xFE\xFF\0a"), Some(Bom::Utf16Be));
        assert_eq!(Bom::detect(b"plain"), None);
        assert_eq!(Bom::detect(b""), None);
    }

    #[test]
    fn text_is_not_binary() {
        assert!(!looks_binary(b""));
        assert!(!looks_binary(b"fn main() {\n\tprintln!(\"hi\");\r\n}\n"));
        assert!(!looks_binary("Grüße, 世界 — ok\n".repeat(100).as_bytes()));
        assert!(!looks_binary(b"\xEF\xBB\xBFwith a mark\0and a NUL after it"));
        assert!(!looks_binary(b"\xFF\xFEu\0t\0f\x001\x006\0"));
        // isbinaryfile alone would call this binary: every byte of a four-byte sequence counts as suspicious.
        assert!(!looks_binary("😀🎉🚀 ok\n".repeat(50).as_bytes()));
        // A UTF-8 sequence cut off by the end of the sample.
        assert!(!looks_binary(&"€".as_bytes()[..2]));
    }

    #[test]
    fn binary_is_binary() {
        assert!(looks_binary(b"ELF\x02\x01\x01\0\0\0"));
        assert!(looks_binary(b"%PDF-1.7\n"));
        assert!(looks_binary(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"));
        // No NUL, but far more than 10% stray high bytes.
        let noisy: Vec<u8> = (0..200u8).map(|i| if i % 3 == 0 { 0xFF } else { b'a' }).collect();
        assert!(looks_binary(&noisy));
    }

    #[test]
    fn a_few_stray_bytes_are_still_text() {
        let mut latin1 = b"caf\xe9 ".repeat(2);
        latin1.extend_from_slice(&b"plain ascii text ".repeat(10));
        assert!(!looks_binary(&latin1));
    }

    #[test]
    fn utf16_is_transcoded() {
        let text = "a€😀\r\nz";
        let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(transcode(&le, false), text);
        assert_eq!(transcode(&be, true), text);
    }

    #[test]
    fn broken_utf16_becomes_replacement_characters() {
        // A lone low surrogate, a high surrogate followed by a letter, and an odd final byte.
        let bytes = [0x00, 0xDC, 0x3D, 0xD8, 0x41, 0x00, 0x42];
        assert_eq!(transcode(&bytes, false), "\u{FFFD}\u{FFFD}A\u{FFFD}");
        // A high surrogate at the very end.
        assert_eq!(transcode(&[0x41, 0x00, 0x3D, 0xD8], false), "A\u{FFFD}");
    }

    #[test]
    fn utf16_survives_one_byte_reads() {
        struct OneByte<'a>(&'a [u8]);
        impl Read for OneByte<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                match (self.0.split_first(), buf.first_mut()) {
                    (Some((&b, rest)), Some(slot)) => {
                        *slot = b;
                        self.0 = rest;
                        Ok(1)
                    }
                    _ => Ok(0),
                }
            }
        }
        let text = "x😀y\n";
        let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let mut out = String::new();
        let read = Utf16Reader::new(OneByte(&le), false).read_to_string(&mut out);
        assert!(read.is_ok());
        assert_eq!(out, text);
    }
}
