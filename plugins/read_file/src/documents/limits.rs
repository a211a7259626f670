//! The limits of document reading, each a key of `[plugins.config.read_file]`, and the two ways a document
//! fails: over a limit (the sentence names the limit and its key) or damaged.
//!
//! A document is small on disk and can be huge once unpacked: a zip entry or a PDF stream inflates a
//! thousandfold, a spreadsheet names a cell a million rows down, a notebook's pretty-print grows with its
//! depth. Every limit is checked before the work it bounds is done, so a hostile file costs what the limit
//! allows and no more.

use serde::{Deserialize, Serialize};

const MIB: u64 = 1024 * 1024;

/// The limits, with their defaults; the plugin's config overrides any of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DocumentLimits {
    /// The largest document file read: Cline's limit for reading a file into context (20 × 1000 × 1024
    /// bytes), which Cline itself does not apply to documents.
    pub max_document_bytes: u64,
    /// Everything unpacked from one document: the entries of a `.docx`/`.xlsx`, the inflated streams of a
    /// `.pdf`.
    pub max_document_unpacked_bytes: u64,
    /// One zip entry or one PDF stream, unpacked.
    pub max_document_part_bytes: u64,
    /// The entries of a `.docx`/`.xlsx` archive.
    pub max_document_entries: u64,
    /// The extracted text; longer text is cut with a note saying so.
    pub max_document_text_bytes: u64,
    /// The cells written per spreadsheet row, empty ones between values included.
    pub max_sheet_row_cells: u32,
    /// The characters written per spreadsheet row.
    pub max_sheet_row_chars: u64,
    /// The pages of a PDF.
    pub max_pdf_pages: u64,
    /// The objects (numbers, names, strings, operators) of one PDF content stream: pdf-extract holds a
    /// stream's parsed objects at once.
    pub max_pdf_stream_objects: u64,
    /// The objects parsed for a whole PDF, each drawing counted as often as it is drawn.
    pub max_pdf_objects: u64,
    /// How deep a PDF content stream nests saved graphics states (`q`): pdf-extract keeps a copy per level.
    pub max_pdf_graphics_depth: u64,
    /// How deep PDF drawings (XObjects) draw one another: pdf-extract recurses once per level.
    pub max_pdf_form_depth: u64,
}

impl Default for DocumentLimits {
    fn default() -> Self {
        Self {
            max_document_bytes: 20 * 1000 * 1024,
            max_document_unpacked_bytes: 256 * MIB,
            max_document_part_bytes: 128 * MIB,
            max_document_entries: 10_000,
            max_document_text_bytes: 64 * MIB,
            max_sheet_row_cells: 1_000,
            max_sheet_row_chars: 32_768,
            max_pdf_pages: 10_000,
            max_pdf_stream_objects: 4_000_000,
            max_pdf_objects: 20_000_000,
            max_pdf_graphics_depth: 1_024,
            max_pdf_form_depth: 32,
        }
    }
}

impl DocumentLimits {
    /// The limits of a plugin config (`{}` or empty for the defaults); an unknown key or a bad value is an
    /// error naming it.
    pub fn from_config(config: &str) -> Result<Self, String> {
        let config = if config.trim().is_empty() { "{}" } else { config };
        serde_json::from_str(config).map_err(|e| format!("invalid read_file config: {e}"))
    }
}

/// Why a document gave no text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Over a limit: the whole sentence, naming the limit and its key.
    Limit(String),
    /// The file is damaged or unsupported: the reader's reason, which the format prefixes.
    Damaged(String),
}

impl Failure {
    /// `{subject} {verb} more than {limit} ([plugins.config.read_file] {key})`.
    pub(crate) fn over(subject: &str, limit: Amount, key: &str) -> Self {
        Failure::Limit(format!("{subject} more than {limit} ([plugins.config.read_file] {key})"))
    }

    /// A damaged file, from any error.
    pub(crate) fn damaged(e: impl std::fmt::Display) -> Self {
        Failure::Damaged(e.to_string())
    }

    /// The message read_file reports (after `Error reading file: `), with `format`'s prefix for a damaged file.
    pub(crate) fn message(self, format: &str) -> String {
        match self {
            Failure::Limit(sentence) => sentence,
            Failure::Damaged(reason) => format!("Failed to extract text from {format}: {reason}"),
        }
    }
}

/// A limit's value as a sentence shows it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Amount {
    /// A size: `256 MiB`, `20 KiB`, or `1234 bytes` when it is not a whole number of either.
    Bytes(u64),
    /// A count: `10000 entries`.
    Count(u64, &'static str),
}

impl std::fmt::Display for Amount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Amount::Bytes(n) if n >= MIB && n % MIB == 0 => write!(f, "{} MiB", n / MIB),
            Amount::Bytes(n) if n >= 1024 && n % 1024 == 0 => write!(f, "{} KiB", n / 1024),
            Amount::Bytes(n) => write!(f, "{n} bytes"),
            Amount::Count(n, what) => write!(f, "{n} {what}"),
        }
    }
}

/// Text with a size cap: what goes past the cap is dropped, and [`CappedText::finish`] ends the text with a
/// line saying where and why it was cut. Also an `io::Write`, which fails once the cap is reached, so a
/// serializer or a PDF reader writing into it stops there instead of building more.
#[derive(Debug)]
pub(crate) struct CappedText {
    bytes: Vec<u8>,
    cap: usize,
    cut: bool,
}

impl CappedText {
    pub(crate) fn new(cap: u64) -> Self {
        Self { bytes: Vec::new(), cap: usize::try_from(cap).unwrap_or(usize::MAX), cut: false }
    }

    /// Appends `text`, or as much as fits; `false` once the text is cut.
    pub(crate) fn push_str(&mut self, text: &str) -> bool {
        self.push_bytes(text.as_bytes())
    }

    fn push_bytes(&mut self, bytes: &[u8]) -> bool {
        if self.cut {
            return false;
        }
        let room = self.cap - self.bytes.len();
        if bytes.len() > room {
            self.bytes.extend_from_slice(&bytes[..room]);
            self.cut = true;
            return false;
        }
        self.bytes.extend_from_slice(bytes);
        true
    }

    pub(crate) fn is_cut(&self) -> bool {
        self.cut
    }

    /// Removes whitespace at the end (the spreadsheet's text is trimmed, as Cline's is).
    pub(crate) fn trim_end(&mut self) {
        while self.bytes.last().is_some_and(u8::is_ascii_whitespace) {
            self.bytes.pop();
        }
    }

    /// The text, ending with the note when it was cut. A cut inside a character drops that character.
    pub(crate) fn finish(self) -> String {
        let cut = self.cut;
        let cap = self.cap as u64;
        let mut text = match String::from_utf8(self.bytes) {
            Ok(text) => text,
            Err(e) => {
                let valid = e.utf8_error().valid_up_to();
                let mut bytes = e.into_bytes();
                // Only the end can be a split character when the cap fell inside it; anything else is kept
                // lossily, as the readers would have decoded it.
                if cut && std::str::from_utf8(&bytes[valid..]).is_err() && bytes.len() - valid < 4 {
                    bytes.truncate(valid);
                }
                String::from_utf8_lossy(&bytes).into_owned()
            }
        };
        if cut {
            text.push_str(&format!(
                "\n[... the text is cut here: it is longer than {} ([plugins.config.read_file] max_document_text_bytes) ...]",
                Amount::Bytes(cap)
            ));
        }
        text
    }
}

impl std::io::Write for CappedText {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.push_bytes(buf) {
            Ok(buf.len())
        } else {
            Err(std::io::Error::other("the text reached its cap"))
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn amounts_read_as_people_write_them() {
        assert_eq!(Amount::Bytes(256 * MIB).to_string(), "256 MiB");
        assert_eq!(Amount::Bytes(20 * 1024).to_string(), "20 KiB");
        assert_eq!(Amount::Bytes(20 * 1000 * 1024).to_string(), "20000 KiB");
        assert_eq!(Amount::Bytes(1000).to_string(), "1000 bytes");
        assert_eq!(Amount::Count(7, "pages").to_string(), "7 pages");
    }

    #[test]
    fn capped_text_stops_at_its_cap_and_says_so() {
        let mut text = CappedText::new(5);
        assert!(text.push_str("abc"));
        assert!(!text.push_str("dé"));
        assert!(!text.push_str("more"));
        assert_eq!(
            text.finish(),
            "abcd\n[... the text is cut here: it is longer than 5 bytes ([plugins.config.read_file] max_document_text_bytes) ...]"
        );
    }

    #[test]
    fn config_keys_are_checked() {
        assert_eq!(DocumentLimits::from_config(""), Ok(DocumentLimits::default()));
        assert_eq!(DocumentLimits::from_config(r#"{"max_pdf_pages": 3}"#).map(|l| l.max_pdf_pages), Ok(3));
        assert!(DocumentLimits::from_config(r#"{"max_pdf_page": 3}"#).is_err_and(|e| e.contains("max_pdf_page")));
    }
}
