//! condense's model-facing spec: Cline's description and parameters (generic variant).

/// The tool's description.
pub const DESCRIPTION: &str = r#"Request to condense the conversation so far into a detailed summary, to free the context window. The user reviews the summary: they accept it, and the conversation history before it is removed, or give feedback on it."#;

/// The parameters in prompt order: name, required, instruction.
pub const PARAMS: &[(&str, bool, &str)] = &[(
    "context",
    true,
    r#"A detailed summary of the conversation so far: the user's explicit requests, your previous actions, the current work, key technical concepts, relevant files and code, problems solved, and pending tasks with next steps."#,
)];
