//! Cline's model-facing texts (apps/vscode/src/core/prompts/responses.ts), kept byte-for-byte.

/// `toolUseInstructionsReminder`.
pub const TOOL_USE_REMINDER: &str = "# Reminder: Instructions for Tool Use
Tool uses are formatted using XML-style tags. The tool name is enclosed in opening and closing tags, and each parameter is similarly enclosed within its own set of tags. Here's the structure:
<tool_name>
<parameter1_name>value1</parameter1_name>
<parameter2_name>value2</parameter2_name>
...
</tool_name>
For example:
<attempt_completion>
<result>
I have completed the task...
</result>
</attempt_completion>
Always adhere to this format for all tool uses to ensure proper parsing and execution.";

/// `toolError(e)`.
pub fn tool_error(error: &str) -> String {
    format!("The tool execution failed with the following error:\n<error>\n{error}\n</error>")
}

/// `toolDenied()`.
pub const TOOL_DENIED: &str = "The user denied this operation.";

/// `missingToolParameterError(p)`.
pub fn missing_parameter(param: &str) -> String {
    format!(
        "Missing value for required parameter '{param}'. Please retry with complete response.\n\n{TOOL_USE_REMINDER}"
    )
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
