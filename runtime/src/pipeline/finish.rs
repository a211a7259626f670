//! The finish stage: a tool's answer (or the boundary's failure) as the result the model reads, the mistake
//! count and Cline's loop detection, and the PostToolUse hooks that see the result.

use crate::actors::tool_actor::PhaseError;
use crate::messages;
use crate::registry::coordinator::Route;
use crate::task::TaskShared;
use crate::types::{ResultStatus, ToolResult, ToolUse};
use std::sync::atomic::Ordering;
use toolshed_plugin_api::{capability, ToolError};

/// Cline's loop detection: the same tool with the same parameters (keys sorted, `task_progress` left out)
/// three times in a row appends `repeatedToolCall`; five times sets the mistake count to the host's limit.
pub(super) fn detect_loop(task: &TaskShared, result: &mut ToolResult, signature: u128) {
    const SOFT: u32 = 3;
    const HARD: u32 = 5;
    let mut last = match task.last_call.lock() {
        Ok(last) => last,
        Err(poisoned) => poisoned.into_inner(),
    };
    if last.0 == result.name && last.1 == signature {
        last.2 += 1;
    } else {
        // The name's buffer is reused: most calls repeat a tool just called.
        last.0.clone_from(&result.name);
        last.1 = signature;
        last.2 = 1;
    }
    if last.2 == SOFT {
        result.context_after.insert(0, messages::repeated_tool_call(&result.name, SOFT));
    }
    if last.2 == HARD {
        task.mistakes.store(task.max_mistakes, Ordering::Relaxed);
    }
}

pub(super) fn boundary_error(tool: &str, message: &str) -> ToolError {
    ToolError { message: format!("Error executing {tool}: {message}"), mistake: false }
}

pub(super) fn phase_error(route: &Route, error: &PhaseError) -> ToolError {
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

pub(super) fn mistake(task: &TaskShared, result: ToolResult) -> ToolResult {
    task.mistakes.fetch_add(1, Ordering::Relaxed);
    result
}

pub(super) fn tool_error(task: &TaskShared, tool_use: &ToolUse, description: String, error: ToolError) -> ToolResult {
    let result = ToolResult::plain(tool_use, description, ResultStatus::Error, messages::tool_error(&error.message));
    if error.mistake {
        mistake(task, result)
    } else {
        result
    }
}

pub(super) fn denied(tool_use: &ToolUse, description: String, message: Option<&str>) -> ToolResult {
    let text = message.unwrap_or(messages::TOOL_DENIED).to_owned();
    ToolResult::plain(tool_use, description, ResultStatus::Denied, text)
}
