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
//! [`PluginEvent::Quarantined`]) until its library changes. A cancelled call whose plugin does not answer
//! within `kill_grace_ms` gets its child killed, so a plugin that loops cannot hold a worker. A hot reload
//! loads the new library in a new child; calls in flight finish on the old one, which is killed when the
//! last handler of the old version is dropped.

mod child;

pub use child::main as child_main;

use crate::config::{PluginIsolation, ProcessLimits};
use crate::registry::loader::Library;
use crate::registry::watch::{EventHub, PluginEvent};
use crate::services::isolate::frames;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RStr, RString};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use toolshed_plugin_api::{HostRef, ToolHandler, ToolHandlerBox, ToolHandler_TO};

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

/// The most of a child's stderr kept to explain its death.
const STDERR_TAIL: usize = 16 * 1024;

/// The stack of each thread a child runs a call on.
const CALL_STACK: usize = 8 * 1024 * 1024;

/// The name a library goes by in `[plugins] isolation_per_plugin`: its file name without `lib` and the
/// extension.
pub(crate) fn library_name(file: &Path) -> String {
    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    stem.strip_prefix(std::env::consts::DLL_PREFIX).map(str::to_owned).unwrap_or(stem)
}

/// Which libraries of a runtime run out of process, and how their children are kept.
#[derive(Debug)]
pub(crate) struct Policy {
    default: PluginIsolation,
    per_plugin: BTreeMap<String, PluginIsolation>,
    limits: ProcessLimits,
    hub: Arc<EventHub>,
}

impl Policy {
    pub fn new(config: &crate::config::PluginsConfig, hub: Arc<EventHub>) -> Self {
        Self {
            default: config.isolation,
            per_plugin: config.isolation_per_plugin.clone(),
            limits: config.process.clone(),
            hub,
        }
    }

    /// Where the runtime's plugin events go.
    pub fn hub(&self) -> &Arc<EventHub> {
        &self.hub
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
    Message(ToHost),
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
    /// Set before the host kills the child on purpose: why (reported to the calls in flight instead of the
    /// signal), and whether it counts as a crash.
    intent: Mutex<Option<(String, bool)>>,
    /// The child is being killed or its socket closed: no new calls.
    ending: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct Routes {
    waiting: HashMap<u64, crossbeam_channel::Sender<Routed>>,
    /// Set once the child is dead: nothing will answer a new call.
    dead: Option<String>,
}

impl Conn {
    fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A channel for the answers to `id`, or why the child cannot give any.
    fn register(&self, id: u64) -> Result<crossbeam_channel::Receiver<Routed>, String> {
        let mut routes = lock(&self.routes);
        if let Some(dead) = &routes.dead {
            return Err(dead.clone());
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        routes.waiting.insert(id, tx);
        Ok(rx)
    }

    fn unregister(&self, id: u64) {
        lock(&self.routes).waiting.remove(&id);
    }

    /// Whether new calls may go to this child: it is not being killed and its socket has not closed. (Set
    /// before the child is reaped, so a call that comes in while it is reaped goes to a new child.)
    fn usable(&self) -> bool {
        !self.ending.load(Ordering::Acquire)
    }

    /// Writes one message. A failure means the child is going: its reader thread reports why.
    fn send(&self, message: &impl Serialize) -> std::io::Result<()> {
        let bytes = frame(message)?;
        let _one = lock(&self.writer);
        write_all_nosignal(&self.socket, &bytes)
    }

    /// Kills the child's process group; `why` is what the calls in flight are told, `crash` whether it
    /// counts toward the backoff and the quarantine. The first intent wins.
    fn kill(&self, why: String, crash: bool) {
        lock(&self.intent).get_or_insert((why, crash));
        self.ending.store(true, Ordering::Release);
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(self.pid), nix::sys::signal::Signal::SIGKILL);
    }
}

/// Serialises `message` into a frame: the little-endian length, then the JSON, in one buffer (one write).
fn frame(message: &impl Serialize) -> std::io::Result<Vec<u8>> {
    let mut bytes = vec![0u8; 4];
    serde_json::to_writer(&mut bytes, message).map_err(std::io::Error::other)?;
    let len = u32::try_from(bytes.len() - 4).map_err(|_| std::io::Error::other("message too large"))?;
    bytes[..4].copy_from_slice(&len.to_le_bytes());
    Ok(bytes)
}

/// Writes all of `bytes` with `MSG_NOSIGNAL`: a child that died makes this an `EPIPE`, never a SIGPIPE to a
/// host that embeds the runtime without ignoring it.
pub(crate) fn write_all_nosignal(socket: &UnixStream, mut bytes: &[u8]) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    while !bytes.is_empty() {
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
    hub: Arc<EventHub>,
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
            hub: Arc::clone(&policy.hub),
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
        let id = conn.id();
        let answers = conn.register(id)?;
        let _ = conn.send(&ToChild::Build { id, handler, spec: spec.clone() });
        let deadline = Instant::now() + Duration::from_millis(shared.limits.start_timeout_ms);
        let built = match answers.recv_deadline(deadline) {
            Ok(Routed::Message(ToHost::Built { built, .. })) => built,
            Ok(Routed::Died(why)) => return Err(why),
            Ok(Routed::Message(_)) => Built::Failed("the plugin's process answered out of turn".to_owned()),
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
        conn.unregister(id);
        state.specs.push(spec);
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
    /// backoff (looking at the call's cancellation every `poll_ms`).
    fn live(&self, host: &HostRef<'_>) -> Result<Arc<Conn>, String> {
        let shared = &self.shared;
        loop {
            let mut state = lock(&shared.state);
            if let Some(why) = &state.quarantined {
                return Err(why.clone());
            }
            if let Some(conn) = state.child.as_ref().filter(|c| c.usable()) {
                return Ok(Arc::clone(conn));
            }
            let now = Instant::now();
            if now < state.next_start {
                let wait = (state.next_start - now).min(Duration::from_millis(shared.limits.poll_ms.max(1)));
                drop(state);
                if host.is_cancelled() {
                    return Err("the call was cancelled while the plugin's process was restarting".to_owned());
                }
                std::thread::sleep(wait);
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
        state.next_start = now + Duration::from_millis(backoff.min(limits.restart_backoff_max_ms));
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
            self.hub.emit(&PluginEvent::Quarantined { file: self.file.clone(), plugin, reason });
        }
    }
}

/// Starts a child on `shared`'s library, builds `specs` in it, and waits for its hello.
fn spawn(shared: &Arc<Shared>, specs: &[Spec]) -> Result<(Arc<Conn>, Hello), String> {
    let limits = &shared.limits;
    let plugin = shared.plugin();
    let failed =
        |why: String| format!("the plugin `{}` cannot start its process: {why}", crate::shown::escape_line(&plugin));
    let executable = crate::services::isolate::executable().map_err(failed)?;
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
        ending: std::sync::atomic::AtomicBool::new(false),
    });
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
    // Whatever ended the conversation, the child has nothing left to do. Its exit status is fixed once it
    // started exiting, so the kill does not hide why it died.
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
fn describe(plugin: &str, status: Option<std::process::ExitStatus>, stderr: &str, limits: &ProcessLimits) -> String {
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

/// Reads a child's stderr to its end, keeping the last [`STDERR_TAIL`] bytes, and sends them.
fn keep_tail(mut stderr: std::process::ChildStderr) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().name("toolshed-plugin-stderr".to_owned()).spawn(move || {
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
    drop(spawned);
    rx
}

/// A handler that lives in a child process: the frozen vtable, implemented by the host.
struct RemoteHandler {
    supervisor: Arc<Supervisor>,
    handler: u32,
    tool: String,
}

impl ToolHandler for RemoteHandler {
    fn prepare(&self, call: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString> {
        self.run(Phase::Prepare, call, host)
    }

    fn execute(&self, call: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString> {
        self.run(Phase::Execute, call, host)
    }

    fn partial(&self, block: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString> {
        self.run(Phase::Partial, block, host)
    }
}

impl RemoteHandler {
    fn run(&self, phase: Phase, call: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString> {
        match self.converse(phase, call.as_str(), &host) {
            Ok((true, text)) => RResult::ROk(text.into()),
            Ok((false, text)) => RResult::RErr(text.into()),
            Err(why) => RResult::RErr(format!("{why} (while running `{}`'s {})", self.tool, phase.name()).into()),
        }
    }

    /// Sends the call and serves the child's host-service requests until it answers or dies.
    fn converse(&self, phase: Phase, call: &str, host: &HostRef<'_>) -> Result<(bool, String), String> {
        let limits = &self.supervisor.shared.limits;
        let conn = self.supervisor.live(host)?;
        let id = conn.id();
        let answers = conn.register(id)?;
        // A failed write means the child is dying: its reader thread sends why.
        let _ = conn.send(&ToChild::Call { id, handler: self.handler, phase, call: call.to_owned() });
        let poll = Duration::from_millis(limits.poll_ms.max(1));
        let mut cancelled_at: Option<Instant> = None;
        let answer = loop {
            let message = match answers.recv_timeout(poll) {
                Ok(Routed::Message(message)) => message,
                Ok(Routed::Died(why)) => break Err(why),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    match cancelled_at {
                        None if host.is_cancelled() => {
                            cancelled_at = Some(Instant::now());
                            let _ = conn.send(&ToChild::Cancel { id });
                        }
                        Some(at) if at.elapsed() >= Duration::from_millis(limits.kill_grace_ms) => {
                            conn.kill(
                                format!(
                                    "the plugin `{}` did not stop within [plugins.process] kill_grace_ms = {} of \
                                     its call's cancellation; its process was killed and restarts for the next call",
                                    crate::shown::escape_line(&self.supervisor.shared.plugin()),
                                    limits.kill_grace_ms
                                ),
                                true,
                            );
                            // The reader thread answers with the reason once the child is reaped.
                            cancelled_at = Some(Instant::now() + Duration::from_secs(3600));
                        }
                        _ => {}
                    }
                    continue;
                }
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    break Err("the plugin's process is gone".to_owned());
                }
            };
            match message {
                ToHost::Service { name, request, .. } => {
                    let (ok, text) = match host.service(name.as_str().into(), request.as_str().into()) {
                        RResult::ROk(text) => (true, text.into_string()),
                        RResult::RErr(text) => (false, text.into_string()),
                    };
                    let _ = conn.send(&ToChild::Reply { id, ok, text });
                }
                ToHost::ListServices { .. } => {
                    let names = host.services().into_iter().map(RString::into_string).collect();
                    let _ = conn.send(&ToChild::Services { id, names });
                }
                ToHost::Log { level, message, .. } => host.log(level, message.as_str().into()),
                ToHost::Done { ok, text, .. } => break Ok((ok, text)),
                ToHost::Built { .. } | ToHost::Hello(_) | ToHost::Broken { .. } => {}
            }
        };
        conn.unregister(id);
        answer
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_set_is_the_plugins_directory() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins");
        let mut found: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|entry| entry.ok())
            .filter(|entry| entry.path().join("Cargo.toml").is_file())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        found.sort();
        assert_eq!(found, SHIPPED, "SHIPPED lists every library of plugins/ (by its lib name, which is its directory's)");
    }

    #[test]
    fn a_library_is_named_by_its_file_without_prefix_and_extension() {
        assert_eq!(library_name(Path::new("/p/libfixture_crash.so")), "fixture_crash");
        assert_eq!(library_name(Path::new("/p/read_file.so")), "read_file");
    }

    #[test]
    fn crash_reports_name_the_signal_the_status_and_the_memory_limit() {
        use std::os::unix::process::ExitStatusExt;
        let limits = ProcessLimits::default();
        let segv = describe("p", Some(std::process::ExitStatus::from_raw(11)), "", &limits);
        assert_eq!(segv, "the plugin `p` crashed (SIGSEGV); its process restarts for the next call");
        let exit = describe("p", Some(std::process::ExitStatus::from_raw(3 << 8)), "bye\n\n", &limits);
        assert_eq!(exit, "the plugin `p` exited with status 3: bye; its process restarts for the next call");
        let tail = "memory allocation of 5 bytes failed\nnote: run with `RUST_BACKTRACE=1` environment variable\n";
        let oom = describe("p", Some(std::process::ExitStatus::from_raw(6)), tail, &limits);
        assert!(oom.starts_with("the plugin `p` ran out of memory, [plugins.process] memory_mb = 4096: memory allocation"), "{oom}");
        let hostile = describe("p\x1b[2J", None, "\x1b]0;evil\x07", &limits);
        assert!(!hostile.contains('\x1b') && !hostile.contains('\x07'), "{hostile}");
    }
}
