//! The authorize stage, one for every path a call takes: the approval policy's decision on what `prepare` asked
//! for (made on the worker when `execute` may follow at once, and kept, so it is never made twice), the
//! PreToolUse hooks' verdict on top of it, and the question to the user when either says to ask.

use super::hooks::{HookDecision, Verdict};
use super::policy::{Answer, ApprovalPrompt, Decision, PolicyRequest, Source};
use super::Engine;
use crate::actors::tool_actor::Approve;
use crate::registry::coordinator::Route;
use crate::services::mcp::USE_MCP_TOOL;
use crate::task::TaskShared;
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use toolshed_plugin_api::{ApprovalRequest, Prepared, Risk};

/// The policy's view of one call, and the decision it made on `prepare`'s request once made.
pub(super) struct Authorizer {
    engine: Arc<Engine>,
    task: Arc<TaskShared>,
    route: Route,
    tool: String,
    /// The other names the call goes by, whose rules apply too.
    also: Vec<String>,
    /// Whether the called MCP server's `autoApprove` lists the tool of a use_mcp_tool call.
    mcp_auto_approve: bool,
    decided: OnceLock<Decision>,
}

impl Authorizer {
    pub fn new(engine: &Arc<Engine>, task: &Arc<TaskShared>, route: &Route, tool: &str, input: &Value) -> Self {
        Self {
            mcp_auto_approve: mcp_auto_approve(engine, route, input),
            also: other_names(route, input),
            engine: Arc::clone(engine),
            task: Arc::clone(task),
            route: route.clone(),
            tool: tool.to_owned(),
            decided: OnceLock::new(),
        }
    }

    /// The policy's decision on `prepare`'s approval request (made once per call).
    fn decide(&self, request: &ApprovalRequest) -> Decision {
        *self.decided.get_or_init(|| self.decide_now(request))
    }

    fn decide_now(&self, request: &ApprovalRequest) -> Decision {
        let task = &self.task;
        let policy_request = PolicyRequest {
            tool: &self.tool,
            also: &self.also,
            builtin: self.route.meta.id.is_builtin(),
            capabilities: &self.route.meta.capabilities,
            inside_workspace: request.paths.iter().all(|p| task.workspace.contains(Path::new(p)) && !hard_linked(p)),
            mcp_auto_approve: self.mcp_auto_approve,
            session_allowed: task.always_allow.contains(&self.tool),
            high_risk: request.risk == Risk::High,
        };
        self.engine.policy.decide(&policy_request)
    }
}

impl Approve for Authorizer {
    fn approve(&self, prepared: &Prepared) -> Option<bool> {
        match prepared {
            Prepared::Proceed => Some(false),
            Prepared::Approval(request) => match self.decide(request) {
                Decision::Allow(source) => Some(source != Source::SafeDefault),
                _ => None,
            },
            Prepared::Error(_) => None,
        }
    }
}

/// A call that may run: whether it was approved explicitly, and any feedback the user typed.
pub(super) struct Authorized {
    pub explicit: bool,
    pub feedback: Option<String>,
}

/// A call that may not: its denial text, a note for the host's user, and any feedback.
pub(super) struct Refused {
    pub message: Option<String>,
    pub note: Option<String>,
    pub feedback: Option<String>,
}

/// Authorizes a call whose `prepare` answered `request` (`None`: nothing to approve) under the hooks' `verdict`.
pub(super) async fn authorize(
    authorizer: &Authorizer,
    request: Option<ApprovalRequest>,
    verdict: &Verdict,
) -> Result<Authorized, Refused> {
    // A hook asking for approval of a call that needs none still asks; its request is not `prepare`'s.
    let (request, from_prepare) = match (request, verdict.decision) {
        (None, Some(HookDecision::Ask)) => (
            ApprovalRequest {
                kind: "tool".to_owned(),
                message: format!("A hook asks whether {} may run", authorizer.tool),
                paths: Vec::new(),
                risk: Risk::Medium,
                denied_message: None,
            },
            false,
        ),
        (Some(request), _) => (request, true),
        (None, _) => return Ok(Authorized { explicit: false, feedback: None }),
    };
    let policy = if from_prepare { authorizer.decide(&request) } else { authorizer.decide_now(&request) };
    let decision = match (policy, verdict.decision) {
        (Decision::Ask(_), Some(HookDecision::Allow)) => Decision::Allow(Source::Default),
        (Decision::Allow(source), Some(HookDecision::Ask)) if source != Source::CliFlag => Decision::Ask(source),
        (decision, _) => decision,
    };
    match decision {
        Decision::Allow(source) => Ok(Authorized { explicit: source != Source::SafeDefault, feedback: None }),
        Decision::Deny(source) => Err(Refused {
            message: request.denied_message,
            note: Some(format!("denied by {source:?} rule for {}", authorizer.tool)),
            feedback: None,
        }),
        Decision::Ask(_) => match ask(&authorizer.engine, &authorizer.task, &authorizer.tool, request).await {
            Ok(feedback) => Ok(Authorized { explicit: true, feedback }),
            Err((message, note, feedback)) => Err(Refused { message, note, feedback }),
        },
    }
}

/// Whether `path` is a regular file with more than one name. Its other names may lie outside the workspace,
/// where no path check can see them, so a call on it is judged as one outside the workspace: it asks.
fn hard_linked(path: &str) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_file() && meta.nlink() > 1)
}

/// The other names a call goes by, whose per-tool rules apply to it too: the handler's primary name for an
/// alias (`write_to_file` for `replace_in_file`), and for a use_mcp_tool call the native name of the MCP tool
/// it reaches (`{server}__mcp__{tool}`, the name the tool schemas offer), however it was called.
fn other_names(route: &Route, input: &Value) -> Vec<String> {
    let mut names = Vec::new();
    if route.meta.primary != route.meta.name {
        names.push(route.meta.primary.clone());
    }
    if route.meta.primary == USE_MCP_TOOL
        && let (Some(server), Some(tool)) =
            (input.get("server_name").and_then(Value::as_str), input.get("tool_name").and_then(Value::as_str))
    {
        names.push(format!("{server}{}{tool}", crate::spec::MCP_TOOL_SEPARATOR));
    }
    names
}

/// Whether the called MCP server's `autoApprove` lists the tool of a use_mcp_tool call.
fn mcp_auto_approve(engine: &Engine, route: &Route, input: &Value) -> bool {
    let (Some(hub), true) = (&engine.services.mcp, route.meta.primary == USE_MCP_TOOL) else {
        return false;
    };
    match (input.get("server_name").and_then(Value::as_str), input.get("tool_name").and_then(Value::as_str)) {
        (Some(server), Some(tool)) => hub.auto_approves(server, tool),
        _ => false,
    }
}

/// Asks the user. `Ok` carries any feedback typed with an approval; `Err` a refusal: the tool's denial text,
/// a note for the host's user, and any feedback.
async fn ask(
    engine: &Engine,
    task: &TaskShared,
    tool: &str,
    request: ApprovalRequest,
) -> Result<Option<String>, (Option<String>, Option<String>, Option<String>)> {
    let denied_message = request.denied_message.clone();
    let Some(approver) = &engine.approver else {
        let note = format!(
            "{tool} needs approval and there is no terminal to ask: pass --yes, or allow it in [approval] tools"
        );
        return Err((denied_message, Some(note), None));
    };
    // The prompt is shown to a person: the tool's message and paths come from the model and the workspace.
    // One line: line feeds in a command would push its start off the screen, or fake a second question.
    let prompt = ApprovalPrompt {
        tool: crate::shown::escape_line(tool).into_owned(),
        kind: crate::shown::escape_line(&request.kind).into_owned(),
        message: crate::shown::escape_line(&request.message).into_owned(),
        paths: request.paths.iter().map(|path| crate::shown::escape_line(path).into_owned()).collect(),
        risk: request.risk,
    };
    let asking = approver.ask(prompt);
    let reply = match engine.timeouts.ask {
        Some(limit) => tokio::select! {
            reply = asking => Some(reply),
            () = tokio::time::sleep(limit) => None,
        },
        None => Some(asking.await),
    };
    let Some(reply) = reply else {
        return Err((denied_message, Some("no answer before the ask timeout".to_owned()), None));
    };
    match reply.answer {
        Answer::Approve => Ok(reply.feedback),
        Answer::AlwaysAllow => {
            task.always_allow.insert(tool.to_owned());
            Ok(reply.feedback)
        }
        Answer::Deny => Err((denied_message, None, reply.feedback)),
    }
}
