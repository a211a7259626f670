//! Breaks found by red-teaming `toolshed serve`'s sessions, profiles and roots (issue 24), each kept as the
//! test that failed.
//!
//! - The `mcp` profile was enforced only where serve answers `tools/call`: any other way into the task's
//!   pipeline (a plugin's `tool.call`, a host calling `execute`) ran the hidden agent-loop tools, and the
//!   unknown-tool error named them as available, inviting the model to call what is then refused.
//! - Every `notifications/roots/list_changed` asked the client for its roots again, one after the other, and
//!   calls waited behind them all: a client sending a flood and answering none held its calls for the flood
//!   times `[serve] roots_timeout_ms`. Now the notices that came while the roots were being asked for cost
//!   one more `roots/list`.
//! - HTTP sessions had no cap: each holds a task until `[serve] session_idle_ms` (30 minutes) without a
//!   message, and a client with the token opening them in a loop grew the server by about 60 KiB each,
//!   hundreds a second, until it ran out of memory. `[serve] max_sessions` bounds them; one more is 503.
//! - A client reusing a JSON-RPC id still in flight left the first call out of reach: rmcp keeps one token
//!   per id, the last, so `notifications/cancelled` stopped only the second call and the first one's
//!   process ran on until the session ended. The session now keeps every call under its id.

use crate::util::*;
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Child, ChildStdin, Command};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};
use toolshed::config::Profile;
use toolshed::{ResultStatus, TaskContext, ToolUse};

#[test]
fn the_mcp_profile_refuses_agent_loop_tools_on_every_path_and_never_names_them() {
    let ws = workspace();
    let runtime = shipped().yes(true).build().unwrap();
    assert!(runtime.load_errors().is_empty(), "{:?}", runtime.load_errors());
    let task = runtime.task(TaskContext::new(ws.path()).with_profile(Profile::Mcp));
    let marker = ws.path().join("demo-ran");
    let command = format!("touch {}", marker.display());
    let result =
        block_on(task.execute(ToolUse::new("c1", "attempt_completion", json!({"result": "done", "command": command}))));
    assert_eq!(result.status, ResultStatus::Error);
    let refused = result.to_model_text();
    assert!(refused.contains("not served with `--profile mcp`"), "{refused}");
    assert!(!marker.exists(), "attempt_completion's demo command ran in an `mcp` task");
    for name in ["Attempt_Completion", "attempt_completion ", "nope"] {
        let result = block_on(task.execute(ToolUse::new("c2", name, json!({}))));
        let text = result.to_model_text();
        assert!(text.contains("does not exist"), "{text}");
        assert!(text.contains("read_file"), "{text}");
        for hidden in toolshed::config::AGENT_LOOP_TOOLS {
            assert!(
                !text.contains(&format!(" {hidden},")) && !text.contains(&format!(" {hidden}.")),
                "{hidden} named: {text}"
            );
        }
    }
    // The `cline` profile still has them.
    let cline = runtime.task(TaskContext::new(ws.path()));
    let text = block_on(cline.execute(ToolUse::new("c3", "nope", json!({})))).to_model_text();
    assert!(text.contains("attempt_completion"), "{text}");
}

/// The one generous bound every wait here has.
const BOUND: Duration = Duration::from_secs(60);

/// `toolshed serve` over stdio, spoken to line by line; killed when the test ends.
struct Served {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Served {
    /// Serves in `cwd` (no `--cwd`: the client's roots are the workspace) with `config` as the user's file.
    fn start(home: &std::path::Path, cwd: &std::path::Path, config: &str) -> Self {
        write_user_config(home, config);
        let (child, stdin, lines) = spawn_lines(
            Command::new(toolshed_bin())
                .args(["--plugins", &plugins().display().to_string(), "serve", "--yes"])
                .current_dir(cwd)
                .env("HOME", home)
                .env_remove("TOOLSHED_PLUGINS"),
        );
        Self { child, stdin, lines }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next message from the server.
    fn next(&self) -> Value {
        match self.lines.recv_timeout(BOUND) {
            Ok(line) => serde_json::from_str(&line).unwrap_or_else(|_| json!({"unparsed": line})),
            Err(RecvTimeoutError::Timeout) => panic!("no message from the server within {BOUND:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed its stdout"),
        }
    }

    fn initialize(&mut self, capabilities: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": capabilities,
            "clientInfo": {"name": "hostile", "version": "1"}}}));
        let deadline = Instant::now() + BOUND;
        while self.next()["id"] != json!(0) {
            assert!(Instant::now() < deadline);
        }
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_flood_of_roots_changes_asks_for_the_roots_once_more_not_once_each() {
    let (ws, home) = (workspace(), workspace());
    let mut server = Served::start(home.path(), ws.path(), "[serve]\nroots_timeout_ms = 100\n");
    server.initialize(json!({"roots": {"listChanged": true}}));
    // The first roots/list (after `initialized`) is never answered, nor any after it.
    let first = server.next();
    assert_eq!(first["method"], "roots/list", "{first}");
    const FLOOD: usize = 40;
    for _ in 0..FLOOD {
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    }
    server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "list_files", "arguments": {"path": "."}}}));
    let mut asked = 1;
    let answer = loop {
        let message = server.next();
        if message["method"] == "roots/list" {
            asked += 1;
        } else if message["id"] == json!(1) {
            break message;
        }
    };
    assert!(answer["result"]["content"].is_array(), "{answer}");
    assert!(asked <= 3, "{asked} roots/list requests for one list and {FLOOD} change notices");
}

#[test]
fn sessions_past_max_sessions_are_refused_until_one_ends() {
    use crate::serve_sessions::{http_server, post, raw_session};
    let (ws, home) = (workspace(), workspace());
    write_user_config(home.path(), "[serve]\nmax_sessions = 2\n");
    let cwd = ws.path().display().to_string();
    let (_server, url) = http_server(home.path(), ws.path(), &["--cwd", &cwd]);
    let authority = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let first = raw_session(&authority);
    let _second = raw_session(&authority);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let (_refused, head) = post(&authority, "POST", None, &init);
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert!(head.to_ascii_lowercase().contains("retry-after: 1"), "{head}");
    // The open sessions still answer.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let (_listed, head) = post(&authority, "POST", Some(&first), &list);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // One ends: a new one opens (once the ended session's handler is gone).
    let (_deleted, head) = post(&authority, "DELETE", Some(&first), "");
    assert!(head.starts_with("HTTP/1.1 204"), "{head}");
    let deadline = Instant::now() + BOUND;
    loop {
        let (_third, head) = post(&authority, "POST", None, &init);
        if head.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(head.starts_with("HTTP/1.1 503") && Instant::now() < deadline, "{head}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn cancelling_an_id_reused_while_in_flight_stops_every_call_under_it_and_no_other() {
    use crate::serve_sessions::{alive, read_pid};
    let (ws, home) = (workspace(), workspace());
    let mut server = Served::start(home.path(), ws.path(), "");
    server.initialize(json!({}));
    let mut pids = Vec::new();
    for (n, id) in [(1, 7), (2, 7), (3, 8)] {
        let pid_file = ws.path().join(format!("{n}.pid"));
        let command = format!("echo $$ > {}; exec sleep 31{n}", pid_file.display());
        server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "execute_command", "arguments": {"command": command, "requires_approval": false}}}));
        pids.push(read_pid(&pid_file));
    }
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}));
    let deadline = Instant::now() + BOUND;
    while alive(pids[0]) || alive(pids[1]) {
        assert!(Instant::now() < deadline, "a call under the cancelled id still runs: {pids:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(alive(pids[2]), "the call under another id was stopped too");
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 8}}));
    while alive(pids[2]) {
        assert!(Instant::now() < deadline, "the last call outlived its cancellation");
        std::thread::sleep(Duration::from_millis(20));
    }
}
