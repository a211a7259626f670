//! MCP as a client: the hub that connects to the servers of a `cline_mcp_settings.json`-shaped file and
//! answers the `mcp.*` host services (`use_mcp_tool`, `access_mcp_resource`, native `{server}__mcp__{tool}`
//! tools).

#[cfg(feature = "mcp")]
mod errors;
#[cfg(feature = "mcp")]
mod follow;
#[cfg(feature = "mcp")]
mod http;
#[cfg(feature = "mcp")]
mod hub;
#[cfg(feature = "mcp")]
mod settings;
#[cfg(feature = "mcp")]
mod transport;

#[cfg(feature = "mcp")]
pub(crate) use hub::McpHub;

// Without the feature: a hub type with no values, and no `mcp.*` services.
#[cfg(not(feature = "mcp"))]
mod disabled;
#[cfg(not(feature = "mcp"))]
pub(crate) use disabled::{register, McpHub};

#[cfg(feature = "mcp")]
use crate::services::host::{cancelled, CallHost, Router};
use crate::services::runner::{NameRoute, Routed};
use crate::task::TaskShared;
use crate::types::{BoxFuture, ToolInput, ToolUse};
use std::sync::Arc;
#[cfg(feature = "mcp")]
use toolshed_plugin_api::services::{
    McpCallTool, McpCallToolResponse, McpReadResource, McpReadResourceResponse, McpServers, McpServersResponse,
};
#[cfg(feature = "mcp")]
use toolshed_plugin_api::{ServiceError, ServiceErrorKind};

/// Registers `mcp.*`. Without a hub (no `[mcp] settings`) the calls say how to configure one.
#[cfg(feature = "mcp")]
pub(crate) fn register(router: &mut Router, hub: Option<Arc<McpHub>>) {
    let calls = hub.clone();
    router.register::<McpCallTool>(move |call, req| {
        let hub = configured(calls.as_deref())?;
        let result = hub.call_tool(&req.server, &req.tool, req.arguments, &call.cancels()).map_err(mcp_error)?;
        Ok(McpCallToolResponse { result })
    });
    let reads = hub.clone();
    router.register::<McpReadResource>(move |call: &CallHost, req| {
        let hub = configured(reads.as_deref())?;
        let result = hub.read_resource(&req.server, &req.uri, &call.cancels()).map_err(mcp_error)?;
        Ok(McpReadResourceResponse { result })
    });
    router.register::<McpServers>(move |call, _| {
        Ok(match &hub {
            Some(hub) => hub.servers(&call.cancels()),
            None => McpServersResponse { settings_path: None, settings_error: None, servers: Vec::new() },
        })
    });
}

/// The MCP hub, or the error a host without MCP settings gives.
#[cfg(feature = "mcp")]
fn configured(hub: Option<&McpHub>) -> Result<&McpHub, ServiceError> {
    hub.ok_or_else(|| {
        ServiceError::new(
            ServiceErrorKind::Failed,
            "No MCP servers are configured: set [mcp] settings to a cline_mcp_settings.json-shaped file in your user config",
        )
    })
}

/// A hub failure as a service error: `None` is a cancellation.
#[cfg(feature = "mcp")]
fn mcp_error(error: Option<String>) -> ServiceError {
    match error {
        Some(message) => ServiceError::new(ServiceErrorKind::Failed, message),
        None => cancelled(),
    }
}

/// The tool Cline routes MCP tool calls through.
pub(crate) const USE_MCP_TOOL: &str = "use_mcp_tool";

/// The connected servers' tools under their native names (`{server}__mcp__{tool}`, the names the tool schemas
/// offer): each call runs as the use_mcp_tool call Cline turns it into. The input becomes `arguments`, a JSON
/// string as Cline stringifies it (JSON text passes through unparsed, so invalid JSON gets use_mcp_tool's own
/// error).
pub(crate) struct NativeTools(pub Arc<McpHub>);

impl NameRoute for NativeTools {
    fn claims(&self, name: &str) -> bool {
        name.contains(crate::spec::MCP_TOOL_SEPARATOR)
    }

    fn target(&self) -> Option<&'static str> {
        Some(USE_MCP_TOOL)
    }

    fn route(&self, _task: &Arc<TaskShared>, tool_use: ToolUse) -> BoxFuture<Result<Routed, ToolUse>> {
        let hub = Arc::clone(&self.0);
        Box::pin(async move {
            let Some((server, tool)) = hub.resolve_native(&tool_use.name).await else {
                return Err(tool_use);
            };
            let arguments = match tool_use.input {
                ToolInput::Json(value) => value.to_string(),
                ToolInput::Text(text) => text,
            };
            let input = serde_json::json!({"server_name": server, "tool_name": tool, "arguments": arguments});
            Ok(Routed::Call { tool_use: ToolUse::new(tool_use.id, USE_MCP_TOOL, input), description: None })
        })
    }
}
