//! Targets for streamed model output: the tolerant partial-JSON parser of native tool-call arguments and
//! the XML tool-use parser of text-mode messages.

use crate::parts;
use serde_json::Value;
use std::collections::BTreeMap;
use toolshed::stream::{
    parse_assistant_message, parse_partial, AssistantBlock, PartialJson, XmlEvent, XmlStreamParser,
};
use toolshed::{ToolInput, ToolUse};

/// Up to `max` cut points of `text` on character boundaries, evenly spread.
fn char_cuts(text: &str, max: usize) -> Vec<usize> {
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let step = bounds.len().div_ceil(max.max(1)).max(1);
    bounds.into_iter().step_by(step).collect()
}

/// Partial JSON. Invariants: no panic and no stack overflow however deep the nesting; text serde_json reads
/// whole is read the same; every prefix of a complete JSON object parses; feeding the text in chunks gives
/// what parsing it whole gives.
pub fn partial_json(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let whole = parse_partial(&text);
    if let Ok(value) = serde_json::from_str::<Value>(&text) {
        assert_eq!(whole.as_ref().ok(), Some(&value), "complete JSON read differently");
        if value.is_object() {
            for cut in char_cuts(&text, 32) {
                assert!(parse_partial(&text[..cut]).is_ok(), "the prefix {:?} failed", &text[..cut]);
            }
        }
    }
    let mut stream = PartialJson::new();
    let mut last = None;
    let mut from = 0;
    for cut in char_cuts(&text, 8).into_iter().skip(1).chain([text.len()]) {
        last = Some(stream.push(&text[from..cut]));
        from = cut;
    }
    if let Some(last) = last {
        assert_eq!(last.ok(), whole.ok(), "streamed and whole differ");
    }
}

/// The tools of the XML tests: `write_to_file`'s `content` runs to its last closing tag, the others close at
/// the first.
fn tools() -> BTreeMap<String, Vec<String>> {
    [
        ("write_to_file", vec!["path", "content"]),
        ("replace_in_file", vec!["path", "diff"]),
        ("read_file", vec!["path"]),
        ("execute_command", vec!["command", "requires_approval"]),
        ("attempt_completion", vec!["result", "command"]),
    ]
    .into_iter()
    .map(|(n, ps)| (n.to_owned(), ps.into_iter().map(str::to_owned).collect()))
    .collect()
}

/// An assistant message in XML tool-use form; `0xFF` bytes mark where the stream is cut into chunks.
/// Invariants: no panic; the complete tool uses of a stream fed in those chunks are the tool uses of the
/// whole message, in order, numbered from 0; no partial event follows its tool use's completion.
pub fn xml_tool_use(data: &[u8]) {
    let chunks = parts(data);
    let message: String = chunks.concat();
    let blocks = parse_assistant_message(&message, &tools());
    let expected: Vec<Value> = blocks
        .iter()
        .filter_map(|b| match b {
            AssistantBlock::ToolUse(tool) => Some(tool.input()),
            AssistantBlock::Text { .. } => None,
        })
        .collect();
    let mut parser = XmlStreamParser::new(tools());
    let mut events = Vec::new();
    for chunk in &chunks {
        events.extend(parser.push(chunk));
    }
    events.extend(parser.finish());
    assert_eq!(parser.message(), message);
    let complete: Vec<&ToolUse> =
        events.iter().filter_map(|e| if let XmlEvent::ToolUse(u) = e { Some(u) } else { None }).collect();
    let inputs: Vec<Value> = complete
        .iter()
        .map(|u| match &u.input {
            ToolInput::Json(value) => value.clone(),
            ToolInput::Text(text) => panic!("an XML tool use carries text input {text:?}"),
        })
        .collect();
    assert_eq!(inputs, expected, "streamed tool uses differ from the whole message's");
    for (n, tool_use) in complete.iter().enumerate() {
        assert_eq!(tool_use.id, format!("xml_{n}"));
    }
    // A partial event never comes after the last complete tool use with the same id.
    for (i, event) in events.iter().enumerate() {
        if let XmlEvent::Partial(partial) = event {
            let done_before = events[..i].iter().any(|e| matches!(e, XmlEvent::ToolUse(u) if u.id == partial.id));
            assert!(!done_before, "a partial event for {} after it completed", partial.id);
        }
    }
}
