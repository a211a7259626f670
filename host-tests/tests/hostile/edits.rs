//! Issue 22, class 9: edits in near-linear time, and no write after a reported failure. A call that timed
//! out or was cancelled before it committed (`call.commit`) never writes afterwards, and one that committed
//! is waited for and reports what it wrote. Real plugins: apply_patch, and the fixture `gated_write`, whose
//! delays put the timeout on either side of its commit.

use crate::util::*;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use toolshed::{Config, ResultStatus, Runtime};

fn abandoned(runtime: &Runtime, tool: &str) -> usize {
    runtime.tools().into_iter().find(|t| t.name == tool).map(|t| t.abandoned).unwrap()
}

/// Waits (one generous bound) until the tool's abandoned calls have all returned.
fn wait_for_threads(runtime: &Runtime, tool: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while abandoned(runtime, tool) > 0 {
        assert!(Instant::now() < deadline, "the abandoned {tool} call never returned");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn config(toml: &str) -> Config {
    Config::from_toml_str(&format!("[approval]\nyolo = true\n{toml}")).unwrap()
}

/// A file where the patch's chunk is found only by the similarity pass, and only at its end, after every
/// earlier place needed a Levenshtein table: slow to apply by construction. Returns the file and the patch.
fn slow_patch(places: usize) -> (String, String) {
    // Words of 20 distinct letters, cycled: every window of 20 lines has the chunk's characters.
    let words: Vec<String> = (0..20u8).map(|i| (0..20u8).map(|j| char::from(b'a' + (i + j) % 26)).collect()).collect();
    let reversed: Vec<String> = words.iter().map(|w| w.chars().rev().collect()).collect();
    let mut file: String = (0..places).map(|i| format!("{}\n", words[i % 20])).collect();
    // The target: the chunk's lines, each with its last letter changed, so no exact pass finds them (the
    // similarity pass takes the first place close enough, a line or two before them).
    for line in &reversed {
        file.push_str(&format!("{}Z\n", &line[..19]));
    }
    let mut patch = String::from("*** Begin Patch\n*** Update File: big.txt\n@@\n");
    for line in &reversed[..19] {
        patch.push_str(&format!(" {line}\n"));
    }
    patch.push_str(&format!("-{}\n+patched\n*** End Patch", reversed[19]));
    (file, patch)
}

const SLOW_PATCH_CONFIG: &str = "[plugins.config.apply_patch]\nmax_similarity_cells = 100000000000\n";

#[test]
fn a_patch_that_times_out_never_writes_afterwards() {
    let (file, patch) = slow_patch(1_000);
    let ws = workspace();
    std::fs::write(ws.path().join("big.txt"), &file).unwrap();
    // `prepare` computes the patch once at leisure; `execute` computes it again under a tiny call timeout.
    let toml = format!("[timeouts]\ncall_ms = 20\nprepare_ms = 600000\n{SLOW_PATCH_CONFIG}");
    let runtime = shipped().config(config(&toml)).build().unwrap();
    let task = task_in(&runtime, ws.path());
    let result = call(&task, "apply_patch", json!({ "input": patch }));
    assert_eq!(result.status, ResultStatus::Error, "{}", text(&result));
    let message = text(&result);
    assert!(message.contains("did not finish within 20 ms"), "{message}");
    assert!(message.contains("It had not changed any file and will not"), "{message}");
    assert!(!message.contains("may still complete"), "{message}");
    // The plugin's thread goes on computing the patch; once it is back, the file is as it was.
    wait_for_threads(&runtime, "apply_patch");
    assert_eq!(std::fs::read_to_string(ws.path().join("big.txt")).unwrap(), file);

    // The same patch with time to finish writes: the gate, not the patch, kept the file unchanged.
    let runtime = shipped().config(config(SLOW_PATCH_CONFIG)).build().unwrap();
    let task = task_in(&runtime, ws.path());
    let result = call(&task, "apply_patch", json!({ "input": patch }));
    assert!(text(&result).starts_with("Successfully applied patch"), "{}", text(&result));
    assert!(std::fs::read_to_string(ws.path().join("big.txt")).unwrap().contains("\npatched\n"));
}

fn gated(toml: &str) -> Runtime {
    Runtime::builder().plugin_file(fixture("fixture_tools")).config(config(toml)).build().unwrap()
}

fn out(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join("out.txt")).ok()
}

#[test]
fn a_call_that_times_out_before_committing_never_writes() {
    let runtime = gated("[timeouts]\ncall_ms = 100\n");
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let result = call(&task, "gated_write", json!({ "before_ms": 1000 }));
    let message = text(&result);
    assert!(message.contains("did not finish within 100 ms"), "{message}");
    assert!(message.contains("It had not changed any file and will not"), "{message}");
    wait_for_threads(&runtime, "gated_write");
    assert_eq!(out(ws.path()), None);
}

#[test]
fn a_call_that_committed_is_waited_for_and_reports_its_write() {
    let runtime = gated("[timeouts]\ncall_ms = 100\n");
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    // The timeout passes while the committed write is under way: the result is the write's.
    let result = call(&task, "gated_write", json!({ "after_ms": 1000 }));
    assert_eq!(result.status, ResultStatus::Success, "{}", text(&result));
    assert_eq!(text(&result), "wrote out.txt");
    assert_eq!(out(ws.path()).as_deref(), Some("written\n"));
    assert_eq!(abandoned(&runtime, "gated_write"), 0);
}

#[test]
fn a_cancelled_call_that_had_not_committed_says_so_and_never_writes() {
    // A long grace, so the plugin's own answer to the refused commit arrives within it.
    let runtime = gated("[timeouts]\ncall_ms = 600000\ncancel_grace_ms = 60000\n");
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let caller = {
        let task = task.clone();
        std::thread::spawn(move || call(&task, "gated_write", json!({ "before_ms": 800 })))
    };
    std::thread::sleep(Duration::from_millis(100));
    task.cancel();
    let result = caller.join().unwrap();
    let message = text(&result);
    assert!(message.contains("before it wrote anything, so no file was changed"), "{message}");
    wait_for_threads(&runtime, "gated_write");
    assert_eq!(out(ws.path()), None);
}
