//! attempt_completion's model-facing specs per model family, Cline v4.0.10's `tools/attempt_completion.ts`:
//! the generic one, `gpt-5`'s (a stricter note), and `native-next-gen`'s, which `gpt-5-native` copies.

use std::collections::BTreeMap;
use toolshed_plugin_api::{ParamSpec, ToolSpec};

/// The generic description.
pub const DESCRIPTION: &str = "After each tool use, the user will respond with the result of that tool use, i.e. if it succeeded or failed, along with any reasons for failure. Once you've received the results of tool uses and can confirm that the task is complete, use this tool to present the result of your work to the user. Optionally you may provide a CLI command to showcase the result of your work. The user may respond with feedback if they are not satisfied with the result, which you can use to make improvements and try again.
IMPORTANT NOTE: This tool CANNOT be used until you've confirmed from the user that any previous tool uses were successful. Failure to do so will result in code corruption and system failure. Before using this tool, you must ask yourself in <thinking></thinking> tags if you've confirmed from the user that any previous tool uses were successful. If not, then DO NOT use this tool.";

/// `gpt-5`'s description.
const GPT_5_DESCRIPTION: &str = "After each tool use, the user will respond with the result of that tool use, i.e. if it succeeded or failed, along with any reasons for failure. Once you've received the results of tool uses and can confirm that the task is complete, use this tool to present the result of your work to the user. Optionally you may provide a CLI command to showcase the result of your work. The user may respond with feedback if they are not satisfied with the result, which you can use to make improvements and try again.
IMPORTANT NOTE: This tool CANNOT be used until you've confirmed from the user that any previous tool uses were successful and all tasks have been completed in full. Failure to do so will result in code corruption and system failure. Before using this tool, you must ask yourself in <thinking></thinking> tags if you've confirmed from the user that any previous tool uses were successful and all goals defined by the user have been completed. If not, then DO NOT use this tool.";

/// The description of the native families.
const NATIVE_DESCRIPTION: &str = "Once you've completed the user's task, use this tool to present the final result to the user, including a brief and very short (1-2 paragraph) summary of the task and what was done to resolve it. Provide the basics, hitting the highlights, but do delve into the specifics. You should only call this tool when you have completed all tasks in the task_progress list, and completed all changes that are necessary to satisfy the user's request. You should not provide the contents of the task_progress list in the result parameter, it must be included in the task_progress parameter.";

/// The families that share the `native-next-gen` spec.
const NATIVE_FAMILIES: [&str; 2] = ["gpt-5-native", "native-next-gen"];

fn spec(description: &str, parameters: Vec<ParamSpec>) -> ToolSpec {
    ToolSpec {
        id: "attempt_completion".to_owned(),
        name: "attempt_completion".to_owned(),
        description: description.to_owned(),
        parameters,
        context_requirements: Vec::new(),
    }
}

/// The parameters of the generic and the `gpt-5` spec: Cline's own `task_progress`, whose note the XML
/// section adds to the description.
fn xml_parameters() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new(
            "result",
            true,
            "The result of the tool use. This should be a clear, specific description of the result.",
        )
        .usage("Your final result description here"),
        ParamSpec::new(
            "command",
            false,
            "A CLI command to execute to show a live demo of the result to the user. For example, use `open index.html` to display a created html website, or `open localhost:3000` to display a locally running development server. But DO NOT use commands like `echo` or `cat` that merely print text. This command should be valid for the current operating system. Ensure the command is properly formatted and does not contain any harmful instructions",
        )
        .usage("Your command here (optional)"),
        ParamSpec::new(
            "task_progress",
            false,
            "A checklist showing task progress after this tool use is completed. (See 'Updating Task Progress' section for more details)",
        )
        .usage("Checklist here (required if you used task_progress in previous tool uses)")
        .depends_on("focus_chain")
        .description_note(
            "If you were using task_progress to update the task progress, you must include the completed list in the result as well.",
        ),
    ]
}

/// The specs by family.
pub fn specs() -> BTreeMap<String, ToolSpec> {
    let native = spec(
        NATIVE_DESCRIPTION,
        vec![
            ParamSpec::new(
                "result",
                true,
                "A clear, brief and very short (1-2 paragraph) summary of the final result of the task.",
            ),
            ParamSpec::new(
                "command",
                false,
                "An actionable terminal command that is non-verbose that allows user to review the result of your work. For example, use `start localhost:3000` to start a locally running development server. Commands like `echo` or `cat` that merely print text or open a file are not allowed. Ensure the command is properly formatted for user's OS and does not contain any harmful instructions",
            ),
            ParamSpec::new(
                "task_progress",
                false,
                "A checklist showing task progress with the latest status of each subtasks included previously, if any. If you are calling attempt completion, and all items in this list have been completed, they must be marked as completed in this response.",
            )
            .depends_on("focus_chain"),
        ],
    );
    NATIVE_FAMILIES
        .iter()
        .map(|family| ((*family).to_owned(), native.clone()))
        .chain([
            ("generic".to_owned(), spec(DESCRIPTION, xml_parameters())),
            ("gpt-5".to_owned(), spec(GPT_5_DESCRIPTION, xml_parameters())),
        ])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpt_5_differs_in_its_description_and_the_native_families_share_a_spec_without_examples() {
        let specs = specs();
        assert_eq!(specs.keys().collect::<Vec<_>>(), ["generic", "gpt-5", "gpt-5-native", "native-next-gen"]);
        let (generic, gpt_5) = (&specs["generic"], &specs["gpt-5"]);
        assert_eq!(gpt_5.parameters, generic.parameters);
        assert_ne!(gpt_5.description, generic.description);
        // The checklist shows with the focus chain only, and then adds its note to the description.
        let progress = &generic.parameters[2];
        assert_eq!(
            (progress.name.as_str(), &progress.dependencies[..]),
            ("task_progress", &["focus_chain".to_owned()][..])
        );
        assert!(progress
            .description_note
            .as_deref()
            .is_some_and(|note| note.starts_with("If you were using task_progress")));
        let usages: Vec<Option<&str>> = generic.parameters.iter().map(|p| p.usage.as_deref()).collect();
        assert_eq!(
            usages,
            [
                Some("Your final result description here"),
                Some("Your command here (optional)"),
                Some("Checklist here (required if you used task_progress in previous tool uses)")
            ]
        );
        let native = &specs["native-next-gen"];
        assert_eq!(&specs["gpt-5-native"], native);
        assert!(native.parameters.iter().all(|p| p.usage.is_none() && p.description_note.is_none()));
        assert_eq!(native.parameters[2].dependencies, ["focus_chain"]);
    }
}
