//! Out-of-process plugins (`[plugins] isolation = "process"`): a library runs in a child process, so a
//! segfault, an abort, an `exit` or a hang in it ends the child, never the host.
//!
//! The child is the host's own binary in a hidden mode ([`PLUGIN_HOST_ARG`]), on the mechanism of the
//! parser jobs (`crate::services::isolate`): it gets the checked library copy as an open descriptor, loads it
//! with the same loader checks, and speaks to the host in length-prefixed JSON frames over a socket pair. The
//! host never maps the library. Each handler the coordinator asks for is a [`RemoteHandler`]: a host-side
//! implementation of the frozen `ToolHandler` vtable, so the tool actor, the pipeline and the plugin ABI see
//! nothing new. `prepare`, `execute` and `partial` cross the socket; the plugin's host-service calls come back
//! on it and run here, on the calling worker thread, against that call's own host object, so policy, paths,
//! `.clineignore` and processes stay the host's.
//!
//! A [`Supervisor`] owns the child of one loaded library. When the child dies (a signal, an exit, a closed
//! socket, a protocol violation), its reader thread ends every call in flight with an error naming the plugin
//! and the cause, and the next call starts a new child after a backoff that doubles with each crash inside
//! `quarantine_window_ms`; `quarantine_after` crashes in that window quarantine the plugin (a
//! `PluginEvent::Quarantined`) until its library changes. A cancelled call whose plugin does not answer
//! within `kill_grace_ms` gets its child killed, so a plugin that loops cannot hold a worker. A hot reload
//! loads the new library in a new child; calls in flight finish on the old one, which is killed when the
//! last handler of the old version is dropped.

mod child;
mod handler;
mod spawn;
#[cfg(test)]
mod tests;

pub use child::main as child_main;

use crate::config::{PluginIsolation, ProcessLimits};
use crate::registry::loader::Library;
use abi_stable::sabi_trait::TD_Opaque;
use handler::RemoteHandler;
use serde::{Deserialize, Serialize};
use spawn::spawn;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolshed_plugin_api::{HostRef, ToolHandlerBox, ToolHandler_TO};

/// The first argument that puts the binary in plugin-host mode.
pub const PLUGIN_HOST_ARG: &str = "__plugin-host";

/// The libraries the project ships (`plugins/*`): `[plugins] isolation` is the default for every other one.
/// A library is known by its file name, the only name it has before something loads it.
pub const SHIPPED: &[&str] = &[
    "access_mcp_resource",
    "act_mode_respond",
    "apply_patch",
    "ask_followup_question",
    "attempt_completion",
    "browser_action",
    "condense",
    "execute_command",
    "focus_chain",
    "generate_explanation",
    "list_code_definition_names",
    "list_files",
    "load_mcp_documentation",
    "new_task",
    "plan_mode_respond",
    "read_file",
    "report_bug",
    "search_files",
    "summarize_task",
    "use_mcp_tool",
    "use_skill",
    "use_subagents",
    "web_fetch",
    "web_search",
    "write_to_file",
];

/// The stack of each thread a child runs a call on.
const CALL_STACK: usize = 8 * 1024 * 1024;

/// The name a library goes by in `[plugins] isolation_per_plugin`: its file name without `lib` and the
/// extension.
pub(crate) fn library_name(file: &Path) -> String {
    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    stem.strip_prefix(std::env::consts::DLL_PREFIX).map(str::to_owned).unwrap_or(stem)
}

/// Which libraries of a runtime run out of process, and how their children are kept.
pub(crate) struct Policy {
    default: PluginIsolation,
    per_plugin: BTreeMap<String, PluginIsolation>,
    limits: ProcessLimits,
    quarantined: OnQuarantine,
    /// `[plugins] lease_poll_ms`: how the runtime's libraries that stay in process are mapped (`loader`).
    lease_poll_ms: u64,
}

/// Told when a plugin is quarantined: its library file, its name, and why (the runtime makes it a plugin
/// event; the loading layer cannot name those).
pub(crate) type OnQuarantine = Arc<dyn Fn(&Path, &str, &str) + Send + Sync>;

impl Policy {
    pub fn new(config: &crate::config::PluginsConfig, quarantined: OnQuarantine) -> Self {
        Self {
            default: config.isolation,
            per_plugin: config.isolation_per_plugin.clone(),
            limits: config.process.clone(),
            quarantined,
            lease_poll_ms: config.lease_poll_ms,
        }
    }

    /// How often the leases of this runtime's libraries mapped in place are checked; 0 copies them instead.
    pub fn lease_poll_ms(&self) -> u64 {
        self.lease_poll_ms
    }

    /// Whether the library `file` runs in a child process.
    pub fn isolates(&self, file: &Path) -> bool {
        let name = library_name(file);
        let mode = match self.per_plugin.get(&name) {
            Some(mode) => *mode,
            None if SHIPPED.contains(&name.as_str()) => PluginIsolation::InProcess,
            None => self.default,
        };
        mode == PluginIsolation::Process
    }
}

/// What a handler is built from.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Spec {
    tool: String,
    config: String,
}

/// The first frame a child gets.
#[derive(Debug, Serialize, Deserialize)]
struct Start {
    /// The handlers to build at once (a restarted child's, in their numbering).
    handlers: Vec<Spec>,
    max_message: u64,
}

/// What the factory said for one handler.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Built {
    Ready,
    Declined,
    Failed(String),
}

/// The child's first answer: the library loaded and passed the loader's checks.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Hello {
    pub name: String,
    pub version: String,
    pub api_version: String,
    /// The plugin's declarations as JSON.
    pub declarations: String,
    built: Vec<Built>,
}

/// Which entry point of the handler a call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Phase {
    Prepare,
    Execute,
    Partial,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Prepare => "prepare",
            Phase::Execute => "execute",
            Phase::Partial => "partial",
        }
    }
}

/// What the host sends.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ToChild {
    /// Build handler number `handler` (the next one) from `spec`.
    Build {
        id: u64,
        handler: u32,
        spec: Spec,
    },
    Call {
        id: u64,
        handler: u32,
        phase: Phase,
        call: String,
    },
    /// A host-service answer for call `id`.
    Reply {
        id: u64,
        ok: bool,
        text: String,
    },
    /// The services call `id` may use.
    Services {
        id: u64,
        names: Vec<String>,
    },
    /// Call `id` was cancelled.
    Cancel {
        id: u64,
    },
}

/// What the child sends.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ToHost {
    Hello(Hello),
    /// The child could not load the library.
    Broken {
        message: String,
    },
    Built {
        id: u64,
        built: Built,
    },
    Service {
        id: u64,
        name: String,
        request: String,
    },
    ListServices {
        id: u64,
    },
    Log {
        id: u64,
        level: u8,
        message: String,
    },
    /// The phase's answer at the boundary: `ok` false is the boundary's own failure (a caught panic).
    Done {
        id: u64,
        ok: bool,
        text: String,
    },
}

/// A message for one waiting call (or build).
enum Routed {
    /// A message, and the size of its frame (which the receiver gives back to [`Conn::taken`]).
    Message(ToHost, u64),
    /// The child is gone; why, in one line.
    Died(String),
}

/// The host's end of one child.
struct Conn {
    socket: UnixStream,
    /// Serialises frames: each is written whole by one thread.
    writer: Mutex<()>,
    routes: Mutex<Routes>,
    next_id: AtomicU64,
    pid: i32,
    /// `[plugins.process] max_message_bytes`: the largest frame either side may send.
    max_message: u64,
    /// `[plugins.process] stall_ms`: the longest a message may take to write.
    stall: Duration,
    /// Set before the host kills the child on purpose: why (reported to the calls in flight instead of the
    /// signal), and whether it counts as a crash.
    intent: Mutex<Option<(String, bool)>>,
    /// The child is being killed or its socket closed: no new calls.
    ending: AtomicBool,
    /// The reader thread has told the calls in flight of the child's death and counted it (if it counts): a
    /// call that finds the child ending waits for this, so the next child starts after the backoff the crash
    /// sets.
    counted: AtomicBool,
    /// The child's exit status once it is reaped (`Some(None)`: it could not be read). Signals go to its
    /// group only while this is `None`, under this lock: once reaped, its number may belong to another.
    reaped: Mutex<Option<Option<std::process::ExitStatus>>>,
    exited: std::sync::Condvar,
}

#[derive(Default)]
struct Routes {
    waiting: HashMap<u64, Route>,
    /// Set once the child is dead: nothing will answer a new call.
    dead: Option<String>,
}

/// Where the answers to one call go, how many of their bytes wait there untaken, and how many log messages
/// were dropped because too many waited.
struct Route {
    tx: crossbeam_channel::Sender<Routed>,
    queued: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
}

/// The receiving end of a [`Route`].
struct Answers {
    rx: crossbeam_channel::Receiver<Routed>,
    queued: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
}

impl Answers {
    /// The next message, waiting until `deadline`; its bytes no longer count as waiting.
    fn recv_deadline(&self, deadline: Instant) -> Result<Routed, crossbeam_channel::RecvTimeoutError> {
        let routed = self.rx.recv_deadline(deadline)?;
        if let Routed::Message(_, bytes) = &routed {
            self.queued.fetch_sub(*bytes, Ordering::AcqRel);
        }
        Ok(routed)
    }

    /// How many of the call's log messages were dropped so far.
    fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Acquire)
    }
}

impl Conn {
    fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A channel for the answers to `id`, or why the child cannot give any.
    fn register(&self, id: u64) -> Result<Answers, String> {
        let mut routes = lock(&self.routes);
        if let Some(dead) = &routes.dead {
            return Err(dead.clone());
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        let (queued, dropped) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        routes.waiting.insert(id, Route { tx, queued: Arc::clone(&queued), dropped: Arc::clone(&dropped) });
        Ok(Answers { rx, queued, dropped })
    }

    fn unregister(&self, id: u64) {
        lock(&self.routes).waiting.remove(&id);
    }

    /// Passes a message of `bytes` to the call it answers. A child that sends faster than the call takes
    /// would grow the host's memory without bound, but an honest plugin does so too: it logs from a thread of
    /// its own while the call's host thread runs a long service call. So log messages that would make more than
    /// `max_message_bytes` wait for one call are dropped (and counted; the call warns once when it ends), and
    /// only other messages over twice that are a protocol violation: an honest plugin has at most one of
    /// those outstanding per call (a service request waits for its answer, the answer ends the call), and
    /// each is at most `max_message_bytes`.
    fn route(&self, id: u64, message: ToHost, bytes: u64) -> Result<(), String> {
        let routes = lock(&self.routes);
        let Some(route) = routes.waiting.get(&id) else {
            return Ok(());
        };
        let log = matches!(message, ToHost::Log { .. });
        let bound = if log { self.max_message } else { self.max_message.saturating_mul(2) };
        // A message always fits when nothing waits: its frame is within the cap.
        let admitted = route.queued.fetch_update(Ordering::AcqRel, Ordering::Acquire, |waiting| {
            (waiting == 0 || waiting.saturating_add(bytes) <= bound).then(|| waiting.saturating_add(bytes))
        });
        if admitted.is_err() {
            if log {
                route.dropped.fetch_add(1, Ordering::AcqRel);
                return Ok(());
            }
            return Err(format!(
                "it sent messages faster than the host took them (over twice [plugins.process] max_message_bytes \
                 = {} waiting for one call)",
                self.max_message
            ));
        }
        let _ = route.tx.send(Routed::Message(message, bytes));
        Ok(())
    }

    /// Whether new calls may go to this child: it is not being killed and its socket has not closed. (Set
    /// before the child is reaped, so a call that comes in while it is reaped goes to a new child.)
    fn usable(&self) -> bool {
        !self.ending.load(Ordering::Acquire)
    }

    /// Whether the child's death has been reported to its calls and counted.
    fn counted(&self) -> bool {
        self.counted.load(Ordering::Acquire)
    }

    /// Writes one message, refusing one over `max_message_bytes` (the child would take it for a protocol
    /// violation). A failure means the child is going: its reader thread reports why. A child that stopped
    /// reading for `stall_ms` is killed: a message cut short leaves nothing to resume, and no host thread may
    /// wait on it for ever.
    fn send(&self, message: &impl Serialize) -> Result<(), SendError> {
        let bytes = frame(message).map_err(|e| match e {
            FrameError::Unserializable(why) => SendError::Unserializable(why),
            FrameError::TooLarge(len) => SendError::TooLarge(len),
        })?;
        let len = (bytes.len() - 4) as u64;
        if len > self.max_message {
            return Err(SendError::TooLarge(len));
        }
        let _one = lock(&self.writer);
        let sent = write_all_nosignal(&self.socket, &bytes, after(self.stall));
        if let Err(e) = &sent
            && matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
        {
            self.kill(
                "the plugin's process stopped reading its messages for [plugins.process] stall_ms; it was \
                       killed and restarts for the next call"
                    .to_owned(),
                true,
            );
        }
        sent.map_err(|_| SendError::Gone)
    }

    /// Kills the child and its process group; `why` is what the calls in flight are told, `crash` whether
    /// it counts toward the backoff and the quarantine. The first intent wins.
    ///
    /// The host's end of the socket is shut down too: the reader thread then ends at once, tells the calls in
    /// flight and counts the death, even if the child cannot die yet (a process in uninterruptible sleep
    /// takes SIGKILL only when its system call ends) or something it forked still holds the other end. A call
    /// that waits for that report (`Supervisor::live`) is not held by the child.
    fn kill(&self, why: String, crash: bool) {
        lock(&self.intent).get_or_insert((why, crash));
        self.ending.store(true, Ordering::Release);
        self.signal_group();
        let _ = self.socket.shutdown(std::net::Shutdown::Both);
    }

    /// SIGKILL to the child and to its group, unless the child has been reaped. The child itself by its
    /// number, not only its group: it may have left the group (`setpgid` into another group of the session),
    /// which leaves its own group empty. Until it is reaped its number cannot belong to another process.
    fn signal_group(&self) {
        let reaped = lock(&self.reaped);
        // A number 0 (or less) would signal the host's own group.
        if reaped.is_none() && self.pid > 0 {
            let pid = nix::unistd::Pid::from_raw(self.pid);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
        }
    }

    /// Waits until the child is reaped, or `deadline`; its exit status then (`None` if not reaped by then or
    /// unreadable).
    fn wait_reaped(&self, deadline: Instant) -> (bool, Option<std::process::ExitStatus>) {
        let mut reaped = lock(&self.reaped);
        loop {
            if let Some(status) = *reaped {
                return (true, status);
            }
            let now = Instant::now();
            if now >= deadline {
                return (false, None);
            }
            reaped =
                self.exited.wait_timeout(reaped, deadline - now).unwrap_or_else(std::sync::PoisonError::into_inner).0;
        }
    }
}

/// Why a message did not go out.
enum SendError {
    /// Its frame is this many bytes, over `max_message_bytes`: nothing was written.
    TooLarge(u64),
    /// It could not be serialised (why): nothing was written, and the child is not to blame.
    Unserializable(String),
    /// The child is going; its reader thread says why.
    Gone,
}

/// Why a message could not be made into a frame.
enum FrameError {
    /// Serialising it failed: why.
    Unserializable(String),
    /// Its JSON is this many bytes, more than a frame's length can say.
    TooLarge(u64),
}

/// `wait` from now; a configured duration too long for the clock is as good as never.
fn after(wait: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(wait).unwrap_or_else(|| now + Duration::from_secs(u64::from(u32::MAX)))
}

/// Serialises `message` into a frame: the little-endian length, then the JSON, in one buffer (one write).
fn frame(message: &impl Serialize) -> Result<Vec<u8>, FrameError> {
    let mut bytes = vec![0u8; 4];
    serde_json::to_writer(&mut bytes, message).map_err(|e| FrameError::Unserializable(e.to_string()))?;
    let json = bytes.len() - 4;
    let len = u32::try_from(json).map_err(|_| FrameError::TooLarge(json as u64))?;
    bytes[..4].copy_from_slice(&len.to_le_bytes());
    Ok(bytes)
}

/// The least time the reader thread of a killed child waits for it to be reaped, however small
/// `kill_grace_ms` is: SIGKILL is not refused, but the kernel takes a moment to end a process.
const REAP_WAIT_MIN: Duration = Duration::from_secs(1);

/// The longest a call waits for the reader thread of a child that is ending to report its death, before it
/// gives up with an error: the reader's own waits (`kill_grace_ms` for the child to exit by itself, as long
/// again but at least [`REAP_WAIT_MIN`] for it to be reaped once killed, `kill_grace_ms` for the last lines
/// of its stderr), and `kill_grace_ms` more as a margin. The reader ends within its waits once the host's end
/// of the socket is shut down; this bound only keeps a call from waiting for ever should it not.
fn settle_time(limits: &ProcessLimits) -> Duration {
    let grace = Duration::from_millis(limits.kill_grace_ms);
    grace.saturating_mul(3).saturating_add(grace.max(REAP_WAIT_MIN))
}

/// Writes all of `bytes` with `MSG_NOSIGNAL`: a child that died makes this an `EPIPE`, never a SIGPIPE to a
/// host that embeds the runtime without ignoring it.
/// The socket's send timeout bounds each `send`; `deadline` bounds them all, so a reader that takes a
/// little at a time cannot stretch one message for ever.
pub(crate) fn write_all_nosignal(socket: &UnixStream, mut bytes: &[u8], deadline: Instant) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    while !bytes.is_empty() {
        if Instant::now() >= deadline {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        // SAFETY: a send from a live slice on an open socket.
        let sent =
            unsafe { nix::libc::send(socket.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), nix::libc::MSG_NOSIGNAL) };
        if sent < 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        bytes = &bytes[sent as usize..];
    }
    Ok(())
}

/// The child of one loaded library, restarted after crashes, killed when the last handler of the library
/// is dropped.
pub(crate) struct Supervisor {
    shared: Arc<Shared>,
}

struct Shared {
    /// The plugin's name (from its first child) and its library file, for messages and events.
    plugin: Mutex<String>,
    file: PathBuf,
    library: Arc<Library>,
    limits: ProcessLimits,
    quarantined: OnQuarantine,
    /// Held while a handler is built (its number is the next one, and its answer awaited) and while a child
    /// starts: a child started meanwhile would miss the handler being built. Taken before `state`, which is
    /// never held while the child is awaited: the reader thread of a child that dies takes `state` to count
    /// the crash.
    building: Mutex<()>,
    state: Mutex<State>,
}

struct State {
    child: Option<Arc<Conn>>,
    /// Every handler built so far, in the numbering calls use; a restarted child builds them all again.
    specs: Vec<Spec>,
    /// Crashes inside the quarantine window.
    crashes: VecDeque<Instant>,
    /// No child starts before this (the backoff after a crash).
    next_start: Instant,
    /// Why the plugin takes no more calls.
    quarantined: Option<String>,
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        if let Some(child) = lock(&self.shared.state).child.take() {
            child.kill("the plugin's library was unloaded".to_owned(), false);
        }
    }
}

impl Supervisor {
    /// Starts the first child of `library` (the checked copy of `file`) and returns what it declared.
    pub fn start(policy: &Policy, file: &Path, library: Arc<Library>) -> Result<(Arc<Self>, Hello), String> {
        let shared = Arc::new(Shared {
            plugin: Mutex::new(library_name(file)),
            file: file.to_owned(),
            library,
            limits: policy.limits.clone(),
            quarantined: Arc::clone(&policy.quarantined),
            building: Mutex::new(()),
            state: Mutex::new(State {
                child: None,
                specs: Vec::new(),
                crashes: VecDeque::new(),
                next_start: Instant::now(),
                quarantined: None,
            }),
        });
        let (conn, hello) = spawn(&shared, &[])?;
        *lock(&shared.plugin) = hello.name.clone();
        lock(&shared.state).child = Some(conn);
        Ok((Arc::new(Self { shared }), hello))
    }

    /// The handler of `tool` built with `config` in the child; `None` when the plugin declines it.
    pub fn handler(this: &Arc<Self>, tool: &str, config: &str) -> Result<Option<ToolHandlerBox>, String> {
        let shared = &this.shared;
        let spec = Spec { tool: tool.to_owned(), config: config.to_owned() };
        let _building = lock(&shared.building);
        let (conn, handler) = {
            let mut state = lock(&shared.state);
            let handler = u32::try_from(state.specs.len()).map_err(|_| "too many handlers".to_owned())?;
            let conn = match state.child.clone().filter(|c| c.usable()) {
                Some(conn) => conn,
                None => {
                    let (conn, _) = spawn(shared, &state.specs)?;
                    state.child = Some(Arc::clone(&conn));
                    conn
                }
            };
            (conn, handler)
        };
        let id = conn.id();
        let answers = conn.register(id)?;
        let refused = match conn.send(&ToChild::Build { id, handler, spec: spec.clone() }) {
            // A failed write means the child is going: its reader thread answers why.
            Ok(()) | Err(SendError::Gone) => None,
            Err(SendError::TooLarge(bytes)) => Some(format!(
                "the configuration of `{tool}` is {bytes} bytes, over [plugins.process] max_message_bytes = {}",
                shared.limits.max_message_bytes
            )),
            Err(SendError::Unserializable(why)) => {
                Some(format!("the configuration of `{tool}` cannot be sent to the plugin's process: {why}"))
            }
        };
        if let Some(why) = refused {
            conn.unregister(id);
            return Err(why);
        }
        let deadline = after(Duration::from_millis(shared.limits.start_timeout_ms));
        let answer = answers.recv_deadline(deadline);
        conn.unregister(id);
        let built = match answer {
            Ok(Routed::Message(ToHost::Built { built, .. }, _)) => built,
            Ok(Routed::Died(why)) => return Err(why),
            Ok(Routed::Message(..)) => Built::Failed("the plugin's process answered out of turn".to_owned()),
            Err(_) => {
                conn.kill(
                    format!("the plugin's process did not build `{tool}` within [plugins.process] start_timeout_ms"),
                    true,
                );
                return Err(format!(
                    "the plugin's process did not build `{tool}` within [plugins.process] start_timeout_ms = {}",
                    shared.limits.start_timeout_ms
                ));
            }
        };
        // Numbered even when declined or failed: the child holds an empty slot under this number too.
        lock(&shared.state).specs.push(spec);
        match built {
            Built::Ready => Ok(Some(ToolHandler_TO::from_value(
                RemoteHandler { supervisor: Arc::clone(this), handler, tool: tool.to_owned() },
                TD_Opaque,
            ))),
            Built::Declined => Ok(None),
            Built::Failed(message) => Err(message),
        }
    }

    /// A live child for a call: the current one, or a new one once the backoff has passed. Waits out the
    /// backoff and the report of a dying child's death (looking at the call's cancellation every `poll_ms`),
    /// the latter at most [`settle_time`].
    fn live(&self, host: &HostRef<'_>) -> Result<Arc<Conn>, String> {
        let shared = &self.shared;
        let limits = &shared.limits;
        let poll = Duration::from_millis(limits.poll_ms.max(1));
        let mut ending_since: Option<Instant> = None;
        loop {
            let next = lock(&shared.state).next(poll);
            match next {
                Next::Use(conn) => return Ok(conn),
                Next::Refuse(why) => return Err(why),
                Next::Wait { ending, pause } => {
                    if ending && ending_since.get_or_insert_with(Instant::now).elapsed() >= settle_time(limits) {
                        return Err(format!(
                            "the plugin `{}`'s previous process was killed but its end was not reported within {} \
                             ms (derived from [plugins.process] kill_grace_ms = {}); the call did not run. Try it \
                             again; if this repeats, the process is stuck in the kernel and the host needs a look",
                            crate::shown::escape_line(&shared.plugin()),
                            settle_time(limits).as_millis(),
                            limits.kill_grace_ms
                        ));
                    }
                    if host.is_cancelled() {
                        return Err("the call was cancelled while the plugin's process was restarting".to_owned());
                    }
                    std::thread::sleep(pause);
                    continue;
                }
                Next::Start => {}
            }
            // A child starts with every handler built so far: not while one is being built.
            let _building = lock(&shared.building);
            let mut state = lock(&shared.state);
            if !matches!(state.next(poll), Next::Start) {
                continue;
            }
            match spawn(shared, &state.specs) {
                Ok((conn, _)) => {
                    state.child = Some(Arc::clone(&conn));
                    return Ok(conn);
                }
                Err(why) => {
                    drop(state);
                    shared.crashed(&why);
                    return Err(why);
                }
            }
        }
    }
}

/// What a call that needs a child does next.
enum Next {
    /// Run on this child.
    Use(Arc<Conn>),
    /// Fail at once: the plugin is quarantined.
    Refuse(String),
    /// Look again after `pause`: the child is `ending` but its death not yet counted, or the backoff runs.
    Wait { ending: bool, pause: Duration },
    /// Start a new child.
    Start,
}

impl State {
    fn next(&self, poll: Duration) -> Next {
        if let Some(why) = &self.quarantined {
            return Next::Refuse(why.clone());
        }
        if let Some(conn) = self.child.as_ref().filter(|c| c.usable()) {
            return Next::Use(Arc::clone(conn));
        }
        // A child that is ending but not yet counted: starting another now would skip the backoff its crash is
        // about to set.
        if self.child.as_ref().is_some_and(|c| !c.counted()) {
            return Next::Wait { ending: true, pause: poll };
        }
        let until_start = self.next_start.saturating_duration_since(Instant::now());
        if !until_start.is_zero() {
            return Next::Wait { ending: false, pause: until_start.min(poll) };
        }
        Next::Start
    }
}

impl Shared {
    fn plugin(&self) -> String {
        lock(&self.plugin).clone()
    }

    /// Counts a crash: sets the backoff before the next start, and quarantines after too many.
    fn crashed(&self, why: &str) {
        let limits = &self.limits;
        let now = Instant::now();
        let window = Duration::from_millis(limits.quarantine_window_ms);
        let mut state = lock(&self.state);
        state.crashes.push_back(now);
        while state.crashes.front().is_some_and(|at| now.duration_since(*at) > window) {
            state.crashes.pop_front();
        }
        let count = state.crashes.len() as u32;
        let backoff = limits.restart_backoff_ms.saturating_mul(1u64 << (count.saturating_sub(1)).min(32));
        state.next_start = after(Duration::from_millis(backoff.min(limits.restart_backoff_max_ms)));
        if limits.quarantine_after > 0 && count >= limits.quarantine_after && state.quarantined.is_none() {
            let plugin = self.plugin();
            let reason = format!(
                "{count} crashes within [plugins.process] quarantine_window_ms = {} (quarantine_after = {}); the last: \
                 {why}",
                limits.quarantine_window_ms, limits.quarantine_after
            );
            state.quarantined = Some(format!(
                "the plugin `{}` is quarantined after {reason}. It takes no calls until its library {} changes",
                crate::shown::escape_line(&plugin),
                crate::shown::escape_line(&self.file.display().to_string())
            ));
            drop(state);
            (self.quarantined)(&self.file, &plugin, &reason);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
