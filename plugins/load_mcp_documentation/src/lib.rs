//! `load_mcp_documentation`: how to create an MCP server and add it to the settings file, with the settings
//! file in use and the servers running now (from the host's `mcp.servers` service). Cline returns a long
//! guide of its own; this text is ours, shorter, and names the same facts (non-interactive servers,
//! credentials through `env`, the settings file, the connected servers).

use toolshed_plugin_api::{
    capability, export_plugin, result, services, Failure, HostClient, Outcome, Tool, ToolCall, ToolDeclaration,
    ToolInit,
};

const DESCRIPTION: &str = "Load documentation about creating MCP servers. This tool should be used when the user requests to create or install an MCP server (the user may ask you something along the lines of \"add a tool\" that does some function, in other words to create an MCP server that provides tools and resources that may connect to external APIs for example. You have the ability to create an MCP server and add it to a configuration file that will then expose the tools and resources for you to use with `use_mcp_tool` and `access_mcp_resource`). The documentation provides detailed information about the MCP server creation process, including setup instructions, best practices, and examples.";

/// The documentation for a settings file path and the names of the connected servers.
pub fn documentation(settings_path: Option<&str>, connected: &[String]) -> String {
    let settings = settings_path.unwrap_or("(no settings file configured: set [mcp] settings in the user config)");
    let running = if connected.is_empty() { "(None running currently)".to_owned() } else { connected.join(", ") };
    format!(
        "## Creating an MCP Server

MCP servers run without a terminal: they cannot open a browser, start an OAuth flow or prompt the user at run time. Every credential must be given up front through the `env` of the server's entry in the MCP settings file; for OAuth, write a separate one-time script that obtains the token and run it with execute_command.

### Steps

1. Create the server project (for example with the TypeScript or Python MCP SDK) and implement its tools, each with a JSON Schema for its input. Prefer tools over resources: they take parameters.
2. Build it, then add it to the MCP settings file at: {settings}
   ```json
   {{
     \"mcpServers\": {{
       \"weather\": {{
         \"command\": \"node\",
         \"args\": [\"/path/to/weather-server/build/index.js\"],
         \"env\": {{ \"OPENWEATHER_API_KEY\": \"...\" }},
         \"disabled\": false,
         \"autoApprove\": []
       }}
     }}
   }}
   ```
   A server reached over HTTP uses `\"type\": \"streamableHttp\"` and `\"url\"` instead of `command`. `timeout` is the tool-call timeout in seconds (default 60).
3. Saving the file restarts the changed servers; their tools then appear as `use_mcp_tool` targets and their resources for `access_mcp_resource`.

Connected MCP servers: {running}
"
    )
}

/// The `load_mcp_documentation` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadMcpDocumentation;

impl Tool for LoadMcpDocumentation {
    type Args = serde_json::Value;

    fn declaration() -> ToolDeclaration {
        let mut declaration = toolshed_plugin_api::declare("load_mcp_documentation", DESCRIPTION, &[]);
        declaration.capabilities = vec![capability::READ_ONLY.to_owned()];
        // `prepare` always proceeds: the runtime skips it and runs `execute` at once.
        declaration.capabilities.push(toolshed_plugin_api::capability::PROCEEDS.to_owned());
        for spec in declaration.specs.values_mut() {
            // Offered with an MCP hub only, as Cline offers it.
            spec.context_requirements = vec!["mcp".to_owned()];
        }
        declaration
    }

    fn new(_init: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(LoadMcpDocumentation))
    }

    fn execute(&self, _call: &ToolCall<serde_json::Value>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        if !host.offers::<services::McpServers>() {
            return Ok(result::text(documentation(None, &[])));
        }
        Ok(match host.mcp_servers() {
            Ok(servers) => {
                let connected: Vec<String> =
                    servers.servers.into_iter().filter(|s| s.status == "connected").map(|s| s.name).collect();
                result::text(documentation(servers.settings_path.as_deref(), &connected))
            }
            Err(e) => result::error(format!("Error executing load_mcp_documentation: {}", e.message)),
        })
    }
}

mod export {
    use super::{export_plugin, LoadMcpDocumentation};

    export_plugin! { name: "load_mcp_documentation", version: env!("CARGO_PKG_VERSION"), tools: [LoadMcpDocumentation] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_settings_file_and_the_running_servers() {
        let text = documentation(Some("/home/u/mcp.json"), &["fs".to_owned(), "web".to_owned()]);
        assert!(text.contains("settings file at: /home/u/mcp.json"));
        assert!(text.ends_with("Connected MCP servers: fs, web\n"));
        assert!(documentation(None, &[]).contains("(None running currently)"));
    }

    #[test]
    fn offered_with_an_mcp_hub_only() {
        let declaration = LoadMcpDocumentation::declaration();
        let spec = &declaration.specs["generic"];
        assert_eq!((spec.context_requirements.as_slice(), spec.parameters.len()), (&["mcp".to_owned()][..], 0));
    }
}
