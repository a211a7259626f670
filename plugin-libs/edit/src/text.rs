//! Text as the edit tools read and write it: decoded from and encoded back into the file's own encoding, the
//! line break style a file uses, and JavaScript's whitespace, with which Cline trims and compares.

use toolshed_encoding::{sniff_bytes, DecodeError, Sniff, TextEncoding};

/// JavaScript's whitespace for `trim`/`trimEnd`: Cline compares and trims text with it.
pub fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

/// Cline's `finalContent` of a saved file: the text with its line breaks in the style it uses (CRLF if any),
/// trailing whitespace trimmed as JavaScript trims, and exactly one line break at the end.
pub fn final_content(saved: &str) -> String {
    let eol = if saved.contains("\r\n") { "\r\n" } else { "\n" };
    let normalised = saved.replace("\r\n", "\n").replace('\n', eol);
    format!("{}{eol}", normalised.trim_end_matches(is_js_space))
}

/// A text file's content in its own encoding, which is kept aside to write the edited text back in: UTF-8,
/// UTF-16 or a legacy encoding (toolshed-encoding decides, as read_file and search_files do), with or without
/// a byte-order mark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextFile {
    /// The file's encoding and whether it has a mark.
    pub encoding: TextEncoding,
    /// The decoded text (without the mark), line endings untouched.
    pub text: String,
}

impl TextFile {
    /// A new file's text: UTF-8 without a mark.
    pub fn utf8(text: String) -> TextFile {
        TextFile { encoding: TextEncoding::UTF8, text }
    }

    /// Decodes a file's bytes in the encoding its start shows. Refused: a file that is not text, and one whose
    /// bytes would not come back unchanged when its text is written back (invalid sequences, which would be
    /// replaced by U+FFFD; an encoding with two spellings of a character), since an edit must not change the
    /// bytes outside it.
    pub fn decode(bytes: &[u8]) -> Result<TextFile, String> {
        let encoding = match sniff_bytes(bytes) {
            Sniff::Text(encoding) => encoding,
            Sniff::Binary => return Err(format!("{} (binary files are not edited)", DecodeError::Binary)),
        };
        let text = encoding.decode_exact(bytes).map_err(|e| e.to_string())?;
        Ok(TextFile { encoding, text })
    }

    /// The bytes of `text` in this file's encoding, with its byte-order mark, or, when the encoding has no
    /// bytes for one of its characters, why the file cannot be written.
    ///
    /// Outside UTF-8 the encoding is only ever guessed from the bytes, so the new bytes are read back as every
    /// tool will read them: an edit that leaves too little text for the guess (a Windows-1252 file cut down to
    /// `naïve`, which reads as ISO-8859-4 `naīve`), or whose bytes happen to be UTF-8, would show the model
    /// other text than it wrote, and its next edit would be matched against that; it is refused instead.
    pub fn encode(&self, text: &str) -> Result<Vec<u8>, String> {
        let bytes = self.encoding.encode(text).map_err(|unmappable| {
            format!(
                "{unmappable}. The file was left unchanged: write that character another way (for example as an escape sequence the file's language understands), or leave it out"
            )
        })?;
        if self.encoding.is_utf8() {
            return Ok(bytes);
        }
        match TextFile::decode(&bytes) {
            Ok(again) if again.text == text => Ok(bytes),
            again => {
                let shown = match &again {
                    Ok(again) => {
                        format!("would be read as {}: {:?}", again.encoding.name(), first_difference(text, &again.text))
                    }
                    Err(reason) => format!("would not be read as text ({reason})"),
                };
                Err(format!(
                    "the file is encoded in {}, which is recognised from its bytes alone, and its new bytes {shown}. The file was left unchanged: keep more of the file's own text, or write its non-ASCII characters another way (for example as escape sequences the file's language understands)",
                    self.encoding.name()
                ))
            }
        }
    }
}

/// The line of `read` where it first differs from `meant`, for a message (lines are short; a long one is cut).
fn first_difference<'a>(meant: &str, read: &'a str) -> &'a str {
    let line =
        read.split_inclusive('\n').zip(meant.split_inclusive('\n')).find(|(r, m)| r != m).map_or(read, |(r, _)| r);
    let line = line.trim_end_matches(['\r', '\n']);
    line.char_indices().nth(80).map_or(line, |(at, _)| &line[..at])
}

/// How a text ends its lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEndings {
    /// Every line break is `\n`.
    Lf,
    /// Every line break is `\r\n`.
    Crlf,
    /// No line breaks, or both kinds.
    Mixed,
}

impl LineEndings {
    /// The style of `text`.
    pub fn of(text: &str) -> LineEndings {
        let breaks = text.matches('\n').count();
        let crlf = text.matches("\r\n").count();
        match (breaks, crlf) {
            (0, _) => LineEndings::Mixed,
            (b, c) if b == c => LineEndings::Crlf,
            (_, 0) => LineEndings::Lf,
            _ => LineEndings::Mixed,
        }
    }

    /// `text` with its line breaks in this style; a mixed style leaves it as it is.
    pub fn apply(self, text: &str) -> String {
        match self {
            LineEndings::Lf => text.replace("\r\n", "\n"),
            LineEndings::Crlf => text.replace("\r\n", "\n").replace('\n', "\r\n"),
            LineEndings::Mixed => text.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn text_files_keep_their_encoding() {
        for bytes in [
            b"\xEF\xBB\xBFa\r\nb".to_vec(),
            [0xFF, 0xFE].into_iter().chain("a\r\nb".encode_utf16().flat_map(u16::to_le_bytes)).collect(),
            [0xFE, 0xFF].into_iter().chain("a\r\nb".encode_utf16().flat_map(u16::to_be_bytes)).collect(),
            "a\r\nb".encode_utf16().flat_map(u16::to_le_bytes).collect(),
            b"a\r\nb".to_vec(),
        ] {
            let file = TextFile::decode(&bytes).unwrap();
            assert_eq!(file.text, "a\r\nb");
            assert_eq!(file.encode(&file.text).unwrap(), bytes);
        }
        let latin = TextFile::decode(b"d\xe9j\xe0 vu\n").unwrap();
        assert_eq!((latin.encoding.name(), latin.text.as_str()), ("windows-1252", "déjà vu\n"));
        assert_eq!(latin.encode("voil\u{e0} \u{20ac}").unwrap(), b"voil\xe0 \x80");
        assert_eq!(
            latin.encode("ok\n→").unwrap_err(),
            "the file is encoded in windows-1252, which has no '→' (U+2192, line 2 of the new text). The file was left unchanged: write that character another way (for example as an escape sequence the file's language understands), or leave it out"
        );
        assert_eq!(
            TextFile::decode(b"\xff\x00binary").unwrap_err(),
            "it is not a text file (binary files are not edited)"
        );
        // A mark, then an odd byte: the text would lose it.
        assert!(TextFile::decode(&[0xFF, 0xFE, 0x41]).is_err());
        // Valid UTF-8 at the start, an invalid byte past the sample: refused, not replaced.
        let mut late = vec![b'a'; toolshed_encoding::SNIFF_LEN + 10];
        late.push(0xE9);
        assert_eq!(
            TextFile::decode(&late).unwrap_err(),
            format!("it does not decode cleanly as UTF-8 (invalid bytes at offset {}), and writing it back would destroy the bytes that do not decode", toolshed_encoding::SNIFF_LEN + 10)
        );
    }

    #[test]
    fn an_edit_whose_bytes_would_read_back_as_other_text_is_refused() {
        let latin = TextFile::decode(b"Le caf\xe9 est tr\xe8s cher \xe0 Paris, m\xeame en \xe9t\xe9.\n").unwrap();
        assert_eq!(latin.encoding.name(), "windows-1252");
        // Too little text left for the detector: these bytes read back as ISO-8859-4 ("naīve").
        let error = latin.encode("na\u{ef}ve\n").unwrap_err();
        assert!(error.contains("its new bytes would be read as ISO-8859-4: \"naīve\""), "{error}");
        // windows-1252 bytes that are UTF-8: they would read back as "é".
        assert!(latin.encode("\u{c3}\u{a9}\n").is_err());
        // All ASCII reads back as UTF-8, the same text; an edit that keeps enough text keeps its encoding.
        assert_eq!(latin.encode("plain\n").unwrap(), b"plain\n");
        let kept = "Le caf\u{e9} est tr\u{e8}s cher \u{e0} Paris, m\u{ea}me en \u{e9}t\u{e9}, na\u{ef}ve.\n";
        assert_eq!(TextFile::decode(&latin.encode(kept).unwrap()).unwrap().text, kept);
    }

    #[test]
    fn line_ending_styles() {
        assert_eq!(LineEndings::of("a\r\nb\r\n"), LineEndings::Crlf);
        assert_eq!(LineEndings::of("a\nb"), LineEndings::Lf);
        assert_eq!(LineEndings::of("a\r\nb\n"), LineEndings::Mixed);
        assert_eq!(LineEndings::of("a"), LineEndings::Mixed);
        assert_eq!(LineEndings::Crlf.apply("x\ny\r\n"), "x\r\ny\r\n");
        assert_eq!(LineEndings::Lf.apply("x\r\ny\n"), "x\ny\n");
    }
}
