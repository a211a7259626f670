//! The host's side of a handler that lives in a child process: the frozen `ToolHandler` vtable, implemented
//! by sending each phase over the socket and serving the plugin's host-service calls until it answers.

use super::{Phase, Routed, SendError, Supervisor, ToChild, ToHost};
use abi_stable::std_types::{RResult, RStr, RString};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolshed_plugin_api::{HostRef, ToolHandler};

/// A handler that lives in a child process: the frozen vtable, implemented by the host.
pub(super) struct RemoteHandler {
    pub(super) supervisor: Arc<Supervisor>,
    pub(super) handler: u32,
    pub(super) tool: String,
}

impl ToolHandler for RemoteHandler {
    fn prepare(&self, call: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString> {
        self.run(Phase::Prepare, call, host)
    }

    fn execute(&self, call: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString> {
        self.run(Phase::Execute, call, host)
    }

    fn partial(&self, block: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString> {
        self.run(Phase::Partial, block, host)
    }
}

impl RemoteHandler {
    fn run(&self, phase: Phase, call: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString> {
        match self.converse(phase, call.as_str(), &host) {
            Ok((true, text)) => RResult::ROk(text.into()),
            Ok((false, text)) => RResult::RErr(text.into()),
            Err(why) => RResult::RErr(format!("{why} (while running `{}`'s {})", self.tool, phase.name()).into()),
        }
    }

    /// Sends the call and serves the child's host-service requests until it answers or dies.
    fn converse(&self, phase: Phase, call: &str, host: &HostRef<'_>) -> Result<(bool, String), String> {
        let limits = &self.supervisor.shared.limits;
        let conn = self.supervisor.live(host)?;
        let id = conn.id();
        let answers = conn.register(id)?;
        let refused = match conn.send(&ToChild::Call { id, handler: self.handler, phase, call: call.to_owned() }) {
            // A failed write means the child is dying: its reader thread sends why.
            Ok(()) | Err(SendError::Gone) => None,
            Err(SendError::TooLarge(bytes)) => Some(format!(
                "the call is {bytes} bytes, over [plugins.process] max_message_bytes = {}",
                limits.max_message_bytes
            )),
            Err(SendError::Unserializable(why)) => {
                Some(format!("the call cannot be sent to the plugin's process: {why}"))
            }
        };
        if let Some(why) = refused {
            conn.unregister(id);
            return Err(why);
        }
        let poll = Duration::from_millis(limits.poll_ms.max(1));
        let grace = Duration::from_millis(limits.kill_grace_ms);
        let mut cancelled_at: Option<Instant> = None;
        let mut killed = false;
        let answer = loop {
            // Looked at on every pass, not only when the child is quiet: a child that keeps talking must not
            // keep its cancellation from being passed on.
            match cancelled_at {
                None if host.is_cancelled() => {
                    cancelled_at = Some(Instant::now());
                    let _ = conn.send(&ToChild::Cancel { id });
                }
                Some(at) if !killed && at.elapsed() >= grace => {
                    killed = true;
                    conn.kill(
                        format!(
                            "the plugin `{}` did not stop within [plugins.process] kill_grace_ms = {} of its call's \
                             cancellation; its process was killed and restarts for the next call",
                            crate::shown::escape_line(&self.supervisor.shared.plugin()),
                            limits.kill_grace_ms
                        ),
                        true,
                    );
                    // The reader thread answers with the reason once the child is reaped.
                }
                _ => {}
            }
            let message = match answers.recv_deadline(Instant::now() + poll) {
                Ok(Routed::Message(message, _)) => message,
                Ok(Routed::Died(why)) => break Err(why),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => continue,
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    break Err("the plugin's process is gone".to_owned());
                }
            };
            match message {
                // A cancelled call serves no more of the plugin's requests: it is only waiting for the answer.
                ToHost::Service { .. } if cancelled_at.is_some() => {
                    let text = "the call was cancelled".to_owned();
                    let _ = conn.send(&ToChild::Reply { id, ok: false, text });
                }
                ToHost::Service { name, request, .. } => {
                    let (ok, text) = match host.service(name.as_str().into(), request.as_str().into()) {
                        RResult::ROk(text) => (true, text.into_string()),
                        RResult::RErr(text) => (false, text.into_string()),
                    };
                    let refused = match conn.send(&ToChild::Reply { id, ok, text }) {
                        Ok(()) | Err(SendError::Gone) => None,
                        Err(SendError::TooLarge(bytes)) => Some(format!(
                            "the answer of `{}` is {bytes} bytes, over [plugins.process] max_message_bytes = {}",
                            crate::shown::escape_line(&name),
                            limits.max_message_bytes
                        )),
                        Err(SendError::Unserializable(why)) => Some(format!(
                            "the answer of `{}` cannot be sent to the plugin's process: {why}",
                            crate::shown::escape_line(&name)
                        )),
                    };
                    // The plugin still gets an answer, or it would wait for one for ever.
                    if let Some(text) = refused {
                        let _ = conn.send(&ToChild::Reply { id, ok: false, text });
                    }
                }
                ToHost::ListServices { .. } => {
                    let names = host.services().into_iter().map(RString::into_string).collect();
                    let _ = conn.send(&ToChild::Services { id, names });
                }
                ToHost::Log { level, message, .. } => host.log(level, clip(&message).into()),
                ToHost::Done { ok, text, .. } => break Ok((ok, text)),
                ToHost::Built { .. } | ToHost::Hello(_) | ToHost::Broken { .. } => {}
            }
        };
        conn.unregister(id);
        let dropped = answers.dropped();
        if dropped > 0 {
            tracing::warn!(
                plugin = %crate::shown::escape_line(&self.supervisor.shared.plugin()),
                tool = %self.tool,
                "{dropped} log messages of one {} were dropped: the plugin logged faster than the host took them \
                 (over [plugins.process] max_message_bytes = {} waiting)",
                phase.name(),
                limits.max_message_bytes
            );
        }
        answer
    }
}

/// The most of one log message passed on: a log line is for a person, and the host's log is not the plugin's
/// to fill.
const LOG_MAX: usize = 16 * 1024;

fn clip(message: &str) -> &str {
    match message.char_indices().nth(LOG_MAX) {
        Some((at, _)) => &message[..at],
        None => message,
    }
}
