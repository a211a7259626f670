//! The edit tools through the real runtime and CLI: write_to_file with its aliases, apply_patch, streamed
//! progress, and every bad input ending in a clear error with the file untouched.

use crate::util::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use toolshed::{Mode, ResultStatus, TaskContext, UiEvent};

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

#[test]
fn one_handler_serves_three_names() {
    let runtime = shipped().yes(true).build().unwrap();
    let tools = runtime.tools();
    let replace = tools.iter().find(|t| t.name == "replace_in_file").expect("replace_in_file loaded");
    assert_eq!(replace.primary, "write_to_file");
    assert_eq!(replace.aliases, ["write_to_file", "new_rule"]);
    assert!(runtime.spec("replace_in_file", "generic").unwrap().description.starts_with("Request to replace sections"));
    assert!(runtime
        .spec("new_rule", "generic")
        .unwrap()
        .description
        .starts_with("Your task is to create a new Cline rule"));

    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let created =
        call(&task, "write_to_file", json!({"path": "src/lib.rs", "content": "pub fn one() -> u32 {\n    1\n}\n"}));
    assert_eq!(created.status, ResultStatus::Success, "{}", created.to_model_text());
    assert_eq!(created.description, "[write_to_file for 'src/lib.rs']");
    let diff = "------- SEARCH\n    1\n=======\n    2\n+++++++ REPLACE";
    let edited = call(&task, "replace_in_file", json!({"path": "src/lib.rs", "diff": diff}));
    assert_eq!(
        text(&edited),
        "The content was successfully saved to src/lib.rs.\n\nHere is the full, updated content of the file that was saved:\n\n<final_file_content path=\"src/lib.rs\">\npub fn one() -> u32 {\n    2\n}\n\n</final_file_content>\n\nIMPORTANT: For any future changes to this file, use the final_file_content shown above as your reference. This content reflects the current state of the file, including any auto-formatting (e.g., if you used single quotes but the formatter converted them to double quotes). Always base your SEARCH/REPLACE operations on this final version to ensure accuracy.\n\n"
    );
    let rule = call(&task, "new_rule", json!({"path": ".clinerules/style.md", "content": "## Brief overview\n"}));
    assert_eq!(rule.status, ResultStatus::Success, "{}", rule.to_model_text());
    let stray = call(&task, "new_rule", json!({"path": "style.md", "content": "x"}));
    assert!(text(&stray).contains("new_rule only creates Cline rule files inside the .clinerules/ directory"));
    assert!(!ws.path().join("style.md").exists());
}

#[test]
fn a_read_file_after_a_write_is_not_a_duplicate() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "one\n").unwrap();
    let task = task_in(&runtime, ws.path());
    assert_eq!(text(&call(&task, "read_file", json!({"path": "a.txt"}))), "1 | one\n\n(File has 1 lines total.)");
    call(&task, "write_to_file", json!({"path": "a.txt", "content": "two\n"}));
    assert_eq!(text(&call(&task, "read_file", json!({"path": "a.txt"}))), "1 | two\n\n(File has 1 lines total.)");
}

#[test]
fn cli_call_replace_in_file_prints_clines_success_text() {
    let home = workspace();
    let ws = workspace();
    std::fs::write(ws.path().join("notes.md"), "# Notes\n\ntodo: write tests\n").unwrap();
    let plugins = plugins();
    let input = json!({"path": "notes.md", "diff": "------- SEARCH\ntodo: write tests\n=======\ndone: tests written\n+++++++ REPLACE"});
    let out = toolshed(
        home.path(),
        home.path(),
        &[
            "--plugins",
            plugins.to_str().unwrap(),
            "--cwd",
            ws.path().to_str().unwrap(),
            "call",
            "replace_in_file",
            "--yes",
            &input.to_string(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).starts_with(
        "[replace_in_file for 'notes.md'] Result:\nThe content was successfully saved to notes.md.\n\nHere is the full, updated content of the file that was saved:\n\n<final_file_content path=\"notes.md\">\n# Notes\n\ndone: tests written\n\n</final_file_content>\n"
    ), "{}", stdout(&out));
    assert_eq!(std::fs::read_to_string(ws.path().join("notes.md")).unwrap(), "# Notes\n\ndone: tests written\n");
}

#[test]
fn bad_input_is_a_clear_error_and_the_file_is_untouched() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    let root = ws.path();
    let original = b"alpha\r\nbeta\r\n";
    std::fs::write(root.join("a.txt"), original).unwrap();
    std::fs::write(root.join(".clineignore"), "private/\n").unwrap();
    std::fs::create_dir(root.join("private")).unwrap();
    std::fs::write(root.join("private/key.txt"), "secret\n").unwrap();
    std::fs::write(root.join("ro.txt"), "fixed\n").unwrap();
    let mut permissions = std::fs::metadata(root.join("ro.txt")).unwrap().permissions();
    permissions.set_readonly(true);
    std::fs::set_permissions(root.join("ro.txt"), permissions).unwrap();
    std::fs::create_dir(root.join("folder")).unwrap();
    let outside = workspace();
    std::fs::write(outside.path().join("victim.txt"), "keep\n").unwrap();
    let task = task_in(&runtime, root);
    let block = |search: &str| format!("------- SEARCH\n{search}\n=======\nchanged\n+++++++ REPLACE");
    let victim = outside.path().join("victim.txt");
    let cases: Vec<(Value, &str, PathBuf)> = vec![
        (json!({"path": "a.txt"}), "Failed to edit 'a.txt': The 'diff' parameter was empty.", root.join("a.txt")),
        (
            json!({"path": "a.txt", "diff": "------- SEARCH\nalpha\n+++++++ REPLACE"}),
            "...is malformatted.",
            root.join("a.txt"),
        ),
        (
            json!({"path": "a.txt", "diff": "-------SEARCH\nalpha\n=======\nx\n+++++++ REPLACE"}),
            "Empty SEARCH block detected with non-empty file.",
            root.join("a.txt"),
        ),
        (
            json!({"path": "a.txt", "diff": block("gamma")}),
            "The SEARCH block:\ngamma\n...does not match anything in the file.",
            root.join("a.txt"),
        ),
        (
            json!({"path": victim.to_str().unwrap(), "diff": block("keep")}),
            "which is outside the workspace",
            victim.clone(),
        ),
        (json!({"path": "../victim.txt", "diff": block("keep")}), "which is outside the workspace", victim),
        (
            json!({"path": "private/key.txt", "diff": block("secret")}),
            "Access to private/key.txt is blocked by the .clineignore file settings.",
            root.join("private/key.txt"),
        ),
        (json!({"path": "ro.txt", "diff": block("fixed")}), "is read-only", root.join("ro.txt")),
        (json!({"path": "folder", "diff": block("x")}), "is a directory, not a file.", root.join("folder")),
    ];
    for (input, expect, file) in cases {
        let file = file.as_path();
        let before = if file.is_file() { bytes(file) } else { Vec::new() };
        let result = call(&task, "replace_in_file", input.clone());
        let shown = result.to_model_text();
        assert_eq!(result.status, ResultStatus::Error, "{input}: {shown}");
        assert!(shown.contains("The tool execution failed with the following error:"), "{input}: {shown}");
        assert!(shown.contains(expect), "{input}: {shown}");
        if file.is_file() {
            assert_eq!(bytes(file), before, "{input} changed {}", file.display());
        }
    }
    // The diff error carries the original content, and the file keeps its CRLF bytes.
    let result = call(&task, "replace_in_file", json!({"path": "a.txt", "diff": block("gamma")}));
    assert!(
        text(&result).contains("<file_content path=\"a.txt\">\nalpha\r\nbeta\r\n\n</file_content>"),
        "{}",
        text(&result)
    );
    assert_eq!(bytes(&root.join("a.txt")), original);
    let names: Vec<_> =
        std::fs::read_dir(root).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert!(!names.iter().any(|n| n.ends_with(".toolshed-tmp")), "{names:?}");
}

#[test]
fn plan_mode_refuses_every_edit_tool() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    let mut context = TaskContext::new(ws.path());
    context.mode = Mode::Plan;
    let task = runtime.task(context);
    for (tool, input) in [
        ("write_to_file", json!({"path": "a", "content": "x"})),
        ("replace_in_file", json!({"path": "a", "diff": "x"})),
        ("new_rule", json!({"path": ".clinerules/a.md", "content": "x"})),
        ("apply_patch", json!({"input": "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"})),
    ] {
        let result = call(&task, tool, input);
        assert!(text(&result).contains(&format!("Tool '{tool}' is not available in PLAN MODE.")), "{tool}");
    }
    assert!(std::fs::read_dir(ws.path()).unwrap().next().is_none());
}

/// Streams `diff` through `TaskHandle::partial` in pieces ending at `cuts`, then completes the call.
fn streamed(diff: &str, cuts: &[usize]) -> (String, Vec<(String, String, bool)>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let runtime = shipped()
        .yes(true)
        .on_event(move |event: &UiEvent| {
            sink.lock().unwrap().push((event.kind.clone(), event.text.clone(), event.partial))
        })
        .build()
        .unwrap();
    let ws = workspace();
    std::fs::write(ws.path().join("s.rs"), "fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n").unwrap();
    let task = task_in(&runtime, ws.path());
    for &cut in cuts {
        block_on(task.partial("", "replace_in_file", json!({"path": "s.rs", "diff": &diff[..cut]})));
    }
    let result = call(&task, "replace_in_file", json!({"path": "s.rs", "diff": diff}));
    assert_eq!(result.status, ResultStatus::Success, "{}", result.to_model_text());
    let content = std::fs::read_to_string(ws.path().join("s.rs")).unwrap();
    drop(runtime);
    let events = events.lock().unwrap().clone();
    (content, events)
}

#[test]
fn streamed_diffs_give_the_same_file_and_events_for_any_split() {
    let diff = "------- SEARCH\n    1\n=======\n    10\n+++++++ REPLACE\n------- SEARCH\nfn b() {\n    2\n=======\nfn b() {\n    20\n+++++++ REPLACE";
    let whole = streamed(diff, &[]);
    assert_eq!(whole.0, "fn a() {\n    10\n}\n\nfn b() {\n    20\n}\n");
    assert_eq!(whole.1.len(), 3, "two blocks and the complete card: {:?}", whole.1);
    let mut seed = 7u64;
    for _ in 0..6 {
        let mut cuts: Vec<usize> = (0..8)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                (seed >> 33) as usize % (diff.len() + 1)
            })
            .collect();
        cuts.sort_unstable();
        assert_eq!(streamed(diff, &cuts), whole, "cuts {cuts:?}");
    }
}

#[test]
fn apply_patch_applies_all_files_or_none() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(ws.path().join("b.txt"), "alpha\n").unwrap();
    let task = task_in(&runtime, ws.path());
    let failing = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+1\n*** Update File: b.txt\n@@\n-omega\n+OMEGA\n*** End Patch";
    let result = call(&task, "apply_patch", json!({"input": failing}));
    assert_eq!(result.description, "[apply_patch for patch application]");
    assert!(text(&result).contains("b.txt: chunk 1 of 1 did not match"), "{}", text(&result));
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "one\ntwo\n");
    let good = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+1\n*** Add File: c.txt\n+new\n*** End Patch";
    let result = call(&task, "apply_patch", json!({"input": good}));
    assert!(text(&result).starts_with("Successfully applied patch to the following files:"), "{}", text(&result));
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "1\ntwo\n");
    assert_eq!(std::fs::read_to_string(ws.path().join("c.txt")).unwrap(), "new\n");
}

#[test]
fn writes_ask_for_write_approval_with_the_absolute_path() {
    use std::sync::mpsc;
    use toolshed::{Answer, ApprovalPrompt, Approver, BoxFuture, Reply};
    struct Recorder(Mutex<mpsc::Sender<ApprovalPrompt>>);
    impl Approver for Recorder {
        fn ask(&self, prompt: ApprovalPrompt) -> BoxFuture<Reply> {
            let _ = self.0.lock().unwrap().send(prompt);
            Box::pin(async { Reply { answer: Answer::Deny, feedback: None } })
        }
    }
    let (tx, rx) = mpsc::channel();
    let runtime = shipped().approver(Recorder(Mutex::new(tx))).build().unwrap();
    let ws = workspace();
    let task = runtime.task(TaskContext::new(ws.path()));
    let result = call(&task, "write_to_file", json!({"path": "x/y.txt", "content": "z"}));
    assert_eq!(result.status, ResultStatus::Denied);
    let prompt = rx.recv().unwrap();
    assert_eq!(prompt.kind, "write");
    assert_eq!(prompt.message, "Cline wants to create x/y.txt");
    assert_eq!(prompt.paths, [ws.path().join("x/y.txt").to_string_lossy().into_owned()]);
    assert!(!ws.path().join("x").exists());
}

#[test]
fn empty_content_writes_an_empty_file_and_an_empty_diff_gets_clines_message() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let written = call(&task, "write_to_file", json!({"path": "empty.txt", "content": ""}));
    assert_eq!(written.status, toolshed::ResultStatus::Success, "{}", text(&written));
    assert_eq!(bytes(&ws.path().join("empty.txt")), b"");
    std::fs::write(ws.path().join("keep.txt"), "x\n").unwrap();
    let empty_diff = call(&task, "replace_in_file", json!({"path": "keep.txt", "diff": ""}));
    assert_eq!(empty_diff.status, toolshed::ResultStatus::Error);
    assert!(!text(&empty_diff).contains("Missing value for required parameter"), "{}", text(&empty_diff));
    assert_eq!(bytes(&ws.path().join("keep.txt")), b"x\n");
    // Absent is still missing, with Cline's own guidance.
    let absent = call(&task, "write_to_file", json!({"path": "x.txt"}));
    assert!(
        text(&absent).contains("Failed to write to 'x.txt': The 'content' parameter was empty."),
        "{}",
        text(&absent)
    );
}
