//! Starting a plugin's child process, its handshake, and the reader thread that routes its frames and
//! reports its death.

use super::{lock, Conn, Hello, Routed, Routes, Shared, Spec, Start, ToHost, PLUGIN_HOST_ARG};
use crate::child_process::{executable, frames, keep_tail};
use crate::config::ProcessLimits;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

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
    let memory = limits.memory_mb.saturating_mul(1024 * 1024);
    let cpu_seconds = limits.cpu_ms.div_ceil(1000);
    let mut process = Command::new(&executable)
        .arg(PLUGIN_HOST_ARG)
        .args([memory.to_string(), cpu_seconds.to_string(), std::process::id().to_string()])
        .stdin(Stdio::from(library))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stderr(Stdio::piped())
        .env_clear()
        .current_dir("/")
        .process_group(0)
        .spawn()
        .map_err(|e| failed(format!("cannot run {}: {e}", executable.display())))?;
    let stderr = process.stderr.take().map(keep_tail);
    let pid = i32::try_from(process.id()).unwrap_or(0);
    let conn = Arc::new(Conn {
        socket: ours,
        writer: Mutex::new(()),
        routes: Mutex::new(Routes::default()),
        next_id: AtomicU64::new(1),
        pid,
        intent: Mutex::new(None),
        ending: AtomicBool::new(false),
    });
    let _ = conn.socket.set_write_timeout(Some(Duration::from_millis(limits.stall_ms.max(1))));
    let hello = handshake(&conn, specs, limits);
    let hello = match hello {
        Ok(hello) => hello,
        Err(why) => {
            conn.kill(why.clone(), true);
            let status = process.wait().ok();
            let tail = stderr.and_then(|rx| rx.recv_timeout(Duration::from_millis(limits.kill_grace_ms)).ok());
            let why = match why.as_str() {
                "" => describe(&plugin, status, tail.as_deref().unwrap_or(""), limits),
                _ => why,
            };
            return Err(format!("the plugin `{}` did not start: {why}", crate::shown::escape_line(&plugin)));
        }
    };
    let reader = conn.socket.try_clone().map_err(|e| failed(format!("cannot use the socket: {e}")))?;
    let weak = Arc::downgrade(shared);
    let watched = Arc::clone(&conn);
    let max = limits.max_message_bytes;
    let name = hello.name.clone();
    let limits = limits.clone();
    std::thread::Builder::new()
        .name("toolshed-plugin-reader".to_owned())
        .spawn(move || read_child(watched, reader, process, stderr, weak, name, max, limits))
        .map_err(|e| {
            conn.kill(String::new(), false);
            failed(format!("cannot start its reader thread: {e}"))
        })?;
    Ok((conn, hello))
}

/// Sends the start frame and reads the hello, within `start_timeout_ms`. An empty error means the child
/// died or closed the socket (its exit status says why).
fn handshake(conn: &Conn, specs: &[Spec], limits: &ProcessLimits) -> Result<Hello, String> {
    let start = Start { handlers: specs.to_vec(), max_message: limits.max_message_bytes };
    conn.send(&start).map_err(|_| String::new())?;
    let timeout = Duration::from_millis(limits.start_timeout_ms.max(1));
    let _ = conn.socket.set_read_timeout(Some(timeout));
    let mut socket = &conn.socket;
    let answer = frames::read_blocking(&mut socket, limits.max_message_bytes);
    let _ = conn.socket.set_read_timeout(None);
    let bytes = match answer {
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
/// reaps it, tells every call in flight why, and counts the crash.
#[allow(clippy::too_many_arguments)]
fn read_child(
    conn: Arc<Conn>,
    socket: UnixStream,
    mut process: Child,
    stderr: Option<std::sync::mpsc::Receiver<String>>,
    shared: Weak<Shared>,
    plugin: String,
    max: u64,
    limits: ProcessLimits,
) {
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
        let route = lock(&conn.routes).waiting.get(&id).cloned();
        if let Some(route) = route {
            let _ = route.send(Routed::Message(message));
        }
    };
    conn.ending.store(true, Ordering::Release);
    if let Some(why) = broke {
        conn.kill(format!("the plugin `{}` broke the protocol: {why}", crate::shown::escape_line(&plugin)), true);
    }
    // A child whose socket closed is usually exiting: give it `kill_grace_ms` to finish, so its own status
    // says why. One that lingers with its connection cut is killed, and said to be.
    if lock(&conn.intent).is_none() {
        let deadline = std::time::Instant::now() + Duration::from_millis(limits.kill_grace_ms);
        while matches!(process.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        if matches!(process.try_wait(), Ok(None)) {
            conn.kill(
                format!(
                    "the plugin `{}` closed its connection to the host without exiting; its process was killed and \
                     restarts for the next call",
                    crate::shown::escape_line(&plugin)
                ),
                true,
            );
        }
    }
    // Whatever ended the conversation, the child (and its group) has nothing left to do.
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(conn.pid), nix::sys::signal::Signal::SIGKILL);
    let status = process.wait().ok();
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
    let waiting = {
        let mut routes = lock(&conn.routes);
        routes.dead = Some(why.clone());
        std::mem::take(&mut routes.waiting)
    };
    for route in waiting.into_values() {
        let _ = route.send(Routed::Died(why.clone()));
    }
    if crash && let Some(shared) = shared.upgrade() {
        tracing::warn!(plugin = %plugin, "{why}");
        shared.crashed(&why);
    }
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
        _ if limits.memory_mb > 0
            && (stderr.contains("memory allocation of") || stderr.contains("capacity overflow")) =>
        {
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
