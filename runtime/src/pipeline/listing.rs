//! What a task is offered beyond its plugins' tools: the connected MCP servers' tools under their native
//! `{server}__mcp__{tool}` names, for hosts that call tools natively (Cline offers them only then), and the
//! task's profile applied to everything listed.
//!
//! An MCP server is as untrusted as the model: its listing is already capped in pages and bytes by the hub
//! (`[mcp] max_list_*`), and here each tool must also have a name that is valid as it stands and is no plugin
//! tool's, a description and an input schema of bounded size, and the list a bounded length. A tool that
//! fails is left out with a debug line, never shown mangled; the rest still list.

use crate::spec::MCP_TOOL_SEPARATOR;
use crate::spec::{provider_tool_name, McpServerInfo, PromptVariant, Spec, SpecContext, SpecRegistry, GENERIC};
use std::collections::BTreeSet;

/// The most MCP tools one listing carries, over every server: a client's tool list is read by a model,
/// whose context a server offering thousands would flood.
pub(super) const MAX_MCP_TOOLS: usize = 256;
/// The longest MCP tool description listed, in bytes.
pub(super) const MAX_MCP_DESCRIPTION: usize = 16 * 1024;
/// The largest MCP tool input schema listed, in bytes of JSON.
pub(super) const MAX_MCP_SCHEMA: usize = 64 * 1024;

/// The specs of the servers' tools that may be listed next to the plugin tools `taken` (every name already
/// listed), in server and then the server's order.
pub(super) fn mcp_specs(servers: Vec<McpServerInfo>, taken: &BTreeSet<String>, context: &SpecContext) -> Vec<Spec> {
    let mut names = taken.clone();
    let mut kept = Vec::new();
    let mut count = 0;
    for mut server in servers {
        server.tools.retain(|tool| {
            let name = format!("{}{MCP_TOOL_SEPARATOR}{}", server.name, tool.name);
            let skip = |why: &str| {
                tracing::debug!("MCP tool `{}` of server `{}` not listed: {why}", tool.name, server.name);
                false
            };
            if provider_tool_name(&name) != name {
                return skip("its name is not a valid tool name (letters, digits, `_` and `-`, at most 64)");
            }
            if names.contains(&name) {
                return skip("another tool has that name");
            }
            if tool.description.as_ref().is_some_and(|d| d.len() > MAX_MCP_DESCRIPTION) {
                return skip("its description is too long");
            }
            let schema_len = tool.input_schema.as_ref().map_or(0, |schema| schema.to_string().len());
            if schema_len > MAX_MCP_SCHEMA {
                return skip("its input schema is too large");
            }
            if count == MAX_MCP_TOOLS {
                return skip("the list already has the most MCP tools it takes");
            }
            count += 1;
            names.insert(name);
            true
        });
        kept.push(server);
    }
    let mut registry = SpecRegistry::new();
    registry.set_mcp_servers(&kept);
    // A variant of no tools of its own: what `native` returns are the MCP tools alone, resolved for the
    // context and without those lacking a description, as Cline offers them.
    let native = SpecContext { native_tool_calls: true, ..context.clone() };
    registry.native(&PromptVariant::new(GENERIC, Vec::<String>::new()).native_tools(true), &native).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::McpToolInfo;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn names(specs: &[Spec]) -> Vec<&str> {
        specs.iter().map(|spec| spec.name.as_str()).collect()
    }

    #[test]
    fn hostile_tools_are_left_out_and_the_rest_listed() {
        let huge = json!({"type": "object", "properties": {"x": {"type": "string", "description": "y".repeat(MAX_MCP_SCHEMA)}}});
        let tools = vec![
            McpToolInfo::new(
                "echo",
                "Echoes.",
                Some(json!({"type": "object", "properties": {"m": {"type": "string"}}})),
            ),
            McpToolInfo::new("bad name", "Spaces.", None),
            McpToolInfo::new("x".repeat(70), "Long name.", None),
            McpToolInfo::new("wordy", "w".repeat(MAX_MCP_DESCRIPTION + 1), None),
            McpToolInfo::new("huge", "Huge schema.", Some(huge)),
            McpToolInfo::new("read_file", "Clashes with a plugin tool.", None),
        ];
        let servers = vec![McpServerInfo::new("srv", tools), McpServerInfo::new("a", vec![])];
        let taken: BTreeSet<String> = ["srv__mcp__read_file".to_owned()].into_iter().collect();
        let specs = mcp_specs(servers, &taken, &SpecContext::default());
        assert_eq!(names(&specs), ["srv__mcp__echo"]);
        assert_eq!(specs[0].description, "srv: Echoes.");
        assert_eq!(specs[0].parameters[0].name, "m");
    }

    #[test]
    fn the_count_is_capped_and_clashing_names_listed_once() {
        let many = (0..MAX_MCP_TOOLS + 5).map(|i| McpToolInfo::new(format!("t{i}"), "T.", None)).collect();
        // `a__mcp__b` + `c` and `a` + `b__mcp__c` spell the same name: the first server in order keeps it.
        let servers = vec![
            McpServerInfo::new("a", vec![McpToolInfo::new("b__mcp__c", "First.", None)]),
            McpServerInfo::new("a__mcp__b", vec![McpToolInfo::new("c", "Second.", None)]),
            McpServerInfo::new("many", many),
        ];
        let specs = mcp_specs(servers, &BTreeSet::new(), &SpecContext::default());
        assert_eq!(specs.len(), MAX_MCP_TOOLS);
        assert_eq!(specs[0].description, "a: First.");
        assert_eq!(specs.iter().filter(|s| s.name == "a__mcp__b__mcp__c").count(), 1);
    }
}
