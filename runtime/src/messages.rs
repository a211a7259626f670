//! Cline's model-facing texts (apps/vscode/src/core/prompts/responses.ts), kept byte-for-byte.

/// `toolError(e)`.
pub fn tool_error(error: &str) -> String {
    format!("The tool execution failed with the following error:\n<error>\n{error}\n</error>")
}

/// `toolDenied()`.
pub const TOOL_DENIED: &str = "The user denied this operation.";

/// `missingToolParameterError(p)`: one text for the runtime and every plugin, kept in the SDK.
pub use toolshed_plugin_api::result::missing_parameter_text as missing_parameter;

/// Cline's XML tool-use reminder, which its missing-parameter texts end with.
pub use toolshed_plugin_api::result::TOOL_USE_REMINDER;

/// `text` without Cline's XML tool-use reminder and the blank line before it, for a model that calls tools
/// with JSON and never saw the XML format; `None` when it has none.
pub fn without_tool_use_reminder(text: &str) -> Option<String> {
    if !text.contains(TOOL_USE_REMINDER) {
        return None;
    }
    Some(text.replace(&format!("\n\n{TOOL_USE_REMINDER}"), "").replace(TOOL_USE_REMINDER, ""))
}

/// The feedback block pushed before a tool result when the user typed text with their answer.
pub fn feedback(text: &str) -> String {
    format!("The user provided the following feedback:\n<feedback>\n{text}\n</feedback>")
}

/// The result of a tool that returned nothing.
pub const EMPTY_RESULT: &str = "(tool did not return anything)";

/// The strict plan-mode refusal of file-modifying tools.
pub fn plan_mode_refusal(tool: &str) -> String {
    format!(
        "Tool '{tool}' is not available in PLAN MODE. This tool is restricted to ACT MODE for file modifications. Only use tools available for PLAN MODE when in that mode."
    )
}

/// `repeatedToolCall(name, count)`: appended to the 3rd identical call in a row.
pub fn repeated_tool_call(tool: &str, count: u32) -> String {
    format!(
        "Tool [{tool}] has been called {count} times consecutively with identical arguments. This is not making progress. Please use a different tool or different arguments instead of repeating the same call."
    )
}

/// `toolAlreadyUsed(name)`: a second tool in one message when parallel calls are off.
pub fn tool_already_used(tool: &str) -> String {
    format!(
        "Tool [{tool}] was not executed because a tool has already been used in this message. Only one tool may be used per message. You must assess the first tool's result before proceeding to use the next tool."
    )
}

/// A tool after a rejected one in the same message.
pub const SKIPPED_AFTER_REJECTION: &str = "Skipping tool due to user rejecting a previous tool.";

/// A tool still streaming when an earlier one in the message was rejected.
pub const INTERRUPTED_AFTER_REJECTION: &str =
    "Tool was interrupted and not executed due to user rejecting a previous tool.";

/// `tooManyMistakes(feedback)`: the user's guidance after the mistake limit.
pub fn too_many_mistakes(feedback: &str) -> String {
    format!(
        "You seem to be having trouble proceeding. The user has provided the following feedback to help guide you:\n<feedback>\n{feedback}\n</feedback>"
    )
}

/// What Cline asks the user when the mistake limit is reached, for Claude models.
pub const MISTAKE_LIMIT_CLAUDE: &str = "This may indicate a failure in his thought process or inability to use a tool properly, which can be mitigated with some user guidance (e.g. \"Try breaking down the task into smaller steps\").";

/// What Cline asks the user when the mistake limit is reached, for other models.
pub const MISTAKE_LIMIT_OTHER: &str = "Cline uses complex prompts and iterative task execution that may be challenging for less capable models. For best results, it's recommended to use Claude 4 Sonnet for its advanced agentic coding capabilities.";

/// Cline's YOLO-mode failure when the mistake limit is reached (nobody is there to ask).
pub fn yolo_too_many_mistakes(count: u32) -> String {
    format!(
        "[YOLO MODE] Task failed: Too many consecutive mistakes ({count}). The model may not be capable enough for this task. Consider using a more capable model."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_xml_reminder_leaves_and_the_rest_stays() {
        let error = tool_error(&missing_parameter("path"));
        assert_eq!(
            without_tool_use_reminder(&error).as_deref(),
            Some(
                "The tool execution failed with the following error:\n<error>\nMissing value for required parameter 'path'. Please retry with complete response.\n</error>"
            )
        );
        assert_eq!(without_tool_use_reminder("no reminder here"), None);
    }
}
