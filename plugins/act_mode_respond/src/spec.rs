//! act_mode_respond's model-facing specs, Cline v4.0.10's `tools/act_mode_respond.ts`: one spec, declared for
//! the three families Cline declares it for (`gpt-5-native`, `native-next-gen`, `gemini3`); every other family
//! falls back to it, as Cline's lookup falls back to any family that has the tool. Cline offers it in both
//! modes: the handler refuses it in PLAN mode.

use std::collections::BTreeMap;
use toolshed_plugin_api::{ParamSpec, ToolSpec};

/// The tool's description.
pub const DESCRIPTION: &str = r#"Provide a progress update or preamble to the user during ACT MODE execution. This tool allows you to communicate your thought process and planned actions without interrupting the execution flow. After displaying your message, execution automatically continues, allowing you to proceed with subsequent tool calls immediately. This tool is only available in ACT MODE. This tool may not be called immediately after a previous act_mode_respond call.

IMPORTANT: Use this tool when it adds value to the user experience, but always follow it with an actual tool call - never call it twice in a row.

Use this tool when:
- After reading files and before making any edits - explain your analysis and what changes you plan to make
- When starting a new phase of work (e.g., transitioning from backend to frontend, or from one feature to another)
- During long sequences of operations to provide progress updates
- When your approach or strategy changes mid-task
- Before executing complex or potentially risky operations
- To explain why you're choosing one approach over another

Do NOT use this tool when you have completed all required actions and are ready to present the final output; in that case, use the attempt_completion tool instead.

CRITICAL CONSTRAINT: You MUST NOT call this tool more than once in a row. After using act_mode_respond, your next assistant message MUST either call a different tool or perform additional work without using act_mode_respond again. If you attempt to call act_mode_respond consecutively, the tool call will fail with an explicit error."#;

/// The families Cline declares the spec for.
const FAMILIES: [&str; 3] = ["gemini3", "gpt-5-native", "native-next-gen"];

/// The specs by family.
pub fn specs() -> BTreeMap<String, ToolSpec> {
    let spec = ToolSpec {
        id: "act_mode_respond".to_owned(),
        name: "act_mode_respond".to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: vec![
            ParamSpec::new(
                "response",
                true,
                "The message to provide to the user. This should explain what you're about to do, your current progress, or your reasoning. The response should be brief and conversational in tone, aiming to keep the user informed without overwhelming them with details.",
            )
            .usage("Your message here"),
            // Cline gives this one no dependency on the focus chain.
            ParamSpec::new(
                "task_progress",
                false,
                "A checklist showing task progress with the latest status of each subtasks included previously if any.",
            ),
        ],
        context_requirements: Vec::new(),
    };
    FAMILIES.iter().map(|family| ((*family).to_owned(), spec.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_families_share_one_spec_offered_in_both_modes() {
        let specs = specs();
        assert_eq!(specs.keys().collect::<Vec<_>>(), FAMILIES);
        let spec = &specs["gpt-5-native"];
        assert!(specs.values().all(|other| other == spec));
        assert!(spec.context_requirements.is_empty());
        let params: Vec<(&str, bool, Option<&str>)> =
            spec.parameters.iter().map(|p| (p.name.as_str(), p.required, p.usage.as_deref())).collect();
        assert_eq!(params, [("response", true, Some("Your message here")), ("task_progress", false, None)]);
        assert!(spec.parameters[1].dependencies.is_empty());
    }
}
