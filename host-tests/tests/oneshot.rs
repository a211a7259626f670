//! One-shot calls: `toolshed call TOOL` opens only the library that declares TOOL, found through the
//! declaration index, and still answers right when the index is stale, forged or garbage, when the call
//! reaches another tool, and for alias names. Which libraries a process opened is read from `strace -f -e
//! trace=openat` (installed by `cargo xtask test`); nothing here times anything.

use crate::util::*;
use serde_json::json;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use toolshed::{Runtime, RuntimeBuilder, TaskContext, ToolUse};

/// A private user: HOME and the cache directory the index lives in.
struct User {
    home: tempfile::TempDir,
}

impl User {
    fn new() -> Self {
        Self { home: workspace() }
    }

    fn cache(&self) -> PathBuf {
        self.home.path().join("cache")
    }

    fn index(&self) -> PathBuf {
        self.cache().join("toolshed/index.json")
    }

    /// Runs `toolshed --plugins DIR --cwd WS call ARGS…` under strace; its output and the names of the
    /// libraries of `plugins` it opened, in order.
    fn call(&self, plugins: &Path, ws: &Path, args: &[&str]) -> (Output, Vec<String>) {
        let log = self.home.path().join("strace.log");
        let output = Command::new("strace")
            .args(["-f", "-qq", "-e", "trace=openat", "-o"])
            .arg(&log)
            .arg(toolshed_bin())
            .arg("--plugins")
            .arg(plugins)
            .arg("--cwd")
            .arg(ws)
            .arg("call")
            .args(args)
            .env("HOME", self.home.path())
            .env("XDG_CACHE_HOME", self.cache())
            .env_remove("TOOLSHED_PLUGINS")
            .output()
            .expect("strace is installed by `cargo xtask test` (apt-get install strace)");
        let trace = std::fs::read_to_string(&log).unwrap();
        let prefix = format!("\"{}/", plugins.display());
        let opened = trace
            .lines()
            .filter(|line| line.contains("openat(") && !line.contains("O_DIRECTORY"))
            .filter_map(|line| line.split_once(&prefix).and_then(|(_, rest)| rest.split_once('"')))
            .map(|(name, _)| name.to_owned())
            .filter(|name| name.ends_with(std::env::consts::DLL_SUFFIX))
            .collect();
        (output, opened)
    }
}

/// A plugin directory of its own with copies of these shipped plugins and fixtures.
fn plugin_dir(shipped: &[&str], fixtures: &[&str]) -> tempfile::TempDir {
    let dir = workspace();
    for name in shipped {
        std::fs::copy(plugins().join(lib(name)), dir.path().join(lib(name))).unwrap();
    }
    for name in fixtures {
        std::fs::copy(fixture(name), dir.path().join(lib(name))).unwrap();
    }
    dir
}

/// A one-shot runtime for `tool` over the shipped plugins, its index at `index`, started twice: the first start
/// (no index yet) loads everything and writes the index, the second is the one returned.
fn one_shot(index: &Path, tool: &str, setup: impl Fn(RuntimeBuilder) -> RuntimeBuilder) -> Runtime {
    let build = || {
        setup(Runtime::builder().plugin_dir(plugins()).declaration_index(Some(index.to_owned())))
            .only_tools([tool])
            .build()
            .unwrap()
    };
    drop(build());
    build()
}

fn ok(output: &Output) -> String {
    assert_eq!(output.status.code(), Some(0), "stdout: {}\nstderr: {}", stdout(output), stderr(output));
    stdout(output)
}

#[test]
fn call_read_file_opens_only_read_files_library_once_the_index_knows_it() {
    let user = User::new();
    let ws = workspace();
    std::fs::write(ws.path().join("notes.txt"), "one\ntwo\n").unwrap();
    let shipped = plugins();
    let shipped_count = std::fs::read_dir(&shipped).unwrap().filter(|e| is_lib(&e.as_ref().unwrap().path())).count();
    let input = r#"{"path":"notes.txt"}"#;

    // No index yet: every library is opened, and the index written from what they declared.
    let (first, opened) = user.call(&shipped, ws.path(), &["read_file", input]);
    assert_eq!(ok(&first), "[read_file for 'notes.txt'] Result:\n1 | one\n2 | two\n\n(File has 2 lines total.)\n");
    assert_eq!(opened.len(), shipped_count, "{opened:?}");
    assert!(user.index().is_file());

    let (second, opened) = user.call(&shipped, ws.path(), &["read_file", input]);
    assert_eq!(ok(&second), ok(&first));
    assert_eq!(opened, vec![lib("read_file")]);
}

#[test]
fn an_alias_opens_the_library_that_declares_it() {
    let user = User::new();
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    let dir = plugin_dir(&["read_file", "write_to_file", "execute_command"], &[]);
    user.call(dir.path(), ws.path(), &["read_file", r#"{"path":"a.txt"}"#]);

    let diff = "------- SEARCH\nhello\n=======\nbye\n+++++++ REPLACE";
    let input = json!({"path": "a.txt", "diff": diff}).to_string();
    let (out, opened) = user.call(dir.path(), ws.path(), &["--yes", "replace_in_file", &input]);
    assert!(ok(&out).starts_with("[replace_in_file for 'a.txt'] Result:\nThe content was successfully saved to a.txt."));
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "bye\n");
    assert_eq!(opened, vec![lib("write_to_file")]);
}

#[test]
fn attempt_completion_runs_its_command_through_execute_commands_library_loaded_on_demand() {
    let user = User::new();
    let ws = workspace();
    let dir = plugin_dir(&["read_file", "attempt_completion", "execute_command", "write_to_file"], &[]);
    user.call(dir.path(), ws.path(), &["read_file", r#"{"path":"."}"#]);

    let input = json!({"result": "Done.", "command": "touch demo-ran"}).to_string();
    let (out, opened) = user.call(dir.path(), ws.path(), &["--yes", "attempt_completion", &input]);
    assert!(ok(&out).starts_with("[attempt_completion] Result:"), "{}", stdout(&out));
    assert!(ws.path().join("demo-ran").is_file(), "the demo command ran");
    assert_eq!(opened, vec![lib("attempt_completion"), lib("execute_command")]);
}

#[test]
fn a_library_replaced_by_another_build_is_detected_and_the_index_rewritten() {
    let user = User::new();
    let ws = workspace();
    let dir = plugin_dir(&["read_file"], &["fixture_reload"]);
    let file = dir.path().join(lib("fixture_reload"));
    let probe = |user: &User| user.call(dir.path(), ws.path(), &["reload_probe", "{}"]);
    assert_eq!(ok(&probe(&user).0), "[reload_probe] Result:\nvariant A\n");
    let (out, opened) = probe(&user);
    assert_eq!((ok(&out).as_str(), opened), ("[reload_probe] Result:\nvariant A\n", vec![lib("fixture_reload")]));

    // Another build under the same name, written in place (same inode), its modification time put back.
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    std::fs::write(&file, std::fs::read(fixtures().join("variants").join(lib("fixture_reload"))).unwrap()).unwrap();
    std::fs::File::options().write(true).open(&file).unwrap().set_modified(mtime).unwrap();
    let (out, opened) = probe(&user);
    assert_eq!(ok(&out), "[reload_probe] Result:\nvariant B\n");
    assert_eq!(opened.len(), 2, "the stale entry missed, so everything was loaded: {opened:?}");

    // The index was rewritten: one library again, the new build.
    let (out, opened) = probe(&user);
    assert_eq!((ok(&out).as_str(), opened), ("[reload_probe] Result:\nvariant B\n", vec![lib("fixture_reload")]));
}

#[test]
fn an_index_that_vouches_for_other_bytes_is_caught_by_the_hash_of_what_was_loaded() {
    let user = User::new();
    let ws = workspace();
    let dir = plugin_dir(&["read_file"], &["fixture_reload"]);
    let file = dir.path().join(lib("fixture_reload"));
    user.call(dir.path(), ws.path(), &["read_file", r#"{"path":"."}"#]);

    // Variant B in place, and the index forged to give the new file's stamp the old content hash.
    std::fs::write(&file, std::fs::read(fixtures().join("variants").join(lib("fixture_reload"))).unwrap()).unwrap();
    let meta = std::fs::metadata(&file).unwrap();
    let mut index: serde_json::Value = serde_json::from_slice(&std::fs::read(user.index()).unwrap()).unwrap();
    let entry = index["files"].as_array_mut().unwrap().iter_mut().find(|e| e["path"] == json!(file)).unwrap();
    entry["dev"] = json!(meta.dev());
    entry["ino"] = json!(meta.ino());
    entry["size"] = json!(meta.size());
    entry["mtime_ns"] = json!(meta.mtime() * 1_000_000_000 + meta.mtime_nsec());
    entry["ctime_ns"] = json!(meta.ctime() * 1_000_000_000 + meta.ctime_nsec());
    let forged_hash = entry["hash"].clone();
    std::fs::write(user.index(), serde_json::to_vec(&index).unwrap()).unwrap();

    let (out, opened) = user.call(dir.path(), ws.path(), &["reload_probe", "{}"]);
    assert_eq!(ok(&out), "[reload_probe] Result:\nvariant B\n");
    assert_eq!(opened, vec![lib("fixture_reload"), lib("read_file")], "the fixture first, then everything else");
    let index: serde_json::Value = serde_json::from_slice(&std::fs::read(user.index()).unwrap()).unwrap();
    let entry = index["files"].as_array().unwrap().iter().find(|e| e["path"] == json!(file)).unwrap();
    assert_ne!(entry["hash"], forged_hash, "the index now holds what was loaded");

    // An index claiming read_file is the fixture's: the fixture is opened, does not declare it, and the
    // full load answers.
    let mut index = index.clone();
    let fixture_hash = entry["hash"].clone();
    let libraries = index["libraries"].as_object_mut().unwrap();
    libraries[fixture_hash.as_str().unwrap()] = json!([["reload_probe"], ["read_file"]]);
    let read_file_hash = index["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"].as_str().unwrap().ends_with(&lib("read_file")))
        .unwrap()["hash"]
        .clone();
    index["libraries"][read_file_hash.as_str().unwrap()] = json!([]);
    std::fs::write(user.index(), serde_json::to_vec(&index).unwrap()).unwrap();
    std::fs::write(ws.path().join("n.txt"), "x\n").unwrap();
    let (out, opened) = user.call(dir.path(), ws.path(), &["read_file", r#"{"path":"n.txt"}"#]);
    assert_eq!(ok(&out), "[read_file for 'n.txt'] Result:\n1 | x\n\n(File has 1 lines total.)\n");
    assert_eq!(opened, vec![lib("fixture_reload"), lib("read_file")]);
}

#[test]
fn a_garbage_or_foreign_index_is_ignored_and_rewritten() {
    let user = User::new();
    let ws = workspace();
    std::fs::write(ws.path().join("n.txt"), "x\n").unwrap();
    let dir = plugin_dir(&["read_file", "list_files"], &[]);
    let read = |user: &User| user.call(dir.path(), ws.path(), &["read_file", r#"{"path":"n.txt"}"#]);
    let expected = "[read_file for 'n.txt'] Result:\n1 | x\n\n(File has 1 lines total.)\n";
    std::fs::create_dir_all(user.index().parent().unwrap()).unwrap();
    for garbage in [&b"{\"format\":1,\"libraries\":{\"zz\""[..], b"\x00\xff not json", b"[]", &vec![b' '; 5 << 20]] {
        std::fs::write(user.index(), garbage).unwrap();
        let (out, opened) = read(&user);
        assert_eq!(ok(&out), expected);
        assert_eq!(opened.len(), 2, "ignored, so everything was loaded: {opened:?}");
        let rewritten: serde_json::Value = serde_json::from_slice(&std::fs::read(user.index()).unwrap()).unwrap();
        assert_eq!(rewritten["format"], 1);
        let (out, opened) = read(&user);
        assert_eq!((ok(&out).as_str(), opened), (expected, vec![lib("read_file")]));
    }
    // A good index anyone may write is not trusted.
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(user.index(), std::fs::Permissions::from_mode(0o666)).unwrap();
    let (out, opened) = read(&user);
    assert_eq!((ok(&out).as_str(), opened.len()), (expected, 2));
    let mode = std::fs::metadata(user.index()).unwrap().mode();
    assert_eq!(mode & 0o077, 0, "replaced by a private one: {mode:o}");
}

#[test]
fn an_embedder_one_shot_runtime_loads_other_tools_when_its_calls_reach_them() {
    let cache = workspace();
    let ws = workspace();
    std::fs::write(ws.path().join("n.txt"), "needle\n").unwrap();
    let index = cache.path().join("index.json");
    let runtime = one_shot(&index, "read_file", |builder| builder);
    let names: Vec<String> = runtime.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, vec!["read_file"]);
    let task = runtime.task(TaskContext::new(ws.path()));
    let found = call(&task, "search_files", json!({"path": ".", "regex": "needle"}));
    assert!(text(&found).starts_with("Found 1 result."), "{}", text(&found));
    let names: Vec<String> = runtime.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, vec!["read_file", "search_files"]);
    // An unknown name loads every library first, so its error names every tool.
    let unknown = block_on(task.execute(ToolUse::new("u", "no_such_tool", json!({}))));
    assert!(unknown.to_model_text().contains("write_to_file"), "{}", unknown.to_model_text());
    assert!(runtime.tools().len() > 20);
}

fn is_lib(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == std::env::consts::DLL_EXTENSION)
}

#[test]
fn a_native_mcp_name_loads_use_mcp_tool_on_demand() {
    let cache = workspace();
    let ws = workspace();
    let settings = ws.path().join("mcp.json");
    let entry = crate::mcp::node_peers().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let servers = json!({"mcpServers": {"everything": {"command": "node", "args": [entry, "stdio"]}}});
    std::fs::write(&settings, servers.to_string()).unwrap();
    let mut config = toolshed::Config::default();
    config.mcp.settings = Some(settings);
    let index = cache.path().join("index.json");
    let runtime = one_shot(&index, "read_file", |builder| builder.config(config.clone()).yes(true));
    block_on(runtime.mcp_settled());
    assert_eq!(runtime.tools().len(), 1);
    let task = runtime.task(TaskContext::new(ws.path()));
    let native = block_on(task.execute(ToolUse::new("n1", "everything__mcp__get-sum", json!({"a": 20, "b": 22}))));
    assert_eq!(text(&native), "The sum of 20 and 22 is 42.");
    let names: Vec<String> = runtime.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, vec!["read_file", "use_mcp_tool"]);
}

#[test]
fn use_subagents_in_a_one_shot_runtime_loads_the_tools_its_runs_use() {
    let (_server, addr) = crate::subagents::Server::start();
    let cache = workspace();
    let index = cache.path().join("index.json");
    let runtime = one_shot(&index, "use_subagents", |builder| {
        let driver = toolshed::OpenAiDriver::new(format!("http://{addr}/v1"), "scripted-model")
            .unwrap()
            .api_key(Some("sk-test".to_owned()))
            .context_window(200_000);
        builder.config(crate::subagents::config("")).agent_driver(driver)
    });
    assert_eq!(runtime.tools().len(), 1);
    let dir = crate::subagents::workspace_with_notes();
    let task = runtime.task(TaskContext::new(dir.path()));
    let result = call(&task, "use_subagents", json!({"prompt_1": "read-search find the needle"}));
    assert!(
        text(&result).ends_with("[1] COMPLETED - read-search find the needle\nRelevant file paths\nnotes.txt"),
        "{}",
        text(&result)
    );
    let names: Vec<String> = runtime.tools().into_iter().map(|t| t.name).collect();
    for name in ["read_file", "search_files", "list_files", "execute_command", "attempt_completion"] {
        assert!(names.iter().any(|n| n == name), "{name} not loaded: {names:?}");
    }
}
