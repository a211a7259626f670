//! Cline's `use_subagents`: up to five prompts, each run as a subagent — a child task of this one with a
//! restricted tool set, its own state and no UI — in parallel, through the host's `subagents.spawn` service
//! (the coordinator owns the lifecycle; the host's agent driver is the model). The result is Cline's summary:
//! totals, then each prompt's status and its result or error cut to 1,200 characters.
//!
//! Configured agents appear as their own tools, `use_subagent_<name>`, with one `prompt`; the runtime routes
//! them here as `prompt_1` plus the agent's name in `agent`.

use serde_json::{Map, Value};
use toolshed_plugin_api::services::{self, SubagentOutcome, SubagentsSpawnRequest};
use toolshed_plugin_api::{
    export_plugin, result, Failure, HostClient, Outcome, Prepared, Risk, ServiceErrorKind, Tool, ToolCall,
    ToolDeclaration, ToolInit,
};

mod spec;

/// Cline's text when subagents are off; here, when the host offers no `subagents.spawn` (no agent driver, or
/// `[subagents] enabled = false`).
pub const DISABLED: &str = "Subagents are disabled. Enable them in Settings > Features to use this tool.";

/// The most prompts one call may carry.
pub const MAX_PROMPTS: usize = 5;

/// How much of each result or error the summary keeps (Cline's `excerpt`).
const EXCERPT_CHARS: usize = 1200;

/// The handler.
pub struct UseSubagents;

/// The prompts of a call: `prompt_1`, `prompt_2`, … in number order, trimmed, empty ones dropped. Keys past
/// `prompt_5` are counted too, so a call with too many is refused rather than cut short.
pub fn collect_prompts(input: &Map<String, Value>) -> Vec<String> {
    let mut numbered: Vec<(u32, String)> = input
        .iter()
        .filter_map(|(key, value)| {
            let n: u32 = key.strip_prefix("prompt_")?.parse().ok().filter(|n| *n >= 1)?;
            let text = match value {
                Value::String(s) => s.trim().to_owned(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (!text.is_empty()).then_some((n, text))
        })
        .collect();
    numbered.sort_by_key(|(n, _)| *n);
    numbered.into_iter().map(|(_, text)| text).collect()
}

fn agent(input: &Map<String, Value>) -> Option<String> {
    input.get("agent").and_then(Value::as_str).map(str::trim).filter(|a| !a.is_empty()).map(str::to_owned)
}

/// JavaScript's `Number.prototype.toLocaleString()` in the `en-US` locale for whole numbers: groups of three
/// digits separated by commas.
pub fn locale_number(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Cline's `excerpt`: trimmed, and when longer than 1,200 characters (JavaScript string units) cut there
/// with `...` appended. A character is never split.
pub fn excerpt(text: Option<&str>) -> String {
    let trimmed = text.unwrap_or_default().trim();
    let mut units = 0;
    for (at, c) in trimmed.char_indices() {
        units += c.len_utf16();
        if units > EXCERPT_CHARS {
            return format!("{}...", &trimmed[..at]);
        }
    }
    trimmed.to_owned()
}

/// Cline's summary of a batch of subagent runs.
pub fn summary(outcomes: &[SubagentOutcome]) -> String {
    let failures = outcomes.iter().filter(|o| o.status != "completed").count();
    let calls: u64 = outcomes.iter().map(|o| o.tool_calls).sum();
    let window = outcomes.iter().map(|o| o.context_window).max().unwrap_or(0);
    let tokens = outcomes.iter().map(|o| o.context_tokens).max().unwrap_or(0);
    let percent = outcomes
        .iter()
        .map(|o| if o.context_window > 0 { o.context_tokens as f64 / o.context_window as f64 * 100.0 } else { 0.0 })
        .fold(0.0_f64, f64::max);
    // `toFixed(1)` rounds half up.
    let percent = (percent * 10.0).round() / 10.0;
    let mut lines = vec![
        "Subagent results:".to_owned(),
        format!("Total: {}", outcomes.len()),
        format!("Succeeded: {}", outcomes.len() - failures),
        format!("Failed: {failures}"),
        format!("Tool calls: {calls}"),
        format!("Peak context usage: {} / {} ({percent:.1}%)", locale_number(tokens), locale_number(window)),
        String::new(),
    ];
    for (i, outcome) in outcomes.iter().enumerate() {
        let header = format!("[{}] {} - {}", i + 1, outcome.status.to_uppercase(), outcome.prompt);
        let detail = if outcome.status == "completed" {
            excerpt(outcome.result.as_deref())
        } else {
            excerpt(outcome.error.as_deref())
        };
        lines.push(if detail.is_empty() { header } else { format!("{header}\n{detail}") });
    }
    lines.join("\n")
}

/// What the model did wrong, if anything, before anything runs.
fn check(input: &Map<String, Value>) -> Result<Vec<String>, Prepared> {
    let prompts = collect_prompts(input);
    if prompts.is_empty() {
        // A configured agent's tool takes one `prompt`, as Cline names it.
        let name = if agent(input).is_some() { "prompt" } else { "prompt_1" };
        return Err(result::refuse(result::missing_parameter_text(name)));
    }
    if prompts.len() > MAX_PROMPTS && agent(input).is_none() {
        return Err(result::refuse(format!(
            "Too many subagent prompts provided ({}). Maximum is {MAX_PROMPTS}.",
            prompts.len()
        )));
    }
    Ok(prompts)
}

impl Tool for UseSubagents {
    type Args = Map<String, Value>;

    fn declaration() -> ToolDeclaration {
        let mut declaration = toolshed_plugin_api::declare("use_subagents", spec::DESCRIPTION, spec::PARAMS);
        declaration.checks_parameters = true;
        declaration.display = Some("[subagents]".to_owned());
        // Cline counts it among its read-only tools: the subagents' own calls go through the policy.
        declaration.capabilities = vec![toolshed_plugin_api::capability::READ_ONLY.to_owned()];
        for spec in declaration.specs.values_mut() {
            // Never offered inside a subagent run: no nested subagents.
            spec.context_requirements = vec!["!subagent_run".to_owned()];
        }
        declaration
    }

    fn new(_: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(UseSubagents))
    }

    fn prepare(&self, call: &ToolCall<Self::Args>, host: &HostClient<'_>) -> Result<Prepared, Failure> {
        if !host.offers::<services::SubagentsSpawn>() {
            return Ok(Prepared::Error(toolshed_plugin_api::ToolError {
                message: DISABLED.to_owned(),
                mistake: false,
            }));
        }
        let prompts = match check(&call.input) {
            Ok(prompts) => prompts,
            Err(refusal) => return Ok(refusal),
        };
        // Cline's approval notification.
        let message = match (prompts.len(), agent(&call.input)) {
            (1, Some(name)) => format!("Cline wants to use the '{name}' subagent"),
            (1, None) => "Cline wants to use a subagent".to_owned(),
            (n, _) => format!("Cline wants to use {n} subagents"),
        };
        Ok(result::approval("subagents", message, Vec::new(), Risk::Low))
    }

    fn execute(&self, call: &ToolCall<Self::Args>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        if !host.offers::<services::SubagentsSpawn>() {
            return Ok(result::error(DISABLED));
        }
        let prompts = match check(&call.input) {
            Ok(prompts) => prompts,
            Err(Prepared::Error(error)) => return Ok(Outcome::Error(error)),
            Err(_) => return Ok(result::mistake(result::missing_parameter_text("prompt_1"))),
        };
        let request = SubagentsSpawnRequest { prompts, agent: agent(&call.input) };
        Ok(match host.subagents_spawn(&request) {
            Ok(response) => result::text(summary(&response.outcomes)),
            Err(error) if error.kind == ServiceErrorKind::UnknownService => result::error(DISABLED),
            Err(error) => result::error(format!("Error running subagents: {}", error.message)),
        })
    }
}

mod export {
    use super::{export_plugin, UseSubagents};

    export_plugin! { name: "use_subagents", version: env!("CARGO_PKG_VERSION"), tools: [UseSubagents] }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn input(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn outcome(prompt: &str, status: &str, text: &str, calls: u64, tokens: u64, window: u64) -> SubagentOutcome {
        let completed = status == "completed";
        SubagentOutcome {
            prompt: prompt.to_owned(),
            status: status.to_owned(),
            result: completed.then(|| text.to_owned()),
            error: (!completed).then(|| text.to_owned()),
            tool_calls: calls,
            context_tokens: tokens,
            context_window: window,
        }
    }

    #[test]
    fn prompts_are_trimmed_ordered_and_empty_ones_dropped() {
        let given =
            input(json!({"prompt_2": "  b ", "prompt_1": "a", "prompt_3": "   ", "prompt_10": "j", "other": "x"}));
        assert_eq!(collect_prompts(&given), ["a", "b", "j"]);
        assert!(collect_prompts(&input(json!({"prompt_1": " "}))).is_empty());
    }

    #[test]
    fn too_many_and_no_prompts_are_refused_in_clines_words() {
        let six: Map<String, Value> = (1..=6).map(|n| (format!("prompt_{n}"), json!(format!("p{n}")))).collect();
        match check(&six) {
            Err(Prepared::Error(e)) => {
                assert_eq!(e.message, "Too many subagent prompts provided (6). Maximum is 5.");
                assert!(e.mistake);
            }
            _ => panic!("six prompts must be refused"),
        }
        match check(&input(json!({}))) {
            Err(Prepared::Error(e)) => {
                assert!(e.message.starts_with("Missing value for required parameter 'prompt_1'"))
            }
            _ => panic!("no prompt must be refused"),
        }
    }

    #[test]
    fn numbers_read_like_to_locale_string() {
        assert_eq!(locale_number(0), "0");
        assert_eq!(locale_number(999), "999");
        assert_eq!(locale_number(1000), "1,000");
        assert_eq!(locale_number(200_000), "200,000");
        assert_eq!(locale_number(1_234_567), "1,234,567");
    }

    #[test]
    fn excerpts_cut_at_1200_characters() {
        assert_eq!(excerpt(Some("  hi \n")), "hi");
        let long = "é".repeat(1300);
        let cut = excerpt(Some(&long));
        assert_eq!(cut, format!("{}...", "é".repeat(1200)));
        assert_eq!(excerpt(Some(&"x".repeat(1200))), "x".repeat(1200));
        assert_eq!(excerpt(None), "");
    }

    #[test]
    fn the_summary_has_clines_shape() {
        let outcomes = [
            outcome("find the parser", "completed", " Relevant file paths\nsrc/parser.rs ", 3, 12_345, 200_000),
            outcome("fail", "failed", "Subagent did not call attempt_completion.", 1, 500, 200_000),
            outcome("quiet", "completed", "", 1, 0, 0),
        ];
        assert_eq!(
            summary(&outcomes),
            "Subagent results:\nTotal: 3\nSucceeded: 2\nFailed: 1\nTool calls: 5\nPeak context usage: 12,345 / 200,000 (6.2%)\n\n\
             [1] COMPLETED - find the parser\nRelevant file paths\nsrc/parser.rs\n\
             [2] FAILED - fail\nSubagent did not call attempt_completion.\n\
             [3] COMPLETED - quiet"
        );
    }
}
