//! Names and JSON shapes of the host services every Toolshed host offers; plugins reach them through [`crate::HostClient`].

use serde::{Deserialize, Serialize};

/// `path.resolve`: a model-given path (relative, absolute, or `@root:path`) to an absolute one.
pub const PATH_RESOLVE: &str = "path.resolve";
/// `path.check`: whether `.clineignore` lets the model access paths.
pub const PATH_CHECK: &str = "path.check";
/// `read_cache.record`: records a file read in the task's dedup cache and returns its read count.
pub const READ_CACHE_RECORD: &str = "read_cache.record";
/// `read_cache.forget`: drops paths from the task's read cache (after a write).
pub const READ_CACHE_FORGET: &str = "read_cache.forget";

/// `say`: a message for the user's UI (progress, a streamed diff); never part of a tool result. Subagent
/// runs drop them.
pub const SAY: &str = "say";
/// `state.get`: reads a JSON value from the task's state (where a stateless handler keeps per-task state,
/// such as a streamed edit's progress).
pub const STATE_GET: &str = "state.get";
/// `state.set`: writes (or with `null`, deletes) a JSON value in the task's state.
pub const STATE_SET: &str = "state.set";

/// Request of [`SAY`].
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

/// Request of [`STATE_GET`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateGetRequest {
    /// The key; plugins prefix keys with their tool name.
    pub key: String,
}

/// Response of [`STATE_GET`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateGetResponse {
    /// The value, if set.
    #[serde(default)]
    pub value: Option<serde_json::Value>,
}

/// Request of [`STATE_SET`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateSetRequest {
    /// The key.
    pub key: String,
    /// The value; `None` deletes the key.
    #[serde(default)]
    pub value: Option<serde_json::Value>,
}

/// The empty response of services that answer nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Empty {}

/// Request of [`PATH_RESOLVE`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolveRequest {
    /// The path as the model wrote it.
    pub path: String,
}

/// Response of [`PATH_RESOLVE`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedPath {
    /// The absolute, lexically normalised path.
    pub absolute: String,
    /// The path to show the model and the user (relative to its root, `@root:rel` in multi-root).
    pub display: String,
    /// The workspace root it resolved against.
    pub root: String,
    /// Whether the absolute path lies inside a workspace root.
    pub inside_workspace: bool,
}

/// Request of [`PATH_CHECK`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckRequest {
    /// Paths as the model wrote them or absolute.
    pub paths: Vec<String>,
}

/// Response of [`PATH_CHECK`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResponse {
    /// One flag per requested path: `false` when `.clineignore` blocks it.
    pub allowed: Vec<bool>,
}

/// Request of [`READ_CACHE_RECORD`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordReadRequest {
    /// The absolute path read.
    pub path: String,
    /// Its modification time, in nanoseconds since the epoch.
    pub mtime_ns: u128,
}

/// Response of [`READ_CACHE_RECORD`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordReadResponse {
    /// How many times this task has read the unchanged file, this read included.
    pub read_count: u32,
}

/// Request of [`READ_CACHE_FORGET`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForgetRequest {
    /// Absolute paths to forget; empty forgets everything.
    pub paths: Vec<String>,
}
