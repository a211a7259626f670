//! read_file on hostile documents (issue 22, classes 1, 2, 3 and 5), through the shipped plugin and its
//! `document_text` job in a child `toolshed`: every shape the issue names and the variants beside them
//! answers with a tool error naming its limit (or why the file is damaged) or with a bounded text, and the
//! same runtime reads the next file at once. Plain text reads stay in the host: a child too small to start a
//! reader does not stop them.

use super::fixtures::*;
use crate::util::*;
use serde_json::json;
use std::path::Path;
use toolshed::config::Config;
use toolshed::{ResultStatus, Runtime};

const GIB: u64 = 1024 * 1024 * 1024;

/// What a hostile document must answer.
enum Expect {
    /// A tool error naming this `[plugins.config.read_file]` key.
    Limit(&'static str),
    /// A tool error containing this text.
    Error(&'static str),
    /// A successful, bounded text containing this.
    Text(&'static str),
}

fn runtime(config: Config) -> Runtime {
    shipped().config(config).build().unwrap()
}

fn config(toml: &str) -> Config {
    Config::from_toml_str(toml).unwrap()
}

fn read(runtime: &Runtime, ws: &Path, path: &str) -> (ResultStatus, String) {
    let task = task_in(runtime, ws);
    let result = call(&task, "read_file", json!({ "path": path }));
    (result.status, text(&result))
}

/// The plain file every hostile read is followed by.
fn assert_reads_on(runtime: &Runtime, ws: &Path, after: &str) {
    let (status, body) = read(runtime, ws, "plain.txt");
    assert_eq!(status, ResultStatus::Success, "after {after}: {body}");
    assert_eq!(body, "1 | still here\n\n(File has 1 lines total.)", "after {after}");
}

fn hostile_documents() -> Vec<(&'static str, Vec<u8>, Expect)> {
    use Expect::*;
    let corners = vec![("A1".to_owned(), 1.0), ("XFD1048576".to_owned(), 2.0)];
    let cv = vec![("A1".to_owned(), 1.0), ("CV1048576".to_owned(), 2.0)];
    vec![
        // Class 3: decompression bombs, with honest and lying headers.
        ("bomb.docx", docx_bomb(3 * GIB, false), Limit("max_document_part_bytes")),
        // The zip reader itself refuses an entry that inflates past its declared size.
        ("lying-bomb.docx", docx_bomb(3 * GIB, true), Error("larger than its declared uncompressed size")),
        ("nested.docx", docx_nested(100_000), Text("")),
        ("sheet-bomb.xlsx", xlsx_sheet_bomb(3 * GIB), Limit("max_document_")),
        ("strings-bomb.xlsx", xlsx_shared_strings_bomb(3 * GIB), Limit("max_document_")),
        ("stream-bomb.pdf", pdf_inflating_stream(2 * GIB), Limit("max_document_part_bytes")),
        ("unreferenced-bomb.pdf", pdf_unreferenced_bomb(2 * GIB), Limit("max_document_part_bytes")),
        ("objstm-bomb.pdf", pdf_object_stream_bomb(2 * GIB), Limit("max_document_part_bytes")),
        ("many-q.pdf", pdf_many_q(10_000_000, true), Limit("max_pdf_graphics_depth")),
        // Class 2: a tiny file naming a huge grid.
        ("corners.xlsx", xlsx_cells(&corners, Some("A1:XFD1048576")), Text("[... truncated at row 1048576 ...]")),
        ("cv.xlsx", xlsx_cells(&cv, Some("A1:CV1048576")), Text("[... truncated at row 1048576 ...]")),
        ("xfd-rows.xlsx", xlsx_xfd_rows(50_000), Text("max_sheet_row_cells")),
        // Class 1 and 5: recursion and loops.
        ("self-drawing.pdf", pdf_self_drawing_form(), Error("draws itself")),
        ("mutual.pdf", pdf_mutual_forms(), Error("draws itself")),
        ("own-parent.pdf", pdf_page_own_parent(), Error("the page tree loops")),
        ("own-kid.pdf", pdf_pages_own_kid(), Text("")),
        ("nested-arrays.pdf", pdf_nested_arrays(100_000), Text("")),
        // Class 4 inside a document: a pretty-print that grows with depth × width.
        ("deep.ipynb", notebook_deep(100_000), Text("")),
        ("wide-deep.ipynb", notebook_wide_deep(120, 200_000), Text("")),
    ]
}

#[test]
fn hostile_documents_answer_with_their_limit_and_the_runtime_reads_on() {
    let ws = workspace();
    std::fs::write(ws.path().join("plain.txt"), "still here\n").unwrap();
    let cases = hostile_documents();
    for (name, bytes, _) in &cases {
        std::fs::write(ws.path().join(name), bytes).unwrap();
    }
    let runtime = runtime(Config::default());
    for (name, bytes, expect) in &cases {
        let (status, body) = read(&runtime, ws.path(), name);
        let what = format!("{name} ({} bytes): {status:?}: {}", bytes.len(), &body[..body.len().min(600)]);
        assert!(body.len() <= RESULT_BOUND, "{what}");
        match expect {
            Expect::Limit(key) => {
                assert_eq!(status, ResultStatus::Error, "{what}");
                assert!(body.contains("Error reading file: "), "{what}");
                assert!(body.contains(&format!("([plugins.config.read_file] {key}")), "{what}");
            }
            Expect::Error(text) => {
                assert_eq!(status, ResultStatus::Error, "{what}");
                assert!(body.contains(text), "{what}");
            }
            Expect::Text(text) => {
                assert_eq!(status, ResultStatus::Success, "{what}");
                assert!(body.contains(text), "{what}");
            }
        }
        assert_reads_on(&runtime, ws.path(), name);
    }
}

#[test]
fn the_limits_are_config_keys() {
    let ws = workspace();
    std::fs::write(ws.path().join("plain.txt"), "still here\n").unwrap();
    std::fs::write(ws.path().join("table.xlsx"), xlsx_table(200)).unwrap();
    std::fs::write(ws.path().join("text.pdf"), pdf_text(&["one", "two"])).unwrap();
    std::fs::write(ws.path().join("book.docx"), docx(&["a paragraph"])).unwrap();
    let tight = runtime(config(
        "[plugins.config.read_file]\nmax_document_part_bytes = 1024\nmax_pdf_pages = 0\nmax_sheet_row_chars = 10\n",
    ));
    let (status, body) = read(&tight, ws.path(), "table.xlsx");
    assert_eq!(status, ResultStatus::Error, "{body}");
    assert!(body.contains("expands to more than 1 KiB ([plugins.config.read_file] max_document_part_bytes)"), "{body}");
    let (status, body) = read(&tight, ws.path(), "text.pdf");
    assert_eq!(status, ResultStatus::Error, "{body}");
    assert!(
        body.contains("Error reading file: the PDF has more than 0 pages ([plugins.config.read_file] max_pdf_pages)"),
        "{body}"
    );
    // The defaults read them.
    let loose = runtime(Config::default());
    let (status, body) = read(&loose, ws.path(), "table.xlsx");
    assert_eq!(status, ResultStatus::Success, "{body}");
    assert!(body.starts_with("1 | --- Sheet: Sheet1 ---\n2 | "), "{body}");
    let (status, body) = read(&loose, ws.path(), "book.docx");
    assert_eq!((status, body.as_str()), (ResultStatus::Success, "1 | a paragraph\n2 | \n\n(File has 2 lines total.)"));
    // A misspelt key is not a silent default: read_file refuses to start (its load error names the key).
    let bad = runtime(config("[plugins.config.read_file]\nmax_pdf_page = 1\n"));
    let (status, body) = read(&bad, ws.path(), "plain.txt");
    assert_eq!(status, ResultStatus::Error, "{body}");
    assert!(body.contains("Tool 'read_file' does not exist"), "{body}");
}

#[test]
fn documents_are_read_in_a_child_and_plain_text_in_the_host() {
    let ws = workspace();
    std::fs::write(ws.path().join("plain.txt"), "still here\n").unwrap();
    std::fs::write(ws.path().join("table.xlsx"), xlsx_table(20)).unwrap();
    // A child with 16 MiB of address space cannot even start the reader: the isolation's own error.
    let runtime = runtime(config("[isolation]\nmemory_mb = 16\n"));
    let (status, body) = read(&runtime, ws.path(), "table.xlsx");
    assert_eq!(status, ResultStatus::Error, "{body}");
    assert!(body.contains("Error reading file: the parser"), "{body}");
    assert_reads_on(&runtime, ws.path(), "a reader that ran out of memory");
}

#[test]
fn the_toolshed_binary_answers_a_bomb_with_its_limit() {
    let home = tempfile::tempdir().unwrap();
    let ws = workspace();
    std::fs::write(ws.path().join("bomb.docx"), docx_bomb(3 * GIB, false)).unwrap();
    let plugins = plugins();
    let args = ["--plugins", plugins.to_str().unwrap(), "call", "read_file", r#"{"path":"bomb.docx"}"#];
    let output = toolshed(home.path(), ws.path(), &args, &[]);
    assert_eq!(output.status.code(), Some(1), "{}\n{}", stdout(&output), stderr(&output));
    assert!(
        stdout(&output).contains("expands to more than 128 MiB ([plugins.config.read_file] max_document_part_bytes)"),
        "{}",
        stdout(&output)
    );
}
