//! Must show, part two: the fixture suite under `toolshed serve --http` (a token, 127.0.0.1). Client A, one
//! MCP session, sends every hostile call in turn; client B, a second session on the same server, sends plain
//! reads the whole time and is answered the whole time; at the end the server is alive and answers both.
//!
//! The clients are raw HTTP/1.1 over `TcpStream`s speaking MCP's streamable HTTP (a JSON body, or the
//! answer as one server-sent event on a chunked body), so nothing between the test and the server caps or
//! retries anything.

use super::fixtures::{check_hostile, check_plain, peak_rss_kib, plain_args, tail, Answer, Suite, ADDRESS_SPACE_NET};
use crate::util::{plugins, served_authority, toolshed_bin};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const TOKEN: &str = "h0stile-t0ken";

/// The one generous bound on any single answer.
const ANSWER_BOUND: Duration = Duration::from_secs(180);

/// The server, killed when the test ends however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A body sent with `Transfer-Encoding: chunked`, read as the bytes it carries.
struct Chunked<R> {
    inner: R,
    left: usize,
    done: bool,
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.done {
            return Ok(0);
        }
        if self.left == 0 {
            let mut size = String::new();
            self.inner.read_line(&mut size)?;
            if size.trim().is_empty() {
                // The CRLF after the previous chunk's data.
                size.clear();
                self.inner.read_line(&mut size)?;
            }
            let hex = size.trim().split(';').next().unwrap_or_default();
            self.left = usize::from_str_radix(hex, 16)
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("chunk size {size:?}")))?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let want = buf.len().min(self.left);
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.left -= n;
        Ok(n)
    }
}

/// One MCP session over streamable HTTP.
struct Session {
    authority: String,
    id: Option<String>,
    next: u64,
}

impl Session {
    fn open(authority: &str) -> Result<Session, String> {
        let mut session = Session { authority: authority.to_owned(), id: None, next: 1 };
        session.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "1"}}),
        )?;
        session.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), None)?;
        Ok(session)
    }

    /// POSTs one message; for a request, reads the body until the answer with `id` arrives.
    fn post(&mut self, message: &Value, id: Option<u64>) -> Result<Option<Value>, String> {
        let body = message.to_string();
        let mut stream = TcpStream::connect(&self.authority).map_err(|e| format!("connect: {e}"))?;
        stream.set_read_timeout(Some(ANSWER_BOUND)).map_err(|e| e.to_string())?;
        let session = self.id.as_ref().map(|id| format!("Mcp-Session-Id: {id}\r\n")).unwrap_or_default();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.authority,
            body.len()
        )
        .map_err(|e| format!("send: {e}"))?;
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).map_err(|e| format!("status line: {e}"))?;
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).map_err(|e| format!("headers: {e}"))? == 0 || line.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = line.trim_end().split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
            }
        }
        let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        if let Some(id) = header("mcp-session-id") {
            self.id = Some(id);
        }
        let mut body: Box<dyn BufRead> = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            Box::new(BufReader::new(Chunked { inner: reader, left: 0, done: false }))
        } else {
            Box::new(reader)
        };
        if status.contains(" 202") && id.is_none() {
            return Ok(None);
        }
        if !status.contains(" 200") {
            let mut rest = String::new();
            let _ = body.take(4096).read_to_string(&mut rest);
            return Err(format!("{} {rest}", status.trim()));
        }
        let Some(id) = id else { return Ok(None) };
        if !header("content-type").is_some_and(|v| v.contains("event-stream")) {
            let mut text = String::new();
            body.read_to_string(&mut text).map_err(|e| format!("body: {e}"))?;
            let message: Value = serde_json::from_str(&text).map_err(|e| format!("body {e}: {text:.200}"))?;
            return answer_of(&message, id).ok_or_else(|| format!("no answer to {id} in {text:.200}"))?.map(Some);
        }
        loop {
            let mut line = String::new();
            match body.read_line(&mut line) {
                Ok(0) => return Err(format!("the event stream ended without the answer to {id}")),
                Ok(_) => {}
                Err(e) => return Err(format!("reading the event stream: {e}")),
            }
            let Some(data) = line.strip_prefix("data:") else { continue };
            let Ok(message) = serde_json::from_str::<Value>(data.trim()) else { continue };
            if let Some(answer) = answer_of(&message, id) {
                return answer.map(Some);
            }
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next;
        self.next += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.post(&message, Some(id))?.ok_or_else(|| "no answer".to_owned())
    }

    fn call_tool(&mut self, tool: &str, args: &Value) -> Result<Answer, String> {
        self.request("tools/call", json!({"name": tool, "arguments": args})).map(|r| Answer::from_result(&r))
    }
}

/// The result (or the error) of the answer to `id`, if `message` is it.
fn answer_of(message: &Value, id: u64) -> Option<Result<Value, String>> {
    if message["id"] != json!(id) {
        return None;
    }
    Some(match message.get("result") {
        Some(result) => Ok(result.clone()),
        None => Err(format!("JSON-RPC error: {}", message["error"])),
    })
}

#[test]
fn one_client_sends_every_hostile_call_while_another_is_answered_throughout() {
    let suite = Suite::build();
    let stderr_path = suite.outside.path().join("serve.stderr");
    let mut command = Command::new(toolshed_bin());
    command
        .arg("--plugins")
        .arg(plugins())
        .arg("--config")
        .arg(&suite.config)
        .arg("--cwd")
        .arg(suite.workspace.path())
        .args(["serve", "--yes", "--profile", "cline", "--http", "127.0.0.1:0"])
        .env("HOME", suite.home.path())
        .env_remove("TOOLSHED_PLUGINS")
        .env("TOOLSHED_SERVE_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // The same net as the stdio suite's: a regressed host fails an allocation, the machine keeps its memory.
    // SAFETY: setrlimit is async-signal-safe and the closure allocates nothing.
    unsafe {
        command.pre_exec(|| {
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_AS, ADDRESS_SPACE_NET, ADDRESS_SPACE_NET)
                .map_err(std::io::Error::from)
        });
    }
    let mut child = command.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut server = Server(child);
    let authority = served_authority(&mut lines);
    // Keep the server's stderr drained (a full pipe would block its logging), into a file for failures.
    let mut log = std::fs::File::create(&stderr_path).unwrap();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let _ = writeln!(log, "{line}");
        }
    });

    let mut a = Session::open(&authority).unwrap();
    check_plain("A's start-up", &a.call_tool("read_file", &plain_args()).unwrap()).unwrap();

    // Client B: plain reads until A is done, each answered correctly.
    let done = Arc::new(AtomicBool::new(false));
    let b_done = Arc::clone(&done);
    let b_authority = authority.clone();
    let b = std::thread::spawn(move || -> Result<usize, String> {
        let mut b = Session::open(&b_authority)?;
        let mut answered = 0;
        while !b_done.load(Ordering::SeqCst) {
            let answer = b.call_tool("read_file", &plain_args()).map_err(|e| format!("B's read {answered}: {e}"))?;
            check_plain(&format!("B's read {answered}"), &answer)?;
            answered += 1;
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(answered)
    });

    let mut failures = Vec::new();
    for call in &suite.calls {
        let answered = a.call_tool(call.tool, &call.args).and_then(|answer| check_hostile(call, &answer));
        if let Err(e) = answered {
            failures.push(format!("{}: {e}", call.label));
        }
        if server.0.try_wait().unwrap().is_some() {
            failures.push(format!("the server died on {}", call.label));
            break;
        }
    }
    done.store(true, Ordering::SeqCst);
    let b_answered = b.join().unwrap();
    match &b_answered {
        Ok(0) => failures.push("B was never answered while A sent its calls".to_owned()),
        Ok(_) => {}
        Err(e) => failures.push(format!("B: {e}")),
    }
    let alive = server.0.try_wait().unwrap().is_none();
    if alive {
        for (name, session) in [("A", &mut a), ("B, a new session", &mut Session::open(&authority).unwrap())] {
            if let Err(e) =
                session.call_tool("read_file", &plain_args()).and_then(|answer| check_plain("the suite", &answer))
            {
                failures.push(format!("{name} at the end: {e}"));
            }
        }
        eprintln!("the server's peak RSS: {} KiB; B was answered {b_answered:?} times", peak_rss_kib(server.0.id()));
    }
    assert!(
        alive && failures.is_empty(),
        "alive: {alive}; {} failures:\n{}\nthe server's stderr ends:\n{}",
        failures.len(),
        failures.join("\n"),
        tail(&stderr_path, 4000)
    );
}
