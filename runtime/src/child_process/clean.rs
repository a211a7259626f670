//! The one door every child process of the runtime goes through — commands, hooks, MCP servers, the browser,
//! parser jobs, out-of-process plugins — so that whatever state the host is in, a child starts clean:
//!
//! - **signals**: an empty signal mask and every disposition at its default (the `toolshed` binary blocks its
//!   stop signals and ignores SIGPIPE and SIGXFSZ; an embedding host may do anything);
//! - **descriptors**: exactly its standard three and the ones it was handed, every other descriptor the host
//!   holds (inherited without close-on-exec, or leaked by a library) closed at exec;
//! - **environment**: the user's, minus the host's secrets ([`EnvRule`]), or less ([`Inherit`]);
//! - **terminal**: a session of its own, so no controlling terminal (`/dev/tty` opens nothing, `TIOCSTI` has
//!   no target) and its own process group, the one signals for its tree go to;
//! - **owner**: it dies with the host ([`super::keeper`], for its whole tree).
//!
//! The runtime's own children (`posix_spawn`ed, with no code between fork and exec) do the same to
//! themselves first thing, in [`clean_self`].

use std::ffi::{OsStr, OsString};
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The most descriptors besides the standard three a child may be handed.
const MAX_KEPT: usize = 4;

/// Which of the host's environment a child starts with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Inherit<'a> {
    /// The user's environment minus the host's secrets: commands, hooks, the browser.
    User(&'a EnvRule),
    /// Only these of the host's variables, none whose value is a shell function: MCP stdio servers, as the
    /// MCP SDK's `getDefaultEnvironment` gives them. (The runtime's own children get nothing: `env_clear`.)
    Only(&'a [&'a str]),
}

/// The one rule that keeps the host's secrets out of every child that keeps the user's environment: a
/// variable is withheld when its name starts with `TOOLSHED_` (the runtime's own namespace: its tokens and
/// its configuration), is the one `[subagents] api_key_env` names, or matches `[commands] withhold_env` (a
/// name, or a prefix ending in `*`); unless `[commands] pass_env` names it. Variables the runtime sets on a
/// child itself are never withheld.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvRule {
    withhold: Vec<String>,
    pass: Vec<String>,
}

impl Default for EnvRule {
    fn default() -> Self {
        Self::new(&[], &[], "OPENAI_API_KEY")
    }
}

impl EnvRule {
    /// The rule of a configuration.
    pub fn of(config: &crate::config::Config) -> Self {
        Self::new(&config.commands.withhold_env, &config.commands.pass_env, &config.subagents.api_key_env)
    }

    fn new(withhold: &[String], pass: &[String], api_key_env: &str) -> Self {
        let mut all = vec!["TOOLSHED_*".to_owned()];
        if !api_key_env.is_empty() {
            all.push(api_key_env.to_owned());
        }
        all.extend(withhold.iter().cloned());
        Self { withhold: all, pass: pass.to_vec() }
    }

    /// Whether a child is kept from the host's variable `name`.
    pub fn withholds(&self, name: &OsStr) -> bool {
        let Some(name) = name.to_str() else {
            // A name that is not UTF-8 matches no pattern; it passes as the user's.
            return false;
        };
        let matches = |pattern: &String| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == pattern,
        };
        self.withhold.iter().any(matches) && !self.pass.iter().any(|p| p == name)
    }
}

/// Files no confined command may read, whatever the sandbox grants: files whose content is the host's
/// authority (the serve token's file). Process-wide: a host hides its secrets once, for every runtime.
static HIDDEN: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Keeps `path` (made absolute and resolved) from every confined command started from now on.
pub fn hide(path: &std::path::Path) -> std::io::Result<()> {
    let path = std::fs::canonicalize(path)?;
    let mut hidden = HIDDEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !hidden.contains(&path) {
        hidden.push(path);
    }
    Ok(())
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn hidden() -> Vec<std::path::PathBuf> {
    HIDDEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
}

/// Makes `command` start clean: its environment as `inherit` says (variables set on `command` before this
/// call are kept whatever the rule), and, between fork and exec, the signal state, session and descriptors
/// (but `keep`, each also open in the host) set as the module says. Must be the first code `command` runs
/// between fork and exec, so anything added later (a sandbox) applies to a clean process; the command must
/// not also ask for a process group (the session is its group).
///
/// Its end with the host is the keeper's (born in its cgroup, or its group told to it), not
/// `PR_SET_PDEATHSIG`'s: Linux takes the parent to be the thread that forked, which may retire while the
/// child runs, and starting every child from one long-lived thread would cost each command two wake-ups.
/// (The runtime's own children, which are started from such a thread, set it on themselves.)
pub(crate) fn prepare(command: &mut Command, inherit: Inherit<'_>, keep: &[RawFd]) -> std::io::Result<()> {
    apply_env(command, inherit);
    let mut kept = [-1; MAX_KEPT];
    if keep.len() > MAX_KEPT {
        return Err(std::io::Error::other(format!("a child may be handed at most {MAX_KEPT} descriptors")));
    }
    kept[..keep.len()].copy_from_slice(keep);
    kept.sort_unstable();
    // Started before the child, so the host is in its cgroup (see the keeper) before the child is born there.
    super::keeper::ensure();
    // SAFETY: the closure only makes system calls on values copied in before the fork (no allocation, no
    // lock), which is what may run in the child of a multi-threaded process.
    unsafe {
        command.pre_exec(move || reset_in_child(&kept));
    }
    Ok(())
}

/// The keeper's start ([`super::keeper`]): clean as every child, with only what was set on it, but neither
/// dying with the host nor in the cgroup it ends when the host does.
pub(super) fn prepare_keeper(command: &mut Command) {
    apply_env(command, Inherit::Only(&[]));
    // SAFETY: as in `prepare`.
    unsafe {
        command.pre_exec(|| reset_in_child(&[-1; MAX_KEPT]));
    }
}

/// Sets the child's environment from the host's as `inherit` says, keeping what was set on it explicitly.
fn apply_env(command: &mut Command, inherit: Inherit<'_>) {
    let explicit: Vec<(OsString, Option<OsString>)> =
        command.get_envs().map(|(k, v)| (k.to_owned(), v.map(OsStr::to_owned))).collect();
    let is_explicit = |name: &OsStr| explicit.iter().any(|(k, _)| k == name);
    match inherit {
        Inherit::User(rule) => {
            for (name, _) in std::env::vars_os() {
                if rule.withholds(&name) && !is_explicit(&name) {
                    command.env_remove(&name);
                }
            }
        }
        Inherit::Only(names) => {
            command.env_clear();
            for name in names {
                if let Some(value) = std::env::var_os(name) {
                    // A shell function exported by bash (`() { …`) is code, not a setting.
                    if !value.as_encoded_bytes().starts_with(b"()") {
                        command.env(name, value);
                    }
                }
            }
            restore(command, &explicit);
        }
    }
}

fn restore(command: &mut Command, explicit: &[(OsString, Option<OsString>)]) {
    for (name, value) in explicit {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
}

/// In the forked child: the signal state, the session and the descriptors. Only system calls.
fn reset_in_child(keep: &[RawFd; MAX_KEPT]) -> std::io::Result<()> {
    let fail = || Err(std::io::Error::last_os_error());
    reset_signals(Own::Reset)?;
    // SAFETY: plain system calls on integers.
    unsafe {
        // A session of its own: no controlling terminal, and a group of its own whose id is its pid.
        if libc::setsid() < 0 {
            return fail();
        }
    }
    close_from_3(keep)
}

/// Empties the signal mask and sets every signal's disposition to its default (with [`Own::Kept`], only the
/// ignored ones but SIGPIPE). A handler would be reset by exec anyway; an ignored signal and a blocked one
/// would not.
fn reset_signals(own: Own) -> std::io::Result<()> {
    // SAFETY: sigprocmask and rt_sigaction on stack values; async-signal-safe.
    unsafe {
        let mut empty = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut empty);
        if libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // The kernel's own call: the C library refuses the real-time signals it reserves for itself (32 and
        // 33 in glibc), and a host may have left one of those ignored too. An all-zero kernel `sigaction` is
        // SIG_DFL with no flags and an empty mask on every architecture (the fields differ only in order).
        let default = [0u64; 4];
        for signal in 1..=64 {
            if signal == libc::SIGKILL || signal == libc::SIGSTOP || (own == Own::Kept && signal == libc::SIGPIPE) {
                continue;
            }
            if own == Own::Kept {
                let mut old = [0u64; 4];
                let asked =
                    libc::syscall(libc::SYS_rt_sigaction, signal, std::ptr::null::<u64>(), old.as_mut_ptr(), 8usize);
                // The handler comes first in the kernel's structure on every architecture.
                if asked != 0 || old[0] != libc::SIG_IGN as u64 {
                    continue;
                }
            }
            libc::syscall(libc::SYS_rt_sigaction, signal, default.as_ptr(), std::ptr::null_mut::<u64>(), 8usize);
        }
    }
    Ok(())
}

/// What [`reset_signals`] leaves of the process's own.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Own {
    /// Nothing: between fork and exec, where every disposition is the host's.
    Reset,
    /// Its handlers and its ignored SIGPIPE: after exec, where those are the new program's own.
    Kept,
}

/// Marks every descriptor from 3 up close-on-exec but those in `keep` (sorted, -1 for none), which are
/// cleared of it. Close-on-exec rather than closed: the standard library's own pipe that reports a failed
/// exec must stay open until the exec.
fn close_from_3(keep: &[RawFd; MAX_KEPT]) -> std::io::Result<()> {
    let mut from: libc::c_uint = 3;
    for &fd in keep.iter().filter(|fd| **fd >= 3) {
        let fd = fd as libc::c_uint;
        if fd > from {
            cloexec_range(from, fd - 1)?;
        }
        // SAFETY: fcntl on a descriptor number; one that is not open reports EBADF.
        if unsafe { libc::fcntl(fd as RawFd, libc::F_SETFD, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        from = from.max(fd + 1);
    }
    cloexec_range(from, libc::c_uint::MAX)
}

fn cloexec_range(first: libc::c_uint, last: libc::c_uint) -> std::io::Result<()> {
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets flags (Linux 5.11).
    if unsafe { libc::syscall(libc::SYS_close_range, first, last, libc::CLOSE_RANGE_CLOEXEC) } == 0 {
        return Ok(());
    }
    // Older kernels: one fcntl per possible descriptor, up to the descriptor limit (bounded: a limit in the
    // millions would take seconds).
    // SAFETY: getrlimit on a stack value; fcntl on descriptor numbers (EBADF for those not open).
    unsafe {
        let mut limit = std::mem::zeroed::<libc::rlimit>();
        let top = match libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) {
            0 => (limit.rlim_cur as u64).min(1 << 16) as libc::c_uint,
            _ => 1024,
        };
        for fd in first..=last.min(top) {
            libc::fcntl(fd as RawFd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    Ok(())
}

/// For the runtime's own children, started with `posix_spawn` (nothing runs between fork and exec): the
/// same reset, done by the child to itself before it reads anything. Descriptors 0 to 2 are what it was
/// handed; the rest are closed outright (nothing of the standard library's is left to report).
///
/// Only what exec keeps is reset: the mask, and the signals left ignored. The handlers the standard library
/// installed in this process before `main` (the stack-overflow report on SIGSEGV and SIGBUS) are its own and
/// stay, and so does SIGPIPE, which every Rust program ignores for itself, so a write to a host that is gone
/// fails with `EPIPE` instead of killing the child unexplained.
pub(crate) fn clean_self() -> std::io::Result<()> {
    reset_signals(Own::Kept)?;
    // SAFETY: plain system calls. The host started this process as the leader of a group of its own, which
    // cannot start a session; it gives up the controlling terminal it was born with, if any, instead.
    unsafe {
        let tty = libc::open(c"/dev/tty".as_ptr(), libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        if tty >= 0 {
            libc::ioctl(tty, libc::TIOCNOTTY);
            libc::close(tty);
        }
        if libc::syscall(libc::SYS_close_range, 3 as libc::c_uint, libc::c_uint::MAX, 0 as libc::c_uint) != 0 {
            close_from_3(&[-1; MAX_KEPT])?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_withholds_the_runtime_namespace_the_api_key_and_the_listed() {
        let rule = EnvRule::new(&["AWS_*".to_owned(), "NPM_TOKEN".to_owned()], &["TOOLSHED_LOG".to_owned()], "KEY");
        for name in
            ["TOOLSHED_SERVE_TOKEN", "TOOLSHED_WEB_TOKEN", "TOOLSHED_APPROVAL_YOLO", "KEY", "AWS_SECRET", "NPM_TOKEN"]
        {
            assert!(rule.withholds(OsStr::new(name)), "{name}");
        }
        for name in ["TOOLSHED_LOG", "PATH", "HOME", "JAVA_HOME", "SSH_AUTH_SOCK", "KEYS", "NPM_TOKEN_X", "toolshed_x"]
        {
            assert!(!rule.withholds(OsStr::new(name)), "{name}");
        }
    }

    #[test]
    fn a_child_gets_exactly_the_descriptors_it_is_handed() {
        use std::os::fd::AsRawFd;
        let file = tempfile::tempfile().unwrap();
        // Two copies without close-on-exec (F_DUPFD, not F_DUPFD_CLOEXEC), as a careless host leaves them: one
        // handed on, one not. Fresh numbers: a dup2 onto a fixed one could close another test's descriptor.
        // SAFETY: fcntl duplicating an open descriptor; the copies are closed below.
        let (handed, leaked) = unsafe {
            (libc::fcntl(file.as_raw_fd(), libc::F_DUPFD, 40), libc::fcntl(file.as_raw_fd(), libc::F_DUPFD, 40))
        };
        assert!(handed >= 40 && leaked >= 40);
        let mut command = Command::new("/bin/sh");
        command.args(["-c", "ls /proc/$$/fd; true"]).stdin(std::process::Stdio::null());
        prepare(&mut command, Inherit::Only(&["PATH"]), &[handed]).unwrap();
        let output = command.output().unwrap();
        for fd in [handed, leaked] {
            // SAFETY: closing the copies made above.
            unsafe { libc::close(fd) };
        }
        let listed: Vec<String> =
            String::from_utf8_lossy(&output.stdout).split_whitespace().map(str::to_owned).collect();
        assert_eq!(listed, ["0", "1", "2", &handed.to_string()]);
    }

    #[test]
    fn explicit_variables_survive_every_inheritance() {
        let rule = EnvRule::default();
        for inherit in [Inherit::User(&rule), Inherit::Only(&["PATH"]), Inherit::Only(&[])] {
            let mut command = Command::new("true");
            command.env("TOOLSHED_PROCESS", "1:2:3").env("EXTRA", "x");
            apply_env(&mut command, inherit);
            let envs: Vec<_> = command.get_envs().collect();
            assert!(envs.contains(&(OsStr::new("TOOLSHED_PROCESS"), Some(OsStr::new("1:2:3")))), "{inherit:?}");
            assert!(envs.contains(&(OsStr::new("EXTRA"), Some(OsStr::new("x")))), "{inherit:?}");
        }
    }
}
