//! plan_mode_respond's model-facing specs per model family, Cline v4.0.10's `tools/plan_mode_respond.ts`: the
//! generic one, `gpt-5-native`'s (which `native-next-gen` copies) and `gemini3`'s. Cline offers the tool in
//! both modes (no mode requirement): the prompt tells the model it is for PLAN MODE only.

use std::collections::BTreeMap;
use toolshed_plugin_api::{ParamSpec, ToolSpec};

/// The description of the generic and the native families.
pub const DESCRIPTION: &str = "Respond to the user's inquiry in an effort to plan a solution to the user's task. This tool should ONLY be used when you have already explored the relevant files and are ready to present a concrete plan. DO NOT use this tool to announce what files you're going to read - just read them first. This tool is only available in PLAN MODE. The environment_details will specify the current mode; if it is not PLAN_MODE then you should not use this tool.
However, if while writing your response you realize you actually need to do more exploration before providing a complete plan, you can add the optional needs_more_exploration parameter to indicate this. This allows you to acknowledge that you should have done more exploration first, and signals that your next message will use exploration tools instead.";

/// `gemini3`'s description.
const GEMINI_3_DESCRIPTION: &str = "Respond with a plan that outlines a solution to the user's request. This tool should ONLY be used when you have already explored the relevant files and are ready to present a concrete plan. Only use this tool after you have explored relevant files and collected sufficient context to create a detailed, accurate plan. This tool is only available in PLAN MODE, as indicated by the environment_details.
If it becomes apparent that additional exploration is required while the plan_mode_respond response is being generated, the optional needs_more_exploration parameter can be toggled to enable further research. This allows you to acknowledge that more exploration is required before the final plan_mode_respond is generated, and signals that your next message will use exploration tools instead.";

/// The example value of `needs_more_exploration` (generic and `gemini3`).
const EXPLORATION_USAGE: &str =
    "true or false (optional, but you MUST set to true if in <response> you need to read files or use other exploration tools)";

/// The example value of `task_progress` (generic and `gemini3`).
const PROGRESS_USAGE: &str = "Checklist here (If you have presented the user with concrete steps or requirements, you can optionally include a todo list outlining these steps.)";

/// The families that share the `gpt-5-native` spec.
const NATIVE_FAMILIES: [&str; 2] = ["gpt-5-native", "native-next-gen"];

fn spec(description: &str, parameters: Vec<ParamSpec>) -> ToolSpec {
    ToolSpec {
        id: "plan_mode_respond".to_owned(),
        name: "plan_mode_respond".to_owned(),
        description: description.to_owned(),
        parameters,
        context_requirements: Vec::new(),
    }
}

/// The specs by family.
pub fn specs() -> BTreeMap<String, ToolSpec> {
    let generic = spec(
        DESCRIPTION,
        vec![
            ParamSpec::new(
                "response",
                true,
                "The response to provide to the user. Do not try to use tools in this parameter, this is simply a chat response. (You MUST use the response parameter, do not simply place the response text directly within <plan_mode_respond> tags.)",
            )
            .usage("Your response here"),
            ParamSpec::new(
                "needs_more_exploration",
                false,
                "Set to true if while formulating your response that you found you need to do more exploration with tools, for example reading files. (Remember, you can explore the project with tools like read_file in PLAN MODE without the user having to toggle to ACT MODE.) Defaults to false if not specified.",
            )
            .usage(EXPLORATION_USAGE)
            .kind("boolean"),
            // Cline's text starts with a space here.
            ParamSpec::new(
                "task_progress",
                false,
                " A checklist showing task progress after this tool use is completed. (See 'Updating Task Progress' section for more details)",
            )
            .usage(PROGRESS_USAGE)
            .depends_on("focus_chain"),
        ],
    );
    let native = spec(
        DESCRIPTION,
        vec![
            ParamSpec::new("response", true, "The response to provide to the user."),
            ParamSpec::new(
                "task_progress",
                false,
                "A checklist showing task progress with the latest status of each subtasks included previously if any.",
            ),
        ],
    );
    let gemini = spec(
        GEMINI_3_DESCRIPTION,
        vec![
            ParamSpec::new("response", true, "A chat message response to the user.").usage("Your response here"),
            ParamSpec::new(
                "needs_more_exploration",
                false,
                "needs_more_exploration can be set to true if it is determined that further exploration with read_file/search tools is necessary to formulate a complete plan. This determination can be reached during the response generation process, but should not be acknowledged until this parameter is set to true if required.",
            )
            .usage(EXPLORATION_USAGE)
            .kind("boolean"),
            ParamSpec::new(
                "task_progress",
                false,
                "A checklist showing task progress after this tool use is completed. If you are presenting a final implementation plan to the user with needs_more_exploration set to false, you should include a checklist of items to be completed during Act Mode when implementation is underway. (See 'Updating Task Progress' section for more details)",
            )
            .usage(PROGRESS_USAGE)
            .depends_on("focus_chain"),
        ],
    );
    NATIVE_FAMILIES
        .iter()
        .map(|family| ((*family).to_owned(), native.clone()))
        .chain([("generic".to_owned(), generic), ("gemini3".to_owned(), gemini)])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each parameter as (name, required, type, usage).
    fn params(spec: &ToolSpec) -> Vec<(&str, bool, &str, Option<&str>)> {
        spec.parameters.iter().map(|p| (p.name.as_str(), p.required, p.kind.as_str(), p.usage.as_deref())).collect()
    }

    #[test]
    fn every_family_offers_it_in_both_modes_with_its_own_parameters() {
        let specs = specs();
        assert_eq!(specs.keys().collect::<Vec<_>>(), ["gemini3", "generic", "gpt-5-native", "native-next-gen"]);
        assert!(specs.values().all(|spec| spec.context_requirements.is_empty()));
        assert_eq!(
            params(&specs["generic"]),
            [
                ("response", true, "string", Some("Your response here")),
                ("needs_more_exploration", false, "boolean", Some(EXPLORATION_USAGE)),
                ("task_progress", false, "string", Some(PROGRESS_USAGE)),
            ]
        );
        assert_eq!(params(&specs["gemini3"]), params(&specs["generic"]));
        assert_ne!(specs["gemini3"].description, specs["generic"].description);
        assert_eq!(
            params(&specs["native-next-gen"]),
            [("response", true, "string", None), ("task_progress", false, "string", None)]
        );
        assert_eq!(specs["gpt-5-native"], specs["native-next-gen"]);
        // The native checklist is offered without the focus chain, as in Cline; the others need it.
        assert!(specs["native-next-gen"].parameters[1].dependencies.is_empty());
        assert_eq!(specs["generic"].parameters[2].dependencies, ["focus_chain"]);
    }
}
