//! PDFs written byte by byte: the ordinary one-page file, and the hostile ones each limit is for.

use super::*;
use pretty_assertions::assert_eq;
use std::io::Write;

/// A PDF of `objects` (numbered from 1; object 1 is the catalog), with a cross-reference table whose offsets
/// are counted as the file is assembled.
pub(crate) fn pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n", i + 1).bytes());
        out.extend(object);
        out.extend(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).bytes());
    for offset in offsets {
        out.extend(format!("{offset:010} 00000 n \n").bytes());
    }
    out.extend(format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).bytes());
    out
}

/// A stream object of `dict` entries and `data`.
pub(crate) fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut object = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    object.extend(data);
    object.extend(b"\nendstream");
    object
}

pub(crate) fn zlib(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(data).unwrap_or_else(|e| panic!("{e}"));
    encoder.finish().unwrap_or_else(|e| panic!("{e}"))
}

const FONT: &str = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>";

/// One page (object 3) whose content is object 4 and whose resources are `resources`, then `more` objects
/// from 6 on (object 5 is a font, /F1).
pub(crate) fn one_page(page_extra: &str, content: Vec<u8>, resources: &str, more: Vec<Vec<u8>>) -> Vec<u8> {
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> {resources} >> {page_extra} >>"
        )
        .into_bytes(),
        content,
        FONT.as_bytes().to_vec(),
    ];
    objects.extend(more);
    pdf(&objects)
}

pub(crate) fn text_content(text: &str) -> Vec<u8> {
    stream("", format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET").as_bytes())
}

fn read(bytes: &[u8], limits: &DocumentLimits) -> Result<String, Failure> {
    pdf_text(bytes, limits)
}

fn limit_key(outcome: Result<String, Failure>) -> String {
    match outcome {
        Err(Failure::Limit(sentence)) => sentence,
        other => panic!("expected a limit, got {other:?}"),
    }
}

#[test]
fn an_ordinary_pdf_reads_as_its_text() {
    let bytes = one_page("", text_content("Hello PDF"), "", vec![]);
    let text = read(&bytes, &DocumentLimits::default()).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(text.trim(), "Hello PDF");
}

#[test]
fn a_drawing_that_draws_itself_is_refused_before_pdf_extract_recurses() {
    // Object 6 is a form drawing /X0, which its own resources say is object 6.
    let form =
        stream("/Type /XObject /Subtype /Form /BBox [0 0 10 10] /Resources << /XObject << /X0 6 0 R >> >>", b"/X0 Do");
    let bytes = one_page("", stream("", b"/X0 Do"), "/XObject << /X0 6 0 R >>", vec![form]);
    assert_eq!(
        read(&bytes, &DocumentLimits::default()),
        Err(Failure::Damaged("drawing 6 0 R draws itself".to_owned()))
    );
    // Without resources of its own, the form draws through the page's: the same loop.
    let form = stream("/Type /XObject /Subtype /Form /BBox [0 0 10 10]", b"q /X0 Do Q");
    let bytes = one_page("", stream("", b"/X0 Do"), "/XObject << /X0 6 0 R >>", vec![form]);
    assert!(matches!(read(&bytes, &DocumentLimits::default()), Err(Failure::Damaged(m)) if m.contains("draws itself")));
}

#[test]
fn drawings_nested_too_deep_are_a_limit() {
    // Forms 6..=45, each drawing the next.
    let forms: Vec<Vec<u8>> = (6..46)
        .map(|id| stream(&format!("/Subtype /Form /Resources << /XObject << /N {} 0 R >> >>", id + 1), b"/N Do"))
        .collect();
    let bytes = one_page("", stream("", b"/X0 Do"), "/XObject << /X0 6 0 R >>", forms);
    assert_eq!(
        limit_key(read(&bytes, &DocumentLimits::default())),
        "the PDF nests its drawings more than 32 deep ([plugins.config.read_file] max_pdf_form_depth)"
    );
}

#[test]
fn a_drawing_drawn_over_and_over_counts_each_time() {
    // Each level draws the next 10 times: 10^7 draws of the last from one page.
    let forms: Vec<Vec<u8>> = (6..13)
        .map(|id| {
            let draws = "/N Do ".repeat(10);
            stream(&format!("/Subtype /Form /Resources << /XObject << /N {} 0 R >> >>", id + 1), draws.as_bytes())
        })
        .chain([stream("/Subtype /Form", b"1 2 3 4 5 6 7 8 9 10 re")])
        .collect();
    let bytes = one_page("", stream("", b"/X0 Do"), "/XObject << /X0 6 0 R >>", forms);
    assert!(limit_key(read(&bytes, &DocumentLimits::default())).contains("max_pdf_objects"));
}

#[test]
fn a_page_that_is_its_own_parent_is_refused() {
    let objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 3 0 R /Contents 4 0 R >>".to_vec(),
        text_content("loop"),
    ];
    assert_eq!(
        read(&pdf(&objects), &DocumentLimits::default()),
        Err(Failure::Damaged("the page tree loops: page 1 is its own ancestor".to_owned()))
    );
}

#[test]
fn a_stream_that_inflates_hugely_is_a_limit() {
    let limits = DocumentLimits { max_document_part_bytes: 1024 * 1024, ..DocumentLimits::default() };
    let bomb = zlib(&vec![b' '; 4 * 1024 * 1024]);
    assert!(bomb.len() < 10_000, "{}", bomb.len());
    let bytes = one_page("", stream("/Filter /FlateDecode", &bomb), "", vec![]);
    assert_eq!(
        limit_key(read(&bytes, &limits)),
        "a stream of the PDF expands to more than 1 MiB ([plugins.config.read_file] max_document_part_bytes)"
    );
    // Compressed twice, the outer layer is small and the inner one is the bomb.
    let twice = zlib(&bomb);
    let bytes = one_page("", stream("/Filter [/FlateDecode /FlateDecode]", &twice), "", vec![]);
    assert!(limit_key(read(&bytes, &limits)).contains("max_document_part_bytes"));
    // A broken zlib header gets lopdf's raw-deflate fallback, and so does the check.
    let mut broken = bomb;
    broken[1] ^= 0xff;
    let bytes = one_page("", stream("/Filter /FlateDecode", &broken), "", vec![]);
    assert!(limit_key(read(&bytes, &limits)).contains("max_document_part_bytes"));
    // Many streams, each under the part limit, are held to the total.
    let part = zlib(&vec![b' '; 700 * 1024]);
    let more: Vec<Vec<u8>> = (0..4).map(|_| stream("/Filter /FlateDecode", &part)).collect();
    let limits = DocumentLimits { max_document_unpacked_bytes: 2 * 1024 * 1024, ..limits };
    let bytes = one_page("", text_content("x"), "", more);
    assert_eq!(
        limit_key(read(&bytes, &limits)),
        "the document expands to more than 2 MiB ([plugins.config.read_file] max_document_unpacked_bytes)"
    );
}

#[test]
fn a_bomb_in_an_object_stream_is_seen_before_lopdf_loads_it() {
    // Not a valid object stream, but the raw pass inflates any stream it finds, before lopdf parses.
    let limits = DocumentLimits { max_document_part_bytes: 1024 * 1024, ..DocumentLimits::default() };
    let bomb = zlib(&vec![b'0'; 4 * 1024 * 1024]);
    let mut bytes = b"%PDF-1.5\n1 0 obj\n<< /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode >>\nstream\r\n".to_vec();
    bytes.extend(&bomb);
    assert!(limit_key(check_raw_streams(&bytes, &limits).map(|()| String::new())).contains("max_document_part_bytes"));
}

#[test]
fn many_saved_graphics_states_are_a_limit() {
    let bytes = one_page("", stream("", "q ".repeat(2000).as_bytes()), "", vec![]);
    assert_eq!(
        limit_key(read(&bytes, &DocumentLimits::default())),
        "the PDF nests its graphics states more than 1024 deep ([plugins.config.read_file] max_pdf_graphics_depth)"
    );
    // Balanced, they cost nothing.
    let balanced = format!("{}BT /F1 12 Tf (ok) Tj ET", "q Q ".repeat(5000));
    let bytes = one_page("", stream("", balanced.as_bytes()), "", vec![]);
    assert_eq!(read(&bytes, &DocumentLimits::default()).map(|t| t.trim().to_owned()), Ok("ok".to_owned()));
}

#[test]
fn a_content_stream_of_too_many_objects_is_a_limit() {
    let limits = DocumentLimits { max_pdf_stream_objects: 1000, ..DocumentLimits::default() };
    let bytes = one_page("", stream("", "1 ".repeat(1001).as_bytes()), "", vec![]);
    assert_eq!(
        limit_key(read(&bytes, &limits)),
        "a content stream of the PDF holds more than 1000 objects ([plugins.config.read_file] max_pdf_stream_objects)"
    );
}

#[test]
fn too_many_pages_are_a_limit() {
    let bytes = one_page("", text_content("x"), "", vec![]);
    let limits = DocumentLimits { max_pdf_pages: 0, ..DocumentLimits::default() };
    assert_eq!(
        limit_key(read(&bytes, &limits)),
        "the PDF has more than 0 pages ([plugins.config.read_file] max_pdf_pages)"
    );
}

#[test]
fn the_scan_reads_content_as_lopdf_does() {
    let content = b"% comment /A Do\n(a (nested) string \\) /B Do) /C#20D Do <</D 1>> BI /W 1 ID q q q EI /E Do";
    let scan = scan_content(content, &DocumentLimits::default()).unwrap_or_default();
    assert_eq!(scan.drawn, vec![b"C D".to_vec(), b"E".to_vec()]);
}
