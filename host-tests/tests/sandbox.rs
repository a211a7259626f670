//! execute_command inside the kernel sandbox (`[commands] sandbox`, `network`): writes outside the workspace
//! fail with the kernel's error by every route, `network = false` stops a connection to 127.0.0.1, a kernel
//! that cannot enforce the sandbox refuses the command, and `auto_approve_sandboxed` approves only sandboxed
//! commands.

use crate::util::*;
use serde_json::json;
use std::net::TcpListener;
use std::path::Path;
use toolshed::config::{Config, SandboxMode};
use toolshed::{ResultStatus, Runtime};

/// A directory outside `/tmp` and `TMPDIR` (which sandboxed commands may write), so only the workspace rule
/// can let a write in. Every one is made in the same parent (a test reaches one from another by `..`).
fn scratch(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(prefix).tempdir_in(scratch_root()).expect("tempdir")
}

/// The target's temporary directory, unless it lies under `/tmp` or `TMPDIR` (a checkout under `/tmp`, as a
/// CI clone may be); then `/var/tmp` or `/dev/shm`, which the sandbox does not open.
fn scratch_root() -> std::path::PathBuf {
    let open = [Path::new("/tmp").to_path_buf(), std::env::temp_dir()].map(|dir| dir.canonicalize().unwrap_or(dir));
    [env!("CARGO_TARGET_TMPDIR"), "/var/tmp", "/dev/shm"]
        .into_iter()
        .filter_map(|dir| Path::new(dir).canonicalize().ok())
        .find(|dir| !open.iter().any(|writable| dir.starts_with(writable)))
        .expect("a directory outside /tmp and TMPDIR for the sandbox tests (/var/tmp or /dev/shm)")
}

fn sandboxed(mode: SandboxMode, network: bool, edit: impl FnOnce(&mut Config)) -> Runtime {
    let mut config = Config::default();
    config.commands.sandbox = mode;
    config.commands.network = network;
    edit(&mut config);
    shipped().yes(true).config(config).build().unwrap()
}

/// Runs `command` in `ws` and returns the result's status and text.
fn run_in(runtime: &Runtime, ws: &Path, command: &str) -> (ResultStatus, String) {
    let result =
        call(&task_in(runtime, ws), "execute_command", json!({"command": command, "requires_approval": false}));
    (result.status, text(&result))
}

#[test]
fn writing_outside_the_workspace_fails_with_the_kernels_error_while_writing_inside_works() {
    let rt = sandboxed(SandboxMode::WorkspaceWrite, true, |_| {});
    let ws = scratch("ws-");
    let outside = scratch("outside-");
    let o = outside.path().display().to_string();
    std::fs::write(outside.path().join("keep"), "precious\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("link")).unwrap();

    let (status, out) = run_in(&rt, ws.path(), "echo in > inside.txt && mkdir d && mv inside.txt d/ && echo wrote");
    assert_eq!(
        (status, out.as_str()),
        (ResultStatus::Success, "Command executed successfully (exit code 0).\nOutput:\nwrote")
    );
    assert_eq!(std::fs::read_to_string(ws.path().join("d/inside.txt")).unwrap(), "in\n");

    let outside_name = outside.path().file_name().unwrap().to_str().unwrap();
    let attempts = [
        format!("echo x > {o}/new"),
        // Through a symbolic link inside the workspace, `..`, and a `cd` out of it.
        "echo x > link/new".to_owned(),
        format!("echo x > ../{outside_name}/new"),
        format!("cd {o} && echo x > new"),
        // Reopening a descriptor for reading as one for writing, through /proc.
        format!("exec 3< {o}/keep; echo x > /proc/self/fd/3"),
        format!("truncate -s 0 {o}/keep"),
        format!("rm {o}/keep"),
        format!("mv {o}/keep stolen"),
        format!("ln {o}/keep hardlink"),
        format!("mkdir {o}/dir"),
        // A background process, started in its own session, is confined too.
        format!("setsid sh -c 'echo x > {o}/new' & wait $!"),
    ];
    for command in &attempts {
        let (status, out) = run_in(&rt, ws.path(), command);
        assert_eq!(status, ResultStatus::Success, "{command}: {out}");
        assert!(out.starts_with("Command failed with exit code"), "{command} was not refused: {out}");
        let denied = ["Permission denied", "Operation not permitted", "Invalid cross-device link"];
        assert!(denied.iter().any(|d| out.contains(d)), "{command} failed for another reason: {out}");
    }
    assert_eq!(std::fs::read_to_string(outside.path().join("keep")).unwrap(), "precious\n");
    let left: Vec<_> = std::fs::read_dir(outside.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["keep"]);
    assert!(!ws.path().join("stolen").exists() && !ws.path().join("hardlink").exists());

    // The null device and /tmp stay writable, or ordinary commands break.
    let (_, out) = run_in(&rt, ws.path(), "echo x > /dev/null && t=$(mktemp) && rm $t && echo fine");
    assert!(out.ends_with("\nfine"), "{out}");

    // `read-only` writes nowhere, the workspace included.
    let rt = sandboxed(SandboxMode::ReadOnly, true, |_| {});
    let (_, out) = run_in(&rt, ws.path(), "cat d/inside.txt; echo x > inside2.txt");
    assert!(out.contains("in\n") && out.contains("Permission denied"), "{out}");
    assert!(!ws.path().join("inside2.txt").exists());
}

#[test]
fn network_false_blocks_a_connection_to_a_server_on_127_0_0_1() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected'");
    let ws = scratch("ws-");

    // The same command reaches the server when the network is allowed.
    let (_, out) = run_in(&sandboxed(SandboxMode::WorkspaceWrite, true, |_| {}), ws.path(), &connect);
    assert!(out.ends_with("\nconnected"), "{out}");
    assert!(listener.accept().is_ok());

    for mode in [SandboxMode::Off, SandboxMode::WorkspaceWrite] {
        let rt = sandboxed(mode, false, |_| {});
        let (_, out) = run_in(&rt, ws.path(), &connect);
        assert!(out.starts_with("Command failed with exit code"), "{mode:?}: {out}");
        assert!(out.contains("Operation not permitted") || out.contains("Permission denied"), "{mode:?}: {out}");
        let refused = listener.accept();
        assert!(refused.is_err(), "{mode:?}: the server was reached");
        // Unix sockets and pipes still work.
        let (_, out) =
            run_in(&rt, ws.path(), "echo piped | cat && python3 -c 'import socket; socket.socketpair()' && echo unix");
        assert!(out.ends_with("piped\nunix"), "{mode:?}: {out}");
    }
}

#[test]
fn a_kernel_without_landlock_refuses_the_command_instead_of_running_it() {
    let ws = scratch("ws-");
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        let rt = sandboxed(mode, true, |c| c.commands.sandbox_assume_unsupported = true);
        let (status, out) = run_in(&rt, ws.path(), "touch ran");
        assert_eq!(status, ResultStatus::Error, "{out}");
        assert!(out.contains("the command was not run"), "{out}");
        assert!(out.contains("sandbox_assume_unsupported"), "{out}");
        assert!(!ws.path().join("ran").exists());
    }
}

#[test]
fn auto_approve_sandboxed_runs_sandboxed_commands_without_asking_and_nothing_else() {
    // No approver and no `--yes`: every question is answered no.
    let build = |mode: SandboxMode, rule: bool| {
        let mut config = Config::default();
        config.commands.sandbox = mode;
        config.approval.auto_approve_sandboxed = rule;
        shipped().config(config).build().unwrap()
    };
    let ws = scratch("ws-");
    let run = |rt: &Runtime, requires_approval: bool| {
        call(
            &task_in(rt, ws.path()),
            "execute_command",
            json!({"command": "echo ran", "requires_approval": requires_approval}),
        )
        .status
    };
    let rt = build(SandboxMode::WorkspaceWrite, true);
    assert_eq!(run(&rt, false), ResultStatus::Success);
    assert_eq!(run(&rt, true), ResultStatus::Denied, "the model asked for approval");
    assert_eq!(run(&build(SandboxMode::Off, true), false), ResultStatus::Denied, "no sandbox");
    assert_eq!(run(&build(SandboxMode::WorkspaceWrite, false), false), ResultStatus::Denied, "off by default");
}
