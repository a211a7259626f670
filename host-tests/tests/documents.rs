//! read_file on documents, through the whole pipeline: text out of a PDF, a Word document, a notebook with
//! outputs and a workbook with several sheets (one hidden), a formula and a date, each generated here; and the
//! errors for damaged files.

use crate::util::*;
use serde_json::json;
use std::io::Write;
use std::path::Path;
use toolshed::ResultStatus;

/// One runtime and task in `ws`, and a function that reads a file in it.
fn reader(ws: &Path) -> impl Fn(&str) -> toolshed::ToolResult + use<> {
    let runtime = shipped().build().unwrap();
    let task = task_in(&runtime, ws);
    move |path| {
        let _runtime = &runtime;
        call(&task, "read_file", json!({ "path": path }))
    }
}

/// A one-page PDF written out by hand: catalog, page tree, page, content stream and a standard font, with a
/// cross-reference table whose offsets are counted as the file is assembled.
fn pdf(lines: &[&str]) -> Vec<u8> {
    let mut content = String::from("BT\n/F1 12 Tf\n14 TL\n72 720 Td\n");
    for line in lines {
        content.push_str(&format!("({line}) Tj T*\n"));
    }
    content.push_str("ET\n");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_owned(),
        format!("<< /Length {} >>\nstream\n{content}endstream", content.len()),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".to_owned(),
    ];
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n{object}\nendobj\n", i + 1).bytes());
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).bytes());
    for offset in offsets {
        out.extend(format!("{offset:010} 00000 n \n").bytes());
    }
    out.extend(format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).bytes());
    out
}

/// A minimal Word document: the content types, the package relationship and word/document.xml.
fn docx(body: &str) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    let parts = [
        (
            "[Content_Types].xml",
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#.to_owned(),
        ),
        (
            "_rels/.rels",
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#.to_owned(),
        ),
        (
            "word/document.xml",
            format!(
                r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>"#
            ),
        ),
    ];
    for (name, text) in parts {
        zip.start_file(name, options).unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

#[test]
fn a_pdf_reads_as_its_text() {
    let ws = workspace();
    let read = reader(ws.path());
    std::fs::write(ws.path().join("report.pdf"), pdf(&["Quarterly report", "Revenue grew by 12 percent"])).unwrap();
    let result = read("report.pdf");
    assert_eq!(result.status, ResultStatus::Success, "{}", text(&result));
    // Like pdf-parse, the page's text follows two newlines.
    assert_eq!(
        text(&result),
        "1 | \n2 | \n3 | Quarterly report\n4 | Revenue grew by 12 percent\n\n(File has 4 lines total.)"
    );
}

#[test]
fn a_word_document_reads_as_mammoth_raw_text() {
    let ws = workspace();
    let read = reader(ws.path());
    let body = concat!(
        r#"<w:p><w:r><w:t>Meeting notes</w:t></w:r></w:p>"#,
        r#"<w:p><w:r><w:t xml:space="preserve">Owner: </w:t></w:r><w:r><w:t>Ada &amp; Grace</w:t></w:r></w:p>"#,
        r#"<w:p><w:r><w:t>a</w:t><w:tab/><w:t>b</w:t><w:br/><w:t>c</w:t></w:r><w:del><w:r><w:delText>gone</w:delText></w:r></w:del></w:p>"#,
    );
    std::fs::write(ws.path().join("notes.docx"), docx(body)).unwrap();
    assert_eq!(
        text(&read("notes.docx")),
        "1 | Meeting notes\n2 | \n3 | Owner: Ada & Grace\n4 | \n5 | a\tb\n6 | c\n7 | \n\n(File has 7 lines total.)"
    );
}

#[test]
fn a_notebook_loses_its_outputs() {
    let ws = workspace();
    let read = reader(ws.path());
    let notebook = json!({
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Analysis"]},
            {"cell_type": "code", "execution_count": 2, "metadata": {}, "outputs": [
                {"output_type": "stream", "name": "stdout", "text": ["secret output\n"]},
                {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo="}, "metadata": {}}
            ], "source": ["print(1 + 1)"]}
        ],
        "metadata": {"kernelspec": {"name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5
    });
    // serde_json writes keys sorted, which is also the order of this notebook's keys.
    std::fs::write(ws.path().join("analysis.ipynb"), serde_json::to_string(&notebook).unwrap()).unwrap();
    let expected = [
        "{",
        " \"cells\": [",
        "  {",
        "   \"cell_type\": \"markdown\",",
        "   \"metadata\": {},",
        "   \"source\": [",
        "    \"# Analysis\"",
        "   ]",
        "  },",
        "  {",
        "   \"cell_type\": \"code\",",
        "   \"execution_count\": 2,",
        "   \"metadata\": {},",
        "   \"outputs\": [],",
        "   \"source\": [",
        "    \"print(1 + 1)\"",
        "   ]",
        "  }",
        " ],",
        " \"metadata\": {",
        "  \"kernelspec\": {",
        "   \"name\": \"python3\"",
        "  }",
        " },",
        " \"nbformat\": 4,",
        " \"nbformat_minor\": 5",
        "}",
    ];
    let numbered: Vec<String> = expected.iter().enumerate().map(|(i, line)| format!("{} | {line}", i + 1)).collect();
    assert_eq!(
        text(&read("analysis.ipynb")),
        format!("{}\n\n(File has {} lines total.)", numbered.join("\n"), expected.len())
    );
}

#[test]
fn a_workbook_reads_as_visible_sheets_of_tab_joined_rows() {
    use rust_xlsxwriter::{ExcelDateTime, Format, Formula, Workbook};

    let ws = workspace();
    let read = reader(ws.path());
    let mut workbook = Workbook::new();
    let sales = workbook.add_worksheet().set_name("Sales").unwrap();
    sales.write_string(0, 0, "Item").unwrap();
    sales.write_string(0, 1, "Amount").unwrap();
    sales.write_string(0, 2, "Date").unwrap();
    sales.write_string(1, 0, "Apples").unwrap();
    sales.write_number(1, 1, 12.5).unwrap();
    let date = ExcelDateTime::from_ymd(2024, 3, 15).unwrap();
    sales.write_datetime_with_format(1, 2, &date, &Format::new().set_num_format("yyyy-mm-dd")).unwrap();
    sales.write_string(2, 0, "Pears").unwrap();
    sales.write_number(2, 1, 7).unwrap();
    // Row 4 is left empty; row 5 starts in column B.
    sales.write_string(4, 1, "Total").unwrap();
    sales.write_formula(4, 2, Formula::new("=SUM(B2:B3)").set_result("19.5")).unwrap();
    let hidden = workbook.add_worksheet().set_name("Secret").unwrap();
    hidden.write_string(0, 0, "do not show").unwrap();
    hidden.set_hidden(true);
    let notes = workbook.add_worksheet().set_name("Notes").unwrap();
    notes.write_string(0, 0, "checked").unwrap();
    notes.write_boolean(0, 1, true).unwrap();
    workbook.save(ws.path().join("book.xlsx")).unwrap();

    assert_eq!(
        text(&read("book.xlsx")),
        [
            "1 | --- Sheet: Sales ---",
            "2 | Item\tAmount\tDate",
            "3 | Apples\t12.5\t2024-03-15",
            "4 | Pears\t7",
            "5 | \tTotal\t19.5",
            "6 | ",
            "7 | --- Sheet: Notes ---",
            "8 | checked\ttrue",
            "",
            "(File has 8 lines total.)",
        ]
        .join("\n")
    );
}

#[test]
fn damaged_documents_are_clear_errors() {
    let ws = workspace();
    let read = reader(ws.path());
    std::fs::write(ws.path().join("broken.pdf"), b"%PDF-1.4\nthis is not really a pdf\n").unwrap();
    std::fs::write(ws.path().join("broken.docx"), b"PK\x03\x04 not a zip archive").unwrap();
    std::fs::write(ws.path().join("broken.xlsx"), b"plain text pretending to be a workbook").unwrap();
    // A valid zip archive without a document inside.
    let mut empty = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    empty.start_file("hello.txt", zip::write::SimpleFileOptions::default()).unwrap();
    empty.write_all(b"hi").unwrap();
    std::fs::write(ws.path().join("hollow.docx"), empty.finish().unwrap().into_inner()).unwrap();

    let error = |path: &str| {
        let result = read(path);
        assert_eq!(result.status, ResultStatus::Error, "{path}: {}", text(&result));
        text(&result)
    };
    let prefix = "The tool execution failed with the following error:\n<error>\nError reading file: ";
    let pdf = error("broken.pdf");
    assert!(pdf.starts_with(&format!("{prefix}Failed to extract text from PDF: ")), "{pdf}");
    let docx = error("broken.docx");
    assert!(docx.starts_with(&format!("{prefix}Failed to extract text from Word document: ")), "{docx}");
    let hollow = error("hollow.docx");
    assert!(hollow.contains("Failed to extract text from Word document: word/document.xml: "), "{hollow}");
    let xlsx = error("broken.xlsx");
    assert!(xlsx.starts_with(&format!("{prefix}Failed to extract text from Excel: ")), "{xlsx}");
    // A notebook that is not JSON is shown as the text it is, as Cline does.
    std::fs::write(ws.path().join("draft.ipynb"), "not json yet\n").unwrap();
    assert_eq!(text(&read("draft.ipynb")), "1 | not json yet\n\n(File has 1 lines total.)");
}

#[test]
fn the_400_kb_cap_applies_to_the_extracted_text() {
    let ws = workspace();
    let read = reader(ws.path());
    // Three paragraphs of 200,000 characters: 600,006 characters of text (each paragraph ends in a blank line)
    // from a file of a few kilobytes.
    let paragraph = format!("<w:p><w:r><w:t>{}</w:t></w:r></w:p>", "x".repeat(200_000));
    std::fs::write(ws.path().join("long.docx"), docx(&paragraph.repeat(3))).unwrap();
    let result = text(&read("long.docx"));
    assert!(result.starts_with(&format!("1 | {}\n2 | \n3 | xxx", "x".repeat(200_000))));
    assert!(
        result.ends_with("xxx\n\n---\n\n[FILE TRUNCATED: This content is 585.9 KB but only the first 400.0 KB is shown (185.9 KB truncated). Use search_files to find specific patterns, or execute_command with grep/head/tail for targeted reading.]"),
        "{}",
        &result[result.len() - 300..]
    );
}
