//! The command sandbox: `[commands] sandbox` and `network`, enforced by the kernel on a command's shell and on
//! everything it starts (Landlock and seccomp are inherited across fork and exec and cannot be dropped).
//!
//! Everything that allocates or may fail for a reason worth explaining — the Landlock ruleset with its rules,
//! the seccomp program — is built in the runtime before the fork ([`Sandbox::prepare`]); the child, between
//! fork and exec, only makes three system calls ([`Confinement::apply`]). A confinement the kernel cannot
//! enforce in full is an error before anything runs: a command is never run with less than was asked.
//!
//! What a confined command may do:
//!
//! - read and execute everywhere but the terminal devices (the user's terminals under `/dev/pts`, `/dev/tty`,
//!   consoles, serial lines: a terminal is read for what the user types) and the files the host hid
//!   (`toolshed::children::hide_from_sandbox`: the serve token's file);
//! - `workspace-write`: every write-ish right (create, remove, rename and link in or out — Landlock's `REFER` —,
//!   truncate, write, make devices, fifos, sockets and symbolic links) beneath the workspace roots, `/tmp` and
//!   the runtime's temporary directory (`TMPDIR`), none elsewhere; `read-only`: none anywhere;
//! - always: write and truncate `/dev/null`, `/dev/zero` and `/dev/full`, or ordinary commands break; never
//!   a terminal: not `/dev/tty` (a command has no controlling terminal anyway, see `child_process::clean`)
//!   nor the user's terminals under `/dev/pts`, where raw escape sequences (and, as root, `TIOCSTI`) would
//!   reach the user's shell around the prompt escaping. A terminal handed to a command as a descriptor is
//!   not judged by Landlock;
//! - `network = false`: create Unix sockets only (a seccomp filter answers `EPERM` to `socket` and
//!   `socketpair` of any other family and to `io_uring_setup`, whose operations can open sockets without
//!   `socket`), and, where the kernel has them, no TCP bind or connect and no abstract Unix socket made outside
//!   the sandbox (Landlock ABI 4 and 6);
//! - never signal a process outside the sandbox (Landlock ABI 6, where the kernel has it).
//!
//! Landlock checks the object a path resolves to, so `..`, symbolic links out of the workspace,
//! `/proc/self/fd/N` and a `cd` elsewhere all meet the same rules. Landlock ABI 3 (Linux 6.2) is required for
//! files: before it, `truncate` outside the workspace could not be refused.

use crate::config::{CommandsConfig, SandboxMode};
use std::path::Path;

/// What `[commands]` asks of every command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sandbox {
    mode: SandboxMode,
    network: bool,
    /// `sandbox_assume_unsupported`: behave as if the kernel had no Landlock.
    assume_unsupported: bool,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self { mode: SandboxMode::Off, network: true, assume_unsupported: false }
    }
}

impl Sandbox {
    /// The sandbox `[commands]` asks for.
    pub fn of(config: &CommandsConfig) -> Self {
        Self { mode: config.sandbox, network: config.network, assume_unsupported: config.sandbox_assume_unsupported }
    }

    /// Builds the confinement of one command whose workspace roots are `roots`, before its fork. `None`: the
    /// command runs unconfined, as asked. An error says why the kernel cannot enforce what was asked, and the
    /// command must not run.
    pub fn prepare(&self, roots: &[&Path]) -> Result<Option<Confinement>, String> {
        if self.mode == SandboxMode::Off && self.network {
            return Ok(None);
        }
        imp::prepare(self, roots)
    }

    /// Whether a confined command may write at `path` (or swap a directory on its way) when the task's
    /// workspace roots are `roots`: beneath a root, `/tmp` or the runtime's `TMPDIR` in `workspace-write`.
    /// Without a sandbox a command has the user's rights anyway, and `read-only` writes nowhere.
    pub fn lets_commands_write(&self, path: &Path, roots: &[&Path]) -> bool {
        if self.mode != SandboxMode::WorkspaceWrite {
            return false;
        }
        let resolve = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let path = resolve(path);
        let tmp = std::env::temp_dir();
        roots.iter().copied().chain([Path::new("/tmp"), tmp.as_path()]).any(|root| path.starts_with(resolve(root)))
    }

    /// The refusal when the kernel cannot enforce the sandbox, for `reason`.
    fn unsupported(&self, reason: &str) -> String {
        let asked = match self.mode {
            SandboxMode::Off => "`[commands] network = false`".to_owned(),
            SandboxMode::WorkspaceWrite => "`[commands] sandbox = \"workspace-write\"`".to_owned(),
            SandboxMode::ReadOnly => "`[commands] sandbox = \"read-only\"`".to_owned(),
        };
        format!(
            "the command was not run: the configuration asks for a kernel sandbox ({asked}) that cannot be \
             enforced here: {reason}. Run Toolshed on a Linux kernel with Landlock ABI 3 or later (Linux 6.2+, \
             `landlock` in the `lsm=` list) and seccomp, or turn the sandbox off in your own configuration \
             (`[commands] sandbox = \"off\"`, `network = true`) to run commands with your full rights"
        )
    }
}

pub(crate) use imp::Confinement;

/// Without Linux there is no sandbox to apply; every confinement asked for is refused.
#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Sandbox;
    use std::path::Path;

    /// Never built off Linux.
    pub(crate) enum Confinement {}

    impl Confinement {
        pub fn apply(&self) -> std::io::Result<()> {
            match *self {}
        }
    }

    pub(super) fn prepare(sandbox: &Sandbox, _roots: &[&Path]) -> Result<Option<Confinement>, String> {
        Err(sandbox.unsupported("the command sandbox is implemented for Linux only"))
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use super::Sandbox;
    use crate::config::SandboxMode;
    use landlock::{
        path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
        RulesetAttr, RulesetCreatedAttr, Scope, ABI,
    };
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };
    use std::collections::BTreeMap;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::path::{Path, PathBuf};

    /// The Landlock ABI whose file rights a confinement needs in full: 3 adds `TRUNCATE`.
    const FS_ABI: ABI = ABI::V3;

    /// Device files every command may write, whatever the mode.
    const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

    /// A sandbox built for one command, applied in its child between fork and exec.
    pub(crate) struct Confinement {
        /// The Landlock ruleset (close-on-exec, so it does not leak into the command).
        landlock: Option<OwnedFd>,
        /// The seccomp program of `network = false`.
        seccomp: Option<BpfProgram>,
    }

    impl Confinement {
        /// Confines the calling process. For the forked child: only system calls, nothing allocated, so it is
        /// async-signal-safe. An error aborts the spawn before the command is executed.
        pub fn apply(&self) -> std::io::Result<()> {
            // SAFETY: prctl with integer arguments; required before an unprivileged Landlock or seccomp.
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(fd) = &self.landlock {
                // SAFETY: the ruleset descriptor is open and owned by `self`; flags 0.
                if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0) } != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(program) = &self.seccomp {
                seccompiler::apply_filter(program).map_err(|e| match e {
                    seccompiler::Error::Seccomp(io) | seccompiler::Error::Prctl(io) => io,
                    _ => std::io::Error::from_raw_os_error(libc::EINVAL),
                })?;
            }
            Ok(())
        }
    }

    pub(super) fn prepare(sandbox: &Sandbox, roots: &[&Path]) -> Result<Option<Confinement>, String> {
        let landlock = match sandbox.mode {
            SandboxMode::Off => None,
            SandboxMode::WorkspaceWrite | SandboxMode::ReadOnly if sandbox.assume_unsupported => {
                return Err(sandbox.unsupported(
                    "this kernel has no Landlock (simulated by `[commands] sandbox_assume_unsupported = true`, a \
                     test switch: remove it to use the kernel's real support)",
                ));
            }
            SandboxMode::WorkspaceWrite => Some(ruleset(sandbox, &writable(roots))?),
            SandboxMode::ReadOnly => Some(ruleset(sandbox, &[])?),
        };
        let seccomp = if sandbox.network { None } else { Some(no_network().map_err(|e| sandbox.unsupported(&e))?) };
        Ok(Some(Confinement { landlock, seccomp }))
    }

    /// Where `workspace-write` writes: the workspace roots and the temporary directories.
    fn writable(roots: &[&Path]) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = roots.iter().map(|r| r.to_path_buf()).collect();
        paths.push(PathBuf::from("/tmp"));
        paths.push(std::env::temp_dir());
        paths
    }

    /// [`readable`], opened once and kept while `/`, `/dev` and the hidden files stay as they were: opening
    /// a hundred paths for every command cost a sandboxed `true` a millisecond.
    fn readable_fds() -> std::sync::Arc<Vec<(PathFd, bool)>> {
        type Key = (Vec<(u64, i64, i64)>, Vec<PathBuf>);
        type Fds = std::sync::Arc<Vec<(PathFd, bool)>>;
        static CACHE: std::sync::Mutex<Option<(Key, Fds)>> = std::sync::Mutex::new(None);
        let stamp = |path: &str| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(path).map_or((0, 0, 0), |m| (m.ino(), m.mtime(), m.mtime_nsec()))
        };
        let key: Key = (vec![stamp("/"), stamp("/dev")], crate::child_process::clean::hidden());
        let mut cache = CACHE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, fds)) = cache.as_ref().filter(|(cached, _)| *cached == key) {
            return std::sync::Arc::clone(fds);
        }
        // An entry gone since it was listed is simply not granted.
        let fds: Fds = std::sync::Arc::new(
            readable().into_iter().filter_map(|path| Some((PathFd::new(&path).ok()?, path.is_dir()))).collect(),
        );
        *cache = Some((key, std::sync::Arc::clone(&fds)));
        fds
    }

    /// What a confined command reads and executes: everything but terminals and the hidden files
    /// ([`crate::child_process::clean::hide`]). Landlock grants, it cannot except, so the grant is spelled out around each exception:
    /// every entry of `/`, and of each directory on the way to an exception, but the one leading to it. The
    /// exceptions: the terminal devices under `/dev` (the user's terminals under `/dev/pts`, `/dev/tty`,
    /// virtual consoles and their screen memory, serial lines), from which a command could read what the user
    /// types (a password at a `sudo` prompt), and the files the host hid (the serve token's file, whose
    /// token would let a command call the host's tools outside the sandbox). Every directory may still be
    /// listed (`ReadDir` on `/`). Links are left out: what they lead to is judged where it is, and opening one
    /// here would follow it (`/dev/stdin` to the host's own terminal).
    fn readable() -> Vec<PathBuf> {
        let terminal = |name: &str| {
            name == "pts"
                || name == "console"
                || name == "ptmx"
                || ["tty", "vcs", "pty", "hvc", "serial"].iter().any(|prefix| name.starts_with(prefix))
        };
        let mut excluded: Vec<PathBuf> = crate::child_process::clean::hidden();
        if let Ok(dir) = std::fs::read_dir("/dev") {
            excluded.extend(dir.flatten().filter(|e| e.file_name().to_str().is_some_and(terminal)).map(|e| e.path()));
        }
        let mut granted = Vec::new();
        grant_around(Path::new("/"), &excluded, &mut granted);
        granted
    }

    /// Grants the entries of `dir` (not links) but those in `excluded`, and goes down into each that holds one.
    fn grant_around(dir: &Path, excluded: &[PathBuf], granted: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let (path, Ok(kind)) = (entry.path(), entry.file_type()) else { continue };
            if kind.is_symlink() || excluded.contains(&path) {
                continue;
            }
            if kind.is_dir() && excluded.iter().any(|e| e.starts_with(&path)) {
                grant_around(&path, excluded, granted);
            } else {
                granted.push(path);
            }
        }
    }

    /// The Landlock ruleset: file rights in full (a hard requirement), TCP, abstract sockets and signals as far
    /// as the kernel goes (seccomp holds the network on its own).
    fn ruleset(sandbox: &Sandbox, writable: &[PathBuf]) -> Result<OwnedFd, String> {
        let refuse = |e: &dyn std::fmt::Display| sandbox.unsupported(&format!("Landlock: {e}"));
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(FS_ABI))
            .map_err(|e| refuse(&e))?
            .set_compatibility(CompatLevel::BestEffort)
            .scope(Scope::Signal)
            .map_err(|e| refuse(&e))?;
        if !sandbox.network {
            ruleset = ruleset
                .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
                .map_err(|e| refuse(&e))?
                .scope(Scope::AbstractUnixSocket)
                .map_err(|e| refuse(&e))?;
        }
        let device_rights = AccessFs::from_read(FS_ABI) | AccessFs::WriteFile | AccessFs::Truncate;
        let mut created = ruleset
            .create()
            .map_err(|e| refuse(&e))?
            .set_compatibility(CompatLevel::HardRequirement)
            .add_rules(path_beneath_rules(["/"], AccessFs::ReadDir))
            .map_err(|e| refuse(&e))?
            .add_rules(path_beneath_rules(DEVICES, device_rights))
            .map_err(|e| refuse(&e))?;
        for (fd, dir) in readable_fds().iter() {
            // A file takes no directory right (`ReadDir`).
            let rights = match dir {
                true => AccessFs::from_read(FS_ABI),
                false => AccessFs::from_read(FS_ABI) & AccessFs::from_file(FS_ABI),
            };
            created = created.add_rule(PathBeneath::new(fd, rights)).map_err(|e| refuse(&e))?;
        }
        for path in writable {
            // A missing temporary directory is no loss; a workspace root that cannot be opened would leave
            // the command unable to write where it should, so it is an error naming the root.
            let fd = match PathFd::new(path) {
                Ok(fd) => fd,
                Err(_) if !path.exists() => continue,
                Err(e) => return Err(format!("cannot open {} for the command sandbox: {e}", path.display())),
            };
            created = created.add_rule(PathBeneath::new(fd, AccessFs::from_all(FS_ABI))).map_err(|e| refuse(&e))?;
        }
        let fd: Option<OwnedFd> = created.into();
        fd.ok_or_else(|| sandbox.unsupported("the kernel has no Landlock"))
    }

    /// The seccomp program of `network = false`: `EPERM` for sockets of every family but `AF_UNIX`, and for
    /// `io_uring_setup`.
    fn no_network() -> Result<BpfProgram, String> {
        let not_unix = || -> Result<SeccompRule, seccompiler::BackendError> {
            SeccompRule::new(vec![SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Ne,
                libc::AF_UNIX as u64,
            )?])
        };
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        // x32 system calls share x86_64's audit architecture with their own numbers: cover both.
        let x32: &[i64] = if cfg!(target_arch = "x86_64") { &[0, 0x4000_0000] } else { &[0] };
        for offset in x32 {
            let socket = not_unix().map_err(|e| e.to_string())?;
            let pair = not_unix().map_err(|e| e.to_string())?;
            rules.insert(libc::SYS_socket + offset, vec![socket]);
            rules.insert(libc::SYS_socketpair + offset, vec![pair]);
            rules.insert(libc::SYS_io_uring_setup + offset, Vec::new());
        }
        let arch = std::env::consts::ARCH.try_into().map_err(|e: seccompiler::BackendError| e.to_string())?;
        let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
            .map_err(|e| format!("seccomp: {e}"))?;
        filter.try_into().map_err(|e: seccompiler::BackendError| format!("seccomp: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_switch_refuses_and_names_itself() {
        let config = CommandsConfig {
            sandbox: SandboxMode::WorkspaceWrite,
            sandbox_assume_unsupported: true,
            ..CommandsConfig::default()
        };
        let refusal = Sandbox::of(&config).prepare(&[]).err().unwrap_or_default();
        assert!(refusal.contains("sandbox_assume_unsupported"), "{refusal}");
        assert!(refusal.contains("not run"), "{refusal}");
        assert!(Sandbox::of(&CommandsConfig::default()).prepare(&[]).is_ok_and(|c| c.is_none()));
    }
}
