//! The data every layer passes around: a model's tool use, the result it reads, the task's mode, UI events.
//! They live at the bottom so that the pipeline, the services and the embedding API can all name them
//! without importing each other.

use crate::messages;
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;
use toolshed_plugin_api::Block;

/// A boxed future, for host callbacks.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Plan or act mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Acting: every tool available.
    #[default]
    Act,
    /// Planning: file modifications refused.
    Plan,
}

impl Mode {
    /// The mode's name in task info and services (`act`, `plan`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Act => "act",
            Mode::Plan => "plan",
        }
    }
}

/// A tool use from the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    /// The tool-use id, echoed in the result.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The input: parsed JSON, or JSON text still to parse (as OpenAI sends `arguments`).
    pub input: ToolInput,
}

/// A tool use's input.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolInput {
    /// Parsed JSON; must be an object.
    Json(Value),
    /// JSON text; a parse failure becomes a tool error the model can fix.
    Text(String),
}

impl ToolUse {
    /// A tool use with parsed input.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self { id: id.into(), name: name.into(), input: ToolInput::Json(input) }
    }

    /// A tool use whose input is JSON text.
    pub fn from_text(id: impl Into<String>, name: impl Into<String>, input: impl Into<String>) -> Self {
        Self { id: id.into(), name: name.into(), input: ToolInput::Text(input.into()) }
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultStatus {
    /// The tool did its work.
    Success,
    /// A tool error (the model sees Cline's error wrapping).
    Error,
    /// The user, the policy or a hook refused.
    Denied,
    /// A message-level rule kept it from running (a tool rejected earlier in the message, one tool per
    /// message); the text says why, and text mode shows it without a result header, as Cline does.
    Skipped,
}

impl ResultStatus {
    /// The status as hooks and services name it (`success`, `error`, `denied`, `skipped`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ResultStatus::Success => "success",
            ResultStatus::Error => "error",
            ResultStatus::Denied => "denied",
            ResultStatus::Skipped => "skipped",
        }
    }
}

/// A tool result, ready for a provider's `tool_result`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The tool-use id it answers.
    pub tool_use_id: String,
    /// The tool called.
    pub name: String,
    /// Cline's result header, e.g. `[read_file for 'src/a.rs']`.
    pub description: String,
    /// The content blocks (text and images), in order.
    pub blocks: Vec<Block>,
    /// How the call ended.
    pub status: ResultStatus,
    /// Text the user typed with their approval answer; the model sees it before the result.
    pub feedback: Option<String>,
    /// A note for the host's user, not the model (e.g. why a call was denied without asking).
    pub note: Option<String>,
    /// Text blocks the model reads before the result (PreToolUse `<hook_context>` blocks).
    pub context_before: Vec<String>,
    /// Text blocks the model reads after the result (Cline's loop-detection warning, PostToolUse
    /// `<hook_context>` blocks).
    pub context_after: Vec<String>,
}

impl ToolResult {
    /// A result that is one text block.
    pub(crate) fn plain(tool_use: &ToolUse, description: String, status: ResultStatus, text: String) -> Self {
        Self {
            tool_use_id: tool_use.id.clone(),
            name: tool_use.name.clone(),
            description,
            blocks: vec![Block::Text { text }],
            status,
            feedback: None,
            note: None,
            context_before: Vec::new(),
            context_after: Vec::new(),
        }
    }

    /// The text blocks the model reads for this result, in order: the feedback block, hook context, the
    /// result's own blocks (text mode: the `{description} Result:` header on a single text block), then
    /// warnings and PostToolUse context.
    pub(crate) fn text_blocks(&self, header: bool) -> Vec<Block> {
        let mut out = Vec::new();
        if let Some(feedback) = &self.feedback {
            out.push(Block::Text { text: messages::feedback(feedback) });
        }
        out.extend(self.context_before.iter().map(|text| Block::Text { text: text.clone() }));
        match self.blocks.as_slice() {
            [Block::Text { text }] => {
                let body = if text.is_empty() { messages::EMPTY_RESULT } else { text };
                let text = if header && self.status != ResultStatus::Skipped {
                    format!("{} Result:\n{body}", self.description)
                } else {
                    body.to_owned()
                };
                out.push(Block::Text { text });
            }
            [] => out.push(Block::Text { text: messages::EMPTY_RESULT.to_owned() }),
            blocks => out.extend(blocks.iter().cloned()),
        }
        out.extend(self.context_after.iter().map(|text| Block::Text { text: text.clone() }));
        out
    }

    /// The result as an Anthropic Messages `tool_result` content block (native tool calling). Feedback and
    /// hook context ride inside it, so a user message of several results keeps every `tool_result` first, as
    /// the API requires.
    pub fn to_anthropic(&self) -> Value {
        let content: Vec<Value> = self
            .text_blocks(false)
            .into_iter()
            .map(|block| match block {
                Block::Text { text } => json!({"type": "text", "text": text}),
                Block::Image { media_type, data } => {
                    json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
                }
            })
            .collect();
        let mut block = json!({"type": "tool_result", "tool_use_id": self.tool_use_id, "content": content});
        if self.is_error() {
            block["is_error"] = Value::Bool(true);
        }
        block
    }

    /// The result as OpenAI chat-completions messages: the `tool` message answering the call, then, when
    /// the result has images (a tool message holds text only), a `user` message carrying them.
    pub fn to_openai(&self) -> Vec<Value> {
        let mut texts = Vec::new();
        let mut images = Vec::new();
        for block in self.text_blocks(false) {
            match block {
                Block::Text { text } => texts.push(text),
                Block::Image { media_type, data } => images.push(
                    json!({"type": "image_url", "image_url": {"url": format!("data:{media_type};base64,{data}")}}),
                ),
            }
        }
        let mut messages =
            vec![json!({"role": "tool", "tool_call_id": self.tool_use_id, "content": texts.join("\n\n")})];
        if !images.is_empty() {
            messages.push(json!({"role": "user", "content": images}));
        }
        messages
    }

    /// Whether the result is a tool error or a denial.
    pub fn is_error(&self) -> bool {
        self.status != ResultStatus::Success
    }

    /// The result as the model reads it in text mode (Cline's XML mode): the feedback block, hook context,
    /// then `{description} Result:` and the text for a text result (`(tool did not return anything)` when
    /// empty); results with images carry no header, and images appear as a placeholder line; then warnings
    /// and PostToolUse context. Blocks are separated by a newline.
    pub fn to_model_text(&self) -> String {
        let parts: Vec<String> = self
            .text_blocks(true)
            .into_iter()
            .map(|b| match b {
                Block::Text { text } => text,
                Block::Image { media_type, data } => format!("[image {media_type}, {} bytes base64]", data.len()),
            })
            .collect();
        parts.join("\n")
    }
}

/// A streamed tool use that is not complete yet: its input as far as it has arrived (from
/// [`crate::stream::parse_partial`] or [`crate::stream::XmlStreamParser`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PartialToolUse {
    /// The tool-use id, when the provider has sent it already (else empty).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The input so far.
    pub input: serde_json::Value,
}

impl PartialToolUse {
    /// A partial tool use.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: serde_json::Value) -> Self {
        Self { id: id.into(), name: name.into(), input }
    }
}

/// A message for the user's UI, sent by a tool through the `say` service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiEvent {
    /// The task it belongs to.
    pub task_id: String,
    /// The tool use whose call sent it (empty for the host's own messages), so a host running several calls
    /// at once (`toolshed serve`) shows each its own.
    pub tool_use_id: String,
    /// The tool that sent it.
    pub tool: String,
    /// Its kind (`tool`, `diff`, `command_output`, …).
    pub kind: String,
    /// The text.
    pub text: String,
    /// Whether a later event of the same kind replaces it.
    pub partial: bool,
}

/// The host's receiver of UI events.
pub type EventSink = std::sync::Arc<dyn Fn(&UiEvent) + Send + Sync>;
