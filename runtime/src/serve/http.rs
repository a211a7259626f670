//! Streamable HTTP for `toolshed serve --http`: the bearer token, loopback-only binding, and the limits that
//! keep a flood from ending or starving the server (`[serve]`).
//!
//! A failed accept (`EMFILE` when descriptors run out) is logged and retried after a growing backoff; at most
//! `max_connections` are served at once, and one more is answered 503 and closed; at most `max_sessions` are
//! open, and a request opening one more is answered 503; a connection that has sent
//! no request with the token within `auth_timeout_ms` is closed; and a body over `max_body_bytes` is answered
//! 413 (by its `Content-Length` before anything else, or once reading it passes the limit).

use super::{ServeError, ServeOptions, Shared, ToolshedServer};
use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt as _, Full};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

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

pub(super) async fn serve_http(shared: Arc<Shared>, address: &str, options: &ServeOptions) -> Result<(), ServeError> {
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
    // A session that sent nothing for `session_idle_ms` ends: rmcp drops its handler, which cancels its task.
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(Duration::from_millis(options.limits.session_idle_ms.max(1)));
    // rmcp calls this for every new session (and for stateless requests): each gets its own task.
    let factory = Arc::clone(&shared);
    let service = StreamableHttpService::new(move || Ok(ToolshedServer::open(&factory)), Arc::new(sessions), config);
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
        let (service, token, limits, shared) =
            (service.clone(), Arc::clone(&token), Arc::clone(&limits), Arc::clone(&shared));
        tokio::spawn(async move {
            let _permit = permit;
            let authenticated = Arc::new(AtomicBool::new(false));
            let seen = Arc::clone(&authenticated);
            let auth_timeout = Duration::from_millis(limits.auth_timeout_ms);
            let handler = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let (service, token, limits, seen, shared) =
                    (service.clone(), Arc::clone(&token), Arc::clone(&limits), Arc::clone(&seen), Arc::clone(&shared));
                async move { Ok::<_, Infallible>(answer(request, &service, &token, &limits, &seen, &shared).await) }
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
    shared: &Arc<Shared>,
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
    let session = parts.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    // A request without a session id opens one (an `initialize`): refused while the most are open.
    let open = shared.live_sessions.load(Ordering::SeqCst);
    if session.is_none() && parts.method == hyper::Method::POST && open >= limits.max_sessions as usize {
        let mut response = plain(
            503,
            format!(
                "too many MCP sessions: the server's [serve] max_sessions ({}) are open; end one with DELETE \
                 or wait until one has been idle for [serve] session_idle_ms",
                limits.max_sessions
            ),
        );
        response.headers_mut().insert(hyper::header::RETRY_AFTER, hyper::header::HeaderValue::from_static("1"));
        return response;
    }
    let deleting = parts.method == hyper::Method::DELETE;
    if deleting && let Some(session) = &session {
        end_session(shared, session);
    }
    // A `tools/call` whose answer is streamed back on this request: if the client drops the connection
    // before the answer, the call is cancelled.
    let call = session.and_then(|session| tool_call_id(&body).map(|id| (session, id)));
    let mut response = service.handle(hyper::Request::from_parts(parts, Full::new(body))).await;
    // rmcp answers a session's DELETE 202 Accepted; the session is gone at once, which clients (the Python
    // SDK among them) expect to read as 200 or 204.
    if deleting && response.status() == hyper::StatusCode::ACCEPTED {
        *response.status_mut() = hyper::StatusCode::NO_CONTENT;
    }
    match call {
        Some((session, id)) if response.status().is_success() => {
            let (parts, body) = response.into_parts();
            let guarded = CancelUnlessEnded { body, call: Some((Arc::clone(shared), session, id)) };
            hyper::Response::from_parts(parts, guarded.boxed())
        }
        _ => response,
    }
}

/// Ends an HTTP session's work at once on its `DELETE` (rmcp then closes it and drops its handler).
fn end_session(shared: &Shared, id: &str) {
    let session = shared.http_sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(id).cloned();
    if let Some(session) = session.and_then(|weak| weak.upgrade()) {
        session.end();
    }
}

/// The JSON-RPC id of a `tools/call` request body, as [`super::session::request_id`] writes it.
fn tool_call_id(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Request<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
        id: Option<serde_json::Value>,
    }
    let request: Request<'_> = serde_json::from_slice(body).ok()?;
    (request.method.as_deref() == Some("tools/call")).then(|| request.id.map(|id| id.to_string())).flatten()
}

/// A response body that cancels its call when dropped before its end: the client went away.
struct CancelUnlessEnded {
    body: BoxBody<Bytes, Infallible>,
    call: Option<(Arc<Shared>, String, String)>,
}

impl hyper::body::Body for CancelUnlessEnded {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        let polled = std::pin::Pin::new(&mut self.body).poll_frame(cx);
        // Ended: hyper may stop polling once the body says so, before it has seen `None`.
        if matches!(polled, std::task::Poll::Ready(None)) || self.body.is_end_stream() {
            self.call = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for CancelUnlessEnded {
    fn drop(&mut self) {
        if let Some((shared, session, id)) = self.call.take() {
            shared.http_calls.cancel(&session, &id);
        }
    }
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
