//! The files the model names: resolving its paths, `.clineignore`'s checks, and the task's read cache.

use super::Empty;
use serde::{Deserialize, Serialize};

services! {
    /// `path.resolve`: a model-given path (relative, absolute, or `@root:path`) to an absolute one.
    PathResolve(PATH_RESOLVE) = "path.resolve": ResolveRequest => ResolvedPath;
    /// `path.check`: whether `.clineignore` lets the model access paths.
    PathCheck(PATH_CHECK) = "path.check": CheckRequest => CheckResponse;
    /// `read_cache.record`: records a file read in the task's dedup cache and returns its read count.
    ReadCacheRecord(READ_CACHE_RECORD) = "read_cache.record": RecordReadRequest => RecordReadResponse;
    /// `read_cache.forget`: drops paths from the task's read cache (after a write).
    ReadCacheForget(READ_CACHE_FORGET) = "read_cache.forget": ForgetRequest => Empty;
}

/// Request of [`PathResolve`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolveRequest {
    /// The path as the model wrote it.
    pub path: String,
}

/// Response of [`PathResolve`].
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

services! {
    /// `path.check_command`: Cline's `validateCommand` — the first argument of a file-reading command that
    /// `.clineignore` blocks.
    PathCheckCommand(PATH_CHECK_COMMAND) = "path.check_command": CheckCommandRequest => CheckCommandResponse;
}

/// Request of [`PathCheckCommand`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckCommandRequest {
    /// The shell command, as it will run (an `@root:` prefix already taken off).
    pub command: String,
    /// The absolute directory it runs in, where its relative arguments are; the primary root when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// Response of [`PathCheckCommand`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckCommandResponse {
    /// The blocked argument, if any.
    #[serde(default)]
    pub blocked: Option<String>,
}

/// Request of [`PathCheck`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckRequest {
    /// Paths as the model wrote them or absolute.
    pub paths: Vec<String>,
    /// The paths are to be written, moved or deleted: the rules files themselves (`.clineignore` and the
    /// files it includes) are refused too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub write: bool,
}

/// Response of [`PathCheck`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResponse {
    /// One flag per requested path: `false` when `.clineignore` blocks it.
    pub allowed: Vec<bool>,
}

/// Request of [`ReadCacheRecord`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordReadRequest {
    /// The absolute path read.
    pub path: String,
    /// Its modification time, in nanoseconds since the epoch.
    pub mtime_ns: u128,
}

/// Response of [`ReadCacheRecord`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordReadResponse {
    /// How many times this task has read the unchanged file, this read included.
    pub read_count: u32,
}

/// Request of [`ReadCacheForget`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForgetRequest {
    /// Absolute paths to forget; empty forgets everything.
    pub paths: Vec<String>,
}
