//! Streaming input from a model: tolerant partial JSON for native tool calls whose arguments arrive in
//! pieces, and Cline's XML tool-use format for text-mode models. Both feed [`crate::TaskHandle::partial_use`]
//! while a block streams; only a complete block is ever executed.

pub mod partial_json;
pub mod xml;

pub use partial_json::{parse_partial, PartialJson, PartialJsonError};
pub use xml::{parse_assistant_message, AssistantBlock, XmlEvent, XmlStreamParser, XmlToolUse};
