//! Cline's model-facing texts (apps/vscode/src/core/prompts/responses.ts), kept byte-for-byte.

/// `toolError(e)`.
pub fn tool_error(error: &str) -> String {
    format!("The tool execution failed with the following error:\n<error>\n{error}\n</error>")
}

/// `toolDenied()`.
pub const TOOL_DENIED: &str = "The user denied this operation.";

/// `missingToolParameterError(p)`: one text for the runtime and every plugin, kept in the SDK.
pub use toolshed_plugin_api::result::missing_parameter_text as missing_parameter;

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
