//! Following a server's `notifications/tools/list_changed` and `notifications/resources/list_changed`: the
//! client handler only marks what changed and wakes the connection's follower task, which lists it again
//! (within the hub's listing caps) and lands the new list while the connection is still the server's. A
//! server that sends a storm of notifications costs one listing per kind at a time, never a queue of them;
//! the task ends with the connection, when rmcp drops the handler and with it the wake-up sender.
//! A re-listing that finds the list it had is no change: the hub's generation (which `serve` forwards to its
//! clients as their own `list_changed`) moves only when a list did.
//! Prompts are not cached by the hub, so their changes need nothing.

use super::hub::{list_resources, list_tools, Inner};
use super::transport::Fault;
use rmcp::service::{NotificationContext, Peer, RoleClient};
use rmcp::ClientHandler;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use tokio::sync::mpsc;

/// What changed since the follower last listed.
#[derive(Default)]
pub(super) struct Pending {
    tools: AtomicBool,
    resources: AtomicBool,
}

/// The hub's rmcp client handler: rmcp's defaults, plus the list changes marked for the follower task.
pub(super) struct Follower {
    pending: Arc<Pending>,
    wake: mpsc::Sender<()>,
}

/// The follower task's side of a [`Follower`].
pub(super) struct Changes {
    pending: Arc<Pending>,
    wake: mpsc::Receiver<()>,
}

impl Follower {
    pub(super) fn new() -> (Self, Changes) {
        // One wake-up in flight is enough: the flags say what to list.
        let (wake, woken) = mpsc::channel(1);
        let pending = Arc::new(Pending::default());
        (Self { pending: Arc::clone(&pending), wake }, Changes { pending, wake: woken })
    }

    fn mark(&self, flag: &AtomicBool) {
        flag.store(true, Ordering::Release);
        let _ = self.wake.try_send(());
    }
}

impl ClientHandler for Follower {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.mark(&self.pending.tools);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.mark(&self.pending.resources);
    }
}

/// Lists a connection's tools or resources again whenever its server says they changed, until the
/// connection (or the hub) is gone. A listing that fails keeps the last list and says why in the log.
pub(super) async fn follow(
    hub: Weak<Inner>,
    name: String,
    generation: u64,
    peer: Peer<RoleClient>,
    fault: Fault,
    mut changes: Changes,
) {
    let Some(limits) = hub.upgrade().map(|hub| hub.limits()) else { return };
    while changes.wake.recv().await.is_some() {
        if changes.pending.tools.swap(false, Ordering::AcqRel) {
            let listed = list_tools(&peer, limits, &fault).await;
            if !land(&hub, &name, generation, listed, |lists, tools| replaced(&mut lists.tools, tools)) {
                return;
            }
        }
        if changes.pending.resources.swap(false, Ordering::AcqRel) {
            let listed = list_resources(&peer, limits, &fault).await;
            if !land(&hub, &name, generation, listed, |lists, resources| replaced(&mut lists.resources, resources)) {
                return;
            }
        }
    }
}

/// Lands one re-listing; `false` once the hub is gone.
fn land(
    hub: &Weak<Inner>,
    name: &str,
    generation: u64,
    listed: Result<Vec<serde_json::Value>, String>,
    set: impl FnOnce(&mut super::hub::Lists, Vec<serde_json::Value>) -> bool,
) -> bool {
    let Some(hub) = hub.upgrade() else { return false };
    match listed {
        Ok(items) => hub.relisted(name, generation, |lists| set(lists, items)),
        Err(message) => {
            tracing::warn!(server = %name, "MCP server's list changed, but listing it again failed: {message}")
        }
    }
    true
}

/// Puts `new` in `list`; whether it differs from what was there.
fn replaced(list: &mut Vec<serde_json::Value>, new: Vec<serde_json::Value>) -> bool {
    let changed = *list != new;
    *list = new;
    changed
}
