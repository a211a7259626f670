//! Cline's `execute_command` tool: a shell command run through the host's `process.*` services, with
//! Cline's permission and `.clineignore` gates in `prepare`, its timeouts, output limits and result texts.
//!
//! Where this differs from Cline, on purpose:
//! - A command that cannot be parsed for the permission check is denied (Cline allows it).
//! - A timed-out command's process group is killed (Cline's VS Code mode leaves it running); the result
//!   says so.
//! - Error-like lines inside an output cut are lifted into the result (see [`output`]).
//! - The model's `timeout` applies whenever it is given; Cline's default timeouts apply where Cline applies
//!   them (YOLO mode and subagent runs).
//! - A blank `command` (white space alone, which only a native call can send) gets Cline's empty-command
//!   text; Cline's `!command` lets it through to the shell.

#![deny(missing_docs)]

pub mod output;
pub mod permissions;
mod spec;

use regex::Regex;
use serde::Deserialize;
use std::time::{Duration, Instant};
use toolshed_plugin_api::sdk::{lenient_int, lenient_string};
use toolshed_plugin_api::services::{
    self, CommandsSettings, KillRequest, ReadRequest, ReadResponse, SpawnRequest, SpawnResponse,
};
use toolshed_plugin_api::{
    capability, result, Failure, HostClient, Outcome, Prepared, Risk, ServiceErrorKind, Tool, ToolCall,
    ToolDeclaration, ToolInit,
};

/// The input of `execute_command`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ExecuteCommandArgs {
    /// The shell command.
    #[serde(default, deserialize_with = "lenient_string")]
    command: Option<String>,
    /// `"true"`/`"false"`; required by the spec, read leniently.
    #[serde(default, deserialize_with = "lenient_string")]
    requires_approval: Option<String>,
    /// Seconds; a positive value wins over the defaults.
    #[serde(default, deserialize_with = "lenient_int")]
    timeout: Option<i64>,
}

/// The `execute_command` tool.
#[derive(Debug)]
pub struct ExecuteCommand {
    patterns: Patterns,
}

/// The regular expressions the tool matches with, compiled once per handler. They live in the handler, not
/// in statics, so their memory (a compiled regex keeps caches per thread that used it) goes with the handler
/// when the host unloads a replaced version of this plugin.
#[derive(Debug)]
struct Patterns {
    /// `@name:command`: a command for one workspace root.
    root_prefix: Option<Regex>,
    /// Commands Cline gives the long timeout.
    long_running: Vec<Regex>,
    /// Output lines that look like errors.
    notable: Option<Regex>,
}

impl Patterns {
    fn new() -> Self {
        let long_running = [
            r"(?i)\b(npm|pnpm|yarn|bun)\s+(install|ci|build|test)\b",
            r"(?i)\b(npm|pnpm|yarn|bun)\s+run\s+(build|test|lint|typecheck|check)\b",
            r"(?i)\b(pip|pip3|uv)\s+install\b",
            r"(?i)\b(poetry|pipenv)\s+install\b",
            r"(?i)\b(cargo|go|mvn|gradle|gradlew)\s+(build|test|check|install)\b",
            r"(?i)\b(make|cmake|ctest)\b",
            r"(?i)\b(pytest|tox|nox|jest|vitest|mocha)\b",
            r"(?i)\b(docker|podman)\s+build\b",
            r"(?i)\b(torchrun|deepspeed|accelerate\s+launch)\b",
            r"(?i)\bffmpeg\b",
            r"(?i)\bpython(?:\d+(?:\.\d+)?)?\s+.*\b(train|finetune)\b",
        ];
        Self {
            root_prefix: Regex::new(r"(?s)^@(\w+):(.+)$").ok(),
            long_running: long_running.iter().filter_map(|p| Regex::new(p).ok()).collect(),
            notable: output::notable_pattern(),
        }
    }
}

/// Cline's empty-command error.
const EMPTY_COMMAND: &str = "The 'command' parameter was empty. Provide the shell command to execute.\n\nExample:\n<execute_command>\n<command>cd /path && python -m pytest tests/</command>\n<requires_approval>false</requires_approval>\n</execute_command>";

/// Cline's `permissionDeniedError`.
fn permission_denied(reason: &str) -> String {
    format!("Command execution blocked by CLINE_COMMAND_PERMISSIONS: {reason}. You must try a different approach or ask the user to update the permission settings.")
}

impl Tool for ExecuteCommand {
    type Args = ExecuteCommandArgs;

    fn declaration() -> ToolDeclaration {
        ToolDeclaration {
            name: "execute_command".to_owned(),
            aliases: Vec::new(),
            capabilities: vec![capability::RUNS_COMMANDS.to_owned()],
            display: Some("[{tool} for '{command}']".to_owned()),
            specs: spec::specs(),
            checks_parameters: true,
            param_aliases: Default::default(),
        }
    }

    fn new(_init: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(ExecuteCommand { patterns: Patterns::new() }))
    }

    fn prepare(&self, call: &ToolCall<ExecuteCommandArgs>, host: &HostClient<'_>) -> Result<Prepared, Failure> {
        // Cline's order: the command, then `requires_approval`, then the permission and `.clineignore` gates.
        let command = match command_of(call) {
            Ok(command) => command,
            Err(refusal) => {
                host.say(
                    "error",
                    "Cline tried to use execute_command without value for required parameter 'command'. Retrying...",
                    false,
                );
                return Ok(refusal);
            }
        };
        if !approval_given(call) {
            return Ok(result::refuse(result::missing_parameter_text("requires_approval")));
        }
        let settings = settings(host);
        // Every check below looks at what `execute` will run, where it will run it: the command after its
        // `@root:` prefix is taken off, in that root.
        // The approval still shows the command as the model wrote it, root prefix included.
        let (shown, (command, cwd)) = (command.clone(), split_root_prefix(&command, call, &self.patterns));
        if let Some(json) = settings.permissions.as_deref().filter(|j| !j.trim().is_empty()) {
            let verdict = permissions::CommandPermissions::from_json(json).and_then(|rules| {
                rules.check(&command).map_err(|denial| permissions::denial_message(&command, &denial))
            });
            if let Err(message) = verdict {
                return Ok(result::refuse(permission_denied(&message)));
            }
        }
        match host.command_blocked_by_clineignore_in(&command, cwd.as_deref()) {
            Ok(Some(path)) => return Ok(result::refuse(result::clineignore_error(&path))),
            Ok(None) => {}
            Err(e) => return Ok(result::refuse(format!("Error executing command: {e}"))),
        }
        let asked = call.input.requires_approval.as_deref().is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let risk = if asked { Risk::High } else { Risk::Medium };
        Ok(result::approval("command", format!("Cline wants to execute this command: {shown}"), Vec::new(), risk))
    }

    fn execute(&self, call: &ToolCall<ExecuteCommandArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let command = match command_of(call) {
            Ok(command) => command,
            Err(_) => return Ok(result::mistake(EMPTY_COMMAND)),
        };
        if !approval_given(call) {
            return Ok(result::missing_parameter("requires_approval"));
        }
        let settings = settings(host);
        let (command, cwd) = split_root_prefix(&command, call, &self.patterns);
        let timeout = timeout_for(&command, call, &settings, &self.patterns);
        let notice = Duration::from_millis(settings.notice_ms);
        let notable = self.patterns.notable.clone();
        let outcome = run(host, &command, cwd, timeout, notice, notable, settings.scratch_dir);
        // Whatever the command did, files may have changed: the read cache starts over (as Cline does after
        // every command that ran).
        let _ = host.forget_reads(Vec::new());
        Ok(outcome)
    }
}

/// Whether `requires_approval` has a value: Cline's `!requiresApprovalRaw` (absent or empty; `false` is one).
fn approval_given(call: &ToolCall<ExecuteCommandArgs>) -> bool {
    call.input.requires_approval.as_deref().is_some_and(|value| !value.is_empty())
}

/// The command after Cline's checks and clean-ups, or `prepare`'s refusal.
fn command_of(call: &ToolCall<ExecuteCommandArgs>) -> Result<String, Prepared> {
    let raw = call.input.command.as_deref().unwrap_or_default();
    if raw.trim().is_empty() {
        return Err(result::refuse(EMPTY_COMMAND));
    }
    let mut command = raw.to_owned();
    // Gemini models send HTML entities and replacement characters in commands.
    if call.task.model_family.to_ascii_lowercase().contains("gemini") {
        command = command
            .replace("&gt;", ">")
            .replace("&lt;", "<")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&")
            .replace('\u{FFFD}', "");
    }
    // Cline removes a leading `cd {cwd} && `: the command already runs there.
    if let Some(rest) = command.strip_prefix(&format!("cd {} && ", call.task.cwd)) {
        command = rest.to_owned();
    }
    Ok(command)
}

fn settings(host: &HostClient<'_>) -> CommandsSettings {
    host.call::<services::CommandsSettingsService>(&services::Empty {}).unwrap_or(CommandsSettings {
        permissions: None,
        default_timeout_ms: 30_000,
        long_timeout_ms: 300_000,
        yolo: false,
        notice_ms: 15_000,
        scratch_dir: None,
    })
}

/// Cline's multi-root prefix `@name:command` (`\w` names only) runs the rest in that root.
fn split_root_prefix(
    command: &str,
    call: &ToolCall<ExecuteCommandArgs>,
    patterns: &Patterns,
) -> (String, Option<String>) {
    if let Some(captures) = patterns.root_prefix.as_ref().and_then(|re| re.captures(command)) {
        let (name, rest) = (&captures[1], &captures[2]);
        if let Some(root) = call.task.roots.iter().find(|r| r.name == name) {
            return (rest.trim().to_owned(), Some(root.path.clone()));
        }
    }
    (command.to_owned(), None)
}

/// The timeout: the model's positive `timeout`; else, where Cline applies timeouts (YOLO, subagent runs),
/// the long-running default for builds, installs and tests and the short default otherwise; else none.
fn timeout_for(
    command: &str,
    call: &ToolCall<ExecuteCommandArgs>,
    settings: &CommandsSettings,
    patterns: &Patterns,
) -> Option<Duration> {
    if let Some(seconds) = call.input.timeout.filter(|s| *s > 0) {
        return Some(Duration::from_secs(seconds.unsigned_abs()));
    }
    if !(settings.yolo || call.task.subagent) {
        return None;
    }
    let normalised = command.split_whitespace().collect::<Vec<_>>().join(" ");
    let long = patterns.long_running.iter().any(|re| re.is_match(&normalised));
    Some(Duration::from_millis(if long { settings.long_timeout_ms } else { settings.default_timeout_ms }))
}

enum Ending {
    Exited(ReadResponse),
    TimedOut(Duration),
    Cancelled,
}

fn run(
    host: &HostClient<'_>,
    command: &str,
    cwd: Option<String>,
    timeout: Option<Duration>,
    notice: Duration,
    notable: Option<Regex>,
    scratch_dir: Option<String>,
) -> Outcome {
    let spawned: SpawnResponse = match host.call::<services::ProcessSpawn>(&SpawnRequest {
        command: command.to_owned(),
        cwd,
        env: Default::default(),
    }) {
        Ok(spawned) => spawned,
        Err(e) => return result::error(format!("Error executing command: {e}")),
    };
    let mut collector = output::Collector::new(scratch_dir.map(std::path::PathBuf::from), notable);
    let started = Instant::now();
    let mut noticed = false;
    let kill = || {
        let _ = host.call::<services::ProcessKill>(&KillRequest { id: spawned.id });
    };
    let ending = loop {
        let wait = match timeout {
            Some(limit) => limit.saturating_sub(started.elapsed()).min(Duration::from_millis(250)),
            None => Duration::from_millis(250),
        };
        let read: Result<ReadResponse, _> = host.call::<services::ProcessRead>(&ReadRequest {
            id: spawned.id,
            wait_ms: wait.as_millis() as u64,
            max_bytes: 256 * 1024,
        });
        match read {
            Ok(chunk) => {
                if !chunk.output.is_empty() {
                    collector.push(&chunk.output);
                    host.say("command_output", &chunk.output, true);
                }
                // Cancelling the task also signals the group, so the shell may end by that signal first:
                // the cancellation is what happened.
                if host.is_cancelled() {
                    kill();
                    break Ending::Cancelled;
                }
                if chunk.done {
                    break Ending::Exited(chunk);
                }
            }
            Err(e) if e.kind == ServiceErrorKind::Cancelled => {
                kill();
                break Ending::Cancelled;
            }
            Err(e) => {
                kill();
                return result::error(format!("Error executing command: {e}"));
            }
        }
        if let Some(limit) = timeout.filter(|limit| started.elapsed() >= *limit) {
            kill();
            break Ending::TimedOut(limit);
        }
        if !noticed && started.elapsed() >= notice {
            noticed = true;
            host.say("command_status", &format!("Command is still running: {command}"), false);
        }
    };
    let collected = collector.finish();
    let out = &collected.text;
    let mut text = match &ending {
        Ending::Exited(done) => {
            let mut text = match (done.exit_code, &done.signal) {
                (Some(0), _) => "Command executed successfully (exit code 0).".to_owned(),
                (Some(code), _) => format!("Command failed with exit code {code}."),
                (None, Some(signal)) => format!("Command terminated by signal {signal}."),
                (None, None) => "Command executed.".to_owned(),
            };
            if !out.is_empty() {
                text.push_str(&format!("\nOutput:\n{out}"));
            }
            text
        }
        Ending::TimedOut(limit) => {
            let mut text = format!("Command execution timed out after {} seconds. ", limit.as_secs());
            if !out.is_empty() {
                text.push_str(&format!("\nOutput so far:\n{out}"));
            }
            text
        }
        Ending::Cancelled => {
            let mut text = "Command was cancelled by the user.".to_owned();
            if !out.is_empty() {
                text.push_str(&format!("\nOutput captured before cancellation:\n{out}"));
            }
            text
        }
    };
    if let Some(log) = &collected.log {
        text.push_str(&format!("\nFull output saved to: {}", log.display()));
    }
    result::text(text)
}

#[allow(missing_docs)]
mod export {
    toolshed_plugin_api::export_plugin! {
        name: "execute_command",
        version: env!("CARGO_PKG_VERSION"),
        tools: [super::ExecuteCommand],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolshed_plugin_api::TaskInfo;

    fn call(input: serde_json::Value) -> ToolCall<ExecuteCommandArgs> {
        ToolCall {
            tool: "execute_command".to_owned(),
            id: String::new(),
            input: serde_json::from_value(input).unwrap(),
            task: TaskInfo { cwd: "/w".to_owned(), ..TaskInfo::default() },
            approved: false,
        }
    }

    fn settings(yolo: bool) -> CommandsSettings {
        CommandsSettings {
            permissions: None,
            default_timeout_ms: 30_000,
            long_timeout_ms: 300_000,
            yolo,
            notice_ms: 0,
            scratch_dir: None,
        }
    }

    #[test]
    fn timeouts_follow_clines_modes_and_patterns() {
        let plain = call(serde_json::json!({"command": "ls"}));
        assert_eq!(timeout_for("ls", &plain, &settings(false), &Patterns::new()), None);
        assert_eq!(timeout_for("ls", &plain, &settings(true), &Patterns::new()), Some(Duration::from_secs(30)));
        assert_eq!(
            timeout_for("cargo   test --all", &plain, &settings(true), &Patterns::new()),
            Some(Duration::from_secs(300))
        );
        assert_eq!(
            timeout_for("python3.11 scripts/x.py --train", &plain, &settings(true), &Patterns::new()),
            Some(Duration::from_secs(300))
        );
        let given = call(serde_json::json!({"command": "ls", "timeout": "5"}));
        assert_eq!(timeout_for("ls", &given, &settings(false), &Patterns::new()), Some(Duration::from_secs(5)));
    }

    #[test]
    fn commands_are_cleaned_like_clines() {
        let mut c = call(serde_json::json!({"command": "cd /w && echo a &gt; b"}));
        c.task.model_family = "gemini-2.5".to_owned();
        assert_eq!(command_of(&c).ok(), Some("echo a > b".to_owned()));
        assert!(command_of(&call(serde_json::json!({"command": "  "}))).is_err());
    }

    #[test]
    fn root_prefixes_pick_the_root() {
        let mut c = call(serde_json::json!({"command": "x"}));
        c.task.roots = vec![toolshed_plugin_api::WorkspaceRoot { name: "api".into(), path: "/w/api".into() }];
        assert_eq!(
            split_root_prefix("@api:make test", &c, &Patterns::new()),
            ("make test".to_owned(), Some("/w/api".to_owned()))
        );
        assert_eq!(split_root_prefix("@web-app:ls", &c, &Patterns::new()), ("@web-app:ls".to_owned(), None));
        // Spaces after the prefix go; the command that runs is the rest, whatever it holds.
        assert_eq!(
            split_root_prefix("@api:  cat a\ncat b", &c, &Patterns::new()),
            ("cat a\ncat b".to_owned(), Some("/w/api".to_owned()))
        );
    }
}
