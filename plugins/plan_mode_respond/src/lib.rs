//! Cline's `plan_mode_respond`: presents the plan to the user in PLAN mode and returns their reply, or the
//! switch to ACT mode (by the user's toggle, or automatically in YOLO mode through `task.set_mode`).
//!
//! Cline offers the tool in both modes (its description says PLAN MODE only) and, called in ACT mode outside
//! YOLO, would still ask; we refuse it there with the wording of act_mode_respond's mode error, so the model
//! picks the right tool.

use serde::Deserialize;
use toolshed_plugin_api::sdk::conversation;
use toolshed_plugin_api::services::{self, SetModeRequest};
use toolshed_plugin_api::{
    export_plugin, result, Failure, HostClient, Outcome, Tool, ToolCall, ToolDeclaration, ToolInit,
};

mod spec;

/// The reply of a user who switched to ACT mode.
pub const SWITCHED: &str = "[The user has switched to ACT MODE, so you may now proceed with the task.]";
/// The answer to `needs_more_exploration`.
pub const EXPLORE: &str =
    "[You have indicated that you need more exploration. Proceed with calling tools to continue the planning process.]";
/// The answer in YOLO mode while in ACT mode.
pub const GO_AHEAD: &str = "[Go ahead and execute.]";
/// The marker text the webview sends when the user switched modes with the toggle.
const TOGGLE_MARKER: &str = "PLAN_MODE_TOGGLE_RESPONSE";

/// The tool's input.
#[derive(Debug, Deserialize)]
pub struct PlanModeRespondArgs {
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    response: Option<String>,
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    options: Option<String>,
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_bool")]
    needs_more_exploration: bool,
}

/// The handler.
pub struct PlanModeRespond;

impl Tool for PlanModeRespond {
    type Args = PlanModeRespondArgs;

    fn declaration() -> ToolDeclaration {
        let mut declaration = toolshed_plugin_api::declare("plan_mode_respond", spec::DESCRIPTION, &[]);
        // `prepare` always proceeds: the runtime skips it and runs `execute` at once.
        declaration.capabilities.push(toolshed_plugin_api::capability::PROCEEDS.to_owned());
        declaration.checks_parameters = true;
        declaration.specs = spec::specs();
        declaration
    }

    fn new(_: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(PlanModeRespond))
    }

    fn execute(&self, call: &ToolCall<PlanModeRespondArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let input = &call.input;
        let Some(response) = input.response.as_deref().filter(|r| !r.is_empty()) else {
            return Ok(result::missing_parameter("response"));
        };
        if input.needs_more_exploration {
            return Ok(result::text(EXPLORE));
        }
        let settings = match host.task_settings(&call.task) {
            Ok(settings) => settings,
            Err(e) => return Ok(conversation::service_error::<services::TaskSettingsService>(&call.tool, &e)),
        };
        if settings.mode != "plan" {
            if settings.yolo {
                // Cline's safety valve: in YOLO mode the loop always continues.
                return Ok(result::text(GO_AHEAD));
            }
            return Ok(result::mistake(format!(
                "The plan_mode_respond tool is only available in PLAN MODE. You are currently in {} MODE. Please use the appropriate tool for your current mode.",
                settings.mode.to_uppercase()
            )));
        }
        if settings.yolo {
            let switch = SetModeRequest { mode: "act".to_owned() };
            if host.call::<services::TaskSetMode>(&switch).is_ok() {
                return Ok(result::text(SWITCHED));
            }
            host.log(toolshed_plugin_api::log_level::WARN, "YOLO MODE: failed to switch to ACT MODE; asking instead");
        }
        let options = conversation::parse_options(input.options.as_deref());
        let answer = match host.ask("plan_mode_respond", response, options) {
            Ok(answer) => answer,
            Err(e) => return Ok(conversation::service_error::<services::Ask>(&call.tool, &e)),
        };
        if !answer.answered {
            return Ok(result::error(
                "No user is available to respond to the plan. Continue planning with the available tools, or wait for the user to switch to ACT MODE.",
            ));
        }
        let text = answer.text.filter(|t| t != TOGGLE_MARKER).unwrap_or_default();
        let reply = if answer.switched_to_act {
            if text.is_empty() {
                SWITCHED.to_owned()
            } else {
                format!(
                    "{SWITCHED}\n\nThe user also provided the following message when switching to ACT MODE:\n<user_message>\n{text}\n</user_message>"
                )
            }
        } else {
            format!("<user_message>\n{text}\n</user_message>")
        };
        Ok(conversation::with_images(reply, &answer.images))
    }
}

mod export {
    use super::{export_plugin, PlanModeRespond};

    export_plugin! { name: "plan_mode_respond", version: env!("CARGO_PKG_VERSION"), tools: [PlanModeRespond] }
}
