//! Child-process jobs: a plugin's parser of hostile content runs in a child process under rlimits, so a stack
//! overflow, an allocation failure, an abort or an endless loop ends the child and becomes a tool error.
//!
//! A plugin asks through the `isolate.run` service (`HostClient::isolated`). The child is the host's own
//! binary in a hidden mode ([`CHILD_ARG`]): it loads the same checked library copy, handed down as an open
//! descriptor (no second copy, no path a repository could swap), builds the same handler with the same
//! config, and runs its `job` on a thread with the configured stack. The job's host-service calls come back
//! over the pipe and run here, under the calling call's checks, so paths, `.clineignore` and policy stay the
//! host's. This is the mechanism whole out-of-process plugins build on.
//!
//! Frames on the socket pair between them are a little-endian `u32` length and that many bytes of JSON. The
//! child talks on a duplicate of its stdout (the socket) taken before anything else runs; its stdout proper
//! then points at its stderr, so a plugin that prints cannot corrupt the frames. Its stderr is kept (the
//! tail) to say why it died.

pub(crate) mod child;
mod exit;

pub use crate::registry::remote::{child_main as plugin_host_main, PLUGIN_HOST_ARG};
pub use child::main as child_main;

use crate::child_process::frames::{self, Frame, FrameReader};
pub use crate::child_process::set_executable;
use crate::child_process::{executable, keep_tail};
use crate::config::IsolationConfig;
use crate::registry::loader::HandlerOrigin;
use serde::{Deserialize, Serialize};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use toolshed_plugin_api::services::{IsolateRequest, IsolateResponse};
use toolshed_plugin_api::{Host, ServiceError, ServiceErrorKind};

/// The first argument that puts the binary in child mode.
pub const CHILD_ARG: &str = "__isolated-job";

/// The descriptor the library copy arrives on in the child (its stdin).
const LIBRARY_FD: i32 = crate::child_process::LIBRARY_FD;

/// The first frame a child gets.
#[derive(Debug, Serialize, Deserialize)]
struct Start {
    tool: String,
    config: String,
    /// The job call: a `ToolCall` with a `job` key.
    call: String,
    /// The services the job may call (forwarded here).
    services: Vec<String>,
    stack_mb: u64,
    max_frame: u64,
}

/// What the child sends.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ToHost {
    Service {
        name: String,
        request: String,
    },
    Log {
        level: u8,
        message: String,
    },
    /// `execute`'s answer at the boundary: `ok` false is the boundary's own failure (a caught panic).
    Done {
        ok: bool,
        text: String,
    },
    /// The child could not start the job (the library or the handler).
    Broken {
        message: String,
    },
}

/// What the host answers a forwarded service call with.
#[derive(Debug, Serialize, Deserialize)]
struct Reply {
    ok: bool,
    text: String,
}

/// Registers `isolate.run`, offered when `[isolation] enabled` is on and the call knows its handler's library;
/// without it a plugin runs its jobs in place (`HostClient::isolated`).
pub(crate) fn register(router: &mut crate::services::host::Router, limits: IsolationConfig) {
    let enabled = limits.enabled;
    let children = Children::default();
    router
        .register::<toolshed_plugin_api::services::IsolateRun>(move |call, req| {
            let origin = call
                .origin
                .ok_or_else(|| ServiceError::new(ServiceErrorKind::UnknownService, "this call cannot run jobs"))?;
            run(origin, &limits, &children, req, call, &call.cancels(), call.tool)
        })
        .offered_when(move |call| enabled && call.origin.is_some());
}

/// Runs `request`'s job of the handler `origin` in a child process, forwarding its service calls to `host`.
pub(crate) fn run(
    origin: &HandlerOrigin,
    limits: &IsolationConfig,
    children: &Children,
    request: IsolateRequest,
    host: &dyn Host,
    cancels: &crate::task::Cancels<'_>,
    called_as: &str,
) -> Result<IsolateResponse, ServiceError> {
    let failed = |message: String| ServiceError::new(ServiceErrorKind::Failed, message);
    let library = origin.library.file().ok_or_else(|| failed("the plugin's library copy is not open".to_owned()))?;
    let call = serde_json::json!({ "tool": called_as, "input": request.input, "job": request.job }).to_string();
    let services: Vec<String> = host
        .services()
        .into_iter()
        .map(abi_stable::std_types::RString::into_string)
        .filter(|s| s != <toolshed_plugin_api::services::IsolateRun as toolshed_plugin_api::services::Service>::NAME)
        .collect();
    let start = Start {
        tool: origin.tool.clone(),
        config: origin.config.clone(),
        call,
        services,
        stack_mb: limits.stack_mb,
        max_frame: limits.max_output_bytes,
    };
    let deadline = Instant::now() + Duration::from_millis(limits.timeout_ms);
    let _slot = Slot::take(children, limits.max_children, cancels, deadline).map_err(|ended| match ended {
        Ended::Cancelled => ServiceError::new(ServiceErrorKind::Cancelled, "the call was cancelled"),
        _ => failed(format!(
            "the parser waited for one of the [isolation] max_children = {} child processes longer than \
             [isolation] timeout_ms = {}",
            limits.max_children, limits.timeout_ms
        )),
    })?;
    let _pipe_guard = PipeSignalBlocked::new();
    let (mut child, socket) = spawn(limits, library).map_err(failed)?;
    // Ended with the host, whatever the job starts; let go of once the child is reaped, at the end of scope.
    let _kept = crate::child_process::keeper::keep(child.id());
    let stderr = child.stderr.take().map(keep_tail);
    // A cancellation shuts the socket, so the wait for the child's next frame ends at once.
    let outcome = match socket.try_clone() {
        Ok(shut) => {
            let _guards = cancels.on_cancel(std::sync::Arc::new(move || {
                let _ = shut.shutdown(std::net::Shutdown::Both);
            }));
            converse(socket, &start, deadline, limits, host)
        }
        Err(e) => Err(Ended::Message(format!("cannot use the parser's socket: {e}"))),
    };
    // The cancellation shut the socket: a write or read that failed after it is the cancellation, not a death.
    let outcome = match outcome {
        Err(Ended::Died) if cancels.is_cancelled() => Err(Ended::Cancelled),
        outcome => outcome,
    };
    // A child that closed its pipe is usually dying: its own exit says why, not the kill that follows.
    let exited = match outcome {
        Err(Ended::Died) => wait_for_exit(&mut child, deadline, cancels),
        _ => None,
    };
    // Whatever happened, the child has nothing left to do: kill its group and reap it.
    kill_group(&child);
    let status = exited.or_else(|| child.wait().ok());
    let tail = stderr.and_then(|tail| tail.recv_timeout(deadline.saturating_duration_since(Instant::now())).ok());
    let tail = tail.unwrap_or_default();
    match outcome {
        Ok(answer) => Ok(answer),
        Err(Ended::Cancelled) => Err(ServiceError::new(ServiceErrorKind::Cancelled, "the call was cancelled")),
        Err(Ended::Message(message)) => Err(failed(message)),
        Err(Ended::TimedOut) => Err(failed(format!(
            "the parser took longer than the child-process limit, [isolation] timeout_ms = {}",
            limits.timeout_ms
        ))),
        Err(Ended::Died) if exited.is_none() => {
            Err(failed("the parser's child process closed its answer pipe without answering".to_owned()))
        }
        Err(Ended::Died) => Err(failed(exit::describe(status, &tail, limits))),
    }
}

/// Waits, until `deadline` or the call's end, for a child that closed its pipe to exit by itself. A helper
/// thread blocks in `waitid` (without reaping: the status stays for `try_wait`), so this wakes on the exit,
/// the cancellation or the deadline, whichever is first, and never polls. A helper still waiting when this
/// gives up returns once the kill that follows has ended the child.
fn wait_for_exit(
    child: &mut Child,
    deadline: Instant,
    cancels: &crate::task::Cancels<'_>,
) -> Option<std::process::ExitStatus> {
    use nix::sys::wait::{waitid, Id, WaitPidFlag};
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).ok()?);
    let (exited, wait) = crossbeam_channel::bounded(1);
    let spawned = std::thread::Builder::new().name("toolshed-job-exit".to_owned()).spawn(move || {
        let _ = exited.send(waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT).is_ok());
    });
    if spawned.is_err() {
        return child.try_wait().ok().flatten();
    }
    match cancels.recv(&wait, Some(deadline)) {
        Ok(Some(true)) => child.try_wait().ok().flatten(),
        _ => None,
    }
}

/// A runtime's children running now, against `[isolation] max_children`: each may take `memory_mb` of
/// address space, so parallel hostile reads must not multiply it without bound.
#[derive(Debug, Default)]
pub(crate) struct Children(std::sync::Arc<Places>);

#[derive(Debug, Default)]
struct Places {
    running: std::sync::Mutex<u64>,
    freed: std::sync::Condvar,
}

/// One place among a runtime's [`Children`], given back on drop.
struct Slot<'a>(&'a Children);

impl<'a> Slot<'a> {
    fn take(
        children: &'a Children,
        max: u64,
        cancels: &crate::task::Cancels<'_>,
        deadline: Instant,
    ) -> Result<Self, Ended> {
        // A cancellation wakes the wait for a free place (under the lock, so it cannot slip in before it).
        let places = std::sync::Arc::clone(&children.0);
        let _guards = cancels.on_cancel(std::sync::Arc::new(move || {
            let _running = places.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            places.freed.notify_all();
        }));
        let places = &children.0;
        let mut running = places.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            if *running < max.max(1) {
                *running += 1;
                return Ok(Self(children));
            }
            if cancels.is_cancelled() {
                return Err(Ended::Cancelled);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Ended::TimedOut);
            }
            running =
                places.freed.wait_timeout(running, deadline - now).unwrap_or_else(std::sync::PoisonError::into_inner).0;
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let places = &(self.0).0;
        let mut running = places.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *running = running.saturating_sub(1);
        places.freed.notify_one();
    }
}

/// SIGPIPE blocked on the calling thread while it talks to a child: the `toolshed` binary ignores it, but a
/// host embedding the runtime may not, and a child that died at once must be an EPIPE, not the host's end.
/// On drop, a SIGPIPE left pending by such a write is taken off before the old mask comes back.
struct PipeSignalBlocked(Option<nix::sys::signal::SigSet>);

impl PipeSignalBlocked {
    fn new() -> Self {
        use nix::sys::signal::{SigSet, SigmaskHow, Signal};
        let mut old = SigSet::empty();
        let blocked = SigSet::from(Signal::SIGPIPE);
        let ok = nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&blocked), Some(&mut old)).is_ok();
        Self(ok.then_some(old))
    }
}

impl Drop for PipeSignalBlocked {
    fn drop(&mut self) {
        use nix::sys::signal::{SigSet, SigmaskHow, Signal};
        let Some(old) = self.0.take() else { return };
        if old.contains(Signal::SIGPIPE) {
            return;
        }
        let pipe = SigSet::from(Signal::SIGPIPE);
        if pipe_pending() {
            let _ = pipe.wait();
        }
        let _ = nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
    }
}

/// Whether a SIGPIPE is pending for this thread or the process.
fn pipe_pending() -> bool {
    let mut set = std::mem::MaybeUninit::<nix::libc::sigset_t>::uninit();
    // SAFETY: sigpending fills the set it is given; it is read only after success.
    unsafe {
        if nix::libc::sigpending(set.as_mut_ptr()) != 0 {
            return false;
        }
        nix::libc::sigismember(set.as_ptr(), nix::libc::SIGPIPE) == 1
    }
}

/// Why a conversation with a child ended without an answer.
enum Ended {
    /// The child died or closed its pipe: its exit status says why.
    Died,
    TimedOut,
    Cancelled,
    /// A protocol or job-start failure, described.
    Message(String),
}

/// Starts a child: the library copy as its stdin, one end of a socket pair as its stdout (frames go both
/// ways on it), its stderr a pipe. Its limits, its death with the host and its leaving its group are set by
/// the child itself before it reads anything, from its arguments: with no code to run between fork and exec,
/// the standard library starts it with `posix_spawn`, so the host's pages are not copied-on-write by a fork
/// (a fork copies the whole host's page tables; dropping it halved a document read in the bench).
fn spawn(limits: &IsolationConfig, library: &std::fs::File) -> Result<(Child, UnixStream), String> {
    let executable = executable()?;
    let (ours, theirs) = UnixStream::pair().map_err(|e| format!("cannot make a socket for the parser: {e}"))?;
    let library = library.try_clone().map_err(|e| format!("cannot hand the plugin copy down: {e}"))?;
    let memory = limits.memory_mb.saturating_mul(1024 * 1024);
    let cpu_seconds = limits.cpu_ms.div_ceil(1000).max(1);
    let mut command = Command::new(&executable);
    command
        .arg(CHILD_ARG)
        .args([memory.to_string(), cpu_seconds.to_string(), std::process::id().to_string()])
        .stdin(Stdio::from(library))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stderr(Stdio::piped())
        .env_clear()
        .current_dir("/")
        .process_group(0);
    let child = crate::child_process::spawn(command, Duration::from_millis(limits.timeout_ms.max(1))).map_err(|e| {
        match e.kind() {
            std::io::ErrorKind::TimedOut => format!(
                "the parser's child process {} did not start within [isolation] timeout_ms = {}",
                executable.display(),
                limits.timeout_ms
            ),
            _ => format!("cannot start the parser's child process {}: {e}", executable.display()),
        }
    })?;
    Ok((child, ours))
}

fn kill_group(child: &Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
}

/// Sends the job and answers the child's service calls until it answers, dies, or runs out of time.
fn converse(
    socket: UnixStream,
    start: &Start,
    deadline: Instant,
    limits: &IsolationConfig,
    host: &dyn Host,
) -> Result<IsolateResponse, Ended> {
    let mut to_child =
        socket.try_clone().map_err(|e| Ended::Message(format!("cannot use the parser's socket: {e}")))?;
    let start = serde_json::to_vec(start).map_err(|e| Ended::Message(e.to_string()))?;
    // A child that died at once leaves a closed pipe: its status says why.
    frames::write(&mut to_child, &start).map_err(|_| Ended::Died)?;
    let mut reader = FrameReader::new(socket, limits.max_output_bytes);
    loop {
        let frame = loop {
            if host.is_cancelled() {
                return Err(Ended::Cancelled);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Ended::TimedOut);
            }
            match reader.next(deadline - now) {
                Ok(Frame::Complete(bytes)) => break bytes,
                Ok(Frame::Pending) => {}
                // The cancellation shut the socket: that is why it closed.
                Ok(Frame::Closed) | Err(frames::Error::Io) if host.is_cancelled() => return Err(Ended::Cancelled),
                Ok(Frame::Closed) | Err(frames::Error::Io) => return Err(Ended::Died),
                Err(frames::Error::TooLarge(size)) => {
                    return Err(Ended::Message(format!(
                        "the parser's child process sent {size} bytes at once, more than [isolation] \
                         max_output_bytes = {}",
                        limits.max_output_bytes
                    )))
                }
            }
        };
        let message: ToHost = serde_json::from_slice(&frame)
            .map_err(|e| Ended::Message(format!("the parser's child process sent an unreadable message: {e}")))?;
        match message {
            ToHost::Service { name, request } => {
                let reply = if name
                    == <toolshed_plugin_api::services::IsolateRun as toolshed_plugin_api::services::Service>::NAME
                {
                    Reply { ok: false, text: nested_error() }
                } else {
                    match host.service(name.as_str().into(), request.as_str().into()) {
                        abi_stable::std_types::RResult::ROk(text) => Reply { ok: true, text: text.into_string() },
                        abi_stable::std_types::RResult::RErr(text) => Reply { ok: false, text: text.into_string() },
                    }
                };
                let reply = serde_json::to_vec(&reply).map_err(|e| Ended::Message(e.to_string()))?;
                frames::write(&mut to_child, &reply).map_err(|_| Ended::Died)?;
            }
            ToHost::Log { level, message } => host.log(level, message.as_str().into()),
            ToHost::Done { ok: true, text } => {
                return serde_json::from_str::<IsolateResponse>(&text).map_err(|e| {
                    Ended::Message(format!("the plugin's job answered something that is not a job answer: {e}"))
                })
            }
            ToHost::Done { ok: false, text } => return Err(Ended::Message(format!("the plugin's job failed: {text}"))),
            ToHost::Broken { message } => return Err(Ended::Message(message)),
        }
    }
}

fn nested_error() -> String {
    let error = ServiceError::new(ServiceErrorKind::UnknownService, "isolate.run is not offered inside a job");
    serde_json::to_string(&error).unwrap_or_default()
}
