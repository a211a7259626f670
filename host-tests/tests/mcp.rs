//! use_mcp_tool, access_mcp_resource, load_mcp_documentation and native `{server}__mcp__{tool}` tools against
//! real MCP servers nobody here wrote (the npm packages `@modelcontextprotocol/server-everything` and
//! `server-filesystem`, installed by `cargo xtask test`), plus tiny scripted servers that crash or never
//! answer, and bad settings.

use crate::util::{block_on, call, shipped, task_in, text, workspace};
use serde_json::json;
use std::path::{Path, PathBuf};
use toolshed::{Config, Runtime, ToolResult, ToolUse};

/// The npm test peers, installed by `cargo xtask test`; a clear failure when they are missing.
pub fn node_peers() -> PathBuf {
    let dir = std::env::var_os("TOOLSHED_TEST_NODE_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-peers/node"));
    let everything = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        everything.is_file(),
        "{} not found: the MCP tests run real npm MCP servers; run `cargo xtask test`, which installs them into target/test-peers/node",
        everything.display()
    );
    dir
}

fn package_entry(package: &str) -> String {
    node_peers().join("node_modules/@modelcontextprotocol").join(package).join("dist/index.js").display().to_string()
}

/// A server that answers `initialize` and `tools/list`, then on `tools/call` exits (`crash`) or stays
/// silent (`hang`).
const SCRIPTED: &str = r#"
const mode = process.argv[2];
const rl = require('readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  const send = (r) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, ...r }) + '\n');
  if (m.method === 'initialize') {
    send({ result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: mode, version: '1.0.0' } } });
  } else if (m.method === 'tools/list') {
    send({ result: { tools: [{ name: 'work', description: 'Works.', inputSchema: { type: 'object' } }] } });
  } else if (m.method === 'tools/call') {
    if (mode === 'crash') process.exit(3);
  } else {
    send({ error: { code: -32601, message: 'Method not found' } });
  }
});
"#;

fn runtime_with(settings: &Path, yes: bool, tweak: impl FnOnce(&mut Config)) -> Runtime {
    let mut config = Config::default();
    config.mcp.settings = Some(settings.to_owned());
    tweak(&mut config);
    let runtime = shipped().config(config).yes(yes).build().unwrap();
    block_on(runtime.mcp_settled());
    runtime
}

fn everything(extra: serde_json::Value) -> serde_json::Value {
    let mut server = json!({"command": "node", "args": [package_entry("server-everything"), "stdio"]});
    if let (Some(server), Some(extra)) = (server.as_object_mut(), extra.as_object()) {
        server.extend(extra.clone());
    }
    server
}

fn use_tool(task: &toolshed::TaskHandle, server: &str, tool: &str, arguments: &str) -> ToolResult {
    call(task, "use_mcp_tool", json!({"server_name": server, "tool_name": tool, "arguments": arguments}))
}

#[test]
fn everything_server_echo_sum_resources_and_auto_approve() {
    let ws = workspace();
    let settings = ws.path().join("mcp.json");
    let servers = json!({"mcpServers": {"everything": everything(json!({"autoApprove": ["echo"]}))}});
    std::fs::write(&settings, servers.to_string()).unwrap();
    // No --yes and nobody to ask: only what autoApprove lists runs.
    let runtime = runtime_with(&settings, false, |_| {});
    let task = task_in(&runtime, ws.path());

    let echo = use_tool(&task, "everything", "echo", r#"{"message": "hello"}"#);
    assert_eq!(echo.to_model_text(), "[use_mcp_tool for 'everything'] Result:\nEcho: hello");
    let sum = use_tool(&task, "everything", "get-sum", r#"{"a": 2, "b": 3}"#);
    assert_eq!(sum.status, toolshed::ResultStatus::Denied, "{sum:?}");

    drop((task, runtime));
    let runtime = runtime_with(&settings, true, |_| {});
    let task = task_in(&runtime, ws.path());
    let sum = use_tool(&task, "everything", "get-sum", r#"{"a": 2, "b": 3}"#);
    assert_eq!(text(&sum), "The sum of 2 and 3 is 5.");

    // The native name runs the same path, with the input as the arguments.
    let native = block_on(task.execute(ToolUse::new("n1", "everything__mcp__get-sum", json!({"a": 20, "b": 22}))));
    assert_eq!(
        (native.name.as_str(), text(&native).as_str()),
        ("everything__mcp__get-sum", "The sum of 20 and 22 is 42.")
    );
    assert_eq!(runtime.specs().mcp_tool("everything__mcp__echo"), Some(("everything", "echo")));

    // A resource the server lists, read back.
    let status = runtime.mcp_servers().unwrap();
    let server = status.servers.iter().find(|s| s.name == "everything").unwrap();
    assert_eq!(server.status, "connected");
    let uri = server
        .resources
        .iter()
        .filter_map(|r| r.get("uri").and_then(|u| u.as_str()))
        .find(|u| u.contains("document"))
        .expect("server-everything lists its static documents")
        .to_owned();
    let resource = call(&task, "access_mcp_resource", json!({"server_name": "everything", "uri": uri}));
    assert!(!resource.is_error(), "{resource:?}");
    let body = text(&resource);
    assert!(body.len() > 20 && body != "(Empty response)", "{body}");

    let docs = call(&task, "load_mcp_documentation", json!({}));
    assert!(text(&docs).ends_with("Connected MCP servers: everything\n"), "{}", text(&docs));
}

#[test]
fn bad_arguments_unknown_servers_and_tools_are_clear_errors() {
    let ws = workspace();
    let settings = ws.path().join("mcp.json");
    let servers =
        json!({"mcpServers": {"everything": everything(json!({})), "off": everything(json!({"disabled": true}))}});
    std::fs::write(&settings, servers.to_string()).unwrap();
    let runtime = runtime_with(&settings, true, |_| {});
    let task = task_in(&runtime, ws.path());

    let invalid = use_tool(&task, "everything", "echo", "{message: hi");
    assert_eq!(
        text(&invalid),
        "The tool execution failed with the following error:\n<error>\nInvalid JSON argument used with everything for echo. Please retry with a properly formatted JSON argument.\n</error>"
    );
    assert_eq!(task.consecutive_mistakes(), 1);
    let unknown_server = use_tool(&task, "nope", "echo", "{}");
    assert!(text(&unknown_server).contains(
        "Error executing MCP tool: No connection found for server: nope. Please make sure to use MCP servers available under 'Connected MCP Servers'."
    ));
    let disabled = use_tool(&task, "off", "echo", "{}");
    assert!(text(&disabled).contains("Error executing MCP tool: Server \"off\" is disabled and cannot be used"));
    let unknown_tool = use_tool(&task, "everything", "nope", "{}");
    assert!(text(&unknown_tool).contains("Tool \"nope\" was not found on MCP server \"everything\". Its tools: "));
    assert!(text(&unknown_tool).contains("echo"));
    // The server's own validation of arguments comes back as its error result.
    let wrong = use_tool(&task, "everything", "get-sum", r#"{"a": "two"}"#);
    assert!(text(&wrong).starts_with("Error") || wrong.is_error(), "{wrong:?}");
    let native_unknown = block_on(task.execute(ToolUse::new("n", "nope__mcp__x", json!({}))));
    assert!(text(&native_unknown).contains("No connection found for server: nope."), "{native_unknown:?}");
}

#[test]
fn filesystem_server_lists_and_reads_a_temp_dir() {
    let ws = workspace();
    let shared = tempfile::tempdir().unwrap();
    let shared_dir = shared.path().canonicalize().unwrap();
    std::fs::write(shared_dir.join("notes.txt"), "first line\nsecond line\n").unwrap();
    std::fs::create_dir(shared_dir.join("sub")).unwrap();
    let settings = ws.path().join("mcp.json");
    let server = json!({"command": "node", "args": [package_entry("server-filesystem"), shared_dir]});
    std::fs::write(&settings, json!({"mcpServers": {"fs": server}}).to_string()).unwrap();
    let runtime = runtime_with(&settings, true, |_| {});
    let task = task_in(&runtime, ws.path());

    let dir = shared_dir.display().to_string();
    let listing = use_tool(&task, "fs", "list_directory", &json!({"path": dir}).to_string());
    let listing = text(&listing);
    assert!(listing.contains("[FILE] notes.txt") && listing.contains("[DIR] sub"), "{listing}");
    let status = runtime.mcp_servers().unwrap();
    let tools = &status.servers[0].tools;
    let read_tool = ["read_text_file", "read_file"]
        .into_iter()
        .find(|name| tools.iter().any(|t| t["name"] == *name))
        .expect("a read tool");
    let file = shared_dir.join("notes.txt").display().to_string();
    let read = use_tool(&task, "fs", read_tool, &json!({"path": file}).to_string());
    assert_eq!(text(&read), "first line\nsecond line\n");
}

#[test]
fn crashing_and_silent_servers_fail_cleanly_and_a_broken_entry_spares_the_others() {
    let ws = workspace();
    let script = ws.path().join("scripted.js");
    std::fs::write(&script, SCRIPTED).unwrap();
    let script = script.display().to_string();
    let settings = ws.path().join("mcp.json");
    let servers = json!({"mcpServers": {
        "crash": {"command": "node", "args": [script, "crash"]},
        "hang": {"command": "node", "args": [script, "hang"]},
        "broken": {"args": ["no command"]},
        "everything": everything(json!({}))
    }});
    std::fs::write(&settings, servers.to_string()).unwrap();
    let runtime = runtime_with(&settings, true, |c| c.mcp.call_timeout_ms = 300);
    let task = task_in(&runtime, ws.path());
    let status = runtime.mcp_servers().unwrap();
    let state = |name: &str| status.servers.iter().find(|s| s.name == name).unwrap().clone();
    assert_eq!(state("everything").status, "connected");
    assert_eq!(state("crash").status, "connected");
    let broken = state("broken");
    assert_eq!(broken.status, "disconnected");
    assert!(broken.error.unwrap().contains("invalid settings for MCP server \"broken\": give \"command\""));

    let crashed = use_tool(&task, "crash", "work", "{}");
    assert!(text(&crashed).contains("Error executing MCP tool: "), "{crashed:?}");
    let silent = use_tool(&task, "hang", "work", "{}");
    assert!(text(&silent).contains("Error executing MCP tool: MCP error -32001: Request timed out"), "{silent:?}");
    // The others still work after both.
    assert_eq!(text(&use_tool(&task, "everything", "echo", r#"{"message": "still here"}"#)), "Echo: still here");
    let broken = use_tool(&task, "broken", "work", "{}");
    assert!(text(&broken).contains("give \"command\""), "{broken:?}");
}

#[test]
fn a_malformed_settings_file_is_reported_and_a_fixed_one_is_picked_up() {
    let ws = workspace();
    let settings = ws.path().join("mcp.json");
    std::fs::write(&settings, "{\"mcpServers\": {").unwrap();
    let runtime = runtime_with(&settings, true, |c| c.mcp.poll_ms = 50);
    let error = runtime.mcp_servers().unwrap().settings_error.unwrap();
    assert!(error.contains("invalid MCP settings file") && error.contains("not JSON"), "{error}");

    std::fs::write(&settings, json!({"mcpServers": {"everything": everything(json!({}))}}).to_string()).unwrap();
    let connected = (0..400).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        let status = runtime.mcp_servers().unwrap();
        status.settings_error.is_none() && status.servers.iter().any(|s| s.status == "connected")
    });
    assert!(connected, "{:?}", runtime.mcp_servers());
    let task = task_in(&runtime, ws.path());
    assert_eq!(text(&use_tool(&task, "everything", "echo", r#"{"message": "reloaded"}"#)), "Echo: reloaded");
}

/// A server whose tool list grows: `grow` adds the tool `grown` and says so with
/// `notifications/tools/list_changed`, as a server that registers tools at run time does; `fail` answers an
/// `isError` result.
const GROWING: &str = r#"
let tools = [
  { name: 'fail', description: 'Fails.', inputSchema: { type: 'object' } },
  { name: 'grow', description: 'Adds a tool.', inputSchema: { type: 'object' } },
];
const rl = require('readline').createInterface({ input: process.stdin });
const write = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === 'initialize') {
    write({ id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'growing', version: '1.0.0' } } });
  } else if (m.method === 'tools/list') {
    write({ id: m.id, result: { tools } });
  } else if (m.method === 'tools/call' && m.params.name === 'grow') {
    tools = tools.concat([{ name: 'grown', description: 'Grown.', inputSchema: { type: 'object' } }]);
    write({ id: m.id, result: { content: [{ type: 'text', text: 'grew' }] } });
    write({ method: 'notifications/tools/list_changed' });
  } else if (m.method === 'tools/call' && m.params.name === 'fail') {
    write({ id: m.id, result: { content: [{ type: 'text', text: 'it failed' }], isError: true } });
  } else if (m.method === 'tools/call' && m.params.name === 'grown') {
    write({ id: m.id, result: { content: [{ type: 'text', text: 'grown tool ran' }] } });
  } else {
    write({ id: m.id, error: { code: -32601, message: 'Method not found' } });
  }
});
"#;

/// Waits (one generous bound; never a timing assertion) until `done` holds, woken by each bump of the hub's
/// generation; the generation seen last.
fn await_change(changes: &mut tokio::sync::watch::Receiver<u64>, mut done: impl FnMut() -> bool) -> u64 {
    block_on(async {
        let wait = async {
            while !done() {
                changes.changed().await.expect("the hub is running");
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(60), wait).await.expect("the change arrives");
    });
    *changes.borrow()
}

#[test]
fn blob_resources_and_resource_links_read_as_cline_reads_them() {
    let ws = workspace();
    let settings = ws.path().join("mcp.json");
    std::fs::write(&settings, json!({"mcpServers": {"everything": everything(json!({}))}}).to_string()).unwrap();
    let runtime = runtime_with(&settings, true, |_| {});
    let task = task_in(&runtime, ws.path());

    // Cline keeps `item.text` only: a blob (base64 bytes) reads as nothing, so `(Empty response)`.
    let blob = call(
        &task,
        "access_mcp_resource",
        json!({"server_name": "everything", "uri": "demo://resource/dynamic/blob/1"}),
    );
    assert_eq!(blob.to_model_text(), "[access_mcp_resource for 'everything'] Result:\n(Empty response)");
    assert!(!blob.is_error());
    let text_resource = call(
        &task,
        "access_mcp_resource",
        json!({"server_name": "everything", "uri": "demo://resource/dynamic/text/2"}),
    );
    assert!(!text_resource.is_error() && text(&text_resource) != "(Empty response)", "{text_resource:?}");

    // Cline has no case for `resource_link`: its fallback reads it as nothing, so only the text item is left.
    let links = use_tool(&task, "everything", "get-resource-links", r#"{"count": 3}"#);
    assert_eq!(text(&links), "Here are 3 resource links to resources available in this server:");
    assert!(!links.is_error());
}

#[test]
fn list_changed_is_followed_for_tools_and_resources() {
    let ws = workspace();
    let script = ws.path().join("growing.js");
    std::fs::write(&script, GROWING).unwrap();
    let settings = ws.path().join("mcp.json");
    let servers = json!({"mcpServers": {
        "growing": {"command": "node", "args": [script.display().to_string()]},
        "everything": everything(json!({}))
    }});
    std::fs::write(&settings, servers.to_string()).unwrap();
    let runtime = runtime_with(&settings, true, |_| {});
    let task = task_in(&runtime, ws.path());
    let mut changes = runtime.mcp_changes();
    let start = *changes.borrow_and_update();
    let tools_of = |server: &str| -> Vec<String> {
        let status = runtime.mcp_servers().unwrap();
        let server = status.servers.into_iter().find(|s| s.name == server).unwrap();
        server.tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
    };
    assert_eq!(tools_of("growing"), ["fail", "grow"]);
    assert_eq!(runtime.specs().mcp_tool("growing__mcp__grown"), None);

    // tools/list_changed: the new tool is listed, routed under its native name, and callable.
    assert_eq!(text(&use_tool(&task, "growing", "grow", "{}")), "grew");
    let after_tools = await_change(&mut changes, || tools_of("growing").len() == 3);
    assert!(after_tools > start, "the generation moved: {start} -> {after_tools}");
    assert_eq!(tools_of("growing"), ["fail", "grow", "grown"]);
    assert_eq!(runtime.specs().mcp_tool("growing__mcp__grown"), Some(("growing", "grown")));
    assert_eq!(text(&use_tool(&task, "growing", "grown", "{}")), "grown tool ran");
    let native = block_on(task.execute(ToolUse::new("n", "growing__mcp__grown", json!({}))));
    assert_eq!(text(&native), "grown tool ran");

    // resources/list_changed from server-everything: a session resource it registers at run time (a gzip of
    // a data: URL, nothing fetched from the network) is listed, and reads as Cline reads a blob.
    let uri = "demo://resource/session/hello.txt.gz";
    let resources = || -> Vec<String> {
        let status = runtime.mcp_servers().unwrap();
        let server = status.servers.into_iter().find(|s| s.name == "everything").unwrap();
        server.resources.iter().filter_map(|r| r["uri"].as_str().map(str::to_owned)).collect()
    };
    assert!(!resources().iter().any(|u| u == uri));
    let arguments =
        json!({"name": "hello.txt.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink"});
    let gzip = use_tool(&task, "everything", "gzip-file-as-resource", &arguments.to_string());
    // Its only content is a resource link, which Cline reads as nothing.
    assert_eq!(text(&gzip), "(No response)");
    let after_resources = await_change(&mut changes, || resources().iter().any(|u| u == uri));
    assert!(after_resources > after_tools);
    let read = call(&task, "access_mcp_resource", json!({"server_name": "everything", "uri": uri}));
    assert_eq!(text(&read), "(Empty response)");
}

#[test]
fn is_error_results_are_tool_errors_with_clines_text() {
    let ws = workspace();
    let settings = ws.path().join("mcp.json");
    std::fs::write(&settings, json!({"mcpServers": {"everything": everything(json!({}))}}).to_string()).unwrap();
    let runtime = runtime_with(&settings, true, |_| {});
    let task = task_in(&runtime, ws.path());
    let wrong = use_tool(&task, "everything", "get-sum", r#"{"a": "two", "b": 1}"#);
    assert_eq!(wrong.status, toolshed::ResultStatus::Error);
    assert_eq!(
        wrong.to_model_text(),
        "[use_mcp_tool for 'everything'] Result:\nError:\nMCP error -32602: Input validation error: Invalid arguments for tool get-sum: Invalid input: expected number, received string at a"
    );
    // Not the model's mistake: Cline counts none for a server's own error.
    assert_eq!(task.consecutive_mistakes(), 0);
    assert_eq!(wrong.to_anthropic()["is_error"], json!(true));
    drop((task, runtime));

    // `toolshed call` exits 1 on it, by use_mcp_tool and by the native name, and 0 on success.
    let home = workspace();
    let config = ws.path().join("config.toml");
    std::fs::write(&config, format!("[mcp]\nsettings = {:?}\n", settings.display().to_string())).unwrap();
    let plugins = crate::util::plugins().display().to_string();
    let run = |tool: &str, input: serde_json::Value| {
        let input = input.to_string();
        let args = ["call", "--plugins", &plugins, "--config", config.to_str().unwrap(), "--yes", tool, &input];
        crate::util::toolshed(home.path(), ws.path(), &args, &[])
    };
    let by_name = run(
        "use_mcp_tool",
        json!({"server_name": "everything", "tool_name": "get-sum", "arguments": "{\"a\": \"two\"}"}),
    );
    assert_eq!(by_name.status.code(), Some(1), "{}", crate::util::stderr(&by_name));
    assert!(crate::util::stdout(&by_name)
        .starts_with("[use_mcp_tool for 'everything'] Result:\nError:\nMCP error -32602: "));
    let native = run("everything__mcp__get-sum", json!({"a": "two"}));
    assert_eq!(native.status.code(), Some(1), "{}", crate::util::stdout(&native));
    assert!(crate::util::stdout(&native).contains("Error:\nMCP error -32602: Input validation error"));
    let fine = run("everything__mcp__get-sum", json!({"a": 1, "b": 2}));
    assert_eq!(fine.status.code(), Some(0), "{}", crate::util::stdout(&fine));
    assert!(crate::util::stdout(&fine).ends_with("The sum of 1 and 2 is 3.\n"));
}

#[test]
fn model_visible_errors_carry_no_rust_type_names_or_doubled_prefixes() {
    let ws = workspace();
    let settings = ws.path().join("mcp.json");
    std::fs::write(&settings, json!({"mcpServers": {"everything": everything(json!({}))}}).to_string()).unwrap();
    let runtime = runtime_with(&settings, true, |_| {});
    let task = task_in(&runtime, ws.path());
    let rust_words = ["struct ", "enum ", "Error {", "Os {", "ServiceError", "ErrorData", "McpError(", "Transport ["];
    let clean = |result: &ToolResult| {
        let shown = result.to_model_text();
        for word in rust_words {
            assert!(!shown.contains(word), "{word:?} in {shown}");
        }
        assert!(!shown.contains("MCP error -32602: MCP error"), "{shown}");
        shown
    };

    // The server's JSON-RPC error, whose message already carries the TypeScript SDK's prefix: once.
    let missing = call(&task, "access_mcp_resource", json!({"server_name": "everything", "uri": "demo://nope"}));
    assert!(missing.is_error());
    assert!(
        clean(&missing)
            .contains("Error executing access_mcp_resource: MCP error -32602: Resource demo://nope not found\n"),
        "{missing:?}"
    );
    // Arguments of the wrong types, in several shapes, to a real server's tools.
    for (tool, arguments) in [
        ("get-sum", json!({"a": "two", "b": 1})),
        ("get-sum", json!({"a": [1], "b": {"x": 1}})),
        ("echo", json!({"message": 42})),
        ("get-resource-links", json!({"count": "many"})),
        ("get-tiny-image", json!({"extra": null})),
    ] {
        let result = use_tool(&task, "everything", tool, &arguments.to_string());
        clean(&result);
    }
    // Input that is not an object at all, to use_mcp_tool and to a native MCP tool.
    clean(&call(&task, "use_mcp_tool", json!("everything echo")));
    clean(&block_on(task.execute(ToolUse::new("n", "everything__mcp__echo", json!([1, 2])))));
    clean(&call(&task, "access_mcp_resource", json!({"server_name": ["everything"], "uri": 7})));
}

/// The Python `mcp` client against `toolshed serve`: an `isError` result of a native MCP tool is `isError`,
/// and the MCP server's tool list change reaches the client as `notifications/tools/list_changed`.
const SERVE_CLIENT: &str = r#"
import asyncio, json, os, sys
from mcp import ClientSession, types
from mcp.client.stdio import stdio_client, StdioServerParameters

changed = asyncio.Event()

async def on_message(message):
    if isinstance(message, types.ToolListChangedNotification):
        changed.set()

async def main():
    params = StdioServerParameters(command=sys.argv[1], args=json.loads(sys.argv[2]),
                                   env={"HOME": sys.argv[3], "PATH": os.environ.get("PATH", "")})
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1], message_handler=on_message) as session:
            await session.initialize()
            failed = await session.call_tool("growing__mcp__fail", {})
            out = {"fail": {"isError": bool(failed.is_error if hasattr(failed, "is_error") else failed.isError),
                            "text": "".join(c.text for c in failed.content if c.type == "text")}}
            # Changes before this point (the server connecting) do not count.
            changed.clear()
            await session.call_tool("growing__mcp__grow", {})
            try:
                await asyncio.wait_for(changed.wait(), 60)
                out["changed"] = True
            except asyncio.TimeoutError:
                out["changed"] = False
            print(json.dumps(out), flush=True)

asyncio.run(main())
"#;

#[test]
fn serve_reports_is_error_and_forwards_the_servers_list_changed() {
    let ws = workspace();
    let script = ws.path().join("growing.js");
    std::fs::write(&script, GROWING).unwrap();
    let settings = ws.path().join("mcp.json");
    let servers = json!({"mcpServers": {"growing": {"command": "node", "args": [script.display().to_string()]}}});
    std::fs::write(&settings, servers.to_string()).unwrap();
    let config = ws.path().join("config.toml");
    std::fs::write(&config, format!("[mcp]\nsettings = {:?}\n", settings.display().to_string())).unwrap();
    let client = ws.path().join("client.py");
    std::fs::write(&client, SERVE_CLIENT).unwrap();
    let home = workspace();
    let args = json!([
        "--plugins",
        crate::util::plugins().display().to_string(),
        "--config",
        config.display().to_string(),
        "--cwd",
        ws.path().display().to_string(),
        "serve",
        "--yes"
    ]);
    let output = std::process::Command::new(crate::serve::python())
        .arg(&client)
        .args([crate::util::toolshed_bin().display().to_string(), args.to_string(), home.path().display().to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line =
        stdout.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| {
            panic!("client printed no result: {stdout}\n{}", String::from_utf8_lossy(&output.stderr))
        });
    let result: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(result["fail"]["isError"], true, "{result}");
    assert!(result["fail"]["text"].as_str().unwrap().contains("Error:\nit failed"), "{result}");
    assert_eq!(result["changed"], true, "{result}");
}

/// Issue 25, class 3: Cline's texts for a server the MCP tools cannot use, and the order of their own checks.
#[test]
fn unknown_and_disabled_servers_read_as_cline_words_them_per_tool() {
    let ws = workspace();
    let settings = ws.path().join("mcp.json");
    let servers =
        json!({"mcpServers": {"everything": everything(json!({})), "off": everything(json!({"disabled": true}))}});
    std::fs::write(&settings, servers.to_string()).unwrap();
    let runtime = runtime_with(&settings, true, |_| {});
    let task = task_in(&runtime, ws.path());
    let tool_error =
        |text: &str| format!("The tool execution failed with the following error:\n<error>\n{text}\n</error>");

    // use_mcp_tool: the handler's plain string, no toolError wrapper, not the model's mistake.
    let unknown = use_tool(&task, "nope", "echo", "{}");
    assert_eq!(
        unknown.to_model_text(),
        "[use_mcp_tool for 'nope'] Result:\nError executing MCP tool: No connection found for server: nope. Please make sure to use MCP servers available under 'Connected MCP Servers'."
    );
    assert!(unknown.is_error());
    let disabled = use_tool(&task, "off", "echo", "{}");
    assert_eq!(
        disabled.to_model_text(),
        "[use_mcp_tool for 'off'] Result:\nError executing MCP tool: Server \"off\" is disabled and cannot be used"
    );
    assert_eq!(task.consecutive_mistakes(), 0);
    // access_mcp_resource: McpHub's `readResource` texts, without the suffix, inside the executor's toolError.
    let unknown = call(&task, "access_mcp_resource", json!({"server_name": "nope", "uri": "demo://a"}));
    assert_eq!(text(&unknown), tool_error("Error executing access_mcp_resource: No connection found for server: nope"));
    let disabled = call(&task, "access_mcp_resource", json!({"server_name": "off", "uri": "demo://a"}));
    assert_eq!(text(&disabled), tool_error("Error executing access_mcp_resource: Server \"off\" is disabled"));

    // The handlers' own checks, in Cline's order: server_name, tool_name (or uri), then the arguments' JSON.
    let missing = |param: &str| tool_error(&toolshed_plugin_api::result::missing_parameter_text(param));
    for (tool, input, param) in [
        ("use_mcp_tool", json!({"tool_name": "echo", "arguments": "{bad"}), "server_name"),
        ("use_mcp_tool", json!({"server_name": "", "tool_name": "echo"}), "server_name"),
        ("use_mcp_tool", json!({"server_name": "everything", "arguments": "{bad"}), "tool_name"),
        ("access_mcp_resource", json!({"uri": "demo://a"}), "server_name"),
        ("access_mcp_resource", json!({"server_name": "everything", "uri": null}), "uri"),
    ] {
        assert_eq!(text(&call(&task, tool, input.clone())), missing(param), "{tool} {input}");
    }
    let blank = use_tool(&task, "everything", "echo", "  ");
    assert_eq!(
        text(&blank),
        tool_error("Invalid JSON argument used with everything for echo. Please retry with a properly formatted JSON argument.")
    );
    // Without arguments, the tool is called with `{}`, as Cline's hub sends.
    let bare = call(&task, "use_mcp_tool", json!({"server_name": "everything", "tool_name": "get-tiny-image"}));
    assert!(!bare.is_error(), "{bare:?}");
}
