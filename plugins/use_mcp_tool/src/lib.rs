//! Cline's `use_mcp_tool`: calls a tool of a connected MCP server through the host's `mcp.call_tool` service
//! and formats the result as Cline does (text items, resources as JSON, `Error:` for `isError`, `(No
//! response)`, the images note, the 400 KB cap). Native MCP tools (`{server}__mcp__{tool}`) reach this
//! handler too: the runtime turns them into a use_mcp_tool call with the input as the `arguments` string.
//!
//! Cline v4.0.10's `UseMcpToolHandler` has cases for `text`, `image` and `resource` items only; every other
//! item type, `resource_link` and `audio` among them, takes its generic fallback (`return ""`, then
//! `.filter(Boolean)`), so the model never sees it. Toolshed does the same: a result of resource links alone
//! reads `(No response)`, as in Cline. A result with `isError: true` keeps Cline's text (`Error:\n…`) and is
//! a tool error for the host (`toolshed call` exits 1, `serve` answers `isError`), not a model mistake.

use serde::Deserialize;
use serde_json::{Map, Value};
use toolshed_plugin_api::sdk::lenient_string;
use toolshed_plugin_api::{
    capability, export_plugin, result, services, Block, Failure, HostClient, Outcome, ParamSpec, Prepared, Risk,
    ServiceErrorKind, Tool, ToolCall, ToolDeclaration, ToolInit, ToolSpec,
};

/// The input, as the model sends it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct UseMcpToolArgs {
    #[serde(default, deserialize_with = "lenient_string")]
    server_name: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    tool_name: Option<String>,
    /// A JSON object as a string.
    #[serde(default, deserialize_with = "lenient_string")]
    arguments: Option<String>,
}

const DESCRIPTION: &str = "Request to use a tool provided by a connected MCP server. Each MCP server can provide multiple tools with different capabilities. Tools have defined input schemas that specify required and optional parameters.";

const PARAMETERS: [(&str, &str, &str); 3] = [
    ("server_name", "The name of the MCP server providing the tool", "server name here"),
    ("tool_name", "The name of the tool to execute", "tool name here"),
    (
        "arguments",
        "A JSON object containing the tool's input parameters, following the tool's input schema",
        "\n{\n  \"param1\": \"value1\",\n  \"param2\": \"value2\"\n}\n",
    ),
];

/// Cline's `invalidMcpToolArgumentError`.
pub fn invalid_arguments(server: &str, tool: &str) -> String {
    format!(
        "Invalid JSON argument used with {server} for {tool}. Please retry with a properly formatted JSON argument."
    )
}

/// The `arguments` string is not a JSON object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidArguments;

/// Parses the `arguments` string: absent or empty is none (the hub sends `{}`; Cline's `if (mcp_arguments)`),
/// anything but a JSON object (white space alone included) is Cline's invalid-argument error.
pub fn parse_arguments(arguments: Option<&str>) -> Result<Option<Map<String, Value>>, InvalidArguments> {
    match arguments {
        None | Some("") => Ok(None),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(Some(map)),
            Ok(_) | Err(_) => Err(InvalidArguments),
        },
    }
}

/// Cline's result text and images of a `CallToolResult`.
pub fn format_result(result: &Value, supports_images: bool) -> Vec<Block> {
    let items = result.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let images: Vec<Block> = items
        .iter()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("image"))
        .map(|item| {
            let field = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
            result::image(field("mimeType"), field("data"))
        })
        .collect();
    let parts: Vec<String> = items
        .iter()
        .filter_map(|item| match item.get("type").and_then(Value::as_str) {
            Some("text") => item.get("text").and_then(Value::as_str).map(str::to_owned),
            Some("resource") => item.get("resource").map(resource_json),
            // Cline's fallback: `resource_link`, `audio` and any later type read as nothing.
            _ => None,
        })
        .filter(|text| !text.is_empty())
        .collect();
    let mut text = format!("{}{}", if is_error(result) { "Error:\n" } else { "" }, parts.join("\n\n"));
    if text.is_empty() {
        text = "(No response)".to_owned();
    }
    if !images.is_empty() && !supports_images {
        text.push_str(&format!(
            "\n\n[{} images were provided in the response, and while they are displayed to the user, you do not have the ability to view them.]",
            images.len()
        ));
    }
    let mut blocks = vec![Block::Text { text: result::truncate_content(text) }];
    if supports_images {
        blocks.extend(images);
    }
    blocks
}

/// Whether a `CallToolResult` reports the tool's own failure (`isError: true`).
pub fn is_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool).unwrap_or(false)
}

/// `JSON.stringify(resource minus blob, null, 2)`. JavaScript keeps the server's key order; the usual one of
/// MCP resource contents (`uri`, `mimeType`, `text`) comes first here, any other keys after in name order.
fn resource_json(resource: &Value) -> String {
    let Some(object) = resource.as_object() else {
        return serde_json::to_string_pretty(resource).unwrap_or_default();
    };
    const FIRST: [&str; 3] = ["uri", "mimeType", "text"];
    let mut fields: Vec<(&String, &Value)> = object.iter().filter(|(key, _)| key.as_str() != "blob").collect();
    fields.sort_by_key(|(key, _)| (FIRST.iter().position(|f| f == key).unwrap_or(FIRST.len()), (*key).clone()));
    let mut out = String::from("{");
    for (i, (key, value)) in fields.iter().enumerate() {
        let value = serde_json::to_string_pretty(value).unwrap_or_default().replace('\n', "\n  ");
        let key = Value::String((*key).clone());
        out.push_str(&format!("{}\n  {key}: {value}", if i == 0 { "" } else { "," }));
    }
    out.push_str(if fields.is_empty() { "}" } else { "\n}" });
    out
}

/// The `use_mcp_tool` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct UseMcpTool;

impl Tool for UseMcpTool {
    type Args = UseMcpToolArgs;

    fn declaration() -> ToolDeclaration {
        let parameters = PARAMETERS
            .iter()
            // Cline's spec marks all three required, and so does this one, so the model reads Cline's text; the
            // handler checks the names itself, in Cline's order, and like Cline's calls a tool without `arguments`.
            .map(|&(name, description, usage)| ParamSpec::new(name, true, description).usage(usage))
            .chain([ParamSpec::task_progress()])
            .collect();
        let spec = ToolSpec {
            id: "use_mcp_tool".to_owned(),
            name: "use_mcp_tool".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters,
            context_requirements: vec!["mcp".to_owned()],
        };
        let mut declaration = toolshed_plugin_api::declare("use_mcp_tool", DESCRIPTION, &[]);
        declaration.checks_parameters = true;
        declaration.capabilities = vec![capability::NETWORK.to_owned()];
        declaration.display = Some("[{tool} for '{server_name}']".to_owned());
        declaration.specs = [("generic".to_owned(), spec)].into_iter().collect();
        declaration
    }

    fn new(_init: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(UseMcpTool))
    }

    fn prepare(&self, call: &ToolCall<UseMcpToolArgs>, host: &HostClient<'_>) -> Result<Prepared, Failure> {
        // Cline's order: `server_name`, `tool_name`, then the arguments' JSON.
        if let Some(missing) = missing(&call.input) {
            return Ok(result::refuse(result::missing_parameter_text(missing)));
        }
        let (server, tool) = names(&call.input);
        if parse_arguments(call.input.arguments.as_deref()).is_err() {
            host.say("error", &format!("Cline tried to use {tool} with an invalid JSON argument. Retrying..."), false);
            return Ok(result::refuse(invalid_arguments(server, tool)));
        }
        Ok(result::approval(
            "mcp",
            format!("Cline wants to use the {tool} tool on the {server} MCP server"),
            Vec::new(),
            Risk::Medium,
        ))
    }

    fn execute(&self, call: &ToolCall<UseMcpToolArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        if let Some(missing) = missing(&call.input) {
            return Ok(result::missing_parameter(missing));
        }
        let (server, tool) = names(&call.input);
        let Ok(arguments) = parse_arguments(call.input.arguments.as_deref()) else {
            return Ok(result::mistake(invalid_arguments(server, tool)));
        };
        if !host.offers::<services::McpCallTool>() {
            return Ok(result::error("Error executing MCP tool: this host offers no MCP client (mcp.call_tool)"));
        }
        Ok(match host.mcp_call_tool(server, tool, arguments) {
            Ok(value) if is_error(&value) => result::failed_blocks(format_result(&value, call.task.supports_images)),
            Ok(value) => result::blocks(format_result(&value, call.task.supports_images)),
            Err(e) if e.kind == ServiceErrorKind::Cancelled => {
                result::error(format!("Error executing MCP tool: {}", e.message))
            }
            // Cline's handler returns this as its result, a plain string without the `toolError` wrapper
            // (the hub's `No connection found for server: …`, `Server "…" is disabled and cannot be used`).
            Err(e) => {
                result::failed_blocks(vec![Block::Text { text: format!("Error executing MCP tool: {}", e.message) }])
            }
        })
    }
}

/// The first required parameter without a value, as Cline's `!server_name` and `!tool_name` find it.
fn missing(args: &UseMcpToolArgs) -> Option<&'static str> {
    let unset = |value: &Option<String>| value.as_deref().is_none_or(str::is_empty);
    [("server_name", &args.server_name), ("tool_name", &args.tool_name)]
        .into_iter()
        .find_map(|(name, value)| unset(value).then_some(name))
}

fn names(args: &UseMcpToolArgs) -> (&str, &str) {
    (args.server_name.as_deref().unwrap_or("undefined"), args.tool_name.as_deref().unwrap_or("undefined"))
}

mod export {
    use super::{export_plugin, UseMcpTool};

    export_plugin! { name: "use_mcp_tool", version: env!("CARGO_PKG_VERSION"), tools: [UseMcpTool] }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn text(blocks: &[Block]) -> &str {
        match &blocks[0] {
            Block::Text { text } => text,
            Block::Image { .. } => panic!("expected text first"),
        }
    }

    #[test]
    fn text_and_resources_join_with_blank_lines() {
        let result = json!({"content": [
            {"type": "text", "text": "one"},
            {"type": "audio", "data": "x"},
            {"type": "resource", "resource": {"uri": "test://a", "mimeType": "text/plain", "text": "hi", "blob": "Zm9v"}},
            {"type": "text", "text": ""}
        ]});
        assert_eq!(
            text(&format_result(&result, false)),
            "one\n\n{\n  \"uri\": \"test://a\",\n  \"mimeType\": \"text/plain\",\n  \"text\": \"hi\"\n}"
        );
    }

    #[test]
    fn resource_links_read_as_nothing_as_in_cline() {
        let link = json!({"type": "resource_link", "uri": "demo://resource/static/document/a.md", "name": "A"});
        assert_eq!(text(&format_result(&json!({"content": [link]}), false)), "(No response)");
        let mixed = json!({"content": [{"type": "text", "text": "Here are 1 resource links:"}, link]});
        assert_eq!(text(&format_result(&mixed, false)), "Here are 1 resource links:");
        assert!(is_error(&json!({"isError": true})) && !is_error(&json!({"isError": "yes"})) && !is_error(&json!({})));
    }

    #[test]
    fn errors_empty_results_and_images() {
        assert_eq!(text(&format_result(&json!({"content": [], "isError": true}), false)), "Error:\n");
        assert_eq!(text(&format_result(&json!({"content": []}), false)), "(No response)");
        let image = json!({"content": [{"type": "image", "mimeType": "image/png", "data": "AAAA"}]});
        assert_eq!(
            text(&format_result(&image, false)),
            "(No response)\n\n[1 images were provided in the response, and while they are displayed to the user, you do not have the ability to view them.]"
        );
        let blocks = format_result(&image, true);
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[1], result::image("image/png", "AAAA"));
    }

    #[test]
    fn long_results_are_cut_at_400_kb() {
        let long = "x".repeat(500 * 1024);
        let out = format_result(&json!({"content": [{"type": "text", "text": long}]}), false);
        assert!(text(&out).starts_with(&"x".repeat(400 * 1024)));
        assert!(text(&out).ends_with("[FILE TRUNCATED: This content is 500.0 KB but only the first 400.0 KB is shown (100.0 KB truncated). Use search_files to find specific patterns, or execute_command with grep/head/tail for targeted reading.]"));
    }

    #[test]
    fn arguments_must_be_a_json_object() {
        assert_eq!(parse_arguments(None), Ok(None));
        assert_eq!(parse_arguments(Some("{\"a\": 1}")).unwrap().unwrap()["a"], json!(1));
        assert_eq!(parse_arguments(Some("{a: 1}")), Err(InvalidArguments));
        assert_eq!(parse_arguments(Some("[1]")), Err(InvalidArguments));
        assert_eq!(parse_arguments(Some("")), Ok(None));
        assert_eq!(parse_arguments(Some("  ")), Err(InvalidArguments));
        assert_eq!(
            invalid_arguments("s", "t"),
            "Invalid JSON argument used with s for t. Please retry with a properly formatted JSON argument."
        );
    }

    #[test]
    fn the_spec_takes_the_focus_chain_checklist_last() {
        let specs = UseMcpTool::declaration().specs;
        let spec = &specs["generic"];
        assert_eq!((specs.len(), spec.context_requirements.as_slice()), (1, &["mcp".to_owned()][..]));
        let names: Vec<&str> = spec.parameters.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["server_name", "tool_name", "arguments", "task_progress"]);
        assert_eq!(spec.parameters[3], ParamSpec::task_progress());
    }
}
