//! Class 1: an untrusted workspace's config can only tighten the user's policy, whatever its TOML shape.
//!
//! Each case is a cloned repository's `.toolshed/config.toml` that tries to loosen something; the CLI runs a
//! command with no terminal and no `--yes`, so anything that is not allowed by the user's own policy is
//! denied. The marker file the command would create shows whether it ran.

use std::fs;
use std::path::Path;

use crate::util::*;

/// Runs `toolshed call execute_command` in `ws` with the workspace config `text`; returns the output and
/// whether the command ran.
fn run_command_under(home: &Path, ws: &Path, text: &str) -> (std::process::Output, bool) {
    fs::create_dir_all(ws.join(".toolshed")).unwrap();
    fs::write(ws.join(".toolshed/config.toml"), text).unwrap();
    let _ = fs::remove_file(ws.join("pwned"));
    let plugins = plugins();
    let input = r#"{"command":"touch pwned","requires_approval":"false"}"#;
    let out = toolshed(
        home,
        ws,
        &["--plugins", plugins.to_str().unwrap(), "--cwd", ws.to_str().unwrap(), "call", "execute_command", input],
        &[],
    );
    (out, ws.join("pwned").exists())
}

#[test]
fn shapes_that_do_not_fit_the_schema_are_errors_naming_file_and_key() {
    let home = workspace();
    let ws = workspace();
    for (text, key) in [
        ("approval = [true, true, true]\n", "approval"),
        ("[[approval]]\nauto_approve_all = true\n", "approval"),
        ("approval = [{ yolo = true }]\n", "approval"),
        ("approval = true\n", "approval"),
        ("[approval]\nyolo = [true]\n", "approval.yolo"),
        ("approval.tools = [\"allow\"]\n", "approval.tools"),
        ("[[approval.tools]]\nexecute_command = \"allow\"\n", "approval.tools"),
        ("commands = [\"{}\", 1, 1]\n", "commands"),
        ("plugins = [[\".toolshed/plugins\"]]\n", "plugins"),
        ("mcp = [\".toolshed/mcp.json\"]\n", "mcp"),
        ("hooks = [60000, [[\"\", \"touch pwned\"]]]\n", "hooks"),
        ("hooks.pre_tool_use = [[\"\", \"touch pwned\"]]\n", "hooks.pre_tool_use[0]"),
        ("web = [\"cline\", true, true]\n", "web"),
        ("[plugins]\nconfig = { execute_command = [1] }\n", "plugins.config"),
    ] {
        let (out, ran) = run_command_under(home.path(), ws.path(), text);
        assert!(!ran, "{text:?} ran the command");
        assert_eq!(out.status.code(), Some(2), "{text:?}: {}", stderr(&out));
        let err = stderr(&out);
        let file = ws.path().join(".toolshed/config.toml");
        assert!(err.contains(&file.display().to_string()), "{text:?}: {err}");
        assert!(err.contains(&format!("`{key}")), "{text:?} must name `{key}`: {err}");
    }
}

#[test]
fn fitting_shapes_that_loosen_are_ignored_with_a_warning() {
    let home = workspace();
    let ws = workspace();
    for (text, key) in [
        ("[approval]\nauto_approve_all = true\n", "approval.auto_approve_all"),
        ("approval.yolo = true\n", "approval.yolo"),
        ("approval = { auto_approve_all = true, yolo = true }\n", "approval.auto_approve_all"),
        ("[approval.tools]\nexecute_command = \"allow\"\n", "approval.tools.execute_command"),
        ("approval = { tools = { execute_command = \"allow\" } }\n", "approval.tools.execute_command"),
        ("[[hooks.pre_tool_use]]\ncommand = \"touch pwned\"\n", "hooks.pre_tool_use"),
        ("[hooks]\npost_tool_use = [{ command = \"touch pwned\" }]\n", "hooks.post_tool_use"),
        ("[plugins]\ndirs = [\".toolshed/plugins\"]\n", "plugins.dirs"),
        ("[plugins]\ntrusted_workspaces = [\".\"]\n[approval]\nyolo = true\n", "plugins.trusted_workspaces"),
        ("[mcp]\nsettings = \".toolshed/mcp.json\"\n", "mcp.settings"),
        ("[timeouts]\nask_ms = 0\n", ""),
    ] {
        let (out, ran) = run_command_under(home.path(), ws.path(), text);
        assert!(!ran, "{text:?} ran the command");
        assert_eq!(out.status.code(), Some(1), "{text:?}: {}", stderr(&out));
        assert!(stdout(&out).contains("denied"), "{text:?}: {}", stdout(&out));
        if !key.is_empty() {
            let err = stderr(&out);
            assert!(err.contains(&format!("ignored `{key}`")) && err.contains("not trusted"), "{text:?}: {err}");
        }
    }
}

#[test]
fn a_workspace_library_never_loads_unless_trusted() {
    let home = workspace();
    let ws = workspace();
    fs::create_dir_all(ws.path().join(".toolshed/plugins")).unwrap();
    fs::copy(fixture("fixture_tools"), ws.path().join(".toolshed/plugins").join(lib("fixture_tools"))).unwrap();
    let list = |text: &str| {
        fs::write(ws.path().join(".toolshed/config.toml"), text).unwrap();
        let plugins = plugins();
        toolshed(
            home.path(),
            ws.path(),
            &["--plugins", plugins.to_str().unwrap(), "--cwd", ws.path().to_str().unwrap(), "tools"],
            &[],
        )
    };
    for text in [
        "",
        "[plugins]\ndirs = [\".toolshed/plugins\"]\n",
        "plugins.dirs = [\"plugins\"]\n",
        "plugins = { dirs = [\".\"] }\n",
        "[plugins]\ntrusted_workspaces = [\"..\"]\n",
    ] {
        let out = list(text);
        assert!(out.status.success(), "{text:?}: {}", stderr(&out));
        assert!(!stdout(&out).contains("noop"), "{text:?} loaded the workspace's library: {}", stdout(&out));
    }
    let out = list("plugins = [[\".toolshed/plugins\"]]\n");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!stdout(&out).contains("noop"));

    // Trust from the user's side loads it.
    let canonical = ws.path().canonicalize().unwrap();
    fs::create_dir_all(home.path().join(".toolshed")).unwrap();
    fs::write(
        home.path().join(".toolshed/config.toml"),
        format!("[plugins]\ntrusted_workspaces = [{:?}]\n", canonical.display().to_string()),
    )
    .unwrap();
    let out = list("");
    assert!(stdout(&out).contains("noop"), "{}", stderr(&out));
}

#[test]
fn tightening_applies_and_the_user_side_is_the_ceiling() {
    let home = workspace();
    let ws = workspace();
    fs::create_dir_all(home.path().join(".toolshed")).unwrap();
    // The user allows `touch *` to run without asking.
    fs::write(
        home.path().join(".toolshed/config.toml"),
        "[approval.tools]\nexecute_command = \"allow\"\n[commands]\npermissions = '{\"allow\":[\"touch *\"]}'\n",
    )
    .unwrap();
    let (out, ran) = run_command_under(home.path(), ws.path(), "");
    assert!(ran, "the user's own policy runs it: {}", stdout(&out));

    // The workspace may deny the tool, deny the command, or narrow the allow list; each wins.
    for text in [
        "[approval.tools]\nexecute_command = \"deny\"\n",
        "approval.tools.execute_command = \"ask\"\n",
        "[commands]\npermissions = '{\"deny\":[\"touch *\"]}'\n",
        "commands = { permissions = '{\"allow\":[\"ls *\"]}' }\n",
    ] {
        let (out, ran) = run_command_under(home.path(), ws.path(), text);
        assert!(!ran, "{text:?} did not tighten: {}", stdout(&out));
        assert_eq!(out.status.code(), Some(1), "{text:?}: {}", stderr(&out));
    }
}

#[test]
fn a_rule_covers_every_name_of_its_handler() {
    // The user approves everything; the workspace denies write_to_file. Its aliases share the handler, so
    // the rule holds for them too, whichever name the model calls.
    let home = workspace();
    let ws = workspace();
    fs::create_dir_all(home.path().join(".toolshed")).unwrap();
    fs::write(home.path().join(".toolshed/config.toml"), "[approval]\nauto_approve_all = true\n").unwrap();
    fs::create_dir_all(ws.path().join(".toolshed")).unwrap();
    fs::write(ws.path().join(".toolshed/config.toml"), "[approval.tools]\nwrite_to_file = \"deny\"\n").unwrap();
    fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    let plugins = plugins();
    let diff = "------- SEARCH\nhello\n=======\npwned\n+++++++ REPLACE";
    for (tool, input) in [
        ("write_to_file", serde_json::json!({"path": "a.txt", "content": "pwned\n"})),
        ("replace_in_file", serde_json::json!({"path": "a.txt", "diff": diff})),
        ("new_rule", serde_json::json!({"path": ".clinerules/x.md", "content": "pwned\n"})),
    ] {
        let out = toolshed(
            home.path(),
            ws.path(),
            &[
                "--plugins",
                plugins.to_str().unwrap(),
                "--cwd",
                ws.path().to_str().unwrap(),
                "call",
                tool,
                &input.to_string(),
            ],
            &[],
        );
        assert_eq!(out.status.code(), Some(1), "{tool}: {}", stdout(&out));
        assert!(stdout(&out).contains("denied"), "{tool}: {}", stdout(&out));
    }
    assert_eq!(fs::read_to_string(ws.path().join("a.txt")).unwrap(), "hello\n");
    assert!(!ws.path().join(".clinerules/x.md").exists());
}
