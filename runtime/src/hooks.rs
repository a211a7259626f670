//! PreToolUse and PostToolUse hooks: host callbacks registered on the [`crate::RuntimeBuilder`] and commands
//! configured in `[hooks]`, run around every tool call.
//!
//! Commands speak Claude Code's hook protocol, so hooks written for it work unchanged: the call as JSON on
//! stdin (`hook_event_name`, `session_id` (the task id), `cwd`, `tool_name`, `tool_input`, `tool_use_id`, and
//! for PostToolUse `tool_response`); exit 0 allows (stdout may hold a JSON reply), exit 2 blocks with stderr
//! as the reason, any other exit is a hook failure that is logged and ignored. A JSON reply may carry
//! `decision` (`block` / `approve`) and `reason`, or `hookSpecificOutput` with `permissionDecision` (`allow`,
//! `deny`, `ask`), `permissionDecisionReason` and `additionalContext`; Cline's own reply shape (`cancel`,
//! `errorMessage`, `contextModification`) is read too.
//!
//! PreToolUse hooks run after the tool's own validation and before the approval policy: a denial refuses the
//! call with Cline's `toolDenied()` text before anyone is asked, `ask` makes the policy ask, and `allow`
//! spares the user the question (a configured `deny` rule still wins). Context a hook adds reaches the model
//! as Cline's `<hook_context source="…" type="…">` block.

use crate::policy::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use std::future::Future;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum HookEvent {
    /// After the tool's validation, before approval and execution; may refuse the call.
    PreToolUse,
    /// After the tool ran; may add context for the model.
    PostToolUse,
}

impl HookEvent {
    /// Its name, as hooks and `<hook_context source>` spell it.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
        }
    }
}

/// What a hook is told: Claude Code's hook input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HookInput {
    /// `PreToolUse` or `PostToolUse`.
    pub hook_event_name: HookEvent,
    /// The task id (Claude Code's session).
    pub session_id: String,
    /// The task id again, under its own name.
    pub task_id: String,
    /// The task's primary workspace root.
    pub cwd: String,
    /// The tool called.
    pub tool_name: String,
    /// Its input.
    pub tool_input: Value,
    /// The tool-use id.
    pub tool_use_id: String,
    /// For PostToolUse: `{status, content}` with the result's blocks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<Value>,
}

/// A hook's permission decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookDecision {
    /// Run without asking (a configured deny rule still refuses).
    Allow,
    /// Refuse the call.
    Deny,
    /// Ask the user even if the policy would not.
    Ask,
}

/// What a hook answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookOutcome {
    /// Its decision; `None` leaves the call to the policy.
    pub decision: Option<HookDecision>,
    /// Why (for a denial: shown to the model as hook context and to the host in the result's note).
    pub reason: Option<String>,
    /// Extra context for the model.
    pub context: Option<String>,
}

impl HookOutcome {
    /// No opinion.
    pub fn pass() -> Self {
        Self::default()
    }

    /// Refuses the call.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self { decision: Some(HookDecision::Deny), reason: Some(reason.into()), context: None }
    }

    /// Adds context for the model.
    pub fn with_context(mut self, context: impl Into<String>) -> Self {
        self.context = Some(context.into());
        self
    }

    /// Sets the decision.
    pub fn with_decision(mut self, decision: HookDecision) -> Self {
        self.decision = Some(decision);
        self
    }
}

/// A host callback hook.
pub type HookFn = Arc<dyn Fn(HookInput) -> BoxFuture<HookOutcome> + Send + Sync>;

/// Wraps an async closure as a hook.
pub(crate) fn callback<F, Fut>(f: F) -> HookFn
where
    F: Fn(HookInput) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HookOutcome> + Send + 'static,
{
    Arc::new(move |input| Box::pin(f(input)))
}

#[derive(Clone)]
enum HookKind {
    Callback(HookFn),
    Command(String),
}

#[derive(Clone)]
struct Hook {
    /// Tool names it applies to: Claude Code's matcher, a regex matched against the whole name; `None` or
    /// `*` matches every tool.
    matcher: Option<regex::Regex>,
    kind: HookKind,
}

/// Every hook of a runtime.
#[derive(Clone, Default)]
pub(crate) struct Hooks {
    pre: Vec<Hook>,
    post: Vec<Hook>,
    timeout: Duration,
}

/// The merged answer of every hook for one event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub decision: Option<HookDecision>,
    pub reason: Option<String>,
    /// Formatted `<hook_context>` blocks, in hook order.
    pub context: Vec<String>,
}

impl Hooks {
    pub fn new(timeout: Duration) -> Self {
        Self { pre: Vec::new(), post: Vec::new(), timeout }
    }

    pub fn add_callback(&mut self, event: HookEvent, matcher: Option<&str>, hook: HookFn) -> Result<(), String> {
        self.add(event, matcher, HookKind::Callback(hook))
    }

    pub fn add_command(&mut self, event: HookEvent, matcher: Option<&str>, command: &str) -> Result<(), String> {
        self.add(event, matcher, HookKind::Command(command.to_owned()))
    }

    fn add(&mut self, event: HookEvent, matcher: Option<&str>, kind: HookKind) -> Result<(), String> {
        let matcher = match matcher.map(str::trim) {
            None | Some("" | "*") => None,
            Some(pattern) => Some(
                regex::Regex::new(&format!("^(?:{pattern})$"))
                    .map_err(|e| format!("invalid hook matcher {pattern:?}: {e}"))?,
            ),
        };
        let hook = Hook { matcher, kind };
        match event {
            HookEvent::PreToolUse => self.pre.push(hook),
            HookEvent::PostToolUse => self.post.push(hook),
        }
        Ok(())
    }

    pub fn has(&self, event: HookEvent) -> bool {
        match event {
            HookEvent::PreToolUse => !self.pre.is_empty(),
            HookEvent::PostToolUse => !self.post.is_empty(),
        }
    }

    /// Runs every hook of `input`'s event that matches its tool, in order; the first denial stops the rest.
    pub async fn run(&self, input: HookInput, cwd: PathBuf) -> Verdict {
        let event = input.hook_event_name;
        let hooks = match event {
            HookEvent::PreToolUse => &self.pre,
            HookEvent::PostToolUse => &self.post,
        };
        let mut verdict = Verdict::default();
        for hook in hooks {
            if hook.matcher.as_ref().is_some_and(|m| !m.is_match(&input.tool_name)) {
                continue;
            }
            let outcome = match &hook.kind {
                HookKind::Callback(f) => {
                    // A panicking host callback must not take the call down with it.
                    match futures_catch(f(input.clone())).await {
                        Some(outcome) => outcome,
                        None => {
                            tracing::warn!(hook = event.name(), tool = %input.tool_name, "a hook callback panicked");
                            continue;
                        }
                    }
                }
                HookKind::Command(command) => {
                    match run_command(command.clone(), &input, cwd.clone(), self.timeout).await {
                        Ok(outcome) => outcome,
                        Err(message) => {
                            tracing::warn!(hook = event.name(), command = %command, "{message}");
                            continue;
                        }
                    }
                }
            };
            if let Some(context) = outcome.context.as_deref().and_then(|c| hook_context(event.name(), c)) {
                verdict.context.push(context);
            }
            match outcome.decision {
                Some(HookDecision::Deny) => {
                    verdict.decision = Some(HookDecision::Deny);
                    verdict.reason = outcome.reason;
                    return verdict;
                }
                Some(HookDecision::Ask) => verdict.decision = Some(HookDecision::Ask),
                Some(HookDecision::Allow) if verdict.decision.is_none() => verdict.decision = Some(HookDecision::Allow),
                Some(HookDecision::Allow) | None => {}
            }
            if verdict.reason.is_none() {
                verdict.reason = outcome.reason;
            }
        }
        verdict
    }
}

/// Awaits a host future, turning a panic into `None`.
async fn futures_catch<T>(future: BoxFuture<T>) -> Option<T> {
    use std::panic::AssertUnwindSafe;
    let mut future = future;
    std::future::poll_fn(move |cx| match std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
        Ok(std::task::Poll::Ready(value)) => std::task::Poll::Ready(Some(value)),
        Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
        Err(_) => std::task::Poll::Ready(None),
    })
    .await
}

/// Cline's hook context block: a first line `TYPE: text` sets the type (lower-cased), else `general`.
pub(crate) fn hook_context(source: &str, context: &str) -> Option<String> {
    let text = context.trim();
    if text.is_empty() {
        return None;
    }
    let mut lines = text.split('\n');
    let first = lines.next().unwrap_or_default();
    let typed = first
        .split_once(':')
        .filter(|(kind, _)| !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'));
    let (kind, content) = match typed {
        Some((kind, rest)) => {
            let rest = rest.trim_start();
            let remaining: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).collect();
            let content = if rest.is_empty() {
                remaining.join("\n")
            } else {
                std::iter::once(rest).chain(remaining).collect::<Vec<_>>().join("\n")
            };
            (kind.to_ascii_lowercase(), content)
        }
        None => ("general".to_owned(), text.to_owned()),
    };
    Some(format!("<hook_context source=\"{source}\" type=\"{kind}\">\n{content}\n</hook_context>"))
}

/// Runs a command hook on a thread of its own (the host's executor may be any), killing its process group
/// at the timeout.
async fn run_command(
    command: String,
    input: &HookInput,
    cwd: PathBuf,
    timeout: Duration,
) -> Result<HookOutcome, String> {
    let stdin = serde_json::to_vec(input).map_err(|e| e.to_string())?;
    let event = input.hook_event_name;
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("toolshed-hook".to_owned())
        .spawn(move || {
            let _ = tx.send(run_blocking(&command, &stdin, &cwd, timeout));
        })
        .map_err(|e| format!("cannot start the hook thread: {e}"))?;
    let (code, stdout, stderr) = rx.await.map_err(|_| "the hook thread ended without an answer".to_owned())??;
    interpret(event, code, &stdout, &stderr)
}

fn run_blocking(
    command: &str,
    stdin: &[u8],
    cwd: &std::path::Path,
    timeout: Duration,
) -> Result<(i32, String, String), String> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start hook command: {e}"))?;
    if let Some(mut pipe) = child.stdin.take() {
        // A hook that does not read its input must not block us: ignore a closed pipe.
        let _ = pipe.write_all(stdin);
    }
    let readers: Vec<_> = [
        child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>),
        child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .map(|pipe| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut out);
            }
            String::from_utf8_lossy(&out).into_owned()
        })
    })
    .collect();
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(child.id() as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
                let _ = child.wait();
                return Err(format!("hook command timed out after {} ms ([hooks] timeout_ms)", timeout.as_millis()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(format!("waiting for the hook command failed: {e}")),
        }
    };
    let mut texts = readers.into_iter().map(|r| r.join().unwrap_or_default());
    let stdout = texts.next().unwrap_or_default();
    let stderr = texts.next().unwrap_or_default();
    Ok((status.code().unwrap_or(-1), stdout, stderr))
}

/// Reads a command hook's exit code and output as Claude Code does.
fn interpret(event: HookEvent, code: i32, stdout: &str, stderr: &str) -> Result<HookOutcome, String> {
    match code {
        0 => {}
        2 => {
            let reason = stderr.trim().to_owned();
            return Ok(match event {
                HookEvent::PreToolUse => HookOutcome::deny(reason),
                // The tool already ran: the reason reaches the model.
                HookEvent::PostToolUse => HookOutcome::pass().with_context(reason),
            });
        }
        other => return Err(format!("hook command failed with exit code {other}: {}", stderr.trim())),
    }
    let text = stdout.trim();
    if !text.starts_with('{') {
        return Ok(HookOutcome::pass());
    }
    let reply: Value = serde_json::from_str(text).map_err(|e| format!("hook printed invalid JSON: {e}"))?;
    let string = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned).filter(|s| !s.trim().is_empty());
    let specific = reply.get("hookSpecificOutput");
    let mut outcome = HookOutcome {
        decision: None,
        reason: string(reply.get("reason")),
        context: string(specific.and_then(|s| s.get("additionalContext")))
            .or_else(|| string(reply.get("contextModification"))),
    };
    let blocked = match reply.get("decision").and_then(Value::as_str) {
        Some("block") => Some(HookDecision::Deny),
        Some("approve") => Some(HookDecision::Allow),
        _ => None,
    };
    let permission = match specific.and_then(|s| s.get("permissionDecision")).and_then(Value::as_str) {
        Some("allow") => Some(HookDecision::Allow),
        Some("deny") => Some(HookDecision::Deny),
        Some("ask") => Some(HookDecision::Ask),
        _ => None,
    };
    if permission.is_some() {
        outcome.reason = string(specific.and_then(|s| s.get("permissionDecisionReason"))).or(outcome.reason);
    }
    let cancelled = reply.get("cancel").and_then(Value::as_bool) == Some(true)
        || reply.get("continue").and_then(Value::as_bool) == Some(false);
    if cancelled {
        outcome.reason =
            outcome.reason.or_else(|| string(reply.get("errorMessage"))).or_else(|| string(reply.get("stopReason")));
    }
    let decision = if cancelled { Some(HookDecision::Deny) } else { permission.or(blocked) };
    match (event, decision) {
        // After the call a block cannot undo it; its reason reaches the model instead.
        (HookEvent::PostToolUse, Some(HookDecision::Deny)) => {
            if let Some(reason) = outcome.reason.take() {
                outcome.context = Some(match outcome.context.take() {
                    Some(context) => format!("{reason}\n{context}"),
                    None => reason,
                });
            }
        }
        (_, decision) => outcome.decision = decision,
    }
    Ok(outcome)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn context_blocks_as_cline_formats_them() {
        assert_eq!(
            hook_context("PostToolUse", "  lint ok \n").unwrap(),
            "<hook_context source=\"PostToolUse\" type=\"general\">\nlint ok\n</hook_context>"
        );
        assert_eq!(
            hook_context("PreToolUse", "WORKSPACE_RULES: use tabs\n\nno spaces").unwrap(),
            "<hook_context source=\"PreToolUse\" type=\"workspace_rules\">\nuse tabs\nno spaces\n</hook_context>"
        );
        assert_eq!(
            hook_context("PreToolUse", "SECURITY:\nchecked").unwrap(),
            "<hook_context source=\"PreToolUse\" type=\"security\">\nchecked\n</hook_context>"
        );
        assert_eq!(hook_context("PreToolUse", "  "), None);
    }

    #[test]
    fn replies_read_as_claude_code_does() {
        let pre = HookEvent::PreToolUse;
        assert_eq!(interpret(pre, 2, "", "no writes here\n").unwrap(), HookOutcome::deny("no writes here"));
        assert_eq!(interpret(pre, 0, "plain text", "").unwrap(), HookOutcome::pass());
        assert!(interpret(pre, 1, "", "boom").is_err());
        let json = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "nope"}}"#;
        assert_eq!(interpret(pre, 0, json, "").unwrap(), HookOutcome::deny("nope"));
        let json = r#"{"decision": "block", "reason": "r"}"#;
        assert_eq!(interpret(pre, 0, json, "").unwrap(), HookOutcome::deny("r"));
        let json = r#"{"hookSpecificOutput": {"permissionDecision": "ask", "additionalContext": "careful"}}"#;
        let outcome = interpret(pre, 0, json, "").unwrap();
        assert_eq!(outcome.decision, Some(HookDecision::Ask));
        assert_eq!(outcome.context.as_deref(), Some("careful"));
        let json = r#"{"cancel": true, "errorMessage": "stop", "contextModification": ""}"#;
        assert_eq!(interpret(pre, 0, json, "").unwrap(), HookOutcome::deny("stop"));
        let post = HookEvent::PostToolUse;
        let json = r#"{"decision": "block", "reason": "tests fail"}"#;
        assert_eq!(interpret(post, 0, json, "").unwrap(), HookOutcome::pass().with_context("tests fail"));
    }
}
