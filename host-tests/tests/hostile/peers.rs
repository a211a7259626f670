//! Class 7: peers that never stop talking. One `toolshed serve` process over stdio is the host; its MCP hub
//! runs scripted Node servers written here that paginate forever, send pages that never stop growing, and
//! answer calls with messages rmcp would drop (JSON nested past 128 levels, invalid UTF-8, an id nobody
//! asked for, a line over `[mcp] max_message_bytes`, a batch, a truncated object, an error naming no
//! request, a server that stops reading its input); its subagents talk to a chat-completions endpoint on
//! 127.0.0.1 that streams endless deltas, one endless tool-call argument, or one endless line. Each call
//! fails with its own clear error long before its (60 s) timeout, the same process answers the next call,
//! and the host's peak resident set stays under a generous bound.

use crate::util::{plugins, read_json_request, spawn_lines, toolshed_bin, workspace};
use serde_json::{json, Value};
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command};
use std::sync::mpsc;
use std::time::Duration;

/// The one generous bound on any answer.
const BOUND: Duration = Duration::from_secs(120);

/// The host's peak resident set may not pass this (KiB). Without the caps an endless listing alone grew it
/// to gigabytes.
const PEAK_RSS_BOUND_KIB: u64 = 1024 * 1024;

/// `[mcp] max_message_bytes` in these tests: the oversized answers are twice it.
const MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// An MCP server over stdio. `pages`: tools/list never ends, a new cursor each page; `fat`: each page holds
/// a 512 KiB tool; `resources`: resources/list never ends; `bad`: each tool answers its call in its own
/// broken way, and `ok` answers properly.
const SERVER: &str = r#"
const mode = process.argv[2];
const big = Number(process.argv[3]);
const out = (text) => process.stdout.write(text);
const send = (m) => out(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
const tool = (name, description) => ({ name, description: description || name, inputSchema: { type: 'object' } });
const kinds = ['deep', 'utf8', 'wrong_id', 'string_id', 'huge', 'huge_unended', 'batch', 'truncated', 'idless_error', 'deaf', 'ok'];
const rl = require('readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  const id = m.id;
  const page = Number(((m.params || {}).cursor || 'c0').slice(1));
  if (m.method === 'initialize') {
    const capabilities = mode === 'resources' ? { tools: {}, resources: {} } : { tools: {} };
    send({ id, result: { protocolVersion: m.params.protocolVersion, capabilities, serverInfo: { name: mode, version: '1.0.0' } } });
  } else if (m.method === 'tools/list' && mode === 'pages') {
    send({ id, result: { tools: [tool('t' + page)], nextCursor: 'c' + (page + 1) } });
  } else if (m.method === 'tools/list' && mode === 'fat') {
    send({ id, result: { tools: [tool('t' + page, 'd'.repeat(512 * 1024))], nextCursor: 'c' + (page + 1) } });
  } else if (m.method === 'tools/list') {
    send({ id, result: { tools: kinds.map((k) => tool(k)) } });
  } else if (m.method === 'resources/list') {
    send({ id, result: { resources: [{ uri: 'r://' + page, name: 'r' + page }], nextCursor: 'c' + (page + 1) } });
  } else if (m.method === 'tools/call') {
    const head = '{"jsonrpc":"2.0","id":' + JSON.stringify(id) + ',"result":{"content":[{"type":"text","text":"';
    switch (m.params.name) {
      case 'deep': out(head + 'x"}],"deep":' + '['.repeat(1000) + ']'.repeat(1000) + '}}\n'); break;
      case 'utf8': process.stdout.write(Buffer.concat([Buffer.from(head), Buffer.from([0xff, 0xfe]), Buffer.from('"}]}}\n')])); break;
      case 'wrong_id': send({ id: id + 1000, result: { content: [{ type: 'text', text: 'not yours' }] } }); break;
      case 'string_id': send({ id: 'nobody', result: { content: [{ type: 'text', text: 'not yours' }] } }); break;
      case 'huge': out(head + 'x'.repeat(big) + '"}]}}\n'); break;
      case 'huge_unended': out(head + 'x'.repeat(big)); break;
      case 'batch': out('[' + JSON.stringify({ jsonrpc: '2.0', id, result: { content: [] } }) + ']\n'); break;
      case 'truncated': out(head + 'cut off\n'); break;
      case 'idless_error': send({ error: { code: -32700, message: 'Parse error' } }); break;
      case 'deaf':
        // Stops reading its input but lives on: the host's next write to it meets a closed pipe.
        rl.close();
        process.stdin.destroy();
        setInterval(() => {}, 1000);
        setTimeout(() => {
          try { require('fs').closeSync(0); } catch (e) {}
          send({ id, result: { content: [{ type: 'text', text: 'no longer listening' }] } });
        }, 50);
        break;
      default: send({ id, result: { content: [{ type: 'text', text: 'fine' }] } });
    }
  } else {
    send({ id, error: { code: -32601, message: 'Method not found' } });
  }
});
"#;

/// A chat-completions endpoint whose every answer streams forever, in the way the prompt's first word
/// names: `endless-text` (content deltas), `endless-arguments` (one tool call's argument fragments),
/// `endless-line` (one line that never ends). Writing stops when the client hangs up.
fn start_endpoint() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || stream_forever(stream));
        }
    });
    addr
}

fn stream_forever(stream: TcpStream) {
    let Some(body) = read_json_request(&stream) else { return };
    let prompt = body["messages"][1]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    let mut stream = stream;
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    if stream.write_all(head.as_bytes()).is_err() {
        return;
    }
    let filler = "x".repeat(16 * 1024);
    let (first, repeated) = match prompt.split_whitespace().next().unwrap_or_default() {
        "endless-text" => {
            (String::new(), format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {"content": filler}}]})))
        }
        "endless-arguments" => {
            let call = |head: Value| json!({"choices": [{"index": 0, "delta": {"tool_calls": [head]}}]});
            let opening = call(json!({"index": 0, "id": "call_x", "type": "function",
                "function": {"name": "read_file", "arguments": "{\"path\": \""}}));
            let fragment = call(json!({"index": 0, "function": {"arguments": filler}}));
            (format!("data: {opening}\n\n"), format!("data: {fragment}\n\n"))
        }
        _ => ("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"".to_owned(), filler),
    };
    if stream.write_all(first.as_bytes()).is_err() {
        return;
    }
    while stream.write_all(repeated.as_bytes()).is_ok() {}
}

/// A `toolshed serve` over stdio, and a line-at-a-time client of it; killed when dropped.
struct Host {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Host {
    fn start(home: &std::path::Path, cwd: &std::path::Path, config: &std::path::Path) -> Host {
        let (child, stdin, lines) = spawn_lines(
            Command::new(toolshed_bin())
                .arg("--plugins")
                .arg(plugins())
                .arg("--config")
                .arg(config)
                .arg("--cwd")
                .arg(cwd)
                .args(["serve", "--yes", "--profile", "cline"])
                .env("HOME", home)
                .env_remove("TOOLSHED_PLUGINS"),
        );
        let mut host = Host { child, stdin, lines, next_id: 1 };
        let hello = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "peers", "version": "1"}});
        host.request("initialize", hello);
        writeln!(host.stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
        host
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        writeln!(self.stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).unwrap();
        self.stdin.flush().unwrap();
        loop {
            let line = self.lines.recv_timeout(BOUND).unwrap_or_else(|e| panic!("no answer to {method}: {e}"));
            let message: Value = serde_json::from_str(&line).unwrap_or_default();
            if message["id"] == json!(id) {
                return message.get("result").cloned().unwrap_or_else(|| panic!("{method}: {message}"));
            }
        }
    }

    /// A tool call's text and whether it is an error.
    fn call(&mut self, tool: &str, arguments: Value) -> (bool, String) {
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let text = result["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect();
        (result["isError"] == json!(true), text)
    }

    fn mcp(&mut self, server: &str, tool: &str) -> (bool, String) {
        self.call("use_mcp_tool", json!({"server_name": server, "tool_name": tool, "arguments": "{}"}))
    }

    fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).unwrap().trim();
        line.trim_end_matches("kB").trim().parse().unwrap()
    }
}

#[test]
fn one_host_outlives_endless_listings_dropped_responses_and_endless_model_streams() {
    let (home, ws) = (workspace(), workspace());
    std::fs::write(ws.path().join("notes.txt"), "still here\n").unwrap();
    let script = home.path().join("server.js");
    std::fs::write(&script, SERVER).unwrap();
    let server = |mode: &str| json!({"command": "node", "args": [script.display().to_string(), mode, (2 * MAX_MESSAGE_BYTES).to_string()]});
    let settings = home.path().join("mcp.json");
    let servers = json!({"mcpServers": {
        "pages": server("pages"), "fat": server("fat"), "resources": server("resources"), "bad": server("bad")
    }});
    std::fs::write(&settings, servers.to_string()).unwrap();
    let endpoint = start_endpoint();
    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[mcp]\nsettings = {:?}\ncall_timeout_ms = 60000\nmax_list_pages = 100\nmax_list_bytes = 4194304\n\
             max_message_bytes = {MAX_MESSAGE_BYTES}\n\
             [subagents]\nbase_url = \"http://{endpoint}/v1\"\nrequest_timeout_ms = 60000\n",
            settings.display().to_string()
        ),
    )
    .unwrap();
    let mut host = Host::start(home.path(), ws.path(), &config);
    let plain = |host: &mut Host, after: &str| {
        let (is_error, text) = host.call("read_file", json!({"path": "notes.txt"}));
        assert!(!is_error && text.contains("still here"), "the plain read after {after}: {text}");
    };

    // Listings that never end: the server failed, naming the key; the others are unaffected.
    let capped = [
        ("pages", "tools/list went on past 100 pages (the limit is [mcp] max_list_pages = 100)"),
        ("fat", "tools/list returned more than 4194304 bytes (the limit is [mcp] max_list_bytes = 4194304)"),
        ("resources", "resources/list went on past 100 pages (the limit is [mcp] max_list_pages = 100)"),
    ];
    for (name, expected) in capped {
        let (is_error, text) = host.mcp(name, "t0");
        assert!(is_error && text.contains(expected), "{name}: {text}");
        plain(&mut host, name);
    }
    assert_eq!(host.mcp("bad", "ok"), (false, "fine".to_owned()));

    // Answers rmcp would drop fail the call at once (a timeout would say "Request timed out"), and the
    // server, treated as crashed, is started again by the next call.
    let dropped = [
        ("deep", "sent JSON nested deeper than 128 levels".to_owned()),
        ("utf8", "sent a message that is not valid UTF-8".to_owned()),
        ("wrong_id", "which it was never sent or had answered already".to_owned()),
        ("string_id", "answered request id nobody, which it was never sent".to_owned()),
        ("huge", format!("sent a message longer than {MAX_MESSAGE_BYTES} bytes (the limit is [mcp] max_message_bytes")),
        ("huge_unended", format!("sent a message longer than {MAX_MESSAGE_BYTES} bytes")),
        ("batch", "sent a JSON-RPC batch".to_owned()),
        ("truncated", "sent a message that is not valid JSON".to_owned()),
        ("idless_error", "answered with an error that names no request (-32700: Parse error)".to_owned()),
    ];
    for (tool, expected) in &dropped {
        let (is_error, text) = host.mcp("bad", tool);
        assert!(is_error && text.contains(expected.as_str()), "{tool}: {text}");
        assert!(text.contains("MCP server \"bad\""), "{tool}: {text}");
        assert_eq!(host.mcp("bad", "ok"), (false, "fine".to_owned()), "the call after {tool}");
    }
    // A server that stops reading: the next write to it meets EPIPE, that server's error alone.
    assert_eq!(host.mcp("bad", "deaf"), (false, "no longer listening".to_owned()));
    let (is_error, text) = host.mcp("bad", "ok");
    assert!(is_error && text.contains("stopped reading its input"), "{text}");
    assert_eq!(host.mcp("bad", "ok"), (false, "fine".to_owned()), "the call after the broken pipe");

    // Model streams that never end fail their subagent run with the cap's words.
    let streams = [
        ("endless-text", "(the limit is [subagents] max_response_bytes = 16777216)"),
        ("endless-arguments", "The model's arguments for tool call 0 (read_file) went past 4194304 bytes."),
        ("endless-line", "The model stream sent a line longer than 4194304 bytes."),
    ];
    for (prompt, expected) in streams {
        let (_, text) = host.call("use_subagents", json!({"prompt_1": prompt}));
        assert!(text.contains(&format!("[1] FAILED - {prompt}")) && text.contains(expected), "{prompt}: {text}");
        plain(&mut host, prompt);
    }

    let peak = host.peak_rss_kib();
    assert!(peak < PEAK_RSS_BOUND_KIB, "the host's peak RSS is {peak} KiB");
    eprintln!("peak RSS of the host: {peak} KiB");
}
