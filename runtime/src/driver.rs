//! The model side of subagent runs: the [`AgentDriver`] trait a host implements (given the system prompt,
//! the conversation and the tool specs, return the next assistant message with native tool calls), the
//! provider-neutral message types it speaks, and [`OpenAiDriver`], a driver for any OpenAI-compatible
//! chat-completions endpoint.
//!
//! The runtime owns everything else: the child tasks, their tools, the loop, cancellation and the results
//! (see `subagents.rs`). A driver only talks to a model.

#[cfg(feature = "openai")]
mod openai;
#[cfg(feature = "openai")]
mod sse;

#[cfg(feature = "openai")]
pub use openai::OpenAiDriver;

// Without the feature: a driver type with no values, whose `from_config` says what is missing.
#[cfg(not(feature = "openai"))]
mod disabled;
#[cfg(not(feature = "openai"))]
pub(crate) use disabled::OpenAiDriver;

use crate::spec::Spec;
use crate::types::BoxFuture;
use crate::types::ToolResult;

/// The model side of a subagent run. The runtime calls it once per turn, from its own (tokio-based) actor
/// thread; the future must not block that thread. Dropping the future cancels the request.
pub trait AgentDriver: Send + Sync + 'static {
    /// The next assistant message for `request`.
    fn next_message(&self, request: AgentRequest) -> BoxFuture<Result<AgentReply, DriverError>>;
}

/// One model request of a subagent run.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRequest {
    /// The model a configured agent asks for (its `model`); `None` means the driver's own default.
    pub model: Option<String>,
    /// The system prompt, Cline's subagent suffix included.
    pub system_prompt: String,
    /// The conversation so far, oldest first.
    pub messages: Vec<AgentMessage>,
    /// The tools the subagent may call, resolved for its context; convert them with
    /// [`crate::Provider::render`].
    pub tools: Vec<Spec>,
}

/// One message of a subagent's conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentMessage {
    /// A user message of text blocks (the prompt and its environment details, or a runtime notice).
    User {
        /// The text blocks, in order.
        text: Vec<String>,
    },
    /// An assistant message: its text and its native tool calls.
    Assistant {
        /// The text (may be empty).
        text: String,
        /// The tool calls, in order.
        tool_calls: Vec<AgentToolCall>,
    },
    /// The results answering the previous assistant message's tool calls, in the calls' order
    /// ([`ToolResult::to_openai`], [`ToolResult::to_anthropic`] convert them).
    ToolResults {
        /// One result per tool call.
        results: Vec<ToolResult>,
    },
}

/// A native tool call of the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentToolCall {
    /// The tool-call id (the result answers it).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the model sent them: JSON text, not checked (a malformed one is reported back to
    /// the model as a tool error).
    pub arguments: String,
}

/// The model's answer to one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentReply {
    /// The assistant text.
    pub text: String,
    /// Its tool calls.
    pub tool_calls: Vec<AgentToolCall>,
    /// Token usage, when the endpoint reports it.
    pub usage: Option<AgentUsage>,
}

/// Token usage of one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// The model's context window, when the driver knows it (0 otherwise).
    pub context_window: u64,
}

/// Why a model request failed; the subagent run fails with this text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DriverError(pub String);
