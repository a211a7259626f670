//! Classes 1 and 4 of issue 22 through real plugins in one runtime: pages nested thousands deep and JSON that
//! pretty-prints to the square of its size (web_fetch's direct mode, served on 127.0.0.1), minified sources
//! whose one line holds thousands of definitions (list_code_definition_names, every language), a 10 MB
//! matching line (search_files), and results over the runtime's `[limits] max_result_bytes`. Each call
//! answers a tool error or a bounded result, and the same runtime answers the next call.

use super::fixtures::{minified, nested_html, PageServer};
use crate::util::*;
use serde_json::json;
use std::collections::HashMap;
use toolshed::{Config, ResultStatus, Runtime};

/// The most text a web_fetch answer may hold: the 400 KB content cap and the prompt, URL and notes around it.
const WEB_BOUND: usize = 400 * 1024 + 1024;

fn runtime(config: &str, tools: &[&str]) -> Runtime {
    let mut builder = Runtime::builder().config(Config::from_toml_str(config).unwrap()).yes(true);
    for tool in tools {
        builder = builder.plugin_file(plugins().join(lib(tool)));
    }
    let runtime = builder.build().unwrap();
    assert!(runtime.load_errors().is_empty(), "{:?}", runtime.load_errors());
    runtime
}

/// Every text the model reads of a result, together.
fn all_text(result: &toolshed::ToolResult) -> String {
    result
        .blocks
        .iter()
        .filter_map(|block| match block {
            toolshed::Block::Text { text } => Some(text.as_str()),
            toolshed::Block::Image { .. } => None,
        })
        .collect()
}

#[test]
fn web_fetch_bounds_deep_pages_and_deep_json() {
    let shapes: &[(&str, &str, &str)] = &[
        ("b", "<b>", "</b>"),
        ("b-unclosed", "<b>", ""),
        ("div", "<div>", "</div>"),
        ("ul-li", "<ul><li>", "</li></ul>"),
        ("ol-li-unclosed", "<ol><li>", ""),
        ("blockquote", "<blockquote>", "</blockquote>"),
        ("table", "<table><tr><td>", "</td></tr></table>"),
        ("span", "<span>", "</span>"),
        ("a", "<a href=\"#x\">", "</a>"),
        ("i-unclosed", "<i>", ""),
        ("pre", "<pre>", "</pre>"),
        ("svg", "<svg><g>", "</g></svg>"),
        ("font", "<font color=red>", "</font>"),
        ("mixed-unclosed", "<div><b><ul><li><i><blockquote>", ""),
        ("formatting-attrs", "<p><em id=1><strong class=x>", ""),
    ];
    let mut pages: HashMap<String, (&'static str, Vec<u8>)> = HashMap::new();
    for (name, open, close) in shapes {
        // About 3,000 elements, past the 2,000 `<b>` that overflowed a worker thread's stack.
        let count = 3000 / open.matches('<').count();
        pages.insert(format!("/html/{name}"), ("text/html", nested_html(open, close, count).into_bytes()));
    }
    let json_pages = [
        // 40 KB of brackets: valid, and it printed to 824 MB.
        ("/json/closed-brackets", format!("{}{}", "[".repeat(20_000), "]".repeat(20_000))),
        ("/json/objects", format!("{}1{}", "{\"a\":".repeat(20_000), "}".repeat(20_000))),
        // Within the depth limit but wide: 255 bytes per item when printed, 1 GB in all without the cap.
        ("/json/wide-deep", format!("{}{}{}", "[".repeat(127), vec!["0"; 4_000_000].join(","), "]".repeat(127))),
        ("/json/unclosed", "[".repeat(40_000)),
    ];
    for (path, body) in json_pages {
        pages.insert(path.to_owned(), ("application/json", body.into_bytes()));
    }
    pages.insert("/plain".to_owned(), ("text/html", b"<!DOCTYPE html><h1>still here</h1>".to_vec()));
    let server = PageServer::start(pages.clone());
    let runtime =
        runtime("[web]\nbackend = \"direct\"\nenabled = true\nallowed_hosts = [\"127.0.0.1\"]\n", &["web_fetch"]);
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let fetch = |path: &str| call(&task, "web_fetch", json!({ "url": server.url(path), "prompt": "Summarize" }));
    let mut paths: Vec<&String> = pages.keys().filter(|path| *path != "/plain").collect();
    paths.sort();
    for path in paths {
        let result = fetch(path);
        let body = all_text(&result);
        assert!(body.len() <= WEB_BOUND, "{path}: {} bytes", body.len());
        if path.starts_with("/html/") {
            // Each converts: flattened below depth 512, the text kept (or the 400 KB cap reached first, for
            // the shapes Markdown indents at every level).
            assert_eq!(result.status, ResultStatus::Success, "{path}: {}", &body[..body.len().min(500)]);
            assert!(body.contains("deep") || body.contains("[Content truncated"), "{path}");
        }
        if path == "/json/closed-brackets" {
            // Too deep to pretty-print: shown as it came.
            assert!(body.ends_with(&format!("{}{}", "[".repeat(20_000), "]".repeat(20_000))), "{path}");
        }
        if path == "/json/wide-deep" {
            assert!(body.ends_with("[Content truncated: only the first 400 KB are shown.]"), "{path}");
        }
        let next = fetch("/plain");
        assert!(all_text(&next).ends_with("# still here"), "after {path}: {}", all_text(&next));
    }
}

#[test]
fn a_page_the_child_cannot_finish_is_a_tool_error() {
    // html5ever's parse takes time quadratic in the depth of its open elements: 100,000 unclosed `<div>`
    // runs far past one second of CPU in the child, which then ends in a tool error naming the limit.
    let page = nested_html("<div>", "", 100_000).into_bytes();
    let server = PageServer::start([("/deep".to_owned(), ("text/html", page))].into_iter().collect());
    let runtime = runtime(
        "[web]\nbackend = \"direct\"\nenabled = true\nallowed_hosts = [\"127.0.0.1\"]\n\n[isolation]\ncpu_ms = 1000\n",
        &["web_fetch"],
    );
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let result = call(&task, "web_fetch", json!({ "url": server.url("/deep"), "prompt": "p" }));
    assert_eq!(result.status, ResultStatus::Error, "{}", all_text(&result));
    assert!(all_text(&result).contains("[isolation]"), "{}", all_text(&result));
    let result = call(&task, "web_fetch", json!({ "url": server.url("/missing"), "prompt": "p" }));
    assert_eq!(all_text(&result), "Error fetching web content: Request failed with status code 404");
}

#[test]
fn outlines_of_minified_sources_are_bounded_in_every_language() {
    let ws = workspace();
    let extensions = ["js", "ts", "rs", "go", "c", "cpp", "java", "php", "rb"];
    for extension in extensions {
        // 20,000 definitions on one line: the 369 KB `.js` that aborted, in every syntax.
        let dir = ws.path().join("min").join(extension);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("min.{extension}")), minified(extension, 20_000)).unwrap();
    }
    // 50 files of 5,000 definitions each (the 89 KB file, 444 MB outlined): the answer is bounded
    // as a whole, not only per file.
    let many = ws.path().join("many");
    std::fs::create_dir_all(&many).unwrap();
    for n in 0..50 {
        std::fs::write(many.join(format!("m{n:02}.js")), minified("js", 5000)).unwrap();
    }
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::write(ws.path().join("src/ok.rs"), "fn ok() {}\n").unwrap();
    // The per-file time limit is not under test here (the outline's size is), and a loaded machine can take
    // seconds over 20,000 definitions in a debug build: a generous limit keeps the test about its bound.
    let runtime =
        runtime("[plugins.config.list_code_definition_names]\nmax_file_ms = 600000\n", &["list_code_definition_names"]);
    let task = task_in(&runtime, ws.path());
    let bound = 400 * 1024 + 1024;
    for extension in extensions.iter().copied().chain(["../many"]) {
        let result = call(&task, "list_code_definition_names", json!({ "path": format!("min/{extension}") }));
        let body = text(&result);
        assert_eq!(result.status, ResultStatus::Success, "{extension}: {}", &body[..body.len().min(300)]);
        assert!(body.len() <= bound, "{extension}: {} bytes", body.len());
        assert!(body.contains("… (line truncated: "), "{extension}: {}", &body[..body.len().min(300)]);
        assert!(body.contains("[plugins.config.list_code_definition_names] max_output_bytes"), "{extension}");
        let next = call(&task, "list_code_definition_names", json!({ "path": "src" }));
        assert_eq!(text(&next), "ok.rs\n|----\n│fn ok() {}\n|----\n\n", "after {extension}");
    }
}

#[test]
fn a_line_limit_is_a_plugin_config_key() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.py"), format!("def long_one({}):\n    pass\n", "x, ".repeat(100))).unwrap();
    let runtime =
        runtime("[plugins.config.list_code_definition_names]\nmax_line_chars = 20\n", &["list_code_definition_names"]);
    let task = task_in(&runtime, ws.path());
    let result = call(&task, "list_code_definition_names", json!({ "path": "." }));
    assert_eq!(text(&result), "a.py\n|----\n│def long_one(x, x, x… (line truncated: 315 characters)\n|----\n\n");
}

#[test]
fn search_files_bounds_a_ten_megabyte_matching_line() {
    let ws = workspace();
    let mut long = b"needle ".to_vec();
    long.resize(10 << 20, b'x');
    long.push(b'\n');
    std::fs::create_dir_all(ws.path().join("long")).unwrap();
    std::fs::write(ws.path().join("long/one-line.txt"), &long).unwrap();
    std::fs::write(ws.path().join("short.txt"), "a needle here\n").unwrap();
    let runtime = runtime("", &["search_files"]);
    let task = task_in(&runtime, ws.path());
    let result = call(&task, "search_files", json!({ "path": "long", "regex": "needle" }));
    let body = text(&result);
    // Cline's 0.25 MB cap: the line cannot fit, so the answer is the header and Cline's truncation note.
    assert!(body.len() <= 256 * 1024, "{} bytes", body.len());
    assert!(
        body.contains("Results truncated due to exceeding the 0.25MB size limit"),
        "{}",
        &body[..body.len().min(300)]
    );
    let next = call(&task, "search_files", json!({ "path": ".", "regex": "needle here" }));
    assert!(text(&next).contains("│a needle here"), "{}", text(&next));
}

#[test]
fn every_result_is_cut_at_the_runtime_cap() {
    let ws = workspace();
    std::fs::write(ws.path().join("big.txt"), "line of text\n".repeat(1000)).unwrap();
    std::fs::write(ws.path().join("small.txt"), "tiny\n").unwrap();
    let runtime = runtime("[limits]\nmax_result_bytes = 2000\n", &["read_file", "execute_command"]);
    let task = task_in(&runtime, ws.path());
    let result = call(&task, "read_file", json!({ "path": "big.txt" }));
    let body = text(&result);
    assert_eq!(result.status, ResultStatus::Success);
    let (kept, note) = body.split_once("\n\n[Result truncated: ").expect("a note");
    assert_eq!(kept.len(), 2000);
    assert!(
        note.ends_with(
            "bytes of text were cut. Tool results are limited to 2000 bytes of text ([limits] max_result_bytes).]"
        ),
        "{note}"
    );
    assert!(text(&call(&task, "read_file", json!({ "path": "small.txt" }))).starts_with("1 | tiny\n"));

    // A shipped tool whose output has no cap of its own in one line: 50 MB of it.
    let result = call(
        &task,
        "execute_command",
        json!({ "command": "head -c 50000000 /dev/zero | tr '\\0' x", "requires_approval": false }),
    );
    let body = all_text(&result);
    assert!(body.len() < 2000 + 1024, "{} bytes", body.len());
    assert!(body.contains("([limits] max_result_bytes)"), "{}", &body[..body.len().min(500)]);
    assert!(text(&call(&task, "read_file", json!({ "path": "small.txt" }))).starts_with("1 | tiny\n"));
}
