//! What `toolshed serve` lists and answers: the task's tools as MCP `Tool`s, and a tool result as an MCP
//! `CallToolResult`.

use crate::{Provider, TaskHandle, ToolResult, ToolSchemas};
use rmcp::model::{CallToolResult, Tool};
use rmcp::ErrorData;
use serde_json::{json, Value};
use toolshed_plugin_api::Block;

/// The tools `tools/list` offers the task's client.
pub(super) fn listed(task: &TaskHandle) -> Vec<Tool> {
    let ToolSchemas::Json(Value::Array(schemas)) = task.schema(Provider::Anthropic) else {
        return Vec::new();
    };
    schemas
        .into_iter()
        .filter_map(|schema| {
            let tool = json!({
                "name": schema.get("name")?,
                "description": schema.get("description").cloned().unwrap_or(Value::Null),
                "inputSchema": schema.get("input_schema")?,
            });
            serde_json::from_value::<Tool>(tool).ok()
        })
        .collect()
}

/// A tool result as the MCP client receives it: the user's feedback first, then the result's blocks.
pub(super) fn call_result(result: &ToolResult) -> Result<CallToolResult, ErrorData> {
    let mut content = Vec::new();
    if let Some(feedback) = &result.feedback {
        content.push(json!({"type": "text", "text": crate::messages::feedback(feedback)}));
    }
    for block in &result.blocks {
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
