//! Class 4: every path tool opens files through the confirmed open, so a link inside the workspace never
//! leads a read outside it unasked (nor a walk out of its root), and every whole-file read has a size cap:
//! a file over it is skipped with a note (outlines) or refused with a reason (documents, images, edits).

use crate::util::*;
use serde_json::json;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use toolshed::ResultStatus;

const SECRET: &str = "outside_secret_fn";

fn put(root: &Path, rel: &str, body: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
}

fn link(target: &Path, at: &Path) {
    std::os::unix::fs::symlink(target, at).unwrap();
}

/// A workspace with one ordinary source file, and a directory outside it holding a secret one.
fn workspace_and_outside() -> (tempfile::TempDir, tempfile::TempDir) {
    let (ws, outside) = (workspace(), workspace());
    put(ws.path(), "a.py", "def inside_fn():\n    pass\n");
    put(outside.path(), "secret.py", &format!("def {SECRET}():\n    pass\n"));
    put(outside.path(), "deep/secret.txt", &format!("{SECRET} needle\n"));
    (ws, outside)
}

#[test]
fn an_outline_skips_a_file_linking_out_even_when_every_call_is_approved() {
    let (ws, outside) = workspace_and_outside();
    link(&outside.path().join("secret.py"), &ws.path().join("link.py"));
    for yes in [false, true] {
        let runtime = shipped().yes(yes).build().unwrap();
        let result = call(&task_in(&runtime, ws.path()), "list_code_definition_names", json!({"path": "."}));
        let out = text(&result);
        assert_eq!(result.status, ResultStatus::Success, "{out}");
        assert!(out.contains("│def inside_fn():"), "{out}");
        assert!(!out.contains(SECRET), "yes={yes}: {out}");
        assert!(out.contains("link.py\n(skipped: "), "{out}");
        assert!(out.contains("outside the workspace"), "{out}");
    }
}

#[test]
fn an_outline_of_a_directory_linking_out_asks_first() {
    let (ws, outside) = workspace_and_outside();
    link(outside.path(), &ws.path().join("elsewhere"));
    // Nobody to ask: denied, nothing read.
    let runtime = shipped().build().unwrap();
    let result = call(&task_in(&runtime, ws.path()), "list_code_definition_names", json!({"path": "elsewhere"}));
    assert_eq!(result.status, ResultStatus::Denied, "{}", text(&result));
    assert!(!text(&result).contains(SECRET));
    // Approved: the directory the approval named is outlined.
    let runtime = shipped().yes(true).build().unwrap();
    let result = call(&task_in(&runtime, ws.path()), "list_code_definition_names", json!({"path": "elsewhere"}));
    assert!(text(&result).contains(SECRET), "{}", text(&result));
}

#[test]
fn an_outline_leaves_out_a_link_into_an_ignored_directory() {
    let ws = workspace();
    put(ws.path(), ".clineignore", "private/\n");
    put(ws.path(), "private/key.py", &format!("def {SECRET}():\n    pass\n"));
    put(ws.path(), "ok.py", "def ok():\n    pass\n");
    link(&ws.path().join("private/key.py"), &ws.path().join("innocent.py"));
    let runtime = shipped().yes(true).build().unwrap();
    let out = text(&call(&task_in(&runtime, ws.path()), "list_code_definition_names", json!({"path": "."})));
    assert!(out.contains("│def ok():"), "{out}");
    assert!(!out.contains(SECRET), "{out}");
}

#[test]
fn files_over_the_outline_cap_are_skipped_with_a_note() {
    let ws = workspace();
    put(ws.path(), "a.py", "def small():\n    pass\n");
    // A sparse gigabyte: no disk, but a naive outline would read and parse all of it.
    std::fs::File::create(ws.path().join("huge.py")).unwrap().set_len(1 << 30).unwrap();
    // Just over the default cap, with real content.
    put(ws.path(), "big.py", &format!("def big():\n    pass\n{}", "# padding\n".repeat(110_000)));
    let runtime = shipped().build().unwrap();
    let out = text(&call(&task_in(&runtime, ws.path()), "list_code_definition_names", json!({"path": "."})));
    assert!(out.contains("a.py\n|----\n│def small():"), "{out}");
    assert!(out.contains("huge.py\n(skipped: huge.py is 1024.0 MB, over the 1.0 MB limit for this tool."), "{out}");
    assert!(out.contains("big.py\n(skipped: big.py is 1.0 MB, over the 1.0 MB limit"), "{out}");
    assert!(!out.contains("def big"), "{out}");
    // The cap is the plugin's config key.
    let config =
        toolshed::Config::from_toml_str("[plugins.config.list_code_definition_names]\nmax_file_bytes = 16\n").unwrap();
    let runtime = shipped().config(config).build().unwrap();
    let out = text(&call(&task_in(&runtime, ws.path()), "list_code_definition_names", json!({"path": "."})));
    assert!(out.contains("a.py\n(skipped: a.py is 22 B, over the 16 B limit"), "{out}");
}

#[test]
fn many_files_and_special_files_keep_the_outline_bounded() {
    let ws = workspace();
    for i in 0..60 {
        put(ws.path(), &format!("m{i:02}.py"), &format!("def f{i:02}():\n    pass\n"));
    }
    nix_free_mkfifo(&ws.path().join("pipe.py"));
    link(Path::new("/dev/zero"), &ws.path().join("zero.py"));
    let runtime = shipped().yes(true).build().unwrap();
    let result = call(&task_in(&runtime, ws.path()), "list_code_definition_names", json!({"path": "."}));
    let out = text(&result);
    assert_eq!(result.status, ResultStatus::Success, "{out}");
    // Cline's 50-file cap; the FIFO and the device link are never opened for reading.
    assert_eq!(out.matches("│def f").count(), 50, "{out}");
}

/// A FIFO, made with the `mkfifo` program (the tests have no libc of their own).
fn nix_free_mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

#[test]
fn a_sparse_gigabyte_is_outlined_in_bounded_memory() {
    let ws = workspace();
    let home = workspace();
    put(ws.path(), "a.py", "def small():\n    pass\n");
    std::fs::File::create(ws.path().join("huge.py")).unwrap().set_len(1 << 30).unwrap();
    // The child's peak is measured by a small parent that forks it (a child's peak starts at its parent's,
    // which is this whole test process): Python's getrusage of its children, in KiB on Linux.
    let probe = "import resource, subprocess, sys\n\
                 r = subprocess.run(sys.argv[1:], capture_output=True)\n\
                 sys.stdout.write(r.stdout.decode())\n\
                 print('PEAK_KIB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)";
    let out = std::process::Command::new("python3")
        .args(["-c", probe])
        .arg(toolshed_bin())
        .arg("--plugins")
        .arg(plugins())
        .arg("--cwd")
        .arg(ws.path())
        .args(["call", "list_code_definition_names", r#"{"path":"."}"#])
        .env("HOME", home.path())
        .env_remove("TOOLSHED_PLUGINS")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let report = stdout.lines().last().unwrap_or_default().to_owned();
    let fields: Vec<&str> = report.split_whitespace().collect();
    assert_eq!(fields.first(), Some(&"PEAK_KIB"), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(fields.get(2), Some(&"0"), "{stdout}");
    assert!(stdout.contains("huge.py\n(skipped: huge.py is 1024.0 MB"), "{stdout}");
    assert!(stdout.contains("│def small():"), "{stdout}");
    let peak_mib = fields[1].parse::<f64>().unwrap() / 1024.0;
    eprintln!("peak RSS of `toolshed call list_code_definition_names` over a sparse 1 GiB .py: {peak_mib:.1} MiB");
    assert!(peak_mib < 200.0, "{peak_mib:.1} MiB");
}

#[test]
fn huge_documents_images_and_edits_are_refused_with_a_reason() {
    let ws = workspace();
    for name in ["huge.pdf", "huge.png", "huge.txt"] {
        std::fs::File::create(ws.path().join(name)).unwrap().set_len(1 << 30).unwrap();
    }
    let runtime = shipped().yes(true).build().unwrap();
    let task = runtime.task(toolshed::TaskContext::new(ws.path()).with_images(true));
    let pdf = call(&task, "read_file", json!({"path": "huge.pdf"}));
    assert_eq!(pdf.status, ResultStatus::Error, "{}", text(&pdf));
    assert!(text(&pdf).contains("too large"), "{}", text(&pdf));
    let png = call(&task, "read_file", json!({"path": "huge.png"}));
    assert_eq!(png.status, ResultStatus::Error, "{}", text(&png));
    assert!(text(&png).contains("over the 19.5 MB limit"), "{}", text(&png));
    let edit = call(
        &task,
        "replace_in_file",
        json!({"path": "huge.txt", "diff": "------- SEARCH\nx\n=======\ny\n+++++++ REPLACE"}),
    );
    assert_eq!(edit.status, ResultStatus::Error, "{}", text(&edit));
    assert!(text(&edit).contains("over the 19.5 MB limit"), "{}", text(&edit));
    assert_eq!(std::fs::metadata(ws.path().join("huge.txt")).unwrap().len(), 1 << 30);
}

#[test]
fn walks_do_not_follow_links_out_of_their_root() {
    let (ws, outside) = workspace_and_outside();
    put(ws.path(), "src/in.txt", "inside needle\n");
    link(outside.path(), &ws.path().join("out-dir"));
    link(&outside.path().join("deep/secret.txt"), &ws.path().join("out-file.txt"));
    let runtime = shipped().yes(true).build().unwrap();
    let task = task_in(&runtime, ws.path());
    let search = text(&call(&task, "search_files", json!({"path": ".", "regex": "needle"})));
    assert!(search.contains("inside needle"), "{search}");
    assert!(!search.contains(SECRET), "{search}");
    let listing = text(&call(&task, "list_files", json!({"path": ".", "recursive": true})));
    assert!(listing.contains("src/in.txt"), "{listing}");
    assert!(!listing.contains("secret"), "{listing}");
}

#[test]
fn a_link_swapped_while_tools_run_never_shows_what_lies_outside() {
    let (ws, outside) = workspace_and_outside();
    put(ws.path(), "inside/a.py", "def harmless():\n    pass\n");
    let (inside_dir, outside_dir) = (ws.path().join("inside"), outside.path().to_path_buf());
    std::fs::rename(outside_dir.join("secret.py"), outside_dir.join("a.py")).unwrap();
    link(&inside_dir, &ws.path().join("flip"));
    // Nobody approves anything: a read that needs nobody must stay inside the workspace.
    let runtime = shipped().build().unwrap();
    let task = task_in(&runtime, ws.path());
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let (flip, staged) = (ws.path().join("flip"), ws.path().join("flip.next"));
            let mut out = false;
            while !stop.load(Ordering::Relaxed) {
                out = !out;
                let _ = std::fs::remove_file(&staged);
                link(if out { &outside_dir } else { &inside_dir }, &staged);
                std::fs::rename(&staged, &flip).unwrap();
            }
        });
        for _ in 0..60 {
            for (tool, input) in [
                ("list_code_definition_names", json!({"path": "flip"})),
                ("read_file", json!({"path": "flip/a.py"})),
                ("search_files", json!({"path": "flip", "regex": "def"})),
                ("list_code_definition_names", json!({"path": "."})),
            ] {
                let result = call(&task, tool, input.clone());
                let shown: String = result
                    .blocks
                    .iter()
                    .map(|b| match b {
                        toolshed::Block::Text { text } => text.clone(),
                        other => format!("{other:?}"),
                    })
                    .collect();
                assert!(!shown.contains(SECRET), "{tool} {input}: {shown}");
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
}

#[test]
fn a_file_with_another_name_is_read_only_when_approved() {
    // A hard link's other name may lie outside the workspace, where no path check sees it: the read asks,
    // as a read outside the workspace does, and with nobody to ask it is denied.
    let runtime = crate::util::shipped().build().unwrap();
    let outside = crate::util::workspace();
    let ws = crate::util::workspace();
    std::fs::write(outside.path().join("secret.txt"), "OUTSIDE-SECRET\n").unwrap();
    std::fs::write(ws.path().join("plain.txt"), "plain\n").unwrap();
    let linked = ws.path().join("linked.txt");
    // Both temp dirs lie on one file system, so the link can be made.
    std::fs::hard_link(outside.path().join("secret.txt"), &linked).unwrap();
    let task = crate::util::task_in(&runtime, ws.path());
    let read = |path: &str| crate::util::call(&task, "read_file", serde_json::json!({ "path": path }));
    let plain = read("plain.txt");
    assert!(crate::util::text(&plain).contains("plain"), "{}", crate::util::text(&plain));
    let result = read("linked.txt");
    assert_eq!(result.status, toolshed::ResultStatus::Denied, "{}", crate::util::text(&result));
    assert!(!crate::util::text(&result).contains("OUTSIDE-SECRET"));
    // Approved, it reads.
    let approving = crate::util::shipped().yes(true).build().unwrap();
    let task = crate::util::task_in(&approving, ws.path());
    let result = crate::util::call(&task, "read_file", serde_json::json!({ "path": "linked.txt" }));
    assert!(crate::util::text(&result).contains("OUTSIDE-SECRET"), "{}", crate::util::text(&result));
}
