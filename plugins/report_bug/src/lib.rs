//! Cline's `report_bug`: shows the user a bug report to file as a GitHub issue. Filing it belongs to the
//! host, so the plugin hands the report to the host's `task.report_bug` service; a host without it gets a
//! clear tool error.

use serde::Deserialize;
use toolshed_plugin_api::sdk::conversation;
use toolshed_plugin_api::services::{self, BugReport};
use toolshed_plugin_api::{
    export_plugin, result, Failure, HostClient, Outcome, Tool, ToolCall, ToolDeclaration, ToolInit,
};

mod spec;

/// The tool's input: every parameter is required, checked in Cline's order.
#[derive(Debug, Deserialize)]
pub struct ReportBugArgs {
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    title: Option<String>,
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    what_happened: Option<String>,
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    steps_to_reproduce: Option<String>,
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    api_request_output: Option<String>,
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    additional_context: Option<String>,
}

/// The handler.
pub struct ReportBug;

impl Tool for ReportBug {
    type Args = ReportBugArgs;

    fn declaration() -> ToolDeclaration {
        let mut declaration = toolshed_plugin_api::declare("report_bug", spec::DESCRIPTION, &[]);
        // `prepare` always proceeds: the runtime skips it and runs `execute` at once.
        declaration.capabilities.push(toolshed_plugin_api::capability::PROCEEDS.to_owned());
        declaration.checks_parameters = true;
        for spec in declaration.specs.values_mut() {
            spec.parameters = spec::parameters();
        }
        declaration
    }

    fn new(_: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(ReportBug))
    }

    fn execute(&self, call: &ToolCall<ReportBugArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let input = &call.input;
        let fields = [
            ("title", &input.title),
            ("what_happened", &input.what_happened),
            ("steps_to_reproduce", &input.steps_to_reproduce),
            ("api_request_output", &input.api_request_output),
            ("additional_context", &input.additional_context),
        ];
        let mut values = Vec::with_capacity(fields.len());
        for (name, value) in fields {
            match value.as_deref().filter(|v| !v.is_empty()) {
                Some(value) => values.push(value.to_owned()),
                None => return Ok(result::missing_parameter(name)),
            }
        }
        let [title, what_happened, steps_to_reproduce, api_request_output, additional_context] =
            <[String; 5]>::try_from(values).unwrap_or_default();
        let report = BugReport { title, what_happened, steps_to_reproduce, api_request_output, additional_context };
        let answer = match host.task_action::<services::TaskReportBug>(&report) {
            Ok(answer) => answer,
            Err(e) => return Ok(conversation::service_error::<services::TaskReportBug>(&call.tool, &e)),
        };
        Ok(match answer.text.as_deref().filter(|t| !t.is_empty()) {
            None if answer.images.is_empty() => result::text("The user accepted the creation of the Github issue."),
            text => conversation::with_images(
                format!(
                    "The user did not submit the bug, and provided feedback on the Github issue generated instead:\n<feedback>\n{}\n</feedback>",
                    text.unwrap_or_default()
                ),
                &answer.images,
            ),
        })
    }
}

mod export {
    use super::{export_plugin, ReportBug};

    export_plugin! { name: "report_bug", version: env!("CARGO_PKG_VERSION"), tools: [ReportBug] }
}
