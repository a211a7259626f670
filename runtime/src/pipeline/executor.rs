//! The tool executor: one call from a model's tool use to the tool result the model reads.
//!
//! Order, as Cline's: input checks → the tool's `prepare` (its own validation) → approval policy → `execute`.
//! Every failure on the way is a tool result, never an error of the host's.

use crate::actors::tool_actor::{AutoApprove, Phase, PhaseAnswer, PhaseError, RunPhase, ThenExecute};
use crate::messages;
use crate::pipeline::hooks::{HookDecision, HookEvent, HookInput, Verdict};
use crate::pipeline::policy::{Answer, ApprovalPrompt, Decision, PolicyRequest};
use crate::registry::coordinator::Route;
use crate::runtime::Shared;
use crate::task::TaskShared;
use crate::types::{Mode, ResultStatus, ToolInput, ToolResult, ToolUse};
use serde_json::json;
use serde_json::Value;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use toolshed_plugin_api::{capability, ApprovalRequest, Block, Outcome, Prepared, Risk, ToolError};

/// Renders a display template: `{tool}` is the name called, `{x}` input parameter `x` (`undefined` when
/// missing, as Cline renders it), `{a|b}` the first of `a` and `b` present (Cline's `path || absolutePath`),
/// and `{?x:text}` renders `text` only when `x` is present (search_files' ` in '{file_pattern}'`).
pub(crate) fn describe(template: Option<&str>, tool: &str, input: &Value) -> String {
    let Some(template) = template else {
        return format!("[{tool}]");
    };
    let mut out = String::with_capacity(template.len() + 16);
    render(template, tool, input, &mut out);
    out
}

fn present<'a>(input: &'a Value, keys: &str) -> Option<&'a Value> {
    keys.split('|').find_map(|k| input.get(k).filter(|v| !v.is_null()))
}

fn render(template: &str, tool: &str, input: &Value, out: &mut String) {
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        // The matching close brace, counting nested ones (a conditional's text holds placeholders).
        let mut depth = 0usize;
        let close = after.char_indices().find_map(|(i, c)| match c {
            '{' => {
                depth += 1;
                None
            }
            '}' if depth == 0 => Some(i),
            '}' => {
                depth -= 1;
                None
            }
            _ => None,
        });
        let Some(close) = close else {
            out.push('{');
            rest = after;
            continue;
        };
        let key = &after[..close];
        if key == "tool" {
            out.push_str(tool);
        } else if let Some(conditional) = key.strip_prefix('?') {
            let (keys, text) = conditional.split_once(':').unwrap_or((conditional, ""));
            if present(input, keys).is_some() {
                render(text, tool, input, out);
            }
        } else {
            match present(input, key) {
                Some(Value::String(s)) => out.push_str(s),
                Some(other) => out.push_str(&other.to_string()),
                None => out.push_str("undefined"),
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
}

/// Cline's "missing" test: absent, null, or a blank string (unless the parameter allows empty strings).
pub(crate) fn is_missing(value: Option<&Value>, allow_empty: bool) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => !allow_empty && s.trim().is_empty(),
        Some(_) => false,
    }
}

fn call_json(tool: &str, id: &str, input: &Value, task: &TaskShared) -> String {
    // Assembled by hand so the task's JSON, built once per task and mode, is not serialised again for every
    // call.
    let info_json = task.info_json();
    let mut out = String::with_capacity(128 + info_json.len());
    out.push_str("{\"tool\":");
    out.push_str(&Value::from(tool).to_string());
    out.push_str(",\"id\":");
    out.push_str(&Value::from(id).to_string());
    out.push_str(",\"input\":");
    out.push_str(&input.to_string());
    out.push_str(",\"task\":");
    out.push_str(&info_json);
    out.push('}');
    out
}

/// The result header Cline shows for a tool use (`[read_file for 'a.rs']`).
pub(crate) fn description(shared: &Shared, tool_use: &ToolUse) -> String {
    let display = shared.route(&tool_use.name).and_then(|route| route.meta.display.clone());
    let input = match &tool_use.input {
        ToolInput::Json(value) => value.clone(),
        ToolInput::Text(text) => serde_json::from_str(text).unwrap_or(Value::Null),
    };
    describe(display.as_deref(), &tool_use.name, &input)
}

/// Runs one tool use for a task, then Cline's loop detection on it.
pub(crate) async fn execute(shared: &Arc<Shared>, task: &Arc<TaskShared>, tool_use: ToolUse) -> ToolResult {
    if task.cancel.is_cancelled() {
        let description = format!("[{}]", tool_use.name);
        let text = messages::tool_error(&format!("Error executing {}: the task was cancelled.", tool_use.name));
        return ToolResult::plain(&tool_use, description, ResultStatus::Error, text);
    }
    let (mut result, signature) = run(shared, task, tool_use).await;
    if let Some(signature) = signature {
        detect_loop(task, &mut result, signature);
    }
    result
}

/// Cline's loop detection: the same tool with the same parameters (keys sorted, `task_progress` left out)
/// three times in a row appends `repeatedToolCall`; five times sets the mistake count to the host's limit.
fn detect_loop(task: &TaskShared, result: &mut ToolResult, signature: String) {
    const SOFT: u32 = 3;
    const HARD: u32 = 5;
    let mut last = match task.last_call.lock() {
        Ok(last) => last,
        Err(poisoned) => poisoned.into_inner(),
    };
    if last.0 == result.name && last.1 == signature {
        last.2 += 1;
    } else {
        *last = (result.name.clone(), signature, 1);
    }
    if last.2 == SOFT {
        result.context_after.insert(0, messages::repeated_tool_call(&result.name, SOFT));
    }
    if last.2 == HARD {
        task.mistakes.store(task.max_mistakes, Ordering::Relaxed);
    }
}

/// The loop-detection signature: the input with keys sorted at every level and `task_progress` left out.
pub(crate) fn signature(input: &Value) -> String {
    fn sorted(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::from(key.as_str()).to_string());
                    out.push(':');
                    sorted(&map[key], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    sorted(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut input = input.clone();
    if let Value::Object(map) = &mut input {
        map.remove("task_progress");
    }
    // Printed by hand in key order, whatever map type serde_json was built with.
    let mut out = String::new();
    sorted(&input, &mut out);
    out
}

/// Runs one tool use; also returns its loop-detection signature when it reached its tool.
async fn run(shared: &Arc<Shared>, task: &Arc<TaskShared>, mut tool_use: ToolUse) -> (ToolResult, Option<String>) {
    // A streamed tool use keeps the generation its first `partial` resolved.
    let streamed = task.streamed.remove(&tool_use.id).map(|(_, route)| route);
    let route = streamed.filter(|route| route.meta.name == tool_use.name).or_else(|| shared.route(&tool_use.name));
    // A native MCP tool (`{server}__mcp__{tool}`) runs as the use_mcp_tool call Cline turns it into.
    if route.is_none() && tool_use.name.contains(crate::spec::MCP_TOOL_SEPARATOR) {
        if let Some(native) = native_mcp(shared, &mut tool_use).await {
            let mut result = Box::pin(execute(shared, task, native)).await;
            result.name = tool_use.name;
            return (result, None);
        }
    }
    // A configured agent's tool (`use_subagent_<name>`) runs as the use_subagents call it stands for.
    if route.is_none() && tool_use.name.starts_with(crate::services::subagents::TOOL_PREFIX) {
        match crate::services::subagents::route_dynamic(task, &tool_use) {
            Some(Ok((routed, description))) => {
                let mut result = Box::pin(execute(shared, task, routed)).await;
                result.name = tool_use.name;
                result.description = description;
                return (result, None);
            }
            Some(Err(result)) => return (result, None),
            None => {}
        }
    }
    task.calls.fetch_add(1, Ordering::Relaxed);
    let Some(route) = route else {
        let mut names = shared.tool_names();
        names.sort();
        let text = messages::tool_error(&format!(
            "Tool '{}' does not exist. Available tools: {}.",
            tool_use.name,
            names.join(", ")
        ));
        return (
            mistake(task, ToolResult::plain(&tool_use, format!("[{}]", tool_use.name), ResultStatus::Error, text)),
            None,
        );
    };
    // Taken, not cloned: an input can be a whole file's content.
    let input = match std::mem::replace(&mut tool_use.input, ToolInput::Json(Value::Null)) {
        ToolInput::Json(value) => value,
        ToolInput::Text(text) => match serde_json::from_str::<Value>(&text) {
            Ok(value) => value,
            Err(e) => {
                let text = messages::tool_error(&format!(
                    "Invalid JSON input for {}: {e}. Please retry with the parameters as one JSON object.",
                    tool_use.name
                ));
                let description = describe(route.meta.display.as_deref(), &tool_use.name, &Value::Null);
                return (mistake(task, ToolResult::plain(&tool_use, description, ResultStatus::Error, text)), None);
            }
        },
    };
    let description = describe(route.meta.display.as_deref(), &tool_use.name, &input);
    let sig = signature(&input);
    if !input.is_object() {
        let text = messages::tool_error(&format!(
            "Invalid input for {}: expected a JSON object of parameters, got {}.",
            tool_use.name,
            json_kind(&input)
        ));
        return (mistake(task, ToolResult::plain(&tool_use, description, ResultStatus::Error, text)), Some(sig));
    }
    if let Some((param, _)) =
        route.meta.required.iter().find(|(name, allow_empty)| is_missing(input.get(name.as_str()), *allow_empty))
    {
        let text = messages::tool_error(&messages::missing_parameter(param));
        return (mistake(task, ToolResult::plain(&tool_use, description, ResultStatus::Error, text)), Some(sig));
    }

    if task.mode() == Mode::Plan && route.meta.capabilities.iter().any(|c| c == capability::WRITES_FILES) {
        let text = messages::tool_error(&messages::plan_mode_refusal(&tool_use.name));
        return (ToolResult::plain(&tool_use, description, ResultStatus::Error, text), None);
    }
    let pre_hooks = shared.hooks.has(HookEvent::PreToolUse);
    let hook_input = |event: HookEvent| HookInput {
        hook_event_name: event,
        session_id: task.info.task_id.clone(),
        task_id: task.info.task_id.clone(),
        cwd: task.info.cwd.clone(),
        tool_name: tool_use.name.clone(),
        tool_input: input.clone(),
        tool_use_id: tool_use.id.clone(),
        tool_response: None,
    };
    let pre_input = pre_hooks.then(|| hook_input(HookEvent::PreToolUse));
    let post_input = shared.hooks.has(HookEvent::PostToolUse).then(|| hook_input(HookEvent::PostToolUse));

    let mcp_auto = mcp_auto_approve(shared, &route, &input);
    let also = other_names(&route, &input);
    let call = call_json(&tool_use.name, &tool_use.id, &input, task);
    // Prepare, and when nobody has to be asked, execute in the same job: one round trip instead of two.
    let approve: AutoApprove = {
        let (shared, task, route) = (Arc::clone(shared), Arc::clone(task), route.clone());
        let (tool, also) = (tool_use.name.clone(), also.clone());
        Arc::new(move |prepared: &Prepared| match prepared {
            Prepared::Proceed => Some(false),
            Prepared::Approval(request) => match decide(&shared, &task, &route, &tool, &also, request, mcp_auto) {
                Decision::Allow(source) => Some(source != crate::pipeline::policy::Source::SafeDefault),
                _ => None,
            },
            Prepared::Error(_) => None,
        })
    };
    // PreToolUse hooks run between prepare and execute, so the two cannot share a job when there are any.
    let then = (!pre_hooks).then(|| ThenExecute { approve, timeout: shared.timeouts.call });
    let limits = (shared.timeouts.prepare, shared.timeouts.cancel_grace);
    let call: Arc<str> = Arc::from(call);
    let first = run_phase(&route, Phase::Prepare, Arc::clone(&call), task, limits, then).await;
    let mut feedback = None;
    let mut verdict = Verdict::default();
    let executed = match first {
        Ok(PhaseAnswer::Executed(text)) => Ok(text),
        Ok(PhaseAnswer::Text(text)) => {
            let prepared = Prepared::from_json(&text).unwrap_or_else(|e| {
                Prepared::Error(boundary_error(&tool_use.name, &format!("unreadable answer from prepare: {e}")))
            });
            let request = match prepared {
                Prepared::Error(error) => {
                    let error = crate::result_limit::cap_error(error, shared.max_result_bytes);
                    return (tool_error(task, &tool_use, description, error), Some(sig));
                }
                Prepared::Proceed => None,
                Prepared::Approval(request) => Some(request),
            };
            if let Some(pre_input) = pre_input {
                verdict = shared.hooks.run(pre_input, task.workspace.primary().to_path_buf()).await;
                if verdict.decision == Some(HookDecision::Deny) {
                    let mut result =
                        denied(&tool_use, description, request.as_ref().and_then(|r| r.denied_message.as_deref()));
                    let reason = verdict.reason.clone().unwrap_or_default();
                    result.context_before = verdict.context;
                    result.context_before.extend(crate::pipeline::hooks::hook_context("PreToolUse", &reason));
                    result.note = Some(format!("denied by a PreToolUse hook: {reason}"));
                    return (result, Some(sig));
                }
            }
            // A hook asking for approval of a call that needs none still asks.
            let request = match (request, verdict.decision) {
                (None, Some(HookDecision::Ask)) => Some(ApprovalRequest {
                    kind: "tool".to_owned(),
                    message: format!("A hook asks whether {} may run", tool_use.name),
                    paths: Vec::new(),
                    risk: Risk::Medium,
                    denied_message: None,
                }),
                (request, _) => request,
            };
            let mut explicit = false;
            if let Some(request) = request {
                let policy = decide(shared, task, &route, &tool_use.name, &also, &request, mcp_auto);
                let decision = match (policy, verdict.decision) {
                    (Decision::Ask(_), Some(HookDecision::Allow)) => {
                        Decision::Allow(crate::pipeline::policy::Source::Default)
                    }
                    (Decision::Allow(source), Some(HookDecision::Ask))
                        if source != crate::pipeline::policy::Source::CliFlag =>
                    {
                        Decision::Ask(source)
                    }
                    (decision, _) => decision,
                };
                match decision {
                    Decision::Allow(source) => explicit = source != crate::pipeline::policy::Source::SafeDefault,
                    Decision::Deny(source) => {
                        let mut result = denied(&tool_use, description, request.denied_message.as_deref());
                        result.note = Some(format!("denied by {source:?} rule for {}", tool_use.name));
                        result.context_before = verdict.context;
                        return (result, Some(sig));
                    }
                    Decision::Ask(_) => match ask(shared, task, &tool_use, request).await {
                        Ok(typed) => {
                            feedback = typed;
                            explicit = true;
                        }
                        Err((message, note, typed)) => {
                            let mut result = denied(&tool_use, description, message.as_deref());
                            result.note = note;
                            result.feedback = typed;
                            result.context_before = verdict.context;
                            return (result, Some(sig));
                        }
                    },
                }
            }
            let limits = (shared.timeouts.call, shared.timeouts.cancel_grace);
            let call = if explicit { Arc::from(crate::actors::tool_actor::approved_call(&call)) } else { call };
            match run_phase(&route, Phase::Execute, call, task, limits, None).await {
                Ok(PhaseAnswer::Text(text) | PhaseAnswer::Executed(text)) => Ok(text),
                Err(error) => Err(error),
            }
        }
        Err(error) => Err(error),
    };
    let outcome = match executed {
        Ok(text) => crate::result_limit::parse_outcome(&text, shared.max_result_bytes).unwrap_or_else(|e| {
            Outcome::Error(boundary_error(&tool_use.name, &format!("unreadable answer from execute: {e}")))
        }),
        Err(error) => {
            Outcome::Error(crate::result_limit::cap_error(phase_error(&route, &error), shared.max_result_bytes))
        }
    };
    let mut result = match outcome {
        Outcome::Success { blocks } => {
            task.mistakes.store(0, Ordering::Relaxed);
            ToolResult {
                tool_use_id: tool_use.id.clone(),
                name: tool_use.name.clone(),
                description,
                blocks,
                status: ResultStatus::Success,
                feedback: None,
                note: None,
                context_before: Vec::new(),
                context_after: Vec::new(),
            }
        }
        Outcome::Error(error) => tool_error(task, &tool_use, description, error),
        Outcome::Denied => denied(&tool_use, description, None),
    };
    result.feedback = feedback;
    result.context_before = verdict.context;
    if let Some(mut post_input) = post_input {
        let status = result.status.as_str();
        let content: Vec<Value> = result
            .blocks
            .iter()
            .map(|block| match block {
                Block::Text { text } => json!({"type": "text", "text": text}),
                Block::Image { media_type, .. } => json!({"type": "image", "media_type": media_type}),
            })
            .collect();
        post_input.tool_response = Some(json!({"status": status, "content": content}));
        let post = shared.hooks.run(post_input, task.workspace.primary().to_path_buf()).await;
        result.context_after.extend(post.context);
    }
    (result, Some(sig))
}

/// The policy's decision on an approval request.
fn decide(
    shared: &Shared,
    task: &TaskShared,
    route: &Route,
    tool: &str,
    also: &[String],
    request: &ApprovalRequest,
    mcp_auto_approve: bool,
) -> Decision {
    let policy_request = PolicyRequest {
        tool,
        also,
        builtin: route.meta.id.is_builtin(),
        capabilities: &route.meta.capabilities,
        inside_workspace: request.paths.iter().all(|p| task.workspace.contains(Path::new(p)) && !hard_linked(p)),
        mcp_auto_approve,
        session_allowed: task.always_allow.contains(tool),
    };
    shared.policy.decide(&policy_request)
}

/// Whether `path` is a regular file with more than one name. Its other names may lie outside the workspace,
/// where no path check can see them, so a call on it is judged as one outside the workspace: it asks.
fn hard_linked(path: &str) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_file() && meta.nlink() > 1)
}

/// The use_mcp_tool call a native MCP tool use stands for, when the MCP hub knows the name's server: the
/// input becomes `arguments`, a JSON string as Cline stringifies it (JSON text passes through unparsed, so
/// invalid JSON gets use_mcp_tool's own error).
async fn native_mcp(shared: &Shared, tool_use: &mut ToolUse) -> Option<ToolUse> {
    let hub = shared.host.mcp.as_ref()?;
    shared.route(USE_MCP_TOOL)?;
    let (server, tool) = hub.resolve_native(&tool_use.name).await?;
    let arguments = match std::mem::replace(&mut tool_use.input, ToolInput::Json(Value::Null)) {
        ToolInput::Json(value) => value.to_string(),
        ToolInput::Text(text) => text,
    };
    let input = serde_json::json!({"server_name": server, "tool_name": tool, "arguments": arguments});
    Some(ToolUse::new(tool_use.id.clone(), USE_MCP_TOOL, input))
}

/// The tool Cline routes MCP tool calls through.
const USE_MCP_TOOL: &str = "use_mcp_tool";

/// The other names a call goes by, whose per-tool rules apply to it too: the handler's primary name for an
/// alias (`write_to_file` for `replace_in_file`), and for a use_mcp_tool call the native name of the MCP tool
/// it reaches (`{server}__mcp__{tool}`, the name the tool schemas offer), however it was called.
fn other_names(route: &Route, input: &Value) -> Vec<String> {
    let mut names = Vec::new();
    if route.meta.primary != route.meta.name {
        names.push(route.meta.primary.clone());
    }
    if route.meta.primary == USE_MCP_TOOL {
        if let (Some(server), Some(tool)) =
            (input.get("server_name").and_then(Value::as_str), input.get("tool_name").and_then(Value::as_str))
        {
            names.push(format!("{server}{}{tool}", crate::spec::MCP_TOOL_SEPARATOR));
        }
    }
    names
}

/// Whether the called MCP server's `autoApprove` lists the tool of a use_mcp_tool call.
fn mcp_auto_approve(shared: &Shared, route: &Route, input: &Value) -> bool {
    let (Some(hub), true) = (&shared.host.mcp, route.meta.primary == USE_MCP_TOOL) else {
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
    shared: &Shared,
    task: &TaskShared,
    tool_use: &ToolUse,
    request: ApprovalRequest,
) -> Result<Option<String>, (Option<String>, Option<String>, Option<String>)> {
    let denied_message = request.denied_message.clone();
    let Some(approver) = &shared.approver else {
        let note = format!(
            "{} needs approval and there is no terminal to ask: pass --yes, or allow it in [approval] tools",
            tool_use.name
        );
        return Err((denied_message, Some(note), None));
    };
    // The prompt is shown to a person: the tool's message and paths come from the model and the workspace.
    // One line: line feeds in a command would push its start off the screen, or fake a second question.
    let prompt = ApprovalPrompt {
        tool: crate::shown::escape_line(&tool_use.name).into_owned(),
        kind: crate::shown::escape_line(&request.kind).into_owned(),
        message: crate::shown::escape_line(&request.message).into_owned(),
        paths: request.paths.iter().map(|path| crate::shown::escape_line(path).into_owned()).collect(),
        risk: request.risk,
    };
    let asking = approver.ask(prompt);
    let reply = match shared.timeouts.ask {
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
            task.always_allow.insert(tool_use.name.clone());
            Ok(reply.feedback)
        }
        Answer::Deny => Err((denied_message, None, reply.feedback)),
    }
}

/// Hands a streamed, incomplete tool use to its tool (UI only). Unknown tools and failures are ignored:
/// the complete tool use that follows reports them.
pub(crate) async fn partial(shared: &Shared, task: &Arc<TaskShared>, id: &str, name: &str, input: Value) {
    let pinned = task.streamed.get(id).map(|route| route.clone()).filter(|route| route.meta.name == name);
    let Some(route) = pinned.or_else(|| shared.route(name)) else {
        return;
    };
    if !id.is_empty() && !task.streamed.contains_key(id) {
        // Tool uses whose stream was abandoned never reach `execute`: keep the map small.
        if task.streamed.len() >= 64 {
            task.streamed.clear();
        }
        task.streamed.insert(id.to_owned(), route.clone());
    }
    let block = call_json(name, id, &input, task);
    let _ = run_phase(
        &route,
        Phase::Partial,
        Arc::from(block),
        task,
        (shared.timeouts.prepare, shared.timeouts.cancel_grace),
        None,
    )
    .await;
}

pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

async fn run_phase(
    route: &Route,
    phase: Phase,
    call: Arc<str>,
    task: &Arc<TaskShared>,
    (timeout, cancel_grace): (Duration, Duration),
    then_execute: Option<ThenExecute>,
) -> Result<PhaseAnswer, PhaseError> {
    let message = RunPhase { phase, call, task: Arc::clone(task), timeout, cancel_grace, then_execute };
    match route.actor.send(message).await {
        Ok(answer) => answer,
        Err(_) => Err(PhaseError::Failed("the tool's actor has stopped".to_owned())),
    }
}

fn boundary_error(tool: &str, message: &str) -> ToolError {
    ToolError { message: format!("Error executing {tool}: {message}"), mistake: false }
}

fn phase_error(route: &Route, error: &PhaseError) -> ToolError {
    let tool = &route.meta.name;
    let has = |capability: &str| route.meta.capabilities.iter().any(|c| c == capability);
    // A tool that commits its writes and timed out had not committed: it wrote nothing and cannot any more.
    // Only what may still act without asking (commands, writes outside the gate) may still complete.
    let gated = has(capability::COMMITS_WRITES) && !has(capability::RUNS_COMMANDS);
    let writes = has(capability::WRITES_FILES) || has(capability::RUNS_COMMANDS);
    let message = match error {
        PhaseError::Failed(message) => format!("Error executing {tool}: {message}"),
        PhaseError::TimedOut(limit) => format!(
            "Error executing {tool}: the tool did not finish within {} ms and was stopped waiting for.{}",
            limit.as_millis(),
            match (gated, writes) {
                (true, _) => " It had not changed any file and will not: retry, or make the change in smaller steps.",
                (false, true) => " Its changes may still complete: check the result before retrying.",
                (false, false) => "",
            }
        ),
        PhaseError::WriteOverran(waited) => format!(
            "Error executing {tool}: the tool was writing its changes when it timed out or its task was cancelled, and had not finished {} ms later. Some of its changes may have been written: check the files before retrying.",
            waited.as_millis()
        ),
        PhaseError::Cancelled => format!("Error executing {tool}: the task was cancelled."),
        PhaseError::Quarantined(n) => format!(
            "Error executing {tool}: the tool is quarantined because {n} earlier calls are still running after their timeout. Use another tool or try again later."
        ),
    };
    ToolError { message, mistake: false }
}

fn mistake(task: &TaskShared, result: ToolResult) -> ToolResult {
    task.mistakes.fetch_add(1, Ordering::Relaxed);
    result
}

fn tool_error(task: &TaskShared, tool_use: &ToolUse, description: String, error: ToolError) -> ToolResult {
    let result = ToolResult::plain(tool_use, description, ResultStatus::Error, messages::tool_error(&error.message));
    if error.mistake {
        mistake(task, result)
    } else {
        result
    }
}

fn denied(tool_use: &ToolUse, description: String, message: Option<&str>) -> ToolResult {
    let text = message.unwrap_or(messages::TOOL_DENIED).to_owned();
    ToolResult::plain(tool_use, description, ResultStatus::Denied, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn descriptions_render_like_cline() {
        let t = Some("[{tool} for '{path}']");
        assert_eq!(describe(t, "read_file", &json!({"path": "src/a.rs"})), "[read_file for 'src/a.rs']");
        assert_eq!(describe(t, "read_file", &json!({})), "[read_file for 'undefined']");
        assert_eq!(describe(None, "x", &json!({})), "[x]");
        let search = Some("[{tool} for '{regex}'{?file_pattern: in '{file_pattern}'}]");
        assert_eq!(describe(search, "search_files", &json!({"regex": "a"})), "[search_files for 'a']");
        assert_eq!(
            describe(search, "search_files", &json!({"regex": "a", "file_pattern": "*.rs"})),
            "[search_files for 'a' in '*.rs']"
        );
        let either = Some("[{tool} for '{path|absolutePath}']");
        assert_eq!(describe(either, "write_to_file", &json!({"absolutePath": "/a"})), "[write_to_file for '/a']");
        assert_eq!(describe(Some("[{tool} {n}] {"), "x", &json!({"n": 3})), "[x 3] {");
    }

    #[test]
    fn missing_means_absent_null_or_blank() {
        assert!(is_missing(None, false));
        assert!(is_missing(Some(&json!(null)), true));
        assert!(is_missing(Some(&json!("  \n")), false));
        assert!(!is_missing(Some(&json!("")), true));
        assert!(!is_missing(Some(&json!("a")), false));
        assert!(!is_missing(Some(&json!(0)), false));
    }
}
