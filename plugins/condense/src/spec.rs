//! condense's model-facing spec. Cline v4.0.10 has no `ClineToolSpec` for it: it defines the tool in the
//! instructions of its `/smol` command (`condenseToolResponse` in `core/prompts/commands.ts`), and these are
//! that definition's texts: its description, parameters and usage. Its `task_progress` shows with the focus
//! chain only, as there; Cline calls it required, but neither its handler nor ours asks for it (and the
//! runtime takes `task_progress` out of every call before any check), so it is declared optional.

use toolshed_plugin_api::ParamSpec;

/// The tool's description.
pub const DESCRIPTION: &str = "Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions. This summary should be thorough in capturing technical details, code patterns, and architectural decisions that would be essential for continuing with the conversation and supporting any continuing tasks.
The user will be presented with a preview of your generated summary and can choose to use it to compact their context window or keep chatting in the current conversation.
Users may refer to this tool as 'smol' or 'compact' as well. You should consider these to be equivalent to 'condense' when used in a similar context.";

/// What `context` should hold.
const CONTEXT: &str = "The context to continue the conversation with. If applicable based on the current task, this should include:
  1. Previous Conversation: High level details about what was discussed throughout the entire conversation with the user. This should be written to allow someone to be able to follow the general overarching conversation flow.
  2. Current Work: Describe in detail what was being worked on prior to this request to compact the context window. Pay special attention to the more recent messages / conversation.
  3. Key Technical Concepts: List all important technical concepts, technologies, coding conventions, and frameworks discussed, which might be relevant for continuing with this work.
  4. Relevant Files and Code: If applicable, enumerate specific files and code sections examined, modified, or created for the task continuation. Pay special attention to the most recent messages and changes.
  5. Problem Solving: Document problems solved thus far and any ongoing troubleshooting efforts.
  6. Pending Tasks and Next Steps: Outline all pending tasks that you have explicitly been asked to work on, as well as list the next steps you will take for all outstanding work, if applicable. Include code snippets where they add clarity. For any next steps, include direct quotes from the most recent conversation showing exactly what task you were working on and where you left off. This should be verbatim to ensure there's no information loss in context between tasks.";

/// What `task_progress` should hold (Cline's spelling kept).
const TASK_PROGRESS: &str = "The current state of the task_progress list, with completed items marked. Important information on this parameter is as follows:
  1. XML schema matches that of prior task_progress lists.
  2. All items are retained, with the exact same desciptive content as in prior occurences.
  3. All completed items are marked as completed.
  4. The only compenent of this list that can be changed is the completion state of invidiual items in the list";

/// The parameters in prompt order.
pub fn parameters() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new("context", true, CONTEXT).usage("Your detailed summary"),
        ParamSpec::new("task_progress", false, TASK_PROGRESS)
            .usage("task_progress list here")
            .depends_on("focus_chain"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Condense;
    use toolshed_plugin_api::Tool;

    #[test]
    fn the_slash_commands_definition_with_the_checklist_behind_the_focus_chain() {
        let declaration = Condense::declaration();
        let spec = &declaration.specs["generic"];
        assert_eq!((declaration.specs.len(), spec.description.as_str()), (1, DESCRIPTION));
        let expected = [
            ParamSpec::new("context", true, CONTEXT).usage("Your detailed summary"),
            ParamSpec::new("task_progress", false, TASK_PROGRESS)
                .usage("task_progress list here")
                .depends_on("focus_chain"),
        ];
        assert_eq!(spec.parameters, expected);
    }
}
