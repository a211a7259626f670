//! A fixture plugin built against toolshed-plugin-api 0.2.0: the host (0.1.x) must refuse it cleanly.

use toolshed_plugin_api::{declare, result, Failure, HostClient, Outcome, Tool, ToolCall, ToolDeclaration, ToolInit};

/// A tool that must never be registered.
pub struct FromTheFuture;

impl Tool for FromTheFuture {
    type Args = serde_json::Value;
    fn declaration() -> ToolDeclaration {
        declare("from_the_future", "Built against a newer interface.", &[])
    }
    fn new(_: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(Self))
    }
    fn execute(&self, _: &ToolCall<serde_json::Value>, _: &HostClient<'_>) -> Result<Outcome, Failure> {
        Ok(result::text("should not run"))
    }
}

toolshed_plugin_api::export_plugin! { name: "fixture_api_v2", version: "0.0.1", tools: [FromTheFuture] }
