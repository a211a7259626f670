//! What `toolshed serve` lists and answers: the task's tools as MCP `Tool`s, each with a title and the
//! annotations its declared capabilities support, and a tool result as an MCP `CallToolResult`.

use crate::{Provider, TaskHandle, ToolResult, ToolSchemas};
use rmcp::model::{CallToolResult, Tool, ToolAnnotations};
use rmcp::ErrorData;
use serde_json::{json, Value};
use toolshed_plugin_api::{capability, Block};

/// The tools `tools/list` offers the task's client: its plugin tools its profile serves, then the connected
/// MCP servers' tools (MCP clients call natively, which is when Cline offers those).
pub(super) fn listed(task: &TaskHandle) -> Vec<Tool> {
    let mut context = task.spec_context();
    context.native_tool_calls = true;
    context.every_tool = true;
    let ToolSchemas::Json(Value::Array(schemas)) = task.schema_in(Provider::Anthropic, &context) else {
        return Vec::new();
    };
    schemas
        .into_iter()
        .filter_map(|schema| {
            let name = schema.get("name")?.as_str()?.to_owned();
            let capabilities = task.route_capabilities(&name).map(|(capabilities, _)| capabilities);
            let title = title(&name);
            let tool = json!({
                "name": name,
                "title": title,
                "description": schema.get("description").cloned().unwrap_or(Value::Null),
                "inputSchema": schema.get("input_schema")?,
            });
            let mut tool = serde_json::from_value::<Tool>(tool).ok()?;
            // A plugin tool declares its capabilities; an MCP server's tool declares none we could vouch for.
            tool.annotations = Some(annotations(&title, capabilities.as_deref().unwrap_or_default()));
            Some(tool)
        })
        .collect()
}

/// The refusal of a tool the task's profile does not serve, or `None` when it does.
pub(super) fn refusal(task: &TaskHandle, name: &str) -> Option<ErrorData> {
    let profile = task.profile();
    (!profile.serves(name)).then(|| ErrorData::invalid_params(profile.refusal(name), None))
}

/// A tool's title: its name made readable (`read_file` → `Read file`, `github__mcp__create_issue` →
/// `github: Create issue`). The result header template a plugin may declare (`[{tool} for '{path}']`) is
/// no name, and plugins declare no other.
fn title(name: &str) -> String {
    let (server, tool) = match name.split_once(crate::spec::MCP_TOOL_SEPARATOR) {
        Some((server, tool)) => (Some(server), tool),
        None => (None, name),
    };
    let words = tool.replace(['_', '-'], " ");
    let mut chars = words.trim().chars();
    let readable: String = chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default();
    match server {
        Some(server) => format!("{server}: {readable}"),
        None => readable,
    }
}

/// The MCP annotations a tool's declared capabilities support, and no more: the MCP defaults (not
/// read-only, possibly destructive, not idempotent, open world) for whatever was not declared.
///
/// - `read_only` alone: read-only, not destructive, idempotent, closed world.
/// - `writes_files`: not read-only, destructive (it may overwrite), not known idempotent; closed world
///   (the workspace) unless something below opens it.
/// - `runs_commands`: not read-only, destructive, open world (a command can do anything).
/// - `network`: open world.
/// - nothing: the defaults, spelled out.
///
/// A tool declaring `read_only` with `writes_files` or `runs_commands` is taken at its more dangerous word.
pub(crate) fn annotations(title: &str, capabilities: &[String]) -> ToolAnnotations {
    let has = |name: &str| capabilities.iter().any(|c| c == name);
    let writes = has(capability::WRITES_FILES);
    let runs = has(capability::RUNS_COMMANDS);
    let read_only = has(capability::READ_ONLY) && !writes && !runs;
    let declared_effects = read_only || writes || runs;
    let mut annotations = ToolAnnotations::default();
    annotations.title = Some(title.to_owned());
    annotations.read_only_hint = Some(read_only);
    annotations.destructive_hint = Some(!read_only);
    annotations.idempotent_hint = Some(read_only);
    // The world is closed only when the tool said what it does and none of it reaches out.
    annotations.open_world_hint = Some(!declared_effects || runs || has(capability::NETWORK));
    annotations
}

/// A tool result as the MCP client receives it: the blocks a model reads with native tool calling — the
/// user's feedback, PreToolUse hook context, the result's blocks, then Cline's loop-detection warning and
/// PostToolUse context — so an MCP client's model is told what Cline's would be.
pub(super) fn call_result(result: &ToolResult) -> Result<CallToolResult, ErrorData> {
    let mut content = Vec::new();
    for block in &result.text_blocks(false) {
        content.push(match block {
            Block::Text { text } => json!({"type": "text", "text": text}),
            Block::Image { media_type, data } => json!({"type": "image", "mimeType": media_type, "data": data}),
        });
    }
    let value = json!({"content": content, "isError": result.is_error()});
    serde_json::from_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// The answer to a call cancelled before it finished (rmcp drops it when the client cancelled; a client
/// that went away reads nothing).
pub(super) fn cancelled() -> CallToolResult {
    CallToolResult::error(vec![rmcp::model::ContentBlock::text("The call was cancelled.")])
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn hints(capabilities: &[&str]) -> (bool, bool, bool, bool) {
        let capabilities: Vec<String> = capabilities.iter().map(|c| (*c).to_owned()).collect();
        let a = annotations("T", &capabilities);
        assert_eq!(a.title.as_deref(), Some("T"));
        let get = |hint: Option<bool>| hint.unwrap_or_else(|| panic!("every hint is spelled out"));
        (get(a.read_only_hint), get(a.destructive_hint), get(a.idempotent_hint), get(a.open_world_hint))
    }

    #[test]
    fn annotations_claim_only_what_the_capabilities_declare() {
        // (readOnly, destructive, idempotent, openWorld)
        assert_eq!(hints(&[]), (false, true, false, true), "nothing declared: the MCP defaults");
        assert_eq!(hints(&["read_only"]), (true, false, true, false));
        assert_eq!(hints(&["read_only", "network"]), (true, false, true, true));
        assert_eq!(hints(&["writes_files", "commits_writes"]), (false, true, false, false));
        assert_eq!(hints(&["runs_commands"]), (false, true, false, true));
        assert_eq!(hints(&["network"]), (false, true, false, true));
        assert_eq!(hints(&["read_only", "writes_files"]), (false, true, false, false), "the more dangerous word");
        assert_eq!(hints(&["inline", "unknown"]), (false, true, false, true), "other names claim nothing");
    }

    #[test]
    fn titles_are_readable_names() {
        assert_eq!(title("read_file"), "Read file");
        assert_eq!(title("list_code_definition_names"), "List code definition names");
        assert_eq!(title("github__mcp__create-issue"), "github: Create issue");
        assert_eq!(title(""), "");
    }
}
