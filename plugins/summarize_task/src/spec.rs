//! summarize_task's model-facing spec. Cline v4.0.10 has no `ClineToolSpec` for it: it defines the tool in the
//! instructions it sends when the context window runs full (`summarizeTask` in
//! `core/prompts/contextManagement.ts`), and these are that text's pieces: the task as the description, the
//! summary's sections as `context`, the focus-chain note as `task_progress`, and the usage values. `{{CWD}}`
//! and `{{MULTI_ROOT_HINT}}` are filled as Cline fills them there.

use toolshed_plugin_api::ParamSpec;

/// The tool's description.
pub const DESCRIPTION: &str = "The current conversation is rapidly running out of context. Now, your urgent task is to create a comprehensive detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions.
This summary should be thorough in capturing technical details, code patterns, and architectural decisions that would be essential for continuing development work without losing context.";

/// What `context` should hold.
const CONTEXT: &str = "Your summary should include the following sections:
1. Primary Request and Intent: Capture all of the user's explicit requests and intents in detail
2. Key Technical Concepts: List all important technical concepts, technologies, and frameworks discussed.
3. Files and Code Sections: Enumerate specific files and code sections examined, modified, or created. Pay special attention to the most recent messages and include full code snippets where applicable and include a summary of why this file read or edit is important.
4. Problem Solving: Document problems solved and any ongoing troubleshooting efforts.
5. Pending Tasks: Outline any pending tasks that you have explicitly been asked to work on.
6. Task Evolution: If the user provided additional requests or modified the original task during the conversation, document this progression:
   - Original Task: [Summary of the initial user request, including copying verbatim any relevant information/steps required to continue working]
   - Task Modifications: [Chronological list of how the user redirected or modified the work since the original task]
   - Current Active Task: [What the user most recently asked to work on]
   - Context for Changes: [Why the task evolved - user feedback, new requirements, etc. (Include direct quotes from user messages that caused task changes to prevent drift after context compacting)]
7. Current Work: Describe in detail precisely what was being worked on immediately before this summary request, paying special attention to the most recent messages from both user and assistant. Include file names and code snippets where applicable.
8. Next Step: List the next step that you will take that is related to the most recent work you were doing. IMPORTANT: ensure that this step is DIRECTLY in line with the user's explicit requests, and the task you were working on immediately before this summary request. If your last task was concluded, then only list next steps if they are explicitly in line with the users request. Do not start on tangential requests without confirming with the user first.
                     If there is a next step, include direct quotes from the most recent conversation showing exactly what task you were working on and where you left off. This should be verbatim to ensure there's no drift in task interpretation.
9. Required Files: List the most important files needed for continuing the work you laid out in Next Step. This is optional and if no files are required or there is no next step then simply don't include this section. List each file path on a new line starting with \"- \" such as: - src/main.js. List the files from most important to least important. You must list the minimum number of files necessary to continue with the task.
                     Only list files you know will for sure be necessary, rather than speculating. The file paths must be relative to the current working directory {{CWD}}.{{MULTI_ROOT_HINT}}
10. You should pay special attention to the most recent user message, as it indicates the user's most recent intent.";

/// What `task_progress` is for.
const TASK_PROGRESS: &str = "There is an optional task_progress parameter which you should use to provide an updated checklist to keep the user informed of the latest state of the progress for this task. You should always return the most up to date version of the checklist if there is already an existing checklist. If no task_progress list was included in the previous context, you should NOT create a new task_progress list - do not return a new task_progress list if one does not already exist.";

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
    use crate::SummarizeTask;
    use toolshed_plugin_api::Tool;

    #[test]
    fn the_context_window_instructions_with_the_workspace_filled_in_later() {
        let declaration = SummarizeTask::declaration();
        let params = &declaration.specs["generic"].parameters;
        let shown: Vec<(&str, bool, &[String])> =
            params.iter().map(|p| (p.name.as_str(), p.required, &p.dependencies[..])).collect();
        assert_eq!(shown, [("context", true, &[][..]), ("task_progress", false, &["focus_chain".to_owned()])]);
        // The runtime fills the template variables as Cline fills `cwd` and the multi-root hint.
        assert!(params[0].description.contains("working directory {{CWD}}.{{MULTI_ROOT_HINT}}\n10. "));
    }
}
