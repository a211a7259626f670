//! report_bug's model-facing spec. Cline v4.0.10 has no `ClineToolSpec` for it: it defines the tool in the
//! instructions of its `/reportbug` command (`reportBugToolResponse` in `core/prompts/commands.ts`), and these
//! are that definition's texts. Cline calls the last two parameters optional although its handler refuses a
//! call without them; so does ours (with Cline's missing-parameter text), and the spec says what Cline's says.

use toolshed_plugin_api::ParamSpec;

/// The tool's description.
pub const DESCRIPTION: &str = "Your task is to fill in all of the required fields for a issue/bug report on github. You should attempt to get the user to be as verbose as possible with their description of the bug/issue they encountered. Still, it's okay, when the user is unaware of some of the details, to set those fields as \"N/A\".";

/// The parameters in prompt order: name, required, instruction, usage.
const PARAMS: [(&str, bool, &str, &str); 5] = [
    ("title", true, "Concise description of the issue.", "Title of the issue"),
    (
        "what_happened",
        true,
        "What happened and also what the user expected to happen instead.",
        "Description of the issue",
    ),
    ("steps_to_reproduce", true, "What steps are required to reproduce the bug.", "Steps to reproduce the issue"),
    ("api_request_output", false, "Relevant API request output.", "Output from the LLM API related to the bug"),
    (
        "additional_context",
        false,
        "Any other context about this bug not already mentioned.",
        "Other issue details not already covered",
    ),
];

/// The parameters in prompt order.
pub fn parameters() -> Vec<ParamSpec> {
    PARAMS
        .iter()
        .map(|&(name, required, instruction, usage)| ParamSpec::new(name, required, instruction).usage(usage))
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::ReportBug;
    use toolshed_plugin_api::Tool;

    #[test]
    fn the_slash_commands_definition_with_its_optional_parameters() {
        let declaration = ReportBug::declaration();
        let spec = &declaration.specs["generic"];
        let params: Vec<(&str, bool, Option<&str>)> =
            spec.parameters.iter().map(|p| (p.name.as_str(), p.required, p.usage.as_deref())).collect();
        assert_eq!(
            params,
            [
                ("title", true, Some("Title of the issue")),
                ("what_happened", true, Some("Description of the issue")),
                ("steps_to_reproduce", true, Some("Steps to reproduce the issue")),
                ("api_request_output", false, Some("Output from the LLM API related to the bug")),
                ("additional_context", false, Some("Other issue details not already covered")),
            ]
        );
    }
}
