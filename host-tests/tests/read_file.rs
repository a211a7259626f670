//! read_file through the whole pipeline: windows, footers, errors, the dedup cache, and a 50 MB file.

use crate::util::*;
use serde_json::json;
use std::io::Write;
use toolshed::{ResultStatus, TaskContext};

#[test]
fn windows_footers_and_the_dedup_cache() {
    let runtime = shipped().build().unwrap();
    let ws = workspace();
    let body: String = (1..=1500).map(|i| format!("line {i}\n")).collect();
    std::fs::write(ws.path().join("long.txt"), &body).unwrap();
    let task = task_in(&runtime, ws.path());

    let first = call(&task, "read_file", json!({"path": "long.txt"}));
    assert_eq!(first.description, "[read_file for 'long.txt']");
    let text1 = text(&first);
    assert!(text1.starts_with("1 | line 1\n2 | line 2\n"));
    assert!(text1.ends_with(
        "1000 | line 1000\n\n(Showing lines 1-1000 of 1500 total. Use start_line=1001 to continue reading.)"
    ));

    let second = call(&task, "read_file", json!({"path": "long.txt", "start_line": "1001"}));
    assert_eq!(
        text(&second).lines().next().unwrap(),
        "[File already read] The file 'long.txt' was already read earlier in this conversation. Returning content:"
    );
    assert!(text(&second).ends_with("1500 | line 1500\n\n(File has 1500 lines total.)"));

    let third = call(&task, "read_file", json!({"path": "long.txt", "start_line": 1499, "end_line": 1498}));
    assert_eq!(
        text(&third),
        "[DUPLICATE READ] You have already read 'long.txt' 3 times in this conversation. The content has not changed since your last read. Please use the information you already have and proceed with your task.\n1498 | line 1498\n1499 | line 1499\n\n(Showing lines 1498-1499 of 1500 total. Use start_line=1500 to continue reading.)"
    );

    // A changed file starts the count again; another task has its own cache.
    std::fs::write(ws.path().join("long.txt"), "changed\n").unwrap();
    let set = std::fs::File::options().write(true).open(ws.path().join("long.txt")).unwrap();
    set.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(3)).unwrap();
    assert_eq!(
        text(&call(&task, "read_file", json!({"path": "long.txt"}))),
        "1 | changed\n\n(File has 1 lines total.)"
    );
    let other = task_in(&runtime, ws.path());
    assert_eq!(
        text(&call(&other, "read_file", json!({"path": "long.txt"}))),
        "1 | changed\n\n(File has 1 lines total.)"
    );
}

#[test]
fn every_bad_input_is_a_clear_tool_error() {
    let runtime = shipped().build().unwrap();
    let ws = workspace();
    std::fs::create_dir(ws.path().join("dir")).unwrap();
    std::fs::write(ws.path().join("blob.bin"), [0u8, 159, 146, 150, 0, 1, 2, 3]).unwrap();
    let task = task_in(&runtime, ws.path());
    let root = ws.path().canonicalize().unwrap();

    let missing = call(&task, "read_file", json!({"path": "nope.txt"}));
    assert_eq!(missing.status, ResultStatus::Error);
    assert_eq!(
        text(&missing),
        format!(
            "The tool execution failed with the following error:\n<error>\nError reading file: File not found: {}\n</error>",
            root.join("nope.txt").display()
        )
    );
    let dir = text(&call(&task, "read_file", json!({"path": "dir"})));
    assert!(dir.contains("Error reading file: ") && dir.contains("is a directory"), "{dir}");
    let binary = text(&call(&task, "read_file", json!({"path": "blob.bin"})));
    assert!(binary.contains("Error reading file: Cannot read text for file type: .bin"), "{binary}");

    let no_path = call(&task, "read_file", json!({"start_line": 3}));
    assert_eq!(no_path.description, "[read_file for 'undefined']");
    assert!(text(&no_path).starts_with(
        "The tool execution failed with the following error:\n<error>\nMissing value for required parameter 'path'. Please retry with complete response.\n\n# Reminder: Instructions for Tool Use\n"
    ));
    let blank = call(&task, "read_file", json!({"path": "   "}));
    assert!(text(&blank).contains("Missing value for required parameter 'path'"));

    let unknown = call(&task, "no_such_tool", json!({}));
    assert!(text(&unknown).contains("Tool 'no_such_tool' does not exist. Available tools: "), "{}", text(&unknown));
    let invalid = block_on(task.execute(toolshed::ToolUse::from_text("t", "read_file", "{\"path\": ")));
    assert!(text(&invalid).contains("Invalid JSON input for read_file: "), "{}", text(&invalid));
    assert!(task.consecutive_mistakes() >= 5, "mistakes: {}", task.consecutive_mistakes());
    std::fs::write(ws.path().join("ok.txt"), "fine\n").unwrap();
    assert_eq!(call(&task, "read_file", json!({"path": "ok.txt"})).status, ResultStatus::Success);
    assert_eq!(task.consecutive_mistakes(), 0);
}

#[test]
fn clineignore_blocks_reads() {
    let runtime = shipped().build().unwrap();
    let ws = workspace();
    std::fs::write(ws.path().join(".clineignore"), "secrets/\n").unwrap();
    std::fs::create_dir(ws.path().join("secrets")).unwrap();
    std::fs::write(ws.path().join("secrets/key.txt"), "hunter2\n").unwrap();
    let result = call(&task_in(&runtime, ws.path()), "read_file", json!({"path": "secrets/key.txt"}));
    assert_eq!(
        text(&result),
        "The tool execution failed with the following error:\n<error>\nAccess to secrets/key.txt is blocked by the .clineignore file settings. You must try to continue in the task without using this file, or ask the user to update the .clineignore file.\n</error>"
    );
}

#[test]
fn images_need_a_model_that_reads_them() {
    let runtime = shipped().build().unwrap();
    let ws = workspace();
    // A 1x1 PNG.
    let png: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00, 0x00, 0x00,
        0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D,
        0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];
    std::fs::write(ws.path().join("dot.png"), png).unwrap();
    let seeing = runtime.task(TaskContext::new(ws.path()).with_images(true));
    let result = call(&seeing, "read_file", json!({"path": "dot.png"}));
    assert_eq!(result.status, ResultStatus::Success);
    let has_image = result
        .blocks
        .iter()
        .any(|b| matches!(b, toolshed::Block::Image { media_type, .. } if media_type == "image/png"));
    assert!(has_image, "{:?}", result.blocks);
    assert!(result
        .blocks
        .iter()
        .any(|b| matches!(b, toolshed::Block::Text { text } if text == "Successfully read image")));
    let blind = task_in(&runtime, ws.path());
    let result = call(&blind, "read_file", json!({"path": "dot.png"}));
    assert_eq!(result.status, ResultStatus::Error);
    assert!(text(&result).contains("Current model does not support image input"), "{}", text(&result));
}

#[test]
fn a_window_deep_in_a_50_mb_file_without_holding_it() {
    let ws = workspace();
    let path = ws.path().join("big.log");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut lines = 0u64;
    let mut written = 0u64;
    while written < 50 * 1024 * 1024 {
        let line = format!("{lines:08} the quick brown fox jumps over the lazy dog {}\n", lines % 97);
        written += line.len() as u64;
        out.write_all(line.as_bytes()).unwrap();
        lines += 1;
    }
    out.flush().unwrap();
    drop(out);

    // Only read_file is loaded: the measure is what reading costs, not how many other libraries are mapped.
    let only = workspace();
    std::fs::copy(crate::util::plugins().join(lib("read_file")), only.path().join(lib("read_file"))).unwrap();
    let plugins = only.path().to_owned();
    // Python's RUSAGE_CHILDREN gives the child's own peak RSS; measured from this multi-threaded test process,
    // a spawned child's peak would include ours.
    let probe = "import resource, subprocess, sys\nr = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE)\nsys.stdout.write(r.stdout.decode())\nsys.stderr.write('%d %d' % (r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))";
    // A fresh home each time: both calls start with no declaration index, as the first call on a machine does.
    let peak = |input: &str| {
        let home = workspace();
        let out = std::process::Command::new("python3")
            .args(["-c", probe, toolshed_bin().to_str().unwrap()])
            .args(["--plugins", plugins.to_str().unwrap(), "--cwd", ws.path().to_str().unwrap()])
            .args(["call", "read_file", input])
            .env("HOME", home.path())
            .output()
            .unwrap();
        let report = stderr(&out);
        let (code, peak_kb) =
            report.split_once(' ').map(|(c, p)| (c.parse::<i32>().unwrap(), p.trim().parse::<u64>().unwrap())).unwrap();
        assert_eq!(code, 0, "{}", stdout(&out));
        (stdout(&out), peak_kb)
    };
    // The process itself (a debug binary and library: ~39 MB here) is measured by the same call on a small file.
    std::fs::write(ws.path().join("small.log"), "one\ntwo\n").unwrap();
    let (_, baseline_kb) = peak(r#"{"path":"small.log"}"#);
    let (stdout, peak_kb) = peak(r#"{"path":"big.log","start_line":800000}"#);
    let body: Vec<&str> = stdout.lines().collect();
    assert_eq!(body[0], "[read_file for 'big.log'] Result:");
    assert_eq!(
        body[1],
        format!("800000 | {:08} the quick brown fox jumps over the lazy dog {}", 799_999, 799_999 % 97)
    );
    assert_eq!(
        body[1000],
        format!("800999 | {:08} the quick brown fox jumps over the lazy dog {}", 800_998, 800_998 % 97)
    );
    assert_eq!(
        *body.last().unwrap(),
        format!("(Showing lines 800000-800999 of {lines} total. Use start_line=801000 to continue reading.)")
    );
    // Reading the window costs far less than the file's 50 MB over what the process costs anyway.
    assert!(peak_kb < baseline_kb + 16 * 1024, "peak RSS {peak_kb} kB, {baseline_kb} kB for a small file");
}
