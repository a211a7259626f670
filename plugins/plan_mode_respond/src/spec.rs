//! plan_mode_respond's model-facing spec: Cline's description and parameters (generic variant).

/// The tool's description.
pub const DESCRIPTION: &str = r#"Respond to the user's inquiry in an effort to plan a solution to the user's task. This tool should ONLY be used when you have already explored the relevant files and are ready to present a concrete plan. DO NOT use this tool to announce what files you're going to read - just read them first. This tool is only available in PLAN MODE. The environment_details will specify the current mode; if it is not PLAN_MODE then you should not use this tool.
However, if while writing your response you realize you actually need to do more exploration before providing a complete plan, you can add the optional needs_more_exploration parameter to indicate this. This allows you to acknowledge that you should have done more exploration first, and signals that your next message will use exploration tools instead."#;

/// The parameters in prompt order: name, required, instruction.
pub const PARAMS: &[(&str, bool, &str)] = &[
    (
        "response",
        true,
        r#"The response to provide to the user. Do not try to use tools in this parameter, this is simply a chat response. (You MUST use the response parameter, do not simply place the response text directly within <plan_mode_respond> tags.)"#,
    ),
    (
        "needs_more_exploration",
        false,
        r#"Set to true if while formulating your response that you found you need to do more exploration with tools, for example reading files. (Remember, you can explore the project with tools like read_file in PLAN MODE without the user having to toggle to ACT MODE.) Defaults to false if not specified."#,
    ),
];
