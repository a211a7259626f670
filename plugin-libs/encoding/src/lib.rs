//! How the file tools (read_file, write_to_file and its aliases, apply_patch, search_files) tell text from
//! binary and read and write text in the encoding it is in: one decision, made on the same bounded prefix by
//! every tool, so the text a model reads is the text its edit is matched against and the text a search sees.
//!
//! Cline asks jschardet for a file's encoding and decodes with iconv-lite (`integrations/misc/extract-text.ts`);
//! only when jschardet finds none does it ask isbinaryfile whether to refuse the file. We ask, in order:
//! a byte-order mark; a PDF header or a NUL byte (binary, unless the NULs are those of UTF-16 without a mark);
//! valid UTF-8 (ASCII included); and otherwise chardetng (Firefox's detector) for a legacy encoding, whose
//! decoding of the prefix must look like text. Decoding and encoding are encoding_rs's, streamed through
//! encoding_rs_io.
//!
//! ```
//! use toolshed_encoding::{sniff, Sniff};
//!
//! let Sniff::Text(found) = sniff(b"caf\xe9 cr\xe8me br\xfbl\xe9e\n", true) else { panic!() };
//! assert_eq!(found.name(), "windows-1252");
//! let text = found.decode_exact(b"caf\xe9 cr\xe8me br\xfbl\xe9e\n").unwrap();
//! assert_eq!(text, "café crème brûlée\n");
//! assert_eq!(found.encode("déjà vu\n").unwrap(), b"d\xe9j\xe0 vu\n");
//! assert!(found.encode("→").is_err());
//! ```
#![deny(missing_docs)]

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{EncoderResult, Encoding, UTF_16BE, UTF_16LE, UTF_8};
use std::io::{BufReader, Read};

/// How much of a file's start decides its encoding. The same for every tool, so read, edit and search agree;
/// bounded, so a huge file is never held in memory to be classified.
pub const SNIFF_LEN: usize = 64 * 1024;

/// The read size of a decoding reader.
const DECODE_BUFFER: usize = 64 * 1024;

/// The share of suspicious characters (control characters other than whitespace, replacement characters)
/// above which decoded text is taken for binary: isbinaryfile's 10%.
const MAX_SUSPICIOUS_PERCENT: usize = 10;

/// What a file's first bytes say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniff {
    /// Not text: a PDF, NUL bytes, or bytes that no encoding turns into text.
    Binary,
    /// Text in this encoding.
    Text(TextEncoding),
}

/// A text file's encoding, and whether it starts with a byte-order mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextEncoding {
    encoding: &'static Encoding,
    bom: bool,
}

/// A character the file's encoding has no bytes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unmappable {
    /// The character.
    pub ch: char,
    /// Its line in the text, 1-based.
    pub line: usize,
    /// The encoding's name.
    pub encoding: &'static str,
}

impl std::fmt::Display for Unmappable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the file is encoded in {}, which has no '{}' (U+{:04X}, line {} of the new text)",
            self.encoding, self.ch, self.ch as u32, self.line
        )
    }
}

/// Why a file's bytes cannot be turned into text and back unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The start of the file is not text.
    Binary,
    /// The bytes at `offset` are not valid in the file's encoding, so its text would hold replacement
    /// characters in their place, and writing it back would destroy them.
    Malformed {
        /// The encoding's name.
        encoding: &'static str,
        /// The offset of the first invalid byte.
        offset: usize,
    },
    /// The text would encode to other bytes than the file's (a stateful or ambiguous encoding).
    NotReversible {
        /// The encoding's name.
        encoding: &'static str,
    },
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Binary => write!(f, "it is not a text file"),
            DecodeError::Malformed { encoding, offset } => write!(
                f,
                "it does not decode cleanly as {encoding} (invalid bytes at offset {offset}), and writing it back would destroy the bytes that do not decode"
            ),
            DecodeError::NotReversible { encoding } => write!(
                f,
                "it is encoded in {encoding}, and its text would not be written back as the same bytes"
            ),
        }
    }
}

impl TextEncoding {
    /// UTF-8 without a byte-order mark: what a new file is written in.
    pub const UTF8: TextEncoding = TextEncoding { encoding: UTF_8, bom: false };

    /// The encoding's WHATWG name (`UTF-8`, `windows-1252`, `Shift_JIS`, `UTF-16LE`…).
    pub fn name(self) -> &'static str {
        self.encoding.name()
    }

    /// The encoding_rs encoding.
    pub fn encoding(self) -> &'static Encoding {
        self.encoding
    }

    /// Whether the text is UTF-8 (with or without a mark): its bytes are its text.
    pub fn is_utf8(self) -> bool {
        self.encoding == UTF_8
    }

    /// Whether the file starts with a byte-order mark.
    pub fn has_bom(self) -> bool {
        self.bom
    }

    /// The length of the byte-order mark the file starts with, 0 without one.
    pub fn bom_len(self) -> usize {
        match (self.bom, self.is_utf8()) {
            (false, _) => 0,
            (true, true) => 3,
            (true, false) => 2,
        }
    }

    /// A reader of the text, as UTF-8, of `reader`, which must be at the very start of the file: the decoder
    /// drops the file's byte-order mark, and only it (a U+FEFF right after it is text, as in
    /// [`decode_exact`](Self::decode_exact)), so a reader already past the mark would lose that character.
    /// Invalid sequences become U+FFFD, as iconv-lite decodes them.
    pub fn decoding_reader<R: Read>(self, reader: R) -> impl Read {
        Decoding(BufReader::with_capacity(
            DECODE_BUFFER,
            encoding_rs_io::DecodeReaderBytesBuilder::new().encoding(Some(self.encoding)).build(reader),
        ))
    }

    /// The text of the whole file `bytes` (its mark included), or why it would not be written back unchanged.
    pub fn decode_exact(self, bytes: &[u8]) -> Result<String, DecodeError> {
        let body = &bytes[self.bom_len().min(bytes.len())..];
        let encoding = self.name();
        if self.is_utf8() {
            return String::from_utf8(body.to_vec()).map_err(|e| DecodeError::Malformed {
                encoding,
                offset: self.bom_len() + e.utf8_error().valid_up_to(),
            });
        }
        let Some(text) = self.encoding.decode_without_bom_handling_and_without_replacement(body) else {
            // Find where, for the message: the decoder reports how far it got before the first error.
            let mut decoder = self.encoding.new_decoder_without_bom_handling();
            let mut out = String::with_capacity(decoder.max_utf8_buffer_length(body.len()).unwrap_or(0));
            let (_, read) = decoder.decode_to_string_without_replacement(body, &mut out, true);
            return Err(DecodeError::Malformed { encoding, offset: self.bom_len() + read.saturating_sub(1) });
        };
        let text = text.into_owned();
        // A legacy encoding can have two byte sequences for one character, or state (ISO-2022-JP); an edit of
        // such a file would change bytes outside the edit, so it is refused instead.
        match self.encode(&text) {
            Ok(again) if again.get(self.bom_len()..) == Some(body) => Ok(text),
            Ok(_) | Err(_) => Err(DecodeError::NotReversible { encoding }),
        }
    }

    /// The bytes of `text` in this encoding, with the byte-order mark when the file had one; an error names
    /// the first character the encoding has no bytes for (nothing is replaced or escaped).
    pub fn encode(self, text: &str) -> Result<Vec<u8>, Unmappable> {
        let mut out = Vec::with_capacity(text.len() + 3);
        if self.encoding == UTF_8 {
            if self.bom {
                out.extend_from_slice(&[0xEF, 0xBB, 0xBF]);
            }
            out.extend_from_slice(text.as_bytes());
            return Ok(out);
        }
        // encoding_rs encodes only into ASCII-compatible encodings (WHATWG's rule): UTF-16 is written here.
        if self.encoding == UTF_16LE || self.encoding == UTF_16BE {
            let big = self.encoding == UTF_16BE;
            if self.bom {
                out.extend_from_slice(if big { &[0xFE, 0xFF] } else { &[0xFF, 0xFE] });
            }
            out.extend(text.encode_utf16().flat_map(|u| if big { u.to_be_bytes() } else { u.to_le_bytes() }));
            return Ok(out);
        }
        let mut encoder = self.encoding.new_encoder();
        let mut rest = text;
        loop {
            let room = encoder.max_buffer_length_from_utf8_without_replacement(rest.len()).unwrap_or(rest.len() * 4);
            out.reserve(room.max(16));
            let (result, read) = encoder.encode_from_utf8_to_vec_without_replacement(rest, &mut out, true);
            rest = &rest[read..];
            match result {
                EncoderResult::InputEmpty => return Ok(out),
                EncoderResult::OutputFull => continue,
                EncoderResult::Unmappable(ch) => {
                    let done = text.len() - rest.len();
                    let line = text[..done].matches('\n').count() + 1;
                    return Err(Unmappable { ch, line, encoding: self.name() });
                }
            }
        }
    }
}

/// A decoding reader whose decoder is only ever read through a large buffer: encoding_rs_io 0.1.8 drops the
/// end of a text that ends in a replacement character when it is read into fewer than 4 bytes (its
/// `tiny_transcode` path), and `BufReader`'s own `read_to_end` would hand the decoder the caller's buffer.
struct Decoding<R>(BufReader<R>);

impl<R: Read> Read for Decoding<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.len() < 4 {
            let available = std::io::BufRead::fill_buf(&mut self.0)?;
            let n = available.len().min(buf.len());
            buf[..n].copy_from_slice(&available[..n]);
            std::io::BufRead::consume(&mut self.0, n);
            return Ok(n);
        }
        self.0.read(buf)
    }
}

/// Classifies a file by its first bytes: `sample` is at most [`SNIFF_LEN`] bytes from its start, and
/// `complete` says whether it is the whole file (a sequence cut off at its end is then invalid, not pending).
pub fn sniff(sample: &[u8], complete: bool) -> Sniff {
    let text = |encoding, bom| Sniff::Text(TextEncoding { encoding, bom });
    match sample {
        [0xEF, 0xBB, 0xBF, ..] => return text(UTF_8, true),
        [0xFF, 0xFE, ..] => return text(UTF_16LE, true),
        [0xFE, 0xFF, ..] => return text(UTF_16BE, true),
        _ => {}
    }
    if sample.starts_with(b"%PDF-") {
        return Sniff::Binary;
    }
    if memchr::memchr(0, sample).is_some() {
        return match utf16_without_bom(sample) {
            Some(encoding) => text(encoding, false),
            None => Sniff::Binary,
        };
    }
    match std::str::from_utf8(sample) {
        Ok(_) => return text(UTF_8, false),
        // A sequence cut off by the end of the sample does not make it invalid, unless the file ends there.
        Err(e) if e.error_len().is_none() && !complete => return text(UTF_8, false),
        Err(_) => {}
    }
    let mut detector = EncodingDetector::new(Iso2022JpDetection::Deny);
    detector.feed(sample, complete);
    let guess = detector.guess(None, Utf8Detection::Deny);
    let (decoded, _) = guess.decode_without_bom_handling(sample);
    if looks_like_text(&decoded, !complete) {
        text(guess, false)
    } else {
        Sniff::Binary
    }
}

/// Reads up to [`SNIFF_LEN`] bytes from the start of `reader`, for [`sniff`]: the bytes and whether they are
/// all there is.
pub fn read_sample<R: Read>(reader: R) -> std::io::Result<(Vec<u8>, bool)> {
    // The whole capacity at once: a file that fits takes one read and the read that finds its end, the same
    // reads a searcher would make of it.
    let mut sample = Vec::with_capacity(SNIFF_LEN + 1);
    reader.take(SNIFF_LEN as u64 + 1).read_to_end(&mut sample)?;
    let complete = sample.len() <= SNIFF_LEN;
    sample.truncate(SNIFF_LEN);
    Ok((sample, complete))
}

/// [`sniff`] of a whole file already in memory, on the same prefix the streaming tools look at.
pub fn sniff_bytes(bytes: &[u8]) -> Sniff {
    sniff(&bytes[..bytes.len().min(SNIFF_LEN)], bytes.len() <= SNIFF_LEN)
}

/// Whether `sample`, which has NUL bytes, is UTF-16 without a byte-order mark: most code units have a zero
/// high byte (Latin text), none is NUL, and the units decode to text.
fn utf16_without_bom(sample: &[u8]) -> Option<&'static Encoding> {
    let units = sample.len() / 2;
    if units < 2 {
        return None;
    }
    let (low_first, high_first) = unit_shapes(sample)?;
    // A character whose low byte is zero (U+4E00 一, U+3000, U+0100 Ā) has a unit of the other order's shape,
    // so the other shape may be a small minority, not none: one such character must not turn the file, or a
    // file an edit wrote, into binary.
    let encoding = if low_first * 2 >= units && high_first * 4 <= low_first {
        UTF_16LE
    } else if high_first * 2 >= units && low_first * 4 <= high_first {
        UTF_16BE
    } else {
        return None;
    };
    let (decoded, _) = encoding.decode_without_bom_handling(&sample[..units * 2]);
    looks_like_text(&decoded, true).then_some(encoding)
}

/// The two-byte units of `sample` with only their low byte set (first, in UTF-16LE) and with only their high
/// byte set; `None` at the first NUL unit.
///
/// One pass that stops at the first NUL unit: most files with NUL bytes are binary and have one early, and this
/// runs on every such file a search walks (two whole counting passes first were most of `sniff`'s time in a
/// search of a source tree with binaries in it).
fn unit_shapes(sample: &[u8]) -> Option<(usize, usize)> {
    let (mut low_first, mut high_first) = (0usize, 0usize);
    for pair in sample.chunks_exact(2) {
        match (pair[0], pair[1]) {
            (0, 0) => return None,
            (_, 0) => low_first += 1,
            (0, _) => high_first += 1,
            _ => {}
        }
    }
    Some((low_first, high_first))
}

/// Whether decoded text is text: at most [`MAX_SUSPICIOUS_PERCENT`] of its characters are control characters
/// other than whitespace and escape, or replacement characters. `cut` forgives one replacement character at
/// the end (a sequence cut off by the end of the sample).
fn looks_like_text(decoded: &str, cut: bool) -> bool {
    let decoded = if cut { decoded.strip_suffix('\u{FFFD}').unwrap_or(decoded) } else { decoded };
    let mut total = 0usize;
    let mut suspicious = 0usize;
    for c in decoded.chars() {
        total += 1;
        let odd = match c {
            '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | '\u{1B}' => false,
            '\u{FFFD}' => true,
            c => c.is_control(),
        };
        suspicious += usize::from(odd);
    }
    suspicious * 100 <= total * MAX_SUSPICIOUS_PERCENT
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use pretty_assertions::assert_eq;

    fn name(sample: &[u8]) -> String {
        match sniff(sample, true) {
            Sniff::Binary => "binary".to_owned(),
            Sniff::Text(found) => format!("{}{}", found.name(), if found.has_bom() { "+bom" } else { "" }),
        }
    }

    #[test]
    fn marks_utf8_and_binary() {
        assert_eq!(name(b""), "UTF-8");
        assert_eq!(name(b"fn main() {}\r\n"), "UTF-8");
        assert_eq!(name("Grüße, 世界 😀\n".as_bytes()), "UTF-8");
        assert_eq!(name(b"\xEF\xBB\xBFwith a mark\0and a NUL"), "UTF-8+bom");
        assert_eq!(name(b"\xFF\xFEa\0"), "UTF-16LE+bom");
        assert_eq!(name(b"\xFE\xFF\0a"), "UTF-16BE+bom");
        assert_eq!(name(b"%PDF-1.7\n"), "binary");
        assert_eq!(name(b"\x7fELF\x02\x01\x01\0\0\0"), "binary");
        assert_eq!(name(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), "binary");
    }

    #[test]
    fn a_cut_sequence_is_pending_only_when_the_file_goes_on() {
        let cut = &"€".as_bytes()[..2];
        assert!(matches!(sniff(cut, false), Sniff::Text(found) if found.is_utf8()));
        assert!(!matches!(sniff(cut, true), Sniff::Text(found) if found.is_utf8()));
    }

    #[test]
    fn legacy_encodings() {
        assert_eq!(name(b"Le caf\xe9 est tr\xe8s cher \xe0 Paris, m\xeame en \xe9t\xe9.\n"), "windows-1252");
        let russian = encoding_rs::WINDOWS_1251.encode("Привет, как дела? Это обычный текст на русском.\n").0;
        assert_eq!(name(&russian), "windows-1251");
        let japanese = encoding_rs::SHIFT_JIS.encode("これは日本語のテキストです。よろしくお願いします。\n").0;
        assert_eq!(name(&japanese), "Shift_JIS");
    }

    #[test]
    fn utf16_without_a_mark() {
        let le: Vec<u8> = "plain text\r\nline two\n".encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = "plain text\r\nline two\n".encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(name(&le), "UTF-16LE");
        assert_eq!(name(&be), "UTF-16BE");
        // A few characters whose low byte is zero (U+4E00 一, U+3000 the ideographic space, U+0100 Ā) among
        // Latin text: their units look like the other byte order's, and do not make the file binary.
        let cjk = "一 plain text\u{3000}here,\r\nĀ line two\n";
        let le: Vec<u8> = cjk.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = cjk.encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(name(&le), "UTF-16LE");
        assert_eq!(name(&be), "UTF-16BE");
        // NULs of another kind: a binary header, a run of zeros.
        assert_eq!(name(b"a\0b\0\0\0\0\0c\0"), "binary");
        assert_eq!(name(b"\x01\0\x02\0\x03\0\x04\0"), "binary");
    }

    /// The one-pass count of unit shapes answers as the three-pass definition it replaced (count each shape over
    /// the whole sample, then refuse a NUL unit) on samples of every mix of the four unit shapes, with an odd
    /// byte or not (the decision on the counts is unchanged, and `utf16_without_a_mark` covers it).
    #[test]
    fn the_one_pass_unit_count_answers_as_the_counting_definition() {
        fn counted(sample: &[u8]) -> Option<(usize, usize)> {
            let pairs = || sample.chunks_exact(2);
            let low_first = pairs().filter(|p| p[0] != 0 && p[1] == 0).count();
            let high_first = pairs().filter(|p| p[0] == 0 && p[1] != 0).count();
            (!pairs().any(|p| p == [0, 0])).then_some((low_first, high_first))
        }
        let shapes: [[u8; 2]; 5] = [*b"a\0", *b"\0a", *b"\0\0", *b"ab", [0x4e, 0x00]];
        // A small deterministic generator: every sample of up to 6 units, and longer mixed ones.
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut samples: Vec<Vec<u8>> = Vec::new();
        for len in 0..=6u32 {
            for code in 0..5usize.pow(len) {
                let mut sample = Vec::new();
                let mut rest = code;
                for _ in 0..len {
                    sample.extend_from_slice(&shapes[rest % 5]);
                    rest /= 5;
                }
                samples.push(sample);
            }
        }
        for _ in 0..2000 {
            let len = (next() % 300) as usize;
            let mut sample: Vec<u8> = (0..len).flat_map(|_| shapes[(next() % 5) as usize]).collect();
            if next() % 2 == 0 {
                sample.push(b'x');
            }
            samples.push(sample);
        }
        for sample in samples {
            assert_eq!(unit_shapes(&sample), counted(&sample), "{sample:?}");
        }
    }

    #[test]
    fn bytes_that_decode_to_controls_are_binary() {
        // No NUL, not UTF-8, and mostly C0 controls in any single-byte encoding.
        let noisy: Vec<u8> = (0..300u32).map(|i| [0x01, 0x02, 0x90, 0x03, b'a'][i as usize % 5]).collect();
        assert_eq!(name(&noisy), "binary");
    }

    #[test]
    fn exact_decoding_round_trips_or_refuses() {
        let Sniff::Text(w1252) = sniff(b"caf\xe9\n", true) else { panic!() };
        assert_eq!(w1252.decode_exact(b"caf\xe9\r\n").unwrap(), "café\r\n");
        // Every byte of windows-1252 decodes, even the five it leaves undefined (as C1 controls).
        assert_eq!(w1252.decode_exact(b"\x81\x8d").unwrap(), "\u{81}\u{8d}");
        assert_eq!(w1252.encode("\u{81}\u{8d}").unwrap(), b"\x81\x8d");
        let Sniff::Text(utf8) = sniff(b"ok", true) else { panic!() };
        assert_eq!(utf8.decode_exact(b"ok \xff"), Err(DecodeError::Malformed { encoding: "UTF-8", offset: 3 }));
        let sjis = TextEncoding { encoding: encoding_rs::SHIFT_JIS, bom: false };
        assert_eq!(sjis.decode_exact(b"ab\x81"), Err(DecodeError::Malformed { encoding: "Shift_JIS", offset: 2 }));
    }

    #[test]
    fn an_encoding_that_would_not_give_the_same_bytes_back_is_refused() {
        // GB18030's four-byte form of a character GBK lacks: GBK decodes it (its decoder is GB18030's) but
        // cannot encode it again, so an edit would change bytes outside itself.
        let bytes = encoding_rs::GB18030.encode("中文文本，这是一个测试。\u{C0}\n").0;
        let Sniff::Text(found) = sniff(&bytes, true) else { panic!() };
        assert_eq!(found.name(), "GBK");
        assert_eq!(found.decode_exact(&bytes), Err(DecodeError::NotReversible { encoding: "GBK" }));
        // ISO-2022-JP (stateful) is never guessed.
        let jis = encoding_rs::ISO_2022_JP.encode("日本語のテキスト\n").0;
        assert!(!matches!(sniff(&jis, true), Sniff::Text(found) if found.name() == "ISO-2022-JP"));
    }

    #[test]
    fn encoding_refuses_what_it_cannot_hold() {
        let w1252 = TextEncoding { encoding: encoding_rs::WINDOWS_1252, bom: false };
        assert_eq!(w1252.encode("a\n€ “q”\n").unwrap(), b"a\n\x80 \x93q\x94\n");
        let error = w1252.encode("ok\nstill ok\narrow → here").unwrap_err();
        assert_eq!(error, Unmappable { ch: '→', line: 3, encoding: "windows-1252" });
        assert_eq!(
            error.to_string(),
            "the file is encoded in windows-1252, which has no '→' (U+2192, line 3 of the new text)"
        );
        let utf16 = TextEncoding { encoding: UTF_16BE, bom: true };
        assert_eq!(utf16.encode("a😀").unwrap(), [0xFE, 0xFF, 0, 0x61, 0xD8, 0x3D, 0xDE, 0x00]);
        assert_eq!(utf16.decode_exact(&utf16.encode("a😀").unwrap()).unwrap(), "a😀");
    }

    #[test]
    fn streaming_decoding() {
        let w1252 = TextEncoding { encoding: encoding_rs::WINDOWS_1252, bom: false };
        let mut out = String::new();
        w1252.decoding_reader(&b"na\xefve\n"[..]).read_to_string(&mut out).unwrap();
        assert_eq!(out, "naïve\n");
        let le = TextEncoding { encoding: UTF_16LE, bom: true };
        let mut out = String::new();
        // A lone low surrogate, a high surrogate before a letter, and an odd final byte.
        le.decoding_reader(&[0x00, 0xDC, 0x3D, 0xD8, 0x41, 0x00, 0x42][..]).read_to_string(&mut out).unwrap();
        assert_eq!(out, "\u{FFFD}\u{FFFD}A\u{FFFD}");
        // One byte at a time, as a caller may read.
        let mut reader = le.decoding_reader(&[0x41, 0x00, 0x3D, 0xD8][..]);
        let (mut byte, mut out) = ([0u8; 1], Vec::new());
        while reader.read(&mut byte).unwrap() == 1 {
            out.push(byte[0]);
        }
        assert_eq!(String::from_utf8(out).unwrap(), "A\u{FFFD}");
    }

    #[test]
    fn the_streamed_text_is_the_exact_text() {
        // A mark, then U+FEFF as the text's first character (a file written twice with a mark): an edit keeps
        // the second one, so the reader shows it too.
        let le = TextEncoding { encoding: UTF_16LE, bom: true };
        let bytes = [0xFF, 0xFE, 0xFF, 0xFE, 0x41, 0x00];
        let mut out = String::new();
        le.decoding_reader(&bytes[..]).read_to_string(&mut out).unwrap();
        assert_eq!(out, le.decode_exact(&bytes).unwrap());
        assert_eq!(out, "\u{FEFF}A");
        let w1252 = TextEncoding { encoding: encoding_rs::WINDOWS_1252, bom: false };
        let mut out = String::new();
        w1252.decoding_reader(&b"\xef\xbb\xbfx"[..]).read_to_string(&mut out).unwrap();
        assert_eq!(out, w1252.decode_exact(b"\xef\xbb\xbfx").unwrap());
    }

    #[test]
    fn samples_are_bounded() {
        let big = vec![b'a'; SNIFF_LEN * 2];
        let (sample, complete) = read_sample(&big[..]).unwrap();
        assert_eq!((sample.len(), complete), (SNIFF_LEN, false));
        let (sample, complete) = read_sample(&big[..SNIFF_LEN]).unwrap();
        assert_eq!((sample.len(), complete), (SNIFF_LEN, true));
    }
}
