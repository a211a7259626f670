//! Cline's `attempt_completion`: presents the result, runs the optional demo command through the host's
//! `tool.call` (execute_command's whole pipeline: permissions, approval, timeouts), asks the user, and either
//! completes the task (`task.complete`, which the host sees) or returns the user's feedback.
//!
//! Double-check mode (`[tasks] double_check_completion`, Cline's `doubleCheckCompletionEnabled`): the first call
//! of each pair returns Cline's re-verify prompt; the flag lives in the task's state.

use serde::Deserialize;
use toolshed_plugin_api::sdk::conversation;
use toolshed_plugin_api::services::{self, TaskTextRequest, ToolCallRequest};
use toolshed_plugin_api::{
    export_plugin, result, Block, Failure, HostClient, Outcome, Tool, ToolCall, ToolDeclaration, ToolError, ToolInit,
};

mod spec;

/// Cline's `TASK_PREVIEW_MAX_CHARS`.
const TASK_PREVIEW_MAX_CHARS: usize = 8000;
/// The task-state key of the double-check flag.
const PENDING_KEY: &str = "attempt_completion.double_check_pending";
/// The first block of every answered completion.
pub const DONE: &str = "[attempt_completion] Result: Done";
/// What precedes the user's feedback.
pub const FEEDBACK_INTRO: &str =
    "The user has provided feedback on the results. Consider their input to continue the task, and then attempt completion again.";

/// The tool's input.
#[derive(Debug, Deserialize)]
pub struct AttemptCompletionArgs {
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    result: Option<String>,
    /// Cline falls back to a `response` parameter when `result` is missing.
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    response: Option<String>,
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    command: Option<String>,
}

/// The handler.
pub struct AttemptCompletion;

/// Cline's double-check prompt, with the task's first message when the host gave it.
pub fn double_check_text(initial_task: Option<&str>) -> String {
    let section = match initial_task.map(str::trim).filter(|t| !t.is_empty()) {
        Some(task) => {
            let preview = match task.char_indices().nth(TASK_PREVIEW_MAX_CHARS) {
                Some((cut, _)) => format!("{}\n...[truncated]", &task[..cut]),
                None => task.to_owned(),
            };
            format!("\n\n<initial_task>\n{preview}\n</initial_task>")
        }
        None => String::new(),
    };
    format!(
        "Before completing, re-verify your work against the original task requirements. Check that:\n1. All requested changes have been made\n2. No steps were skipped or partially completed\n3. Edge cases and error handling are addressed\n4. The solution matches what was asked for, not just what was convenient\n5. Output files contain exactly what was specified--no extra columns, fields, debug output, or commentary\n6. If the task specifies numerical thresholds or accuracy targets, verify your result meets the criteria. If close but not passing, iterate rather than declaring completion{section}\n\nIf everything checks out, call attempt_completion again with your final result."
    )
}

impl Tool for AttemptCompletion {
    type Args = AttemptCompletionArgs;

    fn declaration() -> ToolDeclaration {
        let mut declaration = toolshed_plugin_api::declare("attempt_completion", spec::DESCRIPTION, &[]);
        // `prepare` always proceeds: the runtime skips it and runs `execute` at once.
        declaration.capabilities.push(toolshed_plugin_api::capability::PROCEEDS.to_owned());
        declaration.checks_parameters = true;
        // Cline's executor copies `response` into a missing `result` before anything else looks at the call.
        declaration.param_aliases.insert("response".to_owned(), "result".to_owned());
        declaration.specs = spec::specs();
        declaration
    }

    fn new(_: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(AttemptCompletion))
    }

    fn execute(&self, call: &ToolCall<AttemptCompletionArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let input = &call.input;
        let Some(result_text) =
            input.result.as_deref().filter(|r| !r.is_empty()).or(input.response.as_deref()).filter(|r| !r.is_empty())
        else {
            return Ok(result::missing_parameter("result"));
        };
        let settings = match host.task_settings(&call.task) {
            Ok(settings) => settings,
            Err(e) => return Ok(conversation::service_error::<services::TaskSettingsService>(&call.tool, &e)),
        };
        if settings.double_check_completion {
            let pending = host.state_get(PENDING_KEY).ok().flatten().is_some();
            if !pending {
                let _ = host.state_set(PENDING_KEY, Some(serde_json::Value::Bool(true)));
                return Ok(Outcome::Error(ToolError {
                    message: double_check_text(settings.initial_task.as_deref()),
                    mistake: false,
                }));
            }
            // Reset, so the next pair is double-checked again.
            let _ = host.state_set(PENDING_KEY, None);
        }

        host.say("completion_result", result_text, false);
        let mut command_blocks = Vec::new();
        if let Some(command) = input.command.as_deref().filter(|c| !c.trim().is_empty()) {
            // Cline treats the demo command as a safe command: approval follows the policy for commands.
            let request = ToolCallRequest {
                name: "execute_command".to_owned(),
                input: serde_json::json!({ "command": command, "requires_approval": "false" }),
            };
            match host.call::<services::ToolCallService>(&request) {
                Ok(answer) if answer.status == "denied" => return Ok(Outcome::Denied),
                Ok(answer) => command_blocks = answer.blocks,
                Err(e) => return Ok(conversation::service_error::<services::ToolCallService>(&call.tool, &e)),
            }
        }

        let answer = match host.ask("completion_result", "", Vec::new()) {
            Ok(answer) => answer,
            Err(e) => return Ok(conversation::service_error::<services::Ask>(&call.tool, &e)),
        };
        let feedback = answer.text.as_deref().filter(|t| !t.is_empty());
        if feedback.is_none() && answer.images.is_empty() {
            // Accepted, or nobody there to say otherwise: the task is complete.
            if let Err(e) = host.call::<services::TaskComplete>(&TaskTextRequest { text: result_text.to_owned() })
                && e.kind != toolshed_plugin_api::ServiceErrorKind::UnknownService
            {
                return Ok(conversation::service_error::<services::TaskComplete>(&call.tool, &e));
            }
            return Ok(result::text(DONE));
        }
        let mut blocks = vec![Block::Text { text: DONE.to_owned() }];
        blocks.extend(command_blocks);
        if let Some(text) = feedback {
            blocks.push(Block::Text { text: FEEDBACK_INTRO.to_owned() });
            blocks.push(Block::Text { text: format!("<feedback>\n{text}\n</feedback>") });
        }
        blocks.extend(
            answer.images.iter().map(|i| Block::Image { media_type: i.media_type.clone(), data: i.data.clone() }),
        );
        Ok(result::blocks(blocks))
    }
}

mod export {
    use super::{export_plugin, AttemptCompletion};

    export_plugin! { name: "attempt_completion", version: env!("CARGO_PKG_VERSION"), tools: [AttemptCompletion] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_double_check_prompt_quotes_the_task_cut_at_8000_characters() {
        let plain = double_check_text(None);
        assert!(plain.ends_with("iterate rather than declaring completion\n\nIf everything checks out, call attempt_completion again with your final result."));
        let quoted = double_check_text(Some("Build it"));
        assert!(quoted.contains("completion\n\n<initial_task>\nBuild it\n</initial_task>\n\nIf everything"));
        let long = double_check_text(Some(&"y".repeat(9000)));
        assert!(long.contains(&format!("{}\n...[truncated]\n</initial_task>", "y".repeat(8000))));
    }
}
