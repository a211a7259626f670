//! The runtime's one cap on every tool's result: `[limits] max_result_bytes` of text, whatever the plugin
//! built. Plugins bound their own output first (Cline's 400 KB where Cline caps); this is the backstop for
//! the ones that do not, and for content no plugin can predict (a server's result, a subagent's answer,
//! a third-party plugin).
//!
//! The cap applies while `execute`'s JSON answer is parsed, so a plugin that returns gigabytes never turns
//! them into a second copy or a larger structure: the parse keeps the text that fits and counts the rest
//! ([`Outcome::from_json_capped`]). Image blocks are kept whole; the tools that make them bound them
//! (read_file's image size cap, the MCP hub's message cap).

use toolshed_plugin_api::{Block, Outcome, ToolError};

/// `execute`'s answer as an outcome whose text (every text block, or the error's message) is at most
/// `max` bytes, cut on a character boundary, with a note saying how much was cut and which key raises the
/// limit.
pub(crate) fn parse_outcome(text: &str, max: usize) -> Result<Outcome, serde_json::Error> {
    // The text in a JSON answer is never longer than the answer itself (escapes only shrink when read), so
    // an answer within the cap parses the ordinary way.
    if text.len() <= max {
        return Outcome::from_json(text);
    }
    let (mut outcome, cut) = Outcome::from_json_capped(text, max)?;
    if cut > 0 {
        add_note(&mut outcome, cut, max);
    }
    Ok(outcome)
}

/// A tool error whose message (the plugin's own words, a panic's message) is at most `max` bytes, cut on
/// a character boundary with the note.
pub(crate) fn cap_error(mut error: ToolError, max: usize) -> ToolError {
    if error.message.len() > max {
        let mut keep = max;
        while !error.message.is_char_boundary(keep) {
            keep -= 1;
        }
        let cut = error.message.len() - keep;
        error.message.truncate(keep);
        error.message.shrink_to_fit();
        append(&mut error.message, &note(cut, max));
    }
    error
}

/// What the model reads where text was cut.
fn note(cut: usize, max: usize) -> String {
    format!(
        "[Result truncated: {cut} more bytes of text were cut. Tool results are limited to {max} bytes of text \
         ([limits] max_result_bytes).]"
    )
}

/// Appends `note` after a blank line.
fn append(text: &mut String, note: &str) {
    text.push_str("\n\n");
    text.push_str(note);
}

/// Appends the truncation note to the last text the model reads.
fn add_note(outcome: &mut Outcome, cut: usize, max: usize) {
    let note = note(cut, max);
    match outcome {
        Outcome::Success { blocks, .. } => {
            let last_text = blocks.iter_mut().rev().find_map(|block| match block {
                Block::Text { text } => Some(text),
                Block::Image { .. } => None,
            });
            match last_text {
                Some(text) => append(text, &note),
                None => blocks.push(Block::Text { text: note }),
            }
        }
        Outcome::Error(error) => append(&mut error.message, &note),
        Outcome::Denied => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn json(outcome: &Outcome) -> String {
        serde_json::to_string(outcome).unwrap()
    }

    #[test]
    fn answers_within_the_cap_are_untouched() {
        let outcome = Outcome::Success { blocks: vec![Block::Text { text: "é".repeat(10) }], is_error: false };
        assert_eq!(parse_outcome(&json(&outcome), 20).unwrap(), outcome);
        // Longer JSON than the cap, but text within it (escapes): nothing cut, no note.
        let escaped = Outcome::Success { blocks: vec![Block::Text { text: "\n".repeat(15) }], is_error: false };
        assert_eq!(parse_outcome(&json(&escaped), 20).unwrap(), escaped);
    }

    #[test]
    fn text_over_the_cap_is_cut_with_a_note() {
        let outcome = Outcome::Success {
            blocks: vec![Block::Text { text: "ab".into() }, Block::Text { text: "é".repeat(100) }],
            is_error: false,
        };
        let Outcome::Success { blocks, .. } = parse_outcome(&json(&outcome), 7).unwrap() else { panic!() };
        assert_eq!(
            blocks,
            [
                Block::Text { text: "ab".into() },
                Block::Text {
                    text: "éé\n\n[Result truncated: 196 more bytes of text were cut. Tool results are limited to 7 \
                           bytes of text ([limits] max_result_bytes).]"
                        .into()
                }
            ]
        );
        let error = Outcome::Error(ToolError { message: "x".repeat(50), mistake: true });
        let Outcome::Error(ToolError { message, mistake }) = parse_outcome(&json(&error), 10).unwrap() else {
            panic!()
        };
        assert!(mistake);
        assert!(message.starts_with("xxxxxxxxxx\n\n[Result truncated: 40 more bytes"), "{message}");
    }

    #[test]
    fn error_messages_are_capped_too() {
        let error = cap_error(ToolError { message: format!("boom {}", "é".repeat(100)), mistake: false }, 10);
        assert!(error.message.starts_with("boom éé\n\n[Result truncated: 196 more bytes"), "{}", error.message);
        let small = ToolError { message: "fine".into(), mistake: true };
        assert_eq!(cap_error(small.clone(), 10), small);
    }

    #[test]
    fn a_note_follows_an_image_when_no_text_fits() {
        let image = Block::Image { media_type: "image/png".into(), data: "A".repeat(40) };
        let outcome =
            Outcome::Success { blocks: vec![image.clone(), Block::Text { text: "t".repeat(40) }], is_error: false };
        let Outcome::Success { blocks, .. } = parse_outcome(&json(&outcome), 0).unwrap() else { panic!() };
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0], image);
        assert!(matches!(&blocks[1], Block::Text { text } if text.starts_with("[Result truncated: 40 more")));
    }
}
