//! Text as the edit tools read and write it: UTF-8 or UTF-16 with its byte-order mark kept aside, the line
//! break style a file uses, and JavaScript's whitespace, with which Cline trims and compares.

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

/// A byte-order mark a text file starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bom {
    /// `EF BB BF`.
    Utf8,
    /// `FF FE`.
    Utf16Le,
    /// `FE FF`.
    Utf16Be,
}

/// A text file's content without its byte-order mark, which is kept aside to be written back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextFile {
    /// The mark the file started with.
    pub bom: Option<Bom>,
    /// The decoded text, line endings untouched.
    pub text: String,
}

impl TextFile {
    /// Decodes a file's bytes: UTF-8, or UTF-16 when a byte-order mark says so. Anything else is refused
    /// rather than rewritten in another encoding.
    pub fn decode(bytes: &[u8]) -> Result<TextFile, String> {
        let (bom, body) = match bytes {
            [0xEF, 0xBB, 0xBF, rest @ ..] => (Some(Bom::Utf8), rest),
            [0xFF, 0xFE, rest @ ..] => (Some(Bom::Utf16Le), rest),
            [0xFE, 0xFF, rest @ ..] => (Some(Bom::Utf16Be), rest),
            _ => (None, bytes),
        };
        let text = match bom {
            Some(Bom::Utf16Le) | Some(Bom::Utf16Be) => {
                if body.len() % 2 != 0 {
                    return Err("it is not valid UTF-16 text".to_owned());
                }
                let units = body.chunks_exact(2).map(|pair| match bom {
                    Some(Bom::Utf16Be) => u16::from_be_bytes([pair[0], pair[1]]),
                    _ => u16::from_le_bytes([pair[0], pair[1]]),
                });
                char::decode_utf16(units)
                    .collect::<Result<String, _>>()
                    .map_err(|_| "it is not valid UTF-16 text".to_owned())?
            }
            Some(Bom::Utf8) | None => String::from_utf8(body.to_vec())
                .map_err(|_| "it is not UTF-8 text (binary files and other encodings are not edited)".to_owned())?,
        };
        Ok(TextFile { bom, text })
    }

    /// The bytes of `text` in this file's encoding, with its byte-order mark.
    pub fn encode(&self, text: &str) -> Vec<u8> {
        match self.bom {
            None => text.as_bytes().to_vec(),
            Some(Bom::Utf8) => [&[0xEF, 0xBB, 0xBF][..], text.as_bytes()].concat(),
            Some(Bom::Utf16Le) => {
                [0xFF, 0xFE].into_iter().chain(text.encode_utf16().flat_map(u16::to_le_bytes)).collect()
            }
            Some(Bom::Utf16Be) => {
                [0xFE, 0xFF].into_iter().chain(text.encode_utf16().flat_map(u16::to_be_bytes)).collect()
            }
        }
    }
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
    fn text_files_keep_their_marks() {
        for bytes in [
            b"\xEF\xBB\xBFa\r\nb".to_vec(),
            [0xFF, 0xFE].into_iter().chain("a\r\nb".encode_utf16().flat_map(u16::to_le_bytes)).collect(),
            [0xFE, 0xFF].into_iter().chain("a\r\nb".encode_utf16().flat_map(u16::to_be_bytes)).collect(),
            b"a\r\nb".to_vec(),
        ] {
            let file = TextFile::decode(&bytes).unwrap();
            assert_eq!(file.text, "a\r\nb");
            assert_eq!(file.encode(&file.text), bytes);
        }
        assert!(TextFile::decode(b"\xff\x00binary").is_err());
        assert!(TextFile::decode(&[0xFF, 0xFE, 0x41]).is_err());
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
