//! report_bug's model-facing spec: Cline's description and parameters (generic variant).

/// The tool's description.
pub const DESCRIPTION: &str = r#"Request to submit a bug report for Cline as a GitHub issue. The user reviews the report before it is filed, and may give feedback instead."#;

/// The parameters in prompt order: name, required, instruction.
pub const PARAMS: &[(&str, bool, &str)] = &[
    ("title", true, r#"A concise title of the issue."#),
    ("what_happened", true, r#"What happened, and what was expected to happen instead."#),
    ("steps_to_reproduce", true, r#"The steps to reproduce the bug."#),
    ("api_request_output", true, r#"The relevant API request output, if any."#),
    ("additional_context", true, r#"Any other context about the issue not already covered."#),
];
