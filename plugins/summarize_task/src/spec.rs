//! summarize_task's model-facing spec: Cline's description and parameters (generic variant).

/// The tool's description.
pub const DESCRIPTION: &str = r#"Summarize the task so far so the conversation can continue after the earlier history is removed from the context window. The summary replaces the conversation history."#;

/// The parameters in prompt order: name, required, instruction.
pub const PARAMS: &[(&str, bool, &str)] = &[(
    "context",
    true,
    r#"A detailed summary of the conversation so far, with these sections: 1. Primary Request and Intent, 2. Key Technical Concepts, 3. Files and Code Sections, 4. Problem Solving, 5. Pending Tasks, 6. Task Evolution, 7. Current Work, 8. Next Step, 9. Required Files (a list of file paths, one per line starting with "- ")."#,
)];
