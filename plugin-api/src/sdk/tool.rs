//! The [`Tool`] trait a plugin author implements, what its factory receives, and the [`Failure`] its phases
//! return with `?`.

use super::{HostClient, IsolatedError};
use crate::protocol::{Outcome, PartialBlock, Prepared, ServiceError, ToolCall, ToolDeclaration, ToolError};
use serde::de::DeserializeOwned;

/// What a factory receives when the runtime asks for a handler.
#[derive(Debug, Clone)]
pub struct ToolInit<'a> {
    /// The primary name being registered.
    pub name: &'a str,
    /// The plugin's configuration JSON from the user's config (`{}` when none).
    pub config: &'a str,
}

/// A tool, written in ordinary safe Rust. Handlers are stateless and shared by every task and every alias:
/// per-task state lives on the host side, behind services.
pub trait Tool: Send + Sync + Sized + 'static {
    /// The tool's input, deserialised from the model's JSON. Use serde defaults for optional parameters.
    type Args: DeserializeOwned;

    /// The tool's names, capabilities and specs.
    fn declaration() -> ToolDeclaration;

    /// Builds the handler; `Ok(None)` declines the tool (it is then not registered).
    fn new(init: &ToolInit<'_>) -> Result<Option<Self>, String>;

    /// Validation and the approval request. The default asks for nothing. An `Err` refuses the call with
    /// its [`Failure`]'s text, as [`Prepared::Error`] does.
    fn prepare(&self, _call: &ToolCall<Self::Args>, _host: &HostClient<'_>) -> Result<Prepared, Failure> {
        Ok(Prepared::Proceed)
    }

    /// Does the work. An `Err` is the tool error the model reads, as [`Outcome::Error`] is.
    fn execute(&self, call: &ToolCall<Self::Args>, host: &HostClient<'_>) -> Result<Outcome, Failure>;

    /// Sees a streamed, incomplete tool use (UI only). The default ignores it.
    fn partial(&self, _block: &PartialBlock, _host: &HostClient<'_>) {}

    /// A piece of work `execute` hands to [`HostClient::isolated`] to run in a child process: parsing hostile
    /// content whose recursion or loops cannot be bounded from outside. It runs in a fresh process on the
    /// same handler construction (`new` with the same config), so it must not rely on in-memory state; host
    /// services it calls are forwarded to the host. The default knows no job.
    fn job(&self, name: &str, _input: serde_json::Value, _host: &HostClient<'_>) -> Result<serde_json::Value, String> {
        Err(format!("this tool has no job named `{name}`"))
    }
}

/// Why a phase of a tool failed: the tool error the model reads. `?` makes one from a [`ServiceError`], a
/// [`ToolError`], an [`IsolatedError`] or a message; each of those is an error of the environment, not a
/// mistake of the model, and its text is the message alone. Say [`Failure::mistake`] when the model is at
/// fault.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure(ToolError);

impl Failure {
    /// A failure that counts as a mistake of the model (bad input, a refused path).
    pub fn mistake(message: impl Into<String>) -> Self {
        Self(ToolError { message: message.into(), mistake: true })
    }

    /// A failure that is not the model's fault (I/O, the environment, a host service).
    pub fn error(message: impl Into<String>) -> Self {
        Self(ToolError { message: message.into(), mistake: false })
    }

    /// The tool error it stands for.
    pub fn into_tool_error(self) -> ToolError {
        self.0
    }

    /// `execute`'s answer as the model reads it: the outcome, or this failure as [`Outcome::Error`].
    pub fn outcome(answer: Result<Outcome, Failure>) -> Outcome {
        answer.unwrap_or_else(|failure| Outcome::Error(failure.0))
    }

    /// `prepare`'s answer as the host reads it: the answer, or this failure as [`Prepared::Error`].
    pub fn prepared(answer: Result<Prepared, Failure>) -> Prepared {
        answer.unwrap_or_else(|failure| Prepared::Error(failure.0))
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for Failure {}

impl From<ToolError> for Failure {
    fn from(error: ToolError) -> Self {
        Self(error)
    }
}

impl From<ServiceError> for Failure {
    fn from(error: ServiceError) -> Self {
        Self::error(error.message)
    }
}

impl From<IsolatedError> for Failure {
    fn from(error: IsolatedError) -> Self {
        match error {
            IsolatedError::Job(message) | IsolatedError::Failed(message) => Self::error(message),
        }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Self::error(message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Self {
        Self::error(message)
    }
}
