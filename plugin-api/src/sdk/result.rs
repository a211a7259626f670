//! Result builders, so handlers read as what they return.

use crate::protocol::{ApprovalRequest, Block, Outcome, Prepared, Risk, ToolError};

/// A text result.
pub fn text(text: impl Into<String>) -> Outcome {
    Outcome::Success { blocks: vec![Block::Text { text: text.into() }], is_error: false }
}

/// A result of several blocks.
pub fn blocks(blocks: Vec<Block>) -> Outcome {
    Outcome::Success { blocks, is_error: false }
}

/// A result whose blocks report the tool's own failure (an MCP server's `isError`): the model reads them
/// as a result, and the host sees a tool error. Not a mistake of the model.
pub fn failed_blocks(blocks: Vec<Block>) -> Outcome {
    Outcome::Success { blocks, is_error: true }
}

/// An image block.
pub fn image(media_type: impl Into<String>, data: impl Into<String>) -> Block {
    Block::Image { media_type: media_type.into(), data: data.into() }
}

/// A tool error that counts as a mistake of the model.
pub fn mistake(message: impl Into<String>) -> Outcome {
    Outcome::Error(ToolError { message: message.into(), mistake: true })
}

/// A tool error that is not the model's fault (I/O, the environment).
pub fn error(message: impl Into<String>) -> Outcome {
    Outcome::Error(ToolError { message: message.into(), mistake: false })
}

/// The user refused.
pub fn denied() -> Outcome {
    Outcome::Denied
}

/// `prepare`'s refusal, counted as a mistake.
pub fn refuse(message: impl Into<String>) -> Prepared {
    Prepared::Error(ToolError { message: message.into(), mistake: true })
}

/// `prepare`'s approval request.
pub fn approval(kind: &str, message: impl Into<String>, paths: Vec<String>, risk: Risk) -> Prepared {
    Prepared::Approval(ApprovalRequest {
        kind: kind.to_owned(),
        message: message.into(),
        paths,
        risk,
        denied_message: None,
    })
}

/// Cline's `clineIgnoreError`: the message for a path `.clineignore` blocks (wrap it in `refuse` or
/// `mistake`). One text for every tool, so the model always reads the same words.
pub fn clineignore_error(path: &str) -> String {
    format!(
        "Access to {path} is blocked by the .clineignore file settings. You must try to continue in the task without using this file, or ask the user to update the .clineignore file."
    )
}

/// Cline's `toolUseInstructionsReminder`, which follows its missing-parameter text.
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

/// Cline's `missingToolParameterError(p)` text, reminder included. The runtime's own check of required
/// parameters uses it too, so a tool that checks for itself says exactly the same.
pub fn missing_parameter_text(name: &str) -> String {
    format!(
        "Missing value for required parameter '{name}'. Please retry with complete response.\n\n{TOOL_USE_REMINDER}"
    )
}

/// Cline's `truncateContent`: text longer than 400 KB (409,600 JavaScript string units) is cut there and
/// gets the `[FILE TRUNCATED: …]` notice (read_file and the MCP tools share it).
pub fn truncate_content(text: String) -> String {
    const MAX: usize = 400 * 1024;
    let units: usize = text.chars().map(char::len_utf16).sum();
    if units <= MAX {
        return text;
    }
    let (mut kept, mut cut) = (0usize, text.len());
    for (index, c) in text.char_indices() {
        if kept + c.len_utf16() > MAX {
            cut = index;
            break;
        }
        kept += c.len_utf16();
    }
    let mut out = text[..cut].to_owned();
    out.push_str(&format!(
        "\n\n---\n\n[FILE TRUNCATED: This content is {} but only the first {} is shown ({} truncated). Use search_files to find specific patterns, or execute_command with grep/head/tail for targeted reading.]",
        format_bytes(units as u64),
        format_bytes(MAX as u64),
        format_bytes((units - MAX) as u64)
    ));
    out
}

/// Cline's `formatBytes`: `{n} B`, `{x.x} KB` or `{x.x} MB`, base 1024, tenths rounded half up as
/// JavaScript's `toFixed(1)` does.
pub fn format_bytes(bytes: u64) -> String {
    const KB: u128 = 1024;
    const MB: u128 = 1024 * 1024;
    let n = u128::from(bytes);
    let (unit, base) = match n {
        n if n < KB => return format!("{n} B"),
        n if n < MB => ("KB", KB),
        _ => ("MB", MB),
    };
    let tenths = (n * 10 + base / 2) / base;
    format!("{}.{} {unit}", tenths / 10, tenths % 10)
}

/// A tool error (a mistake) saying a required parameter is missing, in Cline's words.
pub fn missing_parameter(name: &str) -> Outcome {
    mistake(missing_parameter_text(name))
}
