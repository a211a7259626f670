//! The task's UI and state: `say` messages, the per-task key-value state stateless handlers keep, and the task itself (`task.info`).

use super::Empty;
use serde::{Deserialize, Serialize};

services! {
    /// `say`: a message for the user's UI (progress, a streamed diff); never part of a tool result. Subagent
    /// runs drop them.
    Say(SAY) = "say": SayRequest => Empty;
    /// `state.get`: reads a JSON value from the task's state (where a stateless handler keeps per-task state,
    /// such as a streamed edit's progress).
    StateGet(STATE_GET) = "state.get": StateGetRequest => StateGetResponse;
    /// `state.set`: writes (or with `null`, deletes) a JSON value in the task's state.
    StateSet(STATE_SET) = "state.set": StateSetRequest => Empty;
    /// `task.info`: the task of this call, as a call carries it by value, for a handler that was sent its
    /// reference (`task_ref`, see [`crate::capability::TASK_BY_REF`]) and has not seen that task yet.
    TaskInfoGet(TASK_INFO) = "task.info": Empty => crate::protocol::TaskInfo;
}

/// Request of [`Say`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SayRequest {
    /// What kind of message (`tool`, `diff`, `command_output`, `text`, …).
    pub kind: String,
    /// The message.
    pub text: String,
    /// Whether a later message of the same kind will replace this one (streaming).
    #[serde(default)]
    pub partial: bool,
}

/// Request of [`StateGet`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateGetRequest {
    /// The key; plugins prefix keys with their tool name.
    pub key: String,
}

/// Response of [`StateGet`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateGetResponse {
    /// The value, if set.
    #[serde(default)]
    pub value: Option<serde_json::Value>,
}

/// Request of [`StateSet`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateSetRequest {
    /// The key.
    pub key: String,
    /// The value; `None` deletes the key.
    #[serde(default)]
    pub value: Option<serde_json::Value>,
}
