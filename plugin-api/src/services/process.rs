//! Child processes: `process.*`, which spawn, read and kill shell commands for execute_command, and the user's command settings.

use super::Empty;
use serde::{Deserialize, Serialize};

services! {
    /// `process.spawn`: starts `$SHELL -c COMMAND` in its own process group, stdin closed, stdout and stderr
    /// interleaved into one stream, with Cline's pager-free environment. Plugins never spawn or reap children
    /// themselves.
    ProcessSpawn(PROCESS_SPAWN) = "process.spawn": SpawnRequest => SpawnResponse;
    /// `process.read`: the output that arrived since the last read, waiting up to `wait_ms` for some.
    ProcessRead(PROCESS_READ) = "process.read": ReadRequest => ReadResponse;
    /// `process.kill`: SIGTERM to the process group, SIGKILL after the grace period. Works after cancellation.
    ProcessKill(PROCESS_KILL) = "process.kill": KillRequest => Empty;
    /// `commands.settings`: the user's command settings (permissions JSON, timeouts, YOLO).
    CommandsSettingsService(COMMANDS_SETTINGS) = "commands.settings": Empty => CommandsSettings;
}

/// Request of [`ProcessSpawn`].
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

/// Response of [`ProcessSpawn`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpawnResponse {
    /// The handle for `process.read` and `process.kill`.
    pub id: u64,
    /// The shell's process id (also its process group id).
    pub pid: u32,
}

/// Request of [`ProcessRead`].
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

/// Response of [`ProcessRead`].
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

/// Request of [`ProcessKill`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KillRequest {
    /// The process.
    pub id: u64,
}

/// Response of [`CommandsSettingsService`].
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
    /// The calling task's scratch directory, private to the user, for files that hold its data (a command's
    /// spilled output). `None` from a host without one: then nothing is written outside the workspace.
    #[serde(default)]
    pub scratch_dir: Option<String>,
}
