//! The text of a PDF, by pdf-extract, with the document checked against the limits first.
//!
//! pdf-extract (over lopdf) inflates every stream it touches with no limit, follows a page's `/Parent` until
//! it finds what it looks for, recurses once per drawing (XObject) a drawing draws, and keeps a copy of the
//! graphics state per `q`. None of that can be bounded from outside, so the file is checked before it is
//! handed over, in two passes:
//!
//! 1. Before lopdf parses anything, every `stream` in the raw bytes is inflated into nothing, counting
//!    (object streams are inflated while lopdf loads the file, so this is the only chance to see them).
//! 2. After loading (and decrypting), every stream's data again, then the page tree and the drawings as
//!    pdf-extract will walk them: a page tree that loops, a drawing that draws itself, drawings nested too
//!    deep, content streams with too many objects or too deep a stack of graphics states.
//!
//! What still gets past (an LZW bomb, recursion inside a font) is left to the child process the extraction
//! runs in, whose memory, CPU time and stack are bounded.

use super::limits::{Amount, CappedText, DocumentLimits, Failure};
use flate2::read::{DeflateDecoder, ZlibDecoder};
use pdf_extract::{Dictionary, Document, Object, ObjectId};
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::io::Read;

/// The zlib layers followed inside one stream (a filter chain of `FlateDecode`s inflates each layer whole).
const LAYERS: u8 = 4;

/// The text of a PDF's pages.
pub(crate) fn pdf_text(bytes: &[u8], limits: &DocumentLimits) -> Result<String, Failure> {
    check_raw_streams(bytes, limits)?;
    let mut doc = Document::load_mem(bytes).map_err(|e| Failure::damaged(pdf_extract::OutputError::from(e)))?;
    if doc.is_encrypted() {
        // pdf-extract's own `extract_text_from_mem` tries the empty password too.
        doc.decrypt("").map_err(|e| Failure::damaged(pdf_extract::OutputError::from(e)))?;
    }
    check_document(&doc, limits)?;
    let mut text = CappedText::new(limits.max_document_text_bytes);
    let outcome = {
        let writer: &mut dyn std::io::Write = &mut text;
        let mut output = pdf_extract::PlainTextOutput::new(writer);
        pdf_extract::output_doc(&doc, &mut output)
    };
    match outcome {
        Ok(()) => Ok(text.finish()),
        // The text reached its cap: what came before it is the answer.
        Err(_) if text.is_cut() => Ok(text.finish()),
        Err(e) => Err(Failure::damaged(e)),
    }
}

/// Pass 1: each `stream` keyword of the raw file, followed by lopdf's end of line, starts data that is
/// inflated to the end of its zlib stream.
fn check_raw_streams(bytes: &[u8], limits: &DocumentLimits) -> Result<(), Failure> {
    let mut total = 0u64;
    for at in memchr::memmem::find_iter(bytes, b"stream") {
        // `endstream` ends data; it starts none.
        if at > 0 && bytes[at - 1].is_ascii_alphabetic() {
            continue;
        }
        let mut start = at + b"stream".len();
        while matches!(bytes.get(start), Some(b' ' | b'\t')) {
            start += 1;
        }
        match bytes.get(start..start + 2) {
            Some(b"\r\n") => start += 2,
            Some([b'\n' | b'\r', _]) => start += 1,
            _ => continue,
        }
        let size = inflated_len(&bytes[start..], limits.max_document_part_bytes, true);
        count_stream(size, &mut total, limits, "a stream of the PDF")?;
    }
    Ok(())
}

fn count_stream(size: u64, total: &mut u64, limits: &DocumentLimits, subject: &str) -> Result<(), Failure> {
    if size > limits.max_document_part_bytes {
        return Err(Failure::over(
            &format!("{subject} expands to"),
            Amount::Bytes(limits.max_document_part_bytes),
            "max_document_part_bytes",
        ));
    }
    *total = total.saturating_add(size);
    if *total > limits.max_document_unpacked_bytes {
        return Err(Failure::over(
            "the document expands to",
            Amount::Bytes(limits.max_document_unpacked_bytes),
            "max_document_unpacked_bytes",
        ));
    }
    Ok(())
}

/// What `data` inflates to, at most a little past `limit`: through every zlib layer, the largest layer
/// counted (lopdf holds each whole). Data without a zlib header gets lopdf's fallback, raw deflate after two
/// bytes, when `fallback` is set; data that is not compressed counts nothing.
fn inflated_len(data: &[u8], limit: u64, fallback: bool) -> u64 {
    if zlib_header(data) {
        layered(Box::new(ZlibDecoder::new(data)), limit, LAYERS)
    } else if fallback && data.len() > 2 {
        layered(Box::new(DeflateDecoder::new(&data[2..])), limit, LAYERS)
    } else {
        0
    }
}

/// A zlib header: deflate, a valid check, no preset dictionary (with one, zlib fails at once and lopdf falls
/// back to raw deflate).
fn zlib_header(data: &[u8]) -> bool {
    match data {
        [cmf, flg, ..] => {
            cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0 && flg & 0x20 == 0
        }
        _ => false,
    }
}

/// One layer (boxed: each layer's reader wraps the one before it).
fn layered(reader: Box<dyn Read + '_>, limit: u64, layers: u8) -> u64 {
    let count = Cell::new(0u64);
    let mut counted = Counted { inner: reader, count: &count, limit };
    let mut head = [0u8; 2];
    let mut got = 0;
    while got < 2 {
        match counted.read(&mut head[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    if layers > 1 && got == 2 && zlib_header(&head) {
        let inner = layered(Box::new(ZlibDecoder::new((&head[..]).chain(counted))), limit, layers - 1);
        return inner.max(count.get());
    }
    let mut sink = [0u8; 16 * 1024];
    // A damaged stream counts what inflated before the damage, as lopdf keeps it.
    while let Ok(n) = counted.read(&mut sink) {
        if n == 0 {
            break;
        }
    }
    count.get()
}

/// Counts what passes through, and ends the stream once the count is past the limit.
struct Counted<'c, R> {
    inner: R,
    count: &'c Cell<u64>,
    limit: u64,
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.count.get() > self.limit {
            return Ok(0);
        }
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// Pass 2, on the loaded document.
fn check_document(doc: &Document, limits: &DocumentLimits) -> Result<(), Failure> {
    let mut total = 0u64;
    for object in doc.objects.values() {
        let Object::Stream(stream) = object else { continue };
        let flate = stream.filters().is_ok_and(|filters| filters.iter().any(|f| *f == b"FlateDecode" || *f == b"Fl"));
        if flate {
            let size = inflated_len(&stream.content, limits.max_document_part_bytes, true);
            count_stream(size, &mut total, limits, "a stream of the PDF")?;
        }
    }
    let pages = doc.get_pages();
    if pages.len() as u64 > limits.max_pdf_pages {
        return Err(Failure::over("the PDF has", Amount::Count(limits.max_pdf_pages, "pages"), "max_pdf_pages"));
    }
    let empty = Dictionary::new();
    let mut walk = Walk { doc, limits, scans: HashMap::new(), costs: HashMap::new(), drawing: Vec::new() };
    let mut objects = 0u64;
    for (&number, &page_id) in &pages {
        let resources = page_resources(doc, page_id, number)?.unwrap_or(&empty);
        let content = doc.get_page_content(page_id).unwrap_or_default();
        let scan = scan_content(&content, limits)?;
        objects = objects.saturating_add(scan.objects);
        for name in &scan.drawn {
            if let Some(id) = xobject(doc, resources, name) {
                objects = objects.saturating_add(walk.cost(id, resources, 1)?);
            }
        }
        walk.check_total(objects)?;
    }
    Ok(())
}

/// A page's resources as pdf-extract finds them: its own, else its nearest ancestor's; the page tree walked
/// to its root, since pdf-extract's search up the tree for a missing key never ends when it loops; and the
/// media box pdf-extract requires.
fn page_resources(doc: &Document, page_id: ObjectId, number: u32) -> Result<Option<&Dictionary>, Failure> {
    let mut seen = HashSet::from([page_id]);
    let mut resources = None;
    let mut media_box = None;
    let mut node = doc.get_dictionary(page_id).ok();
    while let Some(dict) = node {
        let inherited = |key: &[u8]| dict.get(key).ok().and_then(|o| doc.dereference(o).ok()).map(|(_, o)| o);
        resources = resources.or_else(|| inherited(b"Resources").and_then(|o| o.as_dict().ok()));
        media_box = media_box.or_else(|| inherited(b"MediaBox").and_then(|o| o.as_array().ok()));
        let Ok(parent) = dict.get(b"Parent").and_then(Object::as_reference) else { break };
        if !seen.insert(parent) {
            return Err(Failure::Damaged(format!("the page tree loops: page {number} is its own ancestor")));
        }
        node = doc.get_dictionary(parent).ok();
    }
    // pdf-extract insists on four numbers, and panics without them.
    let is_number = |n: &Object| doc.dereference(n).is_ok_and(|(_, n)| n.as_float().is_ok());
    if media_box.map_or(0, |numbers| numbers.iter().filter(|n| is_number(n)).count()) < 4 {
        return Err(Failure::Damaged(format!("page {number} has no media box (/MediaBox) of four numbers")));
    }
    Ok(resources)
}

/// The stream a `/name Do` draws, looked up as pdf-extract does.
fn xobject(doc: &Document, resources: &Dictionary, name: &[u8]) -> Option<ObjectId> {
    let (_, xobjects) = doc.dereference(resources.get(b"XObject").ok()?).ok()?;
    xobjects.as_dict().ok()?.get(name).ok()?.as_reference().ok()
}

/// The drawings pdf-extract will walk, each costed once per stream and resources it is drawn with.
struct Walk<'d> {
    doc: &'d Document,
    limits: &'d DocumentLimits,
    scans: HashMap<ObjectId, std::rc::Rc<ContentScan>>,
    costs: HashMap<(ObjectId, *const Dictionary), u64>,
    drawing: Vec<ObjectId>,
}

impl<'d> Walk<'d> {
    /// The objects parsed to draw `id` once with `resources`, its own drawings included.
    fn cost(&mut self, id: ObjectId, resources: &'d Dictionary, depth: u64) -> Result<u64, Failure> {
        if self.drawing.contains(&id) {
            return Err(Failure::Damaged(format!("drawing {} {} R draws itself", id.0, id.1)));
        }
        if depth > self.limits.max_pdf_form_depth {
            return Err(Failure::over(
                "the PDF nests its drawings",
                Amount::Count(self.limits.max_pdf_form_depth, "deep"),
                "max_pdf_form_depth",
            ));
        }
        if let Some(&cost) = self.costs.get(&(id, std::ptr::from_ref(resources))) {
            return Ok(cost);
        }
        let Ok(stream) = self.doc.get_object(id).and_then(Object::as_stream) else { return Ok(0) };
        let scan = match self.scans.get(&id) {
            Some(scan) => scan.clone(),
            None => {
                // pdf-extract's `get_contents`: the inflated data, or the raw data when it cannot be inflated.
                let content = if stream.filters().is_ok() {
                    stream.decompressed_content().unwrap_or_else(|_| stream.content.clone())
                } else {
                    stream.content.clone()
                };
                let scan = std::rc::Rc::new(scan_content(&content, self.limits)?);
                self.scans.insert(id, scan.clone());
                scan
            }
        };
        let own = stream
            .dict
            .get(b"Resources")
            .ok()
            .and_then(|o| self.doc.dereference(o).ok())
            .and_then(|(_, o)| o.as_dict().ok());
        let resources = own.unwrap_or(resources);
        self.drawing.push(id);
        let mut cost = scan.objects;
        for name in &scan.drawn {
            if let Some(child) = xobject(self.doc, resources, name) {
                cost = cost.saturating_add(self.cost(child, resources, depth + 1)?);
                self.check_total(cost)?;
            }
        }
        self.drawing.pop();
        self.costs.insert((id, std::ptr::from_ref(resources)), cost);
        Ok(cost)
    }

    fn check_total(&self, objects: u64) -> Result<(), Failure> {
        if objects > self.limits.max_pdf_objects {
            return Err(Failure::over(
                "the PDF's drawing instructions hold",
                Amount::Count(self.limits.max_pdf_objects, "objects (each drawing counted as often as it is drawn)"),
                "max_pdf_objects",
            ));
        }
        Ok(())
    }
}

/// What a content stream holds, as far as the limits care.
#[derive(Debug, Default)]
struct ContentScan {
    /// Numbers, names, strings, operators and the like.
    objects: u64,
    /// The names drawn with `Do`, in order, decoded.
    drawn: Vec<Vec<u8>>,
}

/// Tokenises a content stream as lopdf's content parser will (closely enough to count), checking the
/// objects and the depth of `q` as it goes.
fn scan_content(data: &[u8], limits: &DocumentLimits) -> Result<ContentScan, Failure> {
    let mut scan = ContentScan::default();
    let mut depth = 0u64;
    let mut last_name: Option<Vec<u8>> = None;
    let mut at = 0;
    while at < data.len() {
        let byte = data[at];
        let mut name = None;
        match byte {
            b if is_space(b) => {
                at += 1;
                continue;
            }
            b'%' => {
                while at < data.len() && !matches!(data[at], b'\r' | b'\n') {
                    at += 1;
                }
                continue;
            }
            b'(' => at = skip_string(data, at),
            b'<' if data.get(at + 1) == Some(&b'<') => at += 2,
            b'<' => at = memchr::memchr(b'>', &data[at..]).map_or(data.len(), |i| at + i + 1),
            b'>' | b'[' | b']' | b'{' | b'}' | b')' => at += 1,
            b'/' => {
                let end = token_end(data, at + 1);
                name = Some(decode_name(&data[at + 1..end]));
                at = end;
            }
            _ => {
                let end = token_end(data, at).max(at + 1);
                match &data[at..end] {
                    b"q" => {
                        depth += 1;
                        if depth > limits.max_pdf_graphics_depth {
                            return Err(Failure::over(
                                "the PDF nests its graphics states",
                                Amount::Count(limits.max_pdf_graphics_depth, "deep"),
                                "max_pdf_graphics_depth",
                            ));
                        }
                    }
                    b"Q" => depth = depth.saturating_sub(1),
                    b"Do" => scan.drawn.extend(last_name.take()),
                    // An inline image's data is not content: it runs from `ID` to `EI`.
                    b"ID" => {
                        at = memchr::memmem::find(&data[end..], b"EI").map_or(data.len(), |i| end + i + 2);
                        scan.objects += 1;
                        last_name = None;
                        continue;
                    }
                    _ => {}
                }
                at = end;
            }
        }
        last_name = name;
        scan.objects += 1;
        if scan.objects > limits.max_pdf_stream_objects {
            return Err(Failure::over(
                "a content stream of the PDF holds",
                Amount::Count(limits.max_pdf_stream_objects, "objects"),
                "max_pdf_stream_objects",
            ));
        }
    }
    Ok(scan)
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' | b'\0')
}

fn is_delimiter(b: u8) -> bool {
    matches!(b, b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%')
}

/// Where the regular token starting at `at` ends.
fn token_end(data: &[u8], mut at: usize) -> usize {
    while at < data.len() && !is_space(data[at]) && !is_delimiter(data[at]) {
        at += 1;
    }
    at
}

/// Past a literal string starting at `at` (its `(`): balanced parentheses, backslash escapes.
fn skip_string(data: &[u8], mut at: usize) -> usize {
    let mut depth = 0usize;
    while at < data.len() {
        match data[at] {
            b'\\' => at += 1,
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return at + 1;
                }
            }
            _ => {}
        }
        at += 1;
    }
    data.len()
}

/// A name with its `#xx` escapes decoded, as lopdf stores it.
fn decode_name(raw: &[u8]) -> Vec<u8> {
    let mut name = Vec::with_capacity(raw.len());
    let mut at = 0;
    while at < raw.len() {
        let hex = raw
            .get(at + 1..at + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (raw[at], hex) {
            (b'#', Some(byte)) => {
                name.push(byte);
                at += 3;
            }
            (byte, _) => {
                name.push(byte);
                at += 1;
            }
        }
    }
    name
}

#[cfg(test)]
#[path = "pdf_tests.rs"]
pub(crate) mod tests;
