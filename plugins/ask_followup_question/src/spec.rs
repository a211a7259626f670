//! ask_followup_question's model-facing specs per model family, Cline v4.0.10's
//! `tools/ask_followup_question.ts`: the generic one, and one for `native-next-gen` that `gpt-5-native` copies.
//! Every family hides the tool in YOLO mode, as Cline does.

use std::collections::BTreeMap;
use toolshed_plugin_api::{ParamSpec, ToolSpec};

/// The generic description.
pub const DESCRIPTION: &str = "Ask the user a question to gather additional information needed to complete the task. This tool should be used when you encounter ambiguities, need clarification, or require more details to proceed effectively. It allows for interactive problem-solving by enabling direct communication with the user. Use this tool judiciously to maintain a balance between gathering necessary information and avoiding excessive back-and-forth.";

/// The description of the native families.
const NATIVE_DESCRIPTION: &str = "Ask user a question for clarifying or gathering information needed to complete the task. For example, ask the user clarifying questions about a key implementation decision. You should only ask one question.";

/// The families that share the `native-next-gen` spec.
const NATIVE_FAMILIES: [&str; 2] = ["gpt-5-native", "native-next-gen"];

fn spec(description: &str, parameters: Vec<ParamSpec>) -> ToolSpec {
    ToolSpec {
        id: "ask_followup_question".to_owned(),
        name: "ask_followup_question".to_owned(),
        description: description.to_owned(),
        parameters,
        context_requirements: vec!["!yolo".to_owned()],
    }
}

/// The specs by family.
pub fn specs() -> BTreeMap<String, ToolSpec> {
    let generic = spec(
        DESCRIPTION,
        vec![
            ParamSpec::new(
                "question",
                true,
                "The question to ask the user. This should be a clear, specific question that addresses the information you need.",
            )
            .usage("Your question here"),
            ParamSpec::new(
                "options",
                false,
                "An array of 2-5 options for the user to choose from. Each option should be a string describing a possible answer. You may not always need to provide options, but it may be helpful in many cases where it can save the user from having to type out a response manually. IMPORTANT: NEVER include an option to toggle to Act mode, as this would be something you need to direct the user to do manually themselves if needed.",
            )
            .usage(r#"Array of options here (optional), e.g. ["Option 1", "Option 2", "Option 3"]"#),
            ParamSpec::task_progress(),
        ],
    );
    // Cline's native spec marks `options` required although its handler, like ours, asks without them; the
    // runtime's required-parameter check reads the generic spec, so a call without options still runs.
    let native = spec(
        NATIVE_DESCRIPTION,
        vec![
            ParamSpec::new("question", true, r#"The single question to ask the user. E.g. "How can I help you?""#),
            ParamSpec::new(
                "options",
                true,
                r#"An array of 2-5 options (e.x: "["Option 1", "Option 2", "Option 3"]") for the user to choose from. Each option should be a string describing a possible answer to the single question. You may not always need to provide options, but it may be helpful in many cases where it can save the user from having to type out a response manually. IMPORTANT: NEVER include an option to toggle to Act mode, as this would be something you need to direct the user to do manually themselves if needed."#,
            ),
            ParamSpec::task_progress(),
        ],
    );
    NATIVE_FAMILIES
        .iter()
        .map(|family| ((*family).to_owned(), native.clone()))
        .chain([("generic".to_owned(), generic)])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each parameter as (name, required, usage, dependencies).
    fn params(spec: &ToolSpec) -> Vec<(&str, bool, Option<&str>, &[String])> {
        spec.parameters.iter().map(|p| (p.name.as_str(), p.required, p.usage.as_deref(), &p.dependencies[..])).collect()
    }

    #[test]
    fn the_generic_spec_has_clines_usage_examples_and_the_native_ones_require_options() {
        let specs = specs();
        assert_eq!(specs.keys().collect::<Vec<_>>(), ["generic", "gpt-5-native", "native-next-gen"]);
        assert!(specs.values().all(|spec| spec.context_requirements == ["!yolo"]));
        let focus = ["focus_chain".to_owned()];
        assert_eq!(
            params(&specs["generic"]),
            [
                ("question", true, Some("Your question here"), &[][..]),
                (
                    "options",
                    false,
                    Some(r#"Array of options here (optional), e.g. ["Option 1", "Option 2", "Option 3"]"#),
                    &[]
                ),
                ("task_progress", false, Some("Checklist here (optional)"), &focus),
            ]
        );
        assert_eq!(
            params(&specs["native-next-gen"]),
            [
                ("question", true, None, &[][..]),
                ("options", true, None, &[]),
                ("task_progress", false, Some("Checklist here (optional)"), &focus),
            ]
        );
        assert_eq!(specs["gpt-5-native"], specs["native-next-gen"]);
        assert_eq!(specs["native-next-gen"].description, NATIVE_DESCRIPTION);
    }
}
