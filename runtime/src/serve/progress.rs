//! Streamed command output as MCP `notifications/progress`: the runtime's event sink hands execute_command's
//! `command_output` chunks to the call that sent them, when its `tools/call` carried a `progressToken`.

use crate::types::UiEvent;
use dashmap::DashMap;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RoleServer;
use rmcp::Peer;
use std::sync::Arc;

/// Chunks waiting for a client, per call. A slow client must never hold up the tool (the sink runs on the
/// plugin's thread), so a full queue drops the chunk: progress is advisory and the call's result carries the
/// whole output anyway.
const QUEUE: usize = 64;

/// Routes the runtime's UI events to the MCP calls that asked for progress. Register [`Progress::sink`] on
/// the runtime builder (`on_event`) and hand the same value to [`crate::serve::ServeOptions::progress`].
#[derive(Clone, Default)]
pub struct Progress {
    /// By task id and tool-use id.
    calls: Arc<DashMap<(String, String), tokio::sync::mpsc::Sender<String>>>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress").field("calls", &self.calls.len()).finish()
    }
}

impl Progress {
    /// An empty router.
    pub fn new() -> Self {
        Self::default()
    }

    /// The event sink for [`crate::RuntimeBuilder::on_event`].
    pub fn sink(&self) -> impl Fn(&UiEvent) + Send + Sync + 'static {
        let calls = Arc::clone(&self.calls);
        move |event: &UiEvent| {
            if event.kind != "command_output" || event.text.is_empty() {
                return;
            }
            if let Some(tx) = calls.get(&(event.task_id.clone(), event.tool_use_id.clone())) {
                // Full: dropped, see `QUEUE`. Closed: the call just ended.
                let _ = tx.try_send(event.text.clone());
            }
        }
    }

    /// Forwards the output of call `call_id` in task `task_id` to `peer` under `token` until the returned
    /// watch is finished.
    pub(super) fn watch(&self, task_id: &str, call_id: &str, token: ProgressToken, peer: Peer<RoleServer>) -> Watch {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(QUEUE);
        let key = (task_id.to_owned(), call_id.to_owned());
        self.calls.insert(key.clone(), tx);
        let forwarder = tokio::spawn(async move {
            let mut sent = 0u32;
            while let Some(chunk) = rx.recv().await {
                sent += 1;
                let mut param = ProgressNotificationParam::new(token.clone(), f64::from(sent));
                param.message = Some(chunk);
                if let Err(e) = peer.notify_progress(param).await {
                    tracing::debug!("cannot send a progress notification: {e}");
                    return;
                }
            }
        });
        Watch { calls: Arc::clone(&self.calls), key, forwarder: Some(forwarder) }
    }
}

/// One call's forwarding; dropping it stops taking chunks.
pub(super) struct Watch {
    calls: Arc<DashMap<(String, String), tokio::sync::mpsc::Sender<String>>>,
    key: (String, String),
    forwarder: Option<tokio::task::JoinHandle<()>>,
}

impl Watch {
    /// Stops taking chunks and waits until the queued ones are sent, so every progress notification goes
    /// before the call's response.
    pub async fn finish(mut self) {
        self.calls.remove(&self.key);
        if let Some(forwarder) = self.forwarder.take() {
            let _ = forwarder.await;
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.calls.remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, call: &str, text: &str) -> UiEvent {
        UiEvent {
            task_id: "t".to_owned(),
            tool_use_id: call.to_owned(),
            tool: "execute_command".to_owned(),
            kind: kind.to_owned(),
            text: text.to_owned(),
            partial: true,
        }
    }

    #[test]
    fn output_goes_to_its_call_only_and_a_full_queue_drops_instead_of_blocking() {
        let progress = Progress::new();
        let (tx, mut rx) = tokio::sync::mpsc::channel(QUEUE);
        progress.calls.insert(("t".to_owned(), "c1".to_owned()), tx);
        let sink = progress.sink();
        sink(&event("command_output", "c2", "other call"));
        sink(&event("diff", "c1", "not output"));
        sink(&event("command_output", "c1", ""));
        for i in 0..QUEUE + 10 {
            sink(&event("command_output", "c1", &format!("chunk {i}")));
        }
        let mut got = Vec::new();
        while let Ok(chunk) = rx.try_recv() {
            got.push(chunk);
        }
        assert_eq!(got.len(), QUEUE);
        assert_eq!(got[0], "chunk 0");
        assert_eq!(got[QUEUE - 1], format!("chunk {}", QUEUE - 1));
    }
}
