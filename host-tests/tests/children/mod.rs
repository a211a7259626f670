//! Every child starts clean, carries none of the host's secrets, and dies with its owner: one module per class
//! (named after it), each trying variants of its own, with the host and the attack running as a non-root user
//! (root hides most of these mistakes: it may open any terminal, read any process's environment, write any
//! directory).
//!
//! The harness here runs the `toolshed` CLI as that user: through `setpriv` when the tests run as root (CI),
//! as the tests' own user otherwise.

mod descriptors;
mod every_kind;
mod host_secrets;
mod outliving_the_owner;
mod scratch_space;
mod signal_state;
mod terminal;

use crate::util::{plugins, toolshed_bin};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The one generous bound for an event that has no result of its own to wait for.
pub const BOUND: Duration = Duration::from_secs(30);

/// The user the host and the attacks run as when the tests run as root: `nobody`.
pub const USER: u32 = 65534;

/// Whether the tests run as root (then everything here runs as [`USER`]).
pub fn root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// The uid the host runs as.
pub fn host_uid() -> u32 {
    if root() {
        USER
    } else {
        nix::unistd::geteuid().as_raw()
    }
}

/// A command running `program` as the non-root user.
pub fn as_user(program: &Path) -> Command {
    if !root() {
        return Command::new(program);
    }
    let mut command = Command::new("setpriv");
    command.args(["--reuid", &USER.to_string(), "--regid", &USER.to_string(), "--clear-groups", "--"]).arg(program);
    command
}

/// A directory of the non-root user's own (mode 0700), removed with the value.
pub fn user_dir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("ws-").tempdir().unwrap();
    give_to_user(dir.path());
    dir
}

/// Makes `path` the non-root user's (when running as root).
pub fn give_to_user(path: &Path) {
    if root() {
        nix::unistd::chown(path, Some(nix::unistd::Uid::from_raw(USER)), Some(nix::unistd::Gid::from_raw(USER)))
            .unwrap();
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// `toolshed --plugins … --cwd WS ARGS…` as the non-root user, HOME and TMPDIR in `home`, no config of the
/// tests' own, output discarded (the caller pipes what it reads).
pub fn cli(ws: &Path, home: &Path, args: &[&str]) -> Command {
    let mut command = as_user(&toolshed_bin());
    command
        .arg("--plugins")
        .arg(plugins())
        .arg("--cwd")
        .arg(ws)
        .args(args)
        .env("HOME", home)
        .env("TMPDIR", home)
        .env("TOOLSHED_TIMEOUTS_KILL_GRACE_MS", "200")
        .env_remove("TOOLSHED_PLUGINS")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_RUNTIME_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// `toolshed call --yes execute_command` of `command` as the non-root user, to its end.
pub fn run_command(ws: &Path, home: &Path, command: &str, env: &[(&str, &str)]) -> Output {
    let input = serde_json::json!({"command": command, "requires_approval": false}).to_string();
    cli(ws, home, &["call", "--yes", "execute_command", &input])
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// The result text of [`run_command`] (stderr appended when there is any, for the failure messages).
pub fn command_text(ws: &Path, home: &Path, command: &str, env: &[(&str, &str)]) -> String {
    let output = run_command(ws, home, command, env);
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.stderr.is_empty() {
        text.push_str("\n[stderr] ");
        text.push_str(&String::from_utf8_lossy(&output.stderr));
    }
    text
}

/// The command's output in a result text (after Cline's `Output:` line), without the header that repeats
/// the command.
pub fn output_of(text: &str) -> &str {
    text.split_once("\nOutput:\n").map_or("", |(_, output)| output)
}

/// Writes the non-root user's `~/.toolshed/config.toml` under `home`.
pub fn user_config(home: &Path, text: &str) {
    let dir = home.join(".toolshed");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
    give_to_user(&dir);
    give_to_user(&dir.join("config.toml"));
}

/// A `/proc/PID/status` field, such as `SigBlk`.
pub fn status_field(pid: u32, field: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| line.strip_prefix(&format!("{field}:")).map(|v| v.trim().to_owned()))
}

/// Whether no process has `pid` any more. A zombie is dead but still has it: one whose parent is this test
/// process (a subreaper, as every process that runs a runtime is: the orphans of a host it killed come to it)
/// is reaped here; one that is someone else's is theirs to reap.
pub fn gone(pid: i32) -> bool {
    let target = nix::unistd::Pid::from_raw(pid);
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
    if fields.first() == Some(&"Z") && fields.get(1) == Some(&std::process::id().to_string().as_str()) {
        let _ = nix::sys::wait::waitpid(target, Some(nix::sys::wait::WaitPidFlag::WNOHANG));
    }
    nix::sys::signal::kill(target, None).is_err()
}

/// Waits until every pid in `pids` is gone, failing with `what` after [`BOUND`].
pub fn wait_gone(pids: &[i32], what: &str) {
    let deadline = Instant::now() + BOUND;
    while let Some(pid) = pids.iter().copied().find(|p| !gone(*p)) {
        assert!(Instant::now() < deadline, "{what}: {pid} survived ({})", describe(pid));
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A process's command line and parent, for failure messages.
pub fn describe(pid: i32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    format!("{} [{}]", String::from_utf8_lossy(&cmdline).replace('\0', " "), stat.trim())
}

/// The pids a command wrote to `file` in its workspace, once there are `n` of them.
pub fn wait_for_pids(file: &Path, n: usize) -> Vec<i32> {
    let deadline = Instant::now() + BOUND;
    loop {
        let found: Vec<i32> = std::fs::read_to_string(file)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        if found.len() >= n {
            return found;
        }
        assert!(Instant::now() < deadline, "the command wrote {found:?} to {}, not {n} pids", file.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}
