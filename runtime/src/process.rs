//! The `process.*` host services: shell commands in their own process groups, output interleaved in arrival
//! order, read in bounded chunks, and killed as a group — on request, on task cancellation, and at shutdown.
//!
//! Plugins never spawn or reap children themselves: each cdylib has its own `std`, and SIGCHLD handling or a
//! second async runtime inside a plugin would fight the host's.

use dashmap::DashMap;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Output held per process before its reader stops reading (the child then blocks on a full pipe): the
/// plugin drains it, so memory stays bounded whatever the command prints.
const BUFFER_CAP: usize = 1024 * 1024;

/// After the shell exits, how long output may keep arriving from children that still hold the pipe before
/// the process counts as done.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

/// Cline's environment for commands: no pagers, no interactive editors.
const EXTRA_ENV: &[(&str, &str)] =
    &[("TERM", "xterm-256color"), ("PAGER", "cat"), ("GIT_PAGER", "cat"), ("MANPAGER", "cat"), ("SYSTEMD_PAGER", "")];

/// Why a process service failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProcessError {
    Unknown(u64),
    Spawn(String),
}

impl std::fmt::Display for ProcessError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProcessError::Unknown(id) => write!(f, "no process with id {id}"),
            ProcessError::Spawn(message) => f.write_str(message),
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
}

struct Proc {
    task_id: String,
    pgid: i32,
    buffer: Mutex<Buffer>,
    changed: Condvar,
}

impl Proc {
    fn lock(&self) -> MutexGuard<'_, Buffer> {
        match self.buffer.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn signal(&self, signal: Signal) {
        // The group may be gone already; that is the outcome we want.
        let _ = killpg(Pid::from_raw(self.pgid), signal);
    }
}

/// Every process the runtime started, by id.
pub(crate) struct ProcessManager {
    next: AtomicU64,
    procs: DashMap<u64, Arc<Proc>>,
    kill_grace: Duration,
}

impl ProcessManager {
    pub fn new(kill_grace: Duration) -> Self {
        Self { next: AtomicU64::new(1), procs: DashMap::new(), kill_grace }
    }

    /// Starts `$SHELL -c command` in `cwd`.
    pub fn spawn(
        &self,
        task_id: &str,
        command: &str,
        cwd: &Path,
        env: &BTreeMap<String, String>,
    ) -> Result<(u64, u32), ProcessError> {
        let shell = std::env::var("SHELL").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| "/bin/bash".to_owned());
        let (reader, writer) =
            std::io::pipe().map_err(|e| ProcessError::Spawn(format!("cannot create a pipe: {e}")))?;
        let stderr = writer.try_clone().map_err(|e| ProcessError::Spawn(format!("cannot create a pipe: {e}")))?;
        let mut cmd = Command::new(&shell);
        cmd.arg("-c").arg(command).current_dir(cwd).stdin(Stdio::null()).stdout(writer).stderr(stderr);
        for (key, value) in EXTRA_ENV {
            cmd.env(key, value);
        }
        if std::env::var_os("EDITOR").is_none() {
            cmd.env("EDITOR", "cat");
        }
        cmd.envs(env);
        // Its own group, so the whole tree (grandchildren included) is stopped with one signal.
        cmd.process_group(0);
        let spawned = cmd.spawn();
        // Drop our copies of the pipe's write end now, or the reader would never see end of file.
        drop(cmd);
        let mut child =
            spawned.map_err(|e| ProcessError::Spawn(format!("cannot start {shell} in {}: {e}", cwd.display())))?;
        let pid = child.id();
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let proc = Arc::new(Proc {
            task_id: task_id.to_owned(),
            pgid: pid as i32,
            buffer: Mutex::new(Buffer::default()),
            changed: Condvar::new(),
        });
        self.procs.insert(id, Arc::clone(&proc));

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
        let waiter_thread = std::thread::Builder::new().name(format!("proc-{id}-wait")).spawn(move || {
            let status = child.wait();
            let mut buffer = waiting.lock();
            buffer.status = Some(status.unwrap_or_else(|_| ExitStatus::from_raw(1 << 8)));
            buffer.exited_at = Some(Instant::now());
            waiting.changed.notify_all();
        });
        if reader_thread.is_err() || waiter_thread.is_err() {
            proc.signal(Signal::SIGKILL);
            return Err(ProcessError::Spawn("cannot start the threads that watch the process".to_owned()));
        }
        Ok((id, pid))
    }

    /// Returns the output that arrived since the last read, waiting up to `wait` for some; `cancelled` is
    /// polled so a cancelled call stops waiting at once.
    pub fn read(
        &self,
        id: u64,
        wait: Duration,
        max_bytes: usize,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Option<Chunk>, ProcessError> {
        let proc = self.procs.get(&id).map(|p| Arc::clone(&p)).ok_or(ProcessError::Unknown(id))?;
        let deadline = Instant::now() + wait;
        let mut buffer = proc.lock();
        loop {
            if !buffer.data.is_empty() || is_done(&buffer) {
                break;
            }
            if cancelled() {
                return Ok(None);
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            // Wake at least every 50 ms to notice cancellation and the drain window after exit.
            let slice = (deadline - now).min(Duration::from_millis(50));
            buffer = match proc.changed.wait_timeout(buffer, slice) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        let take = take_utf8_prefix(&buffer.data, max_bytes.max(4), buffer.eof);
        let bytes: Vec<u8> = buffer.data.drain(..take).collect();
        proc.changed.notify_all();
        let done = buffer.data.is_empty() && is_done(&buffer);
        let (exit_code, signal) = match buffer.status {
            Some(status) if done => (status.code(), status.signal().map(signal_name)),
            _ => (None, None),
        };
        drop(buffer);
        if done {
            self.procs.remove(&id);
        }
        Ok(Some(Chunk { output: String::from_utf8_lossy(&bytes).into_owned(), done, exit_code, signal }))
    }

    /// SIGTERM to the group now, SIGKILL after the grace period if it is still there.
    pub fn kill(&self, id: u64) -> Result<(), ProcessError> {
        let proc = self.procs.get(&id).map(|p| Arc::clone(&p)).ok_or(ProcessError::Unknown(id))?;
        self.terminate(proc);
        Ok(())
    }

    fn terminate(&self, proc: Arc<Proc>) {
        proc.signal(Signal::SIGTERM);
        let grace = self.kill_grace;
        let _ = std::thread::Builder::new().name("proc-kill".to_owned()).spawn(move || {
            std::thread::sleep(grace);
            // Grandchildren may outlive the shell, so the group is killed even when the shell has exited.
            proc.signal(Signal::SIGKILL);
        });
    }

    /// Stops every process of a task (the task was cancelled).
    pub fn kill_task(&self, task_id: &str) {
        let procs: Vec<Arc<Proc>> =
            self.procs.iter().filter(|p| p.task_id == task_id).map(|p| Arc::clone(p.value())).collect();
        for proc in procs {
            self.terminate(proc);
        }
    }

    /// Kills every process at once (the runtime is shutting down).
    pub fn kill_all(&self) {
        for proc in self.procs.iter() {
            proc.signal(Signal::SIGKILL);
        }
        self.procs.clear();
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
        let (id, _) = manager.spawn("t", command, &dir, &BTreeMap::new()).unwrap();
        let mut output = String::new();
        loop {
            let chunk = manager.read(id, Duration::from_millis(500), 1024, &|| false).unwrap().unwrap();
            output.push_str(&chunk.output);
            if chunk.done {
                return (output, chunk);
            }
        }
    }

    #[test]
    fn exit_codes_signals_and_interleaving() {
        let manager = ProcessManager::new(Duration::from_millis(100));
        let (out, last) = run(&manager, "echo out; echo err >&2; echo out2; exit 3");
        assert_eq!(out, "out\nerr\nout2\n");
        assert_eq!((last.exit_code, last.signal), (Some(3), None));
        let (_, last) = run(&manager, "kill -KILL $$");
        assert_eq!((last.exit_code, last.signal.as_deref()), (None, Some("SIGKILL")));
    }

    #[test]
    fn utf8_is_never_split_across_reads() {
        let manager = ProcessManager::new(Duration::from_millis(100));
        let (out, _) = run(&manager, "for i in $(seq 1 3000); do printf 'héllo wörld ✓ '; done");
        assert_eq!(out, "héllo wörld ✓ ".repeat(3000));
        let data: VecDeque<u8> = "a✓".bytes().collect();
        assert_eq!(take_utf8_prefix(&data, 2, false), 1);
        assert_eq!(take_utf8_prefix(&data, 4, false), 4);
    }

    #[test]
    fn kill_stops_the_whole_group() {
        let manager = ProcessManager::new(Duration::from_millis(100));
        let dir = std::env::temp_dir();
        let (id, _) = manager.spawn("t", "sleep 30 & echo $!; wait", &dir, &BTreeMap::new()).unwrap();
        let first = manager.read(id, Duration::from_secs(5), 1024, &|| false).unwrap().unwrap();
        let grandchild: i32 = first.output.trim().parse().unwrap();
        manager.kill(id).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        // Gone (or a zombie about to be reaped by init): signal 0 fails once it is reaped.
        while nix::sys::signal::kill(Pid::from_raw(grandchild), None).is_ok()
            && !std::fs::read_to_string(format!("/proc/{grandchild}/stat")).is_ok_and(|s| s.contains(") Z "))
        {
            assert!(Instant::now() < deadline, "grandchild {grandchild} survived");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
