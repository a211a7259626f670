//! A process tree the runtime starts outside the manager (a hook, an MCP server, the browser), started clean
//! and held as a command's is.

use super::{become_subreaper, lock, table, Proc, MARKER};
use crate::child_process::clean::Inherit;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};

/// A process tree the runtime starts outside the manager — a hook command, whose pipes its caller reads and
/// writes itself — held as a command's is: its own group, the marker in its environment, its shell a
/// subreaper. Dropping it kills whatever is left of the tree and reaps the shell, so every way out of the
/// caller (an answer, a timeout, too much output) leaves no process behind.
pub(crate) struct Tree {
    proc: Proc,
    child: Child,
    /// Dropped after the root is reaped (fields drop after `Drop::drop`).
    _kept: crate::child_process::keeper::Kept,
}

impl Tree {
    /// Starts `cmd` clean ([`crate::child_process::clean`], its environment as `inherit` says) as the root
    /// of a tree of its own.
    pub fn spawn(mut cmd: Command, inherit: Inherit<'_>) -> std::io::Result<Tree> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        become_subreaper();
        let marker_value = format!("{}:tree:{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        cmd.env(MARKER, &marker_value);
        crate::child_process::clean::prepare(&mut cmd, inherit, &[])?;
        // SAFETY: as in `ProcessManager::spawn`: prctl is async-signal-safe and the closure allocates nothing.
        unsafe {
            cmd.pre_exec(|| nix::sys::prctl::set_child_subreaper(true).map_err(std::io::Error::from));
        }
        let child = cmd.spawn()?;
        let proc = Proc::new("", child.id() as i32, &marker_value);
        let kept = crate::child_process::keeper::keep(child.id());
        Ok(Tree { proc, child, _kept: kept })
    }

    /// Whether the root process has exited (it stays unreaped until the tree goes).
    #[cfg(feature = "mcp")]
    pub fn exited(&self) -> bool {
        use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
        use nix::unistd::Pid;
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
        !matches!(waitid(Id::Pid(Pid::from_raw(self.child.id() as i32)), flags), Ok(WaitStatus::StillAlive))
    }

    /// The root process, for its pipes.
    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Records the tree's processes now, so one that later leaves both the group and the marker is still
    /// known by pid and start time.
    pub fn survey(&self) {
        self.proc.survey(&table::snapshot());
    }

    /// SIGKILL to the whole tree until it is gone (bounded by [`KILL_SETTLE`]); the root, if it still runs,
    /// included.
    pub fn kill(&self) {
        self.proc.kill_tree();
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        self.kill();
        // Only now may the shell's pid (and group id) go back to the kernel.
        let mut reaped = lock(&self.proc.reaped);
        let _ = self.child.wait();
        *reaped = true;
    }
}
