//! Cline's `act_mode_respond`: shows the user a progress message in ACT mode without waiting for a reply, and
//! blocks a second call in a row so the model gets back to work.

use serde::Deserialize;
use toolshed_plugin_api::sdk::conversation;
use toolshed_plugin_api::services;
use toolshed_plugin_api::{
    export_plugin, result, Failure, HostClient, Outcome, Tool, ToolCall, ToolDeclaration, ToolInit,
};

mod spec;

/// The answer to a second call in a row (not counted as a mistake, as in Cline).
pub const BLOCKED: &str = "[BLOCKED] You cannot call act_mode_respond consecutively. Your next action MUST be a different tool that performs actual work: read_file, replace_in_file, write_to_file, execute_command, list_files, search_files, etc. Stop explaining and start doing.";
/// The answer once the message is shown.
pub const DISPLAYED: &str = "[Message displayed. Now proceed with your next tool call - it must be a different tool (read_file, replace_in_file, execute_command, etc.), not act_mode_respond again.]";

/// The tool's input.
#[derive(Debug, Deserialize)]
pub struct ActModeRespondArgs {
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    response: Option<String>,
}

/// The handler.
pub struct ActModeRespond;

impl Tool for ActModeRespond {
    type Args = ActModeRespondArgs;

    fn declaration() -> ToolDeclaration {
        let mut declaration = toolshed_plugin_api::declare("act_mode_respond", spec::DESCRIPTION, &[]);
        // `prepare` always proceeds: the runtime skips it and runs `execute` at once.
        declaration.capabilities.push(toolshed_plugin_api::capability::PROCEEDS.to_owned());
        declaration.checks_parameters = true;
        declaration.specs = spec::specs();
        declaration
    }

    fn new(_: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(ActModeRespond))
    }

    fn execute(&self, call: &ToolCall<ActModeRespondArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let settings = match host.task_settings(&call.task) {
            Ok(settings) => settings,
            Err(e) => return Ok(conversation::service_error::<services::TaskSettingsService>(&call.tool, &e)),
        };
        // Cline's order: the mode, then the repeat, then the parameter.
        if settings.mode != "act" {
            return Ok(result::mistake(format!(
                "The act_mode_respond tool is only available in ACT MODE. You are currently in {} MODE. Please use the appropriate tool for your current mode.",
                settings.mode.to_uppercase()
            )));
        }
        if settings.last_tool.as_deref() == Some("act_mode_respond") {
            return Ok(result::text(BLOCKED));
        }
        let Some(response) = call.input.response.as_deref().filter(|r| !r.is_empty()) else {
            return Ok(result::missing_parameter("response"));
        };
        host.say("text", response, false);
        Ok(result::text(DISPLAYED))
    }
}

mod export {
    use super::{export_plugin, ActModeRespond};

    export_plugin! { name: "act_mode_respond", version: env!("CARGO_PKG_VERSION"), tools: [ActModeRespond] }
}
