//! `toolshed serve` with a real MCP client nobody here wrote: the Python `mcp` package (pinned, installed by
//! `cargo xtask test` into a virtualenv), over stdio and streamable HTTP; and the HTTP guard (token, start-up
//! refusal without one).

use crate::util::{plugins, served_authority, stderr, toolshed, toolshed_bin, workspace, Killed};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The virtualenv's Python with `mcp`, installed by `cargo xtask test`; a clear failure when missing.
pub(crate) fn python() -> PathBuf {
    let python = std::env::var_os("TOOLSHED_TEST_PY")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-peers/py/bin/python"));
    let ok =
        python.is_file() && Command::new(&python).args(["-c", "import mcp"]).output().is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{}: no Python with the `mcp` package; run `cargo xtask test`, which installs it into target/test-peers/py",
        python.display()
    );
    python
}

/// The client: lists the tools, reads a file, sends bad arguments; prints one JSON line.
const CLIENT: &str = r#"
import asyncio, json, os, sys
from mcp import ClientSession

def field(obj, snake, camel):
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)

async def run(session):
    await session.initialize()
    tools = await session.list_tools()
    out = {"tools": sorted(t.name for t in tools.tools)}
    schema = field(next(t for t in tools.tools if t.name == "read_file"), "input_schema", "inputSchema")
    out["read_file_required"] = schema.get("required", [])
    for key, args in [("read", {"path": "a.txt"}), ("bad", {}), ("unknown", None)]:
        name = "no_such_tool" if args is None else "read_file"
        r = await session.call_tool(name, args or {})
        out[key] = {"isError": bool(field(r, "is_error", "isError")), "text": "".join(c.text for c in r.content if c.type == "text")}
    print(json.dumps(out), flush=True)

async def main():
    if sys.argv[1] == "stdio":
        from mcp.client.stdio import stdio_client, StdioServerParameters
        params = StdioServerParameters(command=sys.argv[2], args=json.loads(sys.argv[3]),
                                       env={"HOME": sys.argv[4], "PATH": os.environ.get("PATH", "")})
        async with stdio_client(params) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await run(session)
    else:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client
        async with httpx2.AsyncClient(headers={"Authorization": "Bearer " + sys.argv[3]}) as http:
            async with streamable_http_client(sys.argv[2], http_client=http) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await run(session)

asyncio.run(main())
"#;

fn run_client(args: &[&str]) -> serde_json::Value {
    let dir = workspace();
    let script = dir.path().join("client.py");
    std::fs::write(&script, CLIENT).unwrap();
    let output = Command::new(python()).arg(&script).args(args).output().unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    let line =
        out.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| {
            panic!("client printed no result: {}\n{}", out, String::from_utf8_lossy(&output.stderr))
        });
    serde_json::from_str(line).unwrap()
}

fn check(result: &serde_json::Value) {
    let tools: Vec<&str> = result["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert!(tools.contains(&"read_file") && tools.contains(&"list_files"), "{tools:?}");
    assert_eq!(result["read_file_required"], serde_json::json!(["path"]));
    assert_eq!(result["read"]["isError"], false, "{result}");
    assert!(result["read"]["text"].as_str().unwrap().starts_with("1 | hello from the workspace"), "{result}");
    assert_eq!(result["bad"]["isError"], true);
    assert!(result["bad"]["text"].as_str().unwrap().contains("Missing value for required parameter 'path'"));
    assert_eq!(result["unknown"]["isError"], true);
    assert!(result["unknown"]["text"].as_str().unwrap().contains("Tool 'no_such_tool' does not exist"));
}

#[test]
fn python_client_over_stdio() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "hello from the workspace\n").unwrap();
    let home = workspace();
    let args = serde_json::json!([
        "--plugins",
        plugins().display().to_string(),
        "--cwd",
        ws.path().display().to_string(),
        "serve"
    ]);
    let result = run_client(&[
        "stdio",
        &toolshed_bin().display().to_string(),
        &args.to_string(),
        &home.path().display().to_string(),
    ]);
    check(&result);
}

#[test]
fn python_client_over_http_with_the_token_and_refusals_without() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "hello from the workspace\n").unwrap();
    let home = workspace();
    let plugins = plugins().display().to_string();
    let cwd = ws.path().display().to_string();

    // No token: refuses to start.
    let refused = toolshed(home.path(), ws.path(), &["--plugins", &plugins, "serve", "--http", "0"], &[]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("--http needs a bearer token"), "{}", stderr(&refused));

    let mut child = Command::new(toolshed_bin())
        .args(["--plugins", &plugins, "--cwd", &cwd, "serve", "--http", "127.0.0.1:0"])
        .env("HOME", home.path())
        .env("TOOLSHED_SERVE_TOKEN", "s3cret-token")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let server = Killed(child);
    let authority = served_authority(&mut lines);

    // Without the token, and with a foreign browser Origin: refused before MCP sees anything.
    let raw = |extra: &str| {
        let mut stream = std::net::TcpStream::connect(&authority).unwrap();
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        response.lines().next().unwrap_or_default().to_owned()
    };
    assert!(raw("").starts_with("HTTP/1.1 401"), "{}", raw(""));
    assert!(raw("Authorization: Bearer wrong\r\n").starts_with("HTTP/1.1 401"));
    let foreign = raw("Authorization: Bearer s3cret-token\r\nOrigin: https://evil.example\r\n");
    assert!(foreign.starts_with("HTTP/1.1 403"), "{foreign}");

    check(&run_client(&["http", &format!("http://{authority}/mcp"), "s3cret-token"]));
    drop(server);
}
