//! The zip archive under a `.docx` or `.xlsx`, checked against the limits before anything unpacks it: how
//! many entries it has, what each entry says it holds and what they say in all, and — for the readers that
//! unpack entries themselves (calamine) — what each entry really inflates to, since an entry's header can lie.

use super::limits::{Amount, DocumentLimits, Failure};
use std::io::{Cursor, Read};

/// An archive opened over a document's bytes.
pub(crate) type Archive<'b> = zip::ZipArchive<Cursor<&'b [u8]>>;

/// How much of the archive [`open_checked`] inflates to check it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inflate {
    /// None: the caller reads the entries it needs through [`read_entry`], which holds each to the limit.
    Nothing,
    /// Every entry, into nothing, counting: for a reader that unpacks entries itself, with no limit of its own.
    Everything,
}

/// Opens the archive and checks it against `limits`.
pub(crate) fn open_checked<'b>(
    bytes: &'b [u8],
    limits: &DocumentLimits,
    inflate: Inflate,
) -> Result<Archive<'b>, Failure> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(Failure::damaged)?;
    if archive.len() as u64 > limits.max_document_entries {
        return Err(Failure::over(
            "the document's archive holds",
            Amount::Count(limits.max_document_entries, "entries"),
            "max_document_entries",
        ));
    }
    let mut declared = 0u64;
    for index in 0..archive.len() {
        let entry = archive.by_index_raw(index).map_err(Failure::damaged)?;
        let size = entry.size();
        if size > limits.max_document_part_bytes {
            return Err(over_part(&entry_name(entry.name(), index), limits));
        }
        declared = declared.saturating_add(size);
        if declared > limits.max_document_unpacked_bytes {
            return Err(over_total(limits));
        }
    }
    if inflate == Inflate::Everything {
        let mut total = 0u64;
        for index in 0..archive.len() {
            let mut entry = archive.by_index(index).map_err(Failure::damaged)?;
            let name = entry_name(entry.name(), index);
            let mut scan = EntryScan::new(&name);
            let size = inflate_counting(&mut entry, limits.max_document_part_bytes, &mut scan)
                .map_err(|e| Failure::Damaged(format!("{name}: {e}")))?;
            if size > limits.max_document_part_bytes {
                return Err(over_part(&name, limits));
            }
            total = total.saturating_add(size);
            if total > limits.max_document_unpacked_bytes {
                return Err(over_total(limits));
            }
            scan.check(size)?;
        }
    }
    Ok(archive)
}

/// Reads one entry as text, held to the part limit whatever its header says, and counted into `total`.
pub(crate) fn read_entry(
    archive: &mut Archive<'_>,
    name: &str,
    limits: &DocumentLimits,
    total: &mut u64,
) -> Result<String, Failure> {
    let entry = archive.by_name(name).map_err(|e| Failure::Damaged(format!("{name}: {e}")))?;
    let mut text = String::new();
    entry
        .take(limits.max_document_part_bytes.saturating_add(1))
        .read_to_string(&mut text)
        .map_err(|e| Failure::Damaged(format!("{name}: {e}")))?;
    if text.len() as u64 > limits.max_document_part_bytes {
        return Err(over_part(name, limits));
    }
    *total = total.saturating_add(text.len() as u64);
    if *total > limits.max_document_unpacked_bytes {
        return Err(over_total(limits));
    }
    Ok(text)
}

/// An entry's name for a message; one zip cannot decode is named by its place.
fn entry_name(name: Result<std::borrow::Cow<'_, str>, zip::result::ZipError>, index: usize) -> String {
    name.map_or_else(|_| format!("entry {}", index + 1), std::borrow::Cow::into_owned)
}

fn over_part(name: &str, limits: &DocumentLimits) -> Failure {
    Failure::over(
        &format!("{name} expands to"),
        Amount::Bytes(limits.max_document_part_bytes),
        "max_document_part_bytes",
    )
}

fn over_total(limits: &DocumentLimits) -> Failure {
    Failure::over(
        "the document expands to",
        Amount::Bytes(limits.max_document_unpacked_bytes),
        "max_document_unpacked_bytes",
    )
}

/// Inflates `reader` into nothing, up to one byte past `limit`; returns how much came out. Each chunk goes
/// past `scan` first.
fn inflate_counting(reader: &mut impl Read, limit: u64, scan: &mut EntryScan) -> std::io::Result<u64> {
    let mut buffer = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    while size <= limit {
        let n = reader.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        scan.feed(&buffer[..n]);
        size += n as u64;
    }
    Ok(size)
}

/// What the scan of an entry looks for: in a shared-strings part, the count its `<sst>` element declares.
/// calamine reserves room for that many strings before reading one, so `uniqueCount="4000000000"` in a
/// kilobyte would be a 96 GB allocation; a part cannot hold more strings than it has bytes for.
struct EntryScan {
    head: Option<Vec<u8>>,
}

/// The bytes of a shared-strings part searched for the declared count: the root element comes first.
const HEAD_BYTES: usize = 4096;

/// The smallest shared string, `<si/>`.
const SMALLEST_STRING: u64 = 5;

impl EntryScan {
    fn new(name: &str) -> Self {
        let shared_strings = name.to_ascii_lowercase().ends_with("sharedstrings.xml");
        Self { head: shared_strings.then(Vec::new) }
    }

    fn feed(&mut self, chunk: &[u8]) {
        if let Some(head) = &mut self.head {
            let room = HEAD_BYTES.saturating_sub(head.len());
            head.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
    }

    fn check(&self, size: u64) -> Result<(), Failure> {
        let Some(head) = &self.head else { return Ok(()) };
        let Some(declared) = declared_count(head) else { return Ok(()) };
        if declared > size / SMALLEST_STRING {
            return Err(Failure::Damaged(format!(
                "the shared strings declare {declared} strings, more than their {size} bytes can hold"
            )));
        }
        Ok(())
    }
}

/// The number in `uniqueCount="…"` (or with single quotes), if the head has one.
fn declared_count(head: &[u8]) -> Option<u64> {
    let at = memchr::memmem::find(head, b"uniqueCount=")? + b"uniqueCount=".len();
    let rest = head.get(at + 1..)?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    // A count too long for u64 is certainly too many.
    Some(std::str::from_utf8(&rest[..digits]).ok()?.parse().unwrap_or(u64::MAX))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::io::Write;

    /// A zip of `(name, bytes)` entries, deflated.
    pub(crate) fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for (name, bytes) in entries {
            zip.start_file(*name, options).unwrap_or_else(|e| panic!("{e}"));
            zip.write_all(bytes).unwrap_or_else(|e| panic!("{e}"));
        }
        zip.finish().unwrap_or_else(|e| panic!("{e}")).into_inner()
    }

    /// `zip` with the uncompressed size of every entry rewritten to `size`, in the local and central headers
    /// (the lie of a zip bomb that hides its size).
    pub(crate) fn with_declared_size(mut zip: Vec<u8>, size: u32) -> Vec<u8> {
        let mut at = 0;
        while at + 30 <= zip.len() {
            let signature = &zip[at..at + 4];
            if signature == b"PK\x03\x04" {
                zip[at + 22..at + 26].copy_from_slice(&size.to_le_bytes());
            } else if signature == b"PK\x01\x02" {
                zip[at + 24..at + 28].copy_from_slice(&size.to_le_bytes());
            }
            at += 1;
        }
        zip
    }

    fn limits() -> DocumentLimits {
        DocumentLimits { max_document_part_bytes: 1000, max_document_unpacked_bytes: 1500, ..DocumentLimits::default() }
    }

    #[test]
    fn too_many_entries() {
        let names: Vec<String> = (0..11).map(|i| format!("e{i}")).collect();
        let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
        let zip = zip_of(&entries);
        let limits = DocumentLimits { max_document_entries: 10, ..DocumentLimits::default() };
        assert_eq!(
            open_checked(&zip, &limits, Inflate::Nothing).err(),
            Some(Failure::Limit(
                "the document's archive holds more than 10 entries ([plugins.config.read_file] max_document_entries)"
                    .to_owned()
            ))
        );
    }

    #[test]
    fn declared_sizes_are_checked_one_by_one_and_in_all() {
        let big = vec![b'a'; 1001];
        let zip = zip_of(&[("big.xml", &big)]);
        assert_eq!(
            open_checked(&zip, &limits(), Inflate::Nothing).err(),
            Some(Failure::Limit(
                "big.xml expands to more than 1000 bytes ([plugins.config.read_file] max_document_part_bytes)"
                    .to_owned()
            ))
        );
        let half = vec![b'a'; 800];
        let zip = zip_of(&[("a.xml", &half), ("b.xml", &half)]);
        assert!(
            matches!(open_checked(&zip, &limits(), Inflate::Nothing), Err(Failure::Limit(m)) if m.contains("max_document_unpacked_bytes"))
        );
    }

    #[test]
    fn a_lying_header_is_caught_by_inflating() {
        let bomb = vec![b'a'; 5000];
        let zip = with_declared_size(zip_of(&[("xl/worksheets/sheet1.xml", &bomb)]), 10);
        // The headers pass: they say 10 bytes.
        assert!(open_checked(&zip, &limits(), Inflate::Nothing).is_ok());
        // Inflating finds the truth (or the zip reader stops at the declared size, or finds the lie): either
        // way no more than the limit comes out.
        assert!(open_checked(&zip, &limits(), Inflate::Everything).is_err());
        // Reading the entry holds it to the limit too.
        let Ok(mut archive) = open_checked(&zip, &limits(), Inflate::Nothing) else { panic!("opens") };
        let mut total = 0;
        let read = read_entry(&mut archive, "xl/worksheets/sheet1.xml", &limits(), &mut total);
        assert!(read.as_ref().map_or(true, |text| text.len() <= 1000), "{read:?}");
    }

    #[test]
    fn shared_strings_cannot_declare_more_than_they_hold() {
        let sst = br#"<?xml version="1.0"?><sst xmlns="x" count="1" uniqueCount="4000000000"><si><t>a</t></si></sst>"#;
        let zip = zip_of(&[("xl/sharedStrings.xml", sst)]);
        assert!(matches!(
            open_checked(&zip, &DocumentLimits::default(), Inflate::Everything),
            Err(Failure::Damaged(m)) if m.contains("4000000000")
        ));
        let honest = br#"<sst uniqueCount='1'><si><t>a</t></si></sst>"#;
        let zip = zip_of(&[("xl/sharedStrings.xml", honest)]);
        assert!(open_checked(&zip, &DocumentLimits::default(), Inflate::Everything).is_ok());
    }
}
