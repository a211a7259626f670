//! Breaks found by red-teaming issue 22's fixes through real plugins, each kept as the test that failed.
//!
//! list_code_definition_names: a source whose parse is one error node of a few hundred thousand `(` makes
//! tree-sitter's query scan every later sibling for each token (quadratic: hours for a megabyte). The call
//! timed out, but its thread ran on, so every such call left a core burning and, after `[plugins]
//! max_abandoned` of them, the tool was quarantined for the session. The parse and the query now stop when
//! their call is cancelled, which the call's timeout does.

use crate::util::*;
use serde_json::json;
use std::time::{Duration, Instant};
use toolshed::{Config, ResultStatus, Runtime};

/// How long an abandoned call's thread may take to notice its cancellation: generous, the machine is shared.
const THREAD_RETURNS_WITHIN: Duration = Duration::from_secs(120);

fn abandoned(runtime: &Runtime, tool: &str) -> (usize, bool) {
    let info = runtime.tools().into_iter().find(|info| info.name == tool).expect("the tool is loaded");
    (info.abandoned, info.quarantined)
}

/// Waits until no call of `tool` is left running after being abandoned.
fn wait_for_abandoned_calls(runtime: &Runtime, tool: &str) {
    let start = Instant::now();
    while abandoned(runtime, tool).0 > 0 {
        assert!(
            start.elapsed() < THREAD_RETURNS_WITHIN,
            "an abandoned {tool} call still runs {THREAD_RETURNS_WITHIN:?} after its timeout: {:?}",
            abandoned(runtime, tool)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_outline_past_its_timeout_stops_instead_of_running_on() {
    const TOOL: &str = "list_code_definition_names";
    let config = Config::from_toml_str("[timeouts]\ncall_ms = 1000\n\n[plugins]\nmax_abandoned = 2\n").unwrap();
    let runtime = Runtime::builder().config(config).yes(true).plugin_file(plugins().join(lib(TOOL))).build().unwrap();
    assert!(runtime.load_errors().is_empty(), "{:?}", runtime.load_errors());
    let ws = workspace();
    std::fs::create_dir(ws.path().join("hostile")).unwrap();
    // 300 KB: far past a second of querying in any build.
    std::fs::write(ws.path().join("hostile/parens.js"), "(".repeat(300_000)).unwrap();
    std::fs::create_dir(ws.path().join("plain")).unwrap();
    std::fs::write(ws.path().join("plain/a.js"), "function hello() { return 1 }\n").unwrap();
    let task = task_in(&runtime, ws.path());
    // More hostile calls than max_abandoned: without the fix the third is refused (quarantined).
    for round in 0..4 {
        let result = call(&task, TOOL, json!({ "path": "hostile" }));
        assert_eq!(result.status, ResultStatus::Error, "round {round}: {}", text(&result));
        assert!(text(&result).contains("did not finish within 1000 ms"), "round {round}: {}", text(&result));
        wait_for_abandoned_calls(&runtime, TOOL);
    }
    assert_eq!(abandoned(&runtime, TOOL), (0, false));
    let result = call(&task, TOOL, json!({ "path": "plain" }));
    assert_eq!(result.status, ResultStatus::Success, "{}", text(&result));
    assert!(text(&result).contains("│function hello() { return 1 }"), "{}", text(&result));
}
