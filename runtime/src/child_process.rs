//! The child processes the runtime starts: the one door every child goes through ([`clean`]), the keeper
//! that ends them all with the host ([`keeper`]), the thread they are started from; and, for the children
//! started from the runtime's own binary (parser jobs, out-of-process plugins), which executable they run,
//! the limits a child sets on itself, its socket to the host and the frames spoken on it, and the tail of its
//! stderr kept to explain its death.

pub(crate) mod clean;
pub(crate) mod frames;
pub(crate) mod keeper;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// The descriptor the library copy arrives on in a child (its stdin).
pub(crate) const LIBRARY_FD: i32 = 0;

/// The most of a child's stderr kept to explain its death.
const STDERR_TAIL: usize = 16 * 1024;

/// The executable children run: set by the `toolshed` binary to itself; else found beside the current
/// executable (an embedding host, a test binary in `target/*/deps`).
static EXECUTABLE: OnceLock<PathBuf> = OnceLock::new();

/// Makes children run `path`: the `toolshed` binary, or a host binary whose `main` calls
/// `toolshed::isolate::child_main` when its first argument is `toolshed::isolate::CHILD_ARG` and
/// `toolshed::isolate::plugin_host_main` when it is `toolshed::isolate::PLUGIN_HOST_ARG`.
pub fn set_executable(path: PathBuf) {
    let _ = EXECUTABLE.set(path);
}

/// The executable to start children from.
pub(crate) fn executable() -> Result<PathBuf, String> {
    if let Some(path) = EXECUTABLE.get() {
        return Ok(path.clone());
    }
    let current = std::env::current_exe().map_err(|e| format!("cannot find the host executable: {e}"))?;
    let name = format!("toolshed{}", std::env::consts::EXE_SUFFIX);
    let beside = current.parent().into_iter().flat_map(|dir| [dir.join(&name), dir.join("..").join(&name)]);
    beside.into_iter().find(|path| path.is_file()).ok_or_else(|| {
        format!(
            "no `{name}` binary beside {} to start a child process from (a parser job, an out-of-process \
             plugin); install it there or call toolshed::isolate::set_executable",
            current.display()
        )
    })
}

/// Starts `command` from a thread that lives as long as the process. A child asks for death with its
/// parent (`PR_SET_PDEATHSIG`, see [`limit_self`]), and Linux takes the parent to be the *thread* that
/// started it: a child started from a worker thread that later retires would be killed with it, mid-call.
///
/// That thread is started by the first call, or by the next one if starting it failed (a failure is not
/// kept: threads may be short only for a moment). The answer is awaited at most `wait` (an `exec` from a
/// hung file system, a spawn queued behind one): then the error is `TimedOut`, and a child that starts after
/// all is killed and reaped by the spawner, since nobody is left to own it.
pub(crate) fn spawn(command: std::process::Command, wait: Duration) -> std::io::Result<std::process::Child> {
    // Every child is born in the keeper's cgroup: the host moves in before its first child.
    keeper::ensure();
    static SPAWNER: Mutex<Option<std::sync::mpsc::Sender<Request>>> = Mutex::new(None);
    let reply = Arc::new(Reply { slot: Mutex::new(Slot::Waiting), ready: Condvar::new() });
    let mut request = (command, Arc::clone(&reply));
    let mut spawner = SPAWNER.lock().unwrap_or_else(PoisonError::into_inner);
    // Twice at most: a spawner found gone (it never panics; only as the process exits) is replaced once.
    for _ in 0..2 {
        let tx = match &*spawner {
            Some(tx) => tx.clone(),
            None => {
                let tx = start_spawner().map_err(|e| {
                    std::io::Error::new(e.kind(), format!("the thread that starts child processes cannot start: {e}"))
                })?;
                *spawner = Some(tx.clone());
                tx
            }
        };
        match tx.send(request) {
            Ok(()) => {
                drop(spawner);
                return reply.wait(wait);
            }
            Err(std::sync::mpsc::SendError(back)) => {
                request = back;
                *spawner = None;
            }
        }
    }
    Err(std::io::Error::other("the thread that starts child processes is gone"))
}

/// A command for the spawner thread, and where its child goes.
type Request = (std::process::Command, Arc<Reply>);

/// Where the spawner thread leaves a child for the thread that asked for it.
struct Reply {
    slot: Mutex<Slot>,
    ready: Condvar,
}

enum Slot {
    Waiting,
    /// The asking thread stopped waiting: the child, if one starts, is nobody's.
    Abandoned,
    Done(std::io::Result<std::process::Child>),
}

impl Reply {
    /// The spawner's answer, waiting at most `wait`; after that the request is abandoned.
    fn wait(&self, wait: Duration) -> std::io::Result<std::process::Child> {
        let now = Instant::now();
        let deadline = now.checked_add(wait).unwrap_or_else(|| now + Duration::from_secs(u64::from(u32::MAX)));
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            match std::mem::replace(&mut *slot, Slot::Waiting) {
                Slot::Done(spawned) => return spawned,
                other => *slot = other,
            }
            let now = Instant::now();
            if now >= deadline {
                *slot = Slot::Abandoned;
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("the child process did not start within {} ms", wait.as_millis()),
                ));
            }
            slot = self.ready.wait_timeout(slot, deadline - now).unwrap_or_else(PoisonError::into_inner).0;
        }
    }
}

/// Starts the spawner thread; the sender that reaches it.
fn start_spawner() -> std::io::Result<std::sync::mpsc::Sender<Request>> {
    let (tx, rx) = std::sync::mpsc::channel::<Request>();
    std::thread::Builder::new().name("toolshed-spawner".to_owned()).spawn(move || {
        for (mut command, reply) in rx {
            let spawned = command.spawn();
            let mut slot = reply.slot.lock().unwrap_or_else(PoisonError::into_inner);
            if let Slot::Abandoned = &*slot {
                drop(slot);
                // Started after its caller gave up: killed and reaped here, or it would run unowned.
                if let Ok(mut child) = spawned {
                    let _ = child.kill();
                    let _ = child.wait();
                }
                continue;
            }
            *slot = Slot::Done(spawned);
            reply.ready.notify_all();
        }
    })?;
    Ok(tx)
}

/// Leaves without running the plugin's or the runtime's destructors: the answer is sent, and the parent
/// kills the group anyway.
pub(crate) fn exit(code: i32) -> ! {
    // SAFETY: ends the process.
    unsafe { nix::libc::_exit(code) }
}

/// Sets the limits the host passed as arguments (address space, CPU seconds; 0 for none) on this process, no
/// core dumps, and death with the host, whose pid is the third argument, before anything of the job is read.
/// Shared with out-of-process plugins' children (`crate::registry::remote`).
pub(crate) fn limit_self() {
    use nix::libc;
    // Before anything else: nothing of the host's state (signals, descriptors, terminal) is this child's.
    if clean::clean_self().is_err() {
        exit(2);
    }
    let args: Vec<u64> = std::env::args().skip(2).filter_map(|arg| arg.parse().ok()).collect();
    let [memory, cpu_seconds, parent] = args[..] else { exit(2) };
    let limit = |resource, soft: u64, hard: u64| {
        let value = libc::rlimit { rlim_cur: soft as libc::rlim_t, rlim_max: hard as libc::rlim_t };
        // SAFETY: a plain system call on a stack value.
        if unsafe { libc::setrlimit(resource, &value) } != 0 {
            exit(2);
        }
    };
    if memory > 0 {
        limit(libc::RLIMIT_AS, memory, memory);
    }
    if cpu_seconds > 0 {
        // SIGXCPU at the soft limit; SIGKILL a second later if it is caught.
        limit(libc::RLIMIT_CPU, cpu_seconds, cpu_seconds + 1);
    }
    limit(libc::RLIMIT_CORE, 0, 0);
    // SAFETY: plain system calls. The parent check after the prctl closes the race with a host that died
    // before it: then this process already belongs to someone else.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 || u64::from(libc::getppid() as u32) != parent {
            exit(2);
        }
    }
}

/// The socket to the host: a copy of stdout, taken before anything else runs; stdout proper then points at
/// stderr, so whatever the plugin prints lands in the stderr the parent keeps, not in the frames.
pub(crate) fn take_socket() -> File {
    // SAFETY: plain descriptor calls on the standard descriptors.
    unsafe {
        let fd = nix::libc::dup(1);
        if fd < 0 || nix::libc::dup2(2, 1) < 0 {
            exit(2);
        }
        File::from_raw_fd(fd)
    }
}

/// Reads the child's stderr to its end, keeping the last [`STDERR_TAIL`] bytes, and sends them. (A channel,
/// not a join: a process the job started outside its group could hold the pipe open.)
pub(crate) fn keep_tail(mut stderr: std::process::ChildStderr) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut tail = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            tail.extend_from_slice(&buf[..n]);
            if tail.len() > 2 * STDERR_TAIL {
                tail.drain(..tail.len() - STDERR_TAIL);
            }
        }
        let _ = tx.send(String::from_utf8_lossy(&tail).into_owned());
    });
    rx
}
