//! The transports the hub gives rmcp: a line transport over a server's pipes that reads every message
//! itself, and a checking layer over any transport that follows the ids of the requests it carries.
//!
//! rmcp's own stdio transport drops what it cannot decode — a line over its length cap, a line that is not
//! UTF-8, JSON nested past serde_json's depth limit, a response to an id nobody asked for — and keeps
//! reading, so the call that waited for that response waits its whole timeout. Here every such message is
//! a fault of the server: it is recorded in the connection's [`Fault`] (in words naming what was wrong) and
//! the transport ends, so rmcp ends the requests in flight at once and the hub reports the recorded reason
//! and treats the server as crashed.

use crate::services::process::Tree;
use rmcp::model::{JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleClient;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::watch;

/// serde_json's recursion limit, which the typed decoding runs into first.
const MAX_DEPTH: usize = 128;

/// How long a server whose input was closed may take to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// How often a closing server is looked at while it has that grace.
const EXIT_POLL: Duration = Duration::from_millis(10);

/// Why a connection was closed by the hub's side, shared by the transport that found it, the layers that
/// must stop at once when it is found, and the hub that reports it. The first reason recorded stays.
#[derive(Clone)]
pub(crate) struct Fault(Arc<watch::Sender<Option<String>>>);

impl Default for Fault {
    fn default() -> Self {
        Self(Arc::new(watch::Sender::new(None)))
    }
}

impl Fault {
    /// Records `reason` (a phrase with the server as its subject: "sent …") unless one is recorded already.
    pub fn set(&self, reason: String) {
        self.0.send_if_modified(|slot| {
            if slot.is_some() {
                return false;
            }
            tracing::warn!("closing an MCP connection: the server {reason}");
            *slot = Some(reason);
            true
        });
    }

    /// The reason recorded, if any.
    pub fn get(&self) -> Option<String> {
        self.0.borrow().clone()
    }

    /// Resolves once a reason is recorded. A fault found away from the receiving side (in an HTTP response
    /// stream rmcp reads in a task of its own) must end the connection without waiting for another message.
    pub async fn recorded(&self) {
        let mut changes = self.0.subscribe();
        // The sender lives in `self`, so the wait ends only by a reason.
        let _ = changes.wait_for(Option::is_some).await;
    }
}

/// A checking layer over a transport: it remembers the id of every request written and fails the
/// connection on a response to any other id, or on an error response naming no request while requests are
/// waiting — both of which rmcp would drop, leaving a call to wait out its timeout.
pub(crate) struct Checked<T> {
    inner: T,
    /// Ids of requests sent and not answered yet. A cancelled request's id stays: its late answer is fine.
    outstanding: HashSet<RequestId>,
    fault: Fault,
}

impl<T> Checked<T> {
    pub fn new(inner: T, fault: Fault) -> Self {
        Self { inner, outstanding: HashSet::new(), fault }
    }

    /// Whether `message` answers a request that is waiting; the fault's reason when not.
    fn check(&mut self, message: &RxJsonRpcMessage<RoleClient>) -> Result<(), String> {
        let id = match message {
            JsonRpcMessage::Response(response) => &response.id,
            JsonRpcMessage::Error(error) => match &error.id {
                Some(id) => id,
                None if self.outstanding.is_empty() => return Ok(()),
                None => {
                    return Err(format!(
                        "answered with an error that names no request ({}: {})",
                        error.error.code.0,
                        error.error.message.chars().take(200).collect::<String>()
                    ))
                }
            },
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => return Ok(()),
        };
        if self.outstanding.remove(id) {
            Ok(())
        } else {
            Err(format!("answered request id {id}, which it was never sent or had answered already"))
        }
    }
}

impl<T> Transport<RoleClient> for Checked<T>
where
    T: Transport<RoleClient>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Recorded before the write, so an answer can never arrive ahead of its id.
        if let JsonRpcMessage::Request(request) = &item {
            self.outstanding.insert(request.id.clone());
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        if self.fault.get().is_some() {
            return None;
        }
        // Both sides are cancel-safe: rmcp's worker transport reads a channel, and `Lines` keeps a partial
        // line in itself.
        let message = tokio::select! {
            message = self.inner.receive() => message?,
            () = self.fault.recorded() => return None,
        };
        match self.check(&message) {
            Ok(()) => Some(message),
            Err(reason) => {
                self.fault.set(reason);
                None
            }
        }
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Newline-delimited JSON-RPC over a server's stdout and stdin, read in linear time under a length cap,
/// each line checked for UTF-8, JSON and the message shape before rmcp sees it.
pub(crate) struct Lines<R, W> {
    reader: BufReader<R>,
    /// The line being read. It lives here rather than in `receive`, which rmcp polls inside a `select!`
    /// and may drop between two reads: the next call goes on with the same line.
    line: Vec<u8>,
    max_message_bytes: usize,
    writer: Arc<tokio::sync::Mutex<Option<W>>>,
    child: Option<Tree>,
    fault: Fault,
}

/// What one bounded line read found.
enum Read {
    Line,
    TooLong,
    Eof,
    Failed(std::io::Error),
}

/// What one message holds, for rmcp.
#[derive(Debug)]
pub(super) enum Decoded {
    Message(Box<RxJsonRpcMessage<RoleClient>>),
    /// Blank lines, and notifications or server requests of a shape rmcp does not know: nobody here waits
    /// for them.
    Skip,
    /// Text that is not JSON, or JSON that is not JSON-RPC, with the fault's words should it be one: stray
    /// output on a server's stdout is harmless, but an SSE event carries nothing else than a message.
    Stray(String),
    Fault(String),
}

impl<R, W> Lines<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport over `reader` and `writer`, owning `child` (killed on close) when there is one.
    pub fn new(reader: R, writer: W, child: Option<Tree>, max_message_bytes: usize, fault: Fault) -> Self {
        Self {
            reader: BufReader::new(reader),
            line: Vec::new(),
            max_message_bytes,
            writer: Arc::new(tokio::sync::Mutex::new(Some(writer))),
            child,
            fault,
        }
    }

    /// Reads up to the next newline into `self.line`, never past the cap. Each byte is looked at once.
    async fn read_line(&mut self) -> Read {
        loop {
            let (used, done) = {
                let available = match self.reader.fill_buf().await {
                    Ok(available) => available,
                    Err(e) => return Read::Failed(e),
                };
                if available.is_empty() {
                    return Read::Eof;
                }
                let newline = available.iter().position(|b| *b == b'\n');
                let take = newline.map_or(available.len(), |at| at + 1);
                if self.line.len().saturating_add(take) > self.max_message_bytes.saturating_add(1) {
                    return Read::TooLong;
                }
                self.line.extend_from_slice(&available[..take]);
                (take, newline.is_some())
            };
            // Synchronous with the copy above, so a dropped read never loses or repeats bytes.
            self.reader.consume(used);
            if done {
                return Read::Line;
            }
        }
    }
}

impl<R, W> Transport<RoleClient> for Lines<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        let (writer, fault) = (Arc::clone(&self.writer), self.fault.clone());
        async move {
            let line = line.map_err(std::io::Error::other)?;
            let mut writer = writer.lock().await;
            let Some(writer) = writer.as_mut() else {
                return Err(std::io::Error::new(std::io::ErrorKind::NotConnected, "the connection is closed"));
            };
            let written = async {
                writer.write_all(&line).await?;
                writer.flush().await
            }
            .await;
            // A server that closed its stdin (or died) is that server's error, never the host's: with
            // SIGPIPE ignored the write answers EPIPE, and the request fails with it.
            if let Err(e) = &written
                && e.kind() == std::io::ErrorKind::BrokenPipe
            {
                fault.set("stopped reading its input (the pipe to it is broken)".to_owned());
            }
            written
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            if self.fault.get().is_some() {
                return None;
            }
            match self.read_line().await {
                Read::Line => {}
                Read::TooLong => {
                    self.fault.set(too_long(self.max_message_bytes));
                    return None;
                }
                // A server that exits ends its connection as before: rmcp ends the calls in flight.
                Read::Eof => return None,
                Read::Failed(e) => {
                    self.fault.set(format!("could not be read from: {e}"));
                    return None;
                }
            }
            let decoded = decode(&self.line);
            self.line.clear();
            match decoded {
                Decoded::Message(message) => return Some(*message),
                // A log line on stdout is the server's mistake but harmless, as rmcp and the TypeScript SDK
                // treat it.
                Decoded::Stray(what) => tracing::debug!("ignoring MCP server output: it {what}"),
                Decoded::Skip => {}
                Decoded::Fault(reason) => {
                    self.fault.set(reason);
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Closing stdin asks the server to exit (the MCP stdio shutdown); one that was at fault, or that
        // does not exit in time, is killed.
        drop(self.writer.lock().await.take());
        if let Some(tree) = self.child.take() {
            let deadline = tokio::time::Instant::now() + EXIT_GRACE;
            while self.fault.get().is_none() && !tree.exited() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(EXIT_POLL).await;
            }
            // Dropping the tree kills what is left of it (the server, if it did not exit, and whatever it
            // started) and reaps it: blocking work, off the executor.
            let _ = tokio::task::spawn_blocking(move || drop(tree)).await;
        }
        Ok(())
    }
}

/// The fault of a message over `[mcp] max_message_bytes`.
pub(super) fn too_long(max: usize) -> String {
    format!("sent a message longer than {max} bytes (the limit is [mcp] max_message_bytes = {max})")
}

/// The fault of bytes that are not UTF-8; `detail` says where.
pub(super) fn not_utf8(detail: &str) -> String {
    format!("sent a message that is not valid UTF-8 ({detail})")
}

/// The fault of JSON past serde_json's recursion limit.
pub(super) fn too_deep() -> String {
    format!("sent JSON nested deeper than {MAX_DEPTH} levels")
}

/// Whether serde_json gave up on `error` at its recursion limit.
pub(super) fn is_too_deep(error: &impl std::fmt::Display) -> bool {
    error.to_string().starts_with("recursion limit exceeded")
}

/// Reads one line (with its newline) as rmcp would, but answers a fault where rmcp would drop it.
fn decode(line: &[u8]) -> Decoded {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    match std::str::from_utf8(line) {
        Ok(text) => decode_text(text),
        Err(e) => Decoded::Fault(not_utf8(&format!("at byte {} of the line", e.valid_up_to()))),
    }
}

/// Reads one message's text as rmcp would (a stdio line, an SSE event's data), telling apart what rmcp
/// would drop.
pub(super) fn decode_text(text: &str) -> Decoded {
    let text = text.trim();
    if text.is_empty() {
        return Decoded::Skip;
    }
    let typed_error = match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(text) {
        Ok(message) => return Decoded::Message(Box::new(message)),
        Err(e) => e,
    };
    if is_too_deep(&typed_error) {
        return Decoded::Fault(too_deep());
    }
    match serde_json::from_str::<Value>(text) {
        Err(e) if is_too_deep(&e) => Decoded::Fault(too_deep()),
        // Something that starts like JSON and breaks off may be the answer a call waits for.
        Err(e) if text.starts_with(['{', '[']) => {
            Decoded::Fault(format!("sent a message that is not valid JSON ({e})"))
        }
        Err(e) => Decoded::Stray(format!("sent a message that is not JSON ({e})")),
        Ok(Value::Object(object)) if object.contains_key("method") => {
            tracing::debug!("ignoring an MCP message rmcp cannot read: {typed_error}");
            Decoded::Skip
        }
        Ok(Value::Object(object)) if ["id", "result", "error"].iter().any(|k| object.contains_key(*k)) => {
            Decoded::Fault(format!("sent a response that is not a valid JSON-RPC message ({typed_error})"))
        }
        Ok(Value::Array(_)) => Decoded::Fault("sent a JSON-RPC batch, which MCP does not allow".to_owned()),
        Ok(_) => Decoded::Stray("sent JSON that is not a JSON-RPC message".to_owned()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "transport_tests.rs"]
mod tests;
