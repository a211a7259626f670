//! new_task's model-facing spec, Cline v4.0.10's `tools/new_task.ts`: one generic spec, hidden in YOLO mode.

use toolshed_plugin_api::ParamSpec;

/// The tool's description.
pub const DESCRIPTION: &str = r#"Request to create a new task with preloaded context covering the conversation with the user up to this point and key information for continuing with the new task. With this tool, you will create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions, with a focus on the most relevant information required for the new task.
Among other important areas of focus, this summary should be thorough in capturing technical details, code patterns, and architectural decisions that would be essential for continuing with the new task. The user will be presented with a preview of your generated context and can choose to create a new task or keep chatting in the current conversation. The user may choose to start a new task at any point."#;

/// What `context` should hold.
const CONTEXT: &str = r#"The context to preload the new task with. If applicable based on the current task, this should include:
  1. Current Work: Describe in detail what was being worked on prior to this request to create a new task. Pay special attention to the more recent messages / conversation.
  2. Key Technical Concepts: List all important technical concepts, technologies, coding conventions, and frameworks discussed, which might be relevant for the new task.
  3. Relevant Files and Code: If applicable, enumerate specific files and code sections examined, modified, or created for the task continuation. Pay special attention to the most recent messages and changes.
  4. Problem Solving: Document problems solved thus far and any ongoing troubleshooting efforts.
  5. Pending Tasks and Next Steps: Outline all pending tasks that you have explicitly been asked to work on, as well as list the next steps you will take for all outstanding work, if applicable. Include code snippets where they add clarity. For any next steps, include direct quotes from the most recent conversation showing exactly what task you were working on and where you left off. This should be verbatim to ensure there's no information loss in context between tasks. It's important to be detailed here."#;

/// The parameters in prompt order.
pub fn parameters() -> Vec<ParamSpec> {
    vec![ParamSpec::new("context", true, CONTEXT).usage("context to preload new task with")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NewTask;
    use toolshed_plugin_api::Tool;

    #[test]
    fn one_generic_spec_hidden_in_yolo_mode_with_clines_example() {
        let declaration = NewTask::declaration();
        let spec = &declaration.specs["generic"];
        assert_eq!((declaration.specs.len(), spec.context_requirements.as_slice()), (1, &["!yolo".to_owned()][..]));
        assert_eq!(
            spec.parameters,
            [ParamSpec::new("context", true, CONTEXT).usage("context to preload new task with")]
        );
    }
}
