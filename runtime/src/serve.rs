//! `toolshed serve`: the loaded tools as an MCP server, over stdio or streamable HTTP.
//!
//! Every MCP session (the stdio connection, each HTTP session id) has its own task: its own read cache,
//! mistake count and processes, made from the CLI's task context with a fresh id, in the client's `roots`
//! when serve runs without `--cwd`. A session's end cancels its task and kills its processes; a call's
//! `notifications/cancelled`, or its client going away, cancels that call alone. Streamed command output
//! becomes `notifications/progress` for a call that carried a `progressToken`. Approval asks the client
//! through elicitation when it declared the capability, else follows `--yes` and the allow-list
//! (`[approval] tools`). Over HTTP a bearer token is required on every request, the listener binds to
//! loopback unless told otherwise, and browser `Origin`s other than loopback ones are refused (rmcp checks
//! `Host` and `Origin`; serve::http checks the token and the limits).

mod approve;
mod http;
mod progress;
mod roots;
mod session;
mod stdio;
mod tools;

pub use approve::ElicitingApprover;
pub use progress::Progress;

use crate::{Runtime, TaskContext, TaskHandle, ToolUse};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelledNotificationParam, CompleteRequestParams, CompleteResult,
    Implementation, InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData, Peer, ServerHandler, ServiceExt as _};
use serde_json::Value;
use session::Session;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

/// How to serve.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Streamable HTTP on this address (`PORT` or `HOST:PORT`); stdio when `None`.
    pub http: Option<String>,
    /// The bearer token HTTP clients must send; required with `http`.
    pub token: Option<String>,
    /// Allows a non-loopback HTTP address.
    pub public: bool,
    /// The HTTP server's limits and the sessions' timeouts (`[serve]`).
    pub limits: crate::config::ServeConfig,
    /// Whether a client's `roots` become its session's workspace roots (serve was started without
    /// `--cwd`); otherwise every session works in the task context's roots.
    pub client_roots: bool,
    /// Where execute_command's streamed output goes as progress; the same value must be the runtime's
    /// event sink ([`Progress::sink`]). `None`: no progress notifications.
    pub progress: Option<Progress>,
}

/// Why serving failed or could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// HTTP was asked without a token.
    #[error(
        "--http needs a bearer token: pass --token-file PATH (a file only you can read) or set TOOLSHED_SERVE_TOKEN"
    )]
    NoToken,
    /// The address is not usable.
    #[error("--http {0}: {1}")]
    Address(String, String),
    /// The address could not be bound.
    #[error("--http {0}: {1}")]
    Bind(String, #[source] std::io::Error),
    /// The transport failed.
    #[error("serving MCP failed: {0}")]
    Io(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// What every session of the server shares.
struct Shared {
    runtime: Arc<Runtime>,
    /// The CLI's task context; every session's task is made from it.
    context: TaskContext,
    client_roots: bool,
    roots_timeout: Duration,
    progress: Option<Progress>,
    next_id: AtomicU64,
    /// Sessions whose handler is alive, for `[serve] max_sessions`.
    live_sessions: std::sync::atomic::AtomicUsize,
    /// Every session's client that finished initializing, to tell of tool list changes.
    clients: std::sync::Mutex<HashMap<u64, Peer<RoleServer>>>,
    http_sessions: session::HttpSessions,
    http_calls: session::Calls,
}

impl Shared {
    /// A task for a session of `peer`: the CLI's context with a fresh id, in the client's roots when it has
    /// any and serve was started without `--cwd`.
    async fn open_task(&self, peer: &Peer<RoleServer>) -> TaskHandle {
        let mut context = self.context.clone().with_id(String::new());
        if let Some(roots) = self.client_roots(peer).await {
            context.roots = roots;
        }
        self.runtime.task(context)
    }

    /// The client's roots as workspace roots, when they should and can be used.
    async fn client_roots(&self, peer: &Peer<RoleServer>) -> Option<Vec<(String, std::path::PathBuf)>> {
        if !self.client_roots || peer.peer_info().is_none_or(|info| info.capabilities.roots.is_none()) {
            return None;
        }
        // Deprecated by a protocol revision after the ones the pinned clients speak; it is how they send roots.
        #[allow(deprecated)]
        let listed = tokio::time::timeout(self.roots_timeout, peer.list_roots()).await;
        let listed = match listed {
            Ok(Ok(listed)) => listed,
            Ok(Err(e)) => {
                tracing::debug!("the client's roots/list failed, working in the current directory: {e}");
                return None;
            }
            Err(_) => {
                tracing::debug!(
                    "no answer to roots/list within {:?}, working in the current directory",
                    self.roots_timeout
                );
                return None;
            }
        };
        #[allow(deprecated)]
        let roots = roots::workspace_roots(&listed.roots);
        (!roots.is_empty()).then_some(roots)
    }
}

/// The MCP server handler of one session. rmcp makes one per session and drops it when the session ends;
/// the session's state goes with it.
#[derive(Clone)]
struct ToolshedServer {
    shared: Arc<Shared>,
    session: Arc<Session>,
}

impl ToolshedServer {
    fn open(shared: &Arc<Shared>) -> Self {
        Self { shared: Arc::clone(shared), session: Session::new(shared) }
    }
}

impl ServerHandler for ToolshedServer {
    fn get_info(&self) -> ServerConfig {
        let mut info =
            InitializeResult::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build());
        info.server_info = Implementation::new("toolshed", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.session.seen_http(&context.extensions);
        self.shared
            .clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(self.session.number, context.peer.clone());
        // The roots are asked for now, before the first call needs them.
        let _ = self.session.task(&context.peer).await;
    }

    async fn on_cancelled(&self, notification: CancelledNotificationParam, _context: NotificationContext<RoleServer>) {
        if let Some(id) = &notification.request_id {
            self.session.calls.cancel("", &session::request_id(id));
        }
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.session.roots_changed(&context.peer).await;
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.session.seen_http(&context.extensions);
        let task = self.session.task(&context.peer).await;
        // The MCP servers still starting get a bounded wait, so a first listing has their tools.
        task.mcp_listable().await;
        Ok(ListToolsResult::with_all_items(tools::listed(&task)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.session.seen_http(&context.extensions);
        // Registered before anything is awaited, so a cancellation that comes while the task is made finds it.
        let (mine, _mine) = self.session.calls.add((String::new(), session::request_id(&context.id)));
        let task = self.session.task(&context.peer).await;
        if let Some(refusal) = tools::refusal(&task, &request.name) {
            return Err(refusal);
        }
        let id = format!("mcp-{}", self.shared.next_id.fetch_add(1, Ordering::Relaxed));
        let watch = match (&self.shared.progress, context.meta.get_progress_token()) {
            (Some(progress), Some(token)) => Some(progress.watch(task.id(), &id, token, context.peer.clone())),
            _ => None,
        };
        let (gone, _entry) = match self.shared.http_calls.register(&context) {
            Some((token, entry)) => (Some(token), Some(entry)),
            None => (None, None),
        };
        let input = Value::Object(request.arguments.unwrap_or_default());
        let tool_use = ToolUse::new(id, request.name.to_string(), input);
        let run = approve::CLIENT.scope(context.peer.clone(), task.execute(tool_use));
        // Cancelled by the client (`notifications/cancelled`), its session ending, or its connection gone:
        // dropping the call's future cancels that call alone (its plugin is told, its process group killed).
        let result = tokio::select! {
            result = run => result,
            () = context.ct.cancelled() => return Ok(CallToolResponse::Complete(tools::cancelled())),
            () = mine.cancelled() => return Ok(CallToolResponse::Complete(tools::cancelled())),
            () = async { match &gone { Some(gone) => gone.cancelled().await, None => std::future::pending().await } } => {
                return Ok(CallToolResponse::Complete(tools::cancelled()));
            }
        };
        if let Some(watch) = watch {
            tokio::select! {
                () = watch.finish() => {}
                () = context.ct.cancelled() => {}
            }
        }
        Ok(CallToolResponse::Complete(tools::call_result(&result)?))
    }

    // Capabilities Toolshed does not offer, probed by clients all the same: answered quietly with nothing
    // instead of an error, which rmcp would log as a warning for every probe.

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::default())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::default())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::default())
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Ok(CompleteResult::default())
    }
}

/// Serves the runtime's tools until the client goes (stdio) or the process is stopped (HTTP); every session
/// gets a task made from `context`.
pub async fn run(runtime: Arc<Runtime>, context: TaskContext, options: ServeOptions) -> Result<(), ServeError> {
    let shared = Arc::new(Shared {
        runtime: Arc::clone(&runtime),
        context,
        client_roots: options.client_roots,
        roots_timeout: Duration::from_millis(options.limits.roots_timeout_ms),
        progress: options.progress.clone(),
        next_id: AtomicU64::new(1),
        live_sessions: std::sync::atomic::AtomicUsize::new(0),
        clients: std::sync::Mutex::new(HashMap::new()),
        http_sessions: std::sync::Mutex::new(HashMap::new()),
        http_calls: session::Calls::default(),
    });
    // The tool list follows hot reloads: every plugin event becomes `notifications/tools/list_changed` for
    // every client.
    if let Err(e) = runtime.watch() {
        tracing::warn!("not watching the plugin directories: {e}");
    }
    let mut events = runtime.events();
    let notified = Arc::downgrade(&shared);
    tokio::spawn(async move {
        while events.recv().await.is_some() {
            if !notify_all(&notified).await {
                return;
            }
        }
    });
    // So do the MCP servers' tools (listed as `{server}__mcp__{tool}`): each change of the hub's generation
    // (a server connected, disconnected, or followed its `list_changed`) is a tool list change too.
    let mut mcp = runtime.mcp_changes();
    let notified = Arc::downgrade(&shared);
    tokio::spawn(async move {
        while mcp.changed().await.is_ok() {
            if !notify_all(&notified).await {
                return;
            }
        }
    });
    match &options.http {
        None => {
            // One session: the connection. Its end (stdin closed) cancels its task at once, without waiting
            // for rmcp to drain the calls in flight first.
            let server = ToolshedServer::open(&shared);
            let session = Arc::downgrade(&server.session);
            let (stdin, stdout) = stdio::streams();
            let stdin = session::EndOnEof::new(stdin, move || {
                if let Some(session) = session.upgrade() {
                    session.end();
                }
            });
            let running = server.serve((stdin, stdout)).await.map_err(|e| ServeError::Io(e.into()))?;
            running.waiting().await.map_err(|e| ServeError::Io(e.into()))?;
            Ok(())
        }
        Some(address) => http::serve_http(shared, address, &options).await,
    }
}

/// Tells every client its tool list changed; false once the server is gone.
async fn notify_all(shared: &std::sync::Weak<Shared>) -> bool {
    let Some(shared) = shared.upgrade() else {
        return false;
    };
    let peers: Vec<Peer<RoleServer>> =
        shared.clients.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
    drop(shared);
    for peer in &peers {
        notify_tools_changed(peer).await;
    }
    true
}

/// Tells a client its tool list changed (plugins loaded, reloaded or unloaded).
async fn notify_tools_changed(peer: &Peer<RoleServer>) {
    if let Err(e) = peer.notify_tool_list_changed().await {
        tracing::debug!("cannot notify a client of the tool list change: {e}");
    }
}
