//! generate_explanation's model-facing spec, Cline v4.0.10's `tools/generate_explanation.ts`: one generic
//! spec. Cline hides it in its CLI (`isCliEnvironment`), where there is no diff view: here a host without
//! one sets the context flag `cli`.

use toolshed_plugin_api::ParamSpec;

/// The tool's description.
pub const DESCRIPTION: &str = "Opens a multi-file diff view and generates AI-powered inline comments explaining the changes between two git references. Use this tool to help users understand code changes from git commits, pull requests, branches, or any git refs. The tool uses git to retrieve file contents and displays a side-by-side diff view with explanatory comments.";

/// The parameters in prompt order.
pub fn parameters() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new(
            "title",
            true,
            "A descriptive title for the diff view (e.g., 'Changes in commit abc123', 'PR #42: Add authentication', 'Changes between main and feature-branch')",
        )
        .usage("Changes in last commit"),
        ParamSpec::new(
            "from_ref",
            true,
            "The git reference for the 'before' state. Can be a commit hash, branch name, tag, or relative reference like HEAD~1, HEAD^, origin/main, etc.",
        )
        .usage("HEAD~1"),
        ParamSpec::new(
            "to_ref",
            false,
            "The git reference for the 'after' state. Can be a commit hash, branch name, tag, or relative reference. If not provided, compares to the current working directory (including uncommitted changes).",
        )
        .usage("HEAD"),
    ]
}

#[cfg(test)]
mod tests {
    use crate::GenerateExplanation;
    use toolshed_plugin_api::Tool;

    #[test]
    fn one_generic_spec_hidden_without_a_diff_view_with_clines_examples() {
        let declaration = GenerateExplanation::declaration();
        let spec = &declaration.specs["generic"];
        assert_eq!((declaration.specs.len(), spec.context_requirements.as_slice()), (1, &["!cli".to_owned()][..]));
        let usages: Vec<(&str, bool, Option<&str>)> =
            spec.parameters.iter().map(|p| (p.name.as_str(), p.required, p.usage.as_deref())).collect();
        assert_eq!(
            usages,
            [
                ("title", true, Some("Changes in last commit")),
                ("from_ref", true, Some("HEAD~1")),
                ("to_ref", false, Some("HEAD"))
            ]
        );
    }
}
