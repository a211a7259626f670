//! Cline's `access_mcp_resource`: reads a resource of a connected MCP server through the host's
//! `mcp.read_resource` service; the result is the `text` items joined with blank lines, or `(Empty
//! response)`, cut at 400 KB.
//!
//! Binary contents are Cline's too: v4.0.10's `AccessMcpResourceHandler` maps each item to `item.text` when
//! it is truthy and to `""` otherwise, so a `blob` item (base64 bytes, no `text`) reads as nothing, and a
//! resource of blobs alone reads `(Empty response)`. The model is never handed base64 it cannot read.

use serde::Deserialize;
use serde_json::Value;
use toolshed_plugin_api::sdk::lenient_string;
use toolshed_plugin_api::{
    capability, export_plugin, result, services, Failure, HostClient, Outcome, ParamSpec, Prepared, Risk, Tool,
    ToolCall, ToolDeclaration, ToolInit, ToolSpec,
};

/// The input, as the model sends it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AccessMcpResourceArgs {
    #[serde(default, deserialize_with = "lenient_string")]
    server_name: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    uri: Option<String>,
}

const DESCRIPTION: &str = "Request to access a resource provided by a connected MCP server. Resources represent data sources that can be used as context, such as files, API responses, or system information.";

/// The description of the native families: the generic one and a warning.
const NATIVE_DESCRIPTION: &str = "Request to access a resource provided by a connected MCP server. Resources represent data sources that can be used as context, such as files, API responses, or system information. You must only use this tool if you have been informed of the MCP server and the resource you are trying to access.";

/// The families with the native description (Cline's `NATIVE_GPT_5`, which `NATIVE_NEXT_GEN` copies).
const NATIVE_FAMILIES: [&str; 2] = ["gpt-5-native", "native-next-gen"];

const PARAMETERS: [(&str, &str, &str); 2] = [
    ("server_name", "The name of the MCP server providing the resource", "server name here"),
    ("uri", "The URI identifying the specific resource to access", "resource URI here"),
];

/// Cline's text of a `ReadResourceResult`.
pub fn format_result(result: &Value) -> String {
    let texts: Vec<&str> = result
        .get("contents")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|item| item.get("text").and_then(Value::as_str))
        .filter(|text| !text.is_empty())
        .collect();
    let text = texts.join("\n\n");
    result::truncate_content(if text.is_empty() { "(Empty response)".to_owned() } else { text })
}

/// The `access_mcp_resource` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct AccessMcpResource;

impl Tool for AccessMcpResource {
    type Args = AccessMcpResourceArgs;

    fn declaration() -> ToolDeclaration {
        let spec = |description: &str| ToolSpec {
            id: "access_mcp_resource".to_owned(),
            name: "access_mcp_resource".to_owned(),
            description: description.to_owned(),
            parameters: PARAMETERS
                .iter()
                .map(|&(name, description, usage)| ParamSpec::new(name, true, description).usage(usage))
                .chain([ParamSpec::task_progress()])
                .collect(),
            context_requirements: vec!["mcp".to_owned()],
        };
        let mut declaration = toolshed_plugin_api::declare("access_mcp_resource", DESCRIPTION, &[]);
        declaration.checks_parameters = true;
        declaration.capabilities = vec![capability::NETWORK.to_owned()];
        declaration.display = Some("[{tool} for '{server_name}']".to_owned());
        // Cline's `next-gen` and `gpt` specs are copies of the generic one, which they fall back to here.
        declaration.specs = NATIVE_FAMILIES
            .iter()
            .map(|family| ((*family).to_owned(), spec(NATIVE_DESCRIPTION)))
            .chain([("generic".to_owned(), spec(DESCRIPTION))])
            .collect();
        declaration
    }

    fn new(_init: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(AccessMcpResource))
    }

    fn prepare(&self, call: &ToolCall<AccessMcpResourceArgs>, _host: &HostClient<'_>) -> Result<Prepared, Failure> {
        if let Some(missing) = missing(&call.input) {
            return Ok(result::refuse(result::missing_parameter_text(missing)));
        }
        let (server, uri) = names(&call.input);
        Ok(result::approval(
            "mcp",
            format!("Cline wants to access {uri} on the {server} MCP server"),
            Vec::new(),
            Risk::Low,
        ))
    }

    fn execute(&self, call: &ToolCall<AccessMcpResourceArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        if let Some(missing) = missing(&call.input) {
            return Ok(result::missing_parameter(missing));
        }
        let (server, uri) = names(&call.input);
        if !host.offers::<services::McpReadResource>() {
            return Ok(result::error(
                "Error executing access_mcp_resource: this host offers no MCP client (mcp.read_resource)",
            ));
        }
        Ok(match host.mcp_read_resource(server, uri) {
            Ok(value) => result::text(format_result(&value)),
            Err(e) => result::error(format!("Error executing access_mcp_resource: {}", e.message)),
        })
    }
}

/// The first required parameter without a value, as Cline's `!server_name` and `!uri` find it.
fn missing(args: &AccessMcpResourceArgs) -> Option<&'static str> {
    let unset = |value: &Option<String>| value.as_deref().is_none_or(str::is_empty);
    [("server_name", &args.server_name), ("uri", &args.uri)]
        .into_iter()
        .find_map(|(name, value)| unset(value).then_some(name))
}

fn names(args: &AccessMcpResourceArgs) -> (&str, &str) {
    (args.server_name.as_deref().unwrap_or("undefined"), args.uri.as_deref().unwrap_or("undefined"))
}

mod export {
    use super::{export_plugin, AccessMcpResource};

    export_plugin! { name: "access_mcp_resource", version: env!("CARGO_PKG_VERSION"), tools: [AccessMcpResource] }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn text_items_join_and_blobs_are_left_out() {
        let result = json!({"contents": [
            {"uri": "a", "text": "one"},
            {"uri": "b", "blob": "AAAA"},
            {"uri": "c", "text": "two"}
        ]});
        assert_eq!(format_result(&result), "one\n\ntwo");
        assert_eq!(format_result(&json!({"contents": []})), "(Empty response)");
        // A blob alone, as Cline reads it: nothing, so `(Empty response)`; an empty text is nothing too.
        let blob = json!({"contents": [{"uri": "b", "mimeType": "application/octet-stream", "blob": "AAAA"}]});
        assert_eq!(format_result(&blob), "(Empty response)");
        assert_eq!(format_result(&json!({"contents": [{"uri": "a", "text": ""}]})), "(Empty response)");
    }

    #[test]
    fn the_native_families_warn_and_every_spec_takes_the_focus_chain_checklist() {
        let specs = AccessMcpResource::declaration().specs;
        assert_eq!(specs.keys().collect::<Vec<_>>(), ["generic", "gpt-5-native", "native-next-gen"]);
        assert_eq!(specs["gpt-5-native"], specs["native-next-gen"]);
        assert_eq!(specs["generic"].parameters, specs["native-next-gen"].parameters);
        assert!(specs["native-next-gen"].description.ends_with("the resource you are trying to access."));
        let names: Vec<&str> = specs["generic"].parameters.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["server_name", "uri", "task_progress"]);
        assert_eq!(specs["generic"].parameters[2], ParamSpec::task_progress());
    }
}
