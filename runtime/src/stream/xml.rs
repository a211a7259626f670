//! Cline's XML tool-use format for models without native tool calling (CLINE-TOOLS.md §0; Cline's
//! `parse-assistant-message.ts`): `<tool_name><param>value</param>…</tool_name>` between assistant text.
//!
//! A parameter's value is the text between its tags, trimmed. Inside a value only its own closing tag is
//! looked for, so values may hold other tags. For `write_to_file` and `new_rule` the `content` value is
//! taken again, once the tool closes, from the first `<content>` to the **last** `</content>`, so a file's
//! content may itself contain `</content>`. Tool and parameter names come from the loaded tools' specs
//! (plus `task_progress`, which every tool accepts). A tool use the stream ends inside is completed with
//! what it has, as Cline marks every block complete when the stream ends.

use crate::types::PartialToolUse;
use crate::types::ToolUse;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Tools whose `content` parameter runs to its last closing tag.
const CONTENT_RULE_TOOLS: [&str; 2] = ["write_to_file", "new_rule"];

/// The parameter every tool accepts (CLINE-TOOLS.md §14).
const TASK_PROGRESS: &str = "task_progress";

/// One tool use in XML form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XmlToolUse {
    /// The tool's name.
    pub name: String,
    /// Parameter values, in the order they appeared.
    pub params: Vec<(String, String)>,
    /// Whether the closing tag has not arrived yet.
    pub partial: bool,
}

impl XmlToolUse {
    /// The parameters as a JSON object of strings (what the tool receives).
    pub fn input(&self) -> Value {
        Value::Object(self.params.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect::<Map<_, _>>())
    }

    fn set(&mut self, name: &str, value: String) {
        match self.params.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = value,
            None => self.params.push((name.to_owned(), value)),
        }
    }
}

/// A block of an assistant message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AssistantBlock {
    /// Text between tool uses, trimmed.
    Text {
        /// The text.
        text: String,
        /// Whether more may still arrive.
        partial: bool,
    },
    /// A tool use.
    ToolUse(XmlToolUse),
}

/// Parses a whole (or still streaming) assistant message. `tools` maps each tool name to its parameter names.
///
/// ```
/// use toolshed::stream::{parse_assistant_message, AssistantBlock};
/// use std::collections::BTreeMap;
///
/// let tools = BTreeMap::from([("read_file".to_owned(), vec!["path".to_owned()])]);
/// let blocks = parse_assistant_message("Let me look.\n<read_file>\n<path>src/main.rs</path>\n</read_file>", &tools);
/// assert_eq!(blocks[0], AssistantBlock::Text { text: "Let me look.".into(), partial: false });
/// let AssistantBlock::ToolUse(read) = &blocks[1] else { panic!() };
/// assert_eq!(read.params, vec![("path".to_owned(), "src/main.rs".to_owned())]);
/// assert!(!read.partial);
/// ```
pub fn parse_assistant_message(message: &str, tools: &BTreeMap<String, Vec<String>>) -> Vec<AssistantBlock> {
    let mut blocks = Vec::new();
    let mut text_start = 0usize;
    // The open tool use: itself and where its content starts.
    let mut tool: Option<(XmlToolUse, usize)> = None;
    // The open parameter: its name and where its value starts.
    let mut param: Option<(String, usize)> = None;
    let bytes = message.as_bytes();
    let mut i = 0usize;
    while i < bytes.len() {
        // Tags are ASCII; only `>` can end one, so only look at a `>`.
        if bytes[i] != b'>' {
            i += 1;
            continue;
        }
        let end = i + 1;
        let before = &message[..end];
        if let Some((current, _)) = &mut tool {
            if let Some((name, value_start)) = &param {
                let close = format!("</{name}>");
                if before.ends_with(&close) {
                    let value = message[*value_start..end - close.len()].trim().to_owned();
                    current.set(name, value);
                    param = None;
                }
                i += 1;
                continue;
            }
            let names = tools.get(&current.name).map(Vec::as_slice).unwrap_or_default();
            let opened = names
                .iter()
                .map(String::as_str)
                .chain(std::iter::once(TASK_PROGRESS))
                .find(|name| before.ends_with(&format!("<{name}>")));
            if let Some(name) = opened {
                param = Some((name.to_owned(), end));
                i += 1;
                continue;
            }
            let close = format!("</{}>", current.name);
            if before.ends_with(&close) {
                if let Some((mut done, content_start)) = tool.take() {
                    let body = &message[content_start..end - close.len()];
                    apply_content_rule(&mut done, body);
                    done.partial = false;
                    blocks.push(AssistantBlock::ToolUse(done));
                }
                text_start = end;
            }
            i += 1;
            continue;
        }
        let opened = tools.keys().find(|name| before.ends_with(&format!("<{name}>")));
        if let Some(name) = opened {
            let text = message[text_start..end - name.len() - 2].trim();
            if !text.is_empty() {
                blocks.push(AssistantBlock::Text { text: text.to_owned(), partial: false });
            }
            tool = Some((XmlToolUse { name: name.clone(), params: Vec::new(), partial: true }, end));
        }
        i += 1;
    }
    match tool {
        Some((mut current, _)) => {
            if let Some((name, value_start)) = param {
                let value = strip_cut_tag(&message[value_start..], &format!("</{name}>"));
                current.set(&name, value.trim().to_owned());
            }
            blocks.push(AssistantBlock::ToolUse(current));
        }
        None => {
            let text = strip_cut_open_tag(&message[text_start..], tools).trim();
            if !text.is_empty() {
                blocks.push(AssistantBlock::Text { text: text.to_owned(), partial: true });
            }
        }
    }
    blocks
}

/// The `write_to_file` / `new_rule` rule: `content` runs from the first `<content>` to the last `</content>`.
fn apply_content_rule(tool: &mut XmlToolUse, body: &str) {
    if !CONTENT_RULE_TOOLS.contains(&tool.name.as_str()) {
        return;
    }
    let (open, close) = ("<content>", "</content>");
    if let (Some(start), Some(end)) = (body.find(open), body.rfind(close))
        && end > start + open.len() - 1
    {
        tool.set("content", body[start + open.len()..end].trim().to_owned());
    }
}

/// A streaming value without the start of its closing tag, cut at the end (`src/a.rs</pa`).
fn strip_cut_tag<'a>(value: &'a str, close: &str) -> &'a str {
    for n in (1..close.len()).rev() {
        if value.ends_with(&close[..n]) {
            return &value[..value.len() - n];
        }
    }
    value
}

/// Streaming text without a tool's opening tag cut at the end (`Let me look. <read_fi`).
fn strip_cut_open_tag<'a>(text: &'a str, tools: &BTreeMap<String, Vec<String>>) -> &'a str {
    let Some(lt) = text.rfind('<') else {
        return text;
    };
    let tail = &text[lt + 1..];
    if tools.keys().any(|name| name.starts_with(tail)) {
        &text[..lt]
    } else {
        text
    }
}

/// What a chunk of streamed assistant text produced.
#[derive(Debug, Clone, PartialEq)]
pub enum XmlEvent {
    /// Assistant text that ended (a tool use began after it, or the message ended).
    Text(String),
    /// The tool use still streaming, as far as it has arrived: hand it to
    /// [`crate::TaskHandle::partial_use`]. Never execute it.
    Partial(PartialToolUse),
    /// A complete tool use, ready to execute.
    ToolUse(ToolUse),
}

/// Feeds a streamed assistant message chunk by chunk and reports what changed: text that ended, the tool
/// use still streaming, tool uses that completed. Ids are `{prefix}{n}`, `n` counting the message's tool
/// uses from 0.
///
/// ```
/// use toolshed::stream::{XmlEvent, XmlStreamParser};
///
/// let mut parser = XmlStreamParser::new([("read_file", ["path"])]);
/// let mut events = parser.push("Reading.\n<read_file><path>src/ma");
/// events.extend(parser.push("in.rs</path></read_file>"));
/// assert!(matches!(&events[0], XmlEvent::Text(t) if t == "Reading."));
/// assert!(matches!(&events[1], XmlEvent::Partial(p) if p.input["path"] == "src/ma"));
/// assert!(matches!(&events[2], XmlEvent::ToolUse(u) if u.id == "xml_0"));
/// ```
#[derive(Debug, Clone)]
pub struct XmlStreamParser {
    tools: BTreeMap<String, Vec<String>>,
    message: String,
    prefix: String,
    /// Blocks already reported complete.
    reported: usize,
    /// The last partial tool use reported, so an unchanged one is not reported again.
    last_partial: Option<XmlToolUse>,
}

impl XmlStreamParser {
    /// A parser for these tools, each with its parameter names.
    pub fn new<N, P, I>(tools: impl IntoIterator<Item = (N, P)>) -> Self
    where
        N: Into<String>,
        P: IntoIterator<Item = I>,
        I: Into<String>,
    {
        let tools = tools.into_iter().map(|(n, ps)| (n.into(), ps.into_iter().map(Into::into).collect())).collect();
        Self { tools, message: String::new(), prefix: "xml_".to_owned(), reported: 0, last_partial: None }
    }

    /// A parser for every tool in these specs.
    pub fn from_specs<'a>(specs: impl IntoIterator<Item = &'a toolshed_plugin_api::ToolSpec>) -> Self {
        Self::new(specs.into_iter().map(|spec| (spec.name.clone(), spec.parameters.iter().map(|p| p.name.clone()))))
    }

    /// Sets the prefix of generated tool-use ids (default `xml_`).
    pub fn with_id_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The message so far.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Appends a chunk; returns the text that ended, tool uses that completed, and the streaming tool use if
    /// it changed.
    pub fn push(&mut self, chunk: &str) -> Vec<XmlEvent> {
        self.message.push_str(chunk);
        self.events(false)
    }

    /// The message ended: trailing text, and a tool use left open completed with what it has (as Cline does).
    pub fn finish(&mut self) -> Vec<XmlEvent> {
        self.events(true)
    }

    fn events(&mut self, finished: bool) -> Vec<XmlEvent> {
        let blocks = parse_assistant_message(&self.message, &self.tools);
        let mut events = Vec::new();
        let tool_index = |blocks: &[AssistantBlock], upto: usize| {
            blocks[..upto].iter().filter(|b| matches!(b, AssistantBlock::ToolUse(_))).count()
        };
        for index in self.reported..blocks.len() {
            let last = index + 1 == blocks.len();
            match &blocks[index] {
                AssistantBlock::Text { text, partial } => {
                    if *partial && !finished {
                        break;
                    }
                    events.push(XmlEvent::Text(text.clone()));
                }
                AssistantBlock::ToolUse(tool) => {
                    let id = format!("{}{}", self.prefix, tool_index(&blocks, index));
                    if tool.partial && !finished {
                        if last && self.last_partial.as_ref() != Some(tool) {
                            self.last_partial = Some(tool.clone());
                            events.push(XmlEvent::Partial(PartialToolUse {
                                id,
                                name: tool.name.clone(),
                                input: tool.input(),
                            }));
                        }
                        break;
                    }
                    self.last_partial = None;
                    events.push(XmlEvent::ToolUse(ToolUse::new(id, tool.name.clone(), tool.input())));
                }
            }
            self.reported = index + 1;
        }
        events
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn tools() -> BTreeMap<String, Vec<String>> {
        [
            ("write_to_file", vec!["path", "content"]),
            ("new_rule", vec!["path", "content"]),
            ("replace_in_file", vec!["path", "diff"]),
            ("read_file", vec!["path"]),
            ("execute_command", vec!["command", "requires_approval"]),
            ("attempt_completion", vec!["result", "command"]),
        ]
        .into_iter()
        .map(|(n, ps)| (n.to_owned(), ps.into_iter().map(str::to_owned).collect()))
        .collect()
    }

    fn tool(blocks: &[AssistantBlock], i: usize) -> &XmlToolUse {
        match &blocks[i] {
            AssistantBlock::ToolUse(t) => t,
            other => panic!("block {i} is {other:?}"),
        }
    }

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn write_to_file_content_runs_to_the_last_closing_tag() {
        // CLINE-TOOLS.md §0: the content may hold tags, even its own closing tag.
        let message = "I'll write the template.\n<write_to_file>\n<path>index.html</path>\n<content>\n<div><content>x</content></div>\n<path>not/a/param</path>\n</content>\n</write_to_file>\nDone.";
        let blocks = parse_assistant_message(message, &tools());
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[0], AssistantBlock::Text { text: "I'll write the template.".into(), partial: false });
        let write = tool(&blocks, 1);
        assert!(!write.partial);
        let content = write.params.iter().find(|(k, _)| k == "content").unwrap().1.clone();
        assert_eq!(content, "<div><content>x</content></div>\n<path>not/a/param</path>");
        assert_eq!(blocks[2], AssistantBlock::Text { text: "Done.".into(), partial: true });
    }

    #[test]
    fn other_tools_close_a_value_at_its_first_closing_tag() {
        let message = "<replace_in_file><path>a.rs</path><diff>------- SEARCH\n</diff>x\n=======\n+++++++ REPLACE</diff></replace_in_file>";
        let blocks = parse_assistant_message(message, &tools());
        assert_eq!(tool(&blocks, 0).params, params(&[("path", "a.rs"), ("diff", "------- SEARCH")]));
    }

    #[test]
    fn multiple_params_and_several_tools() {
        let message = "<execute_command>\n<command>npm test</command>\n<requires_approval>false</requires_approval>\n<task_progress>- [x] a</task_progress>\n</execute_command>\n\nthen\n<read_file><path> b.rs </path></read_file>";
        let blocks = parse_assistant_message(message, &tools());
        assert_eq!(
            tool(&blocks, 0).params,
            params(&[("command", "npm test"), ("requires_approval", "false"), ("task_progress", "- [x] a")])
        );
        assert_eq!(blocks[1], AssistantBlock::Text { text: "then".into(), partial: false });
        assert_eq!(tool(&blocks, 2).params, params(&[("path", "b.rs")]));
    }

    #[test]
    fn unknown_tags_are_text_and_unknown_params_are_ignored() {
        let blocks = parse_assistant_message(
            "<thinking>hm</thinking> <read_file><line>3</line><path>a</path></read_file>",
            &tools(),
        );
        assert_eq!(blocks[0], AssistantBlock::Text { text: "<thinking>hm</thinking>".into(), partial: false });
        assert_eq!(tool(&blocks, 1).params, params(&[("path", "a")]));
    }

    #[test]
    fn partial_blocks_while_streaming() {
        let blocks =
            parse_assistant_message("Sure. <write_to_file><path>a.txt</path><content>\nline 1\nline</con", &tools());
        let write = tool(&blocks, 1);
        assert!(write.partial);
        assert_eq!(write.params, params(&[("path", "a.txt"), ("content", "line 1\nline")]));
        let blocks = parse_assistant_message("Let me check <read_fi", &tools());
        assert_eq!(blocks, vec![AssistantBlock::Text { text: "Let me check".into(), partial: true }]);
        let blocks = parse_assistant_message("<read_file><path>src/a", &tools());
        assert_eq!(tool(&blocks, 0).params, params(&[("path", "src/a")]));
        assert!(tool(&blocks, 0).partial);
    }

    #[test]
    fn every_prefix_of_a_message_parses_and_streaming_matches_the_whole() {
        let message = "Plan:\n<write_to_file>\n<path>x.md</path>\n<content>\n# T\n</content> tricky\n</content>\n</write_to_file>\n<execute_command><command>ls</command><requires_approval>false</requires_approval></execute_command>bye";
        let mut parser = XmlStreamParser::new(tools());
        let mut events = Vec::new();
        for c in message.chars() {
            events.extend(parser.push(&c.to_string()));
        }
        events.extend(parser.finish());
        let complete: Vec<&ToolUse> =
            events.iter().filter_map(|e| if let XmlEvent::ToolUse(u) = e { Some(u) } else { None }).collect();
        assert_eq!(complete.len(), 2);
        assert_eq!(complete[0].id, "xml_0");
        assert_eq!(
            complete[0].input,
            crate::ToolInput::Json(serde_json::json!({"path": "x.md", "content": "# T\n</content> tricky"}))
        );
        assert_eq!(complete[1].id, "xml_1");
        let texts: Vec<&str> =
            events.iter().filter_map(|e| if let XmlEvent::Text(t) = e { Some(t.as_str()) } else { None }).collect();
        assert_eq!(texts, ["Plan:", "bye"]);
        // Partial events precede their tool use and never repeat unchanged.
        let partials = events.iter().filter(|e| matches!(e, XmlEvent::Partial(_))).count();
        assert!(partials > 3, "{partials}");
    }

    #[test]
    fn an_unclosed_tool_use_completes_when_the_stream_ends() {
        let mut parser = XmlStreamParser::new(tools());
        parser.push("<read_file><path>a.rs</path>");
        let events = parser.finish();
        assert!(matches!(&events[..], [XmlEvent::ToolUse(u)] if u.name == "read_file"));
    }
}
