//! execute_command with real processes: exit codes, signals, timeouts that kill the group, output limits,
//! streaming events, parallel commands, cancellation, and bad input.

use crate::util::*;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolshed::{ResultStatus, Runtime, UiEvent};

fn runtime() -> Runtime {
    shipped().yes(true).build().unwrap()
}

fn run(runtime: &Runtime, command: &str) -> String {
    let ws = workspace();
    let result =
        call(&task_in(runtime, ws.path()), "execute_command", json!({"command": command, "requires_approval": false}));
    assert_eq!(result.status, ResultStatus::Success, "{}", text(&result));
    text(&result)
}

#[test]
fn exit_codes_signals_and_interleaved_output() {
    let rt = runtime();
    assert_eq!(run(&rt, "echo hello"), "Command executed successfully (exit code 0).\nOutput:\nhello");
    assert_eq!(run(&rt, "true"), "Command executed successfully (exit code 0).");
    assert_eq!(
        run(&rt, "echo out; echo err >&2; echo out2; exit 3"),
        "Command failed with exit code 3.\nOutput:\nout\nerr\nout2"
    );
    assert_eq!(run(&rt, "kill -TERM $$"), "Command terminated by signal SIGTERM.");
    let missing = run(&rt, "definitely-not-a-command-xyz");
    assert!(missing.starts_with("Command failed with exit code 127.\nOutput:\n"), "{missing}");
    assert!(missing.contains("not found"), "{missing}");
}

#[test]
fn a_timeout_kills_the_group_grandchildren_included() {
    let rt = runtime();
    let ws = workspace();
    let pid_file = ws.path().join("grandchild.pid");
    let command = format!("sleep 60 & echo $! > {}; echo started; wait", pid_file.display());
    let started = Instant::now();
    let result = call(
        &task_in(&rt, ws.path()),
        "execute_command",
        json!({"command": command, "requires_approval": false, "timeout": 1}),
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(text(&result), "Command execution timed out after 1 seconds. \nOutput so far:\nstarted");
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if state.is_empty() || state.contains(") Z ") {
            break;
        }
        assert!(Instant::now() < deadline, "grandchild {pid} still alive: {state}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn long_output_is_cut_with_head_tail_and_a_log_holding_everything() {
    let rt = runtime();
    let out = run(&rt, "seq 1 200000");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "Command executed successfully (exit code 0).");
    assert_eq!(lines[1], "Output:");
    assert_eq!(lines[2], "1");
    assert_eq!(lines[101], "100");
    // Cline's marker (CommandOrchestrator.ts: `\n... (N lines written to P) ...\n` as one of the joined lines)
    // stands between two blank lines.
    let log = lines[205].strip_prefix("Full output saved to: ").unwrap();
    assert_eq!(lines[102..106], ["", &format!("... (199800 lines written to {log}) ..."), "", "199901"]);
    assert_eq!(lines[204], "200000");
    let expect: String = (1..=200_000).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(log).unwrap(), expect);
    std::fs::remove_file(log).unwrap();

    let mid = run(&rt, "seq 1 700");
    assert!(mid.contains("\n250\n... (output truncated) ...\n451\n"), "{mid}");
    assert!(mid.ends_with("\n700"));
}

#[test]
fn output_streams_to_the_host_before_the_command_ends() {
    let events: Arc<Mutex<Vec<(Instant, UiEvent)>>> = Arc::default();
    let sink = Arc::clone(&events);
    let rt =
        shipped().yes(true).on_event(move |e| sink.lock().unwrap().push((Instant::now(), e.clone()))).build().unwrap();
    let ws = workspace();
    let result = call(
        &task_in(&rt, ws.path()),
        "execute_command",
        json!({"command": "echo first; sleep 1; echo second", "requires_approval": "false"}),
    );
    let finished = Instant::now();
    assert_eq!(text(&result), "Command executed successfully (exit code 0).\nOutput:\nfirst\nsecond");
    let events = events.lock().unwrap();
    let outputs: Vec<&(Instant, UiEvent)> = events.iter().filter(|(_, e)| e.kind == "command_output").collect();
    assert_eq!(outputs.first().map(|(_, e)| e.text.as_str()), Some("first\n"));
    // The first line reached the host while the command was still sleeping.
    assert!(finished.duration_since(outputs[0].0) >= Duration::from_millis(500), "events: {events:?}");
}

#[test]
fn eight_commands_in_parallel() {
    let rt = Arc::new(runtime());
    // Collected so all eight threads start before the first is joined.
    #[allow(clippy::needless_collect)]
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let rt = Arc::clone(&rt);
            std::thread::spawn(move || run(&rt, &format!("sleep 0.3; echo {i}")))
        })
        .collect();
    for (i, handle) in handles.into_iter().enumerate() {
        assert_eq!(handle.join().unwrap(), format!("Command executed successfully (exit code 0).\nOutput:\n{i}"));
    }
}

#[test]
fn cancelling_the_task_kills_the_command_and_keeps_its_output() {
    let rt = runtime();
    let ws = workspace();
    let task = task_in(&rt, ws.path());
    let canceller = task.clone();
    let handle = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        canceller.cancel();
    });
    let result =
        call(&task, "execute_command", json!({"command": "echo partial; sleep 60", "requires_approval": false}));
    handle.join().unwrap();
    assert_eq!(text(&result), "Command was cancelled by the user.\nOutput captured before cancellation:\npartial");
}

#[test]
fn bad_input_gets_clear_results() {
    let rt = runtime();
    let ws = workspace();
    let task = task_in(&rt, ws.path());
    let empty = call(&task, "execute_command", json!({"command": "  ", "requires_approval": false}));
    assert!(text(&empty).contains("The 'command' parameter was empty."), "{}", text(&empty));
    let no_flag = call(&task, "execute_command", json!({"command": "ls"}));
    assert!(text(&no_flag).contains("Missing value for required parameter 'requires_approval'"));
    // Invalid UTF-8 in bulk: replaced, spilled to a log, never a crash.
    let flood = run(&rt, "head -c 3000000 /dev/urandom");
    assert!(flood.starts_with("Command executed successfully (exit code 0).\nOutput:\n"));
    assert!(flood.contains("Full output saved to: "));
    assert!(flood.len() < 2 * 1024 * 1024, "{} bytes", flood.len());
}

#[test]
fn without_approval_commands_are_denied_and_nothing_runs() {
    let rt = shipped().build().unwrap();
    let ws = workspace();
    let marker = ws.path().join("ran");
    let result = call(
        &task_in(&rt, ws.path()),
        "execute_command",
        json!({"command": format!("touch {}", marker.display()), "requires_approval": false}),
    );
    assert_eq!(result.status, ResultStatus::Denied);
    assert!(!marker.exists());
}

#[test]
fn command_permissions_from_the_config_refuse_before_anyone_is_asked() {
    let mut config = toolshed::Config::default();
    config.commands.permissions = Some(r#"{"allow": ["echo *", "ls *"], "deny": ["rm *"]}"#.to_owned());
    let rt = shipped().yes(true).config(config).build().unwrap();
    let ws = workspace();
    std::fs::write(ws.path().join("keep.txt"), "x").unwrap();
    let task = task_in(&rt, ws.path());
    let denied = call(&task, "execute_command", json!({"command": "ls -a && rm keep.txt", "requires_approval": true}));
    // Cline's two templates nest, hence its double period.
    assert_eq!(
        text(&denied),
        "The tool execution failed with the following error:\n<error>\nCommand execution blocked by CLINE_COMMAND_PERMISSIONS: Command \"ls -a && rm keep.txt\" was denied by CLINE_COMMAND_PERMISSIONS. Segment \"rm keep.txt\" segment_denied.. You must try a different approach or ask the user to update the permission settings.\n</error>"
    );
    assert!(ws.path().join("keep.txt").exists());
    let unparsable =
        call(&task, "execute_command", json!({"command": "echo 'unterminated", "requires_approval": false}));
    assert!(text(&unparsable).contains("parse_error"), "{}", text(&unparsable));
    assert_eq!(run_in(&task, "echo allowed"), "Command executed successfully (exit code 0).\nOutput:\nallowed");
}

fn run_in(task: &toolshed::TaskHandle, command: &str) -> String {
    text(&call(task, "execute_command", json!({"command": command, "requires_approval": false})))
}

#[test]
fn commands_still_running_when_the_runtime_goes_are_killed() {
    let rt = runtime();
    let ws = workspace();
    let pid_file = ws.path().join("pid");
    let task = task_in(&rt, ws.path());
    let command = format!("echo $$ > {}; sleep 60", pid_file.display());
    let caller = std::thread::spawn(move || {
        call(&task, "execute_command", json!({"command": command, "requires_approval": false}))
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&pid_file).map_or(true, |s| s.trim().is_empty()) {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    drop(rt);
    assert_eq!(caller.join().unwrap().status, ResultStatus::Error);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if state.is_empty() || state.contains(") Z ") {
            break;
        }
        assert!(Instant::now() < deadline, "the shell {pid} outlived the runtime: {state}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
