//! One MCP session (a stdio connection, an HTTP session id): its own task, made on first use from the CLI's
//! task context with a fresh id and, without `--cwd`, the client's roots; replaced when the roots change; and
//! cancelled, its processes killed, when the session ends however it ends (the handler owning it is dropped).

use super::Shared;
use crate::task::CancelToken;
use crate::TaskHandle;
use rmcp::service::RoleServer;
use rmcp::Peer;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

/// The replaced tasks a session keeps, to cancel with it.
const MAX_RETIRED: usize = 8;

/// A session's state.
pub(super) struct Session {
    /// This session among the server's, for the client list.
    pub number: u64,
    shared: Arc<Shared>,
    /// The task new calls run in; `None` until first used.
    current: Mutex<Option<TaskHandle>>,
    /// Tasks replaced after a roots change: their calls in flight finish there; they end with the session.
    retired: Mutex<Vec<TaskHandle>>,
    /// Serialises making the task, so a call racing `initialized` waits for the roots instead of making a
    /// second task.
    making: tokio::sync::Mutex<()>,
    /// `roots/list_changed` notifications received, and how many of them the last roots asked for cover: a
    /// flood of them costs one `roots/list` (each may take `[serve] roots_timeout_ms`, with calls waiting),
    /// not one each.
    root_changes: AtomicU64,
    roots_covered: AtomicU64,
    /// The HTTP session id, once a request carried it.
    http_id: OnceLock<String>,
    /// The session's calls in flight by JSON-RPC id, for `notifications/cancelled`.
    pub calls: Calls,
}

impl Session {
    pub fn new(shared: &Arc<Shared>) -> Arc<Self> {
        shared.live_sessions.fetch_add(1, Ordering::SeqCst);
        Arc::new(Self {
            number: NEXT_SESSION.fetch_add(1, Ordering::Relaxed),
            shared: Arc::clone(shared),
            current: Mutex::new(None),
            retired: Mutex::new(Vec::new()),
            making: tokio::sync::Mutex::new(()),
            root_changes: AtomicU64::new(0),
            roots_covered: AtomicU64::new(0),
            http_id: OnceLock::new(),
            calls: Calls::default(),
        })
    }

    /// The session's task, made on first use.
    pub async fn task(&self, peer: &Peer<RoleServer>) -> TaskHandle {
        if let Some(task) = self.current.lock().unwrap_or_else(PoisonError::into_inner).clone() {
            return task;
        }
        let _making = self.making.lock().await;
        if let Some(task) = self.current.lock().unwrap_or_else(PoisonError::into_inner).clone() {
            return task;
        }
        let task = self.shared.open_task(peer).await;
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(task.clone());
        task
    }

    /// The client's roots changed: new calls run in a new task in the new roots; calls in flight finish in
    /// the old one, which ends with the session.
    pub async fn roots_changed(&self, peer: &Peer<RoleServer>) {
        if !self.shared.client_roots {
            return;
        }
        let this = self.root_changes.fetch_add(1, Ordering::SeqCst) + 1;
        let _making = self.making.lock().await;
        // Roots asked for after this notice came already tell what it announced.
        if self.roots_covered.load(Ordering::SeqCst) >= this {
            return;
        }
        self.roots_covered.store(self.root_changes.load(Ordering::SeqCst), Ordering::SeqCst);
        // Retired first: a call that comes while the new roots are asked for waits for them.
        let old = self.current.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(old) = old {
            let mut retired = self.retired.lock().unwrap_or_else(PoisonError::into_inner);
            // A client changing its roots again and again must not pile up tasks: the oldest is let go (it
            // still ends, its processes killed, when its last call does).
            if retired.len() >= MAX_RETIRED {
                retired.remove(0);
            }
            retired.push(old);
        }
        let task = self.shared.open_task(peer).await;
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(task);
    }

    /// Remembers the HTTP session id of this session (from a request's `Mcp-Session-Id`), so `DELETE` ends it
    /// at once.
    pub fn seen_http(self: &Arc<Self>, extensions: &rmcp::model::Extensions) {
        if self.http_id.get().is_some() {
            return;
        }
        let Some(id) = session_header(extensions) else {
            return;
        };
        if self.http_id.set(id.clone()).is_ok() {
            self.shared.http_sessions.lock().unwrap_or_else(PoisonError::into_inner).insert(id, Arc::downgrade(self));
        }
    }

    /// Ends the session's work: every task it made is cancelled and its processes killed.
    pub fn end(&self) {
        if let Some(task) = self.current.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            task.cancel();
        }
        for task in self.retired.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            task.cancel();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // The handler owning the session is gone: stdio EOF, HTTP DELETE, the session's idle expiry, the
        // server stopping. Whatever is still running for it stops.
        self.end();
        self.shared.live_sessions.fetch_sub(1, Ordering::SeqCst);
        self.shared.clients.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.number);
        if let Some(id) = self.http_id.get() {
            self.shared.http_sessions.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
        }
    }
}

/// The `Mcp-Session-Id` of the HTTP request a message came in.
pub(super) fn session_header(extensions: &rmcp::model::Extensions) -> Option<String> {
    let parts = extensions.get::<hyper::http::request::Parts>()?;
    let id = parts.headers.get("mcp-session-id")?.to_str().ok()?;
    Some(id.to_owned())
}

/// The HTTP sessions by id, for `DELETE` to end one at once.
pub(super) type HttpSessions = Mutex<HashMap<String, Weak<Session>>>;

/// `tools/call`s in flight by (session, JSON-RPC id), each with the token that cancels it. Over HTTP the
/// session is the `Mcp-Session-Id` (a client dropping the connection waiting for an answer cancels its
/// call); within a session it is empty (`notifications/cancelled` cancels its call). A client reusing an id
/// still in flight has both calls under it, so a cancellation of the id reaches both (rmcp's own token
/// reaches only the last).
#[derive(Default)]
pub(super) struct Calls(Mutex<HashMap<CallKey, Vec<Arc<CancelToken>>>>);

/// (session, JSON-RPC id) of a call, see [`Calls`].
type CallKey = (String, String);

impl Calls {
    /// Registers the HTTP call `context` describes; `None` outside HTTP. The registration ends with the guard.
    pub fn register<'a>(
        &'a self,
        context: &rmcp::service::RequestContext<RoleServer>,
    ) -> Option<(Arc<CancelToken>, CallEntry<'a>)> {
        let session = session_header(&context.extensions)?;
        Some(self.add((session, request_id(&context.id))))
    }

    /// Registers a call under `key`.
    pub fn add(&self, key: CallKey) -> (Arc<CancelToken>, CallEntry<'_>) {
        let token = Arc::new(CancelToken::default());
        self.0.lock().unwrap_or_else(PoisonError::into_inner).entry(key.clone()).or_default().push(Arc::clone(&token));
        (Arc::clone(&token), CallEntry { calls: self, key, token })
    }

    /// Cancels the calls `id` of `session` still running.
    pub fn cancel(&self, session: &str, id: &str) {
        let key = (session.to_owned(), id.to_owned());
        let tokens = self.0.lock().unwrap_or_else(PoisonError::into_inner).remove(&key).unwrap_or_default();
        for token in tokens {
            tracing::debug!("cancelling call {id}");
            token.cancel();
        }
    }
}

/// A JSON-RPC id as the HTTP layer reads it from the body (`7`, `"a"`).
pub(super) fn request_id(id: &rmcp::model::RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

/// Unregisters a call when it ends.
pub(super) struct CallEntry<'a> {
    calls: &'a Calls,
    key: CallKey,
    token: Arc<CancelToken>,
}

impl Drop for CallEntry<'_> {
    fn drop(&mut self) {
        let mut calls = self.calls.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tokens) = calls.get_mut(&self.key) {
            // Only this call's: another call under the same id stays cancellable.
            tokens.retain(|token| !Arc::ptr_eq(token, &self.token));
            if tokens.is_empty() {
                calls.remove(&self.key);
            }
        }
    }
}

/// stdin that tells of its end: the stdio session ends at EOF, and its task is cancelled then rather than
/// after rmcp has waited for the calls in flight.
pub(super) struct EndOnEof<R> {
    inner: R,
    on_eof: Option<Box<dyn FnOnce() + Send>>,
}

impl<R> EndOnEof<R> {
    pub fn new(inner: R, on_eof: impl FnOnce() + Send + 'static) -> Self {
        Self { inner, on_eof: Some(Box::new(on_eof)) }
    }
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for EndOnEof<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let eof =
            matches!(polled, std::task::Poll::Ready(Ok(()))) && buf.filled().len() == before && buf.remaining() > 0;
        if eof && let Some(on_eof) = self.on_eof.take() {
            on_eof();
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt as _;

    #[tokio::test]
    async fn the_end_of_stdin_is_told_once() {
        let (ended_tx, mut ended) = tokio::sync::mpsc::unbounded_channel();
        let mut stdin = EndOnEof::new(&b"{}\n"[..], move || {
            let _ = ended_tx.send(());
        });
        let mut buf = [0u8; 2];
        assert_eq!(stdin.read(&mut buf).await.unwrap(), 2);
        assert!(ended.try_recv().is_err());
        let mut rest = Vec::new();
        stdin.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, b"\n");
        assert_eq!(stdin.read(&mut buf).await.unwrap(), 0);
        assert!(ended.try_recv().is_ok());
        assert!(ended.try_recv().is_err());
    }
}
