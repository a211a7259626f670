//! mammoth's raw text of a Word document, read from `word/document.xml` with the archive checked first and
//! the XML held to the part limit whatever its header says.

use super::archive::{self, Inflate};
use super::limits::{CappedText, DocumentLimits, Failure};

/// Each paragraph's text followed by a blank line, `\t` for tabs and `\n` for line breaks; deleted revisions
/// (`w:delText`) and field codes (`w:instrText`) are not text.
pub(crate) fn docx_text(bytes: &[u8], limits: &DocumentLimits) -> Result<String, Failure> {
    use quick_xml::events::Event;

    let mut archive = archive::open_checked(bytes, limits, Inflate::Nothing)?;
    let mut unpacked = 0;
    let xml = archive::read_entry(&mut archive, "word/document.xml", limits, &mut unpacked)?;
    let damaged = |e: &dyn std::fmt::Display| Failure::Damaged(format!("word/document.xml: {e}"));
    let mut reader = quick_xml::Reader::from_str(&xml);
    let mut text = CappedText::new(limits.max_document_text_bytes);
    let mut in_text = false;
    loop {
        let more = match reader.read_event().map_err(|e| damaged(&e))? {
            Event::Start(e) if e.name().as_ref() == "w:t" => {
                in_text = true;
                true
            }
            Event::End(e) if e.name().as_ref() == "w:t" => {
                in_text = false;
                true
            }
            Event::End(e) if e.name().as_ref() == "w:p" => text.push_str("\n\n"),
            Event::Empty(e) => match e.name().as_ref() {
                "w:tab" => text.push_str("\t"),
                "w:br" | "w:cr" => text.push_str("\n"),
                "w:p" => text.push_str("\n\n"),
                _ => true,
            },
            Event::Text(t) if in_text => text.push_str(&t.xml10_content()),
            Event::GeneralRef(r) if in_text => {
                // `&amp;` and friends arrive as references of their own.
                match r.resolve_char_ref().map_err(|e| damaged(&e))? {
                    Some(c) => text.push_str(c.encode_utf8(&mut [0; 4])),
                    None => {
                        let name = r.xml10_content();
                        let entity = quick_xml::escape::resolve_xml_entity(&name)
                            .ok_or_else(|| Failure::Damaged(format!("word/document.xml: unknown entity &{name};")))?;
                        text.push_str(entity)
                    }
                }
            }
            Event::Eof => break,
            _ => true,
        };
        if !more {
            break;
        }
    }
    Ok(text.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::archive::tests::{with_declared_size, zip_of};

    fn document(body: &str) -> String {
        format!(r#"<w:document xmlns:w="w"><w:body>{body}</w:body></w:document>"#)
    }

    #[test]
    fn paragraphs_tabs_and_breaks() {
        let xml = document("<w:p><w:r><w:t>a &amp; b</w:t><w:tab/><w:t>c</w:t><w:br/></w:r></w:p>");
        let zip = zip_of(&[("word/document.xml", xml.as_bytes())]);
        assert_eq!(docx_text(&zip, &DocumentLimits::default()), Ok("a & b\tc\n\n\n".to_owned()));
    }

    #[test]
    fn a_bomb_of_a_document_is_refused_whatever_its_header_says() {
        let paragraph = "<w:p><w:r><w:t>bomb</w:t></w:r></w:p>";
        let xml = document(&paragraph.repeat(100_000));
        let limits = DocumentLimits { max_document_part_bytes: 1024 * 1024, ..DocumentLimits::default() };
        let zip = zip_of(&[("word/document.xml", xml.as_bytes())]);
        assert!(zip.len() < 100_000, "{}", zip.len());
        assert_eq!(
            docx_text(&zip, &limits),
            Err(Failure::Limit(
                "word/document.xml expands to more than 1 MiB ([plugins.config.read_file] max_document_part_bytes)"
                    .to_owned()
            ))
        );
        let lying = with_declared_size(zip, 100);
        assert!(docx_text(&lying, &limits).is_err());
    }

    #[test]
    fn long_text_is_cut_with_a_note() {
        let xml = document(&"<w:p><w:r><w:t>0123456789</w:t></w:r></w:p>".repeat(100));
        let zip = zip_of(&[("word/document.xml", xml.as_bytes())]);
        let limits = DocumentLimits { max_document_text_bytes: 30, ..DocumentLimits::default() };
        let text = docx_text(&zip, &limits).unwrap_or_default();
        assert!(text.starts_with("0123456789\n\n0123456789\n\n012345\n[... the text is cut here"), "{text}");
    }
}
