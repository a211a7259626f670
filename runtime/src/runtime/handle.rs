//! The embedding API's handle on one task: running tool uses, the task's mode, schemas and state.

use super::turn;
use crate::pipeline::Engine;
use crate::spec::{self, Provider, SpecContext, ToolSchemas};
use crate::task::TaskShared;
use crate::types::{Mode, PartialToolUse, ToolResult, ToolUse};
use std::sync::Arc;

/// One agent task: its context and state. Cheap to clone; `Send + Sync`; its futures run on any executor.
#[derive(Clone)]
pub struct TaskHandle {
    pub(super) shared: Arc<Engine>,
    pub(super) task: Arc<TaskShared>,
}

impl TaskHandle {
    /// Runs a tool use through the whole pipeline and returns the result the model should see.
    ///
    /// This is one call on its own; for the tool uses of one assistant message, with Cline's message-level
    /// rules (one tool per message, skipping after a rejection, parallel read-only calls), use
    /// [`TaskHandle::execute_message`].
    // The pipeline's own future, not one wrapping it: every layer would carry (and move) the call once more.
    pub fn execute(&self, tool_use: ToolUse) -> impl std::future::Future<Output = ToolResult> + Send + '_ {
        self.shared.execute_for_host(&self.task, tool_use)
    }

    /// Runs the tool uses of one assistant message under Cline's message-level rules and returns one
    /// result per tool use, in order (see [`crate::TurnResult`]).
    pub async fn execute_message(&self, tool_uses: Vec<ToolUse>) -> crate::TurnResult {
        turn::execute_message(self, tool_uses).await
    }

    /// Shows a streamed, incomplete tool use to its tool (UI only; it never produces a tool result).
    pub async fn partial_use(&self, block: &PartialToolUse) {
        self.shared.partial(&self.task, &block.id, &block.name, block.input.clone()).await;
    }

    /// Plan or act, now.
    pub fn mode(&self) -> Mode {
        self.task.mode()
    }

    /// Switches between plan and act mode: calls that start afterwards see the new mode (plan mode refuses
    /// file modifications; tools read the mode in their task info), and [`TaskHandle::tools`] offers the
    /// new mode's tools.
    pub fn set_mode(&self, mode: Mode) {
        self.task.set_mode(mode);
    }

    /// Whether the task was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.task.cancel.is_cancelled()
    }

    /// The tool schemas to send the model for `provider` (alias of [`TaskHandle::schema`]).
    pub fn tools(&self, provider: Provider) -> ToolSchemas {
        self.schema(provider)
    }

    /// An XML tool-use parser for this task's tools (their specs for its model family), for text-mode models.
    pub fn xml_parser(&self) -> crate::stream::XmlStreamParser {
        let snapshot = self.shared.snapshot();
        let family = &self.task.info.model_family;
        crate::stream::XmlStreamParser::from_specs(
            snapshot.routes.values().filter_map(|route| spec::family_spec(&route.meta.specs, family)),
        )
    }

    /// The limit of consecutive mistakes this task was opened with.
    pub fn max_consecutive_mistakes(&self) -> u32 {
        self.task.max_mistakes
    }

    /// After the mistake limit was reached and the host asked its user: resets the count (and the loop
    /// detection, as Cline's "continue" does) and returns Cline's `tooManyMistakes(feedback)` text for the
    /// next user message when the user typed guidance.
    pub fn resume_after_mistakes(&self, feedback: Option<&str>) -> Option<String> {
        self.task.mistakes.store(0, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut last) = self.task.last_call.lock() {
            *last = (String::new(), 0, 0);
        }
        feedback.map(crate::messages::too_many_mistakes)
    }

    /// Cline's result header for a tool use (`[read_file for 'src/a.rs']`).
    pub fn describe(&self, tool_use: &ToolUse) -> String {
        self.shared.description(tool_use)
    }

    pub(crate) fn task_shared(&self) -> &TaskShared {
        &self.task
    }

    pub(crate) fn route_capabilities(&self, name: &str) -> Option<(Vec<String>, Option<String>)> {
        self.shared.route(name).map(|route| (route.meta.capabilities.clone(), route.meta.display.clone()))
    }

    /// Whom the task's tools are served to.
    pub fn profile(&self) -> crate::config::Profile {
        self.task.profile
    }

    /// See [`Runtime::mcp_listable`].
    pub async fn mcp_listable(&self) {
        self.shared.mcp_listable().await;
    }

    /// Every loaded tool's schema for `provider` in a context the host adjusted (native tool calls, flags),
    /// for this task's model family.
    pub fn schema_in(&self, provider: Provider, context: &SpecContext) -> ToolSchemas {
        self.shared.schema(provider, &self.task.info.model_family, context)
    }

    /// Cancels the task: calls in flight return at once with a cancellation error.
    pub fn cancel(&self) {
        self.task.cancel.cancel();
        self.shared.services.end_task(&self.task.info.task_id);
    }

    /// The task's id.
    pub fn id(&self) -> &str {
        &self.task.info.task_id
    }

    /// Shows the tool a streamed, incomplete tool use (UI only; it never produces a tool result). `id` is the
    /// tool-use id when the provider has sent it already, else empty.
    pub async fn partial(&self, id: &str, name: &str, input: serde_json::Value) {
        self.shared.partial(&self.task, id, name, input).await;
    }

    /// Consecutive mistakes of the model in this task (reset by a successful call).
    pub fn consecutive_mistakes(&self) -> u32 {
        self.task.mistakes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The task as the spec registry sees it: its primary root, roots, mode, images and subagent run. Hosts
    /// add what only they know (browser, YOLO, native tool calls, flags) before picking tools.
    pub fn spec_context(&self) -> SpecContext {
        self.task.spec_context()
    }

    /// Every loaded tool's schema for `provider`, for this task's model family and context (see
    /// [`Runtime::schema`]).
    pub fn schema(&self, provider: Provider) -> ToolSchemas {
        self.shared.schema(provider, &self.task.info.model_family, &self.spec_context())
    }
}

/// The conversational tools' per-task state (interaction.rs).
impl TaskHandle {
    /// The focus chain's checklist (the last `task_progress` the model sent, or the user's edit).
    pub fn task_progress(&self) -> Option<String> {
        crate::services::interaction::task_progress(&self.task)
    }

    /// The user edited the checklist: it replaces the stored one, and the next result tells the model.
    pub fn edit_task_progress(&self, list: &str) {
        crate::services::interaction::edit_task_progress(&self.task, list);
    }

    /// The task's first message, quoted by attempt_completion's double check.
    pub fn set_initial_task(&self, text: &str) {
        crate::services::interaction::set_initial_task(&self.task, text);
    }

    /// Whether the user accepted attempt_completion's result (the task is complete).
    pub fn is_completed(&self) -> bool {
        crate::services::interaction::is_completed(&self.task)
    }
}
