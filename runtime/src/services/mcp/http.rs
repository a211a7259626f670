//! The hub's streamable-HTTP client: rmcp's reqwest client under a layer that reads every response before
//! rmcp decodes it.
//!
//! rmcp's HTTP transport drops an SSE event it cannot decode — data that is not JSON, JSON nested past
//! serde_json's depth limit, JSON that is not a JSON-RPC message — and keeps reading, so when the server
//! keeps the stream open the call waits its whole timeout. Here each event's data is read as a stdio line is
//! (transport.rs, the same words), and a bad one is recorded in the connection's [`Fault`] and ends its
//! stream; the [`Checked`](super::transport::Checked) layer above rmcp wakes on the fault and ends the
//! connection, so every call in flight fails at once. An event that is not UTF-8 or over the cap, and a JSON
//! body rmcp cannot decode, already fail at once in rmcp's words ("Connection closed", a parse error naming
//! rmcp's types); their reason is recorded in the stdio words, so the server is at fault there too.
//!
//! Ids are not checked here: rmcp's session recovery posts the saved `initialize` again (same id) and keeps
//! its answer to itself, so only the messages handed up to the client are checked, by `Checked`.

use super::transport::{decode_text, is_too_deep, not_utf8, too_deep, too_long, Decoded, Fault};
use futures::stream::{BoxStream, StreamExt as _};
use http::{HeaderName, HeaderValue};
use reqwest013 as reqwest;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use std::collections::HashMap;
use std::sync::Arc;

type SseStream = BoxStream<'static, Result<Sse, SseError>>;
type HttpError = StreamableHttpError<reqwest::Error>;

/// How rmcp's reqwest client words a JSON body it could not decode, before serde_json's reason.
const UNREADABLE_BODY: &str = "could not parse JSON response as ServerJsonRpcMessage: ";

/// How rmcp's bounded SSE reader words an event over `max_sse_event_size` (its error type is private).
const EVENT_TOO_LARGE: &str = "SSE event exceeded the maximum size";

/// rmcp's reqwest client, each SSE event and failed body checked; clones share the connection's fault.
#[derive(Clone)]
pub(super) struct CheckedHttp {
    inner: reqwest::Client,
    fault: Fault,
    max_message_bytes: usize,
}

impl CheckedHttp {
    /// A client for one connection, recording what it finds in `fault`.
    pub fn new(fault: Fault, max_message_bytes: usize) -> Result<Self, String> {
        Ok(Self {
            inner: client().map_err(|e| format!("cannot build the HTTP client: {e}"))?,
            fault,
            max_message_bytes,
        })
    }

    /// `stream` (its events capped at `max` bytes by rmcp), each event checked; it ends after the first bad
    /// one, whose reason is in the fault.
    fn checked(&self, stream: SseStream, max: usize) -> SseStream {
        let fault = self.fault.clone();
        stream
            .scan(false, move |ended, item| {
                if *ended {
                    return std::future::ready(None);
                }
                std::future::ready(Some(match check_event(item, max) {
                    Ok(item) => item,
                    Err(reason) => {
                        *ended = true;
                        fault.set(reason.clone());
                        Err(SseError::Body(reason.into()))
                    }
                }))
            })
            .boxed()
    }

    /// Records the fault a failed POST shows, when it is the server's: a body over the cap or one rmcp could
    /// not decode.
    fn note(&self, error: &HttpError) {
        let reason = match error {
            HttpError::ResponseBodyTooLarge { max_size } => too_long(*max_size),
            HttpError::UnexpectedServerResponse(text) => match text.strip_prefix(UNREADABLE_BODY) {
                Some(why) if is_too_deep(&why) => too_deep(),
                Some(why) if why.starts_with("invalid unicode code point") => not_utf8(cut(why)),
                Some(why) => format!("sent a response that is not a valid JSON-RPC message ({})", cut(why)),
                None => return,
            },
            _ => return,
        };
        self.fault.set(reason);
    }

    /// Refuses to open another stream on a connection at fault, so rmcp does not resume one it was told to
    /// end.
    fn closed(&self) -> Result<(), HttpError> {
        match self.fault.get() {
            Some(reason) => Err(HttpError::UnexpectedServerResponse(format!("the server {reason}").into())),
            None => Ok(()),
        }
    }
}

/// At most 300 characters of rmcp's or serde_json's words, which quote the body.
fn cut(text: &str) -> &str {
    text.char_indices().nth(300).map_or(text, |(at, _)| &text[..at])
}

/// One SSE item passed on as it came, or the fault it is.
fn check_event(item: Result<Sse, SseError>, max: usize) -> Result<Result<Sse, SseError>, String> {
    match item {
        Ok(sse) => {
            // Other events (`endpoint`, pings) are rmcp's to handle; only these carry JSON-RPC.
            let message = matches!(sse.event.as_deref(), None | Some("") | Some("message"));
            match sse.data.as_deref().filter(|_| message).map(decode_text) {
                None | Some(Decoded::Message(_) | Decoded::Skip) => Ok(Ok(sse)),
                Some(Decoded::Stray(reason) | Decoded::Fault(reason)) => Err(reason),
            }
        }
        Err(SseError::Utf8Parse(e)) => Err(not_utf8(&format!("at byte {} of an SSE line", e.valid_up_to()))),
        Err(SseError::Body(e)) if e.to_string().starts_with(EVENT_TOO_LARGE) => Err(too_long(max)),
        // The connection failed: rmcp resumes the stream where the server allows it.
        Err(e @ SseError::Body(_)) => Ok(Err(e)),
        Err(
            e @ (SseError::InvalidLine
            | SseError::DuplicatedEventLine
            | SseError::DuplicatedIdLine
            | SseError::DuplicatedRetry
            | SseError::IntParse(_)),
        ) => Err(format!("sent an event stream that is not valid SSE ({e})")),
    }
}

/// rmcp's own client for this transport (its constructor is private): no idle connections kept (rmcp saw
/// stalls reusing one whose body was not read to the end), and only same-origin 307 and 308 redirects
/// followed, which keep the POST's body and never replay the session id and custom headers to another host.
fn client() -> reqwest::Result<reqwest::Client> {
    const MAX_REDIRECTS: usize = 10;
    let redirects = reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder().pool_max_idle_per_host(0).redirect(redirects).build()
}

/// The `*_with_max_sse_event_size` methods keep their defaults, which call `post_message` and `get_stream`
/// here with this client's own cap: the hub gives rmcp the same `max_message_bytes` as its event cap. rmcp's
/// worker sends every POST through `post_message_with_response_limits`.
impl StreamableHttpClient for CheckedHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = self.max_message_bytes;
        limits.max_json_response_size = self.max_message_bytes;
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let max = limits.max_sse_event_size;
        let response = self
            .inner
            .post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await;
        match response {
            Ok(StreamableHttpPostResponse::Sse(stream, session_id)) => {
                Ok(StreamableHttpPostResponse::Sse(self.checked(stream, max), session_id))
            }
            // Decoded by rmcp already, so a valid message; `Checked` follows its id.
            Ok(other) => Ok(other),
            Err(error) => {
                self.note(&error);
                Err(error)
            }
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        // A server at fault is not asked to end its session: it could hold the connection's close (rmcp waits
        // up to five seconds for the answer) while the calls in flight wait for it.
        if self.fault.get().is_some() {
            return Ok(());
        }
        self.inner.delete_session(uri, session_id, auth_header, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<SseStream, HttpError> {
        self.closed()?;
        let max = self.max_message_bytes;
        let stream = self
            .inner
            .get_stream_with_max_sse_event_size(uri, session_id, last_event_id, auth_header, custom_headers, max)
            .await?;
        Ok(self.checked(stream, max))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "http_tests.rs"]
mod tests;
