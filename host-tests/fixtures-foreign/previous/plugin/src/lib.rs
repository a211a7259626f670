//! A fixture plugin built against the frozen copy of plugin-api 0.1.0: the host must keep loading and calling it.

use toolshed_plugin_api::{declare, result, HostClient, Outcome, Prepared, Risk, Tool, ToolCall, ToolDeclaration, ToolInit};

/// Input of [`Greet`].
#[derive(serde::Deserialize)]
pub struct GreetArgs {
    name: String,
}

/// Greets, using a host service and an approval request, as any plugin of that interface would.
pub struct Greet;

impl Tool for Greet {
    type Args = GreetArgs;
    fn declaration() -> ToolDeclaration {
        declare("greet_v0_1", "Greets someone.", &[("name", true, "Who.")])
    }
    fn new(_: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(Self))
    }
    fn prepare(&self, _: &ToolCall<GreetArgs>, _: &HostClient<'_>) -> Prepared {
        result::approval("read", "greet?", Vec::new(), Risk::Low)
    }
    fn execute(&self, call: &ToolCall<GreetArgs>, host: &HostClient<'_>) -> Outcome {
        let root = host.resolve_path(".").map(|p| p.display).unwrap_or_default();
        result::text(format!("hello {} from {root}", call.input.name))
    }
}

toolshed_plugin_api::export_plugin! { name: "fixture_previous_api", version: "0.0.1", tools: [Greet] }
