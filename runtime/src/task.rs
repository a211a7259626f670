//! Per-task context and state: what a task is (roots, mode, model) and what it remembers (read cache,
//! mistakes, "always allow" answers, cancellation). Handlers are stateless; this is where state lives.

use crate::config::Profile;
use crate::types::{EventSink, Mode, UiEvent};
use crate::workspace::{root_name, Workspace};
use dashmap::DashMap;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;
use toolshed_plugin_api::{TaskInfo, WorkspaceRoot};

/// What a task is: how the host describes it when it opens one.
#[derive(Debug, Clone)]
pub struct TaskContext {
    /// The task's id; generated when empty.
    pub task_id: String,
    /// Workspace roots as (name, path), the primary first.
    pub roots: Vec<(String, PathBuf)>,
    /// Plan or act.
    pub mode: Mode,
    /// The model family (`generic`, `claude`, `gpt`, …), for family-specific specs and behaviour.
    pub model_family: String,
    /// Whether the model accepts images.
    pub supports_images: bool,
    /// Whether the model can drive a browser (Cline's `supportsBrowserUse`: a model that reads images, with
    /// the browser tool on): browser_action is offered only then.
    pub supports_browser: bool,
    /// Whether this task is a subagent run.
    pub subagent: bool,
    /// YOLO mode: the host approves everything itself (offered to specs as `yolo`; approval follows the
    /// runtime's policy).
    pub yolo: bool,
    /// Whether the host lets the model use several tools per message: read-only tools then run
    /// concurrently, the others one at a time. Otherwise a second tool gets Cline's `toolAlreadyUsed`.
    pub parallel_tool_calls: bool,
    /// The host's limit of consecutive mistakes (Cline's `maxConsecutiveMistakes`, 3 by default); a message
    /// whose results reach it says so in [`crate::TurnResult::mistake_limit`].
    pub max_consecutive_mistakes: u32,
    /// Whom the task's tools are served to: `Cline` (the default) offers every tool and keeps Cline's XML
    /// tool-use reminder in errors; `Mcp` is a client calling with JSON, which never saw that format.
    pub profile: Profile,
}

impl TaskContext {
    /// A task working in one root.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        let cwd = cwd.into();
        Self {
            task_id: String::new(),
            roots: vec![(root_name(&cwd), cwd)],
            mode: Mode::Act,
            model_family: "generic".to_owned(),
            supports_images: false,
            supports_browser: false,
            subagent: false,
            yolo: false,
            parallel_tool_calls: false,
            max_consecutive_mistakes: 3,
            profile: Profile::Cline,
        }
    }

    /// Sets the task id (generated when empty).
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.task_id = id.into();
        self
    }

    /// Sets plan or act mode (switchable later with [`crate::TaskHandle::set_mode`]).
    pub fn with_mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Marks the task as a subagent run (no UI events, no nested subagent tools).
    pub fn with_subagent(mut self, subagent: bool) -> Self {
        self.subagent = subagent;
        self
    }

    /// Sets YOLO mode.
    pub fn with_yolo(mut self, yolo: bool) -> Self {
        self.yolo = yolo;
        self
    }

    /// Lets the model use several tools per message.
    pub fn with_parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = parallel;
        self
    }

    /// Sets the limit of consecutive mistakes.
    pub fn with_max_consecutive_mistakes(mut self, limit: u32) -> Self {
        self.max_consecutive_mistakes = limit.max(1);
        self
    }

    /// Sets whom the tools are served to (see [`Profile`]).
    pub fn with_profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// Adds a workspace root.
    pub fn with_root(mut self, name: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        self.roots.push((name.into(), path.into()));
        self
    }

    /// Sets whether the model accepts images.
    pub fn with_images(mut self, supports_images: bool) -> Self {
        self.supports_images = supports_images;
        self
    }

    /// Sets whether the model can drive a browser (browser_action is offered only then).
    pub fn with_browser(mut self, supports_browser: bool) -> Self {
        self.supports_browser = supports_browser;
        self
    }

    /// Sets the model family.
    pub fn with_model_family(mut self, family: impl Into<String>) -> Self {
        self.model_family = family.into();
        self
    }
}

/// One call's cancellation as the call holds it: [`CancelToken::never`] for a call that cannot outlive its
/// future, without a reference count taken and given back on every such call, or a token of its own.
#[derive(Clone)]
pub(crate) enum CallCancel {
    Never,
    Own(Arc<CancelToken>),
}

impl CallCancel {
    /// The token, to hold past the call (a service's future, a worker's wait).
    pub fn to_arc(&self) -> Arc<CancelToken> {
        match self {
            CallCancel::Never => CancelToken::never(),
            CallCancel::Own(token) => Arc::clone(token),
        }
    }
}

impl std::ops::Deref for CallCancel {
    type Target = CancelToken;

    fn deref(&self) -> &CancelToken {
        match self {
            CallCancel::Never => CancelToken::never_shared(),
            CallCancel::Own(token) => token,
        }
    }
}

/// A wake-up a blocking wait registers with a [`CancelToken`].
type Wake = Arc<dyn Fn() + Send + Sync>;

/// A cancellation (a task's, or one call's): a flag, a wake-up for async waiters, and the wake-ups blocking
/// waiters registered, so that whoever waits on something else as well wakes on either, never by polling.
#[derive(Default)]
pub struct CancelToken {
    flag: AtomicBool,
    notify: Notify,
    /// Registered wake-ups by id; taken and run once on cancellation.
    wakes: std::sync::Mutex<Vec<(u64, Wake)>>,
    next_wake: AtomicU64,
    /// A token nobody can cancel ([`CancelToken::never`]): `cancel` does nothing and no wake-up is kept.
    fixed: bool,
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken").field("cancelled", &self.is_cancelled()).finish_non_exhaustive()
    }
}

impl CancelToken {
    /// The one token nobody can cancel, shared by calls that cannot outlive their future (an `inline` tool's
    /// run to their end on the caller's thread). It can never be cancelled by mistake, which would cancel
    /// every such call at once, and keeps no wake-ups, so the calls sharing it share no lock.
    pub(crate) fn never() -> Arc<CancelToken> {
        Arc::clone(Self::never_shared())
    }

    fn never_shared() -> &'static Arc<CancelToken> {
        static NEVER: std::sync::OnceLock<Arc<CancelToken>> = std::sync::OnceLock::new();
        NEVER.get_or_init(|| Arc::new(CancelToken { fixed: true, ..CancelToken::default() }))
    }

    /// Cancels, waking every waiter.
    pub fn cancel(&self) {
        if self.fixed {
            return;
        }
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
        let wakes = std::mem::take(&mut *self.wakes.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        for (_, wake) in wakes {
            wake();
        }
    }

    /// Whether cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Resolves once cancelled.
    pub async fn cancelled(&self) {
        loop {
            let notified = self.notify.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }

    /// Runs `wake` on cancellation while the guard lives (at once when already cancelled).
    pub(crate) fn on_cancel(&self, wake: Wake) -> WakeGuard<'_> {
        if self.fixed {
            return WakeGuard { token: self, id: None };
        }
        let id = self.next_wake.fetch_add(1, Ordering::Relaxed);
        self.wakes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((id, Arc::clone(&wake)));
        // A cancellation between the caller's check and the push would otherwise go unseen.
        if self.is_cancelled() {
            wake();
        }
        WakeGuard { token: self, id: Some(id) }
    }
}

/// Unregisters a wake-up on drop.
pub(crate) struct WakeGuard<'a> {
    token: &'a CancelToken,
    /// `None` for a token nobody can cancel, which keeps no wake-up.
    id: Option<u64>,
}

impl Drop for WakeGuard<'_> {
    fn drop(&mut self) {
        if let Some(mine) = self.id {
            self.token.wakes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).retain(|(id, _)| *id != mine);
        }
    }
}

/// Two tokens nobody cancels, for tests of blocking services.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct NeverCancelled(CancelToken, CancelToken);

#[cfg(test)]
impl NeverCancelled {
    pub fn cancels(&self) -> Cancels<'_> {
        Cancels { call: &self.0, task: &self.1 }
    }
}

/// A call's two cancellations, its own (a timeout) and its task's, as the blocking services wait on them.
#[derive(Clone, Copy)]
pub(crate) struct Cancels<'a> {
    pub call: &'a CancelToken,
    pub task: &'a CancelToken,
}

impl<'a> Cancels<'a> {
    /// Whether either was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.call.is_cancelled() || self.task.is_cancelled()
    }

    /// Runs `wake` when either is cancelled, while the guards live.
    pub fn on_cancel(&self, wake: Wake) -> [WakeGuard<'a>; 2] {
        [self.call.on_cancel(Arc::clone(&wake)), self.task.on_cancel(wake)]
    }

    /// Blocks until `answer` has a value (`Some`, or `Err` when its sender is gone), either cancellation comes
    /// or `deadline` passes (both `Ok(None)`), waking on whichever is first.
    pub fn recv<T>(
        &self,
        answer: &crossbeam_channel::Receiver<T>,
        deadline: Option<std::time::Instant>,
    ) -> Result<Option<T>, crossbeam_channel::RecvError> {
        let (tx, woken) = crossbeam_channel::bounded(1);
        let _guards = self.on_cancel(Arc::new(move || {
            let _ = tx.try_send(());
        }));
        let timeout = deadline.map_or(crossbeam_channel::never(), crossbeam_channel::at);
        crossbeam_channel::select! {
            recv(answer) -> value => value.map(Some),
            // An answer that came with the cancellation or the deadline still counts.
            recv(woken) -> _ => Ok(answer.try_recv().ok()),
            recv(timeout) -> _ => Ok(answer.try_recv().ok()),
        }
    }
}

/// A task's info as calls carry it: its JSON, built once per mode, and the key a tool that takes its task by
/// reference is sent instead (`capability::TASK_BY_REF`).
pub(crate) struct TaskJson {
    pub text: String,
    /// Unique in the process for this text: a new task or a new mode gets a new key, so a handler's cache
    /// never answers one task's call with another's info.
    pub key: u64,
}

impl TaskJson {
    fn new(info: &TaskInfo) -> Self {
        static NEXT_KEY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Self {
            text: serde_json::to_string(info).unwrap_or_else(|_| "{}".to_owned()),
            key: NEXT_KEY.fetch_add(1, Ordering::Relaxed),
        }
    }
}

/// Everything the runtime keeps for one task, shared by its calls.
pub(crate) struct TaskShared {
    pub info: TaskInfo,
    /// `info` as calls carry it, by mode (`mode_code`): the info differs only in its mode, so each mode's JSON is
    /// built once (the other mode's when the task first switches to it), and a call reads it without a lock or
    /// a count: a call names the mode it started in, whose JSON never changes.
    info_json: [std::sync::OnceLock<TaskJson>; 2],
    /// Plan (1) or act (0); switchable while the task runs.
    mode: std::sync::atomic::AtomicU8,
    pub yolo: bool,
    pub parallel_tool_calls: bool,
    pub max_mistakes: u32,
    pub profile: Profile,
    /// Whether the model can drive a browser, and the viewport its spec names.
    pub supports_browser: bool,
    pub browser_viewport: (u32, u32),
    /// Cline's loop detection: the last executed call's tool name and signature, and how many times in a
    /// row it was made (the signature as an xxh3-128 of its text: no call copies its input to be compared).
    pub last_call: std::sync::Mutex<(String, u128, u32)>,
    pub workspace: Workspace,
    pub cancel: CancelToken,
    pub mistakes: AtomicU32,
    /// Tool names the user answered "always allow" for in this session.
    pub always_allow: AllowedTools,
    /// The read_file dedup cache: lower-cased absolute path → (mtime, read count).
    pub read_cache: DashMap<String, (u128, u32)>,
    /// Per-task JSON state that stateless handlers keep through the `state.*` services.
    pub state: DashMap<String, serde_json::Value>,
    pub calls: AtomicU64,
    /// Routes of streamed tool uses by tool-use id, fixed at their first `partial`: the complete tool use
    /// runs on the same generation even when a hot reload swapped the tool in between.
    /// (Each is the pipeline's route, which lives in a layer above this one: held here without its type.)
    pub streamed: StreamPins,
    /// The interaction services' conversation state (focus chain, last tool, completion), which every call
    /// reads and updates: kept typed, so no call serialises it. Held here without its type (it lives in a
    /// layer above this one), created on first use.
    pub conversation: std::sync::OnceLock<Box<dyn std::any::Any + Send + Sync>>,
    /// Where `say` messages go; `None` drops them (no UI, or a subagent run).
    pub events: Option<EventSink>,
    /// Called with the task's id when the task ends.
    ended: Option<TaskEnd>,
}

/// Tool names, as a set: only `contains` and `insert`, which is all the approval stage asks.
pub(crate) struct AllowedTools(DashMap<String, ()>);

impl AllowedTools {
    /// Whether `name` is in the set.
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// Adds `name`; whether it was new.
    pub fn insert(&self, name: String) -> bool {
        self.0.insert(name, ()).is_none()
    }
}

/// An empty per-task map with the fewest shards dashmap allows. Its default is four per core, each padded to
/// a cache line and allocated up front: 1 KiB a map on 2 cores, 32 KiB on 64, so 128 KiB for an idle task of
/// four maps on a large host, for maps that only the calls of one task touch, a few at a time.
fn task_map<K: Eq + std::hash::Hash, V>() -> DashMap<K, V> {
    DashMap::with_shard_amount(2)
}

/// A pinned route, held without its type.
pub(crate) type Pinned = Arc<dyn std::any::Any + Send + Sync>;

/// The routes of a task's streamed tool uses by tool-use id ([`TaskShared::streamed`]). Every call looks here
/// first, and almost none finds anything: a count read without the lock answers those.
#[derive(Default)]
pub(crate) struct StreamPins {
    pins: std::sync::Mutex<std::collections::HashMap<String, Pinned>>,
    count: std::sync::atomic::AtomicUsize,
}

impl StreamPins {
    /// The most pins kept: tool uses whose stream was abandoned never reach `execute` to take theirs.
    const MAX: usize = 64;

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Pinned>> {
        self.pins.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The pin of tool use `id`, taken: the complete tool use ends its stream.
    pub fn take(&self, id: &str) -> Option<Pinned> {
        if self.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut pins = self.lock();
        let pinned = pins.remove(id);
        self.count.store(pins.len(), Ordering::Release);
        pinned
    }

    /// The pin of tool use `id`, left in place.
    pub fn get(&self, id: &str) -> Option<Pinned> {
        if self.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.lock().get(id).cloned()
    }

    /// Pins tool use `id` to what `make` gives, unless it is pinned already.
    pub fn pin(&self, id: &str, make: impl FnOnce() -> Pinned) {
        let mut pins = self.lock();
        if pins.contains_key(id) {
            return;
        }
        // Dropped after the lock: the last reference to an old generation's route may run its handler's drop.
        let dropped = if pins.len() >= Self::MAX { std::mem::take(&mut *pins) } else { Default::default() };
        pins.insert(id.to_owned(), make());
        self.count.store(pins.len(), Ordering::Release);
        drop(pins);
        drop(dropped);
    }
}

/// What the runtime does when a task ends (its processes are killed), given the task's id.
pub(crate) type TaskEnd = Arc<dyn Fn(&str) + Send + Sync>;

static NEXT_TASK: AtomicU64 = AtomicU64::new(1);

impl TaskShared {
    pub fn new(
        context: TaskContext,
        timeouts_ms: BTreeMap<String, u64>,
        events: Option<EventSink>,
        ended: Option<TaskEnd>,
    ) -> Self {
        // Subagent runs push nothing to the UI.
        let events = if context.subagent { None } else { events };
        let task_id = if context.task_id.is_empty() {
            format!("task-{}-{}", std::process::id(), NEXT_TASK.fetch_add(1, Ordering::Relaxed))
        } else {
            context.task_id
        };
        let roots: Vec<WorkspaceRoot> = context
            .roots
            .iter()
            .map(|(name, path)| WorkspaceRoot { name: name.clone(), path: path.to_string_lossy().into_owned() })
            .collect();
        let workspace = Workspace::new(&roots);
        let info = TaskInfo {
            task_id,
            cwd: workspace.primary().to_string_lossy().into_owned(),
            roots,
            mode: context.mode.name().to_owned(),
            model_family: context.model_family,
            supports_images: context.supports_images,
            subagent: context.subagent,
            timeouts_ms,
        };
        let info_json = [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
        let _ = info_json[usize::from(mode_code(context.mode))].set(TaskJson::new(&info));
        Self {
            info,
            info_json,
            mode: std::sync::atomic::AtomicU8::new(mode_code(context.mode)),
            yolo: context.yolo,
            parallel_tool_calls: context.parallel_tool_calls,
            max_mistakes: context.max_consecutive_mistakes.max(1),
            profile: context.profile,
            supports_browser: context.supports_browser,
            browser_viewport: crate::spec::SpecContext::default().browser_viewport,
            last_call: std::sync::Mutex::new((String::new(), 0, 0)),
            workspace,
            cancel: CancelToken::default(),
            mistakes: AtomicU32::new(0),
            always_allow: AllowedTools(task_map()),
            read_cache: task_map(),
            state: task_map(),
            calls: AtomicU64::new(0),
            streamed: StreamPins::default(),
            conversation: std::sync::OnceLock::new(),
            events,
            ended,
        }
    }

    /// The task's current mode.
    pub fn mode(&self) -> Mode {
        if self.mode.load(Ordering::Acquire) == mode_code(Mode::Plan) {
            Mode::Plan
        } else {
            Mode::Act
        }
    }

    /// Switches the mode; calls that start from now on see it (tools read it in their task info).
    pub fn set_mode(&self, mode: Mode) {
        // Built before the switch, so no call pays for it.
        let _ = self.json_for(mode);
        self.mode.store(mode_code(mode), Ordering::Release);
    }

    /// The task info as calls in `mode` carry it.
    pub fn json_for(&self, mode: Mode) -> &TaskJson {
        self.info_json[usize::from(mode_code(mode))].get_or_init(|| {
            let mut info = self.info.clone();
            info.mode = mode.name().to_owned();
            TaskJson::new(&info)
        })
    }

    /// The task as the spec registry sees it: its primary root, roots, mode, images and subagent run.
    pub fn spec_context(&self) -> crate::spec::SpecContext {
        let info = &self.info;
        crate::spec::SpecContext {
            cwd: info.cwd.clone(),
            multi_root: info.roots.len() > 1,
            mode: self.mode(),
            yolo: self.yolo,
            subagent_run: info.subagent,
            supports_images: info.supports_images,
            supports_browser: self.supports_browser,
            browser_viewport: self.browser_viewport,
            profile: self.profile,
            ..crate::spec::SpecContext::default()
        }
    }

    /// Hands a `say` message to the host's event sink.
    /// `call_id` is the tool-use id of the call that sent it (empty for the host's own messages).
    pub fn say(&self, tool: &str, call_id: &str, request: toolshed_plugin_api::services::SayRequest) {
        if let Some(sink) = &self.events {
            // UI events are shown to a person; a tool's text (command output, a diff) may hold terminal controls.
            sink(&UiEvent {
                task_id: self.info.task_id.clone(),
                tool_use_id: call_id.to_owned(),
                tool: tool.to_owned(),
                kind: crate::shown::escape_line(&request.kind).into_owned(),
                text: crate::shown::escape_owned(request.text),
                partial: request.partial,
            });
        }
    }

    /// Records a read of `path` with `mtime`; returns the read count of the unchanged file.
    pub fn record_read(&self, path: &str, mtime: u128) -> u32 {
        let mut entry = self.read_cache.entry(path.to_lowercase()).or_insert((mtime, 0));
        if entry.0 != mtime {
            *entry = (mtime, 0);
        }
        entry.1 += 1;
        entry.1
    }

    /// Forgets paths (all when empty) after a write.
    pub fn forget_reads(&self, paths: &[String]) {
        if paths.is_empty() {
            self.read_cache.clear();
        }
        for path in paths {
            self.read_cache.remove(&path.to_lowercase());
        }
    }
}

impl Drop for TaskShared {
    fn drop(&mut self) {
        // The task has ended: background jobs its commands were allowed to keep end with it.
        if let Some(ended) = &self.ended {
            ended(&self.info.task_id);
        }
    }
}

fn mode_code(mode: Mode) -> u8 {
    match mode {
        Mode::Act => 0,
        Mode::Plan => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call names the mode it started in and reads that mode's JSON (`json_for`): each mode's must keep its
    /// text and key however often the task switches, and differ from the other's.
    #[test]
    fn each_mode_has_its_own_info_and_key_for_the_tasks_life() {
        let task = TaskShared::new(TaskContext::new("/w"), Default::default(), None, None);
        let act = (task.json_for(Mode::Act).text.clone(), task.json_for(Mode::Act).key);
        assert!(act.0.contains(r#""mode":"act""#), "{}", act.0);
        task.set_mode(Mode::Plan);
        assert_eq!(task.mode(), Mode::Plan);
        let plan = task.json_for(task.mode());
        assert!(plan.text.contains(r#""mode":"plan""#), "{}", plan.text);
        assert_ne!(plan.key, act.1);
        assert_eq!(plan.text.replace(r#""mode":"plan""#, r#""mode":"act""#), act.0, "only the mode differs");
        task.set_mode(Mode::Act);
        assert_eq!((task.json_for(task.mode()).text.clone(), task.json_for(task.mode()).key), act);
        // Another task's info has another key, even in the same mode.
        let other = TaskShared::new(TaskContext::new("/w"), Default::default(), None, None);
        assert_ne!(other.json_for(Mode::Act).key, act.1);
    }

    #[test]
    fn the_token_nobody_can_cancel_stays_uncancelled_and_keeps_no_wake_ups() {
        let never = CancelToken::never();
        assert!(Arc::ptr_eq(&never, &CancelToken::never()), "one token, shared");
        let woken = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&woken);
        let guard = never.on_cancel(Arc::new(move || flag.store(true, Ordering::SeqCst)));
        never.cancel();
        assert!(!never.is_cancelled());
        assert!(!woken.load(Ordering::SeqCst));
        assert!(never.wakes.lock().unwrap().is_empty());
        drop(guard);
        // An ordinary token still cancels and wakes.
        let token = CancelToken::default();
        let flag = Arc::clone(&woken);
        let _guard = token.on_cancel(Arc::new(move || flag.store(true, Ordering::SeqCst)));
        token.cancel();
        assert!(token.is_cancelled() && woken.load(Ordering::SeqCst));
    }

    #[test]
    fn stream_pins_are_taken_once_and_kept_to_a_bound() {
        let pins = StreamPins::default();
        assert!(pins.take("a").is_none() && pins.get("a").is_none());
        pins.pin("a", || Arc::new(1u32));
        // A second pin of the same use keeps the first.
        pins.pin("a", || Arc::new(2u32));
        assert_eq!(pins.get("a").and_then(|p| p.downcast::<u32>().ok()).as_deref(), Some(&1));
        assert_eq!(pins.take("a").and_then(|p| p.downcast::<u32>().ok()).as_deref(), Some(&1));
        assert!(pins.take("a").is_none(), "taken once");
        for i in 0..StreamPins::MAX {
            pins.pin(&i.to_string(), || Arc::new(i));
        }
        assert!(pins.get("0").is_some());
        pins.pin("new", || Arc::new(0usize));
        assert!(pins.get("0").is_none(), "the abandoned pins were dropped");
        assert!(pins.get("new").is_some());
        assert_eq!(pins.count.load(Ordering::Acquire), 1);
    }
}
