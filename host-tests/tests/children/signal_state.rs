//! Class 1, signal state: the `toolshed` CLI blocks SIGINT, SIGTERM and SIGHUP for itself and ignores SIGPIPE
//! and SIGXFSZ; none of it reaches a command, whose signals then work as in the user's own shell.

use super::{command_text, user_dir, BOUND};
use std::time::Instant;

#[test]
fn timeout_ends_its_child_when_sigterm_is_not_blocked() {
    let (ws, home) = (user_dir(), user_dir());
    // With SIGTERM blocked below `timeout`, `sleep` runs its whole 120 s and only then does `timeout` say 124.
    let started = Instant::now();
    let out = command_text(ws.path(), home.path(), "timeout 1 sleep 120; echo rc=$?", &[]);
    assert!(out.contains("rc=124"), "{out}");
    assert!(started.elapsed() < BOUND, "timeout 1 sleep 120 took {:?}: SIGTERM did not reach sleep", started.elapsed());
    // `timeout -s INT` and `-s HUP`: the other blocked stop signals.
    for signal in ["INT", "HUP"] {
        let started = Instant::now();
        let out = command_text(ws.path(), home.path(), &format!("timeout -s {signal} 1 sleep 120; echo rc=$?"), &[]);
        assert!(out.contains("rc=124"), "{signal}: {out}");
        assert!(started.elapsed() < BOUND, "timeout -s {signal} took {:?}", started.elapsed());
    }
}

#[test]
fn a_command_that_signals_itself_reports_the_signal_as_cline_does() {
    let (ws, home) = (user_dir(), user_dir());
    for signal in ["TERM", "INT", "HUP", "XFSZ", "PIPE", "USR1"] {
        let out = command_text(ws.path(), home.path(), &format!("echo before; kill -{signal} $$; echo after"), &[]);
        assert!(out.contains(&format!("Command terminated by signal SIG{signal}.")), "SIG{signal}: {out}");
        assert_eq!(super::output_of(&out).trim(), "before", "SIG{signal}: {out}");
    }
}

#[test]
fn the_mask_and_every_disposition_start_at_their_defaults() {
    let (ws, home) = (user_dir(), user_dir());
    // A program the shell starts, one started from a background job, one from a nested shell (the shell
    // itself blocks and ignores signals of its own while it runs: only what it starts shows what it was given).
    let out = command_text(
        ws.path(),
        home.path(),
        "grep -E '^Sig(Blk|Ign)' /proc/self/status; ( grep -E '^Sig(Blk|Ign)' /proc/self/status ) & wait; \
         sh -c 'grep -E \"^Sig(Blk|Ign)\" /proc/self/status'",
        &[],
    );
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("Sig")).collect();
    assert_eq!(lines.len(), 6, "{out}");
    for line in lines {
        assert!(line.ends_with("0000000000000000"), "not clean: {line}\n{out}");
    }
    // A file-size limit ends a writer with SIGXFSZ, as in the user's shell (the CLI ignores it for itself).
    let out = command_text(ws.path(), home.path(), "ulimit -f 1; head -c 4096 /dev/zero > big; echo rc=$?", &[]);
    assert!(out.contains("rc=153"), "SIGXFSZ was not at its default (128 + 25): {out}");
    // A broken pipe ends the writer with SIGPIPE (`yes | head` ends at once instead of looping on EPIPE).
    let out = command_text(ws.path(), home.path(), "yes | head -1; echo \"rc=${PIPESTATUS[0]}\"", &[]);
    assert!(out.contains("rc=141"), "SIGPIPE was not at its default (128 + 13): {out}");
}

#[test]
fn a_trap_on_sigterm_runs_when_the_command_is_stopped() {
    let (ws, home) = (user_dir(), user_dir());
    // The command's timeout stops it with SIGTERM, then SIGKILL after the grace: the handler runs inside
    // the grace and leaves its mark.
    let command = "trap 'echo handled > term-seen; exit 3' TERM; sleep 120 & wait";
    let input = serde_json::json!({"command": command, "requires_approval": false, "timeout": 1}).to_string();
    let output = super::cli(ws.path(), home.path(), &["call", "--yes", "execute_command", &input])
        .env("TOOLSHED_TIMEOUTS_KILL_GRACE_MS", "10000")
        .output()
        .unwrap();
    assert!(output.status.code().is_some(), "{output:?}");
    let seen = std::fs::read_to_string(ws.path().join("term-seen")).unwrap_or_default();
    assert_eq!(seen, "handled\n", "the command's SIGTERM handler did not run");
}
