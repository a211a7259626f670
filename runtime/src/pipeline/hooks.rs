//! PreToolUse and PostToolUse hooks: host callbacks registered on the [`crate::RuntimeBuilder`] and commands
//! configured in `[hooks]`, run around every tool call.
//!
//! Commands speak Claude Code's hook protocol, so hooks written for it work unchanged: the call as JSON on
//! stdin (`hook_event_name`, `session_id` (the task id), `cwd`, `tool_name`, `tool_input`, `tool_use_id`, and
//! for PostToolUse `tool_response`); exit 0 allows (stdout may hold a JSON reply), exit 2 blocks with stderr
//! as the reason, any other exit is a hook failure that is logged and ignored. So is a hook that runs past
//! `[hooks] timeout_ms` (one deadline for the whole exchange: writing its input, reading its output) or prints
//! more than `[hooks] max_output_bytes` on stdout or stderr: it is killed with everything it started. A JSON reply may carry
//! `decision` (`block` / `approve`) and `reason`, or `hookSpecificOutput` with `permissionDecision` (`allow`,
//! `deny`, `ask`), `permissionDecisionReason` and `additionalContext`; Cline's own reply shape (`cancel`,
//! `errorMessage`, `contextModification`) is read too.
//!
//! PreToolUse hooks run after the tool's own validation and before the approval policy: a denial refuses the
//! call with Cline's `toolDenied()` text before anyone is asked, `ask` makes the policy ask, and `allow`
//! spares the user the question (a configured `deny` rule still wins). Context a hook adds reaches the model
//! as Cline's `<hook_context source="…" type="…">` block.

use crate::child_process::clean::{EnvRule, Inherit};
use crate::services::process::Tree;
use crate::types::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use std::future::Future;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc};
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

/// A hook's matcher that is not a valid regex.
#[derive(Debug, Clone, thiserror::Error)]
#[error("invalid hook matcher {pattern:?}: {source}")]
pub struct HookMatcherError {
    /// The matcher as configured (trimmed).
    pub pattern: String,
    /// Why the regex does not compile.
    #[source]
    pub source: regex::Error,
}

/// Every hook of a runtime.
#[derive(Clone)]
pub(crate) struct Hooks {
    pre: Vec<Hook>,
    post: Vec<Hook>,
    limits: Limits,
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
    /// Hooks whose commands get `timeout` for the whole exchange and may print `max_output` bytes on each
    /// stream.
    pub fn new(timeout: Duration, max_output: u64) -> Self {
        let env = Arc::new(EnvRule::default());
        Self { pre: Vec::new(), post: Vec::new(), limits: Limits { timeout, max_output, env } }
    }

    /// Starts hook commands under `env`'s rule for the environment.
    pub fn with_env(mut self, env: EnvRule) -> Self {
        self.limits.env = Arc::new(env);
        self
    }

    pub fn add_callback(
        &mut self,
        event: HookEvent,
        matcher: Option<&str>,
        hook: HookFn,
    ) -> Result<(), HookMatcherError> {
        self.add(event, matcher, HookKind::Callback(hook))
    }

    pub fn add_command(
        &mut self,
        event: HookEvent,
        matcher: Option<&str>,
        command: &str,
    ) -> Result<(), HookMatcherError> {
        self.add(event, matcher, HookKind::Command(command.to_owned()))
    }

    fn add(&mut self, event: HookEvent, matcher: Option<&str>, kind: HookKind) -> Result<(), HookMatcherError> {
        let matcher = match matcher.map(str::trim) {
            None | Some("" | "*") => None,
            Some(pattern) => Some(
                regex::Regex::new(&format!("^(?:{pattern})$"))
                    .map_err(|source| HookMatcherError { pattern: pattern.to_owned(), source })?,
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
                    match run_command(command.clone(), &input, cwd.clone(), self.limits.clone()).await {
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

/// What bounds one command hook: the whole exchange's time and each stream's size.
#[derive(Debug, Clone)]
struct Limits {
    /// `[hooks] timeout_ms`: from the start to the answer, writing the input and reading the output included.
    timeout: Duration,
    /// `[hooks] max_output_bytes`: the most read from stdout, and from stderr.
    max_output: u64,
    /// What of the host's environment a hook gets.
    env: Arc<EnvRule>,
}

/// Runs a command hook on a thread of its own (the host's executor may be any).
async fn run_command(command: String, input: &HookInput, cwd: PathBuf, limits: Limits) -> Result<HookOutcome, String> {
    let stdin = serde_json::to_vec(input).map_err(|e| e.to_string())?;
    let event = input.hook_event_name;
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("toolshed-hook".to_owned())
        .spawn(move || {
            let _ = tx.send(run_blocking(&command, stdin, &cwd, limits));
        })
        .map_err(|e| format!("cannot start the hook thread: {e}"))?;
    let (code, stdout, stderr) = rx.await.map_err(|_| "the hook thread ended without an answer".to_owned())??;
    interpret(event, code, &stdout, &stderr)
}

/// What the threads around a running hook report.
enum Event {
    /// The shell exited (it is left unreaped until its tree is gone).
    Exited(ExitStatus),
    /// A stream reached its end: 0 is stdout, 1 stderr.
    Read(usize, Vec<u8>),
    /// A stream went over `[hooks] max_output_bytes`.
    Overflow(usize),
}

const STREAMS: [&str; 2] = ["stdout", "stderr"];

/// Runs the hook in a process tree of its own and exchanges its input and output under one deadline.
///
/// The input is written on a thread of its own while both outputs are read, so a hook that prints before it
/// reads (or never reads) cannot block the exchange; a hook that closes its input early (`true`) gets
/// `EPIPE` on that thread only, and its exit status and output still decide. At the deadline, or when a
/// stream passes the cap, the whole tree is killed and the hook counts as failed. When the shell exits,
/// what it left running (a `sleep 1000 &`) is killed too, so its pipes close and nothing outlives the hook.
fn run_blocking(command: &str, stdin: Vec<u8>, cwd: &Path, limits: Limits) -> Result<(i32, String, String), String> {
    let max_output = limits.max_output;
    let deadline = Instant::now() + limits.timeout;
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut tree =
        Tree::spawn(cmd, Inherit::User(&limits.env)).map_err(|e| format!("cannot start hook command: {e}"))?;
    let (events, received) = mpsc::channel();
    let child = tree.child();
    let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let pid = child.id();
    let mut started = vec![spawn_named("toolshed-hook-in", move || write_input(pipes.0, &stdin))];
    let streams: [Option<Box<dyn Read + Send>>; 2] =
        [pipes.1.map(|p| Box::new(p) as Box<dyn Read + Send>), pipes.2.map(|p| Box::new(p) as Box<dyn Read + Send>)];
    for (index, pipe) in streams.into_iter().enumerate() {
        let events = events.clone();
        started.push(spawn_named("toolshed-hook-out", move || {
            let _ = events.send(read_capped(index, pipe, max_output));
        }));
    }
    let exits = events;
    // The shell is waited for without being reaped, so its pid and group id stay the tree's until `tree`
    // goes.
    started.push(spawn_named("toolshed-hook-wait", move || {
        let _ = exits.send(Event::Exited(crate::services::process::exit_status(pid as i32)));
    }));
    if let Some(Err(e)) = started.into_iter().find(Result::is_err) {
        return Err(format!("cannot start the threads that talk to the hook: {e}"));
    }
    let timed_out = || format!("hook command timed out after {} ms ([hooks] timeout_ms)", limits.timeout.as_millis());
    let mut status = None;
    let mut outputs: [Option<Vec<u8>>; 2] = [None, None];
    while status.is_none() || outputs.iter().any(Option::is_none) {
        let now = Instant::now();
        if now >= deadline {
            return Err(timed_out());
        }
        // Now and then the tree is surveyed, so a process that leaves the hook's group is still known.
        match received.recv_timeout((deadline - now).min(Duration::from_millis(200))) {
            Ok(Event::Exited(exit)) => {
                status = Some(exit);
                // What the hook left running would hold its pipes open: it ends with the hook.
                tree.kill();
            }
            Ok(Event::Read(index, bytes)) => outputs[index] = Some(bytes),
            Ok(Event::Overflow(index)) => {
                return Err(format!(
                    "hook command printed more than {} bytes on {} ([hooks] max_output_bytes); it was stopped",
                    limits.max_output, STREAMS[index]
                ))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => tree.survey(),
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err("the hook's threads ended early".to_owned()),
        }
    }
    let code = status.and_then(|s| s.code()).unwrap_or(-1);
    let [stdout, stderr] = outputs.map(|bytes| String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned());
    Ok((code, stdout, stderr))
}

fn spawn_named(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new().name(name.to_owned()).spawn(f).map(drop)
}

/// Writes the hook's input and closes its stdin. A hook may stop reading (or never start): the write then
/// fails with `EPIPE`, which ends this thread and nothing else.
fn write_input(pipe: Option<ChildStdin>, input: &[u8]) {
    let Some(mut pipe) = pipe else {
        return;
    };
    // The `toolshed` binary ignores SIGPIPE, but a host embedding the runtime may not: blocked on this thread,
    // the signal a write to a closed pipe raises stays pending here (and goes with the thread) instead of
    // ending the process.
    let _ = nix::sys::signal::SigSet::from(nix::sys::signal::Signal::SIGPIPE).thread_block();
    match pipe.write_all(input) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            tracing::debug!("the hook closed its input before reading all of it");
        }
        Err(e) => tracing::debug!("writing the hook's input failed: {e}"),
    }
}

/// One output stream of the hook, to its end, or [`Event::Overflow`] once it passes `cap`.
fn read_capped(index: usize, pipe: Option<impl Read>, cap: u64) -> Event {
    let mut bytes = Vec::new();
    if let Some(pipe) = pipe {
        // One byte past the cap tells a stream that reached it from one that went over. A read error ends
        // the stream like its end would.
        let _ = pipe.take(cap.saturating_add(1)).read_to_end(&mut bytes);
    }
    if bytes.len() as u64 > cap {
        Event::Overflow(index)
    } else {
        Event::Read(index, bytes)
    }
}

/// The start of a hook's stderr, for a log line: up to a megabyte may have been read.
fn excerpt(text: &str) -> std::borrow::Cow<'_, str> {
    const MAX_CHARS: usize = 2000;
    match text.char_indices().nth(MAX_CHARS) {
        Some((end, _)) => format!("{}… ({} bytes in all)", &text[..end], text.len()).into(),
        None => text.into(),
    }
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
        other => return Err(format!("hook command failed with exit code {other}: {}", excerpt(stderr.trim()))),
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
    fn a_bad_matcher_keeps_the_regex_error_as_its_source() {
        let mut hooks = Hooks::new(Duration::from_secs(1), 1024);
        let err = hooks.add_command(HookEvent::PreToolUse, Some(" (read "), "true").unwrap_err();
        assert_eq!(err.pattern, "(read");
        let source = std::error::Error::source(&err).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some(err.source.to_string().as_str()));
        assert_eq!(err.to_string(), format!("invalid hook matcher \"(read\": {}", err.source));
    }

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
