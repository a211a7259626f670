//! Cline's `generate_explanation`: explains the changes between two git refs in the user's diff view. The view
//! and the model that writes the comments belong to the host, so the plugin hands the request to the host's
//! `task.explain` service and returns its summary; a host without it gets a clear tool error.

use serde::Deserialize;
use toolshed_plugin_api::sdk::conversation;
use toolshed_plugin_api::services::{self, ExplainRequest};
use toolshed_plugin_api::{
    export_plugin, result, Failure, HostClient, Outcome, Tool, ToolCall, ToolDeclaration, ToolInit,
};

mod spec;

/// The tool's input.
#[derive(Debug, Deserialize)]
pub struct GenerateExplanationArgs {
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    title: Option<String>,
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    from_ref: Option<String>,
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    to_ref: Option<String>,
}

/// The handler.
pub struct GenerateExplanation;

impl Tool for GenerateExplanation {
    type Args = GenerateExplanationArgs;

    fn declaration() -> ToolDeclaration {
        let mut declaration = toolshed_plugin_api::declare("generate_explanation", spec::DESCRIPTION, &[]);
        // `prepare` always proceeds: the runtime skips it and runs `execute` at once.
        declaration.capabilities.push(toolshed_plugin_api::capability::PROCEEDS.to_owned());
        declaration.checks_parameters = true;
        declaration.display = Some("[{tool} for '{title}']".to_owned());
        for spec in declaration.specs.values_mut() {
            spec.parameters = spec::parameters();
            spec.context_requirements = vec!["!cli".to_owned()];
        }
        declaration
    }

    fn new(_: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(GenerateExplanation))
    }

    fn execute(&self, call: &ToolCall<GenerateExplanationArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let input = &call.input;
        let Some(title) = input.title.as_deref().filter(|t| !t.is_empty()) else {
            return Ok(result::missing_parameter("title"));
        };
        let Some(from_ref) = input.from_ref.as_deref().filter(|f| !f.is_empty()) else {
            return Ok(result::missing_parameter("from_ref"));
        };
        let request = ExplainRequest {
            title: title.to_owned(),
            from_ref: from_ref.to_owned(),
            to_ref: input.to_ref.clone().filter(|t| !t.is_empty()),
        };
        Ok(match host.task_action::<services::TaskExplain>(&request) {
            Ok(answer) => {
                let refs = match &request.to_ref {
                    Some(to) => format!("'{from_ref}' and '{to}'"),
                    None => format!("'{from_ref}' and working directory"),
                };
                result::text(
                    answer.text.unwrap_or_else(|| format!("Generated explanations for the changes between {refs}.")),
                )
            }
            // The host's own failure texts (an invalid ref, not a repository) reach the model as tool errors.
            Err(e) if e.kind == toolshed_plugin_api::ServiceErrorKind::Failed => result::error(e.message),
            Err(e) => conversation::service_error::<services::TaskExplain>(&call.tool, &e),
        })
    }
}

mod export {
    use super::{export_plugin, GenerateExplanation};

    export_plugin! { name: "generate_explanation", version: env!("CARGO_PKG_VERSION"), tools: [GenerateExplanation] }
}
