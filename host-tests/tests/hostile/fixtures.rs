//! Generators of hostile files, and the whole hostile suite laid out in a temp workspace: documents for
//! read_file, minified sources for list_code_definition_names, a long line for search_files, pages served on
//! 127.0.0.1 for web_fetch, bad skills for use_skill and hostile hooks. Nothing is committed: every file is
//! built here, and the bombs are built without ever holding their inflated bytes (deflate blocks repeated,
//! checksums combined), so a 3 GiB bomb costs a few megabytes and milliseconds.
//!
//! Each shape is the issue's, at the size that killed or hung the code before the fixes (see each function).

use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The most a bounded result may hold: the runtime's default `[limits] max_result_bytes` (1 MiB) and room
/// for the result's own header. Plugins cap lower (Cline's 400 KB); this is the line nothing may cross.
pub const RESULT_BOUND: usize = 1024 * 1024 + 16 * 1024;

/// The peak resident set the host may reach over the whole suite: generous, since the parsers' memory is
/// bounded in the child-process jobs (which do not count here) and the host holds results of at most
/// [`RESULT_BOUND`]. Before the fixes one xlsx asked for 512 GiB and one docx inflated to 3 GiB.
pub const RSS_BOUND_KIB: u64 = 1536 * 1024;

/// The address space a host under test may map (`RLIMIT_AS`): not the bound checked, a net for the shared
/// machine, so a host that regressed fails an allocation instead of filling the machine's memory.
pub const ADDRESS_SPACE_NET: u64 = 8 * 1024 * MIB;

const MIB: u64 = 1024 * 1024;

// ---------------------------------------------------------------------------------------------------------
// Deflate without holding the inflated bytes.

/// A deflate stream and the checksums of what it inflates to.
pub struct Deflated {
    /// Raw deflate (RFC 1951), as a zip entry holds it.
    pub raw: Vec<u8>,
    /// What it inflates to: length, CRC-32 (zip) and Adler-32 (zlib).
    pub len: u64,
    pub crc: u32,
    pub adler: u32,
}

impl Deflated {
    /// The zlib form (RFC 1950), as a PDF's `/FlateDecode` stream holds it.
    pub fn zlib(&self) -> Vec<u8> {
        let mut out = vec![0x78, 0xda];
        out.extend_from_slice(&self.raw);
        out.extend_from_slice(&self.adler.to_be_bytes());
        out
    }
}

/// One part compressed alone and ended on a byte boundary (a sync flush), so parts can be laid end to end:
/// each part's back-references stay inside its own output, which the inflater has just written.
fn deflate_part(data: &[u8], last: bool) -> Vec<u8> {
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(data).unwrap();
    if last {
        return encoder.finish().unwrap();
    }
    // flate2's flush is a sync flush: pending output, then an empty stored block that ends on a byte.
    encoder.flush().unwrap();
    std::mem::take(encoder.get_mut())
}

/// `prefix`, then `chunk` `count` times, then `suffix`, deflated in O(chunk) memory and time per repeat of
/// bytes copied: the chunk is compressed once and its blocks repeated.
pub fn deflate_repeated(prefix: &[u8], chunk: &[u8], count: u64, suffix: &[u8]) -> Deflated {
    let mut raw = deflate_part(prefix, false);
    let part = deflate_part(chunk, false);
    raw.reserve(part.len() * count as usize);
    for _ in 0..count {
        raw.extend_from_slice(&part);
    }
    raw.extend_from_slice(&deflate_part(suffix, true));
    let checksum = |data: &[u8]| {
        let mut crc = crc32fast::Hasher::new();
        crc.update(data);
        (crc, adler32(data))
    };
    let (mut crc, mut adler) = checksum(prefix);
    let (chunk_crc, chunk_adler) = checksum(chunk);
    for _ in 0..count {
        crc.combine(&chunk_crc);
        adler = adler32_combine(adler, chunk_adler, chunk.len() as u64);
    }
    let (suffix_crc, suffix_adler) = checksum(suffix);
    crc.combine(&suffix_crc);
    adler = adler32_combine(adler, suffix_adler, suffix.len() as u64);
    let len = prefix.len() as u64 + chunk.len() as u64 * count + suffix.len() as u64;
    Deflated { raw, len, crc: crc.finalize(), adler }
}

/// Deflates `data` as one stream.
pub fn deflate(data: &[u8]) -> Deflated {
    deflate_repeated(data, b"", 0, b"")
}

const ADLER_BASE: u64 = 65521;

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u64, 0u64);
    for &byte in data {
        a = (a + u64::from(byte)) % ADLER_BASE;
        b = (b + a) % ADLER_BASE;
    }
    ((b << 16) | a) as u32
}

/// zlib's `adler32_combine`: the Adler-32 of `A ‖ B` from those of A and B and B's length.
fn adler32_combine(adler1: u32, adler2: u32, len2: u64) -> u32 {
    let rem = len2 % ADLER_BASE;
    let (a1, b1) = (u64::from(adler1 & 0xffff), u64::from(adler1 >> 16));
    let (a2, b2) = (u64::from(adler2 & 0xffff), u64::from(adler2 >> 16));
    let a = (a1 + a2 + ADLER_BASE - 1) % ADLER_BASE;
    let b = (rem * a1 % ADLER_BASE + b1 + b2 + ADLER_BASE - rem) % ADLER_BASE;
    ((b << 16) | a) as u32
}

// ---------------------------------------------------------------------------------------------------------
// Zip archives (docx, xlsx), written by hand so a header may lie.

/// One entry of a hand-written zip.
pub struct ZipEntry {
    pub name: String,
    pub data: Deflated,
    /// The uncompressed size the headers claim; `None` tells the truth (when it fits 32 bits).
    pub claimed_size: Option<u32>,
}

impl ZipEntry {
    /// An honest entry.
    pub fn new(name: &str, data: Deflated) -> Self {
        ZipEntry { name: name.to_owned(), data, claimed_size: None }
    }

    /// A small entry from its text.
    pub fn text(name: &str, text: &str) -> Self {
        Self::new(name, deflate(text.as_bytes()))
    }
}

/// A zip archive (deflate, no zip64) of `entries`.
pub fn zip(entries: &[ZipEntry]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for entry in entries {
        let offset = out.len() as u32;
        let size = entry.claimed_size.unwrap_or_else(|| u32::try_from(entry.data.len).unwrap_or(u32::MAX));
        let common = |buf: &mut Vec<u8>| {
            buf.extend_from_slice(&20u16.to_le_bytes()); // version needed
            buf.extend_from_slice(&0u16.to_le_bytes()); // flags
            buf.extend_from_slice(&8u16.to_le_bytes()); // deflate
            buf.extend_from_slice(&0u16.to_le_bytes()); // time
            buf.extend_from_slice(&0x21u16.to_le_bytes()); // date: 1980-01-01
            buf.extend_from_slice(&entry.data.crc.to_le_bytes());
            buf.extend_from_slice(&(entry.data.raw.len() as u32).to_le_bytes());
            buf.extend_from_slice(&size.to_le_bytes());
            buf.extend_from_slice(&(entry.name.len() as u16).to_le_bytes());
            buf.extend_from_slice(&0u16.to_le_bytes()); // extra
        };
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        common(&mut out);
        out.extend_from_slice(entry.name.as_bytes());
        out.extend_from_slice(&entry.data.raw);

        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&20u16.to_le_bytes()); // version made by
        common(&mut central);
        central.extend_from_slice(&[0; 8]); // comment length, disk, internal and external attributes
        central.extend_from_slice(&[0; 2]);
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(entry.name.as_bytes());
    }
    let central_offset = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]); // disk numbers
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&central_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

// ---------------------------------------------------------------------------------------------------------
// Word documents.

const DOCX_HEAD: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\
    <w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\"><w:body>";
const DOCX_TAIL: &str = "</w:body></w:document>";

fn docx_parts(document: ZipEntry) -> Vec<u8> {
    zip(&[
        ZipEntry::text(
            "[Content_Types].xml",
            "<?xml version=\"1.0\"?><Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">\
             <Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/>\
             <Default Extension=\"xml\" ContentType=\"application/xml\"/>\
             <Override PartName=\"/word/document.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml\"/></Types>",
        ),
        ZipEntry::text(
            "_rels/.rels",
            "<?xml version=\"1.0\"?><Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">\
             <Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument\" Target=\"word/document.xml\"/></Relationships>",
        ),
        document,
    ])
}

/// A docx of ordinary paragraphs.
pub fn docx(paragraphs: &[&str]) -> Vec<u8> {
    let body: String = paragraphs.iter().map(|p| format!("<w:p><w:r><w:t>{p}</w:t></w:r></w:p>")).collect();
    docx_parts(ZipEntry::text("word/document.xml", &format!("{DOCX_HEAD}{body}{DOCX_TAIL}")))
}

/// The docx bomb: `word/document.xml` inflates to about `inflated` bytes of paragraphs (3 GiB from
/// 3 MB in the issue). With `lying`, the headers claim 4 KiB, so only a count of the bytes read catches it.
pub fn docx_bomb(inflated: u64, lying: bool) -> Vec<u8> {
    let paragraph = format!("<w:p><w:r><w:t>{}</w:t></w:r></w:p>", "bomb ".repeat(200));
    let chunk = paragraph.repeat((MIB as usize) / paragraph.len());
    let data =
        deflate_repeated(DOCX_HEAD.as_bytes(), chunk.as_bytes(), inflated / chunk.len() as u64, DOCX_TAIL.as_bytes());
    docx_parts(ZipEntry { claimed_size: lying.then_some(4096), ..ZipEntry::new("word/document.xml", data) })
}

/// A docx whose paragraphs nest as deep as `depth` through `w:sdt` content controls (tables in tables
/// parse the same way): an XML nesting bomb for a reader that recurses.
pub fn docx_nested(depth: usize) -> Vec<u8> {
    let open = "<w:sdt><w:sdtContent>".repeat(depth);
    let close = "</w:sdtContent></w:sdt>".repeat(depth);
    docx_parts(ZipEntry::text(
        "word/document.xml",
        &format!("{DOCX_HEAD}{open}<w:p><w:r><w:t>deep</w:t></w:r></w:p>{close}{DOCX_TAIL}"),
    ))
}

// ---------------------------------------------------------------------------------------------------------
// Spreadsheets.

/// The parts of a workbook around its sheets' XML (`sheets[i]` is `xl/worksheets/sheet{i+1}.xml`) and, when
/// given, one more part: `xl/sharedStrings.xml` or `xl/styles.xml`.
fn xlsx_parts(sheets: Vec<ZipEntry>, extra: Option<ZipEntry>) -> Vec<u8> {
    let kind = extra.as_ref().map(|e| e.name.trim_start_matches("xl/").trim_end_matches(".xml").to_owned());
    let mut types = String::new();
    let mut rels = String::new();
    let mut names = String::new();
    for n in 1..=sheets.len() {
        types.push_str(&format!(
            "<Override PartName=\"/xl/worksheets/sheet{n}.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml\"/>"
        ));
        rels.push_str(&format!(
            "<Relationship Id=\"rId{n}\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet\" Target=\"worksheets/sheet{n}.xml\"/>"
        ));
        names.push_str(&format!("<sheet name=\"Sheet{n}\" sheetId=\"{n}\" r:id=\"rId{n}\"/>"));
    }
    if let Some(kind) = &kind {
        types.push_str(&format!(
            "<Override PartName=\"/xl/{kind}.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.{kind}+xml\"/>"
        ));
        rels.push_str(&format!(
            "<Relationship Id=\"rIdExtra\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/{kind}\" Target=\"{kind}.xml\"/>"
        ));
    }
    let mut entries = vec![
        ZipEntry::text(
            "[Content_Types].xml",
            &format!(
                "<?xml version=\"1.0\"?><Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">\
                 <Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/>\
                 <Default Extension=\"xml\" ContentType=\"application/xml\"/>\
                 <Override PartName=\"/xl/workbook.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml\"/>{types}</Types>"
            ),
        ),
        ZipEntry::text(
            "_rels/.rels",
            "<?xml version=\"1.0\"?><Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">\
             <Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument\" Target=\"xl/workbook.xml\"/></Relationships>",
        ),
        ZipEntry::text(
            "xl/workbook.xml",
            &format!(
                "<?xml version=\"1.0\"?><workbook xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\" \
                 xmlns:r=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships\"><sheets>{names}</sheets></workbook>"
            ),
        ),
        ZipEntry::text(
            "xl/_rels/workbook.xml.rels",
            &format!(
                "<?xml version=\"1.0\"?><Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">{rels}</Relationships>"
            ),
        ),
    ];
    entries.extend(sheets);
    entries.extend(extra);
    zip(&entries)
}

/// A one-sheet workbook.
fn xlsx_one(sheet: ZipEntry, extra: Option<ZipEntry>) -> Vec<u8> {
    xlsx_parts(vec![ZipEntry { name: "xl/worksheets/sheet1.xml".to_owned(), ..sheet }], extra)
}

const SHEET_HEAD: &str =
    "<?xml version=\"1.0\"?><worksheet xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\">";

/// A sheet with the given `(cell reference, number)` cells, grouped into rows in order, and an optional
/// `<dimension>` (which may lie).
pub fn xlsx_cells(cells: &[(String, f64)], dimension: Option<&str>) -> Vec<u8> {
    let mut xml = String::from(SHEET_HEAD);
    if let Some(dimension) = dimension {
        xml.push_str(&format!("<dimension ref=\"{dimension}\"/>"));
    }
    xml.push_str("<sheetData>");
    let mut open_row: Option<String> = None;
    for (reference, value) in cells {
        let row: String = reference.chars().filter(char::is_ascii_digit).collect();
        if open_row.as_deref() != Some(&row) {
            if open_row.is_some() {
                xml.push_str("</row>");
            }
            xml.push_str(&format!("<row r=\"{row}\">"));
            open_row = Some(row);
        }
        xml.push_str(&format!("<c r=\"{reference}\"><v>{value}</v></c>"));
    }
    if open_row.is_some() {
        xml.push_str("</row>");
    }
    xml.push_str("</sheetData></worksheet>");
    xlsx_one(ZipEntry::text("sheet", &xml), None)
}

/// A realistic sheet: a header row and `rows` rows of an id, a name, a price and a quantity.
pub fn xlsx_table(rows: u32) -> Vec<u8> {
    let mut xml = String::from(SHEET_HEAD);
    xml.push_str(
        "<sheetData><row r=\"1\"><c r=\"A1\" t=\"inlineStr\"><is><t>id</t></is></c>\
        <c r=\"B1\" t=\"inlineStr\"><is><t>name</t></is></c><c r=\"C1\" t=\"inlineStr\"><is><t>price</t></is></c>\
        <c r=\"D1\" t=\"inlineStr\"><is><t>quantity</t></is></c></row>",
    );
    for n in 2..rows + 2 {
        xml.push_str(&format!(
            "<row r=\"{n}\"><c r=\"A{n}\"><v>{n}</v></c><c r=\"B{n}\" t=\"inlineStr\"><is><t>item {n}</t></is></c>\
             <c r=\"C{n}\"><v>{}.25</v></c><c r=\"D{n}\"><v>{}</v></c></row>",
            n * 3,
            n % 17
        ));
    }
    xml.push_str("</sheetData></worksheet>");
    xlsx_one(ZipEntry::text("sheet", &xml), None)
}

/// One number in column XFD on each of `rows` rows: 16,384 cells emitted per row by a dense reader.
pub fn xlsx_xfd_rows(rows: u32) -> Vec<u8> {
    let cells: Vec<(String, f64)> = (1..=rows).map(|r| (format!("XFD{r}"), 1.0)).collect();
    xlsx_cells(&cells, None)
}

/// A sheet XML that inflates to `inflated` bytes of one-cell rows (no `r` attributes, so a reader counts
/// them itself): a bomb in the worksheet entry rather than in the document of a docx.
pub fn xlsx_sheet_bomb(inflated: u64) -> Vec<u8> {
    let chunk = "<row><c><v>1</v></c></row>".repeat(MIB as usize / 26);
    let data = deflate_repeated(
        format!("{SHEET_HEAD}<sheetData>").as_bytes(),
        chunk.as_bytes(),
        inflated / chunk.len() as u64,
        b"</sheetData></worksheet>",
    );
    xlsx_one(ZipEntry::new("sheet", data), None)
}

/// A one-cell sheet whose `xl/sharedStrings.xml` inflates to `inflated` bytes of strings: read whole when
/// the workbook opens, before any sheet.
pub fn xlsx_shared_strings_bomb(inflated: u64) -> Vec<u8> {
    let sheet =
        format!("{SHEET_HEAD}<sheetData><row r=\"1\"><c r=\"A1\" t=\"s\"><v>0</v></c></row></sheetData></worksheet>");
    let chunk = "<si><t>shared string</t></si>".repeat(MIB as usize / 28);
    let data = deflate_repeated(
        b"<?xml version=\"1.0\"?><sst xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\">",
        chunk.as_bytes(),
        inflated / chunk.len() as u64,
        b"</sst>",
    );
    xlsx_one(ZipEntry::text("sheet", &sheet), Some(ZipEntry::new("xl/sharedStrings.xml", data)))
}

/// `sheets` one-cell sheets: each small, together a long walk.
pub fn xlsx_many_sheets(sheets: usize) -> Vec<u8> {
    let sheet = format!("{SHEET_HEAD}<sheetData><row r=\"1\"><c r=\"A1\"><v>1</v></c></row></sheetData></worksheet>");
    let entries = (1..=sheets).map(|n| ZipEntry::text(&format!("xl/worksheets/sheet{n}.xml"), &sheet)).collect();
    xlsx_parts(entries, None)
}

/// A one-cell sheet whose `xl/styles.xml` (read for number formats, to tell dates) inflates to `inflated`.
pub fn xlsx_styles_bomb(inflated: u64) -> Vec<u8> {
    let sheet =
        format!("{SHEET_HEAD}<sheetData><row r=\"1\"><c r=\"A1\" s=\"0\"><v>1</v></c></row></sheetData></worksheet>");
    let chunk = "<numFmt numFmtId=\"164\" formatCode=\"yyyy-mm-dd\"/>".repeat(MIB as usize / 48);
    let data = deflate_repeated(
        b"<?xml version=\"1.0\"?><styleSheet xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\"><numFmts>",
        chunk.as_bytes(),
        inflated / chunk.len() as u64,
        b"</numFmts></styleSheet>",
    );
    xlsx_one(ZipEntry::text("sheet", &sheet), Some(ZipEntry::new("xl/styles.xml", data)))
}

/// One cell and a merged range over the whole sheet, which a reader that fills merged cells expands.
pub fn xlsx_merged_everything() -> Vec<u8> {
    let sheet = format!(
        "{SHEET_HEAD}<sheetData><row r=\"1\"><c r=\"A1\"><v>1</v></c></row></sheetData>\
         <mergeCells count=\"1\"><mergeCell ref=\"A1:XFD1048576\"/></mergeCells></worksheet>"
    );
    xlsx_one(ZipEntry::text("sheet", &sheet), None)
}

/// The billion laughs: an internal DTD whose entities double ten times over, used in the one text cell (or
/// paragraph). A reader that expands entities builds gigabytes; one that refuses them errs.
fn laughs() -> (String, &'static str) {
    let mut dtd = String::from("<!DOCTYPE x [<!ENTITY l0 \"lol\">");
    for n in 1..=30 {
        dtd.push_str(&format!("<!ENTITY l{n} \"&l{m};&l{m};\">", m = n - 1));
    }
    dtd.push_str("]>");
    (dtd, "&l30;")
}

/// A docx whose paragraph is the billion laughs.
pub fn docx_laughs() -> Vec<u8> {
    let (dtd, entity) = laughs();
    let head = DOCX_HEAD.replacen("?>", &format!("?>{dtd}"), 1);
    docx_parts(ZipEntry::text(
        "word/document.xml",
        &format!("{head}<w:p><w:r><w:t>{entity}</w:t></w:r></w:p>{DOCX_TAIL}"),
    ))
}

/// An xlsx whose shared string is the billion laughs.
pub fn xlsx_laughs() -> Vec<u8> {
    let (dtd, entity) = laughs();
    let sheet =
        format!("{SHEET_HEAD}<sheetData><row r=\"1\"><c r=\"A1\" t=\"s\"><v>0</v></c></row></sheetData></worksheet>");
    let strings = format!(
        "<?xml version=\"1.0\"?>{dtd}<sst xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\"><si><t>{entity}</t></si></sst>"
    );
    xlsx_one(ZipEntry::text("sheet", &sheet), Some(ZipEntry::text("xl/sharedStrings.xml", &strings)))
}

// ---------------------------------------------------------------------------------------------------------
// PDFs, written object by object with a correct cross-reference table.

/// A PDF of `objects` (object `n` is `objects[n - 1]`, a dictionary or a stream), catalog first.
pub fn pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::new();
    for (n, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", n + 1).as_bytes());
        out.extend_from_slice(object);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).as_bytes(),
    );
    out
}

/// A PDF object: a dictionary's text.
fn dict(text: &str) -> Vec<u8> {
    text.as_bytes().to_vec()
}

/// A stream object: its dictionary entries (without `/Length`) and its bytes.
fn stream(entries: &str, data: &[u8]) -> Vec<u8> {
    let mut out = format!("<< {entries} /Length {} >>\nstream\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\nendstream");
    out
}

const CATALOG: &str = "<< /Type /Catalog /Pages 2 0 R >>";
const PAGES: &str = "<< /Type /Pages /Kids [3 0 R] /Count 1 >>";
const FONT: &str = "/Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >>";

/// A one-page PDF whose page (object 3) has `resources` and draws content stream object 4 (`content`,
/// given with its filter entries); `more` objects follow as 5, 6, ...
fn one_page(resources: &str, content: Vec<u8>, more: Vec<Vec<u8>>) -> Vec<u8> {
    let mut objects = vec![
        dict(CATALOG),
        dict(PAGES),
        dict(&format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << {resources} >> /Contents 4 0 R >>"
        )),
        content,
    ];
    objects.extend(more);
    pdf(&objects)
}

/// A realistic one-page PDF: a few lines of text in Helvetica.
pub fn pdf_text(lines: &[&str]) -> Vec<u8> {
    let mut content = String::from("BT /F1 12 Tf 72 720 Td 14 TL\n");
    for line in lines {
        content.push_str(&format!("({line}) Tj T*\n"));
    }
    content.push_str("ET");
    one_page(FONT, stream("", content.as_bytes()), Vec::new())
}

/// The 589-byte PDF: a Form XObject that draws itself.
pub fn pdf_self_drawing_form() -> Vec<u8> {
    one_page(
        "/XObject << /X0 5 0 R >>",
        stream("", b"/X0 Do"),
        vec![stream(
            "/Type /XObject /Subtype /Form /BBox [0 0 10 10] /Resources << /XObject << /X0 5 0 R >> >>",
            b"/X0 Do",
        )],
    )
}

/// Two forms that draw each other: the same loop, two steps long.
pub fn pdf_mutual_forms() -> Vec<u8> {
    let form = |other: u32| {
        stream(
            &format!("/Type /XObject /Subtype /Form /BBox [0 0 10 10] /Resources << /XObject << /Y {other} 0 R >> >>"),
            b"/Y Do",
        )
    };
    one_page("/XObject << /Y 5 0 R >>", stream("", b"/Y Do"), vec![form(6), form(5)])
}

/// The 443-byte PDF: the page is its own `/Parent` (and has no resources of its own, so a reader
/// looks for inherited ones up the parent chain).
pub fn pdf_page_own_parent() -> Vec<u8> {
    pdf(&[dict(CATALOG), dict(PAGES), dict("<< /Type /Page /Parent 3 0 R /Contents 4 0 R >>"), stream("", b"BT ET")])
}

/// A page tree whose node lists itself among its kids.
pub fn pdf_pages_own_kid() -> Vec<u8> {
    pdf(&[
        dict(CATALOG),
        dict("<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>"),
        dict("<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>"),
        stream("", b"BT ET"),
    ])
}

/// A content stream that inflates to `inflated` bytes of spaces (2 GiB from 2 MB in the issue).
pub fn pdf_inflating_stream(inflated: u64) -> Vec<u8> {
    let data = deflate_repeated(b"BT ", &vec![b' '; MIB as usize], inflated / MIB, b" ET");
    one_page(FONT, stream("/Filter /FlateDecode", &data.zlib()), Vec::new())
}

/// The bomb in a stream no page draws (a reader that inflates every stream on load still pays).
pub fn pdf_unreferenced_bomb(inflated: u64) -> Vec<u8> {
    let data = deflate_repeated(b"", &vec![b' '; MIB as usize], inflated / MIB, b"");
    one_page(FONT, stream("", b"BT ET"), vec![stream("/Filter /FlateDecode", &data.zlib())])
}

/// A content stream of `count` `q` operators (each saves the graphics state): 10 M of them in the issue's
/// 20 MB PDF took 5.7 GB. `compressed` packs them into a few kilobytes instead.
pub fn pdf_many_q(count: u64, compressed: bool) -> Vec<u8> {
    let content = if compressed {
        let data = deflate_repeated(b"", &b"q ".repeat(MIB as usize / 2), count / (MIB / 2), b"");
        stream("/Filter /FlateDecode", &data.zlib())
    } else {
        stream("", &b"q ".repeat(count as usize))
    };
    one_page(FONT, content, Vec::new())
}

/// An object stream (`/Type /ObjStm`) that inflates to `inflated` bytes: parsed when the file is loaded.
pub fn pdf_object_stream_bomb(inflated: u64) -> Vec<u8> {
    let data = deflate_repeated(b"6 0 ", &vec![b' '; MIB as usize], inflated / MIB, b"<< /A 1 >>");
    one_page(FONT, stream("", b"BT ET"), vec![stream("/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode", &data.zlib())])
}

/// Arrays nested `depth` deep in the page's resources: an object parser that recurses overflows.
pub fn pdf_nested_arrays(depth: usize) -> Vec<u8> {
    let nested = format!("/Deep {}{}", "[".repeat(depth), "]".repeat(depth));
    one_page(&format!("{FONT} {nested}"), stream("", b"BT ET"), Vec::new())
}

/// A content stream inflated through two `FlateDecode` layers: a few kilobytes for `inflated` bytes, since
/// the inner stream's repeated blocks deflate again to almost nothing.
pub fn pdf_double_flate(inflated: u64) -> Vec<u8> {
    let inner = deflate_repeated(b"BT ", &vec![b' '; MIB as usize], inflated / MIB, b" ET").zlib();
    let outer = deflate(&inner).zlib();
    one_page(FONT, stream("/Filter [/FlateDecode /FlateDecode]", &outer), Vec::new())
}

/// A page tree of one node listing the same text page `count` times: every listing is a page to extract.
pub fn pdf_repeated_kid(count: usize) -> Vec<u8> {
    let kids = "3 0 R ".repeat(count);
    pdf(&[
        dict(CATALOG),
        dict(&format!("<< /Type /Pages /Kids [{kids}] /Count {count} >>")),
        dict(&format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << {FONT} >> /Contents 4 0 R >>"
        )),
        stream("", format!("BT /F1 12 Tf 72 720 Td ({}) Tj ET", "page text ".repeat(100)).as_bytes()),
    ])
}

/// Arrays nested `depth` deep inside a content stream (a `TJ` operand): the content parser's recursion.
pub fn pdf_content_nested_arrays(depth: usize) -> Vec<u8> {
    let content = format!("BT /F1 12 Tf {}(x){} TJ ET", "[".repeat(depth), "]".repeat(depth));
    one_page(FONT, stream("", content.as_bytes()), Vec::new())
}

/// Dictionaries nested `depth` deep in the page's resources.
pub fn pdf_nested_dicts(depth: usize) -> Vec<u8> {
    let nested = format!("/Deep {}1{}", "<< /A ".repeat(depth), " >>".repeat(depth));
    one_page(&format!("{FONT} {nested}"), stream("", b"BT ET"), Vec::new())
}

// ---------------------------------------------------------------------------------------------------------
// Notebooks, pages, JSON, sources.

/// A notebook whose first cell's metadata nests arrays `depth` deep.
pub fn notebook_deep(depth: usize) -> Vec<u8> {
    format!(
        "{{\"cells\":[{{\"cell_type\":\"code\",\"metadata\":{{\"x\":{}{}}},\"source\":[\"1\"],\"outputs\":[],\"execution_count\":1}}],\"metadata\":{{}},\"nbformat\":4,\"nbformat_minor\":5}}",
        "[".repeat(depth),
        "]".repeat(depth)
    )
    .into_bytes()
}

/// A notebook whose pretty-printed form grows with depth × width: `width` numbers, `depth` arrays deep,
/// each on its own line behind `depth` spaces when printed with Cline's one-space indent.
pub fn notebook_wide_deep(depth: usize, width: usize) -> Vec<u8> {
    format!(
        "{{\"cells\":[{{\"cell_type\":\"markdown\",\"metadata\":{{\"x\":{}{}{}}},\"source\":[\"wide\"]}}],\"metadata\":{{}},\"nbformat\":4,\"nbformat_minor\":5}}",
        "[".repeat(depth),
        vec!["0"; width].join(","),
        "]".repeat(depth)
    )
    .into_bytes()
}

/// `count` nested elements of one kind: `open` repeated, a word, `close` repeated.
pub fn nested_html(open: &str, close: &str, count: usize) -> String {
    format!("<!DOCTYPE html><html><body>{}deep{}</body></html>", open.repeat(count), close.repeat(count))
}

/// The nesting kinds web_fetch's conversion must survive: the and more.
pub const NESTING_KINDS: &[(&str, &str, &str)] = &[
    ("b", "<b>", "</b>"),
    ("div", "<div>", "</div>"),
    ("ul-li", "<ul><li>", "</li></ul>"),
    ("blockquote", "<blockquote>", "</blockquote>"),
    ("table", "<table><tr><td>", "</td></tr></table>"),
    ("strong-unclosed", "<strong>", ""),
    ("template", "<template>", "</template>"),
    ("svg-g", "<svg><g>", "</g></svg>"),
    ("span", "<span>", "</span>"),
    ("em", "<em>", "</em>"),
    ("a", "<a href=\"#x\">", "</a>"),
    ("ol-li", "<ol><li>", "</li></ol>"),
    ("section", "<section>", "</section>"),
    ("font", "<font color=red>", "</font>"),
    ("pre-code", "<pre><code>", "</code></pre>"),
    ("dl-dd", "<dl><dd>", "</dd></dl>"),
    ("details", "<details><summary>s</summary>", "</details>"),
    ("sup", "<sup>", "</sup>"),
];

/// A minified source: `count` top-level functions on one line, in `language`'s syntax (by extension).
pub fn minified(extension: &str, count: usize) -> String {
    let one = |n: usize| match extension {
        "js" | "ts" => format!("function f{n}(a){{return a}}"),
        "rs" => format!("fn f{n}(a:u8)->u8{{a}}"),
        "go" => format!("func F{n}(a int)int{{return a}};"),
        "c" | "cpp" => format!("int f{n}(int a){{return a;}}"),
        "java" => format!("int f{n}(int a){{return a;}}"),
        "php" => format!("function f{n}($a){{return $a;}}"),
        "rb" => format!("def f{n}(a);a;end;"),
        other => panic!("no minified form for .{other}"),
    };
    let body: String = (0..count).map(one).collect();
    match extension {
        "go" => format!("package p;{body}\n"),
        "java" => format!("class C{{{body}}}\n"),
        "php" => format!("<?php {body}\n"),
        _ => format!("{body}\n"),
    }
}

// ---------------------------------------------------------------------------------------------------------
// A server for the pages.

/// What the server answers on a path.
pub struct Page {
    pub content_type: &'static str,
    /// More header lines, each ending in CRLF.
    pub headers: String,
    pub body: Vec<u8>,
    /// Sent again and again, with no length, until the client hangs up.
    pub endless: bool,
}

impl Page {
    pub fn new(content_type: &'static str, body: Vec<u8>) -> Page {
        Page { content_type, headers: String::new(), body, endless: false }
    }
}

impl From<(&'static str, Vec<u8>)> for Page {
    fn from((content_type, body): (&'static str, Vec<u8>)) -> Page {
        Page::new(content_type, body)
    }
}

/// A gzip member (RFC 1952) of a deflate stream.
pub fn gzip(data: &Deflated) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    out.extend_from_slice(&data.raw);
    out.extend_from_slice(&data.crc.to_le_bytes());
    out.extend_from_slice(&(data.len as u32).to_le_bytes());
    out
}

/// A real HTTP/1.1 server on 127.0.0.1 serving fixed bodies by path, one thread per connection.
pub struct PageServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl PageServer {
    pub fn start<P: Into<Page>>(pages: HashMap<String, P>) -> PageServer {
        let pages: HashMap<String, Page> = pages.into_iter().map(|(path, page)| (path, page.into())).collect();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (pages, stopped) = (Arc::new(pages), Arc::clone(&stop));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let (Ok(stream), pages) = (stream, Arc::clone(&pages)) else { continue };
                std::thread::spawn(move || serve_page(stream, &pages));
            }
        });
        PageServer { addr, stop }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve_page(stream: TcpStream, pages: &HashMap<String, Page>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
    }
    let mut stream = stream;
    let Some(page) = pages.get(&path) else {
        let _ = stream.write_all(b"HTTP/1.1 404 X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    };
    let length = if page.endless { String::new() } else { format!("Content-Length: {}\r\n", page.body.len()) };
    let head = format!(
        "HTTP/1.1 200 X\r\nContent-Type: {}\r\n{}{length}Connection: close\r\n\r\n",
        page.content_type, page.headers
    );
    let _ = stream.write_all(head.as_bytes());
    while stream.write_all(&page.body).is_ok() && page.endless {}
}

// ---------------------------------------------------------------------------------------------------------
// The suite.

/// One hostile call and what to check beside its bound.
pub struct HostileCall {
    /// The fixture's name, for failure messages.
    pub label: String,
    pub tool: &'static str,
    pub args: Value,
    /// A file where a hook wrote its pid: that process must be gone once the call has answered.
    pub pid_file: Option<PathBuf>,
}

/// Every hostile fixture laid out on disk, the server for the pages, and the config that points the host at
/// them.
pub struct Suite {
    pub workspace: tempfile::TempDir,
    pub home: tempfile::TempDir,
    /// The skills and hook scripts live outside the workspace.
    pub outside: tempfile::TempDir,
    pub config: PathBuf,
    pub calls: Vec<HostileCall>,
    _server: PageServer,
}

/// The plain call every hostile one is followed by, and the text it must answer.
pub const PLAIN_FILE: &str = "plain.txt";
pub const PLAIN_TEXT: &str = "1 | hello after the storm";

/// The plain call's arguments.
pub fn plain_args() -> Value {
    json!({ "path": PLAIN_FILE })
}

/// The child-process jobs' CPU and wall-clock limits: small, so a parser that loops is ended quickly.
pub const ISOLATION_MS: u64 = 4_000;

/// The hooks' timeout: small, so hooks that overrun are ended quickly.
pub const HOOK_TIMEOUT_MS: u64 = 2000;

fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

impl Suite {
    /// Builds every fixture. `web_fetch` needs a direct backend that may fetch 127.0.0.1; hooks and skills
    /// are configured in the config file the host is started with.
    pub fn build() -> Suite {
        let workspace = crate::util::workspace();
        let home = crate::util::workspace();
        let outside = crate::util::workspace();
        let ws = workspace.path();
        let mut calls = Vec::new();
        let mut call = |label: &str, tool: &'static str, args: Value| {
            calls.push(HostileCall { label: label.to_owned(), tool, args, pid_file: None });
        };
        write(&ws.join(PLAIN_FILE), "hello after the storm\n");

        // read_file: documents.
        let documents: Vec<(&str, Vec<u8>)> = vec![
            ("self-drawing-form.pdf", pdf_self_drawing_form()),
            ("mutual-forms.pdf", pdf_mutual_forms()),
            ("page-own-parent.pdf", pdf_page_own_parent()),
            ("pages-own-kid.pdf", pdf_pages_own_kid()),
            ("inflating-2gib.pdf", pdf_inflating_stream(2048 * MIB)),
            ("unreferenced-bomb.pdf", pdf_unreferenced_bomb(2048 * MIB)),
            ("object-stream-bomb.pdf", pdf_object_stream_bomb(2048 * MIB)),
            ("many-q-compressed.pdf", pdf_many_q(50_000_000, true)),
            ("many-q-plain.pdf", pdf_many_q(9_000_000, false)),
            ("nested-arrays.pdf", pdf_nested_arrays(100_000)),
            ("bomb-3gib.docx", docx_bomb(3072 * MIB, false)),
            ("bomb-lying-header.docx", docx_bomb(3072 * MIB, true)),
            ("nested-sdt.docx", docx_nested(100_000)),
            ("a1-xfd1048576.xlsx", xlsx_cells(&[("A1".into(), 1.0), ("XFD1048576".into(), 2.0)], None)),
            ("a1-cv1048576.xlsx", xlsx_cells(&[("A1".into(), 1.0), ("CV1048576".into(), 2.0)], None)),
            ("lying-dimension.xlsx", xlsx_cells(&[("A1".into(), 1.0)], Some("A1:XFD1048576"))),
            ("xfd-50000-rows.xlsx", xlsx_xfd_rows(50_000)),
            ("sheet-bomb.xlsx", xlsx_sheet_bomb(3072 * MIB)),
            ("shared-strings-bomb.xlsx", xlsx_shared_strings_bomb(3072 * MIB)),
            ("double-flate.pdf", pdf_double_flate(4096 * MIB)),
            ("repeated-kid.pdf", pdf_repeated_kid(200_000)),
            ("content-nested-arrays.pdf", pdf_content_nested_arrays(100_000)),
            ("nested-dicts.pdf", pdf_nested_dicts(100_000)),
            ("laughs.docx", docx_laughs()),
            ("laughs.xlsx", xlsx_laughs()),
            ("many-sheets.xlsx", xlsx_many_sheets(5_000)),
            ("styles-bomb.xlsx", xlsx_styles_bomb(3072 * MIB)),
            ("merged-everything.xlsx", xlsx_merged_everything()),
            ("deep.ipynb", notebook_deep(100_000)),
            ("wide-deep.ipynb", notebook_wide_deep(120, 9_000_000)),
        ];
        for (name, bytes) in documents {
            write(&ws.join("docs").join(name), bytes);
            call(&format!("read_file {name}"), "read_file", json!({ "path": format!("docs/{name}") }));
        }

        // list_code_definition_names: minified sources, one directory per language so each call is one
        // language's worst case (5,000 functions in 89 KB returned 444 MB; 369 KB aborted).
        for extension in ["js", "ts", "rs", "go", "c", "cpp", "java", "php", "rb"] {
            write(&ws.join("minified").join(extension).join(format!("min.{extension}")), minified(extension, 20_000));
            call(
                &format!("list_code_definition_names minified .{extension}"),
                "list_code_definition_names",
                json!({ "path": format!("minified/{extension}") }),
            );
        }
        let mut deep_js = String::from("var x = ");
        deep_js.push_str(&"(".repeat(100_000));
        deep_js.push('1');
        deep_js.push_str(&")".repeat(100_000));
        deep_js.push_str(";\nfunction after() {}\n");
        write(&ws.join("deep-js/deep.js"), deep_js);
        call("list_code_definition_names deeply nested js", "list_code_definition_names", json!({ "path": "deep-js" }));

        // search_files: one 10 MB line, and 40 lines of 1 MB each, all matching.
        let mut long = b"needle ".to_vec();
        long.resize(10 * MIB as usize, b'x');
        long.push(b'\n');
        write(&ws.join("long/one-line.txt"), &long);
        write(&ws.join("long/many-lines.txt"), format!("needle {}\n", "y".repeat(MIB as usize)).repeat(40));
        call("search_files one 10 MB line", "search_files", json!({ "path": "long", "regex": "needle" }));
        call("search_files a match in every long line", "search_files", json!({ "path": "long", "regex": "y+" }));

        // web_fetch: pages on 127.0.0.1.
        let mut pages: HashMap<String, Page> = HashMap::new();
        let mut paths = Vec::new();
        for (n, (kind, open, close)) in NESTING_KINDS.iter().enumerate() {
            // Every kind at the 2,000; the first few also at 100,000 (each of those costs the child
            // its whole timeout in a debug build).
            let counts: &[usize] = if n < 8 { &[2_000, 100_000] } else { &[2_000] };
            for &count in counts {
                let path = format!("/nested/{kind}/{count}");
                pages.insert(
                    path.clone(),
                    Page::new("text/html; charset=utf-8", nested_html(open, close, count).into_bytes()),
                );
                paths.push(path);
            }
        }
        let json_pages: Vec<(&str, Vec<u8>)> = vec![
            ("/json/brackets-40k", "[".repeat(40_000).into_bytes()),
            ("/json/closed-brackets", format!("{}{}", "[".repeat(40_000), "]".repeat(40_000)).into_bytes()),
            ("/json/objects", format!("{}1{}", "{\"a\":".repeat(40_000), "}".repeat(40_000)).into_bytes()),
            (
                "/json/wide-deep",
                format!("{}{}{}", "[".repeat(100), vec!["0"; 4_000_000].join(","), "]".repeat(100)).into_bytes(),
            ),
        ];
        for (path, body) in json_pages {
            pages.insert(path.to_owned(), Page::new("application/json", body));
            paths.push(path.to_owned());
        }
        // A body that never ends, and a gzip bomb the client would inflate if it decoded bodies.
        let endless = Page { endless: true, ..Page::new("text/html", "<div>".repeat(10_000).into_bytes()) };
        pages.insert("/endless".to_owned(), endless);
        let bomb = gzip(&deflate_repeated(b"<html><body>", &vec![b' '; MIB as usize], 4096, b"</body></html>"));
        let bomb = Page { headers: "Content-Encoding: gzip\r\n".to_owned(), ..Page::new("text/html", bomb) };
        pages.insert("/gzip-bomb".to_owned(), bomb);
        paths.extend(["/endless".to_owned(), "/gzip-bomb".to_owned()]);
        let server = PageServer::start(pages);
        for path in paths {
            call(&format!("web_fetch {path}"), "web_fetch", json!({ "url": server.url(&path), "prompt": "Summarize" }));
        }

        // use_skill: SKILL.md linked to /dev/zero, a FIFO, a sparse gigabyte, a link out of its directory, a
        // directory; and one good skill beside them, which must still load.
        let skills = outside.path().join("skills");
        let skill_md = |name: &str| skills.join(name).join("SKILL.md");
        let good = "---\nname: good\ndescription: A good skill\n---\n\nDo good things.\n";
        write(&skill_md("good"), good);
        std::fs::create_dir_all(skills.join("zero")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", skill_md("zero")).unwrap();
        std::fs::create_dir_all(skills.join("fifo")).unwrap();
        let made = std::process::Command::new("mkfifo").arg(skill_md("fifo")).status().unwrap();
        assert!(made.success(), "mkfifo");
        std::fs::create_dir_all(skills.join("sparse")).unwrap();
        let sparse = std::fs::File::create(skill_md("sparse")).unwrap();
        sparse.set_len(1024 * MIB).unwrap();
        std::fs::create_dir_all(skills.join("outside")).unwrap();
        write(&outside.path().join("secret.md"), "---\nname: outside\ndescription: leaked\n---\n\nSECRET\n");
        std::os::unix::fs::symlink(outside.path().join("secret.md"), skill_md("outside")).unwrap();
        std::fs::create_dir_all(skill_md("directory")).unwrap();
        std::os::unix::fs::symlink("/dev/urandom", skills.join("urandom-dir")).unwrap();
        std::fs::create_dir_all(skills.join("loop")).unwrap();
        std::os::unix::fs::symlink("SKILL.md", skill_md("loop")).unwrap();
        std::os::unix::fs::symlink(&skills, skills.join("root-again")).unwrap();
        for name in ["zero", "fifo", "sparse", "outside", "directory", "urandom-dir", "loop", "root-again"] {
            call(&format!("use_skill {name}"), "use_skill", json!({ "skill_name": name }));
        }

        // Hooks: one hostile PreToolUse hook per tool, matched by name, on tools that end quickly on their
        // own (this host offers them no service). Each input is over a pipe's 64 KiB where that matters.
        let big = "c".repeat(200 * 1024);
        let hooks = outside.path().join("hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        let pid = |name: &str| hooks.join(format!("{name}.pid"));
        let mut hook_entries = Vec::new();
        let mut hook = |tool: &'static str, command: String, args: Value, pid_file: Option<PathBuf>| {
            hook_entries.push(format!("{{ matcher = \"^{tool}$\", command = {command:?} }}"));
            calls.push(HostileCall { label: format!("hook on {tool}: {command}"), tool, args, pid_file });
        };
        // Never reads stdin and exits at once: the host's write of 200 KB meets a closed pipe (SIGPIPE).
        hook("new_task", "exit 2".to_owned(), json!({ "context": big }), None);
        // Prints 300 KB before reading a 200 KB input: both sides block on full pipes.
        hook(
            "condense",
            "head -c 300000 /dev/zero | tr '\\000' x; cat > /dev/null; exit 2".to_owned(),
            json!({ "context": big }),
            None,
        );
        // Ignores stdin and sleeps: must be killed at the timeout.
        let sleeper = pid("sleep");
        hook(
            "summarize_task",
            format!("echo $$ > '{}'; exec sleep 1000", sleeper.display()),
            json!({ "context": "x" }),
            Some(sleeper),
        );
        // Endless output.
        hook(
            "report_bug",
            "yes".to_owned(),
            json!({ "title": "t", "what_happened": "w", "steps_to_reproduce": "s", "api_request_output": "a", "additional_context": "c" }),
            None,
        );
        // Closes its stdout and stderr at once, then keeps running: the output ends, the process does not.
        let closer = pid("closer");
        hook(
            "generate_explanation",
            format!("echo $$ > '{}'; exec sleep 1000 >&- 2>&-", closer.display()),
            json!({ "title": "t", "from_ref": "HEAD" }),
            Some(closer),
        );
        // Exits at once but leaves a child holding its stdout open: the output never ends by itself.
        let orphan = pid("orphan");
        hook(
            "load_mcp_documentation",
            format!("sleep 1000 & echo $! > '{}'; exit 0", orphan.display()),
            json!({}),
            Some(orphan),
        );

        // Leaves a child in a session of its own holding its stdout: out of the hook's process group.
        let escapee = pid("escapee");
        hook(
            "access_mcp_resource",
            format!("setsid sleep 1000 & echo $! > '{}'; exit 0", escapee.display()),
            json!({ "server_name": "none", "uri": "file:///x" }),
            Some(escapee),
        );
        // A PostToolUse hook that never reads, on the searches whose answers are hundreds of kilobytes.
        let post_entry = "{ matcher = \"^search_files$\", command = \"exit 0\" }";

        let config = outside.path().join("config.toml");
        write(
            &config,
            format!(
                "[web]\nbackend = \"direct\"\nenabled = true\nallowed_hosts = [\"127.0.0.1\"]\n\n\
                 [isolation]\nmemory_mb = 1024\ncpu_ms = {ISOLATION_MS}\ntimeout_ms = {ISOLATION_MS}\n\n\
                 [skills]\ndirs = [{:?}]\n\n[hooks]\ntimeout_ms = {HOOK_TIMEOUT_MS}\npre_tool_use = [\n  {}\n]\npost_tool_use = [{post_entry}]\n",
                skills.display().to_string(),
                hook_entries.join(",\n  ")
            ),
        );
        Suite { workspace, home, outside, config, calls, _server: server }
    }
}

/// Whether the process a hook recorded in `pid_file` is gone; waits a generous bound,
/// since the host may answer the call before its reaper has run.
pub fn hook_process_gone(pid_file: &Path) -> Result<(), String> {
    // The hook ran before the call answered, so its pid is there; without it the check would prove nothing.
    let text = std::fs::read_to_string(pid_file).map_err(|e| format!("the hook never ran ({e})"))?;
    let pid: i32 = text.trim().parse().map_err(|_| format!("the hook wrote {text:?} for its pid"))?;
    for _ in 0..600 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Gone, or a zombie whose parent has yet to reap it (it no longer runs).
        if stat.is_empty() || stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')) {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Err(format!("the hook's process {pid} still runs after its call answered"))
}

/// The peak resident set of process `pid` in KiB (`VmHWM`).
pub fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// What a tool call answered, as an MCP client sees it.
#[derive(Debug)]
pub struct Answer {
    pub is_error: bool,
    /// Every text block, joined.
    pub text: String,
}

impl Answer {
    /// From a `tools/call` result.
    pub fn from_result(result: &Value) -> Answer {
        let text = result["content"]
            .as_array()
            .map(|blocks| blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join(""))
            .unwrap_or_default();
        Answer { is_error: result["isError"].as_bool().unwrap_or(false), text }
    }
}

/// A hostile call's answer is a tool error or a result under [`RESULT_BOUND`], and a hook it started is gone.
pub fn check_hostile(call: &HostileCall, answer: &Answer) -> Result<(), String> {
    if answer.text.len() > RESULT_BOUND {
        return Err(format!(
            "{}: {} bytes answered (error: {}), over the bound of {RESULT_BOUND}",
            call.label,
            answer.text.len(),
            answer.is_error
        ));
    }
    match &call.pid_file {
        Some(pid_file) => hook_process_gone(pid_file).map_err(|e| format!("{}: {e}", call.label)),
        None => Ok(()),
    }
}

/// The plain call's answer is the small file's text.
pub fn check_plain(after: &str, answer: &Answer) -> Result<(), String> {
    if answer.is_error || !answer.text.contains(PLAIN_TEXT) {
        return Err(format!("the plain read after {after} answered {answer:?}"));
    }
    Ok(())
}

/// The last `max` bytes of a file (a server's stderr, for failure messages).
pub fn tail(path: &Path, max: usize) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    String::from_utf8_lossy(&text[text.len().saturating_sub(max)..]).into_owned()
}

/// The generators' shapes reach the parsers: small instances inflate to what they claim and read as the
/// documents they are.
#[test]
fn generators_make_valid_files() {
    use flate2::read::{DeflateDecoder, ZlibDecoder};
    let data = deflate_repeated(b"head ", b"chunk ", 1000, b"tail");
    let expected = format!("head {}tail", "chunk ".repeat(1000));
    let mut inflated = String::new();
    DeflateDecoder::new(data.raw.as_slice()).read_to_string(&mut inflated).unwrap();
    assert_eq!(inflated, expected);
    let mut inflated = String::new();
    ZlibDecoder::new(data.zlib().as_slice()).read_to_string(&mut inflated).unwrap();
    assert_eq!(inflated, expected);
    assert_eq!(data.crc, crc32fast::hash(expected.as_bytes()));

    let archive = zip(&[ZipEntry::new("a.txt", data)]);
    let mut archive = ::zip::ZipArchive::new(std::io::Cursor::new(archive)).unwrap();
    let mut entry = String::new();
    archive.by_name("a.txt").unwrap().read_to_string(&mut entry).unwrap();
    assert_eq!(entry, expected);

    let ws = crate::util::workspace();
    write(&ws.path().join("a.docx"), docx(&["first paragraph", "second"]));
    write(&ws.path().join("a.xlsx"), xlsx_table(3));
    write(&ws.path().join("a.pdf"), pdf_text(&["Hello from a generated PDF", "second line"]));
    write(&ws.path().join("a.ipynb"), notebook_deep(3));
    let runtime = toolshed::Runtime::builder()
        .plugin_file(crate::util::plugins().join(crate::util::lib("read_file")))
        .build()
        .unwrap();
    let task = crate::util::task_in(&runtime, ws.path());
    let read = |path: &str| crate::util::text(&crate::util::call(&task, "read_file", json!({ "path": path })));
    assert!(read("a.docx").contains("1 | first paragraph"), "{}", read("a.docx"));
    let sheet = read("a.xlsx");
    assert!(sheet.contains("id\tname\tprice\tquantity") && sheet.contains("4\titem 4\t12.25\t4"), "{sheet}");
    assert!(read("a.pdf").contains("Hello from a generated PDF"), "{}", read("a.pdf"));
    assert!(read("a.ipynb").contains("[\n"), "{}", read("a.ipynb"));
}
