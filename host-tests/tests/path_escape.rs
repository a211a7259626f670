//! The path-escape suite: every tool that takes a path, given every way a model could point it outside the
//! workspace. Each case must be refused or asked about (the approver here denies), and nothing outside the
//! workspace may be read into a result or changed on disk.

use crate::util::{block_on, shipped, workspace};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use toolshed::{
    Answer, ApprovalPrompt, Approver, BoxFuture, Reply, ResultStatus, Runtime, TaskContext, TaskHandle, ToolUse,
};

/// The outside file's second line: no tool input ever contains it, so finding it in a result is a leak.
const SECRET: &str = "TOP-SECRET-OUTSIDE-42";
/// The outside file's first line, which the edits of the suite try to replace.
const FIRST: &str = "line-one-public";

/// Records every ask and denies it, as a user who never approves anything outside the workspace would.
#[derive(Clone, Default)]
struct Denier(Arc<Mutex<Vec<ApprovalPrompt>>>);

impl Approver for Denier {
    fn ask(&self, prompt: ApprovalPrompt) -> BoxFuture<Reply> {
        self.0.lock().unwrap().push(prompt);
        Box::pin(async { Reply { answer: Answer::Deny, feedback: None } })
    }
}

/// A workspace, a directory outside it holding a secret, and links from one to the other.
struct Scene {
    ws: tempfile::TempDir,
    outside: tempfile::TempDir,
    other_root: tempfile::TempDir,
}

impl Scene {
    fn new() -> Self {
        let (ws, outside, other_root) = (workspace(), workspace(), workspace());
        std::fs::write(outside.path().join("secret.txt"), format!("{FIRST}\n{SECRET}\n")).unwrap();
        std::fs::write(ws.path().join("inside.txt"), "inside\nSECRET\n").unwrap();
        std::fs::create_dir(ws.path().join("sub")).unwrap();
        let secret = outside.path().join("secret.txt");
        std::os::unix::fs::symlink(&secret, ws.path().join("link.txt")).unwrap();
        // A chain: chain1 -> chain2 -> the secret.
        std::os::unix::fs::symlink(&secret, ws.path().join("sub/chain2")).unwrap();
        std::os::unix::fs::symlink(ws.path().join("sub/chain2"), ws.path().join("chain1.txt")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("outdir")).unwrap();
        // A relative link that climbs out.
        let up = format!("../{}/secret.txt", outside.path().file_name().unwrap().to_string_lossy());
        std::os::unix::fs::symlink(up, ws.path().join("rel-link.txt")).unwrap();
        Self { ws, outside, other_root }
    }

    /// Everything under the outside directory: names and contents, to prove nothing changed.
    fn outside_snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut files = BTreeMap::new();
        let parent = self.outside.path().parent().unwrap();
        for entry in walk(self.outside.path()) {
            files.insert(entry.clone(), std::fs::read(&entry).unwrap_or_default());
        }
        // Files created next to the outside dir (e.g. `../pwned.txt` from the workspace) count too.
        for entry in std::fs::read_dir(parent).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("pwned") {
                files.insert(entry.path(), Vec::new());
            }
        }
        files
    }

    fn task(&self, runtime: &Runtime) -> TaskHandle {
        runtime.task(TaskContext::new(self.ws.path()).with_root("second", self.other_root.path()))
    }

    fn outside_name(&self) -> String {
        self.outside.path().file_name().unwrap().to_string_lossy().into_owned()
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// The path spellings of the suite, by name. `{out}` is the outside directory's name, `{abs}` its path.
fn spellings(scene: &Scene) -> Vec<(&'static str, String)> {
    let out = scene.outside_name();
    let abs = scene.outside.path().display().to_string();
    let long = format!("{}/x.txt", "a".repeat(5000));
    vec![
        ("dotdot", format!("../{out}/secret.txt")),
        ("dotdot-after-subdir", format!("sub/../../{out}/secret.txt")),
        ("dotdot-deep", format!("sub/../../../../../../..{abs}/secret.txt")),
        ("absolute", format!("{abs}/secret.txt")),
        ("absolute-with-dotdot", format!("{}/../{out}/secret.txt", scene.ws.path().display())),
        ("symlink-to-file", "link.txt".to_owned()),
        ("symlink-chain", "chain1.txt".to_owned()),
        ("symlink-relative-climb", "rel-link.txt".to_owned()),
        ("symlink-dir", "outdir/secret.txt".to_owned()),
        ("hint-dotdot", format!("@second:../{out}/secret.txt")),
        ("hint-absolute", format!("@second:{abs}/secret.txt")),
        ("unicode-lookalike-dots", format!("\u{ff0e}\u{ff0e}/{out}/secret.txt")),
        ("unicode-division-slash", format!("..\u{2215}{out}\u{2215}secret.txt")),
        ("very-long", long),
        ("nul-byte", format!("../{out}/secret.txt\0.txt")),
        ("newline", format!("inside.txt\n../{out}/secret.txt")),
        ("tilde", "~/secret.txt".to_owned()),
    ]
}

/// The tool uses of the suite for one path: (tool, input).
fn uses(path: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("read_file", json!({"path": path})),
        ("list_files", json!({"path": path, "recursive": "true"})),
        ("search_files", json!({"path": path, "regex": "SECRET"})),
        ("write_to_file", json!({"path": path, "content": "pwned"})),
        ("write_to_file", json!({"path": format!("{path}.pwned"), "content": "pwned"})),
        (
            "replace_in_file",
            json!({"path": path, "diff": format!("------- SEARCH\n{FIRST}\n=======\npwned\n+++++++ REPLACE")}),
        ),
        ("new_rule", json!({"path": path, "content": "pwned"})),
        (
            "apply_patch",
            json!({"input": format!(
                "*** Begin Patch\n*** Update File: {path}\n@@\n-{FIRST}\n+pwned\n*** End Patch"
            )}),
        ),
        (
            "apply_patch",
            json!({"input": format!("*** Begin Patch\n*** Add File: {path}.pwned\n+pwned\n*** End Patch")}),
        ),
        ("apply_patch", json!({"input": format!("*** Begin Patch\n*** Delete File: {path}\n*** End Patch")})),
    ]
}

#[test]
fn no_tool_reaches_outside_the_workspace_silently() {
    let scene = Scene::new();
    let denier = Denier::default();
    let runtime = shipped().approver(denier.clone()).build().unwrap();
    let task = scene.task(&runtime);
    let before = scene.outside_snapshot();
    let mut failures = Vec::new();
    let mut cases = 0;
    for (case, path) in spellings(&scene) {
        for (tool, input) in uses(&path) {
            cases += 1;
            let asks_before = denier.0.lock().unwrap().len();
            let result = block_on(task.execute(ToolUse::new("esc", tool, input)));
            let asked = denier.0.lock().unwrap().len() > asks_before;
            let text = result.to_model_text();
            let name = format!("{tool}/{case}");
            if text.contains(SECRET) {
                failures.push(format!("{name}: the secret reached the result: {text}"));
            }
            if result.status == ResultStatus::Success && !asked && reaches_outside(&scene, &path) {
                failures.push(format!("{name}: succeeded outside the workspace without asking: {text}"));
            }
            if scene.outside_snapshot() != before {
                failures.push(format!("{name}: changed files outside the workspace"));
                break;
            }
        }
    }
    assert!(cases >= 150, "{cases} cases");
    assert!(failures.is_empty(), "{} of {cases} cases escaped:\n{}", failures.len(), failures.join("\n"));
    // The secret is still there and unchanged; the workspace's own file too.
    assert_eq!(
        std::fs::read_to_string(scene.outside.path().join("secret.txt")).unwrap(),
        format!("{FIRST}\n{SECRET}\n")
    );
    assert_eq!(std::fs::read_to_string(scene.ws.path().join("inside.txt")).unwrap(), "inside\nSECRET\n");
}

/// Whether a spelling names something outside the workspace once resolved (links followed).
fn reaches_outside(scene: &Scene, path: &str) -> bool {
    let joined = scene.ws.path().join(path);
    let real = joined.canonicalize().unwrap_or(joined);
    !real.starts_with(scene.ws.path().canonicalize().unwrap())
}

#[test]
fn reads_outside_ask_and_name_the_real_path() {
    let scene = Scene::new();
    let denier = Denier::default();
    let runtime = shipped().approver(denier.clone()).build().unwrap();
    let task = scene.task(&runtime);
    for path in ["link.txt", "chain1.txt", "outdir/secret.txt", "rel-link.txt"] {
        let result = block_on(task.execute(ToolUse::new("r", "read_file", json!({"path": path}))));
        assert_eq!(result.status, ResultStatus::Denied, "{path}: {}", result.to_model_text());
    }
    assert_eq!(denier.0.lock().unwrap().len(), 4, "each link out of the workspace was asked about");
    // A link that stays inside needs nobody.
    std::os::unix::fs::symlink(scene.ws.path().join("inside.txt"), scene.ws.path().join("ok-link.txt")).unwrap();
    let result = block_on(task.execute(ToolUse::new("r", "read_file", json!({"path": "ok-link.txt"}))));
    assert_eq!(result.status, ResultStatus::Success, "{}", result.to_model_text());
    assert_eq!(denier.0.lock().unwrap().len(), 4);
}

#[test]
fn execute_command_runs_in_its_root() {
    let scene = Scene::new();
    let runtime = shipped().yes(true).build().unwrap();
    let task = scene.task(&runtime);
    let pwd = |command: &str| {
        let result = block_on(task.execute(ToolUse::new(
            "c",
            "execute_command",
            json!({"command": command, "requires_approval": "false"}),
        )));
        result.to_model_text()
    };
    let primary = scene.ws.path().canonicalize().unwrap();
    assert!(pwd("pwd -P").contains(&primary.display().to_string()));
    let second = scene.other_root.path().canonicalize().unwrap();
    assert!(pwd("@second:pwd -P").contains(&second.display().to_string()));
    // A root name with `..` is no hint (`\w+` only): the text runs as a command and fails in the primary root.
    let text = pwd("@..:pwd -P");
    assert!(!text.contains(&second.display().to_string()), "{text}");
}

/// A link swapped between the check and the read must not leak the outside file: the read checks what it
/// opened. The swapper flips `flip.txt` between an inside and an outside target as fast as it can while reads
/// run; every result must be either the inside text or a refusal.
#[test]
fn a_link_swapped_between_check_and_use_does_not_leak() {
    let scene = Scene::new();
    let denier = Denier::default();
    let runtime = shipped().approver(denier).build().unwrap();
    let task = scene.task(&runtime);
    let link = scene.ws.path().join("flip.txt");
    let inside = scene.ws.path().join("inside.txt");
    let outside = scene.outside.path().join("secret.txt");
    std::os::unix::fs::symlink(&inside, &link).unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, link) = (Arc::clone(&stop), link);
        std::thread::spawn(move || {
            let tmp = link.with_extension("tmp");
            let mut flip = false;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let target = if flip { &outside } else { &inside };
                flip = !flip;
                let _ = std::fs::remove_file(&tmp);
                let _ = std::os::unix::fs::symlink(target, &tmp);
                let _ = std::fs::rename(&tmp, &link);
            }
        })
    };
    let mut leaks = 0;
    for _ in 0..300 {
        let result = block_on(task.execute(ToolUse::new("f", "read_file", json!({"path": "flip.txt"}))));
        if result.to_model_text().contains(SECRET) {
            leaks += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    assert_eq!(leaks, 0, "the outside file leaked through a swapped link");
}
