//! Class 6: pipes and child processes in hooks, and the CLI's own output.
//!
//! Each hostile PreToolUse hook runs under the `toolshed` binary, whose SIGPIPE handling is what is tested
//! (a test binary ignores SIGPIPE anyway): once per case under `toolshed call`, and all together in one
//! `toolshed serve` over stdio, which must answer a plain read after every hostile call and still run at
//! the end. Hooks that leave processes behind write their pids to a file; each must be gone once the call
//! has answered. No wall-clock time is asserted: the hooks' timeout is small, and one generous bound
//! catches a hang.

use crate::util::{plugins, toolshed_bin, workspace};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The one generous bound on any answer: a hang (a deadlock on full pipes, a hook never killed) fails here.
const BOUND: Duration = Duration::from_secs(120);

/// The hooks' timeout where a hook must be ended by it; small, so the tests are quick.
const SMALL_TIMEOUT_MS: u64 = 500;

/// A call input over a pipe's 64 KiB, so a hook that does not read it leaves the host's write blocked or
/// broken.
fn big() -> String {
    "c".repeat(200 * 1024)
}

/// One hostile hook, the call it is matched to, and what must be seen.
struct Case {
    name: &'static str,
    /// The one tool it is matched to.
    tool: &'static str,
    /// The hook's command; `{dir}` is replaced by the directory its pid files go to.
    hook: &'static str,
    args: fn(&Path) -> Value,
    /// What the answer to the call must hold.
    answer: &'static str,
    /// What the log (stderr) must hold, if anything.
    log: Option<&'static str>,
    /// Files the hook writes pids to: those processes must be gone once the call answered.
    pid_files: &'static [&'static str],
    /// A file the hook writes how many bytes of input it read to: all of it, over 200 KiB.
    count_file: Option<&'static str>,
    /// What `toolshed call` prints as the result's note on stderr (a denial's reason).
    note: Option<&'static str>,
}

fn cases() -> Vec<Case> {
    vec![
        // Exits at once without reading: the host's write of 200 KB meets a closed pipe (SIGPIPE killed the
        // process). The hook allowed the call, so it runs.
        Case {
            name: "true",
            tool: "write_to_file",
            hook: "true",
            args: |_| json!({ "path": "big.txt", "content": big() }),
            answer: "The content was successfully saved to big.txt.",
            log: None,
            pid_files: &[],
            count_file: None,
            note: None,
        },
        // Denies without reading.
        Case {
            name: "exit 2 unread",
            tool: "new_task",
            hook: "echo no reading today >&2; exit 2",
            args: |_| json!({ "context": big() }),
            answer: "The user denied this operation.",
            log: None,
            pid_files: &[],
            count_file: None,
            note: Some("denied by a PreToolUse hook: no reading today"),
        },
        // Prints 1 MB before reading the 200 KB input: with the input written first, both sides blocked on
        // full pipes past the timeout. It then reads all of its input, says how much, and allows the call.
        Case {
            name: "a megabyte before reading",
            tool: "condense",
            hook: "head -c 1000000 /dev/zero | tr '\\000' x; wc -c > '{dir}/read.count'",
            args: |_| json!({ "context": big() }),
            answer: "This host does not support condense",
            log: None,
            pid_files: &[],
            count_file: Some("read.count"),
            note: None,
        },
        // Ignores its input and sleeps: killed at the timeout, and the call goes on (a hook failure is
        // logged and ignored, as Claude Code's protocol says).
        Case {
            name: "sleeps past its timeout",
            tool: "summarize_task",
            hook: "echo $$ > '{dir}/sleeper.pid'; exec sleep 1000",
            args: |_| json!({ "context": big() }),
            answer: "This host does not support summarize_task",
            log: Some("hook command timed out after 500 ms ([hooks] timeout_ms)"),
            pid_files: &["sleeper.pid"],
            count_file: None,
            note: None,
        },
        // Endless output on stdout, then on stderr: capped, killed, a failure.
        Case {
            name: "yes",
            tool: "list_files",
            hook: "yes",
            args: |_| json!({ "path": "." }),
            answer: "plain.txt",
            log: Some(
                "hook command printed more than 2097152 bytes on stdout ([hooks] max_output_bytes); it was stopped",
            ),
            pid_files: &[],
            count_file: None,
            note: None,
        },
        Case {
            name: "yes on stderr",
            tool: "search_files",
            hook: "yes >&2",
            args: |_| json!({ "path": ".", "regex": "storm" }),
            answer: "hello after the storm",
            log: Some(
                "hook command printed more than 2097152 bytes on stderr ([hooks] max_output_bytes); it was stopped",
            ),
            pid_files: &[],
            count_file: None,
            note: None,
        },
        // Exits at once, leaving children that hold its stdout open (one in a session of its own, one
        // double-forked): the output never ends by itself. They end with the hook, which allowed the call.
        Case {
            // The hook waits for its double fork's pid file before it ends (and its tree is killed), so the
            // file is there to check on a loaded machine too.
            name: "backgrounds sleepers",
            tool: "list_code_definition_names",
            hook: "sleep 1000 & echo $! > '{dir}/bg.pid'; setsid sleep 1000 & echo $! > '{dir}/setsid.pid'; \
                   ( ( sleep 1000 & echo $! > '{dir}/double.pid' ) & ); \
                   while [ ! -s '{dir}/double.pid' ]; do sleep 0.01; done; cat > /dev/null; exit 0",
            args: |_| json!({ "path": "." }),
            answer: "No source code definitions found.",
            log: None,
            pid_files: &["bg.pid", "setsid.pid", "double.pid"],
            count_file: None,
            note: None,
        },
        // Backgrounds a sleeper, then sleeps itself: at the timeout the whole tree goes.
        Case {
            name: "backgrounds a sleeper and times out",
            tool: "execute_command",
            hook: "sleep 1000 & echo $! > '{dir}/tree.pid'; echo $$ > '{dir}/tree-root.pid'; sleep 1000",
            args: |_| json!({ "command": "echo after-the-tree", "requires_approval": false }),
            answer: "after-the-tree",
            log: Some("hook command timed out after 500 ms ([hooks] timeout_ms)"),
            pid_files: &["tree.pid", "tree-root.pid"],
            count_file: None,
            note: None,
        },
    ]
}

/// A workspace with the plain file, and a directory outside it for the config and pid files.
struct Setup {
    ws: tempfile::TempDir,
    home: tempfile::TempDir,
    outside: tempfile::TempDir,
}

fn setup() -> Setup {
    let ws = workspace();
    std::fs::write(ws.path().join("plain.txt"), "hello after the storm\n").unwrap();
    Setup { ws, home: workspace(), outside: workspace() }
}

impl Setup {
    /// A config file with `cases` as PreToolUse hooks, each matched to its own tool.
    fn config(&self, cases: &[&Case]) -> PathBuf {
        let dir = self.outside.path().display().to_string();
        let hooks: Vec<String> = cases
            .iter()
            .map(|case| {
                let command = case.hook.replace("{dir}", &dir);
                format!("{{ matcher = \"{}\", command = {} }}", case.tool, toml_string(&command))
            })
            .collect();
        let config = self.outside.path().join("config.toml");
        let text = format!(
            "[hooks]\ntimeout_ms = {SMALL_TIMEOUT_MS}\nmax_output_bytes = 2097152\npre_tool_use = [\n  {}\n]\n",
            hooks.join(",\n  ")
        );
        std::fs::write(&config, text).unwrap();
        config
    }

    fn command(&self, config: &Path) -> Command {
        let mut command = Command::new(toolshed_bin());
        command
            .arg("--plugins")
            .arg(plugins())
            .arg("--config")
            .arg(config)
            .arg("--cwd")
            .arg(self.ws.path())
            .env("HOME", self.home.path())
            .env_remove("TOOLSHED_PLUGINS");
        command
    }
}

fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// Runs `command` with `input` on its stdin to its end, or fails the test at [`BOUND`].
fn output_within(mut command: Command, input: String) -> Output {
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let (done, wait) = mpsc::channel();
    let pid = child.id();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    match wait.recv_timeout(BOUND) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
            panic!("toolshed did not answer within {BOUND:?}");
        }
    }
}

/// Fails unless every process whose pid is in one of `files` (under `dir`) is gone or a zombie no one runs.
/// The files are written by the hook before it is killed; a missing file means the hook never got there,
/// which is a failure too.
fn check_gone(dir: &Path, files: &[&str], case: &str) {
    for file in files {
        let text = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{case}: no {file}: {e}"));
        let pid: i32 = text.trim().parse().unwrap();
        let deadline = Instant::now() + BOUND;
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            if stat.is_empty() || zombie {
                break;
            }
            assert!(Instant::now() < deadline, "{case}: the hook's process {pid} ({file}) outlived its call");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::fs::remove_file(dir.join(file)).unwrap();
    }
}

/// Fails unless the hook of `case` read all of its input (the JSON around 200 KiB of text).
fn check_count(dir: &Path, case: &Case) {
    let Some(file) = case.count_file else { return };
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: no {file}: {e}", case.name));
    let read: usize = text.trim().parse().unwrap();
    assert!(read > 200 * 1024, "{}: the hook read {read} bytes of its input", case.name);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn hostile_hooks_under_toolshed_call() {
    let setup = setup();
    for case in &cases() {
        let config = setup.config(&[case]);
        let mut command = setup.command(&config);
        // The input on stdin: 200 KB is over what one argument may hold.
        command.args(["call", "--yes", case.tool, "-"]);
        let output = output_within(command, (case.args)(setup.outside.path()).to_string());
        let (stdout, stderr) = (
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        );
        // A process killed by a signal has no exit code.
        assert!(output.status.code().is_some(), "{}: toolshed died: {:?}\n{stderr}", case.name, output.status);
        assert!(!stderr.contains("panicked"), "{}: {stderr}", case.name);
        check_answer(case, &stdout, &stderr);
        if let Some(log) = case.log {
            assert!(stderr.contains(log), "{}: expected {log:?} in the log:\n{stderr}", case.name);
        }
        if let Some(note) = case.note {
            assert!(stderr.contains(note), "{}: expected {note:?} in\n{stderr}", case.name);
        }
        check_gone(setup.outside.path(), case.pid_files, case.name);
        check_count(setup.outside.path(), case);
    }
    let written = std::fs::metadata(setup.ws.path().join("big.txt")).unwrap().len();
    assert_eq!(written, 200 * 1024);
}

/// A `toolshed serve` over stdio and a line-at-a-time JSON-RPC client of it; killed when dropped.
struct Served {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    fn start(mut command: Command, stderr: &Path) -> Served {
        // Every tool, the agent-loop ones too, as Cline serves them.
        command.args(["serve", "--yes", "--profile", "cline"]);
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(stderr).unwrap())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut served = Served { child, stdin, lines, next_id: 1 };
        served.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        served.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        served
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and waits (up to [`BOUND`]) for the answer with its id.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + BOUND;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(_) => panic!("no answer to {method} within {BOUND:?}; the server: {:?}", self.child.try_wait()),
            };
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// The text of a `tools/call` answer.
    fn call(&mut self, tool: &str, arguments: Value) -> String {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let content = answer["result"]["content"].as_array().cloned().unwrap_or_default();
        let texts: Vec<&str> = content.iter().filter_map(|c| c["text"].as_str()).collect();
        assert!(!texts.is_empty(), "{tool}: {answer}");
        texts.join("\n")
    }
}

/// The call's answer holds what `case` says, shown with the log when it does not.
fn check_answer(case: &Case, text: &str, log: &str) {
    assert!(text.contains(case.answer), "{}: expected {:?} in\n{}\n{log}", case.name, case.answer, excerpt(text));
}

fn excerpt(text: &str) -> &str {
    &text[..text.char_indices().nth(2000).map_or(text.len(), |(i, _)| i)]
}

#[test]
fn hostile_hooks_under_toolshed_serve() {
    let setup = setup();
    let cases = cases();
    let config = setup.config(&cases.iter().collect::<Vec<_>>());
    let log = setup.outside.path().join("serve.stderr");
    let mut served = Served::start(setup.command(&config), &log);
    for case in &cases {
        let text = served.call(case.tool, (case.args)(setup.outside.path()));
        let stderr = std::fs::read_to_string(&log).unwrap_or_default();
        check_answer(case, &text, &stderr);
        check_gone(setup.outside.path(), case.pid_files, case.name);
        check_count(setup.outside.path(), case);
        // The same process answers the next call.
        let plain = served.call("read_file", json!({"path": "plain.txt"}));
        assert!(plain.contains("1 | hello after the storm"), "after {}: {plain}\n{stderr}", case.name);
    }
    assert!(served.child.try_wait().unwrap().is_none(), "the server ended");
    // Endless output is read up to the cap and no further: `yes` once took the host to 4 GB. Generous: the
    // host with its plugins loaded sits near 100 MB.
    let status = std::fs::read_to_string(format!("/proc/{}/status", served.child.id())).unwrap();
    let peak_kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    eprintln!("toolshed serve's peak resident set after the hostile hooks: {peak_kib} KiB");
    assert!(peak_kib < 512 * 1024, "the server's peak resident set is {peak_kib} KiB");
    let stderr = std::fs::read_to_string(&log).unwrap();
    for log in cases.iter().filter_map(|c| c.log) {
        assert!(stderr.contains(log), "expected {log:?} in the log:\n{stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// The CLI's own output: a reader that goes away (`toolshed tools | head -1`) ends the command quietly,
/// with its usual exit code, instead of a panic in `println!` (SIGPIPE is ignored, so the write is EPIPE).
#[test]
fn the_cli_ends_quietly_when_its_reader_goes() {
    let setup = setup();
    let config = setup.outside.path().join("empty.toml");
    std::fs::write(&config, "").unwrap();
    let runs: [(&[&str], i32); 4] = [
        (&["tools"], 0),
        (&["tools", "--json"], 0),
        (&["schema", "--provider", "anthropic"], 0),
        // The tool's exit code is kept: 1 for a tool error.
        (&["call", "read_file", r#"{"path":"missing.txt"}"#], 1),
    ];
    for (args, code) in runs {
        // The read end is closed before toolshed writes anything, so its first write meets a closed pipe.
        let (reader, writer) = std::io::pipe().unwrap();
        let mut command = setup.command(&config);
        command.args(args).stdin(Stdio::null()).stdout(writer).stderr(Stdio::piped());
        let child = command.spawn().unwrap();
        drop(command);
        drop(reader);
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{args:?}: {:?}\n{stderr}", output.status);
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }

    // And as a shell runs it.
    let script = format!(
        "'{}' --plugins '{}' --config '{}' tools | head -1",
        toolshed_bin().display(),
        plugins().display(),
        config.display()
    );
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!("set -o pipefail; {script}"))
        .current_dir(setup.ws.path())
        .env("HOME", setup.home.path())
        .env_remove("TOOLSHED_PLUGINS")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(String::from_utf8_lossy(&output.stdout).lines().count(), 1);
    assert!(output.status.success(), "{:?}: {stderr}", output.status);
    assert!(!stderr.contains("panicked"), "{stderr}");

    // `watch` stops when its reader goes, without an error.
    let (mut reader, writer) = std::io::pipe().unwrap();
    let mut command = setup.command(&config);
    command.arg("watch").stdin(Stdio::piped()).stdout(writer).stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    drop(command);
    let mut first = [0u8; 6];
    reader.read_exact(&mut first).unwrap();
    drop(reader);
    // Ending its input stops it; its last line meets the closed pipe.
    drop(child.stdin.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{:?}: {stderr}", output.status);
    assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{stderr}");
}
