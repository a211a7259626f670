//! Cline's model-facing texts for file edits (apps/vscode/src/core/prompts/responses.ts), kept byte for byte,
//! and the few of ours for the failures Cline does not have.

pub use toolshed_plugin_api::result::{missing_parameter_text as missing_parameter, TOOL_USE_REMINDER};

/// `clineIgnoreError(path)`, the SDK's one text for every tool.
pub fn clineignore(path: &str) -> String {
    toolshed_plugin_api::result::clineignore_error(path)
}

/// `replaceInFileMissingDiffError(relPath)`.
pub fn missing_diff(rel_path: &str) -> String {
    format!(
        "Failed to edit '{rel_path}': The 'diff' parameter was empty.\n\n\
         The diff parameter must contain SEARCH/REPLACE blocks in this format:\n\
         <<<<<<< SEARCH\n\
         exact lines to find\n\
         =======\n\
         replacement lines\n\
         >>>>>>> REPLACE\n\n\
         Rules:\n\
         - The SEARCH block must match existing file content exactly (including whitespace and indentation)\n\
         - You can include multiple SEARCH/REPLACE blocks in a single diff parameter\n\
         - If you're unsure of the exact content, use read_file first to see the current file"
    )
}

/// `writeToFileMissingContentError(relPath, consecutiveFailures, undefined)`: the guidance grows firmer with
/// each consecutive failure. The context-window warning needs token counts a tool does not see, so it is
/// never added.
pub fn missing_content(rel_path: &str, consecutive_failures: u32) -> String {
    let base = format!(
        "Failed to write to '{rel_path}': The 'content' parameter was empty. This typically happens when the file content is too large to generate in a single response, or when output token limits are reached before the content parameter is fully written."
    );
    if consecutive_failures >= 3 {
        return format!(
            "{base}\n\n\
             CRITICAL: You have failed to write this file {consecutive_failures} times in a row. You MUST change your approach — do NOT retry write_to_file for this file again.\n\n\
             Required action — choose ONE of these strategies:\n\
             1. **Create an empty file first, then use replace_in_file** to add content in small sections (recommended)\n\
             2. **Break the file into multiple smaller files** if architecturally appropriate\n\
             3. **Write a minimal skeleton** using write_to_file (just imports, class/function signatures, no implementations), then use replace_in_file to fill in each section one at a time\n\n\
             Each replace_in_file call should add no more than 50-100 lines of content at a time."
        );
    }
    if consecutive_failures >= 2 {
        return format!(
            "{base}\n\n\
             This is your {consecutive_failures}nd failed attempt. The file content is likely too large to generate in one response. You must use a different strategy:\n\n\
             Recommended approaches:\n\
             1. **Use write_to_file with a minimal skeleton** (just the structure — imports, class/function signatures, no implementations), then use replace_in_file to fill in each section incrementally\n\
             2. **Use replace_in_file with smaller chunks** — if the file already exists, make targeted edits instead of rewriting the entire file\n\
             3. **Break the task into smaller steps** — write one function or section at a time\n\n\
             Do NOT attempt to write the full file content in a single write_to_file call again."
        );
    }
    format!(
        "{base}\n\n\
         Suggestions:\n\
         - If the file is large, try breaking down the task into smaller steps. Write a skeleton first, then fill in sections using replace_in_file.\n\
         - If the file already exists, prefer replace_in_file to make targeted edits instead of rewriting the entire file.\n\
         - Ensure the 'content' parameter contains the complete file content before closing the tool tag.\n\n\
         {TOOL_USE_REMINDER}"
    )
}

/// `diffError(relPath, originalContent)`, which follows the parser's own message.
pub fn diff_error(error: &str, rel_path: &str, original: &str) -> String {
    format!(
        "{error}\n\n\
         This is likely because the SEARCH block content doesn't match exactly with what's in the file, or if you used multiple SEARCH/REPLACE blocks they may not have been in the order they appear in the file. (Please also ensure that when using the replace_in_file tool, Do NOT add extra characters to the markers (e.g., ------- SEARCH> is INVALID). Do NOT forget to use the closing +++++++ REPLACE marker. Do NOT modify the marker format in any way. Malformed XML will cause complete tool failure and break the entire editing process.)\n\n\
         The file was reverted to its original state:\n\n\
         <file_content path=\"{rel_path}\">\n{original}\n</file_content>\n\n\
         Now that you have the latest state of the file, try the operation again with fewer, more precise SEARCH blocks. For large files especially, it may be prudent to try to limit yourself to <5 SEARCH/REPLACE blocks at a time, then wait for the user to respond with the result of the operation before following up with another replace_in_file call to make additional edits.\n\
         (If you run into this error 3 times in a row, you may use the write_to_file tool as a fallback.)"
    )
}

/// `fileEditWithoutUserChanges(relPath, undefined, finalContent, "")`: no editor formats the file and no
/// diagnostics run here, so there are neither auto-formatting edits nor new problems to report.
pub fn saved(rel_path: &str, final_content: &str) -> String {
    format!(
        "The content was successfully saved to {rel_path}.\n\n\
         Here is the full, updated content of the file that was saved:\n\n\
         <final_file_content path=\"{rel_path}\">\n{final_content}\n</final_file_content>\n\n\
         IMPORTANT: For any future changes to this file, use the final_file_content shown above as your reference. This content reflects the current state of the file, including any auto-formatting (e.g., if you used single quotes but the formatter converted them to double quotes). Always base your SEARCH/REPLACE operations on this final version to ensure accuracy.\n\n"
    )
}

/// Cline's `finalContent`: the saved text with its line breaks in the style the new content uses, trailing
/// whitespace trimmed, and exactly one line break at the end.
pub fn final_content(saved: &str) -> String {
    crate::edit_io::final_content(saved)
}

/// `path.toPosix()`: the path as the model gave it, with forward slashes.
pub fn posix(path: &str) -> String {
    path.replace('\\', "/")
}

/// Ours: a path that cannot be written, with the reason.
pub fn cannot_write(verb: &str, rel_path: &str, reason: &str) -> String {
    format!("Failed to {verb} '{rel_path}': {reason}")
}

/// Ours: `new_rule` outside `.clinerules/`.
pub fn not_a_rule_path(rel_path: &str) -> String {
    format!(
        "Failed to write to '{rel_path}': new_rule only creates Cline rule files inside the .clinerules/ directory at the top of the workspace, e.g. '.clinerules/project-preferences.md'. Use write_to_file for other files."
    )
}

/// Ours: the file changed between the approval and the write.
pub fn changed_since_approval(rel_path: &str) -> String {
    format!(
        "Failed to edit '{rel_path}': the file changed after the edit was approved, so it was left as it is. Read the file again and retry."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn final_content_like_cline() {
        assert_eq!(final_content("a\nb  \n\n"), "a\nb\n");
        assert_eq!(final_content("a\r\nb\n"), "a\r\nb\r\n");
        assert_eq!(final_content(""), "\n");
    }

    #[test]
    fn missing_diff_text() {
        assert_eq!(
            missing_diff("a.rs"),
            "Failed to edit 'a.rs': The 'diff' parameter was empty.\n\nThe diff parameter must contain SEARCH/REPLACE blocks in this format:\n<<<<<<< SEARCH\nexact lines to find\n=======\nreplacement lines\n>>>>>>> REPLACE\n\nRules:\n- The SEARCH block must match existing file content exactly (including whitespace and indentation)\n- You can include multiple SEARCH/REPLACE blocks in a single diff parameter\n- If you're unsure of the exact content, use read_file first to see the current file"
        );
    }
}
