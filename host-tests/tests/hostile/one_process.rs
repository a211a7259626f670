//! Must show, part one: ONE long-lived host, a `toolshed serve` process over stdio, receives every hostile
//! call of the fixture suite in turn (documents, minified sources, long lines, nested pages, bad skills,
//! hostile hooks). Each answers with a tool error or a bounded result, the same process then answers a plain
//! read, and at the end its peak resident set (`VmHWM`, the host alone: child-process jobs are processes of
//! their own) is under a generous bound.
//!
//! The host is a child process rather than a runtime inside the test binary so that a host that dies (a
//! stack overflow, an abort) fails this test with the fixture's name instead of ending every test.

use super::fixtures::{check_hostile, check_plain, peak_rss_kib, plain_args, tail, Answer, Suite, RSS_BOUND_KIB};
use crate::util::{plugins, toolshed_bin};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The one generous bound on any single answer.
const ANSWER_BOUND: Duration = Duration::from_secs(180);

/// A `toolshed serve` over stdio and a line-at-a-time JSON-RPC client of it; killed when dropped.
struct StdioHost {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    stderr: PathBuf,
    next_id: u64,
}

impl Drop for StdioHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl StdioHost {
    fn start(suite: &Suite) -> StdioHost {
        let stderr = suite.outside.path().join("serve.stderr");
        let mut command = Command::new(toolshed_bin());
        // A safety net for the shared machine, far above the bound checked: a host that still builds a dense
        // 16384 × 1048576 range fails its allocation here instead of taking the machine's memory.
        // SAFETY: setrlimit is async-signal-safe and the closure allocates nothing.
        unsafe {
            command.pre_exec(|| {
                let limit = super::fixtures::ADDRESS_SPACE_NET;
                nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_AS, limit, limit)
                    .map_err(std::io::Error::from)
            });
        }
        let mut child = command
            .arg("--plugins")
            .arg(plugins())
            .arg("--config")
            .arg(&suite.config)
            .arg("--cwd")
            .arg(suite.workspace.path())
            .args(["serve", "--yes", "--profile", "cline"])
            .env("HOME", suite.home.path())
            .env_remove("TOOLSHED_PLUGINS")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut host = StdioHost { child, stdin, lines, stderr, next_id: 1 };
        let init = host.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "1"}}),
        );
        assert!(init.is_ok(), "initialize: {init:?}");
        host.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        host
    }

    fn send(&mut self, message: &Value) {
        // A host that died shows up as a closed pipe here or as the end of its output below.
        let _ = writeln!(self.stdin, "{message}").and_then(|()| self.stdin.flush());
    }

    /// One request; its result, or why there is none (the error, the host's death, no answer in time).
    fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = match self.lines.recv_timeout(ANSWER_BOUND) {
                Ok(line) => line,
                Err(mpsc::RecvTimeoutError::Timeout) => return Err(format!("no answer within {ANSWER_BOUND:?}")),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
                    return Err(format!("the host ended ({status}); its stderr ends:\n{}", tail(&self.stderr, 4000)));
                }
            };
            let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
            if message["id"] != json!(id) {
                continue;
            }
            return match message.get("result") {
                Some(result) => Ok(result.clone()),
                None => Err(format!("JSON-RPC error: {}", message["error"])),
            };
        }
    }

    fn call_tool(&mut self, tool: &str, args: &Value) -> Result<Answer, String> {
        self.request("tools/call", json!({"name": tool, "arguments": args})).map(|r| Answer::from_result(&r))
    }
}

#[test]
fn one_host_answers_every_hostile_call_and_the_next_plain_one_within_bounded_memory() {
    let suite = Suite::build();
    let mut host = StdioHost::start(&suite);
    let plain = host.call_tool("read_file", &plain_args()).unwrap();
    check_plain("start-up", &plain).unwrap();

    let mut failures = Vec::new();
    let mut deaths = 0;
    // `HOSTILE_ONLY=web_fetch` runs only the calls whose label holds it: to reproduce one fixture.
    let only = std::env::var("HOSTILE_ONLY").unwrap_or_default();
    for call in suite.calls.iter().filter(|c| c.label.contains(&only)) {
        let started = std::time::Instant::now();
        let answered = host.call_tool(call.tool, &call.args);
        // Shown with --nocapture, to find the slow fixtures; nothing is asserted on it.
        let shown = match &answered {
            Ok(answer) => format!("{} bytes: {:.160}", answer.text.len(), answer.text.replace('\n', " ")),
            Err(e) => e.lines().next().unwrap_or_default().to_owned(),
        };
        eprintln!("{:>8.2?} {}: {shown}", started.elapsed(), call.label);
        let answered = answered.and_then(|answer| check_hostile(call, &answer));
        let after = host
            .call_tool("read_file", &plain_args())
            .and_then(|answer| check_plain(&call.label, &answer))
            .map_err(|e| format!("the plain read after it: {e}"));
        if let Err(e) = answered.and(after) {
            failures.push(format!("{}: {e}", call.label));
        }
        // A host that died is started again, so one run reports every fixture that still kills it.
        if host.child.try_wait().unwrap().is_some() {
            deaths += 1;
            host = StdioHost::start(&suite);
        }
    }
    let peak = peak_rss_kib(host.child.id());
    if peak > RSS_BOUND_KIB {
        failures.push(format!("the host's peak RSS is {peak} KiB, over the bound of {RSS_BOUND_KIB} KiB"));
    }
    eprintln!("the host's peak RSS: {peak} KiB");
    assert!(failures.is_empty(), "{} failures, the host died {deaths} times:\n{}", failures.len(), failures.join("\n"));
}
