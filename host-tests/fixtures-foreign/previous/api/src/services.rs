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

/// `process.spawn`: starts `$SHELL -c COMMAND` in its own process group, stdin closed, stdout and stderr
/// interleaved into one stream, with Cline's pager-free environment. Plugins never spawn or reap children
/// themselves.
pub const PROCESS_SPAWN: &str = "process.spawn";
/// `process.read`: the output that arrived since the last read, waiting up to `wait_ms` for some.
pub const PROCESS_READ: &str = "process.read";
/// `process.kill`: SIGTERM to the process group, SIGKILL after the grace period. Works after cancellation.
pub const PROCESS_KILL: &str = "process.kill";
/// `commands.settings`: the user's command settings (permissions JSON, timeouts, YOLO).
pub const COMMANDS_SETTINGS: &str = "commands.settings";

/// Request of [`PROCESS_SPAWN`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpawnRequest {
    /// The shell command.
    pub command: String,
    /// The absolute working directory; the primary workspace root when absent.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Extra environment variables.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
}

/// Response of [`PROCESS_SPAWN`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpawnResponse {
    /// The handle for `process.read` and `process.kill`.
    pub id: u64,
    /// The shell's process id (also its process group id).
    pub pid: u32,
}

/// Request of [`PROCESS_READ`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadRequest {
    /// The process.
    pub id: u64,
    /// How long to wait for output when none is buffered.
    pub wait_ms: u64,
    /// The most bytes to return at once.
    #[serde(default = "default_read_max")]
    pub max_bytes: usize,
}

fn default_read_max() -> usize {
    256 * 1024
}

/// Response of [`PROCESS_READ`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadResponse {
    /// Output since the last read (invalid UTF-8 replaced; a character split across reads is kept whole).
    pub output: String,
    /// The process has exited and all its output was read.
    pub done: bool,
    /// Its exit code, once exited normally.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// The signal that ended it, by name (`SIGKILL`), once ended by one.
    #[serde(default)]
    pub signal: Option<String>,
}

/// Request of [`PROCESS_KILL`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KillRequest {
    /// The process.
    pub id: u64,
}

/// Response of [`COMMANDS_SETTINGS`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandsSettings {
    /// The JSON of `CLINE_COMMAND_PERMISSIONS` (the environment variable wins over the config file).
    #[serde(default)]
    pub permissions: Option<String>,
    /// The default command timeout.
    pub default_timeout_ms: u64,
    /// The timeout of long-running commands (builds, installs, tests).
    pub long_timeout_ms: u64,
    /// YOLO mode: commands get timeouts.
    #[serde(default)]
    pub yolo: bool,
    /// How long "still running" waits before it is said.
    #[serde(default)]
    pub notice_ms: u64,
}

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

/// `path.check_command`: Cline's `validateCommand` — the first argument of a file-reading command that
/// `.clineignore` blocks.
pub const PATH_CHECK_COMMAND: &str = "path.check_command";

/// Request of [`PATH_CHECK_COMMAND`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckCommandRequest {
    /// The shell command.
    pub command: String,
}

/// Response of [`PATH_CHECK_COMMAND`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckCommandResponse {
    /// The blocked argument, if any.
    #[serde(default)]
    pub blocked: Option<String>,
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
