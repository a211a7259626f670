//! The document formats of Cline's `extractFileContent`: text out of `.pdf`, `.docx`, `.ipynb` and `.xlsx`
//! files. The text then goes through the same line window, footers and 400 KB cap as any text file.
//!
//! Cline uses pdf-parse, mammoth, its own notebook sanitiser and ExcelJS; we use pdf-extract, zip + quick-xml,
//! serde_json and calamine, keeping Cline's output shapes where Cline defines them: the notebook's
//! one-space-indented JSON with code cells' outputs emptied, and the spreadsheet's `--- Sheet: {name} ---`
//! blocks of tab-joined rows. Where Cline turns a formula's error result into `[object Object]`, we write
//! `[Error: …]`.
//!
//! Documents come from cloned repositories, so every reader is held to [`DocumentLimits`] (see `limits`),
//! checked before the work it bounds; and the whole extraction runs as a child-process job of the host
//! (`document_text`), so what no limit can reach — recursion and loops inside the parsers — ends that child,
//! not the host.

mod archive;
mod limits;
mod notebook;
mod pdf;
mod spreadsheet;
mod word;

pub use limits::DocumentLimits;

use serde::{Deserialize, Serialize};
use toolshed_plugin_api::sdk::ReadError;
use toolshed_plugin_api::HostClient;

/// The name of the job that extracts a document's text in a child process.
pub const JOB: &str = "document_text";

/// A document format, chosen by the lower-cased extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Document {
    /// `.pdf`
    Pdf,
    /// `.docx`
    Docx,
    /// `.ipynb`
    #[serde(rename = "ipynb")]
    Notebook,
    /// `.xlsx`
    #[serde(rename = "xlsx")]
    Spreadsheet,
}

impl Document {
    /// The format for an extension such as `.pdf` (dot included, lower case).
    pub fn for_extension(extension: &str) -> Option<Self> {
        match extension {
            ".pdf" => Some(Self::Pdf),
            ".docx" => Some(Self::Docx),
            ".ipynb" => Some(Self::Notebook),
            ".xlsx" => Some(Self::Spreadsheet),
            _ => None,
        }
    }

    /// The text of a document's bytes, or the error read_file reports (after `Error reading file: `).
    ///
    /// The readers panic on some malformed files instead of failing (pdf-extract's `expect`s, calamine's
    /// arithmetic on a reversed dimension in a build with overflow checks); the panic is contained here so the
    /// model gets a sentence rather than a crashed call.
    pub fn text(self, bytes: &[u8], limits: &DocumentLimits) -> Result<String, String> {
        type Reader = fn(&[u8], &DocumentLimits) -> Result<String, limits::Failure>;
        let (format, read): (&str, Reader) = match self {
            Self::Pdf => ("PDF", pdf::pdf_text),
            Self::Docx => ("Word document", word::docx_text),
            Self::Notebook => ("notebook", |bytes, limits| Ok(notebook::notebook_text(bytes, limits))),
            Self::Spreadsheet => ("Excel", spreadsheet::spreadsheet_text),
        };
        match std::panic::catch_unwind(|| read(bytes, limits)) {
            Ok(outcome) => outcome.map_err(|e| e.message(format)),
            Err(_) => Err(format!(
                "Failed to extract text from {format}: the file is damaged or uses a feature the reader does not support"
            )),
        }
    }

    /// Reads the document at `absolute` through the host's confirmed read and extracts its text.
    pub fn read(
        self,
        host: &HostClient<'_>,
        absolute: &str,
        approved: bool,
        limits: &DocumentLimits,
    ) -> Result<String, String> {
        let bytes = host.read_confirmed(absolute, approved, limits.max_document_bytes).map_err(|e| match e {
            ReadError::TooLarge { .. } => format!(
                "File is too large to read into context. (Documents are read up to {}: [plugins.config.read_file] max_document_bytes.)",
                limits::Amount::Bytes(limits.max_document_bytes)
            ),
            other => other.describe(absolute),
        })?;
        self.text(&bytes, limits)
    }
}

/// The input of the `document_text` job: which file, read how, and the window to render.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentJob {
    /// The absolute path the call's checks allowed.
    pub path: String,
    /// The call's approval, for the confirmed read.
    pub approved: bool,
    /// The format.
    pub format: Document,
    /// The window's first line, as the model gave it.
    pub start_line: Option<i64>,
    /// The window's last line, as the model gave it.
    pub end_line: Option<i64>,
}

/// The output of the `document_text` job: the rendered window, so only a window's worth of text crosses the
/// pipe back, however long the document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentWindow {
    /// The window as read_file returns it (numbered lines and footers).
    pub text: String,
}
