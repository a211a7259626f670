//! `toolshed serve`: the loaded tools as an MCP server, over stdio or streamable HTTP.
//!
//! Every `tools/call` runs through the same pipeline as `toolshed call` in one task. Approval asks the
//! client through elicitation when it declared the capability, else follows `--yes` and the allow-list
//! (`[approval] tools`). Over HTTP a bearer token is required on every request, the listener binds to
//! loopback unless told otherwise, and browser `Origin`s other than loopback ones are refused (rmcp checks
//! `Host` and `Origin`; serve::http checks the token and the limits).

mod approve;
mod http;
mod tools;

pub use approve::ElicitingApprover;

use crate::{Runtime, TaskHandle, ToolUse};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, Peer, ServerHandler, ServiceExt as _};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How to serve.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Streamable HTTP on this address (`PORT` or `HOST:PORT`); stdio when `None`.
    pub http: Option<String>,
    /// The bearer token HTTP clients must send; required with `http`.
    pub token: Option<String>,
    /// Allows a non-loopback HTTP address.
    pub public: bool,
    /// The HTTP server's limits (`[serve]`).
    pub limits: crate::config::ServeConfig,
}

/// Why serving failed or could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// HTTP was asked without a token.
    #[error("--http needs a bearer token: pass --token TOKEN or set TOOLSHED_SERVE_TOKEN")]
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

/// The MCP server handler: one task shared by every call of every client.
#[derive(Clone)]
struct ToolshedServer {
    task: TaskHandle,
    next_id: Arc<AtomicU64>,
    /// Every client that finished initializing, to tell of tool list changes.
    clients: Arc<std::sync::Mutex<Vec<Peer<RoleServer>>>>,
}

impl ServerHandler for ToolshedServer {
    fn get_info(&self) -> ServerConfig {
        let mut info =
            InitializeResult::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build());
        info.server_info = Implementation::new("toolshed", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        let mut clients = self.clients.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        clients.push(context.peer);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // The MCP servers still starting get a bounded wait, so a first listing has their tools.
        self.task.mcp_listable().await;
        Ok(ListToolsResult::with_all_items(tools::listed(&self.task)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(refusal) = tools::refusal(&self.task, &request.name) {
            return Err(refusal);
        }
        let id = format!("mcp-{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let input = Value::Object(request.arguments.unwrap_or_default());
        let tool_use = ToolUse::new(id, request.name.to_string(), input);
        let result = approve::CLIENT.scope(context.peer.clone(), self.task.execute(tool_use)).await;
        Ok(CallToolResponse::Complete(tools::call_result(&result)?))
    }
}

/// Serves the runtime's tools until the client goes (stdio) or the process is stopped (HTTP).
pub async fn run(runtime: Arc<Runtime>, task: TaskHandle, options: ServeOptions) -> Result<(), ServeError> {
    let clients = Arc::new(std::sync::Mutex::new(Vec::new()));
    let server = ToolshedServer { task, next_id: Arc::new(AtomicU64::new(1)), clients: Arc::clone(&clients) };
    // The tool list follows hot reloads: every plugin event becomes `notifications/tools/list_changed` for
    // every client.
    if let Err(e) = runtime.watch() {
        tracing::warn!("not watching the plugin directories: {e}");
    }
    // So do the MCP servers' tools (listed as `{server}__mcp__{tool}`): each change of the hub's generation
    // (a server connected, disconnected, or followed its `list_changed`) is a tool list change too.
    let mut mcp = runtime.mcp_changes();
    let mcp_clients = Arc::clone(&clients);
    tokio::spawn(async move {
        while mcp.changed().await.is_ok() {
            let peers: Vec<Peer<RoleServer>> =
                mcp_clients.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
            for peer in &peers {
                notify_tools_changed(peer).await;
            }
        }
    });
    let mut events = runtime.events();
    tokio::spawn(async move {
        while events.recv().await.is_some() {
            let peers: Vec<Peer<RoleServer>> =
                clients.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
            for peer in &peers {
                notify_tools_changed(peer).await;
            }
        }
    });
    match &options.http {
        None => {
            let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| ServeError::Io(e.into()))?;
            running.waiting().await.map_err(|e| ServeError::Io(e.into()))?;
            Ok(())
        }
        Some(address) => http::serve_http(server, address, &options).await,
    }
}

/// Tells a client its tool list changed (plugins loaded, reloaded or unloaded).
async fn notify_tools_changed(peer: &Peer<RoleServer>) {
    if let Err(e) = peer.notify_tool_list_changed().await {
        tracing::debug!("cannot notify a client of the tool list change: {e}");
    }
}
