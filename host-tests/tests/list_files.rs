//! list_files through the pipeline, compared whole with Cline's §2 format.

use crate::util::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use std::path::Path;

fn touch(root: &Path, rel: &str, body: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
}

fn tree() -> tempfile::TempDir {
    let ws = workspace();
    let root = ws.path();
    touch(root, ".gitignore", "*.log\nbuild/\n");
    touch(root, ".env", "KEY=1\n");
    touch(root, ".hidden_dir/inside.txt", "");
    for name in ["a.txt", "B.txt", "file2.txt", "file10.txt", "app.log"] {
        touch(root, name, "");
    }
    touch(root, "node_modules/pkg/index.js", "");
    touch(root, "build/out.o", "");
    touch(root, "src/.gitignore", "secret.rs\n");
    touch(root, "src/main.rs", "fn main() {}\n");
    touch(root, "src/secret.rs", "");
    touch(root, "src/lib/mod.rs", "");
    touch(root, "src/lib/trace.log", "");
    ws
}

#[test]
fn recursive_listing_follows_clines_ignores_and_order() {
    let runtime = shipped().build().unwrap();
    let ws = tree();
    let task = task_in(&runtime, ws.path());
    let result = call(&task, "list_files", json!({"path": ".", "recursive": "true"}));
    assert_eq!(result.description, "[list_files for '.']");
    assert_eq!(
        text(&result),
        ".env\n.gitignore\na.txt\nB.txt\nfile2.txt\nfile10.txt\nsrc/\nsrc/.gitignore\nsrc/main.rs\nsrc/lib/\nsrc/lib/mod.rs"
    );
}

#[test]
fn top_level_listing_shows_everything_files_first() {
    let runtime = shipped().build().unwrap();
    let ws = tree();
    let result = call(&task_in(&runtime, ws.path()), "list_files", json!({"path": "."}));
    assert_eq!(
        text(&result),
        ".env\n.gitignore\na.txt\napp.log\nB.txt\nfile2.txt\nfile10.txt\n.hidden_dir/\nbuild/\nnode_modules/\nsrc/"
    );
    // Paths are relative to the listed directory, and as in Cline only `.gitignore` files from the listed
    // directory down apply (the root's `*.log` does not).
    let sub = call(&task_in(&runtime, ws.path()), "list_files", json!({"path": "src", "recursive": true}));
    assert_eq!(text(&sub), ".gitignore\nmain.rs\nlib/\nlib/mod.rs\nlib/trace.log");
}

#[test]
fn more_than_200_entries_are_cut_with_the_note() {
    let runtime = shipped().build().unwrap();
    let ws = workspace();
    for i in 0..260 {
        touch(ws.path(), &format!("d{}/f{i}.txt", i % 3), "");
    }
    let result = call(&task_in(&runtime, ws.path()), "list_files", json!({"path": ".", "recursive": "TRUE"}));
    let body = text(&result);
    let (list, note) = body.split_once("\n\n").unwrap();
    assert_eq!(
        note,
        "(File list truncated. Use list_files on specific subdirectories if you need to explore further.)"
    );
    assert_eq!(list.lines().count(), 200);
    // Breadth first: the three directories are in, each before its files.
    for dir in ["d0/", "d1/", "d2/"] {
        assert!(list.lines().any(|l| l == dir), "{dir} missing");
    }
}

#[test]
fn root_home_and_missing_paths_list_nothing() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    for path in ["/", "does-not-exist"] {
        assert_eq!(text(&call(&task, "list_files", json!({"path": path}))), "No files found.", "{path}");
    }
    let home = std::env::var("HOME").unwrap();
    assert_eq!(text(&call(&task, "list_files", json!({"path": home}))), "No files found.");
}
