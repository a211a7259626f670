//! Class 7: execute_command checks the command that runs, where it runs (its `@root:` prefix taken off first,
//! its paths resolved in that root), and the rules files `.clineignore` pulls in with `!include` are as
//! protected from the edit tools as `.clineignore` itself.

use crate::util::*;
use serde_json::json;
use std::path::Path;
use toolshed::{ResultStatus, TaskContext, TaskHandle};

const SECRET: &str = "TOPSECRET-7";

fn put(root: &Path, rel: &str, body: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
}

/// Two roots with `\w` names, as `@name:` needs: `main` (primary) and `ci`, whose `.clineignore` fences off
/// `secrets/`. `main` has a `secrets/` of its own that nothing fences off.
fn two_roots() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = workspace();
    let (main, ci) = (dir.path().join("main"), dir.path().join("ci"));
    put(&main, "secrets/x", "main-open\n");
    put(&ci, ".clineignore", "secrets/\n");
    put(&ci, "secrets/x", &format!("{SECRET}\n"));
    put(&ci, "ok.txt", "ci-ok\n");
    (dir, main, ci)
}

fn run(task: &TaskHandle, command: &str) -> toolshed::ToolResult {
    call(task, "execute_command", json!({"command": command, "requires_approval": false}))
}

#[test]
fn a_root_prefix_is_taken_off_before_the_clineignore_check() {
    let runtime = shipped().yes(true).build().unwrap();
    let (_dir, main, ci) = two_roots();
    let task = runtime.task(TaskContext::new(&main).with_root("ci", &ci));
    let absolute = ci.join("secrets/x").display().to_string();
    for command in [
        "@ci:cat secrets/x".to_owned(),
        "@ci:   cat secrets/x".to_owned(),
        "@ci:cat ./secrets/../secrets/x".to_owned(),
        "@ci:cat 'secrets/x'".to_owned(),
        "@ci:true && cat secrets/x".to_owned(),
        "@ci:echo start; head -n 1 secrets/x".to_owned(),
        "@ci:echo $(cat secrets/x)".to_owned(),
        "@ci:cd secrets && cat x".to_owned(),
        "@ci:X=1 /bin/cat secrets/x".to_owned(),
        "@ci:cat < secrets/x".to_owned(),
        format!("@ci:cat {absolute}"),
        format!("cat {absolute}"),
        "cat ../ci/secrets/x".to_owned(),
    ] {
        let result = run(&task, &command);
        assert_eq!(result.status, ResultStatus::Error, "{command}: {}", text(&result));
        assert!(text(&result).contains("is blocked by the .clineignore file settings"), "{command}: {}", text(&result));
        assert!(!text(&result).contains(SECRET), "{command}");
    }
    // The same words in the primary root read its own, unfenced file: the check ran where the command runs.
    let result = run(&task, "cat secrets/x");
    assert_eq!(result.status, ResultStatus::Success, "{}", text(&result));
    assert!(text(&result).contains("main-open"));
    let result = run(&task, "@ci:cat ok.txt");
    assert!(text(&result).contains("ci-ok"), "{}", text(&result));
    // An unknown root name is no prefix: the text runs as written (and fails), it is not checked elsewhere.
    let result = run(&task, "@nope:cat secrets/x");
    assert!(!text(&result).contains(SECRET), "{}", text(&result));
}

#[test]
fn the_permission_check_sees_the_command_without_its_prefix() {
    let mut config = toolshed::Config::default();
    config.commands.permissions = Some(r#"{"allow": ["echo *"], "deny": ["rm *"]}"#.to_owned());
    let runtime = shipped().yes(true).config(config).build().unwrap();
    let (_dir, main, ci) = two_roots();
    let task = runtime.task(TaskContext::new(&main).with_root("ci", &ci));
    let allowed = run(&task, "@ci:echo in-ci");
    assert_eq!(allowed.status, ResultStatus::Success, "{}", text(&allowed));
    assert!(text(&allowed).contains("in-ci"));
    let denied = run(&task, "@ci:rm ok.txt");
    assert_eq!(denied.status, ResultStatus::Error, "{}", text(&denied));
    assert!(text(&denied).contains("CLINE_COMMAND_PERMISSIONS"), "{}", text(&denied));
    assert!(ci.join("ok.txt").exists());
}

/// A root whose `.clineignore` includes a chain of rules files: `rules/more.txt` includes `rules/deeper.txt`,
/// which includes `rules/later.txt` (not written yet).
fn included_rules() -> tempfile::TempDir {
    let ws = workspace();
    let root = ws.path();
    put(root, ".clineignore", "secrets/\n!include rules/more.txt\n");
    put(root, "rules/more.txt", "private/\n!include rules/deeper.txt\n");
    put(root, "rules/deeper.txt", "hidden/\n!include rules/later.txt\n!include rules/more.txt\n");
    for dir in ["secrets", "private", "hidden", "later"] {
        put(root, &format!("{dir}/x"), &format!("{SECRET} {dir}\n"));
    }
    ws
}

#[test]
fn nested_includes_fence_files_off() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = included_rules();
    let task = task_in(&runtime, ws.path());
    for dir in ["secrets", "private", "hidden"] {
        let result = run(&task, &format!("cat {dir}/x"));
        assert_eq!(result.status, ResultStatus::Error, "{dir}: {}", text(&result));
        let read = call(&task, "read_file", json!({"path": format!("{dir}/x")}));
        assert_eq!(read.status, ResultStatus::Error, "{dir}: {}", text(&read));
    }
    // Rules files stay readable (as in Cline); only changing them is refused.
    let read = call(&task, "read_file", json!({"path": "rules/deeper.txt"}));
    assert_eq!(read.status, ResultStatus::Success, "{}", text(&read));
}

#[test]
fn included_rules_files_cannot_be_written_moved_or_deleted() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = included_rules();
    let root = ws.path();
    std::os::unix::fs::symlink(root.join("rules/more.txt"), root.join("alias.txt")).unwrap();
    std::fs::hard_link(root.join("rules/deeper.txt"), root.join("hard.txt")).unwrap();
    let before: Vec<(String, Vec<u8>)> = [".clineignore", "rules/more.txt", "rules/deeper.txt"]
        .iter()
        .map(|rel| ((*rel).to_owned(), std::fs::read(root.join(rel)).unwrap()))
        .collect();
    let task = task_in(&runtime, root);
    let attempts = [
        ("write_to_file", json!({"path": "rules/more.txt", "content": "\n"})),
        ("write_to_file", json!({"path": "./rules/../rules/more.txt", "content": "\n"})),
        ("write_to_file", json!({"path": root.join("rules/deeper.txt").display().to_string(), "content": "\n"})),
        ("write_to_file", json!({"path": "alias.txt", "content": "\n"})),
        ("write_to_file", json!({"path": "hard.txt", "content": "\n"})),
        // Not there yet, but included: creating it would add rules (`!secrets/x` un-fences a file).
        ("write_to_file", json!({"path": "rules/later.txt", "content": "!secrets/x\n"})),
        ("write_to_file", json!({"path": ".clineignore", "content": "\n"})),
        (
            "replace_in_file",
            json!({"path": "rules/deeper.txt", "diff": "------- SEARCH\nhidden/\n=======\nnothing/\n+++++++ REPLACE"}),
        ),
        ("apply_patch", json!({"input": "*** Begin Patch\n*** Delete File: rules/more.txt\n*** End Patch"})),
        (
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** Update File: rules/deeper.txt\n*** Move to: moved.txt\n@@\n-hidden/\n+hidden/\n*** End Patch"}),
        ),
        (
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** Update File: rules/deeper.txt\n@@\n-hidden/\n+gone/\n*** End Patch"}),
        ),
        ("apply_patch", json!({"input": "*** Begin Patch\n*** Add File: rules/later.txt\n+!hidden/x\n*** End Patch"})),
    ];
    for (tool, input) in attempts {
        let result = call(&task, tool, input.clone());
        assert_eq!(result.status, ResultStatus::Error, "{tool} {input}: {}", text(&result));
        // The edit tools say it in Cline's words, apply_patch in Codex's.
        let refused = text(&result).contains(".clineignore") || text(&result).contains("Access denied:");
        assert!(refused, "{tool} {input}: {}", text(&result));
    }
    for (rel, bytes) in before {
        assert_eq!(std::fs::read(root.join(&rel)).unwrap(), bytes, "{rel} changed");
    }
    assert!(!root.join("rules/later.txt").exists());
    assert!(!root.join("moved.txt").exists());
    // The rules still hold, and an ordinary file next to them is still writable.
    assert_eq!(run(&task, "cat hidden/x").status, ResultStatus::Error);
    let ok = call(&task, "write_to_file", json!({"path": "rules/notes.md", "content": "fine\n"}));
    assert_eq!(ok.status, ResultStatus::Success, "{}", text(&ok));
}

#[test]
fn quoting_escapes_and_globs_are_seen_as_bash_sees_them() {
    let runtime = shipped().yes(true).build().unwrap();
    let (_dir, _main, ci) = two_roots();
    let task = runtime.task(TaskContext::new(&ci));
    for command in [
        "cat 'secrets'/x",
        "cat sec\"\"rets/x",
        "cat se\\crets/x",
        "cat \"sec\"'rets'/x",
        "cat secret*/x",
        "cat secrets/?",
        "cat s[e]crets/x",
        "cat */x",
        "head -n1 ./secr*/*",
        "cat .clineign*",
        "cat ./.cline?gnore",
    ] {
        let result = run(&task, command);
        assert_eq!(result.status, ResultStatus::Error, "{command}: {}", text(&result));
        assert!(text(&result).contains("is blocked by the .clineignore file settings"), "{command}: {}", text(&result));
        assert!(!text(&result).contains(SECRET), "{command}");
    }
    // A glob that reaches only allowed files still runs.
    let result = run(&task, "cat ok.*");
    assert!(text(&result).contains("ci-ok"), "{}", text(&result));
}
