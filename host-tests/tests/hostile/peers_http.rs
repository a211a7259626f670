//! Class 7 over streamable HTTP: a scripted Node MCP server on 127.0.0.1 answers `initialize` and
//! `tools/list` properly, then answers each `tools/call` in its own broken way and keeps the stream open:
//! SSE data that is garbage, JSON that breaks off, JSON nested 200 deep, JSON that is not JSON-RPC, a
//! batch, invalid UTF-8, an id nobody asked for, an error naming no request, an event over
//! `[mcp] max_message_bytes`, garbage after a resumable event id, garbage on the standalone GET stream while
//! a call waits; JSON bodies that are garbage, too deep, not UTF-8, not JSON-RPC, too big or answer the
//! wrong id; and an `initialize` answered with garbage. With a 60 s call timeout, each call fails at once
//! with the words the stdio transport uses, naming the server, and the next call answers. A session the
//! server expires is recovered by rmcp without tripping the id check.

use crate::mcp::node_peers;
use crate::util::{block_on, call, shipped, task_in, text, workspace};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use toolshed::{Config, Runtime, TaskHandle};

/// `[mcp] max_message_bytes` here: the oversized answers are twice it.
const MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// Every broken way, by tool name; the URL's path picks the server: `/bad` (POST answers), `/get` (the
/// standalone GET stream), `/init` (`initialize`), `/good`.
const SERVER: &str = r#"
const http = require('http');
const big = Number(process.argv[2]);
const kinds = ['garbage', 'truncated', 'deep', 'not_jsonrpc', 'batch', 'utf8', 'wrong_id', 'idless_error', 'huge',
  'garbage_after_id', 'json_garbage', 'json_deep', 'json_utf8', 'json_not_jsonrpc', 'json_huge', 'json_wrong_id',
  'expire', 'quiet', 'ok'];
const tool = (name) => ({ name, description: name, inputSchema: { type: 'object' } });
const sessions = new Set();
let nextSession = 0, expiring = false, held = null;
const message = (m) => JSON.stringify({ jsonrpc: '2.0', ...m });
const event = (m) => 'data: ' + message(m) + '\n\n';
const sse = (res, ...events) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const e of events) res.write(e);
};
const json = (res, body) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(body);
};

function handle(path, req, res, m) {
  if (m.id === undefined) return res.writeHead(202).end();
  const id = m.id;
  if (m.method === 'initialize') {
    if (path === '/init') return sse(res, 'data: this is not json\n\n');
    const session = 's' + (++nextSession);
    sessions.add(session);
    res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': session });
    const result = { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: path, version: '1' } };
    return res.end(message({ id, result }));
  }
  const session = req.headers['mcp-session-id'];
  if (!sessions.has(session)) return res.writeHead(404).end();
  if (m.method === 'tools/list') {
    sse(res, event({ id, result: { tools: kinds.map(tool) } }));
    return res.end();
  }
  const head = '{"jsonrpc":"2.0","id":' + JSON.stringify(id) + ',"result":{"content":[{"type":"text","text":"';
  const deep = head + 'x"}],"deep":' + '['.repeat(200) + ']'.repeat(200) + '}}';
  const answer = (text) => ({ id, result: { content: [{ type: 'text', text }] } });
  // Every SSE answer below but `ok` and `expire` leaves its stream open.
  switch (m.params.name) {
    case 'garbage': return sse(res, 'data: this is not json\n\n');
    case 'truncated': return sse(res, 'data: ' + head + 'cut off\n\n');
    case 'deep': return sse(res, 'data: ' + deep + '\n\n');
    case 'not_jsonrpc': return sse(res, 'data: {"hello":"world"}\n\n');
    case 'batch': return sse(res, 'data: [' + message(answer('in a batch')) + ']\n\n');
    case 'utf8':
      sse(res);
      return res.write(Buffer.concat([Buffer.from('data: ' + head), Buffer.from([0xff, 0xfe]), Buffer.from('"}]}}\n\n')]));
    case 'wrong_id': return sse(res, event({ ...answer('not yours'), id: id + 1000 }));
    case 'idless_error': return sse(res, event({ error: { code: -32700, message: 'Parse error' } }));
    case 'huge': return sse(res, 'data: ' + head + 'x'.repeat(big) + '"}]}}\n\n');
    case 'garbage_after_id': return sse(res, 'id: e1\ndata: \n\n', 'data: this is not json\n\n');
    case 'json_garbage': return json(res, 'this is not json');
    case 'json_deep': return json(res, deep);
    case 'json_utf8':
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(Buffer.concat([Buffer.from(head), Buffer.from([0xff, 0xfe]), Buffer.from('"}]}}')]));
    case 'json_not_jsonrpc': return json(res, '{"hello":"world"}');
    case 'json_huge': return json(res, head + 'x'.repeat(big) + '"}]}}');
    case 'json_wrong_id': return json(res, message({ ...answer('not yours'), id: id + 1000 }));
    case 'expire':
      // The first time, the session is gone: rmcp initializes a new one and sends the call again.
      expiring = !expiring;
      if (expiring) {
        sessions.delete(session);
        return res.writeHead(404).end();
      }
      sse(res, event(answer('fine after recovery')));
      return res.end();
    case 'quiet':
      sse(res);
      return held && held.write('data: this is not json\n\n');
    default:
      sse(res, event(answer('fine')));
      return res.end();
  }
}

const server = http.createServer((req, res) => {
  const path = req.url;
  if (req.method === 'DELETE') return res.writeHead(200).end();
  if (req.method === 'GET') {
    if (path !== '/get') return res.writeHead(405).end();
    sse(res, ': open\n\n');
    held = res;
    return;
  }
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => handle(path, req, res, JSON.parse(body)));
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
"#;

/// The scripted server, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the server; its port.
fn start(script: &std::path::Path) -> (Server, u16) {
    let mut child = Command::new("node")
        .arg(script)
        .arg((2 * MAX_MESSAGE_BYTES).to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port = line.trim().parse().unwrap_or_else(|e| panic!("the server's port {line:?}: {e}"));
    (Server(child), port)
}

/// A runtime whose hub has connected to `servers` (the `mcpServers` object), with a generous call timeout.
fn connected(dir: &Path, servers: Value) -> Runtime {
    let settings = dir.join("mcp.json");
    std::fs::write(&settings, json!({"mcpServers": servers}).to_string()).unwrap();
    let mut config = Config::default();
    config.mcp.settings = Some(settings);
    config.mcp.call_timeout_ms = 60_000;
    config.mcp.max_message_bytes = MAX_MESSAGE_BYTES as u64;
    let runtime = shipped().config(config).yes(true).build().unwrap();
    block_on(runtime.mcp_settled());
    runtime
}

fn use_tool_with(task: &TaskHandle, server: &str, tool: &str, arguments: Value) -> (bool, String) {
    let arguments = arguments.to_string();
    let result = call(task, "use_mcp_tool", json!({"server_name": server, "tool_name": tool, "arguments": arguments}));
    (result.is_error(), text(&result))
}

fn use_tool(task: &TaskHandle, server: &str, tool: &str) -> (bool, String) {
    use_tool_with(task, server, tool, json!({}))
}

#[test]
fn every_answer_rmcp_would_drop_over_http_fails_the_call_at_once_and_the_next_call_answers() {
    let ws = workspace();
    let script = ws.path().join("server.js");
    std::fs::write(&script, SERVER).unwrap();
    let (_server, port) = start(&script);
    let url = |path: &str| json!({"type": "streamableHttp", "url": format!("http://127.0.0.1:{port}{path}")});
    let servers = json!({"bad": url("/bad"), "get": url("/get"), "init": url("/init"), "good": url("/good")});
    let runtime = connected(ws.path(), servers);
    let task = task_in(&runtime, ws.path());
    let ok = |server: &str, after: &str| {
        assert_eq!(use_tool(&task, server, "ok"), (false, "fine".to_owned()), "{server} after {after}");
        assert_eq!(use_tool(&task, "good", "ok"), (false, "fine".to_owned()), "the good server after {after}");
    };
    ok("bad", "connecting");

    // A timeout would say "Request timed out"; each of these names what the server sent instead.
    let too_long = format!(
        "sent a message longer than {MAX_MESSAGE_BYTES} bytes (the limit is [mcp] max_message_bytes = {MAX_MESSAGE_BYTES})"
    );
    let dropped = [
        ("garbage", "sent a message that is not JSON"),
        ("truncated", "sent a message that is not valid JSON"),
        ("deep", "sent JSON nested deeper than 128 levels"),
        ("not_jsonrpc", "sent JSON that is not a JSON-RPC message"),
        ("batch", "sent a JSON-RPC batch, which MCP does not allow"),
        ("utf8", "sent a message that is not valid UTF-8 (at byte"),
        ("wrong_id", "which it was never sent or had answered already"),
        ("idless_error", "answered with an error that names no request (-32700: Parse error)"),
        ("huge", too_long.as_str()),
        ("garbage_after_id", "sent a message that is not JSON"),
        ("json_garbage", "sent a response that is not a valid JSON-RPC message"),
        ("json_deep", "sent JSON nested deeper than 128 levels"),
        ("json_utf8", "sent a message that is not valid UTF-8"),
        ("json_not_jsonrpc", "sent a response that is not a valid JSON-RPC message"),
        ("json_huge", too_long.as_str()),
        ("json_wrong_id", "which it was never sent or had answered already"),
    ];
    for (tool, expected) in dropped {
        let (is_error, text) = use_tool(&task, "bad", tool);
        assert!(is_error && text.contains(expected), "{tool}: {text}");
        assert!(text.contains("MCP server \"bad\""), "{tool}: {text}");
        ok("bad", tool);
    }

    // Garbage on the standalone GET stream, while a call waits for an answer that never comes.
    ok("get", "connecting");
    let (is_error, text) = use_tool(&task, "get", "quiet");
    assert!(is_error && text.contains("MCP server \"get\" sent a message that is not JSON"), "quiet: {text}");
    ok("get", "quiet");

    // rmcp's session recovery sends `initialize` again and the call again, with their old ids: no fault.
    assert_eq!(use_tool(&task, "bad", "expire"), (false, "fine after recovery".to_owned()));
    ok("bad", "expire");

    // An `initialize` answered with garbage fails the start, in the same words.
    let (is_error, text) = use_tool(&task, "init", "ok");
    assert!(is_error && text.contains("initialize failed: the server sent a message that is not JSON"), "init: {text}");
}

/// The checks pass what a well-kept server sends over streamable HTTP: the TypeScript SDK's server (npm
/// `server-everything`, with its event store, so every event carries an id and each stream opens with a
/// priming event) answering calls while it streams log notifications on the standalone GET stream.
#[test]
fn a_well_kept_server_over_http_passes_every_check() {
    let ws = workspace();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let entry = node_peers().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let mut child = Command::new("node")
        .arg(entry)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let _server = Server(child);
    let mut line = String::new();
    while !line.contains("listening on port") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "server-everything exited before listening");
    }
    // Its log lines must not fill the pipe.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let url = format!("http://127.0.0.1:{port}/mcp");
    let runtime = connected(ws.path(), json!({"everything": {"type": "streamableHttp", "url": url}}));
    let task = task_in(&runtime, ws.path());

    let echo = |message: &str| use_tool_with(&task, "everything", "echo", json!({"message": message}));
    assert_eq!(echo("hello"), (false, "Echo: hello".to_owned()));
    let (is_error, text) = use_tool(&task, "everything", "toggle-simulated-logging");
    assert!(!is_error && text.starts_with("Started simulated, random-leveled logging"), "{text}");
    // Longer than the logging's 5 s pace, so notifications arrive while the call waits.
    let long = json!({"duration": 6, "steps": 3});
    let (is_error, text) = use_tool_with(&task, "everything", "trigger-long-running-operation", long);
    assert!(!is_error && text.contains("Long running operation completed"), "{text}");
    for n in 0..5 {
        assert_eq!(echo(&format!("again {n}")), (false, format!("Echo: again {n}")));
    }
    let sum = use_tool_with(&task, "everything", "get-sum", json!({"a": 2, "b": 3}));
    assert_eq!(sum, (false, "The sum of 2 and 3 is 5.".to_owned()));
    let status = runtime.mcp_servers().unwrap();
    let server = status.servers.iter().find(|s| s.name == "everything").unwrap();
    assert_eq!((server.status.as_str(), &server.error), ("connected", &None));
}
