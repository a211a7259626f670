//! The tool executor: one call from a model's tool use to the tool result the model reads.
//!
//! Order, as Cline's: input checks → the tool's `prepare` (its own validation) → approval policy → `execute`.
//! Every failure on the way is a tool result, never an error of the host's.

use crate::coordinator::Route;
use crate::messages;
use crate::policy::{Answer, ApprovalPrompt, Decision, PolicyRequest};
use crate::runtime::Shared;
use crate::task::{Mode, TaskShared};
use crate::tool_actor::{AutoApprove, Phase, PhaseAnswer, PhaseError, RunPhase, ThenExecute};
use serde_json::Value;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use toolshed_plugin_api::{capability, ApprovalRequest, Block, Outcome, Prepared, ToolError};

/// A tool use from the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    /// The tool-use id, echoed in the result.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The input: parsed JSON, or JSON text still to parse (as OpenAI sends `arguments`).
    pub input: ToolInput,
}

/// A tool use's input.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolInput {
    /// Parsed JSON; must be an object.
    Json(Value),
    /// JSON text; a parse failure becomes a tool error the model can fix.
    Text(String),
}

impl ToolUse {
    /// A tool use with parsed input.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self { id: id.into(), name: name.into(), input: ToolInput::Json(input) }
    }

    /// A tool use whose input is JSON text.
    pub fn from_text(id: impl Into<String>, name: impl Into<String>, input: impl Into<String>) -> Self {
        Self { id: id.into(), name: name.into(), input: ToolInput::Text(input.into()) }
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultStatus {
    /// The tool did its work.
    Success,
    /// A tool error (the model sees Cline's error wrapping).
    Error,
    /// The user or the policy refused.
    Denied,
}

/// A tool result, ready for a provider's `tool_result`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The tool-use id it answers.
    pub tool_use_id: String,
    /// The tool called.
    pub name: String,
    /// Cline's result header, e.g. `[read_file for 'src/a.rs']`.
    pub description: String,
    /// The content blocks (text and images), in order.
    pub blocks: Vec<Block>,
    /// How the call ended.
    pub status: ResultStatus,
    /// Text the user typed with their approval answer; the model sees it before the result.
    pub feedback: Option<String>,
    /// A note for the host's user, not the model (e.g. why a call was denied without asking).
    pub note: Option<String>,
}

impl ToolResult {
    fn text(tool_use: &ToolUse, description: String, status: ResultStatus, text: String) -> Self {
        Self {
            tool_use_id: tool_use.id.clone(),
            name: tool_use.name.clone(),
            description,
            blocks: vec![Block::Text { text }],
            status,
            feedback: None,
            note: None,
        }
    }

    /// Whether the result is a tool error or a denial.
    pub fn is_error(&self) -> bool {
        self.status != ResultStatus::Success
    }

    /// The result as the model reads it in text mode: the feedback block, then `{description} Result:` and
    /// the text for a text result (`(tool did not return anything)` when empty); results with images carry
    /// no header, and images appear as a placeholder line.
    pub fn to_model_text(&self) -> String {
        let mut out = String::new();
        if let Some(feedback) = &self.feedback {
            out.push_str(&messages::feedback(feedback));
            out.push('\n');
        }
        match self.blocks.as_slice() {
            [Block::Text { text }] => {
                out.push_str(&self.description);
                out.push_str(" Result:\n");
                out.push_str(if text.is_empty() { messages::EMPTY_RESULT } else { text });
            }
            blocks => {
                let parts: Vec<String> = blocks
                    .iter()
                    .map(|b| match b {
                        Block::Text { text } => text.clone(),
                        Block::Image { media_type, data } => {
                            format!("[image {media_type}, {} bytes base64]", data.len())
                        }
                    })
                    .collect();
                out.push_str(&parts.join("\n"));
            }
        }
        out
    }
}

/// Renders a display template: `{tool}` is the name called, `{x}` input parameter `x` (`undefined` when
/// missing, as Cline renders it), `{a|b}` the first of `a` and `b` present (Cline's `path || absolutePath`),
/// and `{?x:text}` renders `text` only when `x` is present (search_files' ` in '{file_pattern}'`).
fn describe(template: Option<&str>, tool: &str, input: &Value) -> String {
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
fn is_missing(value: Option<&Value>, allow_empty: bool) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => !allow_empty && s.trim().is_empty(),
        Some(_) => false,
    }
}

fn call_json(tool: &str, id: &str, input: &Value, task: &TaskShared) -> String {
    // Assembled by hand so the task's JSON, built once per task, is not serialised again for every call.
    let mut out = String::with_capacity(128 + task.info_json.len());
    out.push_str("{\"tool\":");
    out.push_str(&Value::from(tool).to_string());
    out.push_str(",\"id\":");
    out.push_str(&Value::from(id).to_string());
    out.push_str(",\"input\":");
    out.push_str(&input.to_string());
    out.push_str(",\"task\":");
    out.push_str(&task.info_json);
    out.push('}');
    out
}

/// Runs one tool use for a task.
pub(crate) async fn execute(shared: &Arc<Shared>, task: &Arc<TaskShared>, mut tool_use: ToolUse) -> ToolResult {
    task.calls.fetch_add(1, Ordering::Relaxed);
    let route = shared.route(&tool_use.name);
    let Some(route) = route else {
        let mut names = shared.tool_names();
        names.sort();
        let text = messages::tool_error(&format!(
            "Tool '{}' does not exist. Available tools: {}.",
            tool_use.name,
            names.join(", ")
        ));
        return mistake(task, ToolResult::text(&tool_use, format!("[{}]", tool_use.name), ResultStatus::Error, text));
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
                return mistake(task, ToolResult::text(&tool_use, description, ResultStatus::Error, text));
            }
        },
    };
    let description = describe(route.meta.display.as_deref(), &tool_use.name, &input);
    if !input.is_object() {
        let text = messages::tool_error(&format!(
            "Invalid input for {}: expected a JSON object of parameters, got {}.",
            tool_use.name,
            json_kind(&input)
        ));
        return mistake(task, ToolResult::text(&tool_use, description, ResultStatus::Error, text));
    }
    if let Some((param, _)) =
        route.meta.required.iter().find(|(name, allow_empty)| is_missing(input.get(name.as_str()), *allow_empty))
    {
        let text = messages::tool_error(&messages::missing_parameter(param));
        return mistake(task, ToolResult::text(&tool_use, description, ResultStatus::Error, text));
    }

    if task.mode == Mode::Plan && route.meta.capabilities.iter().any(|c| c == capability::WRITES_FILES) {
        let text = messages::tool_error(&messages::plan_mode_refusal(&tool_use.name));
        return ToolResult::text(&tool_use, description, ResultStatus::Error, text);
    }

    let call = call_json(&tool_use.name, &tool_use.id, &input, task);
    // Prepare, and when nobody has to be asked, execute in the same job: one round trip instead of two.
    let approve: AutoApprove = {
        let (shared, task, route) = (Arc::clone(shared), Arc::clone(task), route.clone());
        let tool = tool_use.name.clone();
        Arc::new(move |prepared: &Prepared| match prepared {
            Prepared::Proceed => true,
            Prepared::Approval(request) => {
                matches!(decide(&shared, &task, &route, &tool, request), Decision::Allow(_))
            }
            Prepared::Error(_) => false,
        })
    };
    let then = ThenExecute { approve, timeout: shared.timeouts.call };
    let limits = (shared.timeouts.prepare, shared.timeouts.cancel_grace);
    let call: Arc<str> = Arc::from(call);
    let first = run_phase(&route, Phase::Prepare, Arc::clone(&call), task, limits, Some(then)).await;
    let mut feedback = None;
    let executed = match first {
        Ok(PhaseAnswer::Executed(text)) => Ok(text),
        Ok(PhaseAnswer::Text(text)) => {
            let prepared = Prepared::from_json(&text).unwrap_or_else(|e| {
                Prepared::Error(boundary_error(&tool_use.name, &format!("unreadable answer from prepare: {e}")))
            });
            let request = match prepared {
                Prepared::Error(error) => return tool_error(task, &tool_use, description, error),
                Prepared::Proceed => None,
                Prepared::Approval(request) => Some(request),
            };
            if let Some(request) = request {
                match decide(shared, task, &route, &tool_use.name, &request) {
                    Decision::Allow(_) => {}
                    Decision::Deny(source) => {
                        let mut result = denied(&tool_use, description, request.denied_message.as_deref());
                        result.note = Some(format!("denied by {source:?} rule for {}", tool_use.name));
                        return result;
                    }
                    Decision::Ask(_) => match ask(shared, task, &tool_use, request).await {
                        Ok(typed) => feedback = typed,
                        Err((message, note, typed)) => {
                            let mut result = denied(&tool_use, description, message.as_deref());
                            result.note = note;
                            result.feedback = typed;
                            return result;
                        }
                    },
                }
            }
            let limits = (shared.timeouts.call, shared.timeouts.cancel_grace);
            match run_phase(&route, Phase::Execute, call, task, limits, None).await {
                Ok(PhaseAnswer::Text(text) | PhaseAnswer::Executed(text)) => Ok(text),
                Err(error) => Err(error),
            }
        }
        Err(error) => Err(error),
    };
    let outcome = match executed {
        Ok(text) => Outcome::from_json(&text).unwrap_or_else(|e| {
            Outcome::Error(boundary_error(&tool_use.name, &format!("unreadable answer from execute: {e}")))
        }),
        Err(error) => Outcome::Error(phase_error(&route, &error)),
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
            }
        }
        Outcome::Error(error) => tool_error(task, &tool_use, description, error),
        Outcome::Denied => denied(&tool_use, description, None),
    };
    result.feedback = feedback;
    result
}

/// The policy's decision on an approval request.
fn decide(shared: &Shared, task: &TaskShared, route: &Route, tool: &str, request: &ApprovalRequest) -> Decision {
    let policy_request = PolicyRequest {
        tool,
        builtin: route.meta.id.is_builtin(),
        capabilities: &route.meta.capabilities,
        inside_workspace: request.paths.iter().all(|p| task.workspace.contains(Path::new(p))),
        mcp_auto_approve: false,
        session_allowed: task.always_allow.contains(tool),
    };
    shared.policy.decide(&policy_request)
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
    let prompt = ApprovalPrompt {
        tool: tool_use.name.clone(),
        kind: request.kind,
        message: request.message,
        paths: request.paths,
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
    let Some(route) = shared.route(name) else {
        return;
    };
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

fn json_kind(value: &Value) -> &'static str {
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
    let writes =
        route.meta.capabilities.iter().any(|c| c == capability::WRITES_FILES || c == capability::RUNS_COMMANDS);
    let message = match error {
        PhaseError::Failed(message) => format!("Error executing {tool}: {message}"),
        PhaseError::TimedOut(limit) => format!(
            "Error executing {tool}: the tool did not finish within {} ms and was stopped waiting for.{}",
            limit.as_millis(),
            if writes { " Its changes may still complete: check the result before retrying." } else { "" }
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
    let result = ToolResult::text(tool_use, description, ResultStatus::Error, messages::tool_error(&error.message));
    if error.mistake {
        mistake(task, result)
    } else {
        result
    }
}

fn denied(tool_use: &ToolUse, description: String, message: Option<&str>) -> ToolResult {
    let text = message.unwrap_or(messages::TOOL_DENIED).to_owned();
    ToolResult::text(tool_use, description, ResultStatus::Denied, text)
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
