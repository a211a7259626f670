//! Class 9: a call's processes, background and setsid ones included, end with the call.
//!
//! Every command writes the pids it leaves behind to a file in its workspace; each check is by pid, once
//! the call (or the `toolshed` process) has ended. A pid counts as gone only when nothing has it any more,
//! not even a zombie: whoever inherited an orphan must also have reaped it.

use crate::util::{plugins, shipped, task_in, text, toolshed_bin, workspace};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use toolshed::{Config, Runtime, TaskHandle};

/// The one generous bound for what happens after an event that has no result of its own to wait for.
const BOUND: Duration = Duration::from_secs(30);

fn config(keep_background: bool) -> Config {
    let mut config = Config::default();
    config.timeouts.kill_grace_ms = 200;
    config.commands.keep_background = keep_background;
    config
}

fn runtime(keep_background: bool) -> Runtime {
    shipped().config(config(keep_background)).yes(true).build().unwrap()
}

fn run(task: &TaskHandle, command: &str) -> String {
    text(&crate::util::call(
        task,
        "execute_command",
        serde_json::json!({"command": command, "requires_approval": false}),
    ))
}

fn gone(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err()
}

fn pids(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("pids"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// Waits for `n` pids in the workspace's file.
fn wait_for_pids(dir: &Path, n: usize) -> Vec<i32> {
    let deadline = Instant::now() + BOUND;
    loop {
        let found = pids(dir);
        if found.len() >= n {
            return found;
        }
        assert!(Instant::now() < deadline, "the command wrote {found:?}, not {n} pids");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_gone(pids: &[i32], what: &str) {
    let deadline = Instant::now() + BOUND;
    while let Some(pid) = pids.iter().copied().find(|p| !gone(*p)) {
        assert!(Instant::now() < deadline, "{what}: {pid} survived");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Ways a command leaves processes behind, each writing their pids to `pids` (and waiting until they have).
const ESCAPES: &[(&str, &str, usize)] = &[
    ("background", "sleep 1000 & echo $! >> pids", 1),
    ("nohup", "nohup sleep 1000 >/dev/null 2>&1 & echo $! >> pids", 1),
    ("disown", "sleep 1000 & echo $! >> pids; disown", 1),
    ("setsid", "setsid sleep 1000 & echo $! >> pids", 1),
    ("setsid -f", "setsid -f sh -c 'echo $$ >> pids; exec sleep 1000'; until [ -s pids ]; do sleep 0.05; done", 1),
    ("double fork", "( ( sleep 1000 & echo $! >> pids ) & ); until [ -s pids ]; do sleep 0.05; done", 1),
    (
        "double fork into a new session with a child of its own",
        "( ( setsid sh -c 'sleep 1000 & echo $! >> pids; sleep 1000' & echo $! >> pids ) & ); \
         until [ $(wc -l < pids) -ge 2 ]; do sleep 0.05; done",
        2,
    ),
    ("a job that ignores SIGTERM", "( trap '' TERM; exec sleep 1000 ) & echo $! >> pids", 1),
    ("a nested shell's background job", "bash -c 'sleep 1000 & echo $! >> pids'", 1),
    ("setpgid through job control", "set -m; sleep 1000 & echo $! >> pids", 1),
    (
        // Drops the marker and leaves group and session: known because the runtime saw it in the tree while
        // the command still ran.
        "an orphan with neither marker, group nor session",
        "( ( env -i setsid sleep 1000 & echo $! >> pids ) & ); sleep 1",
        1,
    ),
];

#[test]
fn a_process_that_keeps_forking_a_copy_of_itself_ends_with_the_command() {
    // Each generation is born after the last look at the tree and after its parent died; it is known by the
    // session the first one made. Without the marker, and after the shell itself has exited.
    let runtime = runtime(false);
    for hop in ["0.5", "0.2"] {
        let ws = workspace();
        let task = task_in(&runtime, ws.path());
        let script = format!("#!/bin/bash\necho $$ >> hops\nsleep {hop}\n\"$0\" &\n");
        std::fs::write(ws.path().join("hop.sh"), script).unwrap();
        let out = run(&task, "chmod +x hop.sh; env -i setsid ./hop.sh & sleep 1.5");
        assert!(out.contains("Command executed successfully"), "{out}");
        let read = || -> Vec<i32> {
            std::fs::read_to_string(ws.path().join("hops"))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect()
        };
        let born = read();
        assert!(born.len() > 1, "the hopper hopped: {born:?}");
        // Long enough for several more generations, had one survived.
        std::thread::sleep(Duration::from_millis(600));
        let later = read();
        assert_eq!(later.len(), born.len(), "hop {hop}: the hopper lived on: {later:?}");
        wait_gone(&later, "hopper");
    }
}

#[test]
fn background_nohup_setsid_double_fork_and_disown_end_when_the_command_returns() {
    let runtime = runtime(false);
    for (name, command, n) in ESCAPES {
        let ws = workspace();
        let task = task_in(&runtime, ws.path());
        let out = run(&task, command);
        assert!(out.contains("Command executed successfully"), "{name}: {out}");
        let left = pids(ws.path());
        assert_eq!(left.len(), *n, "{name}: {left:?}");
        for pid in left {
            assert!(gone(pid), "{name}: {pid} outlived the call that started it");
        }
    }
}

#[test]
fn kept_background_jobs_run_until_their_task_ends() {
    let runtime = runtime(true);
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let out = run(&task, "sleep 1000 & echo $! >> pids; setsid sleep 1000 & echo $! >> pids");
    assert!(out.contains("Command executed successfully"), "{out}");
    let kept = pids(ws.path());
    assert_eq!(kept.len(), 2);
    assert!(kept.iter().all(|pid| !gone(*pid)), "[commands] keep_background keeps them: {kept:?}");
    // A later call of the same task does not end them either.
    assert!(run(&task, "true").contains("exit code 0"));
    assert!(kept.iter().all(|pid| !gone(*pid)));
    drop(task);
    wait_gone(&kept, "the task ended");

    // And a runtime that goes takes its tasks' kept jobs with it, before its drop returns.
    let other = workspace();
    let task = task_in(&runtime, other.path());
    run(&task, "( ( setsid sleep 1000 & echo $! >> pids ) & ); until [ -s pids ]; do sleep 0.05; done");
    let kept = pids(other.path());
    assert!(kept.iter().all(|pid| !gone(*pid)));
    drop(runtime);
    assert!(kept.iter().all(|pid| gone(*pid)), "the runtime's drop left {kept:?}");
    drop(task);
}

#[test]
fn the_timeout_kill_takes_setsid_and_double_forked_processes() {
    let runtime = runtime(false);
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let command = "setsid sleep 1000 & echo $! >> pids; ( ( sleep 1000 & echo $! >> pids ) & ); \
                   ( trap '' TERM; exec sleep 1000 ) & echo $! >> pids; sleep 1000";
    let out = text(&crate::util::call(
        &task,
        "execute_command",
        serde_json::json!({"command": command, "requires_approval": false, "timeout": 1}),
    ));
    assert!(out.contains("timed out"), "{out}");
    let left = pids(ws.path());
    assert_eq!(left.len(), 3, "{left:?}");
    for pid in left {
        assert!(gone(pid), "{pid} survived the timeout kill");
    }
}

#[test]
fn cancelling_the_task_kills_its_commands_trees() {
    let runtime = runtime(false);
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let dir = ws.path().to_owned();
    let canceller = task.clone();
    let watcher = std::thread::spawn(move || {
        let found = wait_for_pids(&dir, 2);
        canceller.cancel();
        found
    });
    let out =
        run(&task, "setsid sleep 1000 & echo $! >> pids; ( ( sleep 1000 & echo $! >> pids ) & ); wait; sleep 1000");
    let found = watcher.join().unwrap();
    assert!(out.contains("cancel"), "{out}");
    wait_gone(&found, "the task was cancelled");
}

fn toolshed_cli(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(toolshed_bin());
    command
        .arg("--plugins")
        .arg(plugins())
        .arg("--cwd")
        .arg(dir)
        .args(args)
        .env("HOME", dir)
        .env("TOOLSHED_TIMEOUTS_KILL_GRACE_MS", "200")
        .env_remove("TOOLSHED_PLUGINS")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

const LINGERING: &str = "setsid sleep 1000 & echo $! >> pids; ( ( sleep 1000 & echo $! >> pids ) & ); \
                         nohup sleep 1000 >/dev/null 2>&1 & echo $! >> pids; sleep 1000";

#[test]
fn sigterm_and_sigint_to_toolshed_call_kill_what_it_started() {
    use nix::sys::signal::Signal;
    for (signal, code) in [(Signal::SIGTERM, 143), (Signal::SIGINT, 130), (Signal::SIGHUP, 129)] {
        let ws = workspace();
        let input = serde_json::json!({"command": LINGERING, "requires_approval": false}).to_string();
        let mut child = toolshed_cli(ws.path(), &["call", "--yes", "execute_command", &input]).spawn().unwrap();
        let found = wait_for_pids(ws.path(), 3);
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "{signal}");
        for pid in found {
            assert!(gone(pid), "{signal} to toolshed call left {pid} running");
        }
    }
}

#[test]
fn sigterm_to_toolshed_serve_mid_call_kills_what_it_started() {
    use nix::sys::signal::Signal;
    for signal in [Signal::SIGTERM, Signal::SIGINT] {
        let ws = workspace();
        let mut child =
            toolshed_cli(ws.path(), &["serve", "--yes"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let send = |stdin: &mut std::process::ChildStdin, message: serde_json::Value| {
            writeln!(stdin, "{message}").unwrap();
            stdin.flush().unwrap();
        };
        send(
            &mut stdin,
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        );
        let answer = stdout.next().unwrap().unwrap();
        assert!(answer.contains("toolshed"), "{answer}");
        send(&mut stdin, serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        send(
            &mut stdin,
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "execute_command", "arguments": {"command": LINGERING, "requires_approval": false}}}),
        );
        let found = wait_for_pids(ws.path(), 3);
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(128 + signal as i32), "{signal}");
        for pid in found {
            assert!(gone(pid), "{signal} to toolshed serve left {pid} running");
        }
        drop(stdin);
    }
}
