//! `cargo xtask demo`: a scripted agent session over the shipped plugins on a scratch copy of this repository,
//! printing every call and result and checking each one. It fails when a loaded tool goes unexercised.

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use toolshed::{
    Answer, ApprovalPrompt, Approver, BoxFuture, Reply, ResultStatus, Runtime, TaskContext, ToolResult, ToolUse,
};

/// Plays the user: approves every ask and says so.
struct ScriptedUser;

impl Approver for ScriptedUser {
    fn ask(&self, prompt: ApprovalPrompt) -> BoxFuture<Reply> {
        println!("  ? {} -> approved by the scripted user", prompt.message);
        Box::pin(async { Reply { answer: Answer::Approve, feedback: None } })
    }
}

/// One scripted step: a tool use and what its result must show.
struct Step {
    tool: &'static str,
    input: Value,
    status: ResultStatus,
    expect: Vec<String>,
}

fn step(tool: &'static str, input: Value, status: ResultStatus, expect: &[&str]) -> Step {
    Step { tool, input, status, expect: expect.iter().map(|s| (*s).to_owned()).collect() }
}

fn copy_tree(from: &Path, to: &Path, depth: usize) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == "target" || name == ".git" {
            continue;
        }
        let path = entry.path();
        if path.is_dir() && depth > 0 {
            copy_tree(&path, &to.join(&name), depth - 1)?;
        } else if path.is_file() {
            std::fs::copy(&path, to.join(&name))?;
        }
    }
    Ok(())
}

fn shown(result: &ToolResult) -> String {
    let text = result.to_model_text();
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= 14 {
        return text;
    }
    format!("{}\n  … ({} more lines)", lines[..12].join("\n"), lines.len() - 12)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let plugins = match args.iter().position(|a| a == "--plugins") {
        Some(i) => PathBuf::from(args.get(i + 1).ok_or_else(|| anyhow::anyhow!("--plugins needs a directory"))?),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/plugins-debug"),
    };
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let scratch = tempfile::tempdir()?;
    let ws = scratch.path().join("workspace");
    copy_tree(&repo, &ws, 3)?;
    // A few files an agent meets in real trees: a fenced-off secret and a binary.
    std::fs::write(ws.join(".clineignore"), "secrets/\n")?;
    std::fs::create_dir_all(ws.join("secrets"))?;
    std::fs::write(ws.join("secrets/token.txt"), "hunter2\n")?;
    std::fs::write(ws.join("logo.bin"), [0u8, 159, 146, 150, 0, 0])?;
    let big: String = (1..=2500).map(|i| format!("entry {i}\n")).collect();
    std::fs::write(ws.join("journal.log"), big)?;

    println!("Toolshed demo: plugins from {}, scratch workspace {}", plugins.display(), ws.display());
    let runtime = Runtime::builder().plugin_dir(&plugins).approver(ScriptedUser).build()?;
    if let Some(error) = runtime.load_errors().first() {
        anyhow::bail!("plugin not loaded: {error}");
    }
    let loaded: BTreeSet<String> = runtime.tools().into_iter().map(|t| t.name).collect();
    println!("Loaded tools: {}\n", loaded.iter().cloned().collect::<Vec<_>>().join(", "));

    use ResultStatus::{Error, Success};
    let script = vec![
        step("read_file", json!({"path": "README.md"}), Success, &["1 | # Toolshed", "lines total.)"]),
        step("read_file", json!({"path": "journal.log", "start_line": 2001}), Success, &["2001 | entry 2001", "(File has 2500 lines total.)"]),
        step("read_file", json!({"path": "journal.log", "start_line": 10, "end_line": 12}), Success, &["[File already read]", "10 | entry 10\n11 | entry 11\n12 | entry 12\n\n(Showing lines 10-12 of 2500 total. Use start_line=13 to continue reading.)"]),
        step("read_file", json!({"path": "secrets/token.txt"}), Error, &["is blocked by the .clineignore file settings"]),
        step("read_file", json!({"path": "logo.bin"}), Error, &["Cannot read text for file type: .bin"]),
        step("read_file", json!({"path": "no/such/file.rs"}), Error, &["Error reading file: File not found: "]),
        step("read_file", json!({}), Error, &["Missing value for required parameter 'path'"]),
        step("list_files", json!({"path": "."}), Success, &["🔒 .clineignore", "README.md", "plugins/"]),
        step("list_files", json!({"path": "runtime", "recursive": "true"}), Success, &["src/", "src/lib.rs"]),
        step("list_files", json!({"path": "secrets", "recursive": true}), Success, &["🔒 token.txt"]),
        step("list_files", json!({"path": "does-not-exist"}), Success, &["No files found."]),
        step("search_files", json!({"path": ".", "regex": "fn main\\(", "file_pattern": "*.rs"}), Success, &["results.\n\n", "runtime/src/main.rs\n│----\n"]),
        step("search_files", json!({"path": "runtime/src", "regex": "pub struct Workspace\\b"}), Success, &["Found 1 result.\n\nruntime/src/workspace.rs\n│----\n"]),
        step("search_files", json!({"path": ".", "regex": "^entry \\d+$", "file_pattern": "*.log"}), Success, &["Showing first 300 of 300+ results. Use a more specific search if necessary.\n\njournal.log\n│----\n│entry 1\n│----\n│entry 2\n│----\n"]),
        // The secret's own file is fenced off by .clineignore; only the demo's source, which mentions it, is found.
        step("search_files", json!({"path": ".", "regex": "hunter2"}), Success, &["runtime/examples/demo.rs\n│----\n"]),
        step("search_files", json!({"path": ".", "regex": "(unclosed"}), Error, &["The regex '(unclosed' is not valid Rust regex syntax", "unclosed group"]),
        step("search_files", json!({"path": "no/such/dir", "regex": "x"}), Error, &["Directory not found"]),
        step(
            "execute_command",
            json!({"command": "echo built && wc -l README.md", "requires_approval": false}),
            Success,
            &["Command executed successfully (exit code 0).\nOutput:\nbuilt\n", "README.md"],
        ),
        step(
            "execute_command",
            json!({"command": "echo oops >&2; exit 4", "requires_approval": "false"}),
            Success,
            &["Command failed with exit code 4.\nOutput:\noops"],
        ),
        step("execute_command", json!({"command": "cat secrets/token.txt", "requires_approval": false}), Error, &[".clineignore"]),
        // The edit tools: one handler behind write_to_file, replace_in_file and new_rule, and apply_patch.
        step("write_to_file", json!({"path": "notes/todo.md", "content": "# TODO\n\n- ship the edit tools\n"}), Success, &["The content was successfully saved to notes/todo.md.", "<final_file_content path=\"notes/todo.md\">\n# TODO\n\n- ship the edit tools\n\n</final_file_content>"]),
        step("replace_in_file", json!({"path": "notes/todo.md", "diff": "------- SEARCH\n- ship the edit tools\n=======\n- ship the edit tools\n- celebrate\n+++++++ REPLACE"}), Success, &["- ship the edit tools\n- celebrate\n\n</final_file_content>"]),
        step("replace_in_file", json!({"path": "notes/todo.md", "diff": "------- SEARCH\n- nothing like this\n=======\nx\n+++++++ REPLACE"}), Error, &["...does not match anything in the file.", "The file was reverted to its original state:\n\n<file_content path=\"notes/todo.md\">"]),
        step("write_to_file", json!({"path": "secrets/token.txt", "content": "stolen"}), Error, &["is blocked by the .clineignore file settings"]),
        step("new_rule", json!({"path": ".clinerules/demo-style.md", "content": "## Brief overview\n- Keep demos short.\n"}), Success, &["The content was successfully saved to .clinerules/demo-style.md."]),
        step("new_rule", json!({"path": "demo-style.md", "content": "x"}), Error, &["new_rule only creates Cline rule files inside the .clinerules/ directory"]),
        step("apply_patch", json!({"input": "*** Begin Patch\n*** Update File: notes/todo.md\n@@\n-- celebrate\n+- celebrate twice\n*** Add File: notes/done.md\n+- edit tools\n*** End Patch"}), Success, &["Successfully applied patch to the following files:", "<final_file_content path=\"notes/done.md\">\n- edit tools\n"]),
        step("apply_patch", json!({"input": "*** Begin Patch\n*** Update File: notes/todo.md\n@@\n-- no such line\n+x\n*** End Patch"}), Error, &["notes/todo.md: chunk 1 of 1 did not match", "No file was changed."]),
    ];

    let task = runtime.task(TaskContext::new(&ws));
    let executor = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut failures = Vec::new();
    let mut exercised = BTreeSet::new();
    let mut calls = 0;
    for (i, step) in script.into_iter().enumerate() {
        if !loaded.contains(step.tool) {
            failures.push(format!("step {}: tool {} is not loaded", i + 1, step.tool));
            continue;
        }
        calls += 1;
        exercised.insert(step.tool.to_owned());
        println!("> {} {}", step.tool, step.input);
        let result = executor.block_on(task.execute(ToolUse::new(format!("call-{}", i + 1), step.tool, step.input)));
        println!("{}\n", shown(&result));
        let text = result.to_model_text();
        if result.status != step.status {
            failures.push(format!(
                "step {}: {} ended {:?}, expected {:?}",
                i + 1,
                step.tool,
                result.status,
                step.status
            ));
        }
        for expect in &step.expect {
            if !text.contains(expect.as_str()) {
                failures.push(format!("step {}: {} result lacks {expect:?}", i + 1, step.tool));
            }
        }
    }
    for tool in loaded.difference(&exercised) {
        failures.push(format!("tool {tool} is loaded but the demo never calls it; add it to the script"));
    }

    println!(
        "Summary: {calls} calls, {} tools exercised ({}), {} failed checks.",
        exercised.len(),
        exercised.iter().cloned().collect::<Vec<_>>().join(", "),
        failures.len()
    );
    if !failures.is_empty() {
        for failure in &failures {
            eprintln!("demo: {failure}");
        }
        anyhow::bail!("{} demo checks failed", failures.len());
    }
    Ok(())
}
