//! The `browser.*` services (browser_action): at most one browser session per task, each a fresh headless
//! Chromium (or a tab in the user's remote Chrome) driven over the DevTools protocol, closed on `close`, on
//! the task's end, when another tool runs (as Cline's executor closes it), on cancellation and on shutdown.
//!
//! The host owns the browser, not the plugin: the Chromium process tree is the host's (its own process group,
//! killed and reaped like a command's), `file://` loads are checked against the task's workspace rules as
//! they happen, and a session outlives the plugin call that launched it.

#[cfg(feature = "browser")]
mod session;
#[cfg(feature = "browser")]
pub use session::{CHROMIUM_FLAGS, USER_AGENT as CHROMIUM_USER_AGENT};

#[cfg(feature = "browser")]
use crate::config::BrowserConfig;
use crate::services::host::Router;
#[cfg(feature = "browser")]
use crate::services::host::{cancelled, failed, CallHost};
#[cfg(feature = "browser")]
use crate::services::process::Tree;
#[cfg(feature = "browser")]
use std::collections::HashMap;
#[cfg(feature = "browser")]
use std::sync::atomic::{AtomicUsize, Ordering};
#[cfg(feature = "browser")]
use std::sync::{Arc, Mutex};
#[cfg(feature = "browser")]
use toolshed_plugin_api::services::{
    BrowserActionKind, BrowserActionRequest, BrowserActionResponse, BrowserActionService, BrowserStatus,
    BrowserStatusService,
};
#[cfg(feature = "browser")]
use toolshed_plugin_api::{ServiceError, ServiceErrorKind};

/// Cline's text for an action on a task with no browser open.
#[cfg(feature = "browser")]
pub(crate) const NOT_LAUNCHED: &str =
    "Browser is not launched. This may occur if the browser was automatically closed by a non-`browser_action` tool.";

/// An action whose browser was closed while it ran (by a `close` or a later launch of the same task, another
/// tool's call, the task's end or the runtime's shutdown): its own error (a reset connection, a cancelled
/// page) would only describe the close's effect.
#[cfg(feature = "browser")]
const SUPERSEDED: &str = "The browser was closed while this action ran (by another call of this task, the task's \
                          end or the runtime's shutdown). Launch it again if you still need it.";

/// [`SUPERSEDED`], with what the action itself reported kept after it (its own failure may have come first).
#[cfg(feature = "browser")]
fn superseded(error: &str) -> String {
    format!("{SUPERSEDED} (The action itself reported: {error})")
}

/// The tool whose calls keep the browser open; every other tool closes it first, as Cline's executor does.
pub(crate) const BROWSER_TOOL: &str = "browser_action";

/// The browser sessions of every task of one runtime.
#[cfg(feature = "browser")]
pub(crate) struct BrowserHost {
    inner: Arc<Inner>,
}

#[cfg(feature = "browser")]
struct Inner {
    config: BrowserConfig,
    /// What of the host's environment the browser gets.
    env: crate::child_process::clean::EnvRule,
    /// Open sessions by task id.
    sessions: Mutex<HashMap<String, Arc<Entry>>>,
    /// How many sessions are open: the call path asks this before it takes the lock.
    open: AtomicUsize,
    /// The tokio runtime the DevTools connections live on, started with the first launch.
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    /// The threads killing closed browsers ([`BrowserHost::close_task`]), joined by the host's drop: a
    /// process that exits right after a task's end still leaves no browser behind.
    closing: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

/// One task's session: the session itself (behind an async lock: one action at a time) and, apart from it,
/// the browser's process tree, so a close never waits for an action in flight to let go of the session.
#[cfg(feature = "browser")]
struct Entry {
    session: tokio::sync::Mutex<Option<session::Session>>,
    chrome: Mutex<Chrome>,
}

/// An entry's browser process. `closed` outlives the tree: a launch still starting Chromium when a close (or
/// another launch) takes its entry away finds it set and kills what it started, instead of leaving a browser
/// that nothing in the table owns.
#[cfg(feature = "browser")]
#[derive(Default)]
struct Chrome {
    tree: Option<Arc<Tree>>,
    closed: bool,
}

#[cfg(feature = "browser")]
impl Entry {
    fn new() -> Self {
        Entry { session: tokio::sync::Mutex::new(None), chrome: Mutex::new(Chrome::default()) }
    }

    /// Hands the entry the browser its launch started; false (the tree killed) when the entry was closed
    /// meanwhile.
    fn adopt(&self, tree: &Arc<Tree>) -> bool {
        let mut chrome = lock(&self.chrome);
        if chrome.closed {
            drop(chrome);
            tree.kill();
            return false;
        }
        chrome.tree = Some(Arc::clone(tree));
        true
    }

    /// Marks the entry closed and kills its browser, if one was started; returns once the tree is gone.
    fn shut(&self) {
        let tree = {
            let mut chrome = lock(&self.chrome);
            chrome.closed = true;
            chrome.tree.take()
        };
        if let Some(tree) = tree {
            tree.kill();
        }
    }

    fn is_closed(&self) -> bool {
        lock(&self.chrome).closed
    }
}

#[cfg(feature = "browser")]
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(feature = "browser")]
impl BrowserHost {
    pub fn new(config: BrowserConfig, env: crate::child_process::clean::EnvRule) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                env,
                sessions: Mutex::new(HashMap::new()),
                open: AtomicUsize::new(0),
                runtime: Mutex::new(None),
                closing: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The viewport the specs name.
    pub fn viewport(&self) -> (u32, u32) {
        (self.inner.config.viewport_width, self.inner.config.viewport_height)
    }

    /// Closes the task's browser, if it has one: it leaves the table now (a later action finds it closed) and
    /// its process tree is killed on a thread of its own, as a task's commands are. The caller is an async
    /// thread (the pipeline before another tool's call, a task's end or cancellation): a kill waits for the
    /// tree to be gone, up to `KILL_SETTLE`, and would hold up everything else that thread carries (the whole
    /// stdio session of `toolshed serve`). Should no thread start, dropping the entry kills the tree here.
    pub fn close_task(&self, task_id: &str) {
        if self.inner.open.load(Ordering::Acquire) == 0 {
            return;
        }
        if let Some(entry) = self.inner.take(task_id) {
            let inner = Arc::clone(&self.inner);
            let closing =
                std::thread::Builder::new().name("browser-close".to_owned()).spawn(move || inner.dispose(entry, false));
            if let Ok(closing) = closing {
                let mut threads = lock(&self.inner.closing);
                threads.retain(|thread| !thread.is_finished());
                threads.push(closing);
            }
        }
    }

    /// Whether the task has a browser open.
    pub fn is_open(&self, task_id: &str) -> bool {
        self.inner.open.load(Ordering::Acquire) > 0 && lock(&self.inner.sessions).contains_key(task_id)
    }

    /// One action for `call`'s task.
    fn act(&self, call: &CallHost, request: BrowserActionRequest) -> Result<BrowserActionResponse, ServiceError> {
        let inner = &self.inner;
        let task_id = call.task.info.task_id.clone();
        if request.action == BrowserActionKind::Close {
            if let Some(entry) = inner.take(&task_id) {
                inner.dispose(entry, true);
            }
            return Ok(BrowserActionResponse::default());
        }
        let entry = match request.action {
            BrowserActionKind::Launch => {
                // Cline's launch closes the browser still open first.
                if let Some(old) = inner.take(&task_id) {
                    inner.dispose(old, true);
                }
                let entry = Arc::new(Entry::new());
                let replaced = {
                    // Counted under the table's lock, as `take` uncounts: a count that ran behind the table
                    // would let another task's `close_task` skip a browser that is open.
                    let mut sessions = lock(&inner.sessions);
                    let replaced = sessions.insert(task_id.clone(), Arc::clone(&entry));
                    if replaced.is_none() {
                        inner.open.fetch_add(1, Ordering::AcqRel);
                    }
                    replaced
                };
                // Another launch of the task got in between the two locks: its browser goes too (as the one
                // before it did), and the count of open sessions stays the table's.
                if let Some(replaced) = replaced {
                    inner.dispose(replaced, false);
                }
                entry
            }
            _ => lock(&inner.sessions).get(&task_id).cloned().ok_or_else(|| failed(NOT_LAUNCHED))?,
        };
        let outcome = self.run(call, &entry, request);
        // A failed or cancelled action leaves the browser in no known state: Cline closes it. Not an action
        // that found no session: the entry is a launch's still starting its browser, and nothing of this
        // action's is there to close.
        let touched = !matches!(&outcome, Err(error) if error.message == NOT_LAUNCHED);
        if outcome.is_err() && touched {
            let mine = {
                let mut sessions = lock(&inner.sessions);
                match sessions.get(&task_id) {
                    Some(current) if Arc::ptr_eq(current, &entry) => {
                        inner.open.fetch_sub(1, Ordering::AcqRel);
                        sessions.remove(&task_id)
                    }
                    _ => None,
                }
            };
            if let Some(entry) = mine {
                inner.dispose(entry, true);
            }
        }
        outcome
    }

    /// Runs the action on the browser runtime and waits for it, the call's cancellation or its timeout.
    fn run(
        &self,
        call: &CallHost,
        entry: &Arc<Entry>,
        request: BrowserActionRequest,
    ) -> Result<BrowserActionResponse, ServiceError> {
        let inner = &self.inner;
        let cancels = call.cancels();
        let handle = inner.runtime_handle().map_err(failed)?;
        let png = inner.config.screenshot_format == "png"
            || matches!(call.task.info.model_family.as_str(), "glm" | "devstral");
        let context = session::Context { config: inner.config.clone(), task: Arc::downgrade(call.task), png };
        // Starting Chromium blocks (a process, its first line on stderr): it happens here, on the plugin's
        // thread, where the call's cancellation is waited on.
        let launched = if request.action == BrowserActionKind::Launch {
            let target = session::Target::check(request.url.as_deref().unwrap_or(""), call.task).map_err(failed)?;
            let endpoint = match &inner.config.remote_url {
                Some(url) => session::Endpoint::Remote(url.clone()),
                None => {
                    let (tree, ws, profile) =
                        session::start_chrome(&inner.config, &inner.env, &cancels).map_err(|error| {
                            // A start that failed (a timeout, with other browsers starting) after its entry was
                            // closed says so first; a cancellation stays one.
                            match error.kind {
                                ServiceErrorKind::Failed if entry.is_closed() => failed(superseded(&error.message)),
                                _ => error,
                            }
                        })?;
                    let tree = Arc::new(tree);
                    if !entry.adopt(&tree) {
                        return Err(failed(SUPERSEDED));
                    }
                    session::Endpoint::Local { ws, tree, profile }
                }
            };
            Some((target, endpoint))
        } else {
            None
        };
        let (tx, rx) = crossbeam_channel::bounded(1);
        let job_entry = Arc::clone(entry);
        let job = handle.spawn(async move {
            let mut slot = job_entry.session.lock().await;
            // A close that took the entry before this job got the session finds nothing to close: the
            // session is not opened at all (dropping the endpoint lets its browser go).
            if job_entry.is_closed() {
                let _ = tx.send(Err(SUPERSEDED.to_owned()));
                return;
            }
            let answer = match (launched, slot.as_mut()) {
                (Some((target, endpoint)), _) => match session::Session::open(endpoint, &context).await {
                    Ok(session) => {
                        let session = slot.insert(session);
                        session.navigate(target, &context).await
                    }
                    Err(error) => Err(error),
                },
                (None, Some(session)) => session.act(&request, &context).await,
                (None, None) => Err(NOT_LAUNCHED.to_owned()),
            };
            let answer = answer.map_err(|error| if job_entry.is_closed() { superseded(&error) } else { error });
            let _ = tx.send(answer);
        });
        match cancels.recv(&rx, None) {
            Ok(Some(Ok(response))) => Ok(response),
            // A failure that came with the cancellation is its effect (the task's end closes its browser, and
            // the action reports the close): the call was cancelled, whichever of the two was seen first.
            Ok(Some(Err(message))) if !cancels.is_cancelled() => Err(failed(message)),
            Ok(Some(Err(_)) | None) | Err(_) => {
                job.abort();
                Err(cancelled())
            }
        }
    }
}

#[cfg(feature = "browser")]
impl Inner {
    /// Takes the task's entry out of the table.
    fn take(&self, task_id: &str) -> Option<Arc<Entry>> {
        let mut sessions = lock(&self.sessions);
        let entry = sessions.remove(task_id)?;
        self.open.fetch_sub(1, Ordering::AcqRel);
        Some(entry)
    }

    /// Ends a session taken out of the table: its browser's tree is killed at once; the connection (and a
    /// remote tab) is closed on the browser runtime, waited for when `wait` (a `close` the model asked for
    /// returns once the browser is gone).
    fn dispose(&self, entry: Arc<Entry>, wait: bool) {
        entry.shut();
        // A session lives on the browser runtime: with none (never started, or taken by the host's drop while
        // a close ran on its own thread) there is no connection to close, and none is started for it.
        let Some(handle) = lock(&self.runtime).as_ref().map(|runtime| runtime.handle().clone()) else {
            return;
        };
        let (tx, rx) = crossbeam_channel::bounded::<()>(1);
        handle.spawn(async move {
            let session = entry.session.lock().await.take();
            if let Some(session) = session {
                session.close().await;
            }
            drop(tx);
        });
        if wait {
            let bound = std::time::Duration::from_millis(self.config.command_timeout_ms.max(1));
            let _ = rx.recv_timeout(bound);
        }
    }

    /// The browser runtime's handle, started on first use.
    fn runtime_handle(&self) -> Result<tokio::runtime::Handle, String> {
        let mut runtime = lock(&self.runtime);
        if let Some(runtime) = runtime.as_ref() {
            return Ok(runtime.handle().clone());
        }
        let started = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("toolshed-browser")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the browser's runtime: {e}"))?;
        let handle = started.handle().clone();
        *runtime = Some(started);
        Ok(handle)
    }
}

#[cfg(feature = "browser")]
impl Drop for BrowserHost {
    fn drop(&mut self) {
        // The runtime is shutting down: every browser goes, now.
        let entries: Vec<Arc<Entry>> = lock(&self.inner.sessions).drain().map(|(_, entry)| entry).collect();
        for entry in &entries {
            entry.shut();
        }
        // Closes under way finish first (each is bounded by `KILL_SETTLE`).
        let closing = std::mem::take(&mut *lock(&self.inner.closing));
        for thread in closing {
            let _ = thread.join();
        }
        if let Some(runtime) = lock(&self.inner.runtime).take() {
            // Dropping the sessions' tasks closes their connections; the trees above are already dead (their
            // last holders reap them as they drop). Not waited for: this may run on an async thread.
            runtime.shutdown_background();
        }
        drop(entries);
    }
}

/// Registers `browser.action` and `browser.status`.
#[cfg(feature = "browser")]
pub(crate) fn register(router: &mut Router, host: &Arc<BrowserHost>) {
    let acting = Arc::clone(host);
    router.register::<BrowserActionService>(move |call, request| acting.act(call, request));
    let status = Arc::clone(host);
    router.register::<BrowserStatusService>(move |call, _| {
        let (viewport_width, viewport_height) = status.viewport();
        Ok(BrowserStatus { open: status.is_open(&call.task.info.task_id), viewport_width, viewport_height })
    });
}

/// Without the `browser` feature: no sessions and no services (browser_action says the host has no browser).
#[cfg(not(feature = "browser"))]
pub(crate) struct BrowserHost;

#[cfg(not(feature = "browser"))]
impl BrowserHost {
    pub fn new(_config: crate::config::BrowserConfig, _env: crate::child_process::clean::EnvRule) -> Self {
        Self
    }

    pub fn close_task(&self, _task_id: &str) {}

    pub fn viewport(&self) -> (u32, u32) {
        (900, 600)
    }
}

#[cfg(not(feature = "browser"))]
pub(crate) fn register(_router: &mut Router, _host: &std::sync::Arc<BrowserHost>) {}
