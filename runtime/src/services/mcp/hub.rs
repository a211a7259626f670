//! The MCP hub: one client connection per configured server, on a tokio runtime of its own, started with a
//! timeout, restarted when the settings file changes, and reached synchronously by the host services that
//! plugins call from their worker threads. A server's `list_changed` notifications are followed: its tools
//! and resources are listed again, and every change bumps the generation [`McpHub::changes`] watches.

use super::errors::service_error;
use super::follow::{follow, Follower};
use super::http::CheckedHttp;
use super::settings::{self, ServerSettings, Servers, Transport};
use super::transport::{Checked, Fault, Lines};
use crate::child_process::clean::Inherit;
use crate::config::McpConfig;
use crate::services::process::Tree;
use crate::spec::{provider_tool_name, McpServerInfo, McpToolInfo, MCP_TOOL_SEPARATOR};
use crate::task::Cancels;
use rmcp::model::{CallToolRequestParams, PaginatedRequestParams, ReadResourceRequestParams};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::ServiceExt as _;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::watch;
use toolshed_plugin_api::services::{McpServerStatus, McpServersResponse};

/// What one server may send: pages and bytes of each listing, and the size of one message.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    max_list_pages: u64,
    max_list_bytes: u64,
    max_message_bytes: u64,
}

impl Limits {
    fn of(config: &McpConfig) -> Self {
        Self {
            max_list_pages: u64::from(config.max_list_pages),
            max_list_bytes: config.max_list_bytes,
            max_message_bytes: config.max_message_bytes,
        }
    }
}

/// What a stdio server gets of the host's environment, besides its configured `env`: the MCP SDK's
/// `getDefaultEnvironment()` on Unix (`DEFAULT_INHERITED_ENV_VARS`), which Cline v4.0.10's `McpHub` passes.
const SERVER_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// A live connection and what the server offers: listed when it connected, and again on each of its
/// `list_changed` notifications.
pub(super) struct Connection {
    client: RunningService<RoleClient, Follower>,
    lists: Mutex<Lists>,
    /// Why the hub's transport closed the connection, when it did.
    fault: Fault,
}

/// A server's tools and resources, as JSON.
#[derive(Default)]
pub(super) struct Lists {
    pub tools: Vec<Value>,
    pub resources: Vec<Value>,
}

impl Connection {
    fn lists(&self) -> MutexGuard<'_, Lists> {
        self.lists.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn tools(&self) -> Vec<Value> {
        self.lists().tools.clone()
    }

    /// Replaces the tool or resource list (a re-listing after `list_changed`); whether it changed.
    pub(super) fn set(&self, update: impl FnOnce(&mut Lists) -> bool) -> bool {
        update(&mut self.lists())
    }

    /// A failed request in words: the transport's reason when it closed the connection (a message rmcp
    /// would have dropped, a broken pipe), else the SDK's error.
    fn error(&self, server: &str, error: &rmcp::ServiceError) -> String {
        match self.fault.get() {
            Some(reason) => format!("MCP server \"{server}\" {reason}, so the connection to it was closed."),
            None => service_error(error),
        }
    }

    /// Whether the connection is gone (the server exited, or the transport closed it).
    fn ended(&self, error: &rmcp::ServiceError) -> bool {
        self.fault.get().is_some()
            || self.client.is_transport_closed()
            || matches!(error, rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_))
    }
}

/// What a connection is wanted for: Cline's texts for a server it cannot use differ by request.
#[derive(Clone, Copy)]
enum Request {
    CallTool,
    ReadResource,
}

enum Status {
    Disabled,
    Connecting,
    Connected(Arc<Connection>),
    Failed(String),
    /// Connected once, then the connection ended: started again by the next call to it.
    Crashed(String),
}

struct Server {
    settings: Result<ServerSettings, String>,
    status: Status,
    /// Bumped on every restart, so a slow start of an old configuration never lands.
    generation: u64,
}

#[derive(Default)]
struct State {
    settings_error: Option<String>,
    /// The settings text last applied, to notice changes.
    applied: Option<String>,
    servers: BTreeMap<String, Server>,
    next_generation: u64,
}

pub(super) struct Inner {
    settings_path: Option<PathBuf>,
    startup_timeout: Duration,
    call_timeout: Duration,
    limits: Limits,
    state: Mutex<State>,
    /// Bumped on every status change and every landed re-listing; waiters and [`McpHub::changes`] watch it.
    changed: watch::Sender<u64>,
}

/// The MCP hub. Dropping it stops every server (their processes are killed).
pub(crate) struct McpHub {
    runtime: Option<tokio::runtime::Runtime>,
    inner: Arc<Inner>,
}

impl McpHub {
    /// Starts the servers of the configured settings file and its watcher.
    pub fn start(config: &McpConfig) -> std::io::Result<Self> {
        // reqwest 0.13 in rmcp is built without a crypto provider; the host's rustls has ring. Only the
        // first install in the process takes effect, which is what every hub wants.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("toolshed-mcp")
            .enable_all()
            .build()?;
        let (changed, _) = watch::channel(0);
        let inner = Arc::new(Inner {
            settings_path: config.settings.clone(),
            startup_timeout: Duration::from_millis(config.startup_timeout_ms),
            call_timeout: Duration::from_millis(config.call_timeout_ms),
            limits: Limits::of(config),
            state: Mutex::new(State::default()),
            changed,
        });
        if let Some(path) = config.settings.clone() {
            let _guard = runtime.enter();
            inner.reload();
            let (inner, poll) = (Arc::clone(&inner), Duration::from_millis(config.poll_ms.max(10)));
            runtime.spawn(async move {
                loop {
                    tokio::time::sleep(poll).await;
                    if Arc::strong_count(&inner) == 1 {
                        return;
                    }
                    tracing::trace!(file = %path.display(), "checking the MCP settings");
                    inner.reload();
                }
            });
        }
        Ok(Self { runtime: Some(runtime), inner })
    }

    /// Runs a hub future to completion on the calling (non-async) thread, giving up when the call is
    /// cancelled (waking on either). `Err(None)` is a cancellation.
    fn block<T: Send + 'static>(
        &self,
        future: impl std::future::Future<Output = Result<T, String>> + Send + 'static,
        cancels: &Cancels<'_>,
    ) -> Result<T, Option<String>> {
        let Some(runtime) = &self.runtime else {
            return Err(Some("the MCP hub has stopped".to_owned()));
        };
        let (tx, rx) = crossbeam_channel::bounded(1);
        let task = runtime.spawn(async move {
            let _ = tx.send(future.await);
        });
        match cancels.recv(&rx, None) {
            Ok(Some(result)) => result.map_err(Some),
            Ok(None) => {
                task.abort();
                Err(None)
            }
            Err(_) => Err(Some("the MCP hub stopped during the call".to_owned())),
        }
    }

    /// `tools/call` on a server: its raw result JSON.
    pub fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        cancels: &Cancels<'_>,
    ) -> Result<Value, Option<String>> {
        let (inner, server, tool) = (Arc::clone(&self.inner), server.to_owned(), tool.to_owned());
        self.block(
            async move {
                let (connection, timeout, generation) = inner.connection(&server, Request::CallTool).await?;
                let tools = connection.tools();
                if !tools.iter().any(|t| t.get("name").and_then(Value::as_str) == Some(tool.as_str())) {
                    let names: Vec<&str> = tools.iter().filter_map(|t| t.get("name").and_then(Value::as_str)).collect();
                    return Err(format!(
                        "Tool \"{tool}\" was not found on MCP server \"{server}\". Its tools: {}.",
                        if names.is_empty() { "(none)".to_owned() } else { names.join(", ") }
                    ));
                }
                let mut params = CallToolRequestParams::new(tool);
                params.arguments = Some(arguments.unwrap_or_default());
                match tokio::time::timeout(timeout, connection.client.call_tool(params)).await {
                    Err(_) => Err("MCP error -32001: Request timed out".to_owned()),
                    Ok(Err(error)) => Err(inner.failed(&server, generation, &connection, &error)),
                    Ok(Ok(result)) => {
                        serde_json::to_value(result).map_err(|e| toolshed_plugin_api::sdk::json_error(&e))
                    }
                }
            },
            cancels,
        )
    }

    /// `resources/read` on a server: its raw result JSON.
    pub fn read_resource(&self, server: &str, uri: &str, cancels: &Cancels<'_>) -> Result<Value, Option<String>> {
        let (inner, server, uri) = (Arc::clone(&self.inner), server.to_owned(), uri.to_owned());
        self.block(
            async move {
                let (connection, timeout, generation) = inner.connection(&server, Request::ReadResource).await?;
                let params = ReadResourceRequestParams::new(uri);
                match tokio::time::timeout(timeout, connection.client.read_resource(params)).await {
                    Err(_) => Err("MCP error -32001: Request timed out".to_owned()),
                    Ok(Err(error)) => Err(inner.failed(&server, generation, &connection, &error)),
                    Ok(Ok(result)) => {
                        serde_json::to_value(result).map_err(|e| toolshed_plugin_api::sdk::json_error(&e))
                    }
                }
            },
            cancels,
        )
    }

    /// Waits (up to the start-up timeout) until no server is still starting.
    pub async fn settled(&self) {
        self.inner.settled(None).await;
    }

    /// The servers' state, tools and resources, after waiting for servers still starting.
    pub fn servers(&self, cancels: &Cancels<'_>) -> McpServersResponse {
        let inner = Arc::clone(&self.inner);
        let _ = self.block(
            async move {
                inner.settled(None).await;
                Ok(())
            },
            cancels,
        );
        self.inner.report()
    }

    /// A generation counter, bumped whenever a server connects, disconnects, or changes its tools or
    /// resources (settings reloads and restarts included).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    /// The servers' state now, without waiting.
    pub fn report(&self) -> McpServersResponse {
        self.inner.report()
    }

    /// The enabled, connected servers as the spec registry takes them.
    pub fn server_infos(&self) -> Vec<McpServerInfo> {
        let state = self.inner.lock();
        state
            .servers
            .iter()
            .filter_map(|(name, server)| match &server.status {
                Status::Connected(connection) => Some(McpServerInfo::new(
                    name.clone(),
                    connection
                        .lists()
                        .tools
                        .iter()
                        .filter_map(|t| serde_json::from_value::<McpToolInfo>(t.clone()).ok())
                        .collect(),
                )),
                Status::Disabled | Status::Connecting | Status::Failed(_) | Status::Crashed(_) => None,
            })
            .collect()
    }

    /// The (server, tool) a native tool name `{server}__mcp__{tool}` calls, also for shortened names;
    /// waits for servers still starting first.
    pub async fn resolve_native(&self, name: &str) -> Option<(String, String)> {
        self.inner.settled(None).await;
        let state = self.inner.lock();
        for (server_name, server) in &state.servers {
            if let Status::Connected(connection) = &server.status {
                for tool in connection.lists().tools.iter().filter_map(|t| t.get("name").and_then(Value::as_str)) {
                    if provider_tool_name(&format!("{server_name}{MCP_TOOL_SEPARATOR}{tool}")) == name {
                        return Some((server_name.clone(), tool.to_owned()));
                    }
                }
            }
        }
        // Not connected (or no such tool): still route to the server the name names, so the model gets the
        // hub's error for it.
        let (server, tool) = name.split_once(MCP_TOOL_SEPARATOR)?;
        Some((server.to_owned(), tool.to_owned()))
    }

    /// Whether a server's settings auto-approve a tool.
    pub fn auto_approves(&self, server: &str, tool: &str) -> bool {
        let state = self.inner.lock();
        state.servers.get(server).is_some_and(|s| match &s.settings {
            Ok(settings) => !settings.disabled && settings.auto_approve.iter().any(|t| t == tool),
            Err(_) => false,
        })
    }
}

impl Drop for McpHub {
    fn drop(&mut self) {
        // Child processes are spawned with kill_on_drop: dropping their tasks here kills them.
        self.inner.lock().servers.clear();
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// The listing caps, for a follower to list within.
    pub(super) fn limits(&self) -> Limits {
        self.limits
    }

    /// Lands a re-listing of `name`'s tools or resources while `generation` is still its connection. Only a
    /// list that differs from the one it replaces is a change: a server that says `list_changed` over and over
    /// with the same list must not make every client of `serve` list its tools again each time.
    pub(super) fn relisted(&self, name: &str, generation: u64, update: impl FnOnce(&mut Lists) -> bool) {
        let state = self.lock();
        let Some(server) = state.servers.get(name).filter(|s| s.generation == generation) else { return };
        let Status::Connected(connection) = &server.status else { return };
        let changed = connection.set(update);
        drop(state);
        if !changed {
            tracing::debug!(server = %name, "MCP server said its list changed; listed again, it had not");
            return;
        }
        tracing::debug!(server = %name, "MCP server's list changed; listed again");
        self.bump();
    }

    /// Reads the settings file and restarts what changed. Must run inside the hub's runtime.
    fn reload(self: &Arc<Self>) {
        let Some(path) = &self.settings_path else {
            return;
        };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => {
                let message = format!("cannot read MCP settings file {}: {e}", path.display());
                let mut state = self.lock();
                if state.settings_error.as_deref() != Some(message.as_str()) {
                    tracing::warn!("{message}");
                    state.settings_error = Some(message);
                    state.applied = None;
                    drop(state);
                    self.bump();
                }
                return;
            }
        };
        if self.lock().applied.as_deref() == Some(text.as_str()) {
            return;
        }
        let parsed = settings::parse(&text).map_err(|e| format!("invalid MCP settings file {}: {e}", path.display()));
        let mut state = self.lock();
        state.applied = Some(text);
        match parsed {
            // A broken file loses nothing: the servers started from the last good one keep running.
            Err(message) => {
                tracing::warn!("{message}");
                state.settings_error = Some(message);
            }
            Ok(servers) => {
                state.settings_error = None;
                self.apply(&mut state, servers);
            }
        }
        drop(state);
        self.bump();
    }

    fn apply(self: &Arc<Self>, state: &mut State, servers: Servers) {
        state.servers.retain(|name, _| servers.contains_key(name));
        for (name, settings) in servers {
            if state.servers.get(&name).is_some_and(|server| server.settings == settings) {
                continue;
            }
            state.next_generation += 1;
            let generation = state.next_generation;
            let status = match &settings {
                Err(message) => {
                    tracing::warn!("{message}");
                    Status::Failed(message.clone())
                }
                Ok(settings) if settings.disabled => Status::Disabled,
                Ok(settings) => self.start(&name, settings.clone(), generation),
            };
            state.servers.insert(name, Server { settings, status, generation });
        }
    }

    /// Starts a server in the background; its status lands only while `generation` is still its own.
    /// Must run inside the hub's runtime.
    fn start(self: &Arc<Self>, name: &str, settings: ServerSettings, generation: u64) -> Status {
        let (inner, name) = (Arc::clone(self), name.to_owned());
        tokio::spawn(async move {
            let (follower, changes) = Follower::new();
            let connecting = connect(&settings, inner.limits, follower);
            let status = match tokio::time::timeout(inner.startup_timeout, connecting).await {
                Ok(Ok(connection)) => Status::Connected(Arc::new(connection)),
                Ok(Err(message)) => Status::Failed(message),
                Err(_) => {
                    Status::Failed(format!("the server did not start within {} ms", inner.startup_timeout.as_millis()))
                }
            };
            if let Status::Failed(message) = &status {
                tracing::warn!(server = %name, "MCP server not connected: {message}");
            }
            // The follower starts once the connection is the server's, so a change it lists always lands (one
            // the server announced while it was being listed first is in its buffered wake-up).
            let follower = match &status {
                Status::Connected(c) => Some((c.client.peer().clone(), c.fault.clone())),
                Status::Disabled | Status::Connecting | Status::Failed(_) | Status::Crashed(_) => None,
            };
            let mut state = inner.lock();
            if let Some(server) = state.servers.get_mut(&name).filter(|s| s.generation == generation) {
                server.status = status;
            }
            drop(state);
            inner.bump();
            if let Some((peer, fault)) = follower {
                tokio::spawn(follow(Arc::downgrade(&inner), name, generation, peer, fault, changes));
            }
        });
        Status::Connecting
    }

    /// A call's error in words; when the connection ended with it, the server is marked crashed so the next
    /// call starts it again (a server that keeps failing costs one start per call, never a restart storm).
    fn failed(&self, name: &str, generation: u64, connection: &Connection, error: &rmcp::ServiceError) -> String {
        let message = connection.error(name, error);
        if connection.ended(error) {
            let mut state = self.lock();
            if let Some(server) = state.servers.get_mut(name).filter(|s| s.generation == generation)
                && matches!(server.status, Status::Connected(_))
            {
                tracing::warn!(server = %name, "MCP server connection ended: {message}");
                server.status = Status::Crashed(message.clone());
            }
            drop(state);
            self.bump();
        }
        message
    }

    /// Starts a crashed server again, under a new generation. Must run inside the hub's runtime.
    fn restart_crashed(self: &Arc<Self>, name: &str) {
        let mut state = self.lock();
        let crashed = state.servers.get(name).and_then(|server| match (&server.status, &server.settings) {
            (Status::Crashed(_), Ok(settings)) => Some(settings.clone()),
            _ => None,
        });
        let Some(settings) = crashed else { return };
        state.next_generation += 1;
        let generation = state.next_generation;
        let status = self.start(name, settings, generation);
        if let Some(server) = state.servers.get_mut(name) {
            server.generation = generation;
            server.status = status;
        }
        drop(state);
        self.bump();
    }

    /// Waits until `server` (or every server) is past starting, at most the start-up timeout.
    async fn settled(&self, server: Option<&str>) {
        let mut changes = self.changed.subscribe();
        let wait = async {
            loop {
                let starting = {
                    let state = self.lock();
                    match server {
                        Some(name) => state.servers.get(name).is_some_and(|s| matches!(s.status, Status::Connecting)),
                        None => state.servers.values().any(|s| matches!(s.status, Status::Connecting)),
                    }
                };
                if !starting || changes.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(self.startup_timeout + Duration::from_millis(100), wait).await;
    }

    /// A connected server, its call timeout and generation, or Cline's error for it (McpHub's `callTool` and
    /// `readResource` word an unknown and a disabled server differently). A server whose connection ended
    /// is started again first.
    async fn connection(
        self: &Arc<Self>,
        name: &str,
        request: Request,
    ) -> Result<(Arc<Connection>, Duration, u64), String> {
        self.settled(Some(name)).await;
        self.restart_crashed(name);
        self.settled(Some(name)).await;
        let state = self.lock();
        let not_found = || {
            match request {
            Request::CallTool => format!(
                "No connection found for server: {name}. Please make sure to use MCP servers available under 'Connected MCP Servers'."
            ),
            Request::ReadResource => format!("No connection found for server: {name}"),
        }
        };
        let server = state.servers.get(name).ok_or_else(not_found)?;
        match &server.status {
            Status::Connected(connection) => {
                let timeout = server.settings.as_ref().ok().and_then(|s| s.timeout).unwrap_or(self.call_timeout);
                Ok((Arc::clone(connection), timeout, server.generation))
            }
            Status::Disabled => Err(match request {
                Request::CallTool => format!("Server \"{name}\" is disabled and cannot be used"),
                Request::ReadResource => format!("Server \"{name}\" is disabled"),
            }),
            Status::Connecting => Err(format!("Server \"{name}\" is still starting. Please try again shortly.")),
            Status::Failed(message) | Status::Crashed(message) => {
                Err(format!("{} The server failed: {message}", not_found()))
            }
        }
    }

    fn report(&self) -> McpServersResponse {
        let state = self.lock();
        let servers = state
            .servers
            .iter()
            .map(|(name, server)| {
                let auto_approve = server.settings.as_ref().map(|s| s.auto_approve.clone()).unwrap_or_default();
                let (status, error, tools, resources) = match &server.status {
                    Status::Disabled => ("disabled", None, Vec::new(), Vec::new()),
                    Status::Connecting => ("connecting", None, Vec::new(), Vec::new()),
                    Status::Connected(c) => {
                        let lists = c.lists();
                        ("connected", None, lists.tools.clone(), lists.resources.clone())
                    }
                    Status::Failed(message) | Status::Crashed(message) => {
                        ("disconnected", Some(message.clone()), Vec::new(), Vec::new())
                    }
                };
                McpServerStatus { name: name.clone(), status: status.to_owned(), error, tools, resources, auto_approve }
            })
            .collect();
        McpServersResponse {
            settings_path: self.settings_path.as_ref().map(|p| p.to_string_lossy().into_owned()),
            settings_error: state.settings_error.clone(),
            servers,
        }
    }
}

/// Connects to one server and lists what it offers, within `limits`.
async fn connect(settings: &ServerSettings, limits: Limits, follower: Follower) -> Result<Connection, String> {
    let fault = Fault::default();
    let max_message_bytes = usize::try_from(limits.max_message_bytes).unwrap_or(usize::MAX);
    let client = match &settings.transport {
        Transport::Stdio { command, args, env, cwd } => {
            let mut cmd = std::process::Command::new(command);
            cmd.args(args)
                .envs(env)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null());
            if let Some(dir) = cwd {
                cmd.current_dir(dir);
            }
            // A tree of its own, killed whole when the connection closes (an `npx` server's node child too).
            let spawned = tokio::task::spawn_blocking(move || Tree::spawn(cmd, Inherit::Only(SERVER_ENV)))
                .await
                .map_err(|e| format!("cannot start {command}: {e}"))?;
            let mut tree = spawned.map_err(|e| format!("cannot start {command}: {e}"))?;
            let (Some(stdout), Some(stdin)) = (tree.child().stdout.take(), tree.child().stdin.take()) else {
                return Err(format!("cannot start {command}: its pipes were not opened"));
            };
            let pipes = tokio::process::ChildStdout::from_std(stdout)
                .and_then(|out| Ok((out, tokio::process::ChildStdin::from_std(stdin)?)));
            let (stdout, stdin) = pipes.map_err(|e| format!("cannot start {command}: {e}"))?;
            let child = tree;
            // Our own reader below rmcp: see transport.rs for what rmcp's would drop.
            let lines = Lines::new(stdout, stdin, Some(child), max_message_bytes, fault.clone());
            follower.serve(Checked::new(lines, fault.clone())).await.map_err(|e| initialize_error(&fault, &e))?
        }
        Transport::Http { url, headers } => {
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let mut custom = std::collections::HashMap::new();
            for (name, value) in headers {
                let name = http::HeaderName::try_from(name.as_str()).map_err(|e| format!("header {name:?}: {e}"))?;
                let value = http::HeaderValue::try_from(value.as_str()).map_err(|e| format!("header {name}: {e}"))?;
                custom.insert(name, value);
            }
            // rmcp's HTTP client caps each SSE event and each JSON body before parsing; both take the
            // message cap here. Our client below rmcp reads each event as a stdio line is read (see http.rs),
            // and the ids are checked as over stdio.
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom);
            config.max_sse_event_size = max_message_bytes;
            config.max_json_response_size = max_message_bytes;
            let client = CheckedHttp::new(fault.clone(), max_message_bytes)?;
            let transport = rmcp::transport::StreamableHttpClientTransport::with_client(client, config);
            follower.serve(Checked::new(transport, fault.clone())).await.map_err(|e| initialize_error(&fault, &e))?
        }
    };
    let tools = list_tools(client.peer(), limits, &fault).await?;
    let resources = list_resources(client.peer(), limits, &fault).await?;
    Ok(Connection { client, lists: Mutex::new(Lists { tools, resources }), fault })
}

/// A listing's failure in words: the transport's reason when it closed the connection.
fn listed(fault: &Fault, what: &str, e: &rmcp::ServiceError) -> String {
    match fault.get() {
        Some(reason) => format!("{what} failed: the server {reason}"),
        None => format!("{what} failed: {}", service_error(e)),
    }
}

/// Every tool of a server that offers tools, within `limits`.
pub(super) async fn list_tools(peer: &Peer<RoleClient>, limits: Limits, fault: &Fault) -> Result<Vec<Value>, String> {
    if peer.peer_info().is_none_or(|info| info.capabilities.tools.is_none()) {
        return Ok(Vec::new());
    }
    list_capped("tools/list", limits, |params| async {
        let page = peer.list_tools(params).await.map_err(|e| listed(fault, "tools/list", &e))?;
        Ok((page.tools, page.next_cursor))
    })
    .await
}

/// Every resource of a server that offers resources, within `limits`. A server whose resource listing
/// fails still serves its tools (no resources, and a warning); one over a cap or at fault does not.
pub(super) async fn list_resources(
    peer: &Peer<RoleClient>,
    limits: Limits,
    fault: &Fault,
) -> Result<Vec<Value>, String> {
    if peer.peer_info().is_none_or(|info| info.capabilities.resources.is_none()) {
        return Ok(Vec::new());
    }
    let listing = list_capped("resources/list", limits, |params| async {
        let page = peer.list_resources(params).await.map_err(|e| listed(fault, "resources/list", &e))?;
        Ok((page.resources, page.next_cursor))
    })
    .await;
    match listing {
        Ok(resources) => Ok(resources),
        Err(message) if !message.contains(LIMIT_MARK) && fault.get().is_none() => {
            tracing::warn!("{message}");
            Ok(Vec::new())
        }
        Err(message) => Err(message),
    }
}

/// In every over-the-cap message of a listing, to tell it from a server's own error.
const LIMIT_MARK: &str = "(the limit is [mcp] max_list_";

/// Every page of a paginated listing, as JSON, following `nextCursor` for at most `max_list_pages` pages
/// and `max_list_bytes` bytes of items: rmcp's `list_all_*` follow a server that never stops paginating
/// until memory runs out.
async fn list_capped<T, F, Fut>(what: &str, limits: Limits, mut page: F) -> Result<Vec<Value>, String>
where
    T: serde::Serialize,
    F: FnMut(Option<PaginatedRequestParams>) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<T>, Option<String>), String>>,
{
    let (mut items, mut bytes, mut cursor, mut pages) = (Vec::new(), 0u64, None, 0u64);
    loop {
        if pages >= limits.max_list_pages {
            return Err(format!(
                "{what} went on past {} pages {LIMIT_MARK}pages = {})",
                limits.max_list_pages, limits.max_list_pages
            ));
        }
        pages += 1;
        let (page_items, next) = page(Some(PaginatedRequestParams::default().with_cursor(cursor))).await?;
        for item in page_items {
            let value = serde_json::to_value(item).map_err(|e| format!("{what} failed: {e}"))?;
            bytes = bytes.saturating_add(json_len(&value));
            if bytes > limits.max_list_bytes {
                return Err(format!(
                    "{what} returned more than {} bytes {LIMIT_MARK}bytes = {})",
                    limits.max_list_bytes, limits.max_list_bytes
                ));
            }
            items.push(value);
        }
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(items),
        }
    }
}

/// The length of `value` as compact JSON, counted without building the text.
fn json_len(value: &Value) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len() as u64);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Why `initialize` failed: the transport's reason when it closed the connection.
fn initialize_error(fault: &Fault, error: &rmcp::service::ClientInitializeError) -> String {
    match fault.get() {
        Some(reason) => format!("initialize failed: the server {reason}"),
        None => format!("initialize failed: {}", super::errors::initialize_error(error)),
    }
}
