//! The harness: where the built plugins and fixtures are, temp workspaces, runtimes, and the CLI binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use toolshed::{Runtime, RuntimeBuilder, TaskContext, TaskHandle, ToolResult, ToolUse};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

fn dir_from_env(var: &str, default: &str, must_hold: &str) -> PathBuf {
    let dir = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| workspace_root().join(default));
    assert!(
        dir.join(must_hold).is_file(),
        "{} not found: the host tests load real plugin libraries; run `cargo xtask test`, which builds them first",
        dir.join(must_hold).display()
    );
    dir
}

/// A library file name on this platform.
pub fn lib(name: &str) -> String {
    format!("{}{name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX)
}

/// The shipped plugins, built by `cargo xtask test`.
pub fn plugins() -> PathBuf {
    dir_from_env("TOOLSHED_TEST_PLUGINS", "target/plugins-debug", &lib("read_file"))
}

/// The in-workspace fixture plugins.
pub fn fixtures() -> PathBuf {
    dir_from_env("TOOLSHED_TEST_FIXTURES", "target/fixtures-debug", &lib("fixture_tools"))
}

/// Fixtures built against foreign copies of the interface.
pub fn foreign() -> PathBuf {
    dir_from_env("TOOLSHED_TEST_FOREIGN", "target/fixtures-foreign/debug", &lib("fixture_api_v2"))
}

/// A fixture library file.
pub fn fixture(name: &str) -> PathBuf {
    fixtures().join(lib(name))
}

/// The `toolshed` binary (package `toolshed-cli`), built by `cargo xtask test` next to the plugins.
pub fn toolshed_bin() -> PathBuf {
    let bin = workspace_root().join("target/debug/toolshed");
    assert!(bin.is_file(), "{} not found: run `cargo xtask test` (or `cargo build -p toolshed-cli`)", bin.display());
    bin
}

/// A runtime builder over the shipped plugins.
pub fn shipped() -> RuntimeBuilder {
    Runtime::builder().plugin_dir(plugins())
}

/// Runs a future to completion on a fresh current-thread runtime (as a host with its own executor would).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime").block_on(future)
}

/// One call through the full pipeline.
pub fn call(task: &TaskHandle, tool: &str, input: serde_json::Value) -> ToolResult {
    block_on(task.execute(ToolUse::new("t1", tool, input)))
}

/// The text of a one-block text result.
pub fn text(result: &ToolResult) -> String {
    match result.blocks.as_slice() {
        [toolshed::Block::Text { text }] => text.clone(),
        other => panic!("expected one text block, got {other:?}"),
    }
}

/// A temporary workspace directory. Its name must not start with `.` (tempfile's default `.tmp`): Cline's
/// list_files shows hidden directories when the listed directory is itself hidden.
pub fn workspace() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("ws-").tempdir().expect("tempdir")
}

/// A task in `dir`.
pub fn task_in(runtime: &Runtime, dir: &Path) -> TaskHandle {
    runtime.task(TaskContext::new(dir))
}

/// Runs the CLI with a private HOME (no user config leaks in) and returns its output.
pub fn toolshed(home: &Path, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(toolshed_bin());
    // The declaration index of `toolshed call` goes under the private HOME too.
    command.args(args).current_dir(cwd).env("HOME", home).env_remove("TOOLSHED_PLUGINS").env_remove("XDG_CACHE_HOME");
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("running toolshed")
}

/// The `HOST:PORT` a `toolshed serve --http` prints on stderr (`toolshed: serving MCP on http://…/mcp`), read
/// from its stderr lines; the lines after it stay unread.
pub fn served_authority(lines: &mut impl Iterator<Item = std::io::Result<String>>) -> String {
    let url = lines
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("toolshed: serving MCP on ").map(str::to_owned))
        .expect("the server prints its address");
    url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned()
}

/// Stdout as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Stderr as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Reads one HTTP/1.1 request with a JSON body from `stream`, as the scripted model endpoints on 127.0.0.1
/// receive it; `None` when the client hung up first.
pub fn read_json_request(stream: &std::net::TcpStream) -> Option<serde_json::Value> {
    use std::io::{BufRead, Read};
    let mut reader = std::io::BufReader::new(stream.try_clone().ok()?);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().ok()?;
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// Starts `command` with piped stdin and stdout (stderr dropped) and reads its stdout line by line on a
/// thread: the child, its stdin, and the lines as they come.
pub fn spawn_lines(
    command: &mut Command,
) -> (std::process::Child, std::process::ChildStdin, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead as _;
    use std::process::Stdio;
    let mut child =
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("spawning");
    let (stdin, stdout) = (child.stdin.take().expect("stdin"), child.stdout.take().expect("stdout"));
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (child, stdin, lines)
}

/// Writes the user's configuration file under a private HOME.
pub fn write_user_config(home: &Path, text: &str) {
    std::fs::create_dir_all(home.join(".toolshed")).expect("creating ~/.toolshed");
    std::fs::write(home.join(".toolshed/config.toml"), text).expect("writing ~/.toolshed/config.toml");
}

/// A child killed and reaped when the test ends, however it ends (a failed assertion included), so no test
/// leaves a server running.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One browser test at a time: each starts a Chromium of several processes, and many at once on a small
/// machine turn every wait into a timeout. Held for the test's life (a failed test's poison is ignored).
pub fn browser_turn() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs the ignored test `name` (its full path, such as `panics::backtraces_body`) alone in a new process of
/// this test binary, with `env` added and `body_marker` set so the body knows it was asked for; returns its
/// stdout and stderr, asserting it passed. For a test that needs the process to itself: one that changes the
/// environment (never safe beside other threads: the plugins' own std copies and C code read it without the
/// host's lock), or measures the whole process.
pub fn in_own_process(name: &str, body_marker: &str, env: &[(&str, &str)]) -> String {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--ignored", "--nocapture", "--test-threads", "1"])
        .env(body_marker, "1")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{name} failed in its own process:\n{said}");
    assert!(said.contains("1 passed"), "{name} did not run:\n{said}");
    said
}
