//! Breaks found by red-teaming issue 24's install path, one-shot index and loader, and MCP client, each kept as
//! the test that failed.
//!
//! `toolshed plugins install|remove` named their temporary files after the library (`.NAME.partial-PID`), so a
//! library whose name is near the file-name limit could not be installed, and one placed by hand could not be
//! removed ("File name too long" about a file the user never named). The loader's shadow base in the shared
//! temporary directory (`toolshed-shadow-$USER`, a name anyone can guess) was used whoever owned it, so another
//! user who made it first could swap a checked copy for their own library before it was mapped.
//!
//! A server that sent `notifications/tools/list_changed` over and over without changing its list moved the
//! hub's generation at every re-listing, and `serve` told each of its clients to list its tools again each time.
//!
//! A relative `HOME` (`HOME=.`) resolved in the current directory: in a workspace, its `.toolshed/plugins` loaded
//! as the user's plugins and its `.toolshed/config.toml` was read as the user's config, untrusted as it was.
//!
//! After `cargo xtask install --prefix P`, `toolshed plugins list` said "no plugins" and `remove` "installed: none"
//! while the binary loaded the shipped set from `P/lib/toolshed/plugins`: they now name that directory.

use crate::util::*;
use std::os::unix::fs::PermissionsExt as _;

#[test]
fn a_library_named_near_the_file_name_limit_installs_and_is_removed() {
    let home = workspace();
    let source = workspace();
    // 250 bytes with the extension: the limit is 255, a temporary name built from it is over.
    let long = format!("lib{}.so", "a".repeat(250 - "lib.so".len()));
    std::fs::copy(plugins().join(lib("read_file")), source.path().join(&long)).unwrap();
    let dir = home.path().join(".toolshed/plugins");
    let run = |args: &[&str]| toolshed(home.path(), home.path(), args, &[]);
    let installed = run(&["plugins", "install", source.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&installed.stderr);
    assert!(installed.status.success(), "{stderr}");
    let names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, std::slice::from_ref(&long), "the library, whole, and no temporary file");
    let removed = run(&["plugins", "remove", &long]);
    assert!(removed.status.success(), "{}", String::from_utf8_lossy(&removed.stderr));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

#[test]
fn a_shadow_base_someone_else_can_write_is_not_where_libraries_are_mapped_from() {
    let home = workspace();
    let tmp = workspace();
    let user = std::env::var("USER").unwrap_or_else(|_| "user".to_owned());
    // What another user would leave: the guessable base, open to all (the sticky bit would not help: they own it).
    let open = tmp.path().join(format!("toolshed-shadow-{user}"));
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let file = home.path().join("note.txt");
    std::fs::write(&file, "shadowed\n").unwrap();
    let plugins = plugins();
    let output = toolshed(
        home.path(),
        home.path(),
        &["--plugins", plugins.to_str().unwrap(), "call", "read_file", r#"{"path": "note.txt"}"#],
        &[("TMPDIR", tmp.path().to_str().unwrap())],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("shadowed"));
    assert!(stderr.contains("writable by others"), "the user is told why: {stderr}");
    assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0, "nothing was copied into the open base");
    let private = home.path().join(".cache/toolshed/shadow");
    let mode = std::fs::metadata(&private).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the shadow copies went to the user's private cache: {mode:o}");
}

/// A server that says its tools changed when they did not: `chatter` sends `notifications/tools/list_changed`
/// fifty times over the same list; `listed` answers how many `tools/list` it has answered; `grow` really adds
/// a tool, and says so.
const CHATTY: &str = r#"
let tools = [
  { name: 'chatter', description: 'Says the list changed.', inputSchema: { type: 'object' } },
  { name: 'listed', description: 'Counts listings.', inputSchema: { type: 'object' } },
  { name: 'grow', description: 'Adds a tool.', inputSchema: { type: 'object' } },
];
let lists = 0;
const rl = require('readline').createInterface({ input: process.stdin });
const write = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
const text = (id, text) => write({ id, result: { content: [{ type: 'text', text }] } });
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === 'initialize') {
    write({ id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'chatty', version: '1.0.0' } } });
  } else if (m.method === 'tools/list') {
    lists += 1;
    write({ id: m.id, result: { tools } });
  } else if (m.method === 'tools/call' && m.params.name === 'chatter') {
    text(m.id, 'chattered');
    for (let i = 0; i < 50; i++) write({ method: 'notifications/tools/list_changed' });
  } else if (m.method === 'tools/call' && m.params.name === 'listed') {
    text(m.id, String(lists));
  } else if (m.method === 'tools/call' && m.params.name === 'grow') {
    tools = tools.concat([{ name: 'grown', description: 'Grown.', inputSchema: { type: 'object' } }]);
    text(m.id, 'grew');
    write({ method: 'notifications/tools/list_changed' });
  } else {
    write({ id: m.id, error: { code: -32601, message: 'Method not found' } });
  }
});
"#;

#[test]
fn list_changed_over_an_unchanged_list_is_not_a_change() {
    use serde_json::json;
    let ws = workspace();
    let script = ws.path().join("chatty.js");
    std::fs::write(&script, CHATTY).unwrap();
    let settings = ws.path().join("mcp.json");
    let servers = json!({"mcpServers": {"chatty": {"command": "node", "args": [script.display().to_string()]}}});
    std::fs::write(&settings, servers.to_string()).unwrap();
    let mut config = toolshed::Config::default();
    config.mcp.settings = Some(settings);
    let runtime = shipped().config(config).yes(true).build().unwrap();
    block_on(runtime.mcp_settled());
    let task = task_in(&runtime, ws.path());
    let use_tool = |tool: &str| {
        text(&call(&task, "use_mcp_tool", json!({"server_name": "chatty", "tool_name": tool, "arguments": "{}"})))
    };
    let tools = || -> usize {
        let status = runtime.mcp_servers().unwrap();
        status.servers.into_iter().find(|s| s.name == "chatty").map_or(0, |s| s.tools.len())
    };
    let mut changes = runtime.mcp_changes();
    let start = *changes.borrow_and_update();
    assert_eq!(use_tool("listed"), "1");
    assert_eq!(use_tool("chatter"), "chattered");
    // The flood is followed (at least one listing more), one generous bound, no timing asserted.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while use_tool("listed") == "1" {
        assert!(std::time::Instant::now() < deadline, "the server's list_changed was never followed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // A real change after it: the follower lands it after the flood's listings, so by the time the new tool
    // is there every listing of the flood has landed too.
    assert_eq!(use_tool("grow"), "grew");
    block_on(async {
        let wait = async {
            while tools() != 4 {
                changes.changed().await.expect("the hub is running");
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(60), wait).await.expect("the change arrives");
    });
    let end = *changes.borrow();
    assert_eq!(end, start + 1, "only the real change moved the generation ({start} -> {end})");
}

#[test]
fn a_relative_home_does_not_make_the_workspace_the_users_home() {
    // HOME=. in a workspace: its `.toolshed/plugins` and `.toolshed/config.toml` would be read as the user's,
    // the config trusting the workspace and the plugins loading without that trust being the user's.
    let ws = workspace();
    let own = ws.path().join(".toolshed/plugins");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::copy(plugins().join(lib("read_file")), own.join(lib("read_file"))).unwrap();
    let trusted = format!("[plugins]\ntrusted_workspaces = [{:?}]\n", ws.path().display().to_string());
    std::fs::write(ws.path().join(".toolshed/config.toml"), trusted).unwrap();
    let output = toolshed(ws.path(), ws.path(), &["tools"], &[("HOME", ".")]);
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(!stdout.contains("read_file"), "the workspace's library loaded: {stdout}\n{stderr}");
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("not trusted") && stderr.contains("no plugins loaded"), "{stderr}");
}

#[test]
fn plugins_list_and_remove_point_at_the_prefix_plugins_the_binary_loads() {
    // What `cargo xtask install --prefix P` lays out (the binary copied: it finds `P/lib` from its real path).
    let home = workspace();
    let prefix = workspace();
    let (bin, lib_dir) = (prefix.path().join("bin"), prefix.path().join("lib/toolshed/plugins"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&lib_dir).unwrap();
    std::fs::copy(toolshed_bin(), bin.join("toolshed")).unwrap();
    std::fs::copy(plugins().join(lib("read_file")), lib_dir.join(lib("read_file"))).unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(bin.join("toolshed"))
            .args(args)
            .current_dir(home.path())
            .env("HOME", home.path())
            .env_remove("TOOLSHED_PLUGINS")
            .env_remove("XDG_CACHE_HOME")
            .output()
            .unwrap()
    };
    let tools = run(&["tools"]);
    assert!(String::from_utf8_lossy(&tools.stdout).contains("read_file"), "the prefix's plugin loads");
    let shown = lib_dir.display().to_string();
    for args in [&["plugins", "list"][..], &["plugins", "remove", "read_file"]] {
        let output = run(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(&format!("pass --plugins {shown} to list or remove them")), "{args:?}: {stderr}");
    }
    assert!(lib_dir.join(lib("read_file")).is_file(), "nothing was removed from the prefix");
}
