//! read_file's document readers (issue 22): the bytes of a `.docx`, `.xlsx`, `.pdf` or `.ipynb` in, under
//! small limits. The invariants: no panic, no hang, no crash (a stack overflow or an allocation failure ends
//! the fuzzer, which keeps the input), and the text is no longer than the text cap and its note.
//!
//! The readers' own panics on malformed files (pdf-extract's `expect`s, calamine's overflow checks) are caught
//! by read_file and reported as damaged files, by design; libFuzzer's panic hook would abort on them all the
//! same, so a hook installed here lets panics raised inside those crates pass, and any other panic — one in
//! read_file's own code — still ends the run.
//!
//! Zip and PDF inputs rarely survive random mutation, so the docx and xlsx targets read their input two ways:
//! a first byte of `0` makes the rest the file as it is; any other makes the rest the XML of the one part that
//! matters (`word/document.xml`, the first worksheet), zipped into an otherwise valid document here.

use read_file::{Document, DocumentLimits};
use std::io::Write;

/// Small enough that every limit is reachable by the fuzzer, large enough for the seeds to read.
fn limits() -> DocumentLimits {
    DocumentLimits {
        max_document_unpacked_bytes: 16 * 1024 * 1024,
        max_document_part_bytes: 8 * 1024 * 1024,
        max_document_text_bytes: 256 * 1024,
        max_pdf_stream_objects: 200_000,
        max_pdf_objects: 1_000_000,
        ..DocumentLimits::default()
    }
}

/// The longest note the text may end with.
const NOTE_ROOM: usize = 256;

/// The crates whose panics read_file catches and reports (their source paths contain these).
const CAUGHT_IN: &[&str] = &[
    "/pdf-extract-",
    "/lopdf-",
    "/calamine-",
    "/zip-",
    "/quick-xml-",
    "/adobe-cmap-parser-",
    "/type1-encoding-parser-",
];

/// Installs, once, a panic hook that ignores the panics read_file catches, and leaves every other panic to
/// the hook that was there (libFuzzer's abort, or the test harness's report).
fn ignore_caught_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let file = info.location().map(|l| l.file().replace('\\', "/")).unwrap_or_default();
            if !CAUGHT_IN.iter().any(|krate| file.contains(krate)) {
                previous(info);
            }
        }));
    });
}

fn check(format: Document, bytes: &[u8]) {
    ignore_caught_panics();
    let limits = limits();
    if let Ok(text) = format.text(bytes, &limits) {
        let cap = limits.max_document_text_bytes as usize + NOTE_ROOM;
        assert!(text.len() <= cap, "{format:?}: {} bytes of text, over the cap of {cap}", text.len());
    }
}

/// A zip of `entries`, deflated.
fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for (name, bytes) in entries {
        // Writing into memory fails only on a bad name, and these are fixed.
        let _ = zip.start_file(*name, options).and_then(|()| Ok(zip.write_all(bytes)?));
    }
    zip.finish().map(std::io::Cursor::into_inner).unwrap_or_default()
}

/// A `.docx` target input: the file, or `word/document.xml`.
pub fn docx(data: &[u8]) {
    match data.split_first() {
        Some((0, file)) => check(Document::Docx, file),
        Some((_, xml)) => check(Document::Docx, &zip_of(&[("word/document.xml", xml)])),
        None => check(Document::Docx, data),
    }
}

const WORKBOOK_PARTS: &[(&str, &str)] = &[
    (
        "[Content_Types].xml",
        r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/></Types>"#,
    ),
    (
        "_rels/.rels",
        r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#,
    ),
    (
        "xl/workbook.xml",
        r#"<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>"#,
    ),
    (
        "xl/_rels/workbook.xml.rels",
        r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>"#,
    ),
];

/// A `.xlsx` target input: the file, or the first worksheet's XML (a `0xFF` byte in it splits off the shared
/// strings' XML after it).
pub fn xlsx(data: &[u8]) {
    match data.split_first() {
        Some((0, file)) => check(Document::Spreadsheet, file),
        Some((_, xml)) => {
            let (sheet, strings) = match xml.iter().position(|&b| b == 0xFF) {
                Some(at) => (&xml[..at], Some(&xml[at + 1..])),
                None => (xml, None),
            };
            let mut entries: Vec<(&str, &[u8])> = WORKBOOK_PARTS.iter().map(|(n, x)| (*n, x.as_bytes())).collect();
            entries.push(("xl/worksheets/sheet1.xml", sheet));
            if let Some(strings) = strings {
                entries.push(("xl/sharedStrings.xml", strings));
            }
            check(Document::Spreadsheet, &zip_of(&entries));
        }
        None => check(Document::Spreadsheet, data),
    }
}

/// A `.pdf` target input: the file.
pub fn pdf_text(data: &[u8]) {
    check(Document::Pdf, data);
}

/// An `.ipynb` target input: the file.
pub fn ipynb(data: &[u8]) {
    check(Document::Notebook, data);
}
