//! The handler through a fake host: the three names, Cline's texts, the safety rules of every write, and the
//! streamed progress under random split points.

use super::*;
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use toolshed_plugin_api::services::{ReadCacheForget, Say, TaskSettings, TaskSettingsService};
use toolshed_plugin_api::testing;

/// The SDK's fake host over one workspace root (`.clineignore`-style blocked prefixes, task state, recorded
/// UI events and read-cache invalidations), and the calls this tool's tests make on it.
pub(crate) struct FakeHost {
    pub root: PathBuf,
    host: testing::FakeHost,
    /// The task's consecutive mistakes, counted as the runtime counts them (a mistake adds one, a success
    /// resets), reported through `task.settings`.
    mistakes: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

impl FakeHost {
    pub fn new(root: &Path) -> Self {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_owned());
        let mistakes = std::sync::Arc::<std::sync::atomic::AtomicU32>::default();
        let count = std::sync::Arc::clone(&mistakes);
        let host = testing::FakeHost::workspace(&root).on::<TaskSettingsService>(move |_| {
            let consecutive_mistakes = count.load(std::sync::atomic::Ordering::Relaxed);
            Ok(TaskSettings { mode: "act".to_owned(), consecutive_mistakes, ..TaskSettings::default() })
        });
        Self { host, root, mistakes }
    }

    /// Counts a call's outcome as the runtime does.
    fn count<T>(&self, result: &Result<T, (String, bool)>) {
        use std::sync::atomic::Ordering::Relaxed;
        match result {
            Ok(_) => self.mistakes.store(0, Relaxed),
            Err((_, true)) => {
                self.mistakes.fetch_add(1, Relaxed);
            }
            Err((_, false)) => {}
        }
    }

    /// Blocks paths under these prefixes, as `.clineignore` would.
    pub fn block(&self, prefixes: &[&str]) {
        self.host.block(prefixes.iter().copied());
    }

    /// The paths every `read_cache.forget` so far named.
    pub fn forgotten(&self) -> Vec<String> {
        self.host.requests::<ReadCacheForget>().into_iter().flat_map(|forget| forget.paths).collect()
    }

    pub fn take_events(&self) -> Events {
        self.host.take_requests::<Say>().into_iter().map(|say| (say.kind, say.text, say.partial)).collect()
    }

    pub fn client(&self) -> HostClient<'_> {
        self.host.client()
    }

    pub fn call(&self, tool: &str, input: Value, family: &str) -> ToolCall<WriteToFileArgs> {
        let root = self.root.to_string_lossy();
        let call = json!({
            "tool": tool,
            "id": "t1",
            "input": input,
            "task": { "cwd": root, "roots": [{ "name": "ws", "path": root }], "mode": "act", "model_family": family },
        });
        serde_json::from_value(call).unwrap()
    }

    /// Runs a call as the executor does: `prepare`, then `execute` when it asks for approval.
    pub fn run(&self, tool: &str, input: Value) -> Result<String, String> {
        self.run_as(tool, input, "claude")
    }

    pub fn run_as(&self, tool: &str, input: Value, family: &str) -> Result<String, String> {
        let call = self.call(tool, input, family);
        let result = match self.host.prepare(&WriteToFile, &call) {
            Prepared::Approval(_) => match self.host.execute(&WriteToFile, &call) {
                Outcome::Success { blocks, .. } => match blocks.as_slice() {
                    [toolshed_plugin_api::Block::Text { text }] => Ok(text.clone()),
                    other => panic!("unexpected blocks {other:?}"),
                },
                Outcome::Error(e) => Err((e.message, e.mistake)),
                Outcome::Denied => Err(("denied".to_owned(), false)),
            },
            Prepared::Error(e) => Err((e.message, e.mistake)),
            Prepared::Proceed => panic!("file writes must ask for approval"),
        };
        self.count(&result);
        result.map_err(|(message, _)| message)
    }

    pub fn partial(&self, tool: &str, input: Value) {
        let block = PartialBlock {
            id: String::new(),
            tool: tool.to_owned(),
            input,
            task: self.call(tool, json!({}), "claude").task,
        };
        WriteToFile.partial(&block, &self.client());
    }
}

pub(crate) fn workspace() -> (tempfile::TempDir, FakeHost) {
    let dir = tempfile::Builder::new().prefix("ws-").tempdir().unwrap();
    let host = FakeHost::new(dir.path());
    (dir, host)
}

fn saved(path: &str, content: &str) -> String {
    messages::saved(path, content)
}

#[test]
fn write_to_file_creates_parents_and_reports_like_cline() {
    let (_dir, host) = workspace();
    let text = host.run("write_to_file", json!({ "path": "src/deep/a.rs", "content": "fn main() {}\n\n" })).unwrap();
    assert_eq!(
        text,
        "The content was successfully saved to src/deep/a.rs.\n\nHere is the full, updated content of the file that was saved:\n\n<final_file_content path=\"src/deep/a.rs\">\nfn main() {}\n\n</final_file_content>\n\nIMPORTANT: For any future changes to this file, use the final_file_content shown above as your reference. This content reflects the current state of the file, including any auto-formatting (e.g., if you used single quotes but the formatter converted them to double quotes). Always base your SEARCH/REPLACE operations on this final version to ensure accuracy.\n\n"
    );
    assert_eq!(std::fs::read_to_string(host.root.join("src/deep/a.rs")).unwrap(), "fn main() {}\n\n");
    assert_eq!(host.forgotten(), [host.root.join("src/deep/a.rs").to_string_lossy().into_owned()]);
}

#[test]
fn preprocessing_depends_on_the_model_family() {
    let (_dir, host) = workspace();
    let fenced = "```rust\nlet x = a &lt; b &amp;&amp; c;\n```";
    host.run_as("write_to_file", json!({ "path": "gen.rs", "content": fenced }), "gpt").unwrap();
    assert_eq!(std::fs::read_to_string(host.root.join("gen.rs")).unwrap(), "let x = a < b && c;");
    host.run_as("write_to_file", json!({ "path": "claude.rs", "content": fenced }), "claude").unwrap();
    assert_eq!(std::fs::read_to_string(host.root.join("claude.rs")).unwrap(), "let x = a &lt; b &amp;&amp; c;");
    host.run_as("write_to_file", json!({ "path": "data.xml", "content": "<a>&lt;</a>\u{FFFD}" }), "gpt").unwrap();
    assert_eq!(std::fs::read_to_string(host.root.join("data.xml")).unwrap(), "<a>&lt;</a>");
}

#[test]
fn empty_content_writes_an_empty_file() {
    let (_dir, host) = workspace();
    std::fs::write(host.root.join("a.txt"), "old\n").unwrap();
    let text = host.run("write_to_file", json!({ "path": "a.txt", "content": "" })).unwrap();
    assert_eq!(text, saved("a.txt", "\n"));
    assert_eq!(std::fs::read(host.root.join("a.txt")).unwrap(), b"");
}

#[test]
fn missing_content_guidance_grows_firmer() {
    let (_dir, host) = workspace();
    let first = host.run("write_to_file", json!({ "path": "a.txt" })).unwrap_err();
    assert!(first.starts_with("Failed to write to 'a.txt': The 'content' parameter was empty."), "{first}");
    assert!(first.ends_with(messages::TOOL_USE_REMINDER));
    let second = host.run("write_to_file", json!({ "path": "a.txt", "content": null })).unwrap_err();
    assert!(second.contains("This is your 2nd failed attempt."), "{second}");
    let third = host.run("write_to_file", json!({ "path": "a.txt" })).unwrap_err();
    assert!(third.contains("CRITICAL: You have failed to write this file 3 times in a row."), "{third}");
    host.run("write_to_file", json!({ "path": "a.txt", "content": "x" })).unwrap();
    let again = host.run("write_to_file", json!({ "path": "a.txt" })).unwrap_err();
    assert!(again.contains("Suggestions:"), "{again}");
    // Cline counts the task's consecutive mistakes, whichever tool made the earlier ones.
    host.run("replace_in_file", json!({ "path": "a.txt", "diff": "" })).unwrap_err();
    let after_other = host.run("write_to_file", json!({ "path": "a.txt" })).unwrap_err();
    assert!(after_other.contains("CRITICAL: You have failed to write this file 3 times in a row."), "{after_other}");
    assert!(!host.root.join("a.txt").exists() || std::fs::read_to_string(host.root.join("a.txt")).unwrap() == "x");
}

#[test]
fn replace_in_file_success_and_cline_text() {
    let (_dir, host) = workspace();
    std::fs::write(host.root.join("a.py"), "def f():\n    return 1\n").unwrap();
    let diff = "------- SEARCH\n    return 1\n=======\n    return 2\n+++++++ REPLACE";
    let text = host.run("replace_in_file", json!({ "path": "a.py", "diff": diff })).unwrap();
    assert_eq!(text, saved("a.py", "def f():\n    return 2\n"));
    assert_eq!(std::fs::read_to_string(host.root.join("a.py")).unwrap(), "def f():\n    return 2\n");
}

#[test]
fn a_failed_diff_returns_cline_diff_error_and_leaves_the_file() {
    let (_dir, host) = workspace();
    let original = "alpha\nbeta\n";
    std::fs::write(host.root.join("a.txt"), original).unwrap();
    let diff = "------- SEARCH\ngamma\n=======\ndelta\n+++++++ REPLACE";
    let error = host.run("replace_in_file", json!({ "path": "a.txt", "diff": diff })).unwrap_err();
    assert_eq!(
        error,
        messages::diff_error("The SEARCH block:\ngamma\n...does not match anything in the file.", "a.txt", original)
    );
    assert!(error.contains("<file_content path=\"a.txt\">\nalpha\nbeta\n\n</file_content>"));
    assert_eq!(std::fs::read(host.root.join("a.txt")).unwrap(), original.as_bytes());
    assert_eq!(host.take_events().last(), Some(&("diff_error".to_owned(), "a.txt".to_owned(), false)));
}

#[test]
fn missing_diff_and_path() {
    let (_dir, host) = workspace();
    assert_eq!(
        host.run("replace_in_file", json!({ "path": "a.txt", "diff": "" })),
        Err(messages::missing_diff("a.txt"))
    );
    assert_eq!(host.run("replace_in_file", json!({ "path": "a.txt" })), Err(messages::missing_diff("a.txt")));
    assert_eq!(host.run("write_to_file", json!({ "content": "x" })), Err(messages::missing_parameter("path")));
    assert_eq!(
        host.run("new_rule", json!({ "path": ".clinerules/a.md", "content": "" })),
        Err(messages::missing_parameter("content"))
    );
}

#[test]
fn crlf_bom_and_permissions_survive_edits() {
    let (_dir, host) = workspace();
    let path = host.root.join("win.txt");
    std::fs::write(&path, b"\xEF\xBB\xBFone\r\ntwo\r\nthree\r\n").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::PermissionsExt::set_mode(&mut std::fs::metadata(&path).unwrap().permissions(), 0o640);
    #[cfg(unix)]
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o640)).unwrap();
    let diff = "------- SEARCH\ntwo\n=======\nTWO\nand a half\n+++++++ REPLACE";
    let text = host.run("replace_in_file", json!({ "path": "win.txt", "diff": diff })).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"\xEF\xBB\xBFone\r\nTWO\r\nand a half\r\nthree\r\n");
    // Cline shows the saved text in its own line-break style.
    assert_eq!(text, saved("win.txt", "one\r\nTWO\r\nand a half\r\nthree\r\n"));
    host.run("write_to_file", json!({ "path": "win.txt", "content": "new\nlines\n" })).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"\xEF\xBB\xBFnew\r\nlines\r\n");
    #[cfg(unix)]
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions()) & 0o777,
        0o640
    );
}

#[test]
fn a_stray_cr_before_a_crlf_survives_an_edit_elsewhere() {
    // Found writing the replace_in_file fuzz target: the `\r` of `a\r\r\n` was lost though the edit was on
    // another line.
    let (_dir, host) = workspace();
    let path = host.root.join("cr.txt");
    std::fs::write(&path, b"a\r\r\nb\r\nc\r\n").unwrap();
    let diff = "------- SEARCH\nc\n=======\nC\n+++++++ REPLACE";
    host.run("replace_in_file", json!({ "path": "cr.txt", "diff": diff })).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"a\r\r\nb\r\nC\r\n");
}

#[test]
fn utf16_files_stay_utf16() {
    let (_dir, host) = workspace();
    let path = host.root.join("u16.txt");
    let encode =
        |s: &str| -> Vec<u8> { [0xFF, 0xFE].into_iter().chain(s.encode_utf16().flat_map(u16::to_le_bytes)).collect() };
    std::fs::write(&path, encode("héllo\n")).unwrap();
    host.run(
        "replace_in_file",
        json!({ "path": "u16.txt", "diff": "------- SEARCH\nhéllo\n=======\nwörld\n+++++++ REPLACE" }),
    )
    .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), encode("wörld\n"));
}

#[test]
fn new_rule_writes_only_under_clinerules() {
    let (_dir, host) = workspace();
    let text =
        host.run("new_rule", json!({ "path": ".clinerules/style.md", "content": "## Brief overview\n" })).unwrap();
    assert_eq!(text, saved(".clinerules/style.md", "## Brief overview\n"));
    for path in ["style.md", "docs/.clinerules/x.md", ".clinerules", "../.clinerules/x.md"] {
        let before: Vec<_> = std::fs::read_dir(&host.root).unwrap().map(|e| e.unwrap().file_name()).collect();
        let error = host.run("new_rule", json!({ "path": path, "content": "x" })).unwrap_err();
        assert!(error.starts_with(&format!("Failed to write to '{path}'")), "{path}: {error}");
        let after: Vec<_> = std::fs::read_dir(&host.root).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(before, after, "{path}");
    }
}

#[test]
fn boundaries_and_ignored_paths_are_refused() {
    let (_dir, host) = workspace();
    host.block(&["secret"]);
    std::fs::create_dir_all(host.root.join("secret")).unwrap();
    std::fs::write(host.root.join("secret/key.txt"), "k").unwrap();
    assert_eq!(
        host.run("write_to_file", json!({ "path": "secret/key.txt", "content": "x" })),
        Err(messages::clineignore("secret/key.txt"))
    );
    assert_eq!(std::fs::read_to_string(host.root.join("secret/key.txt")).unwrap(), "k");
    let outside = host.run("write_to_file", json!({ "path": "../escape.txt", "content": "x" })).unwrap_err();
    assert!(outside.contains("which is outside the workspace"), "{outside}");
    assert!(!host.root.join("../escape.txt").exists());
    std::fs::create_dir(host.root.join("dir")).unwrap();
    let dir = host.run("write_to_file", json!({ "path": "dir", "content": "x" })).unwrap_err();
    assert!(dir.ends_with("is a directory, not a file."), "{dir}");
}

#[cfg(unix)]
#[test]
fn links_are_followed_before_checking() {
    let (_dir, host) = workspace();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("target.txt"), "outside\n").unwrap();
    std::os::unix::fs::symlink(elsewhere.path().join("target.txt"), host.root.join("link.txt")).unwrap();
    let error = host.run("write_to_file", json!({ "path": "link.txt", "content": "x" })).unwrap_err();
    assert!(error.contains("outside the workspace"), "{error}");
    assert_eq!(std::fs::read_to_string(elsewhere.path().join("target.txt")).unwrap(), "outside\n");
    // A link inside the workspace edits the file it points to and stays a link.
    std::fs::create_dir(host.root.join("secret")).unwrap();
    std::fs::write(host.root.join("real.txt"), "a\n").unwrap();
    std::os::unix::fs::symlink(host.root.join("real.txt"), host.root.join("alias.txt")).unwrap();
    host.run("write_to_file", json!({ "path": "alias.txt", "content": "b\n" })).unwrap();
    assert_eq!(std::fs::read_to_string(host.root.join("real.txt")).unwrap(), "b\n");
    assert!(std::fs::symlink_metadata(host.root.join("alias.txt")).unwrap().file_type().is_symlink());
    // A link into an ignored directory is as blocked as the directory.
    host.block(&["secret"]);
    std::fs::write(host.root.join("secret/s.txt"), "s").unwrap();
    std::os::unix::fs::symlink(host.root.join("secret/s.txt"), host.root.join("innocent.txt")).unwrap();
    assert_eq!(
        host.run("write_to_file", json!({ "path": "innocent.txt", "content": "x" })),
        Err(messages::clineignore("innocent.txt"))
    );
    assert_eq!(std::fs::read_to_string(host.root.join("secret/s.txt")).unwrap(), "s");
}

#[test]
fn read_only_files_are_refused() {
    let (_dir, host) = workspace();
    let path = host.root.join("ro.txt");
    std::fs::write(&path, "keep\n").unwrap();
    let mut permissions = std::fs::metadata(&path).unwrap().permissions();
    permissions.set_readonly(true);
    std::fs::set_permissions(&path, permissions).unwrap();
    let error = host
        .run(
            "replace_in_file",
            json!({ "path": "ro.txt", "diff": "------- SEARCH\nkeep\n=======\nx\n+++++++ REPLACE" }),
        )
        .unwrap_err();
    assert!(error.contains("is read-only"), "{error}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep\n");
}

#[test]
fn a_file_changed_after_approval_is_not_overwritten() {
    let (_dir, host) = workspace();
    let path = host.root.join("a.txt");
    std::fs::write(&path, "one\n").unwrap();
    let call = host.call(
        "replace_in_file",
        json!({ "path": "a.txt", "diff": "------- SEARCH\none\n=======\ntwo\n+++++++ REPLACE" }),
        "claude",
    );
    assert!(matches!(host.host.prepare(&WriteToFile, &call), Prepared::Approval(_)));
    std::fs::write(&path, "one\nmore\n").unwrap();
    assert_eq!(host.host.execute(&WriteToFile, &call), result::mistake(messages::changed_since_approval("a.txt")));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\nmore\n");
}

#[test]
fn approval_asks_to_write_the_absolute_path() {
    let (_dir, host) = workspace();
    let call = host.call("write_to_file", json!({ "path": "n.txt", "content": "x" }), "claude");
    assert_eq!(
        host.host.prepare(&WriteToFile, &call),
        result::approval(
            "write",
            "Cline wants to create n.txt",
            vec![host.root.join("n.txt").to_string_lossy().into_owned()],
            Risk::Medium
        )
    );
}

#[test]
fn unknown_names_are_refused() {
    let (_dir, host) = workspace();
    let error = host.run("write_file", json!({ "path": "a", "content": "x" })).unwrap_err();
    assert!(error.contains("does not serve a tool named 'write_file'"), "{error}");
}

/// Streams `diff` cut at `cuts`, then completes the call; returns the file's content and the UI events.
/// UI events as `(kind, text, partial)`.
type Events = Vec<(String, String, bool)>;

fn stream_replace(original: &str, diff: &str, cuts: &[usize]) -> (Result<String, String>, Events) {
    let (_dir, host) = workspace();
    std::fs::write(host.root.join("s.txt"), original).unwrap();
    let mut cuts: Vec<usize> =
        cuts.iter().map(|c| c % (diff.len() + 1)).filter(|c| diff.is_char_boundary(*c)).collect();
    cuts.sort_unstable();
    for cut in cuts {
        host.partial("replace_in_file", json!({ "path": "s.txt", "diff": &diff[..cut] }));
    }
    let outcome = host.run("replace_in_file", json!({ "path": "s.txt", "diff": diff }));
    let content = std::fs::read_to_string(host.root.join("s.txt")).unwrap();
    (outcome.map(|_| content), host.take_events())
}

const STREAM_ORIGINAL: &str = "fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n\nfn c() {\n    3\n}\n";
const STREAM_DIFF: &str = "------- SEARCH\n    1\n=======\n    10\n+++++++ REPLACE\n\n------- SEARCH\nfn c() {\n    3\n}\n=======\nfn c() {\n    30\n}\n+++++++ REPLACE\n------- SEARCH\nfn b() {\n=======\nfn bee() {\n+++++++ REPLACE";

#[test]
fn streamed_progress_is_reported_per_block() {
    let (content, events) = stream_replace(STREAM_ORIGINAL, STREAM_DIFF, &[]);
    assert_eq!(content.unwrap(), "fn a() {\n    10\n}\n\nfn bee() {\n    2\n}\n\nfn c() {\n    30\n}\n");
    let shape: Vec<_> = events
        .iter()
        .map(|(kind, text, partial)| {
            let card: Value = serde_json::from_str(text).unwrap();
            (kind.as_str(), card["startLineNumbers"].clone(), *partial)
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("tool", json!([2]), true),
            ("tool", json!([2, 9]), true),
            ("tool", json!([2, 9, 5]), true),
            ("tool", json!([2, 9, 5]), false),
        ]
    );
}

#[test]
fn a_failing_stream_ends_with_the_diff_error() {
    let diff =
        "------- SEARCH\n    1\n=======\n    10\n+++++++ REPLACE\n------- SEARCH\nnope\n=======\nx\n+++++++ REPLACE";
    let (content, events) = stream_replace(STREAM_ORIGINAL, diff, &[20, 60, 75, 90]);
    assert!(content.is_err());
    let kinds: Vec<_> = events.iter().map(|(k, _, p)| (k.as_str(), *p)).collect();
    assert_eq!(kinds, [("tool", true), ("diff_error", false)]);
    let (_, unstreamed) = stream_replace(STREAM_ORIGINAL, diff, &[]);
    assert_eq!(events, unstreamed);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// Any split of the same diff, streamed through `partial` and then completed, gives the same file and the
    /// same UI events as the diff sent whole.
    #[test]
    fn any_split_gives_the_same_result_and_events(cuts in prop::collection::vec(0usize..10_000, 0..12)) {
        let whole = stream_replace(STREAM_ORIGINAL, STREAM_DIFF, &[]);
        let split = stream_replace(STREAM_ORIGINAL, STREAM_DIFF, &cuts);
        prop_assert_eq!(split, whole);
    }

    /// The same for `write_to_file` content.
    #[test]
    fn any_split_of_content_gives_the_same_events(cuts in prop::collection::vec(0usize..10_000, 0..12)) {
        let content = (1..=20).map(|i| format!("line {i}\n")).collect::<String>();
        let run = |cuts: &[usize]| {
            let (_dir, host) = workspace();
            let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (content.len() + 1)).collect();
            cuts.sort_unstable();
            for cut in cuts {
                host.partial("write_to_file", json!({ "path": "w.txt", "content": &content[..cut] }));
            }
            host.run("write_to_file", json!({ "path": "w.txt", "content": &content })).unwrap();
            host.take_events()
        };
        let whole = run(&[]);
        prop_assert_eq!(whole.len(), 6, "milestones at lines 1, 2, 4, 8, 16 and the final card");
        prop_assert_eq!(run(&cuts), whole);
    }
}
