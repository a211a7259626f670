//! use_subagents' model-facing spec: Cline's description and parameters (generic variant).

/// The tool's description.
pub const DESCRIPTION: &str = "Run up to five focused in-process subagents in parallel. Each subagent gets its own prompt and returns a comprehensive research result with tool and token stats. Use this for broad exploration when reading many files would consume the main agent's context window. You do not need to launch multiple subagents every time; using one subagent is valid when it avoids unnecessary context usage for light discovery work.";

/// The parameters in prompt order: name, required, instruction.
pub const PARAMS: &[(&str, bool, &str)] = &[
    ("prompt_1", true, "First subagent prompt."),
    ("prompt_2", false, "Optional second subagent prompt."),
    ("prompt_3", false, "Optional third subagent prompt."),
    ("prompt_4", false, "Optional fourth subagent prompt."),
    ("prompt_5", false, "Optional fifth subagent prompt."),
];
