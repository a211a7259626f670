//! MCP servers: tool calls and resource reads on the servers the host connected, and their status.

use super::Empty;
use serde::{Deserialize, Serialize};

services! {
    /// `mcp.call_tool`: one `tools/call` on a connected MCP server, with that server's timeout (its settings'
    /// `timeout`, else the host's default of 60 s). Unknown or disabled servers and transport failures are
    /// service errors whose message is the text after Cline's `Error executing MCP tool: `.
    McpCallTool(MCP_CALL_TOOL) = "mcp.call_tool": McpCallToolRequest => McpCallToolResponse;
    /// `mcp.read_resource`: one `resources/read` on a connected MCP server.
    McpReadResource(MCP_READ_RESOURCE) = "mcp.read_resource": McpReadResourceRequest => McpReadResourceResponse;
    /// `mcp.servers`: the configured MCP servers, their state, tools and resources.
    McpServers(MCP_SERVERS) = "mcp.servers": Empty => McpServersResponse;
}

/// Request of [`McpCallTool`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpCallToolRequest {
    /// The server's name in the settings file.
    pub server: String,
    /// The tool's name on that server.
    pub tool: String,
    /// The arguments object; `{}` when absent.
    #[serde(default)]
    pub arguments: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Response of [`McpCallTool`]: the server's `CallToolResult` as it sent it (`content`, `isError`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpCallToolResponse {
    /// The result JSON.
    pub result: serde_json::Value,
}

/// Request of [`McpReadResource`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpReadResourceRequest {
    /// The server's name.
    pub server: String,
    /// The resource URI.
    pub uri: String,
}

/// Response of [`McpReadResource`]: the server's `ReadResourceResult` as it sent it (`contents`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpReadResourceResponse {
    /// The result JSON.
    pub result: serde_json::Value,
}

/// Response of [`McpServers`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServersResponse {
    /// The settings file the servers come from, if one is configured.
    #[serde(default)]
    pub settings_path: Option<String>,
    /// Why the settings file could not be used, if so (the servers started before keep running).
    #[serde(default)]
    pub settings_error: Option<String>,
    /// The servers, by name.
    #[serde(default)]
    pub servers: Vec<McpServerStatus>,
}

/// One MCP server as [`McpServers`] reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerStatus {
    /// Its name.
    pub name: String,
    /// `connected`, `connecting`, `disconnected` or `disabled`.
    pub status: String,
    /// Why it is disconnected.
    #[serde(default)]
    pub error: Option<String>,
    /// Its tools: name, description and input schema.
    #[serde(default)]
    pub tools: Vec<serde_json::Value>,
    /// Its resources: uri, name, mimeType, description.
    #[serde(default)]
    pub resources: Vec<serde_json::Value>,
    /// The tools its settings auto-approve.
    #[serde(default)]
    pub auto_approve: Vec<String>,
}
