//! The document formats of Cline's `extractFileContent`: text out of `.pdf`, `.docx`, `.ipynb` and `.xlsx`
//! files. The text then goes through the same line window, footers and 400 KB cap as any text file.
//!
//! Cline uses pdf-parse, mammoth, its own notebook sanitiser and ExcelJS; we use pdf-extract, zip + quick-xml,
//! serde_json and calamine, keeping Cline's output shapes where Cline defines them: the notebook's
//! one-space-indented JSON with code cells' outputs emptied, and the spreadsheet's `--- Sheet: {name} ---`
//! blocks of tab-joined rows. Where Cline turns a formula's error result into `[object Object]`, we write
//! `[Error: …]`.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

/// Cline stops a sheet at this row number.
const MAX_ROWS: u32 = 50_000;
/// The largest document read: Cline's limit for reading a file into context (20 × 1000 × 1024 bytes), which
/// Cline itself does not apply to documents; a document is read whole before its text is extracted, so a
/// cloned repository's sparse 1 GB `.pdf` would otherwise take 1 GB of memory.
pub const MAX_DOCUMENT_BYTES: u64 = 20 * 1000 * 1024;

/// A document format, chosen by the lower-cased extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Document {
    /// `.pdf`
    Pdf,
    /// `.docx`
    Docx,
    /// `.ipynb`
    Notebook,
    /// `.xlsx`
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

    /// The document's text, or the error read_file reports (it adds `Error reading file: `).
    pub fn extract(self, file: std::fs::File, path: &Path) -> Result<String, String> {
        let bytes = toolshed_plugin_api::sdk::read_capped(file, MAX_DOCUMENT_BYTES).map_err(|e| match e {
            toolshed_plugin_api::sdk::ReadError::TooLarge { .. } => {
                "File is too large to read into context.".to_owned()
            }
            other => other.describe(&path.display().to_string()),
        })?;
        match self {
            Self::Pdf => pdf_text(&bytes),
            Self::Docx => docx_text(&bytes).map_err(|e| format!("Failed to extract text from Word document: {e}")),
            Self::Notebook => Ok(notebook_text(&bytes)),
            Self::Spreadsheet => spreadsheet_text(bytes).map_err(|e| format!("Failed to extract text from Excel: {e}")),
        }
    }
}

/// The text of a PDF's pages. pdf-extract panics on some malformed files instead of failing; the panic is
/// contained here so the model gets a sentence rather than a crashed call.
fn pdf_text(bytes: &[u8]) -> Result<String, String> {
    match std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem(bytes)) {
        Ok(Ok(text)) => Ok(text),
        Ok(Err(e)) => Err(format!("Failed to extract text from PDF: {e}")),
        Err(_) => {
            Err("Failed to extract text from PDF: the file is damaged or uses a feature the reader does not support"
                .to_owned())
        }
    }
}

/// mammoth's raw text of a Word document: each paragraph's text followed by a blank line, `\t` for tabs and
/// `\n` for line breaks; deleted revisions (`w:delText`) and field codes (`w:instrText`) are not text.
fn docx_text(bytes: &[u8]) -> Result<String, String> {
    use quick_xml::events::Event;

    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| e.to_string())?;
    let mut xml = String::new();
    archive
        .by_name("word/document.xml")
        .map_err(|e| format!("word/document.xml: {e}"))?
        // A small archive can inflate to gigabytes (a zip bomb): the XML is held to the document cap too.
        .take(MAX_DOCUMENT_BYTES * 4)
        .read_to_string(&mut xml)
        .map_err(|e| format!("word/document.xml: {e}"))?;
    if xml.len() as u64 >= MAX_DOCUMENT_BYTES * 4 {
        return Err("word/document.xml is too large to read into context.".to_owned());
    }
    let mut reader = quick_xml::Reader::from_str(&xml);
    let mut text = String::new();
    let mut in_text = false;
    loop {
        match reader.read_event().map_err(|e| format!("word/document.xml: {e}"))? {
            Event::Start(e) if e.name().as_ref() == "w:t" => in_text = true,
            Event::End(e) if e.name().as_ref() == "w:t" => in_text = false,
            Event::End(e) if e.name().as_ref() == "w:p" => text.push_str("\n\n"),
            Event::Empty(e) => match e.name().as_ref() {
                "w:tab" => text.push('\t'),
                "w:br" | "w:cr" => text.push('\n'),
                "w:p" => text.push_str("\n\n"),
                _ => {}
            },
            Event::Text(t) if in_text => text.push_str(&t.xml10_content()),
            Event::GeneralRef(r) if in_text => {
                // `&amp;` and friends arrive as references of their own.
                match r.resolve_char_ref().map_err(|e| format!("word/document.xml: {e}"))? {
                    Some(c) => text.push(c),
                    None => {
                        let name = r.xml10_content();
                        let entity = quick_xml::escape::resolve_xml_entity(&name)
                            .ok_or_else(|| format!("word/document.xml: unknown entity &{name};"))?;
                        text.push_str(entity);
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(text)
}

/// Cline's `sanitizeNotebookForLLM(text, true)`: every code cell's `outputs` becomes `[]`, and the notebook is
/// written back as `JSON.stringify(nb, null, 1)`. Text that is not a notebook (not JSON, or no `cells` array) is
/// returned as it is.
fn notebook_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    // iconv-lite drops a UTF-8 byte order mark when it decodes.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let Ok(Json::Object(mut notebook)) = serde_json::from_str::<Json>(text) else {
        return text.to_owned();
    };
    let Some((_, Json::Array(cells))) = notebook.iter_mut().find(|(key, _)| key == "cells") else {
        return text.to_owned();
    };
    for cell in cells.iter_mut() {
        let Json::Object(fields) = cell else { continue };
        let is_code = fields.iter().any(|(key, value)| key == "cell_type" && *value == Json::String("code".into()));
        if !is_code {
            continue;
        }
        // `{...cell, outputs: []}`: the key keeps its place when it exists, and is added last otherwise.
        match fields.iter_mut().find(|(key, _)| key == "outputs") {
            Some((_, outputs)) => *outputs = Json::Array(Vec::new()),
            None => fields.push(("outputs".to_owned(), Json::Array(Vec::new()))),
        }
    }
    let mut out = Vec::new();
    let mut serializer =
        serde_json::Serializer::with_formatter(&mut out, serde_json::ser::PrettyFormatter::with_indent(b" "));
    match Json::Object(notebook).serialize(&mut serializer) {
        Ok(()) => String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        Err(_) => text.to_owned(),
    }
}

/// A JSON value that keeps its objects' key order, as JavaScript objects do (serde_json's own map sorts keys
/// unless a workspace-wide feature is switched on).
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct JsonVisitor;
        impl<'de> Visitor<'de> for JsonVisitor {
            type Value = Json;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
                Ok(Json::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
                // JavaScript has one number type: `1.0` prints as `1`.
                if v.fract() == 0.0 && v.abs() < 1e15 {
                    return Ok(Json::Number((v as i64).into()));
                }
                Ok(serde_json::Number::from_f64(v).map_or(Json::Null, Json::Number))
            }
            fn visit_str<E>(self, v: &str) -> Result<Json, E> {
                Ok(Json::String(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Json, E> {
                Ok(Json::String(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Json::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut fields: Vec<(String, Json)> = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Json>()? {
                    // `JSON.parse` keeps the last value of a repeated key, in the first one's place.
                    match fields.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, old)) => *old = value,
                        None => fields.push((key, value)),
                    }
                }
                Ok(Json::Object(fields))
            }
        }
        deserializer.deserialize_any(JsonVisitor)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Number(n) => n.serialize(serializer),
            Json::String(s) => serializer.serialize_str(s),
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(fields) => {
                let mut map = serializer.serialize_map(Some(fields.len()))?;
                for (key, value) in fields {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

/// Cline's `extractTextFromExcel`: for each visible sheet, `--- Sheet: {name} ---`, then each row with content
/// as its cells (from column A to the row's last cell) joined by tabs, a blank line between sheets, the whole
/// trimmed. Formulas show their cached result, or `[Formula: …]` when the file has none.
fn spreadsheet_text(bytes: Vec<u8>) -> Result<String, String> {
    use calamine::{Reader as _, SheetVisible, Xlsx};

    let mut workbook: Xlsx<_> = Xlsx::new(std::io::Cursor::new(bytes)).map_err(|e| e.to_string())?;
    let sheets: Vec<String> = workbook
        .sheets_metadata()
        .iter()
        .filter(|sheet| sheet.visible == SheetVisible::Visible)
        .map(|sheet| sheet.name.clone())
        .collect();
    let mut text = String::new();
    for name in sheets {
        let values = workbook.worksheet_range(&name).map_err(|e| e.to_string())?;
        let formulas = workbook.worksheet_formula(&name).map_err(|e| e.to_string())?;
        let _ = writeln!(text, "--- Sheet: {name} ---");
        let (first_row, first_col) = values.start().unwrap_or((0, 0));
        for (offset, row) in values.rows().enumerate() {
            let row_number = first_row + offset as u32 + 1;
            let Some(last) = row.iter().rposition(|cell| *cell != calamine::Data::Empty).map(|i| i as u32 + first_col)
            else {
                // A row without a value still counts when a formula in it has no cached result.
                if !(first_col..first_col + row.len() as u32).any(|col| has_formula(&formulas, row_number - 1, col)) {
                    continue;
                }
                emit_row(&mut text, &values, &formulas, row_number - 1, first_col + row.len() as u32 - 1);
                continue;
            };
            if row_number > MAX_ROWS {
                let _ = writeln!(text, "[... truncated at row {row_number} ...]");
                break;
            }
            let last = (first_col..first_col + row.len() as u32)
                .rev()
                .find(|&col| has_formula(&formulas, row_number - 1, col))
                .map_or(last, |col| col.max(last));
            emit_row(&mut text, &values, &formulas, row_number - 1, last);
        }
        text.push('\n');
    }
    Ok(text.trim().to_owned())
}

fn has_formula(formulas: &calamine::Range<String>, row: u32, col: u32) -> bool {
    formulas.get_value((row, col)).is_some_and(|f| !f.is_empty())
}

/// Writes one row, columns A to `last`, when one of its cells has visible text.
fn emit_row(
    text: &mut String,
    values: &calamine::Range<calamine::Data>,
    formulas: &calamine::Range<String>,
    row: u32,
    last: u32,
) {
    let cells: Vec<String> = (0..=last)
        .map(|col| {
            let value = values.get_value((row, col)).unwrap_or(&calamine::Data::Empty);
            match (value, formulas.get_value((row, col)).filter(|f| !f.is_empty())) {
                (calamine::Data::Empty, Some(formula)) => format!("[Formula: {formula}]"),
                (value, _) => cell_text(value),
            }
        })
        .collect();
    if cells.iter().any(|cell| !cell.trim().is_empty()) {
        text.push_str(&cells.join("\t"));
        text.push('\n');
    }
}

/// Cline's `formatCellValue` for one value.
fn cell_text(value: &calamine::Data) -> String {
    use calamine::Data;
    match value {
        Data::Empty => String::new(),
        Data::String(s) | Data::DateTimeIso(s) | Data::DurationIso(s) => s.clone(),
        Data::Int(i) => i.to_string(),
        Data::Float(f) => js_number(*f),
        Data::Bool(b) => b.to_string(),
        Data::Error(e) => format!("[Error: {e}]"),
        // `date.toISOString().split("T")[0]`.
        Data::DateTime(date) => {
            let (year, month, day, ..) = date.to_ymd_hms_milli();
            format!("{year:04}-{month:02}-{day:02}")
        }
    }
}

/// A number as JavaScript's `toString` writes it for the values spreadsheets hold: integers without a
/// fraction, others in their shortest round-trip form.
fn js_number(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{f:.0}")
    } else {
        f.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn notebooks_lose_code_outputs_and_keep_key_order() {
        let nb = br#"{"cells":[{"cell_type":"code","execution_count":1.0,"outputs":[{"text":"hi"}],"source":["print('hi')"]},{"cell_type":"markdown","source":["T"]},{"source":[],"cell_type":"code"}],"nbformat":4}"#;
        assert_eq!(
            notebook_text(nb),
            "{\n \"cells\": [\n  {\n   \"cell_type\": \"code\",\n   \"execution_count\": 1,\n   \"outputs\": [],\n   \"source\": [\n    \"print('hi')\"\n   ]\n  },\n  {\n   \"cell_type\": \"markdown\",\n   \"source\": [\n    \"T\"\n   ]\n  },\n  {\n   \"source\": [],\n   \"cell_type\": \"code\",\n   \"outputs\": []\n  }\n ],\n \"nbformat\": 4\n}"
        );
        assert_eq!(notebook_text(b"not json {"), "not json {");
        assert_eq!(notebook_text(br#"{"a": 1}"#), r#"{"a": 1}"#);
    }

    #[test]
    fn formula_errors_read_as_errors() -> Result<(), rust_xlsxwriter::XlsxError> {
        use rust_xlsxwriter::{Formula, Workbook};
        let mut workbook = Workbook::new();
        let sheet = workbook.add_worksheet();
        sheet.write_number(0, 0, 1)?;
        sheet.write_formula(0, 1, Formula::new("=A1/0").set_result("#DIV/0!"))?;
        let bytes = workbook.save_to_buffer()?;
        assert_eq!(spreadsheet_text(bytes).as_deref(), Ok("--- Sheet: Sheet1 ---\n1\t[Error: #DIV/0!]"));
        Ok(())
    }

    #[test]
    fn numbers_read_as_javascript_writes_them() {
        assert_eq!(js_number(3.0), "3");
        assert_eq!(js_number(2.5), "2.5");
        assert_eq!(js_number(-0.125), "-0.125");
    }
}
