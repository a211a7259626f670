//! Starting a plugin's child process, its handshake, and the reader thread that routes its frames and
//! reports its death.

use super::{
    after, lock, Conn, Hello, Routed, Routes, SendError, Shared, Spec, Start, ToHost, PLUGIN_HOST_ARG, REAP_WAIT_MIN,
};
use crate::child_process::{executable, frames, keep_tail};
use crate::config::ProcessLimits;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

/// Starts a child on `shared`'s library, builds `specs` in it, and waits for its hello.
pub(super) fn spawn(shared: &Arc<Shared>, specs: &[Spec]) -> Result<(Arc<Conn>, Hello), String> {
    let limits = &shared.limits;
    let plugin = shared.plugin();
    let failed =
        |why: String| format!("the plugin `{}` cannot start its process: {why}", crate::shown::escape_line(&plugin));
    let executable = executable().map_err(failed)?;
    let library = shared.library.file().ok_or_else(|| failed("the library copy is not open".to_owned()))?;
    let library = library.try_clone().map_err(|e| failed(format!("cannot hand the library copy down: {e}")))?;
    let (ours, theirs) = UnixStream::pair().map_err(|e| failed(format!("cannot make a socket: {e}")))?;
    // Before the child exists, so no error path below leaves it unwatched.
    let watcher_socket = ours.try_clone().map_err(|e| failed(format!("cannot use the socket: {e}")))?;
    let reader_socket = ours.try_clone().map_err(|e| failed(format!("cannot use the socket: {e}")))?;
    let memory = limits.memory_mb.saturating_mul(1024 * 1024);
    let cpu_seconds = limits.cpu_ms.div_ceil(1000);
    let mut command = Command::new(&executable);
    command
        .arg(PLUGIN_HOST_ARG)
        .args([memory.to_string(), cpu_seconds.to_string(), std::process::id().to_string()])
        .stdin(Stdio::from(library))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stderr(Stdio::piped())
        .env_clear()
        .current_dir("/")
        .process_group(0);
    let mut process = crate::child_process::spawn(command, Duration::from_millis(limits.start_timeout_ms.max(1)))
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::TimedOut => failed(format!(
                "{} did not start within [plugins.process] start_timeout_ms = {}",
                executable.display(),
                limits.start_timeout_ms
            )),
            _ => failed(format!("cannot run {}: {e}", executable.display())),
        })?;
    let stderr = process.stderr.take().map(keep_tail);
    let kept = crate::child_process::keeper::keep(process.id());
    let pid = i32::try_from(process.id()).unwrap_or(0);
    let conn = Arc::new(Conn {
        socket: ours,
        writer: Mutex::new(()),
        routes: Mutex::new(Routes::default()),
        next_id: AtomicU64::new(1),
        pid,
        max_message: limits.max_message_bytes,
        stall: Duration::from_millis(limits.stall_ms.max(1)),
        intent: Mutex::new(None),
        ending: AtomicBool::new(false),
        counted: AtomicBool::new(false),
        reaped: Mutex::new(None),
        exited: Condvar::new(),
    });
    let watched = Arc::clone(&conn);
    let watcher = std::thread::Builder::new().name("toolshed-plugin-waiter".to_owned()).spawn(move || {
        watch_child(&watched, process, &watcher_socket);
        drop(kept);
    });
    if let Err(e) = watcher {
        // The process went down with the closure: it was never waited for. Nothing else knows its number.
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        return Err(failed(format!("cannot start the thread that waits for it: {e}")));
    }
    let _ = conn.socket.set_write_timeout(Some(conn.stall));
    let hello = match handshake(&conn, specs, limits) {
        Ok(hello) => hello,
        Err(why) => {
            conn.kill(why.clone(), true);
            let grace = Duration::from_millis(limits.kill_grace_ms);
            let (_, status) = conn.wait_reaped(after(grace.max(REAP_WAIT_MIN)));
            let tail = stderr.and_then(|rx| rx.recv_timeout(Duration::from_millis(limits.kill_grace_ms)).ok());
            let why = match why.as_str() {
                "" => describe(&plugin, status, tail.as_deref().unwrap_or(""), limits),
                _ => why,
            };
            return Err(format!("the plugin `{}` did not start: {why}", crate::shown::escape_line(&plugin)));
        }
    };
    let weak = Arc::downgrade(shared);
    let watched = Arc::clone(&conn);
    let name = hello.name.clone();
    let limits = limits.clone();
    std::thread::Builder::new()
        .name("toolshed-plugin-reader".to_owned())
        .spawn(move || read_child(watched, reader_socket, stderr, weak, name, limits))
        .map_err(|e| {
            conn.kill(String::new(), false);
            failed(format!("cannot start its reader thread: {e}"))
        })?;
    Ok((conn, hello))
}

/// Waits for the child to exit, kills what is left of its group while its number is still reserved (an
/// exited leader not yet reaped keeps it), reaps it, and shuts the host's end of the socket. The socket's
/// end of file would not come by itself while something the plugin forked still holds the other end; the
/// reader thread learns of the death from this shutdown instead.
fn watch_child(conn: &Conn, mut process: Child, socket: &UnixStream) {
    let pid = conn.pid;
    // Whether waitid saw our child exit (and left it unreaped). An error (ECHILD: something else reaped it,
    // as the kernel does for a host that ignores SIGCHLD) says nothing of the kind: its number, and so its
    // group's, may belong to another process already.
    let exited = loop {
        // SAFETY: waitid on our own child with a zeroed siginfo, read only after success; WNOWAIT leaves it
        // unreaped.
        let waited = unsafe {
            let mut info: nix::libc::siginfo_t = std::mem::zeroed();
            match nix::libc::waitid(
                nix::libc::P_PID,
                pid as nix::libc::id_t,
                &mut info,
                nix::libc::WEXITED | nix::libc::WNOWAIT,
            ) {
                0 => Ok(info.si_pid()),
                _ => Err(std::io::Error::last_os_error()),
            }
        };
        match waited {
            Ok(waited) => break waited == pid && pid != 0,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break false,
        }
    };
    {
        let mut reaped = lock(&conn.reaped);
        if exited {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
            *reaped = Some(process.wait().ok());
        } else {
            // Never signalled, never waited for (a wait could block on a process that is not ours): what is
            // left of the group, if anything, is out of reach.
            *reaped = Some(process.try_wait().ok().flatten());
        }
    }
    conn.ending.store(true, Ordering::Release);
    conn.exited.notify_all();
    let _ = socket.shutdown(std::net::Shutdown::Both);
}

/// Reads one frame before `deadline`, however slowly the child sends it: the socket's timeout bounds each
/// read, this bounds them all.
fn read_before(socket: &UnixStream, max: u64, deadline: Instant) -> std::io::Result<Vec<u8>> {
    struct Until<'a>(&'a UnixStream, Instant);
    impl std::io::Read for Until<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let left = self.1.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(std::io::ErrorKind::TimedOut.into());
            }
            self.0.set_read_timeout(Some(left))?;
            let mut socket = self.0;
            socket.read(buf)
        }
    }
    let read = frames::read_blocking(&mut Until(socket, deadline), max);
    let _ = socket.set_read_timeout(None);
    read
}

/// Sends the start frame and reads the hello, within `start_timeout_ms`. An empty error means the child
/// died or closed the socket (its exit status says why).
fn handshake(conn: &Conn, specs: &[Spec], limits: &ProcessLimits) -> Result<Hello, String> {
    let start = Start { handlers: specs.to_vec(), max_message: limits.max_message_bytes };
    match conn.send(&start) {
        Ok(()) => {}
        Err(SendError::TooLarge(bytes)) => {
            return Err(format!(
                "its handlers' configuration is {bytes} bytes, over [plugins.process] max_message_bytes = {}",
                limits.max_message_bytes
            ))
        }
        Err(SendError::Unserializable(why)) => {
            return Err(format!("its handlers' configuration cannot be sent to it: {why}"));
        }
        Err(SendError::Gone) => return Err(String::new()),
    }
    let deadline = after(Duration::from_millis(limits.start_timeout_ms.max(1)));
    let bytes = match read_before(&conn.socket, limits.max_message_bytes, deadline) {
        Ok(bytes) => bytes,
        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
            return Err(format!(
                "it did not load its library within [plugins.process] start_timeout_ms = {}",
                limits.start_timeout_ms
            ))
        }
        Err(_) => return Err(String::new()),
    };
    match serde_json::from_slice::<ToHost>(&bytes) {
        Ok(ToHost::Hello(hello)) => Ok(hello),
        Ok(ToHost::Broken { message }) => Err(message),
        Ok(_) | Err(_) => Err("its process sent something other than its declarations".to_owned()),
    }
}

/// The reader thread of one child: routes every frame to the call it answers until the child dies, then
/// waits for it to be reaped, tells every call in flight why, and counts the crash.
fn read_child(
    conn: Arc<Conn>,
    socket: UnixStream,
    stderr: Option<std::sync::mpsc::Receiver<String>>,
    shared: Weak<Shared>,
    plugin: String,
    limits: ProcessLimits,
) {
    let max = limits.max_message_bytes;
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, socket);
    let broke = loop {
        let bytes = match frames::read_blocking(&mut reader, max) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break None,
            Err(e) if e.kind() == std::io::ErrorKind::Other => {
                break Some(format!("it sent a message over [plugins.process] max_message_bytes = {max} ({e})"))
            }
            Err(_) => break None,
        };
        let message = match serde_json::from_slice::<ToHost>(&bytes) {
            Ok(message) => message,
            Err(e) => break Some(format!("it sent an unreadable message ({e})")),
        };
        let id = match &message {
            ToHost::Built { id, .. }
            | ToHost::Service { id, .. }
            | ToHost::ListServices { id }
            | ToHost::Log { id, .. }
            | ToHost::Done { id, .. } => *id,
            ToHost::Hello(_) | ToHost::Broken { .. } => break Some("it sent a second hello".to_owned()),
        };
        if let Err(why) = conn.route(id, message, bytes.len() as u64) {
            break Some(why);
        }
    };
    conn.ending.store(true, Ordering::Release);
    if let Some(why) = broke {
        conn.kill(format!("the plugin `{}` broke the protocol: {why}", crate::shown::escape_line(&plugin)), true);
    }
    // A child whose socket closed is usually exiting: give it `kill_grace_ms` to finish, so its own status
    // says why. One that lingers with its connection cut is killed, and said to be.
    let grace = Duration::from_millis(limits.kill_grace_ms);
    if lock(&conn.intent).is_none() && !conn.wait_reaped(after(grace)).0 {
        conn.kill(
            format!(
                "the plugin `{}` closed its connection to the host without exiting; its process was killed and \
                 restarts for the next call",
                crate::shown::escape_line(&plugin)
            ),
            true,
        );
    }
    // Whatever ended the conversation, the child (and its group) has nothing left to do. SIGKILL is not
    // refused, but a process in uninterruptible sleep takes its time: the calls are not held for it.
    conn.signal_group();
    let (_, status) = conn.wait_reaped(after(grace.max(REAP_WAIT_MIN)));
    let intent = lock(&conn.intent).clone();
    let (why, crash) = match intent {
        Some((why, crash)) => (why, crash),
        None => {
            let tail = stderr
                .and_then(|rx| rx.recv_timeout(Duration::from_millis(limits.kill_grace_ms.max(1))).ok())
                .unwrap_or_default();
            (describe(&plugin, status, &tail, &limits), true)
        }
    };
    // The calls are told first: counting takes the supervisor's state, which a thread may hold for a while
    // (starting another child). A call that comes in meanwhile waits for the count (`Supervisor::live`), and
    // then sees the backoff this crash sets.
    let waiting = {
        let mut routes = lock(&conn.routes);
        routes.dead = Some(why.clone());
        std::mem::take(&mut routes.waiting)
    };
    for route in waiting.into_values() {
        let _ = route.tx.send(Routed::Died(why.clone()));
    }
    if crash && let Some(shared) = shared.upgrade() {
        tracing::warn!(plugin = %crate::shown::escape_line(&plugin), "{why}");
        shared.crashed(&why);
    }
    conn.counted.store(true, Ordering::Release);
}

/// Why a plugin's child died, in one line: the plugin, the signal or exit status, the last line it printed.
pub(super) fn describe(
    plugin: &str,
    status: Option<std::process::ExitStatus>,
    stderr: &str,
    limits: &ProcessLimits,
) -> String {
    use std::os::unix::process::ExitStatusExt;
    let plugin = crate::shown::escape_line(plugin);
    // The last line that says something: Rust's hint about backtraces says nothing here.
    let line = stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with("note: run with `RUST_BACKTRACE"))
        .unwrap_or("");
    let line: String = line.chars().take(300).collect();
    let why = match line.is_empty() {
        true => String::new(),
        false => format!(": {}", crate::shown::escape_line(&line)),
    };
    let how = match (status.and_then(|s| s.signal()), status.and_then(|s| s.code())) {
        // Rust's allocation failure prints this and aborts; the text alone could be the plugin's own.
        (Some(nix::libc::SIGABRT), _) if limits.memory_mb > 0 && stderr.contains("memory allocation of") => {
            format!("ran out of memory, [plugins.process] memory_mb = {}", limits.memory_mb)
        }
        (Some(nix::libc::SIGXCPU), _) => {
            format!("used up its CPU time, [plugins.process] cpu_ms = {} (SIGXCPU)", limits.cpu_ms)
        }
        (Some(signal), _) => {
            let name =
                nix::sys::signal::Signal::try_from(signal).map_or_else(|_| signal.to_string(), |s| s.to_string());
            format!("crashed ({name})")
        }
        (None, Some(code)) => format!("exited with status {code}"),
        (None, None) => "closed its connection".to_owned(),
    };
    format!("the plugin `{plugin}` {how}{why}; its process restarts for the next call")
}
