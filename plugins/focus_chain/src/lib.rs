//! Cline's `focus_chain`: a placeholder tool that only gates the `task_progress` parameter every tool accepts
//! when the focus chain is on (the runtime strips, stores and reminds; see the runtime's `interaction`
//! module). Cline gives it no handler; called anyway, it says how to use `task_progress` instead.

use toolshed_plugin_api::{
    export_plugin, result, Failure, HostClient, Outcome, Tool, ToolCall, ToolDeclaration, ToolInit,
};

/// The answer to a call.
pub const NOT_A_TOOL: &str = "focus_chain is not a tool to call. To create or update the todo list, include the task_progress parameter (a markdown checklist: - [ ] for incomplete, - [x] for complete) in your next tool call.";

/// The handler.
pub struct FocusChain;

impl Tool for FocusChain {
    type Args = serde_json::Value;

    fn declaration() -> ToolDeclaration {
        let mut declaration = toolshed_plugin_api::declare("focus_chain", "", &[]);
        // `prepare` always proceeds: the runtime skips it and runs `execute` at once.
        declaration.capabilities.push(toolshed_plugin_api::capability::PROCEEDS.to_owned());
        for spec in declaration.specs.values_mut() {
            spec.context_requirements = vec!["focus_chain".to_owned()];
        }
        declaration
    }

    fn new(_: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(FocusChain))
    }

    fn execute(&self, _call: &ToolCall<serde_json::Value>, _host: &HostClient<'_>) -> Result<Outcome, Failure> {
        Ok(result::mistake(NOT_A_TOOL))
    }
}

mod export {
    use super::{export_plugin, FocusChain};

    export_plugin! { name: "focus_chain", version: env!("CARGO_PKG_VERSION"), tools: [FocusChain] }
}
