//! The tool actor: owns one handler instance and its worker pool, runs call phases there with a timeout,
//! cancellation and panic containment, and counts threads left behind by calls it stopped waiting for.

use crate::actors::pool::{Finishing, PoolSettings, Priority, WorkerPool};
use crate::registry::loader::{HandlerOrigin, PluginHandler};
use crate::services::commit_gate::CommitGate;
use crate::services::host::{CallHost, Router};
use crate::task::{CallCancel, TaskShared};
use crate::types::Mode;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RStr, RString};
use actix::prelude::*;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use toolshed_plugin_api::{call_layout as layout, json_string};
use toolshed_plugin_api::{Host_TO, Prepared};

/// Which handler method a message runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Prepare,
    Execute,
    Partial,
}

/// Why a phase produced no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PhaseError {
    /// The plugin failed at the boundary (a caught panic, unserialisable output).
    Failed(String),
    /// The timeout passed; the call was abandoned. A tool that commits its writes had not committed, so
    /// it wrote nothing and never will.
    TimedOut(Duration),
    /// The timeout or a cancellation came while the call was writing what it had committed, and the write
    /// had not finished this long after; the call was abandoned.
    WriteOverran(Duration),
    /// The task was cancelled; the call was abandoned.
    Cancelled,
    /// Too many abandoned calls are still running; the tool takes no new calls.
    Quarantined(usize),
}

/// Decides, on the worker thread, whether `prepare`'s answer lets `execute` run at once (no one to ask): `None`
/// when it does not, else whether the approval is explicit (see `ToolCall::approved`). The pipeline implements
/// it and keeps the decision it made, so nothing is decided twice.
pub(crate) trait Approve: Send + Sync {
    fn approve(&self, prepared: &Prepared) -> Option<bool>;
}

/// `execute` straight after `prepare` in one job, when `approve` allows; `timeout` then applies to it.
#[derive(Clone)]
pub(crate) struct ThenExecute {
    pub approve: Arc<dyn Approve>,
    pub timeout: Duration,
}

/// One call as its plugin reads it: [`toolshed_plugin_api::ToolCall`]'s JSON, assembled once per call.
pub(crate) struct CallJson {
    /// The call without `approved`.
    plain: String,
    /// Where the tool-use id stands in `plain`, written as it is (nearly always), or the id itself when it
    /// needed escapes: for the UI events the call sends, without a string of its own on every call.
    id: CallId,
    /// The call's own cancellation (its future dropped, its timeout): every phase of the call shares it.
    pub cancel: CallCancel,
    /// The task's mode as of this call: `task.info` answers for a call that carries only its key with the
    /// task's info in this mode, whatever the mode is by then.
    pub mode: Mode,
}

thread_local! {
    /// The text buffer of the last call that ended on this thread, for the next call on it to write into: an
    /// allocation and a free fewer on every call. (The host's own thread-local; a plugin must not have one.)
    static SPARE_TEXT: std::cell::Cell<String> = const { std::cell::Cell::new(String::new()) };
}

/// The largest buffer kept for the next call: a small call's, not a written file's.
const SPARE_TEXT_BYTES: usize = 4096;

impl CallJson {
    /// The call of `tool` under tool-use `id` with `input`, in `task`; with `by_ref`, the task goes by its key
    /// (`task_ref`) instead of by value, for a tool that declared [`toolshed_plugin_api::capability::TASK_BY_REF`].
    pub fn new(
        tool: &str,
        id: &str,
        input: &serde_json::Value,
        task: &TaskShared,
        by_ref: bool,
        cancel: CallCancel,
    ) -> Self {
        // Assembled by hand so the task's JSON, built once per task and mode, is not serialised again for
        // every call.
        // Written into one buffer: no intermediate string per part.
        let mode = task.mode();
        let json = task.json_for(mode);
        let info_json = json.text.as_str();
        let mut plain = SPARE_TEXT.try_with(std::cell::Cell::take).unwrap_or_default();
        plain.clear();
        plain.reserve(64 + tool.len() + id.len() + if by_ref { 0 } else { info_json.len() });
        plain.push_str(layout::OPEN);
        json_string::write(&mut plain, tool);
        plain.push_str(layout::ID);
        let id_token = plain.len();
        json_string::write(&mut plain, id);
        // An escape makes the token longer than the id and its two quotes.
        let id_at = match plain.len() - id_token == id.len() + 2 {
            true => CallId::At(id_token + 1..id_token + 1 + id.len()),
            false => CallId::Own(id.into()),
        };
        plain.push_str(layout::INPUT);
        let mut plain = plain.into_bytes();
        let written = serde_json::to_writer(&mut plain, input);
        if by_ref {
            // Most of a small call's bytes, and the plugin's cost of reading them, were the task's.
            // Written into the buffer itself: no string of its own on every call.
            plain.extend_from_slice(layout::TASK_REF.as_bytes());
            plain.extend_from_slice(itoa::Buffer::new().format(json.key).as_bytes());
            plain.extend_from_slice(layout::TASK_REF_CLOSE.as_bytes());
        } else {
            plain.extend_from_slice(layout::TASK.as_bytes());
            plain.extend_from_slice(info_json.as_bytes());
            plain.push(b'}');
        }
        let (plain, id) = match written {
            // SAFETY: every byte is from a `str` or serde_json's writer, which writes only UTF-8 (serde_json's
            // own `to_string` relies on the same). Not checked again: a check of every call's whole text was
            // 3% of a small call's instructions.
            Ok(()) => (unsafe { String::from_utf8_unchecked(plain) }, id_at),
            // Writing into a `Vec` cannot fail; were it to, the call is written whole by `format!`.
            Err(_) => (
                format!(
                    "{{\"tool\":{},\"id\":{},\"input\":{input},\"task\":{info_json}}}",
                    serde_json::Value::from(tool),
                    serde_json::Value::from(id)
                ),
                CallId::Own(id.into()),
            ),
        };
        Self { plain, id, cancel, mode }
    }

    /// The tool-use id, for the UI events the call sends.
    pub fn id(&self) -> &str {
        match &self.id {
            CallId::At(at) => self.plain.get(at.clone()).unwrap_or_default(),
            CallId::Own(id) => id,
        }
    }

    /// The JSON text, with `"approved":true` when the user or one of their rules approved what `prepare`
    /// asked for (the field leads the object; absent means false).
    pub fn text(&self, approved: bool) -> Cow<'_, str> {
        match (approved, self.plain.strip_prefix(layout::OPEN)) {
            (true, Some(rest)) => Cow::Owned([layout::OPEN_APPROVED, rest].concat()),
            _ => Cow::Borrowed(&self.plain),
        }
    }
}

impl Drop for CallJson {
    fn drop(&mut self) {
        if self.plain.capacity() <= SPARE_TEXT_BYTES {
            let plain = std::mem::take(&mut self.plain);
            // (After the thread's locals are gone, the buffer is simply freed.)
            let _ = SPARE_TEXT.try_with(|spare| spare.set(plain));
        }
    }
}

/// A phase's JSON answer where the plugin put it: read in the plugin's allocation rather than copied into the
/// host's (`abi_stable` copies a string allocated by another library to convert it, a copy and a free on every
/// call). It keeps the plugin's library mapped for as long as it lives: freeing the text runs the plugin's code.
pub(crate) struct AnswerText<'a> {
    text: RString,
    /// Dropped after `text` (fields drop in order).
    _library: Library<'a>,
}

/// What keeps an answer's library mapped: the borrow of its handler while the answer is read where the handler
/// was called (an inline call's, read before its route is let go: no count taken and given back on every call),
/// or a count of its own for an answer that travels.
enum Library<'a> {
    Lent(&'a Arc<HandlerOrigin>),
    Held(Arc<HandlerOrigin>),
}

/// Makes dropping a `Library<'a>` (so an `AnswerText<'a>`) a use of `'a`: without it the borrow checker lets the
/// handler go before the text its library frees.
impl Drop for Library<'_> {
    fn drop(&mut self) {}
}

impl AnswerText<'_> {
    /// The answer with a count of its own on its library, to outlive the borrow of its handler.
    fn owned(self) -> AnswerText<'static> {
        let library = match &self._library {
            Library::Lent(origin) => Arc::clone(origin),
            Library::Held(origin) => Arc::clone(origin),
        };
        AnswerText { text: self.text, _library: Library::Held(library) }
    }
}

impl std::ops::Deref for AnswerText<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        self.text.as_str()
    }
}

impl std::fmt::Debug for AnswerText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// Where a call finds its tool-use id.
enum CallId {
    /// In its JSON text, at this range.
    At(std::ops::Range<usize>),
    /// Its own copy: written with escapes, it does not stand in the text as it is.
    Own(Box<str>),
}

/// What a phase answered.
#[derive(Debug)]
pub(crate) enum PhaseAnswer<'a> {
    /// `execute`'s or `partial`'s JSON answer.
    Text(AnswerText<'a>),
    /// `prepare`'s answer, parsed on the worker (once: the pipeline reads this), or why it was unreadable.
    /// Boxed: it is several times the size of the other answers, which every call moves up through each layer.
    Prepared(Box<Result<Prepared, String>>),
    /// `prepare` allowed it outright and `execute` ran in the same job: its JSON answer.
    Executed(AnswerText<'a>),
}

impl<'a> PhaseAnswer<'a> {
    /// `execute`'s answer text, from whichever way it was run.
    pub fn executed(answer: Result<Self, PhaseError>) -> Result<AnswerText<'a>, PhaseError> {
        match answer? {
            PhaseAnswer::Text(text) | PhaseAnswer::Executed(text) => Ok(text),
            PhaseAnswer::Prepared(_) => Err(PhaseError::Failed("execute answered as prepare".to_owned())),
        }
    }

    /// The answer, holding its library itself: to send it on from where the handler was called.
    fn owned(self) -> PhaseAnswer<'static> {
        match self {
            PhaseAnswer::Text(text) => PhaseAnswer::Text(text.owned()),
            PhaseAnswer::Prepared(prepared) => PhaseAnswer::Prepared(prepared),
            PhaseAnswer::Executed(text) => PhaseAnswer::Executed(text.owned()),
        }
    }
}

/// Runs one phase of one call.
#[derive(Message)]
#[rtype(result = "Result<PhaseAnswer<'static>, PhaseError>")]
pub(crate) struct RunPhase {
    pub phase: Phase,
    /// The call.
    pub call: Arc<CallJson>,
    /// Whether the call carries `approved` (for `execute`).
    pub approved: bool,
    pub task: Arc<TaskShared>,
    /// The host services the call may use.
    pub router: Arc<Router>,
    /// How long a call past its commit gate is waited for after a timeout (`[timeouts] commit_ms`).
    pub commit_wait: Duration,
    pub timeout: Duration,
    /// After a task's or the call's cancellation, how long the plugin gets to notice and answer in its own words (a command
    /// tool returns its output so far) before the call is abandoned.
    pub cancel_grace: Duration,
    /// For `prepare`: when this approves its answer, run `execute` straight after, saving a round trip
    /// through the executor for every call nobody has to be asked about.
    pub then_execute: Option<ThenExecute>,
}

/// A tool's health, shared with the coordinator for reporting.
#[derive(Debug, Default)]
pub struct ToolHealth {
    abandoned: AtomicUsize,
    quarantined: AtomicBool,
}

impl ToolHealth {
    /// Calls abandoned on timeout or cancellation whose threads have not returned yet.
    pub fn abandoned(&self) -> usize {
        self.abandoned.load(Ordering::Acquire)
    }

    /// Whether the tool refuses new calls until its abandoned threads return.
    pub fn quarantined(&self) -> bool {
        self.quarantined.load(Ordering::Acquire)
    }
}

/// Where a tool's phases run, from the capabilities it declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    /// On the actor's thread (`inline`: cheap and never blocking).
    Inline,
    /// On the tool's worker threads, at this priority (lowered for `bulk` tools).
    Workers(Priority),
}

const RUNNING: u8 = 0;
const DONE: u8 = 1;
const ABANDONED: u8 = 2;

/// The actor serving one registered tool (its primary name and every alias).
pub(crate) struct ToolActor {
    name: Arc<str>,
    handler: Arc<PluginHandler>,
    pool: WorkerPool,
    health: Arc<ToolHealth>,
    /// The plugin declared its phases cheap and non-blocking: run them on the actor's thread.
    inline: bool,
    max_abandoned: usize,
}

impl ToolActor {
    pub fn new(name: &str, handler: PluginHandler, workers: PoolSettings, lane: Lane, max_abandoned: usize) -> Self {
        let priority = match lane {
            Lane::Workers(priority) => priority,
            Lane::Inline => Priority::Normal,
        };
        Self {
            name: Arc::from(name),
            handler: Arc::new(handler),
            pool: WorkerPool::new(name, workers, priority),
            health: Arc::new(ToolHealth::default()),
            inline: lane == Lane::Inline,
            max_abandoned: max_abandoned.max(1),
        }
    }

    pub fn health(&self) -> Arc<ToolHealth> {
        Arc::clone(&self.health)
    }

    /// For an `inline` tool, the lane its callers run it on directly.
    pub fn inline_lane(&self) -> Option<Arc<InlineLane>> {
        self.inline.then(|| Arc::new(InlineLane { name: Arc::clone(&self.name), handler: Arc::clone(&self.handler) }))
    }
}

impl Actor for ToolActor {
    type Context = Context<Self>;
}

/// When `execute` began after `prepare` in one job, for the waiting side's timeout: written by the job, read by
/// the waiting side when its prepare deadline passes. The job wakes the waiting side only when execute's own
/// deadline comes before that (a call timeout shorter than the prepare timeout).
struct ExecuteStart {
    at: OnceLock<Instant>,
    prepare_deadline: Instant,
    sooner: tokio::sync::Notify,
}

impl ExecuteStart {
    fn new(prepare_timeout: Duration) -> Self {
        Self { at: OnceLock::new(), prepare_deadline: Instant::now() + prepare_timeout, sooner: Default::default() }
    }

    /// `execute` begins now, with `timeout`.
    fn begin(&self, timeout: Duration) {
        let now = Instant::now();
        let _ = self.at.set(now);
        if now + timeout < self.prepare_deadline {
            self.sooner.notify_one();
        }
    }
}

/// Runs a phase and, when `then_execute` approves `prepare`'s answer, `execute` after it.
/// `started` records when `execute` begins, so the waiting side measures the call timeout from then on. It is
/// read when the prepare deadline passes and signalled only when the call timeout ends sooner
/// ([`ExecuteStart::begin`]): a wake-up of the waiting thread on every call (another thread, often on a halted
/// vCPU) cost more than the rest of a small call's hand-over.
fn run_call<'a>(
    handler: &'a PluginHandler,
    phase: Phase,
    (call, approved): (&CallJson, bool),
    host: &CallHost<'_>,
    then_execute: Option<&ThenExecute>,
    started: Option<&ExecuteStart>,
) -> Result<PhaseAnswer<'a>, PhaseError> {
    let text = run_handler(handler, phase, &call.text(approved), host)?;
    if phase != Phase::Prepare {
        return Ok(PhaseAnswer::Text(text));
    }
    let prepared = Prepared::from_json(&text).map_err(|e| toolshed_plugin_api::sdk::json_error(&e));
    if let (Some(then), Ok(answer)) = (then_execute, &prepared)
        && let Some(explicit) = then.approve.approve(answer)
    {
        if let Some(started) = started {
            started.begin(then.timeout);
        }
        return run_handler(handler, Phase::Execute, &call.text(explicit), host).map(PhaseAnswer::Executed);
    }
    Ok(PhaseAnswer::Prepared(Box::new(prepared)))
}

fn run_handler<'a>(
    handler: &'a PluginHandler,
    phase: Phase,
    call: &str,
    host: &CallHost<'_>,
) -> Result<AnswerText<'a>, PhaseError> {
    let host = Host_TO::from_ptr(host, TD_Opaque);
    let call = RStr::from_str(call);
    let answer = match phase {
        Phase::Prepare => handler.prepare(call, host),
        Phase::Execute => handler.execute(call, host),
        Phase::Partial => handler.partial(call, host),
    };
    match answer {
        RResult::ROk(text) => Ok(AnswerText { text, _library: Library::Lent(handler.origin()) }),
        RResult::RErr(message) => Err(PhaseError::Failed(message.into_string())),
    }
}

/// An `inline` tool's handler, which the pipeline calls on the caller's own thread: its phases are cheap and
/// never block, so a hop to the actor's thread and back would cost more than the call. The actor keeps the
/// same handler for every other path.
pub(crate) struct InlineLane {
    name: Arc<str>,
    handler: Arc<PluginHandler>,
}

impl std::fmt::Debug for InlineLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InlineLane").field("name", &self.name).finish_non_exhaustive()
    }
}

impl InlineLane {
    /// Runs one phase of `call` (and `execute` after `prepare` when `then_execute` approves) here and now.
    pub fn run(
        &self,
        phase: Phase,
        (call, approved): (&CallJson, bool),
        task: &Arc<TaskShared>,
        router: &Arc<Router>,
        then_execute: Option<&ThenExecute>,
    ) -> Result<PhaseAnswer<'_>, PhaseError> {
        let host = call_host(&self.name, &self.handler, call, task, router, inline_gate());
        run_call(&self.handler, phase, (call, approved), &host, then_execute, None)
    }
}

/// The commit gate every inline call shares: an inline call has no timeout and is never abandoned, so its gate
/// is never closed and a commit always passes; one shared gate spares an allocation per call.
fn inline_gate() -> &'static Arc<CommitGate> {
    static GATE: std::sync::OnceLock<Arc<CommitGate>> = std::sync::OnceLock::new();
    GATE.get_or_init(Arc::default)
}

/// The host object one phase of `call` sees.
fn call_host<'a>(
    name: &'a Arc<str>,
    handler: &'a PluginHandler,
    call: &'a CallJson,
    task: &'a Arc<TaskShared>,
    router: &'a Arc<Router>,
    commit: &'a Arc<CommitGate>,
) -> CallHost<'a> {
    CallHost {
        call_id: call.id(),
        task,
        task_json: task.json_for(call.mode),
        router,
        cancelled: &call.cancel,
        commit,
        tool: name,
        origin: Some(handler.origin()),
    }
}

impl Handler<RunPhase> for ToolActor {
    type Result = Response<Result<PhaseAnswer<'static>, PhaseError>>;

    fn handle(&mut self, msg: RunPhase, _ctx: &mut Self::Context) -> Self::Result {
        if self.health.quarantined() {
            return Response::reply(Err(PhaseError::Quarantined(self.health.abandoned())));
        }
        let cancelled = msg.call.cancel.to_arc();
        if self.inline {
            let host = call_host(&self.name, &self.handler, &msg.call, &msg.task, &msg.router, inline_gate());
            // Answered in place: no future, no task spawned for it.
            return Response::reply(
                run_call(&self.handler, msg.phase, (&msg.call, msg.approved), &host, msg.then_execute.as_ref(), None)
                    .map(PhaseAnswer::owned),
            );
        }

        let commit = Arc::new(CommitGate::default());
        let (tx, rx) = tokio::sync::oneshot::channel();
        let execute_timeout = msg.then_execute.as_ref().map(|then| then.timeout);
        let started = Arc::new(ExecuteStart::new(msg.timeout));
        let state = Arc::new(AtomicU8::new(RUNNING));
        let job = {
            let (handler, state, health) = (Arc::clone(&self.handler), Arc::clone(&state), Arc::clone(&self.health));
            let (started, name, commit) = (Arc::clone(&started), Arc::clone(&self.name), Arc::clone(&commit));
            let (phase, call, approved, then_execute) = (msg.phase, msg.call, msg.approved, msg.then_execute);
            let (task, router) = (Arc::clone(&msg.task), msg.router);
            move |finishing: Finishing<'_>| {
                let host = call_host(&name, &handler, &call, &task, &router, &commit);
                let answer = run_call(&handler, phase, (&call, approved), &host, then_execute.as_ref(), Some(&started))
                    .map(PhaseAnswer::owned);
                if state.swap(DONE, Ordering::AcqRel) == ABANDONED {
                    // The last abandoned thread is back: the tool may serve again.
                    if health.abandoned.fetch_sub(1, Ordering::AcqRel) == 1 {
                        health.quarantined.store(false, Ordering::Release);
                    }
                }
                // The caller this answer wakes may queue its next call at once: this worker takes it.
                finishing.now();
                let _ = tx.send(answer);
            }
        };
        if let Err(message) = self.pool.submit(job) {
            return Response::reply(Err(PhaseError::Failed(message)));
        }

        let (health, name, max_abandoned, task, timeout, grace) = (
            Arc::clone(&self.health),
            Arc::clone(&self.name),
            self.max_abandoned,
            msg.task,
            msg.timeout,
            msg.cancel_grace,
        );
        let commit_wait = msg.commit_wait;
        let lost = || Err(PhaseError::Failed("the worker thread was lost".to_owned()));
        Response::fut(async move {
            let mut rx = rx;
            let mut limit = timeout;
            let mut deadline = started.prepare_deadline;
            let mut awaiting_start = execute_timeout.is_some();
            let failure = loop {
                tokio::select! {
                    answer = &mut rx => return answer.unwrap_or_else(|_| lost()),
                    // `execute` began after `prepare` in the same job, and its own timeout ends before the
                    // prepare timeout would have: that deadline holds from now.
                    () = started.sooner.notified(), if awaiting_start => {}
                    () = tokio::time::sleep_until(deadline.into()) => {}
                    () = task.cancel.cancelled() => break PhaseError::Cancelled,
                    // The call alone was cancelled (its future dropped): the same as its task's, for it.
                    () = cancelled.cancelled() => break PhaseError::Cancelled,
                }
                // `execute` began after `prepare` in the same job: its own timeout runs from its start.
                if let (true, Some(at), Some(execute)) = (awaiting_start, started.at.get(), execute_timeout) {
                    awaiting_start = false;
                    limit = execute;
                    deadline = *at + execute;
                }
                if Instant::now() >= deadline {
                    break PhaseError::TimedOut(limit);
                }
            };
            // A call that committed is writing: reporting it as failed now would hide what it wrote, so its
            // own answer is waited for (bounded, for a write that hangs). One that did not commit never can.
            let failure = match commit.close() {
                true => failure,
                false => match tokio::time::timeout(commit_wait, &mut rx).await {
                    Ok(answer) => return answer.unwrap_or_else(|_| lost()),
                    Err(_) => PhaseError::WriteOverran(commit_wait),
                },
            };
            // Every blocking host service the call uses from here on answers `Cancelled`.
            cancelled.cancel();
            if failure == PhaseError::Cancelled
                && let Ok(answer) = tokio::time::timeout(grace, &mut rx).await
            {
                return answer.unwrap_or_else(|_| lost());
            }
            // Reply now; the plugin call keeps its thread until it returns.
            if state.compare_exchange(RUNNING, ABANDONED, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                let abandoned = health.abandoned.fetch_add(1, Ordering::AcqRel) + 1;
                if abandoned >= max_abandoned && !health.quarantined.swap(true, Ordering::AcqRel) {
                    tracing::error!(tool = %name, abandoned, "tool quarantined: too many calls still running after being abandoned");
                }
            }
            Err(failure)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The SDK reads a call in the runtime's layout without the general parse (`call_layout::CallParts`): every
    /// call the runtime writes for a tool taking its task by reference must be in that layout, or every call pays
    /// the general parse again.
    #[test]
    fn every_call_by_reference_is_written_in_the_layout_the_sdk_reads_first_and_keeps_its_id() {
        let task = TaskShared::new(crate::TaskContext::new("/w"), Default::default(), None, None);
        let key = task.json_for(task.mode()).key.to_string();
        let calls = [
            ("noop", "", json!({})),
            ("read_file", "toolu_01", json!({"path": "a \"b\"\n", "n": [1, null, 2.5]})),
            ("write_to_file", "toolu_02", json!("x")),
            // An id with escapes is not in the layout (the SDK's general parse reads it) and has its own copy.
            ("noop", "a\"b\\c\u{1}é", json!({})),
            ("n\"oop", "é😀", json!({})),
        ];
        for (tool, id, input) in calls {
            let call = CallJson::new(tool, id, &input, &task, true, CallCancel::Never);
            assert_eq!(call.id(), id);
            if id.contains(['"', '\\', '\u{1}']) || tool.contains('"') {
                assert_eq!(layout::CallParts::read(&call.text(false)), None);
                let general: Value = serde_json::from_str(&call.text(true)).unwrap();
                assert_eq!((&general["tool"], &general["id"]), (&json!(tool), &json!(id)));
                continue;
            }
            for approved in [false, true] {
                let text = call.text(approved);
                let parts = layout::CallParts::read(&text).unwrap_or_else(|| panic!("not in the layout: {text}"));
                assert_eq!((parts.tool, parts.id, parts.task_ref, parts.approved), (tool, id, &*key, approved));
                assert_eq!(serde_json::from_str::<Value>(parts.input).unwrap(), input);
                let general: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(general["input"], input, "{text}");
                assert_eq!(general["task_ref"], json!(key));
            }
            // A tool taking its task by value gets it whole, which the general parse reads.
            let by_value = CallJson::new(tool, id, &input, &task, false, CallCancel::Never);
            assert_eq!(by_value.id(), id);
            assert_eq!(layout::CallParts::read(&by_value.text(false)), None);
            let general: Value = serde_json::from_str(&by_value.text(true)).unwrap();
            assert_eq!(
                (&general["tool"], &general["approved"], &general["task"]["cwd"]),
                (&json!(tool), &json!(true), &json!("/w"))
            );
        }
    }

    /// A call's text is written into the buffer the last call on the thread left (`SPARE_TEXT`): each must be
    /// exactly what serde writes for its input, whatever the calls before it held, and a large buffer is not kept.
    #[test]
    fn a_call_written_into_a_used_buffer_is_its_own_text_exactly() {
        let task = TaskShared::new(crate::TaskContext::new("/w"), Default::default(), None, None);
        let key = task.json_for(task.mode()).key;
        let long = "é😀\n\"x".repeat(2_000);
        let inputs = [
            json!({"content": long}),
            json!({}),
            json!({"path": "ü/😀.rs", "n": [1, -2, 3.5e300, null, true], "k": {"z": "\u{7f}\u{1}\t"}}),
            json!("x"),
            json!({"path": "a"}),
            json!([]),
        ];
        for input in inputs.iter().chain(inputs.iter().rev()) {
            let call = CallJson::new("t", "toolu_1", input, &task, true, CallCancel::Never);
            let expected = format!(
                r#"{{"tool":"t","id":"toolu_1","input":{},"task_ref":"{key}"}}"#,
                serde_json::to_string(input).unwrap()
            );
            assert_eq!(call.text(false), expected);
            let capacity = call.plain.capacity();
            drop(call);
            let kept = SPARE_TEXT.with(|spare| {
                let spare_text = spare.take();
                let kept = spare_text.capacity();
                spare.set(spare_text);
                kept
            });
            assert_eq!(kept, if capacity <= SPARE_TEXT_BYTES { capacity } else { 0 });
        }
    }
}
