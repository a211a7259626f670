//! Cline's `ask_followup_question`: asks the user through the host's `ask` service and returns their answer as
//! `<answer>…</answer>`; in YOLO mode nobody answers and the model is told to find out with tools.
//!
//! Cline shows any `options` it can parse; we refuse options that are not a JSON array of 2–5 strings with a
//! clear error, so the model learns the format instead of the user seeing a broken choice.

use serde::Deserialize;
use toolshed_plugin_api::sdk::conversation;
use toolshed_plugin_api::services;
use toolshed_plugin_api::{
    export_plugin, result, Failure, HostClient, Outcome, Tool, ToolCall, ToolDeclaration, ToolInit,
};

mod spec;

/// The tool's input.
#[derive(Debug, Deserialize)]
pub struct AskArgs {
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    question: Option<String>,
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    options: Option<String>,
}

/// The handler.
pub struct AskFollowupQuestion;

/// Cline's YOLO-mode answer.
pub fn yolo_text(question: &str) -> String {
    format!(
        "[YOLO MODE: User input is not available in non-interactive mode. You must use available tools (read_file, list_files, search_files, etc.) to gather the information you need instead of asking the user. Proceed with using tools to find the answer to your question: \"{question}\"]"
    )
}

/// The options as a list, or the error the model reads: they must be a JSON array of 2 to 5 strings.
pub fn parse_options(raw: Option<&str>) -> Result<Vec<String>, String> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(Vec::new());
    };
    let invalid = |why: &str| {
        format!(
            "Invalid value for parameter 'options': {why}. Provide a JSON array of 2-5 strings, e.g. [\"Option 1\", \"Option 2\"], or leave options out."
        )
    };
    let items: Vec<serde_json::Value> = serde_json::from_str(raw).map_err(|_| invalid("it is not a JSON array"))?;
    if !(2..=5).contains(&items.len()) {
        return Err(invalid(&format!("it has {} options", items.len())));
    }
    items
        .into_iter()
        .map(|item| match item {
            serde_json::Value::String(s) => Ok(s),
            _ => Err(invalid("every option must be a string")),
        })
        .collect()
}

impl Tool for AskFollowupQuestion {
    type Args = AskArgs;

    fn declaration() -> ToolDeclaration {
        let mut declaration = toolshed_plugin_api::declare("ask_followup_question", spec::DESCRIPTION, &[]);
        // `prepare` always proceeds: the runtime skips it and runs `execute` at once.
        declaration.capabilities.push(toolshed_plugin_api::capability::PROCEEDS.to_owned());
        declaration.checks_parameters = true;
        declaration.display = Some("[{tool} for '{question}']".to_owned());
        declaration.specs = spec::specs();
        declaration
    }

    fn new(_: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(AskFollowupQuestion))
    }

    fn execute(&self, call: &ToolCall<AskArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let Some(question) = call.input.question.as_deref().filter(|q| !q.is_empty()) else {
            return Ok(result::missing_parameter("question"));
        };
        let options = match parse_options(call.input.options.as_deref()) {
            Ok(options) => options,
            Err(message) => return Ok(result::mistake(message)),
        };
        let settings = match host.task_settings(&call.task) {
            Ok(settings) => settings,
            Err(e) => return Ok(conversation::service_error::<services::TaskSettingsService>(&call.tool, &e)),
        };
        if settings.yolo {
            host.say("info", &format!("[YOLO MODE] Auto-responding to question: \"{}\"", preview(question)), false);
            return Ok(result::text(yolo_text(question)));
        }
        let answer = match host.ask("followup", question, options) {
            Ok(answer) => answer,
            Err(e) => return Ok(conversation::service_error::<services::Ask>(&call.tool, &e)),
        };
        if !answer.answered {
            return Ok(result::error(
                "No user is available to answer this question. Use the available tools (read_file, list_files, search_files, etc.) to find the answer instead of asking.",
            ));
        }
        let text = answer.text.unwrap_or_default();
        Ok(conversation::with_images(format!("<answer>\n{text}\n</answer>"), &answer.images))
    }
}

/// Cline's 100-character preview of the question for the YOLO-mode notice.
fn preview(question: &str) -> String {
    match question.char_indices().nth(100) {
        Some((cut, _)) => format!("{}...", &question[..cut]),
        None => question.to_owned(),
    }
}

mod export {
    use super::{export_plugin, AskFollowupQuestion};

    export_plugin! { name: "ask_followup_question", version: env!("CARGO_PKG_VERSION"), tools: [AskFollowupQuestion] }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn options_are_two_to_five_strings() {
        assert_eq!(parse_options(None).unwrap(), Vec::<String>::new());
        assert_eq!(parse_options(Some(r#"["a", "b"]"#)).unwrap(), vec!["a", "b"]);
        assert!(parse_options(Some(r#"["a"]"#)).unwrap_err().contains("it has 1 options"));
        assert!(parse_options(Some(r#"["a","b","c","d","e","f"]"#)).unwrap_err().contains("it has 6 options"));
        assert!(parse_options(Some("a, b")).unwrap_err().contains("not a JSON array"));
        assert!(parse_options(Some("[1, 2]")).unwrap_err().contains("must be a string"));
    }

    #[test]
    fn the_yolo_notice_cuts_long_questions() {
        assert_eq!(preview("short"), "short");
        assert_eq!(preview(&"x".repeat(120)), format!("{}...", "x".repeat(100)));
    }
}
