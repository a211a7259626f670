//! Child-process jobs (`isolate.run`): whatever a job does — overflow its stack, exhaust memory, spin, abort,
//! exit, print garbage, sleep past its time — the call ends in a tool error naming the limit, no child is
//! left, and the same runtime answers the next call. Forwarded services run in the host.

use crate::util::*;
use serde_json::json;
use toolshed::config::Config;
use toolshed::{ResultStatus, Runtime};

fn runtime(tune: impl FnOnce(&mut Config)) -> Runtime {
    let mut config = Config::default();
    config.isolation.timeout_ms = 20_000;
    tune(&mut config);
    Runtime::builder()
        .plugin_file(fixture("fixture_tools"))
        .config(config)
        .workers_per_tool(4)
        .yes(true)
        .build()
        .unwrap()
}

/// The tests here look at this process's job children, so they take turns.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Children of this process running a job of the fixture library (none may be left after a call); other
/// modules' jobs run other libraries.
fn job_children() -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some(after) = stat.rsplit_once(") ") else { continue };
        let fields: Vec<&str> = after.1.split_whitespace().collect();
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let library = std::fs::read_link(entry.path().join("fd/0")).unwrap_or_default();
        if fields.get(1) == Some(&me.as_str())
            && String::from_utf8_lossy(&cmdline).contains("__isolated-job")
            && library.to_string_lossy().contains("fixture_tools")
        {
            found.push(format!("{} {}", entry.file_name().to_string_lossy(), fields[0]));
        }
    }
    found
}

fn run_job(runtime: &Runtime, job: &str, arg: serde_json::Value) -> (ResultStatus, String) {
    let ws = workspace();
    let task = task_in(runtime, ws.path());
    let result = call(&task, "jobs", json!({ "job": job, "arg": arg }));
    (result.status, text(&result))
}

fn assert_still_serves(runtime: &Runtime) {
    let (status, body) = run_job(runtime, "echo", json!("next"));
    assert_eq!(status, ResultStatus::Success, "{body}");
    assert!(body.contains(r#""echo":"next""#), "{body}");
    assert!(job_children().is_empty(), "children left: {:?}", job_children());
}

#[test]
fn a_job_runs_in_a_child_process_and_answers() {
    let _turn = turn();
    let runtime = runtime(|_| {});
    let (status, body) = run_job(&runtime, "echo", json!({"a": [1, 2]}));
    assert_eq!(status, ResultStatus::Success, "{body}");
    assert!(body.contains(r#""echo":{"a":[1,2]}"#), "{body}");
    let pid: u32 = body.split(r#""pid":"#).nth(1).unwrap().trim_end_matches(['}', ' ']).parse().unwrap();
    assert_ne!(pid, std::process::id(), "the job ran in the host");
    // The job's own error comes back as its text.
    let (status, body) = run_job(&runtime, "error", json!(null));
    assert_eq!(status, ResultStatus::Error);
    assert!(body.contains("job: the job said no"), "{body}");
    assert_still_serves(&runtime);
}

#[test]
fn every_way_a_job_can_die_is_a_tool_error_naming_its_limit() {
    let _turn = turn();
    let runtime = runtime(|config| {
        config.isolation.memory_mb = 512;
        config.isolation.stack_mb = 4;
        config.isolation.cpu_ms = 1_000;
    });
    let cases = [
        ("recurse", json!(null), "overflowed its stack"),
        ("recurse", json!(null), "[isolation] stack_mb = 4"),
        ("allocate", json!(null), "[isolation] memory_mb = 512"),
        ("spin", json!(null), "[isolation] cpu_ms = 1000"),
        ("abort", json!(null), "crashed (SIGABRT)"),
        ("exit", json!(null), "exited with status 7"),
    ];
    for (job, arg, expected) in cases {
        let (status, body) = run_job(&runtime, job, arg);
        assert_eq!(status, ResultStatus::Error, "{job}: {body}");
        assert!(body.contains("failed: ") && body.contains(expected), "{job}: expected {expected:?} in {body}");
        assert_still_serves(&runtime);
    }
}

#[test]
fn a_job_past_its_wall_clock_limit_is_killed() {
    let _turn = turn();
    let runtime = runtime(|config| config.isolation.timeout_ms = 200);
    let (status, body) = run_job(&runtime, "sleep", json!(null));
    assert_eq!(status, ResultStatus::Error, "{body}");
    assert!(body.contains("[isolation] timeout_ms = 200"), "{body}");
    assert_still_serves(&runtime);
}

#[test]
fn a_call_timeout_kills_the_job() {
    let _turn = turn();
    let runtime = runtime(|config| config.timeouts.call_ms = 300);
    let (status, body) = run_job(&runtime, "sleep", json!(null));
    assert_eq!(status, ResultStatus::Error, "{body}");
    // The call's own timeout answered; its child goes within a moment of it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !job_children().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(job_children().is_empty(), "children left: {:?}", job_children());
}

#[test]
fn cancelling_the_task_stops_its_job_and_says_so() {
    let _turn = turn();
    // The grace is long, so the answer the model reads is the plugin's own, not the actor's.
    let runtime = runtime(|config| config.timeouts.cancel_grace_ms = 20_000);
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let caller = {
        let task = task.clone();
        std::thread::spawn(move || call(&task, "jobs", json!({ "job": "sleep" })))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while job_children().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(!job_children().is_empty(), "the job never started");
    task.cancel();
    let result = caller.join().unwrap();
    let body = text(&result);
    assert_eq!(result.status, ResultStatus::Error, "{body}");
    // The cancellation shut the job's socket; that is a cancellation, not a child that closed its pipe.
    assert!(body.contains("cancelled"), "{body}");
    assert!(!body.contains("closed its answer pipe"), "{body}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !job_children().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(job_children().is_empty(), "children left: {:?}", job_children());
}

#[test]
fn stdout_garbage_and_large_answers_do_not_break_the_frames() {
    let _turn = turn();
    let runtime = runtime(|config| config.isolation.max_output_bytes = 64 * 1024);
    let (status, body) = run_job(&runtime, "print", json!(null));
    assert_eq!(status, ResultStatus::Success, "{body}");
    assert!(body.contains("printed"), "{body}");
    let (status, body) = run_job(&runtime, "large", json!(1000));
    assert_eq!(status, ResultStatus::Success, "{body}");
    let (status, body) = run_job(&runtime, "large", json!(1_000_000));
    assert_eq!(status, ResultStatus::Error, "{body}");
    assert!(body.contains("[isolation] max_output_bytes = 65536"), "{body}");
    assert_still_serves(&runtime);
}

#[test]
fn services_a_job_calls_run_in_the_host_and_jobs_do_not_nest() {
    let _turn = turn();
    let runtime = runtime(|_| {});
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let result = call(&task, "jobs", json!({ "job": "resolve", "arg": "sub/file.txt" }));
    let body = text(&result);
    let expected = ws.path().canonicalize().unwrap().join("sub/file.txt");
    assert!(body.contains(&*expected.to_string_lossy()), "{body}");
    // Inside a job, `isolate.run` is not offered: the nested job runs in place, in the child.
    let (status, body) = run_job(&runtime, "nested", json!(null));
    assert_eq!(status, ResultStatus::Success, "{body}");
}

#[test]
fn a_child_that_closes_its_pipe_and_lingers_is_stopped_and_named() {
    let _turn = turn();
    let runtime = runtime(|config| config.isolation.timeout_ms = 300);
    let (status, body) = run_job(&runtime, "hangup", json!(null));
    assert_eq!(status, ResultStatus::Error, "{body}");
    assert!(body.contains("closed its answer pipe without answering"), "{body}");
    assert_still_serves(&runtime);
}

#[test]
fn children_beyond_max_children_wait_their_turn() {
    let _turn = turn();
    let runtime = runtime(|config| {
        config.isolation.max_children = 1;
        config.isolation.timeout_ms = 2_000;
    });
    let finished = std::sync::Mutex::new(Vec::new());
    let echo_ran = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        // The first holds the only place until its timeout.
        scope.spawn(|| {
            let (_, body) = run_job(&runtime, "sleep", json!(null));
            assert!(body.contains("[isolation] timeout_ms = 2000"), "{body}");
            finished.lock().unwrap().push("sleep");
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while job_children().is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // The second waits for it: it answers after the first, or (its own timeout passing first) names the
        // limit it waited on; on a loaded machine its timeout, which counts the wait, may also pass while its
        // own child starts, and then names that limit.
        let (status, body) = run_job(&runtime, "echo", json!(1));
        finished.lock().unwrap().push("echo");
        echo_ran.store(status == ResultStatus::Success, std::sync::atomic::Ordering::Relaxed);
        assert!(
            status == ResultStatus::Success
                || body.contains("[isolation] max_children = 1")
                || body.contains("[isolation] timeout_ms = 2000"),
            "{body}"
        );
    });
    // Only a second job that ran has an order to keep: one whose own timeout (which counts its wait) passed
    // may answer while the first's timed-out child is still being stopped.
    if echo_ran.into_inner() {
        assert_eq!(*finished.lock().unwrap(), ["sleep", "echo"]);
    }
    assert_still_serves(&runtime);
}

#[test]
fn with_isolation_off_jobs_run_in_the_host() {
    let _turn = turn();
    let runtime = runtime(|config| config.isolation.enabled = false);
    let (status, body) = run_job(&runtime, "echo", json!(1));
    assert_eq!(status, ResultStatus::Success, "{body}");
    assert!(body.contains(&format!(r#""pid":{}"#, std::process::id())), "{body}");
}
