//! `toolshed serve`: the loaded tools as an MCP server, over stdio or streamable HTTP.
//!
//! Every `tools/call` runs through the same pipeline as `toolshed call` in one task. Approval asks the
//! client through elicitation when it declared the capability, else follows `--yes` and the allow-list
//! (`[approval] tools`). Over HTTP a bearer token is required on every request, the listener binds to
//! loopback unless told otherwise, and browser `Origin`s other than loopback ones are refused (rmcp checks
//! `Host` and `Origin`; this module checks the token).
//!
//! A flood must not end or starve the server (`[serve]`): a failed accept (`EMFILE` when descriptors run out)
//! is logged and retried after a growing backoff; at most `max_connections` are served at once, and one more
//! is answered 503 and closed; a connection that has sent no request with the token within `auth_timeout_ms`
//! is closed; and a body over `max_body_bytes` is answered 413 (by its `Content-Length` before anything
//! else, or once reading it passes the limit).

use crate::pipeline::policy::{Answer, ApprovalPrompt, Approver, Reply};
use crate::types::BoxFuture;
use crate::{Provider, Runtime, TaskHandle, ToolSchemas, ToolUse};
use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt as _, Full};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ElicitRequestParams, ElicitationAction, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, Peer, ServerHandler, ServiceExt as _};
use serde_json::{json, Value};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use toolshed_plugin_api::Block;

tokio::task_local! {
    /// The client of the `tools/call` being run, for the approver to ask.
    static CLIENT: Peer<RoleServer>;
}

/// Asks the MCP client that made the call, through elicitation, when it declared the capability; denies
/// otherwise (then `--yes` and the allow-list decide before anyone is asked).
#[derive(Debug, Clone, Copy, Default)]
pub struct ElicitingApprover;

impl Approver for ElicitingApprover {
    fn ask(&self, prompt: ApprovalPrompt) -> BoxFuture<Reply> {
        let client = CLIENT.try_with(Peer::clone).ok();
        Box::pin(async move {
            let deny = Reply { answer: Answer::Deny, feedback: None };
            let Some(client) = client else {
                return deny;
            };
            let supports = client.peer_info().is_some_and(|info| info.capabilities.elicitation.is_some());
            if !supports {
                return deny;
            }
            let params: ElicitRequestParams = match serde_json::from_value(json!({
                "message": format!(
                    "{}\n\nAllow {}?",
                    crate::shown::escape_line(&prompt.message),
                    crate::shown::escape_line(&prompt.tool)
                ),
                "requestedSchema": {"type": "object", "properties": {}}
            })) {
                Ok(params) => params,
                Err(_) => return deny,
            };
            match client.create_elicitation(params).await {
                Ok(result) if result.action == ElicitationAction::Accept => {
                    Reply { answer: Answer::Approve, feedback: None }
                }
                Ok(_) => deny,
                Err(e) => {
                    tracing::info!("elicitation failed, denying {}: {e}", prompt.tool);
                    deny
                }
            }
        })
    }
}

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
        let ToolSchemas::Json(Value::Array(schemas)) = self.task.schema(Provider::Anthropic) else {
            return Ok(ListToolsResult::default());
        };
        let tools = schemas
            .into_iter()
            .filter_map(|schema| {
                let tool = json!({
                    "name": schema.get("name")?,
                    "description": schema.get("description").cloned().unwrap_or(Value::Null),
                    "inputSchema": schema.get("input_schema")?,
                });
                serde_json::from_value::<Tool>(tool).ok()
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let id = format!("mcp-{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let input = Value::Object(request.arguments.unwrap_or_default());
        let tool_use = ToolUse::new(id, request.name.to_string(), input);
        let result = CLIENT.scope(context.peer.clone(), self.task.execute(tool_use)).await;
        let mut content = Vec::new();
        if let Some(feedback) = &result.feedback {
            content.push(json!({"type": "text", "text": crate::messages::feedback(feedback)}));
        }
        for block in &result.blocks {
            content.push(match block {
                Block::Text { text } => json!({"type": "text", "text": text}),
                Block::Image { media_type, data } => json!({"type": "image", "mimeType": media_type, "data": data}),
            });
        }
        let value = json!({"content": content, "isError": result.is_error()});
        let result: CallToolResult =
            serde_json::from_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(CallToolResponse::Complete(result))
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
        Some(address) => serve_http(server, address, &options).await,
    }
}

/// Tells a client its tool list changed (plugins loaded, reloaded or unloaded).
async fn notify_tools_changed(peer: &Peer<RoleServer>) {
    if let Err(e) = peer.notify_tool_list_changed().await {
        tracing::debug!("cannot notify a client of the tool list change: {e}");
    }
}

fn parse_address(address: &str, public: bool) -> Result<SocketAddr, ServeError> {
    let bad = |why: &str| ServeError::Address(address.to_owned(), why.to_owned());
    let addr: SocketAddr = match address.parse::<u16>() {
        Ok(port) => SocketAddr::from(([127, 0, 0, 1], port)),
        Err(_) => address.parse().map_err(|_| bad("expected PORT or HOST:PORT with an IP address"))?,
    };
    if !addr.ip().is_loopback() && !public {
        return Err(bad("not a loopback address; pass --public to serve beyond this machine"));
    }
    Ok(addr)
}

async fn serve_http(server: ToolshedServer, address: &str, options: &ServeOptions) -> Result<(), ServeError> {
    use rmcp::transport::streamable_http_server::{
        session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
    };
    let token = options.token.clone().filter(|t| !t.is_empty()).ok_or(ServeError::NoToken)?;
    let addr = parse_address(address, options.public)?;
    let mut config = StreamableHttpServerConfig::default().with_allowed_origins([
        "http://localhost:*",
        "http://127.0.0.1:*",
        "http://[::1]:*",
    ]);
    if options.public {
        config = config.disable_allowed_hosts();
    }
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::new(LocalSessionManager::default()), config);
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| ServeError::Bind(address.to_owned(), e))?;
    let local = listener.local_addr().map_err(|e| ServeError::Io(e.into()))?;
    // Tests and wrappers read the bound address (port 0 picks one) from this line.
    eprintln!("toolshed: serving MCP on http://{local}/mcp");
    let token: Arc<str> = Arc::from(token.as_str());
    let limits = Arc::new(options.limits.clone());
    let connections = Arc::new(tokio::sync::Semaphore::new(limits.max_connections as usize));
    let first_backoff = Duration::from_millis(limits.accept_backoff_ms.max(1));
    let mut backoff = first_backoff;
    let mut failing = false;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => {
                if failing {
                    tracing::warn!("accepting connections again");
                }
                (failing, backoff) = (false, first_backoff);
                stream
            }
            Err(e) => {
                // Out of descriptors, out of memory, a connection reset before it was accepted: the next
                // accept may well succeed, so the server waits and tries again instead of ending.
                if !failing {
                    tracing::warn!(
                        "cannot accept a connection ({e}); retrying in {} ms and backing off",
                        backoff.as_millis()
                    );
                }
                failing = true;
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(first_backoff.max(Duration::from_secs(1)));
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&connections).try_acquire_owned() else {
            // Answered at once and closed, without a task: a flood costs one descriptor per connection only
            // for as long as this takes. The response fits any socket buffer, so the write cannot block.
            let _ = stream.try_write(TOO_MANY);
            continue;
        };
        let (service, token, limits) = (service.clone(), Arc::clone(&token), Arc::clone(&limits));
        tokio::spawn(async move {
            let _permit = permit;
            let authenticated = Arc::new(AtomicBool::new(false));
            let seen = Arc::clone(&authenticated);
            let auth_timeout = Duration::from_millis(limits.auth_timeout_ms);
            let handler = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let (service, token, limits, seen) =
                    (service.clone(), Arc::clone(&token), Arc::clone(&limits), Arc::clone(&seen));
                async move { Ok::<_, Infallible>(answer(request, &service, &token, &limits, &seen).await) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let connection = hyper::server::conn::http1::Builder::new().serve_connection(io, handler);
            tokio::pin!(connection);
            let ended = tokio::select! {
                ended = &mut connection => Some(ended),
                () = tokio::time::sleep(auth_timeout) => None,
            };
            let ended = match ended {
                Some(ended) => ended,
                // Never authenticated: dropping the connection closes it, a request in flight included.
                None if !authenticated.load(Ordering::Relaxed) => {
                    tracing::debug!("closing an MCP HTTP connection that sent no token within {auth_timeout:?}");
                    return;
                }
                None => connection.await,
            };
            if let Err(e) = ended {
                tracing::debug!("MCP HTTP connection ended: {e}");
            }
        });
    }
}

/// The answer to a connection over the cap.
const TOO_MANY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 67\r\nRetry-After: 1\r\nConnection: close\r\n\r\ntoo many connections: the server's [serve] max_connections are open";

/// One request: the endpoint, the body's declared size, the token, then the body read up to the limit
/// before rmcp sees it.
async fn answer(
    request: hyper::Request<hyper::body::Incoming>,
    service: &rmcp::transport::streamable_http_server::StreamableHttpService<
        ToolshedServer,
        rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
    >,
    token: &str,
    limits: &crate::config::ServeConfig,
    authenticated: &AtomicBool,
) -> hyper::Response<BoxBody<Bytes, Infallible>> {
    if request.uri().path() != "/mcp" {
        return plain(404, "not found: the MCP endpoint is /mcp".to_owned());
    }
    let too_large =
        || plain(413, format!("the request body is larger than the server's limit of {} bytes", limits.max_body_bytes));
    let declared = request
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limits.max_body_bytes) {
        return too_large();
    }
    if !authorized(request.headers(), token) {
        return plain(401, "a valid bearer token is required".to_owned());
    }
    authenticated.store(true, Ordering::Relaxed);
    let (parts, body) = request.into_parts();
    let limit = usize::try_from(limits.max_body_bytes).unwrap_or(usize::MAX);
    let body = match http_body_util::Limited::new(body, limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => return too_large(),
        Err(e) => return plain(400, format!("cannot read the request body: {e}")),
    };
    service.handle(hyper::Request::from_parts(parts, Full::new(body))).await
}

/// Whether the request carries `Authorization: Bearer {token}`, compared in constant time.
fn authorized(headers: &hyper::HeaderMap, token: &str) -> bool {
    let Some(given) =
        headers.get(hyper::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let (a, b) = (given.as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn plain(status: u16, text: String) -> hyper::Response<BoxBody<Bytes, Infallible>> {
    let mut response = hyper::Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::BAD_REQUEST);
    if status == 401 {
        response
            .headers_mut()
            .insert(hyper::header::WWW_AUTHENTICATE, hyper::header::HeaderValue::from_static("Bearer"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_default_to_loopback() {
        assert_eq!(parse_address("8080", false).unwrap(), SocketAddr::from(([127, 0, 0, 1], 8080)));
        assert!(parse_address("0.0.0.0:80", false).unwrap_err().to_string().contains("--public"));
        assert!(parse_address("0.0.0.0:80", true).is_ok());
        assert!(parse_address("localhost:80", false).is_err());
    }

    #[test]
    fn the_token_must_match_exactly() {
        let mut headers = hyper::HeaderMap::new();
        assert!(!authorized(&headers, "s3cret"));
        headers.insert(hyper::header::AUTHORIZATION, "Bearer s3cret".parse().unwrap());
        assert!(authorized(&headers, "s3cret"));
        assert!(!authorized(&headers, "s3cret2"));
        headers.insert(hyper::header::AUTHORIZATION, "Basic s3cret".parse().unwrap());
        assert!(!authorized(&headers, "s3cret"));
    }
}
