//! generate_explanation's model-facing spec: Cline's description and parameters (generic variant).

/// The tool's description.
pub const DESCRIPTION: &str = r#"Opens a multi-file diff view and generates AI-powered inline comments explaining the changes between two git references. Use this tool to help users understand code changes from git commits, pull requests, branches, or any git refs. The tool uses git to retrieve file contents and displays a side-by-side diff view with explanatory comments."#;

/// The parameters in prompt order: name, required, instruction.
pub const PARAMS: &[(&str, bool, &str)] = &[
    (
        "title",
        true,
        r#"A descriptive title for the diff view (e.g., 'Changes in commit abc123', 'PR #42: Add authentication', 'Changes between main and feature-branch')"#,
    ),
    (
        "from_ref",
        true,
        r#"The git reference for the 'before' state. Can be a commit hash, branch name, tag, or relative reference like HEAD~1, HEAD^, origin/main, etc."#,
    ),
    (
        "to_ref",
        false,
        r#"The git reference for the 'after' state. Can be a commit hash, branch name, tag, or relative reference. If not provided, compares to the current working directory (including uncommitted changes)."#,
    ),
];
