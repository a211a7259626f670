//! Class 2, descriptors: a descriptor the host holds without close-on-exec (inherited from whoever started
//! it, or leaked by a library) never reaches a command, so neither a sandboxed nor a plain command can write
//! through it; a command gets its standard three and nothing else.

use super::{cli, user_config, user_dir};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;

/// Runs `command` through a `toolshed call` that inherited, without close-on-exec, `file` open for writing
/// on descriptors 3, 7 and 200 (as a careless parent leaves them).
fn run_with_leaked(ws: &Path, home: &Path, file: &std::fs::File, command: &str) -> String {
    let input = serde_json::json!({"command": command, "requires_approval": false}).to_string();
    let mut toolshed = cli(ws, home, &["call", "--yes", "execute_command", &input]);
    let fd = file.as_raw_fd();
    // SAFETY: dup2 between fork and exec; the copies carry no close-on-exec flag.
    unsafe {
        toolshed.pre_exec(move || {
            for target in [3, 7, 200] {
                if nix::libc::dup2(fd, target) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let output = toolshed.stdout(Stdio::piped()).output().unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn leak_target(dir: &Path) -> (std::path::PathBuf, std::fs::File) {
    let path = dir.join("outside.txt");
    let file = std::fs::OpenOptions::new().create(true).truncate(true).write(true).open(&path).unwrap();
    super::give_to_user(&path);
    (path, file)
}

#[test]
fn a_command_sees_only_its_standard_descriptors() {
    let (ws, home, outside) = (user_dir(), user_dir(), user_dir());
    let (path, file) = leak_target(outside.path());
    // The shell's descriptors and a subshell's, each listed by a program it starts (a listing in the shell
    // itself would show the directory it reads, a substitution or pipe the shell's own ends of it).
    let out = run_with_leaked(
        ws.path(),
        home.path(),
        &file,
        "echo shell; ls /proc/$$/fd; echo subshell; ( ls /proc/$BASHPID/fd; true ); echo end",
    );
    let output = super::output_of(&out);
    let listed = |from: &str, to: &str| -> Vec<String> {
        let start = output.find(from).map_or(output.len(), |at| at + from.len());
        let rest = &output[start..];
        rest[..rest.find(to).unwrap_or(rest.len())].split_whitespace().map(str::to_owned).collect()
    };
    assert_eq!(listed("shell\n", "subshell"), ["0", "1", "2"], "{out}");
    assert_eq!(listed("subshell\n", "end"), ["0", "1", "2"], "{out}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
}

#[test]
fn a_leaked_descriptor_cannot_be_written_from_any_sandbox() {
    let (ws, home, outside) = (user_dir(), user_dir(), user_dir());
    let (path, file) = leak_target(outside.path());
    let attempts = "for fd in 3 7 200; do echo pwned >&$fd && echo wrote-$fd; done; \
                    exec 9>/proc/self/fd/7 && echo reopened; true";
    for sandbox in ["off", "workspace-write", "read-only"] {
        user_config(home.path(), &format!("[commands]\nsandbox = \"{sandbox}\"\n"));
        let out = run_with_leaked(ws.path(), home.path(), &file, attempts);
        assert!(out.contains("Command executed successfully"), "{sandbox}: {out}");
        let output = super::output_of(&out);
        assert!(output.contains("Bad file descriptor"), "{sandbox}: {out}");
        assert!(!output.contains("wrote-") && !output.contains("reopened"), "{sandbox}: {out}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "", "{sandbox}: written through a leaked descriptor");
    }
}

#[test]
fn a_hook_gets_only_its_pipes() {
    let (ws, home, outside) = (user_dir(), user_dir(), user_dir());
    let (path, file) = leak_target(outside.path());
    let report = ws.path().join("hook-fds");
    user_config(
        home.path(),
        &format!(
            "[[hooks.pre_tool_use]]\ncommand = \"sh -c 'ls /proc/$PPID/fd > {}'; echo pwned >&7; exit 0\"\n",
            report.display()
        ),
    );
    let out = run_with_leaked(ws.path(), home.path(), &file, "echo ran");
    assert!(out.contains("ran"), "{out}");
    // Its stdin, stdout and stderr are the pipes the runtime talks to it through. (Listed from a shell it
    // starts: a redirection in the hook's own shell would show the copy the shell keeps of its stdout.)
    let fds: Vec<String> = std::fs::read_to_string(&report).unwrap_or_default().lines().map(str::to_owned).collect();
    assert_eq!(fds, ["0", "1", "2"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
}
