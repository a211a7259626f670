//! Cline's `summarize_task`: the model's summary replaces the conversation history. Truncating the history
//! belongs to the host, so the plugin hands the summary to the host's `task.summarize` service (a host without
//! it gets a clear tool error) and returns Cline's continuation prompt.
//!
//! Cline also reads up to 8 auto-approved files of the summary's "Required Files" section into the result;
//! hosts that want them attach them when they rebuild the conversation.

use serde::Deserialize;
use toolshed_plugin_api::sdk::conversation;
use toolshed_plugin_api::services::{self, TaskTextRequest};
use toolshed_plugin_api::{
    export_plugin, result, Failure, HostClient, Outcome, Tool, ToolCall, ToolDeclaration, ToolInit,
};

mod spec;

/// The tool's input.
#[derive(Debug, Deserialize)]
pub struct SummarizeTaskArgs {
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    context: Option<String>,
}

/// The handler.
pub struct SummarizeTask;

/// Cline's `continuationPrompt(summary)`.
pub fn continuation_prompt(summary: &str) -> String {
    format!(
        "\nThis session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n{summary}.\n\nPlease continue the conversation from where we left it off without asking the user any further questions. Continue with the last task that you were asked to work on. Pay special attention to the most recent user message when responding rather than the initial task message, if applicable.\nIf the most recent user's message starts with \"/newtask\", \"/smol\", \"/compact\", \"/newrule\", or \"/reportbug\", you should indicate to the user that they will need to run this command again.\n"
    )
}

impl Tool for SummarizeTask {
    type Args = SummarizeTaskArgs;

    fn declaration() -> ToolDeclaration {
        let mut declaration = toolshed_plugin_api::declare("summarize_task", spec::DESCRIPTION, &[]);
        // `prepare` always proceeds: the runtime skips it and runs `execute` at once.
        declaration.capabilities.push(toolshed_plugin_api::capability::PROCEEDS.to_owned());
        declaration.checks_parameters = true;
        for spec in declaration.specs.values_mut() {
            spec.parameters = spec::parameters();
        }
        declaration
    }

    fn new(_: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(SummarizeTask))
    }

    fn execute(&self, call: &ToolCall<SummarizeTaskArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let Some(context) = call.input.context.as_deref().filter(|c| !c.is_empty()) else {
            return Ok(result::missing_parameter("context"));
        };
        host.say("tool", &serde_json::json!({ "tool": "summarizeTask", "content": context }).to_string(), false);
        let request = TaskTextRequest { text: context.to_owned() };
        if let Err(e) = host.task_action::<services::TaskSummarize>(&request) {
            return Ok(conversation::service_error::<services::TaskSummarize>(&call.tool, &e));
        }
        Ok(result::text(continuation_prompt(context)))
    }
}

mod export {
    use super::{export_plugin, SummarizeTask};

    export_plugin! { name: "summarize_task", version: env!("CARGO_PKG_VERSION"), tools: [SummarizeTask] }
}
