//! `toolshed serve` sessions with the pinned Python `mcp` client: isolated sessions over HTTP, one call
//! cancelled with its `sleep` gone by pid, a client that goes away, progress notifications, the client's
//! roots as the workspace; SIGTERM to `serve --http` with its children gone; and, under all of them, the
//! runtime cancelling a call whose future is dropped.

use crate::util::{plugins, served_authority, shipped, task_in, toolshed_bin, workspace, Killed};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The one generous bound every wait here has: long enough for a loaded machine, never a measurement.
const BOUND: Duration = Duration::from_secs(60);

/// The virtualenv's Python with `mcp` (see serve.rs).
fn python() -> PathBuf {
    let python = std::env::var_os("TOOLSHED_TEST_PY")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-peers/py/bin/python"));
    assert!(python.is_file(), "{}: no Python with `mcp`; run `cargo xtask test`", python.display());
    python
}

/// The command execute_command runs: writes its shell's pid, then becomes `sleep` under that pid.
fn sleeper(pid_file: &Path) -> String {
    format!("echo $$ > {}; exec sleep 317", pid_file.display())
}

/// Waits for a pid file and reads it.
pub(crate) fn read_pid(pid_file: &Path) -> i32 {
    let deadline = Instant::now() + BOUND;
    loop {
        if let Some(pid) = std::fs::read_to_string(pid_file).ok().and_then(|s| s.trim().parse().ok()) {
            return pid;
        }
        assert!(Instant::now() < deadline, "{} never written", pid_file.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is a live process (a zombie counts as gone).
pub(crate) fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty() && !stat.contains(") Z ")
}

/// Waits until `pid` is gone.
fn assert_gone(pid: i32, what: &str) {
    let deadline = Instant::now() + BOUND;
    while alive(pid) {
        assert!(Instant::now() < deadline, "{what}: process {pid} still alive");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills a process left behind by a failed test.
struct Reap(i32);

impl Drop for Reap {
    fn drop(&mut self) {
        if alive(self.0) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.0), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

fn sigterm(child: &Child) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
}

/// Waits for a child to exit.
fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + BOUND;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "the process did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The clients, one mode each; every mode prints one JSON line last.
const CLIENT: &str = r#"
import anyio, json, os, sys
from mcp import ClientSession, types

cfg = json.loads(sys.argv[1])

def text(r):
    return "".join(c.text for c in r.content if c.type == "text")

def http_client():
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    http = httpx2.AsyncClient(headers={"Authorization": "Bearer " + cfg["token"]}, timeout=None)
    return http, streamable_http_client(cfg["url"], http_client=http)

def stdio_client():
    from mcp.client.stdio import stdio_client, StdioServerParameters
    params = StdioServerParameters(command=cfg["bin"], args=cfg["args"], cwd=cfg.get("cwd"),
                                   env={"HOME": cfg["home"], "PATH": os.environ.get("PATH", "")})
    return stdio_client(params)

async def wait_file(path):
    while not os.path.exists(path) or not open(path).read().strip():
        await anyio.sleep(0.02)

async def gone(pid):
    while True:
        try:
            stat = open(f"/proc/{pid}/stat").read()
        except FileNotFoundError:
            return True
        if ") Z " in stat:
            return True
        await anyio.sleep(0.02)

def sleeper(pid_file):
    return {"command": f"echo $$ > {pid_file}; exec sleep 317", "requires_approval": False}

async def isolation():
    http_a, client_a = http_client()
    http_b, client_b = http_client()
    out = {}
    async with http_a, http_b, client_a as (ra, wa), client_b as (rb, wb):
        async with ClientSession(ra, wa) as a, ClientSession(rb, wb) as b:
            await a.initialize()
            await b.initialize()
            for key, session in [("a1", a), ("a2", a), ("b1", b), ("a3", a), ("b2", b)]:
                out[key] = text(await session.call_tool("read_file", {"path": "a.txt"}))
            # Probes of what Toolshed does not offer are answered, not failed.
            out["resources"] = len((await a.list_resources()).resources)
            out["prompts"] = len((await a.list_prompts()).prompts)
    print(json.dumps(out), flush=True)

async def cancel(session):
    await session.initialize()
    pid_file = cfg["pid_file"]
    async with anyio.create_task_group() as tg:
        async def run():
            await session.call_tool("execute_command", sleeper(pid_file))
        tg.start_soon(run)
        await wait_file(pid_file)
        # Cancelling the waiting task sends `notifications/cancelled` for the call.
        tg.cancel_scope.cancel()
    pid = int(open(pid_file).read().strip())
    await gone(pid)
    after = text(await session.call_tool("read_file", {"path": "a.txt"}))
    print(json.dumps({"pid": pid, "after": after}), flush=True)

async def leave(session):
    await session.initialize()
    pid_file = cfg["pid_file"]
    async with anyio.create_task_group() as tg:
        async def run():
            await session.call_tool("execute_command", sleeper(pid_file))
        tg.start_soon(run)
        await wait_file(pid_file)
        # Gone without a word: no cancellation, no DELETE, the connections just close.
        os._exit(0)

async def progress(session):
    seen = []
    async def handler(message):
        if isinstance(message, types.ProgressNotification):
            seen.append(message.params.message or "")
    session._message_handler = handler
    await session.initialize()
    got = {"alpha": [], "gamma": []}
    done = anyio.Event()
    def collect(key):
        async def on_progress(progress, total, message):
            got[key].append([progress, message])
            if key == "gamma" and "gamma-end" in (message or ""):
                done.set()
        return on_progress
    loud = lambda word: {"command": f"for i in 1 2 3; do echo {word}-$i; sleep 0.1; done; echo {word}-end", "requires_approval": False}
    alpha = text(await session.call_tool("execute_command", loud("alpha"), progress_callback=collect("alpha")))
    beta = text(await session.call_tool("execute_command", loud("beta")))
    gamma = text(await session.call_tool("execute_command", loud("gamma"), progress_callback=collect("gamma")))
    # Everything sent before gamma's last chunk has arrived by then: one ordered stream.
    await done.wait()
    print(json.dumps({"alpha": alpha, "beta": beta, "gamma": gamma, "got": got,
                      "beta_seen": [m for m in seen if "beta" in m]}), flush=True)

async def roots(session_factory):
    current = {"uri": cfg["root1"]}
    asked = {"n": 0, "event": anyio.Event()}
    async def list_roots(context):
        asked["n"] += 1
        asked["event"].set()
        return types.ListRootsResult(roots=[types.Root(uri=current["uri"], name="client-root")])
    async with session_factory(list_roots) as session:
        await session.initialize()
        first = text(await session.call_tool("read_file", {"path": "a.txt"}))
        current["uri"] = cfg["root2"]
        asked["event"] = anyio.Event()
        before = asked["n"]
        await session.send_roots_list_changed()
        # The server asks again; a call made once it has asked runs in the new roots.
        while asked["n"] == before:
            await asked["event"].wait()
        second = text(await session.call_tool("read_file", {"path": "a.txt"}))
        print(json.dumps({"first": first, "second": second, "asked": asked["n"]}), flush=True)

async def background():
    http, client = http_client()
    async with http, client as (r, w):
        async with ClientSession(r, w) as session:
            await session.initialize()
            print("ready", flush=True)
            await session.call_tool("execute_command", sleeper(cfg["pid_file"]))

async def main():
    mode = cfg["mode"]
    if mode == "isolation":
        return await isolation()
    if mode == "background":
        return await background()
    if mode == "roots":
        from contextlib import asynccontextmanager
        @asynccontextmanager
        async def factory(list_roots):
            async with stdio_client() as (r, w):
                async with ClientSession(r, w, list_roots_callback=list_roots) as session:
                    yield session
        return await roots(factory)
    run = {"cancel": cancel, "leave": leave, "progress": progress}[mode]
    if cfg.get("url"):
        http, client = http_client()
        async with http, client as (r, w):
            async with ClientSession(r, w) as session:
                await run(session)
    else:
        async with stdio_client() as (r, w):
            async with ClientSession(r, w) as session:
                await run(session)

anyio.run(main)
"#;

/// Runs the client in `mode` with `cfg` and returns its last JSON line (`None` for modes that print none).
fn client(dir: &Path, cfg: Value) -> (std::process::Output, Option<Value>) {
    let script = dir.join("client.py");
    std::fs::write(&script, CLIENT).unwrap();
    let output = Command::new(python()).arg(&script).arg(cfg.to_string()).output().unwrap();
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    let line = out.lines().rev().find(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap());
    (output, line)
}

fn expect_json(output: (std::process::Output, Option<Value>)) -> Value {
    let (output, line) = output;
    line.unwrap_or_else(|| {
        panic!(
            "the client printed no result: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// `toolshed serve --http` on a free port, with `extra` arguments before `serve`; its stderr after the
/// address is collected into `log`.
pub(crate) fn http_server(home: &Path, cwd: &Path, extra: &[&str]) -> (Killed, String) {
    let (server, url, _log) = http_server_logged(home, cwd, extra);
    (server, url)
}

type Log = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

fn http_server_logged(home: &Path, cwd: &Path, extra: &[&str]) -> (Killed, String, Log) {
    let plugins = plugins().display().to_string();
    let mut args = vec!["--plugins", &plugins];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["serve", "--http", "127.0.0.1:0", "--yes"]);
    let mut child = Command::new(toolshed_bin())
        .args(&args)
        .current_dir(cwd)
        .env("HOME", home)
        .env("TOOLSHED_SERVE_TOKEN", "s3cret-token")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let authority = served_authority(&mut lines);
    let log = Log::default();
    let kept = std::sync::Arc::clone(&log);
    // Drained, so the server never blocks on a full pipe.
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(|line| kept.lock().unwrap().push(line)));
    (Killed(child), format!("http://{authority}/mcp"), log)
}

/// A workspace, a home and `serve --http` in that workspace.
struct Served {
    ws: tempfile::TempDir,
    _home: tempfile::TempDir,
    server: Killed,
    url: String,
}

fn served() -> Served {
    let (ws, home) = (workspace(), workspace());
    let cwd = ws.path().display().to_string();
    let (server, url) = http_server(home.path(), ws.path(), &["--cwd", &cwd]);
    Served { ws, _home: home, server, url }
}

fn stdio_cfg(home: &Path, cwd: &Path) -> Value {
    json!({
        "bin": toolshed_bin().display().to_string(),
        "args": ["--plugins", plugins().display().to_string(), "--cwd", cwd.display().to_string(), "serve", "--yes"],
        "home": home.display().to_string(),
    })
}

/// The client's configuration for a server in `cwd` over `transport`: stdio (the client starts it) or HTTP
/// (started here, returned to be killed with the test).
fn transport_cfg(transport: &str, home: &Path, cwd: &Path) -> (Value, Option<Killed>) {
    if transport == "stdio" {
        return (stdio_cfg(home, cwd), None);
    }
    let dir = cwd.display().to_string();
    let (server, url) = http_server(home, cwd, &["--cwd", &dir]);
    (json!({"url": url, "token": "s3cret-token"}), Some(server))
}

fn with(mut cfg: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    cfg
}

#[test]
fn dropping_a_calls_future_cancels_that_call_and_kills_its_process() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let pid_file = ws.path().join("sleep.pid");
    let executor = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let pid = executor.block_on(async {
        let call = task.execute(toolshed::ToolUse::new(
            "c1",
            "execute_command",
            json!({"command": sleeper(&pid_file), "requires_approval": false}),
        ));
        let written = async {
            while !std::fs::read_to_string(&pid_file).is_ok_and(|s| !s.trim().is_empty()) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::select! {
            result = call => panic!("the call ended on its own: {result:?}"),
            () = written => {}
        }
        // The call's future is dropped here, unfinished.
        read_pid(&pid_file)
    });
    let _reap = Reap(pid);
    assert_gone(pid, "the dropped call's sleep");
    // The call alone was cancelled: the task goes on.
    assert!(!task.is_cancelled());
    std::fs::write(ws.path().join("a.txt"), "still here\n").unwrap();
    let after = crate::util::call(&task, "read_file", json!({"path": "a.txt"}));
    assert!(crate::util::text(&after).contains("still here"), "{}", crate::util::text(&after));
}

#[test]
fn two_http_sessions_have_their_own_task() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "shared file\n").unwrap();
    let home = workspace();
    let cwd = ws.path().display().to_string();
    let (server, url, log) = http_server_logged(home.path(), ws.path(), &["--cwd", &cwd]);
    let (output, out) = client(ws.path(), json!({"mode": "isolation", "url": url, "token": "s3cret-token"}));
    // The client ends its sessions with DELETE, answered as it expects (no "Session termination failed").
    let client_log = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!client_log.contains("termination failed"), "{client_log}");
    let out = expect_json((output, out));
    let field = |k: &str| out[k].as_str().unwrap().to_owned();
    assert!(field("a1").starts_with("1 | shared file"), "{out}");
    assert!(field("a2").starts_with("[File already read]"), "{out}");
    // B has read nothing yet: its first read is a plain one.
    assert!(field("b1").starts_with("1 | shared file"), "{out}");
    // Each session counts its own reads: A's third is its third, B's second its second.
    assert!(field("a3").starts_with("[DUPLICATE READ] You have already read 'a.txt' 3 times"), "{out}");
    assert!(field("b2").starts_with("[File already read]"), "{out}");
    // So does Cline's loop detection, and its warning reaches the client with the result: A repeated the
    // same call three times, B twice.
    let repeated = "Tool [read_file] has been called 3 times consecutively with identical arguments";
    assert!(field("a3").contains(repeated), "{out}");
    assert!(!field("b2").contains("consecutively"), "{out}");
    assert_eq!(out["resources"], 0);
    assert_eq!(out["prompts"], 0);
    drop(server);
    // The probes were answered quietly.
    let log = log.lock().unwrap().join("\n");
    assert!(!log.contains("WARN"), "{log}");
}

/// One raw HTTP request to the MCP endpoint; returns the stream with the response head read, and the head.
pub(crate) fn post(authority: &str, method: &str, session: Option<&str>, body: &str) -> (std::net::TcpStream, String) {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    let session =
        session.map(|id| format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-06-18\r\n")).unwrap_or_default();
    write!(
        stream,
        "{method} /mcp HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer s3cret-token\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{session}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(
            stream.read(&mut byte).unwrap(),
            1,
            "the server closed before answering: {}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    (stream, String::from_utf8_lossy(&head).into_owned())
}

/// An initialized HTTP session, spoken to raw; its id.
pub(crate) fn raw_session(authority: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (_init, head) = post(authority, "POST", None, &init.to_string());
    let session = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("mcp-session-id:").map(|v| v.trim().to_owned()))
        .unwrap_or_else(|| panic!("no session id: {head}"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let (_n, head) = post(authority, "POST", Some(&session), &initialized);
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");
    session
}

/// A raw session running the sleeper in a call whose connection is returned open.
fn raw_sleeper(authority: &str, pid_file: &Path) -> (String, std::net::TcpStream) {
    let session = raw_session(authority);
    let args = json!({"command": sleeper(pid_file), "requires_approval": false});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "execute_command", "arguments": args}});
    let (call, _) = post(authority, "POST", Some(&session), &call.to_string());
    (session, call)
}

#[test]
fn delete_ends_the_session_and_its_processes_and_answers_no_content() {
    let Served { ws, server: _server, url, .. } = served();
    let pid_file = ws.path().join("sleep.pid");
    let authority = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    // The call's connection is kept open: the call is ended by the DELETE, not by its connection closing.
    let (session, _call) = raw_sleeper(&authority, &pid_file);
    let pid = read_pid(&pid_file);
    let _reap = Reap(pid);
    let (_delete, head) = post(&authority, "DELETE", Some(&session), "");
    assert!(head.starts_with("HTTP/1.1 204"), "{head}");
    assert_gone(pid, "the deleted session's command");
}

#[test]
fn a_cancelled_call_loses_its_process_and_the_session_goes_on() {
    for transport in ["stdio", "http"] {
        let ws = workspace();
        std::fs::write(ws.path().join("a.txt"), "after the cancel\n").unwrap();
        let home = workspace();
        let pid_file = ws.path().join("sleep.pid");
        let (cfg, server) = transport_cfg(transport, home.path(), ws.path());
        let cfg = with(cfg, json!({"mode": "cancel", "pid_file": pid_file.display().to_string()}));
        let out = expect_json(client(ws.path(), cfg));
        let pid = i32::try_from(out["pid"].as_i64().unwrap()).unwrap();
        let _reap = Reap(pid);
        // The client saw the pid gone before its next call, in the same session.
        assert!(!alive(pid), "{transport}");
        assert!(out["after"].as_str().unwrap().contains("after the cancel"), "{transport}: {out}");
        drop(server);
    }
}

#[test]
fn a_client_that_goes_away_cancels_its_calls() {
    for transport in ["stdio", "http"] {
        let ws = workspace();
        let home = workspace();
        let pid_file = ws.path().join("sleep.pid");
        let (cfg, mut server) = transport_cfg(transport, home.path(), ws.path());
        let cfg = with(cfg, json!({"mode": "leave", "pid_file": pid_file.display().to_string()}));
        let _ = client(ws.path(), cfg);
        let pid = read_pid(&pid_file);
        let _reap = Reap(pid);
        assert_gone(pid, transport);
        // Over HTTP the server is still serving.
        if let Some(server) = &mut server {
            assert!(server.0.try_wait().unwrap().is_none());
        }
    }
}

#[test]
fn progress_notifications_come_with_a_token_and_only_then() {
    for transport in ["stdio", "http"] {
        let ws = workspace();
        let home = workspace();
        let (cfg, server) = transport_cfg(transport, home.path(), ws.path());
        let out = expect_json(client(ws.path(), with(cfg, json!({"mode": "progress"}))));
        for word in ["alpha", "gamma"] {
            let got = out["got"][word].as_array().unwrap();
            assert!(!got.is_empty(), "{transport}: {out}");
            let counters: Vec<f64> = got.iter().map(|g| g[0].as_f64().unwrap()).collect();
            assert!(counters.windows(2).all(|w| w[0] < w[1]), "{transport}: {out}");
            let streamed: String = got.iter().map(|g| g[1].as_str().unwrap()).collect();
            let (first, end) = (format!("{word}-1"), format!("{word}-end"));
            assert!(streamed.contains(&first) && streamed.contains(&end), "{transport}: {out}");
            assert!(out[word].as_str().unwrap().contains(&end), "{transport}: {out}");
        }
        assert_eq!(out["beta_seen"], json!([]), "{transport}: {out}");
        assert!(out["beta"].as_str().unwrap().contains("beta-end"));
        drop(server);
    }
}

#[test]
fn client_roots_are_the_workspace_and_followed() {
    let cwd = workspace();
    std::fs::write(cwd.path().join("a.txt"), "the server's directory\n").unwrap();
    let (one, two) = (workspace(), workspace());
    std::fs::write(one.path().join("a.txt"), "root one\n").unwrap();
    std::fs::write(two.path().join("a.txt"), "root two\n").unwrap();
    let home = workspace();
    let uri = |p: &Path| format!("file://{}", p.display().to_string().replace(' ', "%20"));
    let cfg = json!({
        "mode": "roots",
        "bin": toolshed_bin().display().to_string(),
        // No --cwd: the client's roots are the workspace.
        "args": ["--plugins", plugins().display().to_string(), "serve"],
        "cwd": cwd.path().display().to_string(),
        "home": home.path().display().to_string(),
        "root1": uri(one.path()),
        "root2": uri(two.path()),
    });
    let out = expect_json(client(cwd.path(), cfg));
    assert!(out["first"].as_str().unwrap().contains("root one"), "{out}");
    assert!(out["second"].as_str().unwrap().contains("root two"), "{out}");
}

#[test]
fn an_http_session_that_expires_loses_its_processes() {
    let (ws, home) = (workspace(), workspace());
    std::fs::create_dir_all(home.path().join(".toolshed")).unwrap();
    // The running call sends nothing, so the session counts as idle and expires.
    std::fs::write(home.path().join(".toolshed/config.toml"), "[serve]\nsession_idle_ms = 2000\n").unwrap();
    let cwd = ws.path().display().to_string();
    let (_server, url) = http_server(home.path(), ws.path(), &["--cwd", &cwd]);
    let authority = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let pid_file = ws.path().join("sleep.pid");
    let (_session, _call) = raw_sleeper(&authority, &pid_file);
    let pid = read_pid(&pid_file);
    let _reap = Reap(pid);
    assert_gone(pid, "the expired session's command");
}

/// SIGTERM to `serve` over stdio and to `call` with a running command are tested in
/// security/processes_end_with_call.rs (`sigterm_to_toolshed_serve_mid_call_kills_what_it_started`,
/// `sigterm_and_sigint_to_toolshed_call_kill_what_it_started`), escaped, double-forked and `nohup` children
/// among them. This one is the HTTP server's.
#[test]
fn sigterm_to_serve_over_http_kills_its_commands() {
    let Served { ws, mut server, url, .. } = served();
    let pid_file = ws.path().join("sleep.pid");
    let script = ws.path().join("client.py");
    std::fs::write(&script, CLIENT).unwrap();
    let cfg =
        json!({"mode": "background", "url": url, "token": "s3cret-token", "pid_file": pid_file.display().to_string()});
    let python = Killed(
        Command::new(python())
            .arg(&script)
            .arg(cfg.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = read_pid(&pid_file);
    let _reap = Reap(pid);
    sigterm(&server.0);
    let status = wait_exit(&mut server.0);
    assert_eq!(status.code(), Some(143));
    assert_gone(pid, "serve --http's command after SIGTERM");
    drop(python);
}
