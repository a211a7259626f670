//! What `toolshed serve` lists, seen by MCP clients nobody here wrote: the pinned MCP Inspector CLI
//! (`@modelcontextprotocol/inspector`, installed by `cargo xtask test`) and the pinned Python `mcp` client.
//! Every tool's title and annotations, both profiles (hidden tools refused by name, errors without Cline's
//! XML reminder in `mcp`, everything in `cline`), the `[serve] profile` key, and a real MCP server's tools
//! aggregated under `{server}__mcp__{tool}`, listed and callable, with `toolshed schema` listing the same.

use crate::mcp::node_peers;
use crate::serve::python;
use crate::util::{plugins, stdout, toolshed, toolshed_bin, workspace};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::process::{Command, Output};

/// Cline's agent-loop tools, which the `mcp` profile does not serve: every shipped one, since an MCP listing
/// (what `serve` offers) keeps every tool by name rather than a variant's list.
const AGENT_LOOP: [&str; 9] = [
    "act_mode_respond",
    "ask_followup_question",
    "attempt_completion",
    "condense",
    "generate_explanation",
    "new_task",
    "plan_mode_respond",
    "report_bug",
    "summarize_task",
];

/// The start of Cline's XML tool-use reminder.
const REMINDER: &str = "# Reminder: Instructions for Tool Use";

/// A private HOME (its `.toolshed/config.toml` is the user config `serve` reads) and a workspace.
struct Setup {
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
}

impl Setup {
    fn new(config: &str) -> Self {
        let setup = Setup { home: workspace(), ws: workspace() };
        std::fs::write(setup.ws.path().join("a.txt"), "hello\n").unwrap();
        std::fs::create_dir_all(setup.home.path().join(".toolshed")).unwrap();
        std::fs::write(setup.home.path().join(".toolshed/config.toml"), config).unwrap();
        setup
    }

    /// A config whose `[mcp] settings` names these servers, after the `config` lines given.
    fn with_servers(servers: &Value, config: &str, mcp: &str) -> Self {
        let setup = Setup::new("");
        let settings = setup.home.path().join("mcp.json");
        std::fs::write(&settings, json!({ "mcpServers": servers }).to_string()).unwrap();
        let config = format!("{config}\n[mcp]\nsettings = {:?}\n{mcp}\n", settings.display().to_string());
        std::fs::write(setup.home.path().join(".toolshed/config.toml"), config).unwrap();
        setup
    }

    /// `toolshed schema ARGS` in this HOME and workspace: the tool names of its JSON.
    fn schema(&self, args: &[&str]) -> BTreeSet<String> {
        let output = self.schema_output(args);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let listed: Value = serde_json::from_str(&stdout(&output)).unwrap();
        names(listed.as_array().unwrap())
    }

    fn schema_output(&self, args: &[&str]) -> Output {
        let plugins = plugins().display().to_string();
        let full: Vec<&str> =
            ["--plugins", plugins.as_str(), "schema"].into_iter().chain(args.iter().copied()).collect();
        toolshed(self.home.path(), self.ws.path(), &full, &[])
    }

    /// `mcp-inspector --cli toolshed … serve SERVE_ARGS --method METHOD INSPECTOR_ARGS`: its output, with the
    /// Inspector's catalog kept out of the real HOME.
    fn inspector(&self, serve_args: &[&str], method: &str, inspector_args: &[&str]) -> Output {
        let peers = node_peers();
        let bin = peers.join("node_modules/.bin/mcp-inspector");
        assert!(
            bin.is_file(),
            "{} not found: run `cargo xtask test`, which installs the pinned Inspector",
            bin.display()
        );
        Command::new(bin)
            .arg("--cli")
            .arg(toolshed_bin())
            .args(["--plugins", &plugins().display().to_string(), "--cwd", &self.ws.path().display().to_string()])
            .arg("serve")
            .args(serve_args)
            .args(["--method", method])
            .args(inspector_args)
            .env("HOME", self.home.path())
            .env("MCP_CATALOG_PATH", self.home.path().join("inspector-catalog.json"))
            .env_remove("TOOLSHED_PLUGINS")
            .current_dir(self.ws.path())
            .output()
            .unwrap()
    }

    /// `tools/list` through the Inspector: the tools, by name.
    fn list(&self, serve_args: &[&str]) -> Vec<Value> {
        let output = self.inspector(serve_args, "tools/list", &[]);
        assert!(output.status.success(), "{}\n{}", stdout(&output), String::from_utf8_lossy(&output.stderr));
        let listed: Value = serde_json::from_str(&stdout(&output)).unwrap();
        listed["tools"].as_array().unwrap().clone()
    }

    /// `tools/call` through the Inspector: the result JSON it prints (a tool error exits non-zero, printing
    /// the result all the same).
    fn call(&self, serve_args: &[&str], tool: &str, args: &[&str]) -> Value {
        let mut inspector_args = vec!["--tool-name", tool];
        if !args.is_empty() {
            inspector_args.push("--tool-arg");
            inspector_args.extend(args);
        }
        let output = self.inspector(serve_args, "tools/call", &inspector_args);
        let out = stdout(&output);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{}", String::from_utf8_lossy(&output.stderr)))
    }
}

fn names(tools: &[Value]) -> BTreeSet<String> {
    tools.iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect()
}

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools.iter().find(|tool| tool["name"] == name).unwrap_or_else(|| panic!("{name} not listed: {:?}", names(tools)))
}

/// (readOnly, destructive, idempotent, openWorld) of a listed tool.
fn hints(tool: &Value) -> (bool, bool, bool, bool) {
    let a = &tool["annotations"];
    let hint = |key: &str| a[key].as_bool().unwrap_or_else(|| panic!("{key} missing: {tool}"));
    (hint("readOnlyHint"), hint("destructiveHint"), hint("idempotentHint"), hint("openWorldHint"))
}

fn text(result: &Value) -> String {
    result["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect()
}

#[test]
fn inspector_sees_a_title_and_annotations_on_every_tool() {
    let setup = Setup::new("");
    let tools = setup.list(&[]);
    assert!(tools.len() >= 10, "{:?}", names(&tools));
    for tool in &tools {
        let title = tool["title"].as_str().unwrap_or_else(|| panic!("no title: {tool}"));
        assert!(!title.is_empty() && !title.contains('_'), "{tool}");
        assert_eq!(tool["annotations"]["title"], title, "{tool}");
        hints(tool);
    }
    assert_eq!(tool(&tools, "read_file")["title"], "Read file");
    // As server-filesystem marks its readers and writers, from the capabilities each tool declares.
    for reader in ["read_file", "list_files", "search_files", "list_code_definition_names"] {
        assert_eq!(hints(tool(&tools, reader)), (true, false, true, false), "{reader}");
    }
    for writer in ["write_to_file", "replace_in_file", "apply_patch"] {
        assert_eq!(hints(tool(&tools, writer)), (false, true, false, false), "{writer}");
    }
    assert_eq!(hints(tool(&tools, "execute_command")), (false, true, false, true));
    // web_fetch declares no capability: the MCP defaults, not a claim of being harmless.
    assert_eq!(hints(tool(&tools, "web_fetch")), (false, true, false, true));
}

#[test]
fn the_mcp_profile_hides_the_agent_loop_and_the_xml_reminder_and_cline_serves_everything() {
    let setup = Setup::new("");
    let mcp = names(&setup.list(&[]));
    let cline = names(&setup.list(&["--profile", "cline"]));
    for hidden in AGENT_LOOP {
        assert!(!mcp.contains(hidden), "{hidden} listed in the mcp profile: {mcp:?}");
        assert!(cline.contains(hidden), "{hidden} missing in the cline profile: {cline:?}");
    }
    assert_eq!(cline.difference(&mcp).cloned().collect::<BTreeSet<_>>(), AGENT_LOOP.map(str::to_owned).into());

    let bare = setup.call(&[], "read_file", &[]);
    assert_eq!(bare["isError"], true);
    let bare = text(&bare);
    assert!(bare.contains("Missing value for required parameter 'path'"), "{bare}");
    assert!(!bare.contains(REMINDER) && !bare.contains("XML"), "{bare}");
    assert!(bare.ends_with("</error>"), "{bare:?}");
    let cline_error = text(&setup.call(&["--profile", "cline"], "read_file", &[]));
    assert!(cline_error.contains(REMINDER), "{cline_error}");
    // The same call with what it needs works in either profile.
    let read = text(&setup.call(&[], "read_file", &["path=a.txt"]));
    assert!(read.starts_with("1 | hello"), "{read}");
}

#[test]
fn the_profile_is_a_config_key_and_the_flag_wins() {
    let setup = Setup::new("[serve]\nprofile = \"cline\"\n");
    assert!(names(&setup.list(&[])).contains("attempt_completion"));
    assert!(!names(&setup.list(&["--profile", "mcp"])).contains("attempt_completion"));
    let bad = Setup::new("[serve]\nprofile = \"claude\"\n");
    let output =
        toolshed(bad.home.path(), bad.ws.path(), &["--plugins", &plugins().display().to_string(), "serve"], &[]);
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("serve.profile"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Calls a hidden tool by name (the Inspector only calls what is listed) and reads every tool's
/// annotations, through the Python client; prints one JSON line.
const HIDDEN_CALL: &str = r#"
import asyncio, json, os, sys
from mcp import ClientSession
from mcp.client.stdio import stdio_client, StdioServerParameters

def field(obj, snake, camel):
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)

async def main():
    params = StdioServerParameters(command=sys.argv[1], args=json.loads(sys.argv[2]),
                                   env={"HOME": sys.argv[3], "PATH": os.environ.get("PATH", "")})
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            out = {"annotated": all(t.annotations is not None and t.title for t in tools),
                   "read_only": sorted(t.name for t in tools if field(t.annotations, "read_only_hint", "readOnlyHint"))}
            try:
                r = await session.call_tool("attempt_completion", {"result": "done"})
                out["called"] = {"isError": field(r, "is_error", "isError"), "text": "".join(c.text for c in r.content if c.type == "text")}
            except Exception as e:
                out["refused"] = str(e)
            print(json.dumps(out), flush=True)

asyncio.run(main())
"#;

#[test]
fn python_client_sees_annotations_and_a_hidden_tool_refused_by_name() {
    let setup = Setup::new("");
    let script = setup.ws.path().join("client.py");
    std::fs::write(&script, HIDDEN_CALL).unwrap();
    let run = |profile: &str| -> Value {
        let args = json!([
            "--plugins",
            plugins().display().to_string(),
            "--cwd",
            setup.ws.path().display().to_string(),
            "serve",
            "--profile",
            profile
        ]);
        let output = Command::new(python())
            .arg(&script)
            .args([&toolshed_bin().display().to_string(), &args.to_string(), &setup.home.path().display().to_string()])
            .output()
            .unwrap();
        let out = stdout(&output);
        let line = out.lines().rev().find(|l| l.starts_with('{'));
        serde_json::from_str(line.unwrap_or_else(|| panic!("{out}\n{}", String::from_utf8_lossy(&output.stderr))))
            .unwrap()
    };
    let mcp = run("mcp");
    assert_eq!(mcp["annotated"], true, "{mcp}");
    assert!(mcp["read_only"].as_array().unwrap().contains(&json!("read_file")), "{mcp}");
    let refused = mcp["refused"].as_str().unwrap_or_else(|| panic!("not refused: {mcp}"));
    assert!(refused.contains("attempt_completion") && refused.contains("--profile cline"), "{refused}");
    // In the cline profile the tool runs (and answers as it does without a user to accept the result).
    let cline = run("cline");
    assert!(cline.get("refused").is_none() && cline["called"].is_object(), "{cline}");
}

fn everything() -> Value {
    let entry = node_peers().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    json!({"command": "node", "args": [entry.display().to_string(), "stdio"]})
}

/// A server whose listing is hostile: names no client can call, a description past the cap, text that
/// would break JSON built by hand; one good tool among them.
const HOSTILE: &str = r#"
const rl = require('readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  const send = (r) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, ...r }) + '\n');
  if (m.method === 'initialize') {
    send({ result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'h', version: '1' } } });
  } else if (m.method === 'tools/list') {
    const schema = { type: 'object', properties: { q: { type: 'string', description: 'q"}\u0000</x>' } } };
    send({ result: { tools: [
      { name: 'good', description: 'Quotes " and \\ and \u0007 and </tool>', inputSchema: schema },
      { name: 'bad name', description: 'Spaces.', inputSchema: { type: 'object' } },
      { name: 'x'.repeat(80), description: 'Too long a name.', inputSchema: { type: 'object' } },
      { name: 'wordy', description: 'w'.repeat(20000), inputSchema: { type: 'object' } },
    ] } });
  } else {
    send({ error: { code: -32601, message: 'Method not found' } });
  }
});
"#;

/// A server that never answers `initialize`: it stays starting.
const SILENT: &str = "process.stdin.resume();";

#[test]
fn mcp_servers_tools_are_listed_bounded_callable_and_in_schema() {
    let scripts = workspace();
    let hostile = scripts.path().join("hostile.js");
    std::fs::write(&hostile, HOSTILE).unwrap();
    let servers = json!({
        "everything": everything(),
        "hostile": {"command": "node", "args": [hostile.display().to_string()]},
    });
    // Both servers answer at once, so the listing waits for both, however slow the machine.
    let setup = Setup::with_servers(&servers, "[serve]\nmcp_startup_ms = 60000", "");

    let tools = setup.list(&[]);
    let listed = names(&tools);
    for name in ["use_mcp_tool", "access_mcp_resource", "everything__mcp__echo", "everything__mcp__get-sum"] {
        assert!(listed.contains(name), "{name} not listed: {listed:?}");
    }
    let echo = tool(&tools, "everything__mcp__echo");
    assert!(echo["description"].as_str().unwrap().starts_with("everything: Echoes back"), "{echo}");
    assert_eq!(echo["inputSchema"]["required"], json!(["message"]), "{echo}");
    assert_eq!(echo["title"], "everything: Echo");
    // A server's tool declares no capabilities we could vouch for.
    assert_eq!(hints(echo), (false, true, false, true));
    // Of the hostile server only the good tool, its text intact.
    let hostile: Vec<&String> = listed.iter().filter(|n| n.starts_with("hostile__")).collect();
    assert_eq!(hostile, ["hostile__mcp__good"]);
    let good = tool(&tools, "hostile__mcp__good");
    assert!(good["description"].as_str().unwrap().contains("Quotes \" and \\ and \u{7} and </tool>"), "{good}");

    let echoed = setup.call(&["--yes"], "everything__mcp__echo", &["message=hello aggregated"]);
    assert_eq!(echoed["isError"], false, "{echoed}");
    assert!(text(&echoed).contains("hello aggregated"), "{echoed}");

    // `toolshed schema` lists the same tools: the cline profile by default, the mcp one on request.
    assert_eq!(setup.schema(&["--provider", "anthropic", "--profile", "mcp"]), listed);
    // A family without a Cline variant offers every tool (a Cline family offers its variant's), the web tools
    // once `[web] enabled` (or `--web-tools`) turns them on, as Cline offers them; an MCP listing has them.
    let cline = setup.schema(&["--provider", "anthropic", "--family", "claude", "--web-tools"]);
    assert!(cline.is_superset(&listed) && cline.contains("attempt_completion"), "{cline:?}");
    let without_web = setup.schema(&["--provider", "anthropic", "--family", "claude"]);
    assert!(!without_web.contains("web_fetch") && without_web.contains("read_file"), "{without_web:?}");
    // Cline's XML section carries use_mcp_tool, not the servers' tools (those are for native tool calls).
    let xml = stdout(&setup.schema_output(&["--provider", "xml"]));
    assert!(xml.contains("## use_mcp_tool") && !xml.contains("everything__mcp__"), "{xml}");
}

#[test]
fn a_server_still_starting_does_not_hold_the_listing_past_its_bound() {
    let scripts = workspace();
    let silent = scripts.path().join("silent.js");
    std::fs::write(&silent, SILENT).unwrap();
    let servers = json!({"silent": {"command": "node", "args": [silent.display().to_string()]}});
    // The hub would wait ten minutes for the server; the Inspector gives up on a request after 60 s, so
    // only the 200 ms bound of the listing lets tools/list answer.
    let setup = Setup::with_servers(&servers, "[serve]\nmcp_startup_ms = 200", "startup_timeout_ms = 600000");
    let listed = names(&setup.list(&[]));
    assert!(listed.contains("use_mcp_tool") && listed.contains("read_file"), "{listed:?}");
    assert!(!listed.iter().any(|name| name.contains("__mcp__")), "{listed:?}");
}
