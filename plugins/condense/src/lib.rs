//! Cline's `condense`: offers the user to condense the conversation to the model's summary. The history
//! belongs to the host, so the plugin hands the summary to the host's `task.condense` service; a host without
//! it gets a clear tool error.

use serde::Deserialize;
use toolshed_plugin_api::sdk::conversation;
use toolshed_plugin_api::services::{self, TaskTextRequest};
use toolshed_plugin_api::{
    export_plugin, result, Block, Failure, HostClient, Outcome, Tool, ToolCall, ToolDeclaration, ToolInit,
};

mod spec;

/// Cline's `formatResponse.condense()`: the answer once the user accepted the summary.
pub const ACCEPTED: &str = "The user has accepted the condensed conversation summary you generated. This summary covers important details of the historical conversation with the user which has been truncated.\n<explicit_instructions type=\"condense_response\">It's crucial that you respond by ONLY asking the user what you should work on next. You should NOT take any initiative or make any assumptions about continuing with work. For example you should NOT suggest file changes or attempt to read any files.\nWhen asking the user what you should work on next, you can reference information in the summary which was just generated. However, you should NOT reference information outside of what's contained in the summary for this response. Keep this response CONCISE.</explicit_instructions>";

/// The tool's input.
#[derive(Debug, Deserialize)]
pub struct CondenseArgs {
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    context: Option<String>,
}

/// The handler.
pub struct Condense;

impl Tool for Condense {
    type Args = CondenseArgs;

    fn declaration() -> ToolDeclaration {
        let mut declaration = toolshed_plugin_api::declare("condense", spec::DESCRIPTION, &[]);
        // `prepare` always proceeds: the runtime skips it and runs `execute` at once.
        declaration.capabilities.push(toolshed_plugin_api::capability::PROCEEDS.to_owned());
        declaration.checks_parameters = true;
        for spec in declaration.specs.values_mut() {
            spec.parameters = spec::parameters();
        }
        declaration
    }

    fn new(_: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(Condense))
    }

    fn execute(&self, call: &ToolCall<CondenseArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let Some(context) = call.input.context.as_deref().filter(|c| !c.is_empty()) else {
            // Cline's CondenseHandler returns this plain string, without the `toolError` wrapper.
            return Ok(result::failed_blocks(vec![Block::Text {
                text: "Missing required parameter: context".to_owned(),
            }]));
        };
        let request = TaskTextRequest { text: context.to_owned() };
        let answer = match host.task_action::<services::TaskCondense>(&request) {
            Ok(answer) => answer,
            Err(e) => return Ok(conversation::service_error::<services::TaskCondense>(&call.tool, &e)),
        };
        Ok(match answer.text.as_deref().filter(|t| !t.is_empty()) {
            None if answer.images.is_empty() => result::text(ACCEPTED),
            text => conversation::with_images(
                format!(
                    "The user provided feedback on the condensed conversation summary:\n<feedback>\n{}\n</feedback>",
                    text.unwrap_or_default()
                ),
                &answer.images,
            ),
        })
    }
}

mod export {
    use super::{export_plugin, Condense};

    export_plugin! { name: "condense", version: env!("CARGO_PKG_VERSION"), tools: [Condense] }
}
