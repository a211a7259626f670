//! MCP as a client: the hub that connects to the servers of a `cline_mcp_settings.json`-shaped file and
//! answers the `mcp.*` host services (`use_mcp_tool`, `access_mcp_resource`, native `{server}__mcp__{tool}`
//! tools).

mod http;
mod hub;
mod settings;
mod transport;

pub(crate) use hub::McpHub;
