//! The `process.*` host services: shell commands in their own process groups, output interleaved in arrival
//! order, read in bounded chunks, and killed as a whole tree — when the command's main process exits (unless
//! `[commands] keep_background`), on request, on task cancellation or end, and at shutdown.
//!
//! Plugins never spawn or reap children themselves: each cdylib has its own `std`, and SIGCHLD handling or a
//! second async runtime inside a plugin would fight the host's.
//!
//! A process group alone does not hold a command: `setsid`, `setpgid` and double forks leave it, and an orphan
//! is reparented away from the tree. So the runtime and every command's shell are child subreapers
//! (`PR_SET_CHILD_SUBREAPER`): an orphan of a command goes to its shell while the shell lives, then to the
//! runtime, never to init. A command's processes are then found in [`table`] as the shell's descendants, its
//! group, the runtime's reparented children carrying the command's `TOOLSHED_PROCESS` marker, and the
//! processes seen in the tree before (by pid and start time).
//!
//! Hooks, whose pipes the hook runner reads and writes itself, start their tree through [`Tree`], which is
//! found and killed the same way.
//!
//! Reaping is the delicate part: a subreaper inherits zombies, but other code in this process (tokio's child
//! handles, `std::process::Child`, a host's own children) waits for its children by pid, and a stray
//! `waitpid(-1)` would steal their exit statuses. So only processes identified as a command's orphans are
//! reaped here, each by its own pid; and each shell is waited for with `WNOWAIT` first and reaped only once
//! its tree is gone, so neither its pid nor its group id can be reused while anything may still signal them.

mod sandbox;
mod table;
mod tree;

pub(crate) use sandbox::Sandbox;
pub(crate) use tree::Tree;

use crate::child_process::clean::Inherit;
use dashmap::DashMap;
use nix::sys::signal::{kill, killpg, Signal};
use nix::sys::wait::{waitid, waitpid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

/// Registers `process.*` and `commands.settings`. `process.kill` answers after a cancellation too: stopping
/// what a call started must work for a cancelled call.
pub(crate) fn register(
    router: &mut crate::services::host::Router,
    processes: &Arc<ProcessManager>,
    commands: toolshed_plugin_api::services::CommandsSettings,
) {
    use crate::services::host::{cancelled, failed};
    use toolshed_plugin_api::services::{
        CommandsSettingsService, Empty, ProcessKill, ProcessRead, ProcessSpawn, ReadResponse, SpawnResponse,
    };
    let manager = Arc::clone(processes);
    router.register::<ProcessSpawn>(move |call, req| {
        let cwd = match &req.cwd {
            Some(dir) => std::path::PathBuf::from(dir),
            None => call.task.workspace.primary().to_owned(),
        };
        let roots: Vec<&Path> = call.task.workspace.roots().collect();
        let (id, pid) = manager.spawn(&call.task.info.task_id, &req.command, &cwd, &req.env, &roots).map_err(failed)?;
        Ok(SpawnResponse { id, pid })
    });
    let manager = Arc::clone(processes);
    router.register::<ProcessRead>(move |call, req| {
        let chunk = manager
            .read(req.id, Duration::from_millis(req.wait_ms), req.max_bytes, &call.cancels())
            .map_err(failed)?
            .ok_or_else(cancelled)?;
        Ok(ReadResponse { output: chunk.output, done: chunk.done, exit_code: chunk.exit_code, signal: chunk.signal })
    });
    let manager = Arc::clone(processes);
    router
        .register::<ProcessKill>(move |_, req| {
            manager.kill(req.id).map_err(failed)?;
            Ok(Empty {})
        })
        .after_cancel();
    let manager = Arc::clone(processes);
    router.register::<CommandsSettingsService>(move |call, _| {
        let mut settings = commands.clone();
        // Made on first use: most calls never spill.
        settings.scratch_dir = match crate::scratch::task_dir(&call.task.info.task_id) {
            // Where a confined command may write (the scratch root fell back to TMPDIR, or a workspace root
            // holds the user's cache), it could swap the directory for a link between this check and the
            // file's creation, and have the host write where it cannot: then nothing is spilled.
            Ok(dir) if manager.sandbox.lets_commands_write(&dir, &call.task.workspace.roots().collect::<Vec<_>>()) => {
                tracing::warn!(
                    "not spilling large command output to {}: commands in the sandbox may write there",
                    dir.display()
                );
                None
            }
            Ok(dir) => Some(dir.to_string_lossy().into_owned()),
            Err(why) => {
                tracing::warn!("{why}");
                None
            }
        };
        Ok(settings)
    });
}

/// Output held per process before its reader stops reading (the child then blocks on a full pipe): the
/// plugin drains it, so memory stays bounded whatever the command prints.
const BUFFER_CAP: usize = 1024 * 1024;

/// After the shell exits, how long output may keep arriving from children that still hold the pipe before
/// the process counts as done.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

/// While a command runs, how often a read records the processes in its tree, so one that later drops both
/// the marker and the group (`env -i setsid …`) is still known by pid and start time.
const SURVEY_EVERY: Duration = Duration::from_millis(200);

/// Between two looks at the process table while waiting for a tree to die.
const SURVEY_STEP: Duration = Duration::from_millis(5);

/// After SIGKILL, how long a tree gets to disappear (the kernel needs a moment; a process in
/// uninterruptible sleep needs longer) before the stop gives up on it and leaves it to the next one.
const KILL_SETTLE: Duration = Duration::from_secs(2);

/// How long apart the further looks at a tree that seemed empty are taken, and how many (see
/// `Proc::signal_tree`): a process caught between fork and exec can be missing from a snapshot.
const RECHECK: Duration = Duration::from_millis(20);
const RECHECKS: usize = 3;

/// The environment variable that marks every process a command starts: `<runtime pid>:<manager>:<id>`.
const MARKER: &str = "TOOLSHED_PROCESS";

/// Cline's environment for commands: no pagers, no interactive editors.
const EXTRA_ENV: &[(&str, &str)] =
    &[("TERM", "xterm-256color"), ("PAGER", "cat"), ("GIT_PAGER", "cat"), ("MANPAGER", "cat"), ("SYSTEMD_PAGER", "")];

/// Gives every manager of this process its own marker values.
static NEXT_MANAGER: AtomicU64 = AtomicU64::new(1);

/// Why a process service failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProcessError {
    Unknown(u64),
    Spawn(String),
    /// The sandbox the configuration asks for cannot be enforced; the command did not run.
    Sandbox(String),
    ShutDown,
}

impl std::fmt::Display for ProcessError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProcessError::Unknown(id) => write!(f, "no process with id {id}"),
            ProcessError::Spawn(message) | ProcessError::Sandbox(message) => f.write_str(message),
            ProcessError::ShutDown => f.write_str("the runtime is shutting down; the command was killed"),
        }
    }
}

/// What a read returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chunk {
    pub output: String,
    pub done: bool,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
}

#[derive(Default)]
struct Buffer {
    data: VecDeque<u8>,
    eof: bool,
    status: Option<ExitStatus>,
    exited_at: Option<Instant>,
    /// Someone asked for the whole tree to stop (kill, task end, shutdown).
    stopping: bool,
    /// The tree is gone and the shell reaped.
    finished: bool,
    /// The runtime is going: reads fail, so a call still running ends as an error.
    shut_down: bool,
}

struct Proc {
    task_id: String,
    /// The shell's pid, which is also its group's id.
    pgid: i32,
    /// `TOOLSHED_PROCESS=…` as it appears in the environment of the command's processes.
    marker: String,
    buffer: Mutex<Buffer>,
    changed: Condvar,
    /// The command's processes seen so far (never the shell): pid → start time.
    members: Mutex<HashMap<i32, u64>>,
    /// The process groups and sessions the command's processes made of their own (`setsid`, `set -m`), seen
    /// so far: a process born later in one of them, after its parent died (a process that keeps forking a
    /// copy of itself and exiting, say), is the command's too.
    groups: Mutex<HashSet<i32>>,
    last_survey: Mutex<Option<Instant>>,
    /// Whether the shell was reaped; held while the group is signalled, so its id is never signalled after
    /// the kernel may have handed it to someone else.
    reaped: Mutex<bool>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

fn me() -> i32 {
    std::process::id() as i32
}

impl Proc {
    /// A started shell of `task_id`, `pgid` its pid and group, `marker_value` the marker its processes carry.
    fn new(task_id: &str, pgid: i32, marker_value: &str) -> Self {
        Proc {
            task_id: task_id.to_owned(),
            pgid,
            marker: format!("{MARKER}={marker_value}"),
            buffer: Mutex::new(Buffer::default()),
            changed: Condvar::new(),
            members: Mutex::new(HashMap::new()),
            groups: Mutex::new(HashSet::new()),
            last_survey: Mutex::new(None),
            reaped: Mutex::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Buffer> {
        lock(&self.buffer)
    }

    /// The command's processes in `table`, other than the shell: its group, the processes below the shell,
    /// the runtime's reparented children that carry its marker or were seen in the tree before, and
    /// everything below those. Records them all for later surveys.
    fn survey(&self, table: &[table::Entry]) -> Vec<table::Entry> {
        let me = me();
        let mut members = lock(&self.members);
        let mut groups = lock(&self.groups);
        // The runtime's own group and session hold every command's shell and the host's own children: they
        // are never a command's.
        let own = table.iter().find(|e| e.pid == me).map(|e| (e.pgrp, e.session));
        let mut roots: HashSet<i32> = HashSet::from([self.pgid]);
        for entry in table {
            if entry.pid == self.pgid {
                continue;
            }
            let seen = members.get(&entry.pid) == Some(&entry.start);
            // Only the runtime's own children are read for the marker: anywhere else the marker proves nothing
            // (a nested toolshed passes its own down), and those are below a root already if they are ours.
            let orphan = entry.ppid == me && !entry.zombie;
            if seen
                || entry.pgrp == self.pgid
                || (orphan && (groups.contains(&entry.pgrp) || groups.contains(&entry.session)))
                || (orphan && table::environ_has(entry.pid, &self.marker))
            {
                roots.insert(entry.pid);
            }
        }
        let tree = table::with_descendants(table, &roots);
        let found: Vec<table::Entry> =
            table.iter().filter(|e| e.pid != self.pgid && tree.contains(&e.pid)).copied().collect();
        members.clear();
        members.extend(found.iter().map(|e| (e.pid, e.start)));
        for entry in &found {
            for id in [entry.pgrp, entry.session] {
                if Some(id) != own.map(|o| o.0) && Some(id) != own.map(|o| o.1) && id != self.pgid && id > 1 {
                    groups.insert(id);
                }
            }
        }
        found
    }

    /// Sends `signal` (none: only looks) to the group and to every process of the tree, and reaps the
    /// tree's zombies the runtime inherited. Returns whether any process of the tree is left.
    fn signal_tree(&self, signal: Option<Signal>) -> bool {
        // A snapshot is not atomic: read while a process forks and exits (a process that keeps forking a copy
        // of itself), it can hold the parent gone and not yet the child. "Nothing left" is believed only when
        // further looks, a moment later, agree.
        // Only a command that made a group or session of its own pays for the second looks.
        if self.signal_tree_once(signal) {
            return true;
        }
        if lock(&self.groups).is_empty() {
            return false;
        }
        (0..RECHECKS).any(|_| {
            std::thread::sleep(RECHECK);
            self.signal_tree_once(signal)
        })
    }

    fn signal_tree_once(&self, signal: Option<Signal>) -> bool {
        let me = me();
        let reaped = lock(&self.reaped);
        if *reaped {
            return false;
        }
        // The group id cannot name another group: the shell is not reaped before its tree is gone.
        let _ = killpg(Pid::from_raw(self.pgid), signal);
        drop(reaped);
        signal_or_reap(&self.survey(&table::snapshot()), signal, me)
    }

    /// Stops every process of the tree but the shell's own: SIGTERM, up to `grace` for them to go, then
    /// SIGKILL until they are gone (bounded by [`KILL_SETTLE`]).
    fn end_tree(&self, grace: Duration) {
        if !self.signal_tree(Some(Signal::SIGTERM)) {
            return;
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            std::thread::sleep(SURVEY_STEP);
            if !self.signal_tree(None) {
                return;
            }
        }
        self.kill_tree();
    }

    /// SIGKILL to the tree until it is gone, bounded by [`KILL_SETTLE`].
    fn kill_tree(&self) {
        let deadline = Instant::now() + KILL_SETTLE;
        while self.signal_tree(Some(Signal::SIGKILL)) && Instant::now() < deadline {
            std::thread::sleep(SURVEY_STEP);
        }
    }

    /// Asks the waiter to finish the tree and waits up to `wait` until it has.
    fn wait_finished(&self, wait: Duration) {
        let deadline = Instant::now() + wait;
        let mut buffer = self.lock();
        while !buffer.finished {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            buffer = match self.changed.wait_timeout(buffer, deadline - now) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    fn set_stopping(&self) {
        self.lock().stopping = true;
        self.changed.notify_all();
    }

    /// Stops the whole tree, the shell included: SIGTERM, up to `grace` for it to go, SIGKILL; returns once
    /// the tree is gone and the shell reaped, or the bounds ran out.
    fn stop(&self, grace: Duration) {
        self.set_stopping();
        if self.lock().finished {
            return;
        }
        self.signal_tree(Some(Signal::SIGTERM));
        // Once the shell is gone, its waiter ends the rest of the tree within the same grace period.
        self.wait_finished(grace);
        if self.lock().finished {
            return;
        }
        let reaped = lock(&self.reaped);
        if !*reaped {
            let _ = killpg(Pid::from_raw(self.pgid), Signal::SIGKILL);
        }
        drop(reaped);
        self.kill_tree();
        self.wait_finished(KILL_SETTLE);
    }
}

/// How the manager treats a command's other processes once its main process exits.
#[derive(Debug, Clone, Copy)]
struct Settings {
    kill_grace: Duration,
    keep_background: bool,
}

/// Every process the runtime started, by id.
pub(crate) struct ProcessManager {
    next: AtomicU64,
    /// Processes whose output is still to be read.
    procs: DashMap<u64, Arc<Proc>>,
    /// Processes whose tree is not finished yet (a superset of `procs`).
    trees: Arc<DashMap<u64, Arc<Proc>>>,
    settings: Settings,
    /// The kernel sandbox every command runs in.
    sandbox: Sandbox,
    /// What of the host's environment commands get.
    env: crate::child_process::clean::EnvRule,
    /// Set by [`ProcessManager::kill_all`] before it looks at the trees: a spawn that finishes after that
    /// look kills its own tree (its child runs before the spawn has recorded it).
    shut: std::sync::atomic::AtomicBool,
    /// This manager's part of the marker value.
    marker_prefix: String,
}

impl ProcessManager {
    pub fn new(kill_grace: Duration, keep_background: bool) -> Self {
        become_subreaper();
        let manager = NEXT_MANAGER.fetch_add(1, Ordering::Relaxed);
        Self {
            next: AtomicU64::new(1),
            procs: DashMap::new(),
            trees: Arc::new(DashMap::new()),
            settings: Settings { kill_grace, keep_background },
            sandbox: Sandbox::default(),
            env: crate::child_process::clean::EnvRule::default(),
            shut: std::sync::atomic::AtomicBool::new(false),
            marker_prefix: format!("{}:{manager}", std::process::id()),
        }
    }

    /// Runs every command of this manager inside `sandbox`.
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// Starts commands under `config`'s rule for the environment and its sandbox.
    pub fn configured(mut self, config: &crate::config::Config) -> Self {
        self.env = crate::child_process::clean::EnvRule::of(config);
        self.with_sandbox(Sandbox::of(&config.commands))
    }

    /// Starts `$SHELL -c command` in `cwd`, inside the sandbox, whose writable places are `roots` (the task's
    /// workspace roots) and the temporary directories.
    pub fn spawn(
        &self,
        task_id: &str,
        command: &str,
        cwd: &Path,
        env: &BTreeMap<String, String>,
        roots: &[&Path],
    ) -> Result<(u64, u32), ProcessError> {
        // Built before the fork: the child may only make system calls.
        let confinement = self.sandbox.prepare(roots).map_err(ProcessError::Sandbox)?;
        let confined = confinement.is_some();
        let shell = std::env::var("SHELL").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| "/bin/bash".to_owned());
        let (reader, writer) =
            std::io::pipe().map_err(|e| ProcessError::Spawn(format!("cannot create a pipe: {e}")))?;
        let stderr = writer.try_clone().map_err(|e| ProcessError::Spawn(format!("cannot create a pipe: {e}")))?;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let marker_value = format!("{}:{id}", self.marker_prefix);
        let mut cmd = Command::new(&shell);
        cmd.arg("-c").arg(command).current_dir(cwd).stdin(Stdio::null()).stdout(writer).stderr(stderr);
        for (key, value) in EXTRA_ENV {
            cmd.env(key, value);
        }
        if std::env::var_os("EDITOR").is_none() {
            cmd.env("EDITOR", "cat");
        }
        cmd.envs(env);
        // Last, so no requested variable replaces it.
        cmd.env(MARKER, &marker_value);
        // Clean first (its own session, which is also the group the whole tree is stopped with); then the
        // shell becomes a subreaper (kept across exec), so orphans inside the command stay below it while it
        // runs; then it is confined, and an error there ends the spawn before the command runs.
        crate::child_process::clean::prepare(&mut cmd, Inherit::User(&self.env), &[])
            .map_err(|e| ProcessError::Spawn(e.to_string()))?;
        // SAFETY: prctl, landlock_restrict_self and seccomp are system calls, async-signal-safe, and the closure
        // allocates nothing (the confinement was built before the fork).
        unsafe {
            cmd.pre_exec(move || {
                nix::sys::prctl::set_child_subreaper(true).map_err(std::io::Error::from)?;
                match &confinement {
                    Some(confinement) => confinement.apply(),
                    None => Ok(()),
                }
            });
        }
        let spawned = cmd.spawn();
        // Drop our copies of the pipe's write end now, or the reader would never see end of file.
        drop(cmd);
        let child = spawned.map_err(|e| match confined {
            true => ProcessError::Sandbox(format!(
                "cannot start {shell} in {} inside the command sandbox (the command was not run): {e}",
                cwd.display()
            )),
            false => ProcessError::Spawn(format!("cannot start {shell} in {}: {e}", cwd.display())),
        })?;
        let pid = child.id();
        let proc = Arc::new(Proc::new(task_id, pid as i32, &marker_value));
        self.procs.insert(id, Arc::clone(&proc));
        self.trees.insert(id, Arc::clone(&proc));
        // Either `kill_all` sees the tree just recorded, or this sees its flag (both sequentially consistent).
        let shut = self.shut.load(Ordering::SeqCst);

        let reading = Arc::clone(&proc);
        let reader_thread = std::thread::Builder::new().name(format!("proc-{id}-out")).spawn(move || {
            let mut reader = reader;
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                let n = match reader.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let mut buffer = reading.lock();
                while buffer.data.len() >= BUFFER_CAP {
                    buffer = match reading.changed.wait(buffer) {
                        Ok(guard) => guard,
                        Err(poisoned) => poisoned.into_inner(),
                    };
                }
                buffer.data.extend(&chunk[..n]);
                reading.changed.notify_all();
            }
            reading.lock().eof = true;
            reading.changed.notify_all();
        });
        let waiting = Arc::clone(&proc);
        let (trees, settings) = (Arc::clone(&self.trees), self.settings);
        // Told at once, not on the waiter's thread, which a loaded machine may start late.
        let kept = crate::child_process::keeper::keep(pid);
        let waiter_thread = std::thread::Builder::new().name(format!("proc-{id}-wait")).spawn(move || {
            watch_shell(child, &waiting, settings, || drop(trees.remove(&id)));
            drop(kept);
        });
        if reader_thread.is_err() || waiter_thread.is_err() {
            proc.signal_tree(Some(Signal::SIGKILL));
            return Err(ProcessError::Spawn("cannot start the threads that watch the process".to_owned()));
        }
        if shut {
            self.procs.remove(&id);
            proc.lock().shut_down = true;
            proc.stop(Duration::ZERO);
            return Err(ProcessError::ShutDown);
        }
        Ok((id, pid))
    }

    /// Returns the output that arrived since the last read, waiting up to `wait` for some; `None` when the
    /// call was cancelled. A cancellation wakes the wait at once.
    pub fn read(
        &self,
        id: u64,
        wait: Duration,
        max_bytes: usize,
        cancels: &crate::task::Cancels<'_>,
    ) -> Result<Option<Chunk>, ProcessError> {
        let proc = self.procs.get(&id).map(|p| Arc::clone(&p)).ok_or(ProcessError::Unknown(id))?;
        let deadline = Instant::now() + wait;
        let woken = Arc::clone(&proc);
        let _guards = cancels.on_cancel(Arc::new(move || {
            // Under the lock, so a reader between its check and its wait cannot miss it.
            let _buffer = woken.lock();
            woken.changed.notify_all();
        }));
        let mut buffer = proc.lock();
        loop {
            if buffer.shut_down {
                return Err(ProcessError::ShutDown);
            }
            if !buffer.data.is_empty() || is_done(&buffer) {
                break;
            }
            if cancels.is_cancelled() {
                return Ok(None);
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            // After the exit, wake at least every 50 ms for the drain window; before it, output, the exit and a
            // cancellation all wake the wait.
            let slice = if buffer.exited_at.is_some() {
                (deadline - now).min(Duration::from_millis(50))
            } else {
                deadline - now
            };
            buffer = match proc.changed.wait_timeout(buffer, slice) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        let take = take_utf8_prefix(&buffer.data, max_bytes.max(4), buffer.eof);
        let bytes: Vec<u8> = buffer.data.drain(..take).collect();
        proc.changed.notify_all();
        let done = buffer.data.is_empty() && is_done(&buffer);
        let running = buffer.status.is_none();
        let (exit_code, signal) = match buffer.status {
            Some(status) if done => (status.code(), status.signal().map(signal_name)),
            _ => (None, None),
        };
        drop(buffer);
        if done {
            self.procs.remove(&id);
        }
        if running {
            let mut last = lock(&proc.last_survey);
            if last.is_none_or(|at| at.elapsed() >= SURVEY_EVERY) {
                *last = Some(Instant::now());
                drop(last);
                proc.survey(&table::snapshot());
            }
        }
        Ok(Some(Chunk { output: String::from_utf8_lossy(&bytes).into_owned(), done, exit_code, signal }))
    }

    /// Stops the command's whole tree: SIGTERM, the grace period, SIGKILL. Returns once it is gone (or the
    /// bounds ran out), so a call that kills its command ends after its processes.
    pub fn kill(&self, id: u64) -> Result<(), ProcessError> {
        let proc = self.trees.get(&id).map(|p| Arc::clone(&p)).ok_or(ProcessError::Unknown(id))?;
        proc.stop(self.settings.kill_grace);
        Ok(())
    }

    /// Stops every process of a task (the task was cancelled or ended), kept background jobs included,
    /// without waiting.
    pub fn kill_task(&self, task_id: &str) {
        let procs: Vec<Arc<Proc>> =
            self.trees.iter().filter(|p| p.task_id == task_id).map(|p| Arc::clone(p.value())).collect();
        for proc in procs {
            proc.set_stopping();
            let grace = self.settings.kill_grace;
            let stopping = Arc::clone(&proc);
            if std::thread::Builder::new().name("proc-kill".to_owned()).spawn(move || stopping.stop(grace)).is_err() {
                proc.kill_tree();
            }
        }
    }

    /// Kills every process at once and waits (boundedly) until they are gone: the runtime is shutting down.
    pub fn kill_all(&self) {
        self.shut.store(true, Ordering::SeqCst);
        // Reads fail from now on: a call still running ends as an error, not as a command killed by a signal.
        self.procs.clear();
        let procs: Vec<Arc<Proc>> = self.trees.iter().map(|p| Arc::clone(p.value())).collect();
        for proc in &procs {
            proc.lock().shut_down = true;
            proc.set_stopping();
        }
        let deadline = Instant::now() + KILL_SETTLE;
        loop {
            let mut left = false;
            for proc in &procs {
                left |= proc.signal_tree(Some(Signal::SIGKILL));
            }
            if !left || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(SURVEY_STEP);
        }
        for proc in &procs {
            proc.wait_finished(deadline.saturating_duration_since(Instant::now()));
        }
    }
}

/// The waiter of one shell: notes its exit without reaping it, ends the rest of its tree (now, or when asked
/// to when background jobs are kept), then reaps it.
fn watch_shell(mut child: Child, proc: &Proc, settings: Settings, forget: impl FnOnce()) {
    let status = exit_status(child.id() as i32);
    if !settings.keep_background {
        // The result waits for this, so a finished call has no process left.
        proc.end_tree(settings.kill_grace);
    }
    {
        let mut buffer = proc.lock();
        buffer.status = Some(status);
        buffer.exited_at = Some(Instant::now());
        proc.changed.notify_all();
        while settings.keep_background && !buffer.stopping {
            buffer = match proc.changed.wait(buffer) {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
        }
    }
    if settings.keep_background {
        proc.end_tree(settings.kill_grace);
    }
    // Only now may the shell's pid (and group id) go back to the kernel.
    let mut reaped = lock(&proc.reaped);
    let _ = child.wait();
    *reaped = true;
    drop(reaped);
    proc.lock().finished = true;
    proc.changed.notify_all();
    forget();
}

/// Waits for `pid` to exit and returns its status, leaving it a zombie (`WNOWAIT`).
pub(crate) fn exit_status(pid: i32) -> ExitStatus {
    loop {
        match waitid(Id::Pid(Pid::from_raw(pid)), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
            Ok(WaitStatus::Exited(_, code)) => return ExitStatus::from_raw((code & 0xff) << 8),
            Ok(WaitStatus::Signaled(_, signal, core)) => {
                return ExitStatus::from_raw(signal as i32 | if core { 0x80 } else { 0 })
            }
            Err(nix::errno::Errno::EINTR) | Ok(_) => continue,
            Err(_) => return ExitStatus::from_raw(1 << 8),
        }
    }
}

/// One round over a tree: signals each live process, reaps each zombie that is a child of `me` (an orphan the
/// runtime inherited: nobody else waits for it), and says whether anything is left (a live process, or a
/// zombie its parent in the tree reaps or leaves to us when it dies).
fn signal_or_reap(entries: &[table::Entry], signal: Option<Signal>, me: i32) -> bool {
    let mut left = false;
    for entry in entries {
        if !entry.zombie {
            let _ = kill(Pid::from_raw(entry.pid), signal);
            left = true;
        } else if entry.ppid == me {
            let _ = waitpid(Pid::from_raw(entry.pid), Some(WaitPidFlag::WNOHANG));
        } else {
            left = true;
        }
    }
    left
}

/// Makes this process a child subreaper, once: orphans of commands come back to it instead of init.
fn become_subreaper() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
            tracing::warn!("cannot become a child subreaper ({e}): a command's escaped processes may outlive it");
        }
    });
}

/// Stops every descendant of this process — commands, their escaped orphans, MCP servers, hooks — with
/// SIGTERM, then SIGKILL after `grace`, and reaps the zombies left to it. For a process about to exit (the
/// `toolshed` command on SIGTERM or SIGINT): it reaps every zombie child, whoever meant to wait for it.
pub fn kill_descendants(grace: Duration) {
    let me = me();
    // The keeper is spared: it ends with this process, and then ends whatever is left.
    let keeper = crate::child_process::keeper::running().map(|pid| pid as i32);
    let round = |signal: Option<Signal>| {
        let snapshot = table::snapshot();
        let tree = table::with_descendants(&snapshot, &HashSet::from([me]));
        let entries: Vec<table::Entry> =
            snapshot.into_iter().filter(|e| e.pid != me && Some(e.pid) != keeper && tree.contains(&e.pid)).collect();
        signal_or_reap(&entries, signal, me)
    };
    if !round(Some(Signal::SIGTERM)) {
        return;
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        std::thread::sleep(SURVEY_STEP);
        if !round(None) {
            return;
        }
    }
    let deadline = Instant::now() + KILL_SETTLE;
    while round(Some(Signal::SIGKILL)) && Instant::now() < deadline {
        std::thread::sleep(SURVEY_STEP);
    }
}

fn is_done(buffer: &Buffer) -> bool {
    match buffer.exited_at {
        Some(at) => buffer.eof || at.elapsed() >= DRAIN_AFTER_EXIT,
        None => false,
    }
}

/// How many leading bytes to hand out: at most `max`, never splitting a UTF-8 character unless the stream
/// has ended (then the rest is replaced as invalid).
fn take_utf8_prefix(data: &VecDeque<u8>, max: usize, eof: bool) -> usize {
    let mut take = data.len().min(max);
    if take == data.len() && eof {
        return take;
    }
    // Step back over at most three continuation bytes to the start of an incomplete character.
    let mut back = 0;
    while back < 3 && take > back && (data[take - back - 1] & 0xC0) == 0x80 {
        back += 1;
    }
    if take > back {
        let lead = data[take - back - 1];
        let width = match lead {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        if width > back + 1 {
            take -= back + 1;
        }
    }
    take
}

fn signal_name(signal: i32) -> String {
    Signal::try_from(signal).map(|s| s.as_str().to_owned()).unwrap_or_else(|_| format!("signal {signal}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(manager: &ProcessManager, command: &str) -> (String, Chunk) {
        let dir = std::env::temp_dir();
        let (id, _) = manager.spawn("t", command, &dir, &BTreeMap::new(), &[]).unwrap();
        let mut output = String::new();
        let never = crate::task::NeverCancelled::default();
        loop {
            let chunk = manager.read(id, Duration::from_millis(500), 1024, &never.cancels()).unwrap().unwrap();
            output.push_str(&chunk.output);
            if chunk.done {
                return (output, chunk);
            }
        }
    }

    #[test]
    fn exit_codes_signals_and_interleaving() {
        let manager = ProcessManager::new(Duration::from_millis(100), false);
        let (out, last) = run(&manager, "echo out; echo err >&2; echo out2; exit 3");
        assert_eq!(out, "out\nerr\nout2\n");
        assert_eq!((last.exit_code, last.signal), (Some(3), None));
        let (_, last) = run(&manager, "kill -KILL $$");
        assert_eq!((last.exit_code, last.signal.as_deref()), (None, Some("SIGKILL")));
    }

    #[test]
    fn utf8_is_never_split_across_reads() {
        let manager = ProcessManager::new(Duration::from_millis(100), false);
        let (out, _) = run(&manager, "for i in $(seq 1 3000); do printf 'héllo wörld ✓ '; done");
        assert_eq!(out, "héllo wörld ✓ ".repeat(3000));
        let data: VecDeque<u8> = "a✓".bytes().collect();
        assert_eq!(take_utf8_prefix(&data, 2, false), 1);
        assert_eq!(take_utf8_prefix(&data, 4, false), 4);
    }

    /// Whether no process has the pid any more (a zombie still has it).
    fn gone(pid: i32) -> bool {
        nix::sys::signal::kill(Pid::from_raw(pid), None).is_err()
    }

    fn pids(text: &str) -> Vec<i32> {
        text.split_whitespace().filter_map(|w| w.parse().ok()).collect()
    }

    #[test]
    fn kill_stops_the_whole_tree_before_it_returns() {
        let manager = ProcessManager::new(Duration::from_millis(100), false);
        let dir = std::env::temp_dir();
        let command = "sleep 30 & echo $!; setsid sleep 30 & echo $!; ( ( sleep 30 & echo $! ) & ); wait";
        let (id, _) = manager.spawn("t", command, &dir, &BTreeMap::new(), &[]).unwrap();
        let mut output = String::new();
        let never = crate::task::NeverCancelled::default();
        while pids(&output).len() < 3 {
            output.push_str(&manager.read(id, Duration::from_secs(5), 1024, &never.cancels()).unwrap().unwrap().output);
        }
        manager.kill(id).unwrap();
        for pid in pids(&output) {
            assert!(gone(pid), "{pid} survived the kill: {output}");
        }
    }

    #[test]
    fn background_jobs_end_with_the_shell_unless_kept() {
        // The third drops the marker and leaves group and session: it is known because a read saw it in the
        // tree while the shell still ran.
        let command = "sleep 30 & echo $!; setsid sleep 30 & echo $!; \
            ( ( env -u TOOLSHED_PROCESS setsid sleep 30 & echo $! ) & ); nohup sleep 30 >/dev/null 2>&1 & echo $!; \
            sleep 1";
        let manager = ProcessManager::new(Duration::from_millis(100), false);
        let (out, last) = run(&manager, command);
        assert_eq!(last.exit_code, Some(0));
        assert_eq!(pids(&out).len(), 4, "{out}");
        for pid in pids(&out) {
            assert!(gone(pid), "{pid} outlived its command: {out}");
        }

        let manager = ProcessManager::new(Duration::from_millis(100), true);
        let (out, _) = run(&manager, command);
        for pid in pids(&out) {
            assert!(!gone(pid), "{pid} was kept: {out}");
        }
        manager.kill_task("t");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !pids(&out).into_iter().all(gone) {
            let left: Vec<i32> = pids(&out).into_iter().filter(|p| !gone(*p)).collect();
            assert!(Instant::now() < deadline, "the task's kept jobs {left:?} survived its end: {out}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
