//! Cline's `new_task`: offers the user a new task preloaded with the model's context. Starting tasks belongs
//! to the host, so the plugin hands the context to the host's `task.new` service; a host without it gets a
//! clear tool error.

use serde::Deserialize;
use toolshed_plugin_api::sdk::conversation;
use toolshed_plugin_api::services::{self, TaskTextRequest};
use toolshed_plugin_api::{
    export_plugin, result, Failure, HostClient, Outcome, Tool, ToolCall, ToolDeclaration, ToolInit,
};

mod spec;

/// The tool's input.
#[derive(Debug, Deserialize)]
pub struct NewTaskArgs {
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    context: Option<String>,
}

/// The handler.
pub struct NewTask;

impl Tool for NewTask {
    type Args = NewTaskArgs;

    fn declaration() -> ToolDeclaration {
        let mut declaration = toolshed_plugin_api::declare("new_task", spec::DESCRIPTION, &[]);
        // `prepare` always proceeds: the runtime skips it and runs `execute` at once.
        declaration.capabilities.push(toolshed_plugin_api::capability::PROCEEDS.to_owned());
        declaration.checks_parameters = true;
        declaration.display = Some("[{tool} for creating a new task]".to_owned());
        for spec in declaration.specs.values_mut() {
            spec.parameters = spec::parameters();
            spec.context_requirements = vec!["!yolo".to_owned()];
        }
        declaration
    }

    fn new(_: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(NewTask))
    }

    fn execute(&self, call: &ToolCall<NewTaskArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let Some(context) = call.input.context.as_deref().filter(|c| !c.is_empty()) else {
            return Ok(result::missing_parameter("context"));
        };
        let request = TaskTextRequest { text: context.to_owned() };
        let answer = match host.task_action::<services::TaskNew>(&request) {
            Ok(answer) => answer,
            Err(e) => return Ok(conversation::service_error::<services::TaskNew>(&call.tool, &e)),
        };
        Ok(match answer.text.as_deref().filter(|t| !t.is_empty()) {
            None if answer.images.is_empty() => {
                result::text("The user has created a new task with the provided context.")
            }
            text => conversation::with_images(
                format!(
                    "The user provided feedback instead of creating a new task:\n<feedback>\n{}\n</feedback>",
                    text.unwrap_or_default()
                ),
                &answer.images,
            ),
        })
    }
}

mod export {
    use super::{export_plugin, NewTask};

    export_plugin! { name: "new_task", version: env!("CARGO_PKG_VERSION"), tools: [NewTask] }
}
