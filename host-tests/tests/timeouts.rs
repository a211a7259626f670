//! Timeouts and cancellation: an immediate reply, abandoned threads counted until they return, quarantine.

use crate::util::*;
use serde_json::json;
use std::time::{Duration, Instant};
use toolshed::{Config, ResultStatus, Runtime};

fn config(call_ms: u64, max_abandoned: u32) -> Config {
    let mut config = Config::default();
    config.timeouts.call_ms = call_ms;
    config.plugins.max_abandoned = max_abandoned;
    config
}

fn abandoned(runtime: &Runtime) -> usize {
    runtime.tools().into_iter().find(|t| t.name == "sleep").map(|t| t.abandoned).unwrap()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_timeout_replies_at_once_and_counts_the_thread_until_it_returns() {
    let runtime = Runtime::builder().plugin_file(fixture("fixture_tools")).config(config(200, 4)).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let result = call(&task, "sleep", json!({"ms": 1500}));
    assert_eq!(result.status, ResultStatus::Error);
    assert!(text(&result).contains("did not finish within 200 ms"), "{}", text(&result));
    // The reply came back while the plugin still sleeps: the thread is counted as abandoned.
    assert_eq!(abandoned(&runtime), 1);
    wait_until("the sleep returns", || abandoned(&runtime) == 0);
    // A call within the timeout works normally.
    assert!(text(&call(&task, "sleep", json!({"ms": 1}))).starts_with("slept 1 ms; cancelled=false; service=served"));
}

#[test]
fn too_many_abandoned_calls_quarantine_the_tool_until_they_return() {
    let runtime = Runtime::builder().plugin_file(fixture("fixture_tools")).config(config(100, 2)).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    for _ in 0..2 {
        assert!(text(&call(&task, "sleep", json!({"ms": 1500}))).contains("did not finish within 100 ms"));
    }
    let tool = runtime.tools().into_iter().find(|t| t.name == "sleep").unwrap();
    assert!(tool.quarantined && tool.abandoned == 2, "{tool:?}");
    let refused = call(&task, "sleep", json!({"ms": 1}));
    assert!(
        text(&refused).contains("the tool is quarantined because 2 earlier calls are still running"),
        "{}",
        text(&refused)
    );
    // Other tools are unaffected.
    assert_eq!(text(&call(&task, "noop_pooled", json!({}))), "ok");
    wait_until("the quarantine lifts", || !runtime.tools().into_iter().any(|t| t.name == "sleep" && t.quarantined));
    assert!(text(&call(&task, "sleep", json!({"ms": 1}))).starts_with("slept 1 ms"));
}

#[test]
fn a_call_whose_future_the_host_drops_is_still_counted_as_abandoned_until_its_thread_returns() {
    let mut config = config(60_000, 4);
    config.timeouts.cancel_grace_ms = 50;
    let runtime = Runtime::builder().plugin_file(fixture("fixture_tools")).config(config).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    // A host's own timeout around the call drops its future while the plugin, which ignores cancellation,
    // still sleeps.
    let dropped = block_on(async {
        let call = task.execute(toolshed::ToolUse::new("t1", "sleep", json!({"ms": 1500})));
        tokio::time::timeout(Duration::from_millis(100), call).await.is_err()
    });
    assert!(dropped, "the call finished before the host gave up on it");
    wait_until("the dropped call is counted as abandoned", || abandoned(&runtime) == 1);
    wait_until("the sleep returns", || abandoned(&runtime) == 0);
}

#[test]
fn cancelling_a_task_replies_at_once_and_services_refuse_afterwards() {
    let runtime = Runtime::builder().plugin_file(fixture("fixture_tools")).config(config(60_000, 4)).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let canceller = task.clone();
    let handle = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        canceller.cancel();
    });
    let result = call(&task, "sleep", json!({"ms": 1500}));
    handle.join().unwrap();
    assert!(text(&result).contains("Error executing sleep: the task was cancelled."), "{}", text(&result));
    assert_eq!(abandoned(&runtime), 1);
    wait_until("the sleep returns", || abandoned(&runtime) == 0);
}

#[test]
fn dropping_a_runtime_with_a_call_in_flight_is_bounded() {
    let mut config = config(60_000, 4);
    config.timeouts.shutdown_ms = 200;
    let runtime = Runtime::builder().plugin_file(fixture("fixture_tools")).config(config).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let caller = std::thread::spawn(move || call(&task, "sleep", json!({"ms": 3000})));
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    drop(runtime);
    assert!(started.elapsed() < Duration::from_secs(2), "drop took {:?}", started.elapsed());
    // The caller is answered rather than left hanging: the actor stopped.
    let result = caller.join().unwrap();
    assert_eq!(result.status, ResultStatus::Error);
}

/// The priority a bulk tool's calls run at, as the fixture's `bulk_probe` reports it, under `priority`.
fn bulk_probe(priority: &str) -> String {
    let mut config = Config::default();
    config.plugins.bulk_priority = toml::Value::from(priority).try_into().unwrap();
    let runtime = Runtime::builder().plugin_file(fixture("fixture_tools")).config(config).yes(true).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    text(&call(&task, "bulk_probe", json!({})))
}

#[test]
fn bulk_tools_and_the_threads_they_start_run_at_the_configured_priority() {
    // SAFETY: a plain query about this thread: the priority a normal worker would have.
    let own = unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
    // `low`: nice 19 under the normal policy (0), inherited by a thread the call starts.
    assert_eq!(bulk_probe("low"), "nice=19 policy=0; spawned nice=19 policy=0");
    assert_eq!(
        bulk_probe("idle"),
        format!("nice={own} policy={}; spawned nice={own} policy={}", libc::SCHED_IDLE, libc::SCHED_IDLE)
    );
    assert_eq!(bulk_probe("normal"), format!("nice={own} policy=0; spawned nice={own} policy=0"));
}

/// The prepare timeout bounds `prepare` only: once `execute` began (in the same job), the call timeout runs
/// from its start, whether it is longer or shorter than the prepare timeout.
#[test]
fn execute_is_bounded_by_the_call_timeout_from_its_start_not_by_the_prepare_timeout() {
    let mut longer = config(5_000, 4);
    longer.timeouts.prepare_ms = 100;
    let runtime = Runtime::builder().plugin_file(fixture("fixture_tools")).config(longer).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let result = call(&task, "sleep", json!({"ms": 400}));
    assert_eq!(result.status, ResultStatus::Success, "{}", text(&result));

    let mut shorter = config(150, 4);
    shorter.timeouts.prepare_ms = 60_000;
    let runtime = Runtime::builder().plugin_file(fixture("fixture_tools")).config(shorter).build().unwrap();
    let task = task_in(&runtime, ws.path());
    let started = Instant::now();
    let result = call(&task, "sleep", json!({"ms": 3_000}));
    assert!(text(&result).contains("did not finish within 150 ms"), "{}", text(&result));
    assert!(
        started.elapsed() < Duration::from_millis(2_500),
        "the call timeout was not applied: {:?}",
        started.elapsed()
    );
}
