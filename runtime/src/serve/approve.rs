//! Approval over MCP: an ask goes to the client that made the call, as an elicitation.

use crate::pipeline::policy::{Answer, ApprovalPrompt, Approver, Reply};
use crate::types::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use rmcp::service::RoleServer;
use rmcp::Peer;
use serde_json::json;

tokio::task_local! {
    /// The client of the `tools/call` being run, for the approver to ask.
    pub(super) static CLIENT: Peer<RoleServer>;
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
