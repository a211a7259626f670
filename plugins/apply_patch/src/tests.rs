//! The tool through a fake host: Cline's result text, all-or-nothing across files, the workspace rules, and
//! the streamed file cards under random split points.

use super::*;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolshed_plugin_api::services::Say;
use toolshed_plugin_api::testing;

/// The SDK's fake host over one workspace root (blocked path prefixes, task state, recorded UI events), and
/// the calls this tool's tests make on it.
pub(crate) struct FakeHost {
    pub root: PathBuf,
    host: testing::FakeHost,
}

impl FakeHost {
    pub fn new(root: &Path) -> Self {
        let root = std::fs::canonicalize(root).unwrap();
        Self { host: testing::FakeHost::workspace(&root), root }
    }

    /// Blocks paths under these prefixes, as `.clineignore` would.
    pub fn block(&self, prefixes: &[&str]) {
        self.host.block(prefixes.iter().copied());
    }

    /// The UI events said since the last call, as (kind, text, partial).
    fn take_events(&self) -> Vec<(String, String, bool)> {
        self.host.take_requests::<Say>().into_iter().map(|say| (say.kind, say.text, say.partial)).collect()
    }

    fn client(&self) -> HostClient<'_> {
        self.host.client()
    }

    fn call(&self, input: Value) -> ToolCall<ApplyPatchArgs> {
        let root = self.root.to_string_lossy();
        serde_json::from_value(json!({
            "tool": "apply_patch",
            "input": input,
            "task": { "cwd": root, "roots": [{ "name": "ws", "path": root }], "mode": "act", "model_family": "gpt-5" },
        }))
        .unwrap()
    }

    /// `prepare`, then `execute` when it asks for approval: the result text or the error.
    pub fn run(&self, patch: &str) -> Result<String, String> {
        let call = self.call(json!({ "input": patch }));
        match self.host.prepare(&ApplyPatch::default(), &call) {
            Prepared::Approval(_) => {}
            Prepared::Error(e) => return Err(e.message),
            Prepared::Proceed => panic!("patches must ask for approval"),
        }
        match self.host.execute(&ApplyPatch::default(), &call) {
            Outcome::Success { blocks, .. } => match blocks.as_slice() {
                [toolshed_plugin_api::Block::Text { text }] => Ok(text.clone()),
                other => panic!("{other:?}"),
            },
            Outcome::Error(e) => Err(e.message),
            Outcome::Denied => Err("denied".to_owned()),
        }
    }

    fn partial(&self, patch: &str) {
        let block = PartialBlock {
            id: String::new(),
            tool: "apply_patch".to_owned(),
            input: json!({ "input": patch }),
            task: self.call(json!({})).task,
        };
        ApplyPatch::default().partial(&block, &self.client());
    }
}

/// A temporary workspace holding `files`, and a host over it.
pub(crate) fn workspace(files: &[(&str, &[u8])]) -> (tempfile::TempDir, FakeHost) {
    let dir = tempfile::Builder::new().prefix("ws-").tempdir().unwrap();
    for (path, bytes) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    let host = FakeHost::new(dir.path());
    (dir, host)
}

/// Every file under `root` with its bytes, and every directory (as `None`).
pub(crate) fn snapshot(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut found = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                found.insert(rel, None);
                stack.push(path);
            } else {
                found.insert(rel, Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    found
}

#[test]
fn success_text_is_clines() {
    let (_dir, host) = workspace(&[("a.txt", b"one\ntwo\n"), ("old.txt", b"x\n"), ("gone.txt", b"bye\n")]);
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+2\n*** Add File: new/b.txt\n+hello\n*** Update File: old.txt\n*** Move to: moved.txt\n@@\n-x\n+y\n*** Delete File: gone.txt\n*** End Patch";
    assert_eq!(
        host.run(patch).unwrap(),
        "Successfully applied patch to the following files:\n\n<final_file_content path=\"a.txt\">\none\n2\n\n</final_file_content>\n\n<final_file_content path=\"new/b.txt\">\nhello\n\n</final_file_content>\n\n<final_file_content path=\"moved.txt\">\ny\n\n</final_file_content>\n\nold.txt: [deleted]\n\ngone.txt: [deleted]"
    );
    let files = snapshot(&host.root);
    assert_eq!(files.get("moved.txt"), Some(&Some(b"y\n".to_vec())));
    assert!(!files.contains_key("old.txt") && !files.contains_key("gone.txt"));
}

#[test]
fn fuzz_is_noted() {
    let (_dir, host) = workspace(&[("a.txt", b"  one  \ntwo\n")]);
    let text = host.run("*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+2\n*** End Patch").unwrap();
    assert!(text.ends_with("\nNote: Patch applied with fuzz factor 100"), "{text}");
}

#[test]
fn a_chunk_that_does_not_match_changes_no_file() {
    let (_dir, host) = workspace(&[("a.txt", b"one\n"), ("b.txt", b"alpha\nbeta\n")]);
    let before = snapshot(&host.root);
    let patch = "*** Begin Patch\n*** Add File: c.txt\n+new\n*** Update File: a.txt\n@@\n-one\n+1\n*** Update File: b.txt\n@@\n-alpha\n+ALPHA\n@@\n-gamma\n+GAMMA\n*** End Patch";
    assert_eq!(
        host.run(patch),
        Err("Error executing apply_patch: b.txt: chunk 2 of 2 did not match: these lines were not found in the file:\ngamma\nNo file was changed. Read the file again and retry with its exact lines as context.".to_owned())
    );
    assert_eq!(snapshot(&host.root), before);
}

#[test]
fn workspace_rules() {
    let (_dir, host) = workspace(&[("secret/k.txt", b"k\n"), ("ro.txt", b"r\n")]);
    host.block(&["secret"]);
    let mut permissions = std::fs::metadata(host.root.join("ro.txt")).unwrap().permissions();
    permissions.set_readonly(true);
    std::fs::set_permissions(host.root.join("ro.txt"), permissions).unwrap();
    let before = snapshot(&host.root);
    assert_eq!(
        host.run("*** Begin Patch\n*** Delete File: secret/k.txt\n*** End Patch"),
        Err("Error executing apply_patch: Access denied: secret/k.txt".to_owned())
    );
    let outside = host.run("*** Begin Patch\n*** Add File: ../x.txt\n+x\n*** End Patch").unwrap_err();
    assert!(outside.contains("outside the workspace"), "{outside}");
    let read_only = host.run("*** Begin Patch\n*** Update File: ro.txt\n@@\n-r\n+w\n*** End Patch").unwrap_err();
    assert!(read_only.contains("is read-only"), "{read_only}");
    assert_eq!(snapshot(&host.root), before);
}

#[test]
fn byte_order_marks_and_crlf_stay() {
    let (_dir, host) = workspace(&[("w.txt", b"\xEF\xBB\xBFa\r\nb\r\n")]);
    host.run("*** Begin Patch\n*** Update File: w.txt\n@@\n a\n-b\n+B\n+c\n*** End Patch").unwrap();
    assert_eq!(std::fs::read(host.root.join("w.txt")).unwrap(), b"\xEF\xBB\xBFa\r\nB\r\nc\r\n");
}

#[test]
fn missing_input() {
    let (_dir, host) = workspace(&[]);
    assert!(host.run("").unwrap_err().starts_with("Missing value for required parameter 'input'."));
}

#[test]
fn streamed_headers_are_split_invariant() {
    let patch =
        "*** Begin Patch\n*** Add File: a.txt\n+a\n*** Add File: b.txt\n+b\n*** Delete File: c.txt\n*** End Patch";
    let run = |cuts: &[usize]| {
        let (_dir, host) = workspace(&[("c.txt", b"c\n")]);
        for &cut in cuts {
            host.partial(&patch[..cut]);
        }
        host.run(patch).unwrap();
        host.take_events()
    };
    let whole = run(&[]);
    assert_eq!(whole.iter().filter(|(_, _, partial)| *partial).count(), 3);
    assert_eq!(whole.iter().filter(|(_, _, partial)| !*partial).count(), 3);
    // Deterministic pseudo-random cut sets: a linear congruential sequence over the patch length.
    let mut seed = 12345u64;
    for _ in 0..40 {
        let mut cuts: Vec<usize> = (0..6)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (seed >> 33) as usize % (patch.len() + 1)
            })
            .collect();
        cuts.sort_unstable();
        assert_eq!(run(&cuts), whole, "cuts {cuts:?}");
    }
}

/// A 20,000-line file and a patch of `hunks` chunks spread over it, each keeping one line as context and
/// replacing the next; and the file the patch should give.
fn many_hunks(hunks: usize) -> (String, String, String) {
    let lines: Vec<String> = (0..20_000).map(|i| format!("line {i} of the file")).collect();
    let step = lines.len() / hunks;
    let mut patch = String::from("*** Begin Patch\n*** Update File: big.txt\n");
    let mut expected = lines.clone();
    for k in 0..hunks {
        let i = k * step;
        patch.push_str(&format!("@@\n {}\n-{}\n+changed {}\n", lines[i], lines[i + 1], i + 1));
        expected[i + 1] = format!("changed {}", i + 1);
    }
    patch.push_str("*** End Patch");
    (lines.join("\n") + "\n", patch, expected.join("\n") + "\n")
}

#[test]
fn six_thousand_hunks_on_a_large_file_apply() {
    let (file, patch, expected) = many_hunks(6_000);
    let (_dir, host) = workspace(&[("big.txt", file.as_bytes())]);
    let text = host.run(&patch).unwrap();
    assert!(text.starts_with("Successfully applied patch to the following files:"), "{}", &text[..200]);
    assert_eq!(std::fs::read_to_string(host.root.join("big.txt")).unwrap(), expected);
}

/// The tool with a similarity budget of `cells`.
fn with_budget(host: &FakeHost, patch: &str, cells: u64) -> Result<String, String> {
    let tool = ApplyPatch { limits: Limits { max_similarity_cells: cells } };
    let call = host.call(json!({ "input": patch }));
    match host.host.prepare(&tool, &call) {
        Prepared::Error(e) => Err(e.message),
        _ => match host.host.execute(&tool, &call) {
            Outcome::Error(e) => Err(e.message),
            other => Ok(format!("{other:?}")),
        },
    }
}

#[test]
fn a_chunk_found_nowhere_in_a_large_file_fails_without_scanning_for_long() {
    let (file, _, _) = many_hunks(1);
    let (_dir, host) = workspace(&[("big.txt", file.as_bytes())]);
    let mut patch = String::from("*** Begin Patch\n*** Update File: big.txt\n@@\n");
    for i in 0..40 {
        patch.push_str(&format!(" this line {i} is in no file at all\n"));
    }
    patch.push_str("-gone\n*** End Patch");
    let error = host.run(&patch).unwrap_err();
    assert!(error.contains("big.txt: chunk 1 of 1 did not match"), "{error}");
}

#[test]
fn similarity_search_over_hostile_lines_stops_at_its_budget() {
    // Every window of the file has the chunk's length and characters, so only the Levenshtein table can
    // rule a place out: the pass that cannot be linear, bounded by its budget.
    // The file cycles through 20 words of 20 distinct letters in order; the chunk holds each word reversed.
    let words: Vec<String> = (0..20u8).map(|i| (0..20u8).map(|j| char::from(b'a' + (i + j) % 26)).collect()).collect();
    let file: String = (0..20_000).map(|i| format!("{}\n", words[i % 20])).collect();
    let (_dir, host) = workspace(&[("big.txt", file.as_bytes())]);
    let mut patch = String::from("*** Begin Patch\n*** Update File: big.txt\n@@\n");
    for word in &words {
        patch.push_str(&format!(" {}\n", word.chars().rev().collect::<String>()));
    }
    patch.push_str("*** End Patch");
    let before = snapshot(&host.root);
    let error = with_budget(&host, &patch, 2_000_000).unwrap_err();
    assert!(
        error.contains("stopped after 2000000 comparisons (the limit is [plugins.config.apply_patch] max_similarity_cells = 2000000)"),
        "{error}"
    );
    assert_eq!(snapshot(&host.root), before);
}
