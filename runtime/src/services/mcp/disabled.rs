//! The MCP hub of a build without the `mcp` feature: a type with no values, so every use site compiles
//! unchanged and no hub ever exists. `start` says why; the runtime then warns once, as for a hub that
//! cannot start, and runs without one (no `mcp.*` services, no native MCP tool names, no MCP tools in the
//! schemas).

use crate::config::McpConfig;
use crate::services::host::Router;
use crate::spec::McpServerInfo;
use std::sync::Arc;
use toolshed_plugin_api::services::McpServersResponse;

/// What `start` answers (and so what the runtime's `cannot start the MCP hub: …` warning says).
const NO_MCP: &str = "this build has no MCP support (the toolshed library was built without its `mcp` feature)";

/// Registers no `mcp.*` service: a plugin sees a host without an MCP client (use_mcp_tool and
/// access_mcp_resource say so, load_mcp_documentation prints the documentation alone).
pub(crate) fn register(_router: &mut Router, _hub: Option<Arc<McpHub>>) {}

/// No MCP hub: there is none to have.
pub(crate) enum McpHub {}

impl McpHub {
    /// Always fails: this build has no MCP client.
    pub fn start(_config: &McpConfig) -> std::io::Result<Self> {
        Err(std::io::Error::other(NO_MCP))
    }

    // The methods the runtime and the pipeline call on a hub they hold: never, as none exists.

    pub async fn settled(&self) {
        match *self {}
    }

    pub fn report(&self) -> McpServersResponse {
        match *self {}
    }

    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        match *self {}
    }

    pub fn server_infos(&self) -> Vec<McpServerInfo> {
        match *self {}
    }

    pub async fn resolve_native(&self, _name: &str) -> Option<(String, String)> {
        match *self {}
    }

    pub fn auto_approves(&self, _server: &str, _tool: &str) -> bool {
        match *self {}
    }
}
