//! The host side of Cline's conversational tools: the [`Interaction`] trait a host implements to answer
//! questions and carry out the actions that belong to it (a new task, condensing the conversation, …), the
//! services plugins reach it through (`ask`, `task.*`, `tool.call`, `skills.*`), and the focus chain: the
//! `task_progress` checklist every tool accepts when `[tasks] focus_chain` is on, stored per task, with Cline's
//! reminders added to results.
//!
//! Approvals stay with [`crate::Approver`] (yes / no / always, with feedback); an `Interaction` answers open
//! questions, whose answer is text and images. Without one, nobody answers: questions come back unanswered and
//! the host actions are unsupported, which the tools turn into clear tool errors.

mod prompts;

use crate::services::host::{cancelled, failed, race, sleep_for, CallHost, Router};
use crate::services::runner::ToolRunner;
use crate::task::TaskShared;
use crate::types::BoxFuture;
use crate::types::{Mode, ResultStatus, ToolInput, ToolResult, ToolUse};

use serde_json::Value;
use std::sync::{Arc, Weak};
use std::time::Duration;
use toolshed_plugin_api::services::{
    self, AskResponse, AttachedImage, BugReport, Empty, ExplainRequest, SayRequest, Service, SkillContent, SkillList,
    TaskSettings, ToolCallResponse,
};
use toolshed_plugin_api::{ServiceError, ServiceErrorKind};

/// A question for the user (Cline's `ask`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The task asking.
    pub task_id: String,
    /// Cline's ask type: `followup` (ask_followup_question), `plan_mode_respond`, `completion_result`.
    pub kind: String,
    /// The question, the plan, or (for `completion_result`) nothing: the result was said before.
    pub text: String,
    /// Options the user may pick from.
    pub options: Vec<String>,
}

/// The user's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserReply {
    /// What the user typed; `None` when they only pressed a button (accepted).
    pub text: Option<String>,
    /// Images they attached.
    pub images: Vec<AttachedImage>,
    /// The user answered a plan by switching the task to ACT mode (the runtime switches it).
    pub switch_to_act: bool,
}

impl UserReply {
    /// A typed answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: Some(text.into()), ..Self::default() }
    }

    /// A button press with no text: "yes", "create the task", "accept the summary".
    pub fn accepted() -> Self {
        Self::default()
    }
}

/// The outcome of a host-owned action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostAction {
    /// This host does not do it (the default): the tool says so to the model.
    Unsupported,
    /// Done, with the user's reply: no text means accepted; text is feedback (for `explain`, the result text).
    Answered(UserReply),
    /// It failed; the message reaches the model as a tool error.
    Failed(String),
}

fn unsupported() -> BoxFuture<HostAction> {
    Box::pin(async { HostAction::Unsupported })
}

/// How the runtime reaches the host's user and the host's own task machinery. Implementations must not block:
/// return futures. Every action has a default that says the host does not support it.
pub trait Interaction: Send + Sync + 'static {
    /// Asks the user; `None` when nobody can answer.
    fn ask(&self, question: Question) -> BoxFuture<Option<UserReply>>;

    /// new_task: offer the user a new task preloaded with `context`.
    fn new_task(&self, _task_id: &str, _context: &str) -> BoxFuture<HostAction> {
        unsupported()
    }

    /// condense: offer the user to condense the conversation to `summary`; on acceptance, drop the history.
    fn condense(&self, _task_id: &str, _summary: &str) -> BoxFuture<HostAction> {
        unsupported()
    }

    /// summarize_task: drop the conversation history behind `summary` (no question asked).
    fn summarize(&self, _task_id: &str, _summary: &str) -> BoxFuture<HostAction> {
        unsupported()
    }

    /// report_bug: show the user the report; on acceptance, file it.
    fn report_bug(&self, _task_id: &str, _report: &BugReport) -> BoxFuture<HostAction> {
        unsupported()
    }

    /// generate_explanation: explain the changes between two git refs; the reply's text is the result.
    fn explain(&self, _task_id: &str, _request: &ExplainRequest) -> BoxFuture<HostAction> {
        unsupported()
    }
}

/// What the interaction services share across tasks.
pub(crate) struct InteractionHost {
    pub interaction: Option<Arc<dyn Interaction>>,
    pub tasks: crate::config::TasksConfig,
    /// `[approval] yolo`; a task may also be opened in YOLO mode.
    pub yolo: bool,
    /// `[timeouts] ask_ms`: how long a question waits for its answer.
    pub ask_timeout: Option<Duration>,
    /// Where the host's futures run (the runtime's actor thread), while a plugin thread waits.
    pub arbiter: actix::ArbiterHandle,
    pub skills: Arc<crate::services::skills::SkillDirs>,
}

/// The per-task conversation state, kept typed in the task ([`TaskShared::conversation`]).
#[derive(Debug, Clone, Default)]
struct Conversation {
    /// The focus chain checklist.
    progress: Option<String>,
    /// Calls since the model last sent `task_progress` (Cline's `apiRequestsSinceLastTodoUpdate`).
    since_update: u32,
    /// Calls in the task (Cline's `apiRequestCount`).
    requests: u32,
    /// The user edited the list since the model last saw it.
    user_edited: bool,
    /// The task just switched from PLAN to ACT mode.
    switched_to_act: bool,
    /// The tool of the previous call.
    last_tool: Option<String>,
    /// The user accepted attempt_completion's result.
    completed: bool,
    /// The task's first message, for the double-check prompt.
    initial_task: Option<String>,
}

fn with_conversation<R>(task: &TaskShared, f: impl FnOnce(&mut Conversation) -> R) -> R {
    let slot = task.conversation.get_or_init(|| Box::new(std::sync::Mutex::new(Conversation::default())));
    match slot.downcast_ref::<std::sync::Mutex<Conversation>>() {
        Some(conversation) => f(&mut conversation.lock().unwrap_or_else(std::sync::PoisonError::into_inner)),
        // Only this module fills the slot, always with this type.
        None => f(&mut Conversation::default()),
    }
}

impl InteractionHost {
    /// Runs a host future on the runtime's thread and waits for it on this plugin thread: `Ok(None)` when
    /// `limit` passed first, `Err` when the call was cancelled. The runtime's thread races the future against
    /// the call's cancellation and the limit, so this thread sleeps until one of them happens. A future that
    /// lost the race keeps running there (a nested tool call finishes, as a call that timed out does).
    fn wait<T, F, Fut>(&self, call: &CallHost, limit: Option<Duration>, make: F) -> Result<Option<T>, ServiceError>
    where
        T: Send + 'static,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = T> + 'static,
    {
        race(&self.arbiter, call, make, move |work, cancellation| async move {
            tokio::select! {
                // An answer that came with the cancellation still counts, as it always did.
                biased;
                value = work => value.map(Some).map_err(|_| failed("the host dropped the question")),
                () = cancellation => Err(cancelled()),
                () = sleep_for(limit) => Ok(None),
            }
        })?
    }

    fn settings(&self, task: &TaskShared) -> TaskSettings {
        let (initial_task, last_tool) = with_conversation(task, |c| (c.initial_task.clone(), c.last_tool.clone()));
        TaskSettings {
            mode: task.mode().name().to_owned(),
            yolo: self.yolo || task.yolo,
            focus_chain: self.tasks.focus_chain,
            double_check_completion: self.tasks.double_check_completion,
            initial_task,
            last_tool,
            consecutive_mistakes: task.mistakes.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// A host action through the registered interaction; `UnknownService` when the host does not do it.
    fn action(
        &self,
        call: &CallHost,
        name: &str,
        start: impl FnOnce(&dyn Interaction, &str) -> BoxFuture<HostAction>,
    ) -> Result<AskResponse, ServiceError> {
        let unknown = || {
            ServiceError::new(ServiceErrorKind::UnknownService, format!("this host offers no service named '{name}'"))
        };
        let interaction = self.interaction.as_ref().ok_or_else(unknown)?;
        let future = start(interaction.as_ref(), &call.task.info.task_id);
        match self.wait(call, None, move || future)? {
            Some(HostAction::Answered(reply)) => {
                Ok(AskResponse { answered: true, text: reply.text, images: reply.images, switched_to_act: false })
            }
            Some(HostAction::Failed(message)) => Err(ServiceError::new(ServiceErrorKind::Failed, message)),
            Some(HostAction::Unsupported) | None => Err(unknown()),
        }
    }
}

/// Switches a task's mode, remembering a switch from PLAN to ACT for the focus chain's next reminder.
fn switch_mode(task: &TaskShared, mode: Mode) {
    if task.mode() == Mode::Plan && mode == Mode::Act {
        with_conversation(task, |c| c.switched_to_act = true);
    }
    task.set_mode(mode);
}

/// Registers the conversation's services (`ask`, `task.*`, `tool.call`, `skills.*`). `tool.call` runs tools of
/// the same runtime through `runner`.
pub(crate) fn register(router: &mut Router, host: &Arc<InteractionHost>, runner: Weak<dyn ToolRunner>) {
    let h = Arc::clone(host);
    router.register::<services::Ask>(move |call, req| {
        let task = &call.task;
        let Some(interaction) = h.interaction.clone() else {
            return Ok(AskResponse::default());
        };
        // The question and its options come from the model and are shown to a person.
        let question = Question {
            task_id: task.info.task_id.clone(),
            kind: crate::shown::escape_line(&req.kind).into_owned(),
            text: crate::shown::escape_owned(req.text),
            options: req.options.into_iter().map(crate::shown::escape_owned).collect(),
        };
        let answer = h.wait(call, h.ask_timeout, move || interaction.ask(question))?.flatten();
        let Some(answer) = answer else {
            return Ok(AskResponse::default());
        };
        if answer.switch_to_act {
            switch_mode(task, Mode::Act);
        }
        Ok(AskResponse {
            answered: true,
            text: answer.text,
            images: answer.images,
            switched_to_act: answer.switch_to_act,
        })
    });
    let h = Arc::clone(host);
    router.register::<services::TaskSettingsService>(move |call, _| Ok(h.settings(call.task)));
    router.register::<services::TaskSetMode>(|call, req| {
        let mode = match req.mode.as_str() {
            "act" => Mode::Act,
            "plan" => Mode::Plan,
            other => {
                return Err(ServiceError::new(
                    ServiceErrorKind::InvalidRequest,
                    format!("unknown mode '{other}': use 'act' or 'plan'"),
                ))
            }
        };
        switch_mode(call.task, mode);
        Ok(Empty {})
    });
    router.register::<services::TaskComplete>(|call, req| {
        with_conversation(call.task, |c| c.completed = true);
        call.task.say(
            call.tool,
            call.call_id,
            SayRequest { kind: "task_completed".to_owned(), text: req.text, partial: false },
        );
        Ok(Empty {})
    });
    let h = Arc::clone(host);
    router.register::<services::TaskNew>(move |call, req| {
        h.action(call, services::TaskNew::NAME, |i, id| i.new_task(id, &req.text))
    });
    let h = Arc::clone(host);
    router.register::<services::TaskCondense>(move |call, req| {
        h.action(call, services::TaskCondense::NAME, |i, id| i.condense(id, &req.text))
    });
    let h = Arc::clone(host);
    router.register::<services::TaskSummarize>(move |call, req| {
        h.action(call, services::TaskSummarize::NAME, |i, id| i.summarize(id, &req.text))
    });
    let h = Arc::clone(host);
    router.register::<services::TaskReportBug>(move |call, req| {
        h.action(call, services::TaskReportBug::NAME, |i, id| i.report_bug(id, &req))
    });
    let h = Arc::clone(host);
    router.register::<services::TaskExplain>(move |call, req| {
        h.action(call, services::TaskExplain::NAME, |i, id| i.explain(id, &req))
    });
    let h = Arc::clone(host);
    router.register::<services::ToolCallService>(move |call, req| {
        if req.name.as_str() == &**call.tool {
            return Err(ServiceError::new(ServiceErrorKind::Denied, "a tool cannot call itself"));
        }
        let runner = crate::services::runner::upgrade(&runner)?;
        let task = Arc::clone(call.task);
        let tool_use = ToolUse::new(format!("{}-{}", call.tool, req.name), req.name, req.input);
        let result = h
            .wait(call, None, move || runner.call(task, tool_use))?
            .ok_or_else(|| ServiceError::new(ServiceErrorKind::Failed, "the tool call did not finish"))?;
        // A single call is never skipped (that is a rule of a whole message), so every status is the tool's.
        Ok(ToolCallResponse { status: result.status.as_str().to_owned(), blocks: result.blocks })
    });
    let h = Arc::clone(host);
    router.register::<services::SkillsList>(move |call, _| {
        Ok(SkillList { skills: h.skills.list(call.task.workspace.primary()) })
    });
    let h = Arc::clone(host);
    router.register::<services::SkillsLoad>(move |call, req| {
        match h.skills.load(call.task.workspace.primary(), &req.name) {
            Ok(Some((skill, instructions))) => Ok(SkillContent { skill: Some(skill), instructions }),
            Ok(None) => Ok(SkillContent { skill: None, instructions: String::new() }),
            Err(e) => Err(ServiceError::new(ServiceErrorKind::Failed, e.to_string())),
        }
    });
}

/// Takes `task_progress` out of a tool use's input when the focus chain is on, before any check sees it (Cline
/// accepts it on every tool). Returns the value to store once the call completed.
pub(crate) fn take_progress(host: &InteractionHost, tool_use: &mut ToolUse) -> Option<String> {
    if !host.tasks.focus_chain {
        return None;
    }
    if let ToolInput::Text(text) = &tool_use.input {
        // Parsed here only to strip the parameter; a parse failure stays for the executor to report.
        if let Ok(value) = serde_json::from_str::<Value>(text) {
            tool_use.input = ToolInput::Json(value);
        }
    }
    let ToolInput::Json(Value::Object(input)) = &mut tool_use.input else {
        return None;
    };
    match input.remove("task_progress")? {
        Value::String(text) => Some(text),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// After a call: remembers the tool, and with the focus chain on stores the checklist (a non-empty
/// `task_progress` replaces it) and adds Cline's reminder after the result when one is due: in PLAN mode,
/// right after a switch to ACT mode, after the user edited the list, while no list exists, and every
/// `[tasks] remind_interval` calls without an update.
pub(crate) fn after_call(host: &InteractionHost, task: &TaskShared, progress: Option<String>, result: &mut ToolResult) {
    let tasks = &host.tasks;
    let mode = task.mode();
    let reminder = with_conversation(task, |c| {
        match &mut c.last_tool {
            // The buffer is reused: no allocation on every call.
            Some(last) => last.clone_from(&result.name),
            last => *last = Some(result.name.clone()),
        }
        if !tasks.focus_chain {
            return None;
        }
        c.requests += 1;
        match progress.as_deref().map(str::trim).filter(|p| !p.is_empty()) {
            Some(list) if result.status == ResultStatus::Success => {
                c.progress = Some(list.to_owned());
                c.since_update = 0;
            }
            _ => c.since_update += 1,
        }
        let due = mode == Mode::Plan
            || c.switched_to_act
            || c.user_edited
            || c.progress.is_none()
            || c.since_update >= tasks.remind_interval.max(1);
        if !due {
            return None;
        }
        let text = instructions(c, mode);
        c.switched_to_act = false;
        c.user_edited = false;
        Some(text)
    });
    if let Some(list) = progress.filter(|p| !p.trim().is_empty())
        && result.status == ResultStatus::Success
    {
        task.say(
            "focus_chain",
            "",
            SayRequest { kind: "task_progress".to_owned(), text: list.trim().to_owned(), partial: false },
        );
    }
    if let Some(reminder) = reminder {
        result.context_after.push(reminder);
    }
}

/// Counts a checklist's items (lines starting `- [ ]`, `- [x]` or `- [X]`) and the completed ones.
fn counts(list: &str) -> (usize, usize) {
    list.lines().map(str::trim).fold((0, 0), |(total, done), line| {
        if line.starts_with("- [x]") || line.starts_with("- [X]") {
            (total + 1, done + 1)
        } else if line.starts_with("- [ ]") {
            (total + 1, done)
        } else {
            (total, done)
        }
    })
}

/// Cline's `generateFocusChainInstructions`, whitespace and all. Cline checks "75% or more" before "all done",
/// so its completion message can never show; we check "all done" first.
fn instructions(c: &Conversation, mode: Mode) -> String {
    if let Some(list) = &c.progress {
        let (total, done) = counts(list);
        let percent = if total > 0 { ((done as f64 / total as f64) * 100.0).round() as usize } else { 0 };
        let intro =
            "# TODO LIST UPDATE REQUIRED - You MUST include the task_progress parameter in your NEXT tool call.";
        let progress = format!("**Current Progress: {done}/{total} items completed ({percent}%)**");
        if c.user_edited {
            let edited =
                "**CRITICAL INFORMATION:** The user has modified this todo list - review ALL changes carefully";
            return format!(
                "\n\n\n\t\t\t\t{intro}\n\n\t\t\t\t{progress}\n\n\t\t\t\t\n\n\t\t\t\t{list}\n\n\t\t\t\t{edited}\n\n\t\t\t\t{}\n\n\t\t\t",
                prompts::REMINDER
            );
        }
        let stub = if total > 0 && done == total {
            prompts::COMPLETED
                .replace("{{totalItems}}", &total.to_string())
                .replace("{{currentFocusChainChecklist}}", list)
        } else if done == 0 && total > 0 {
            "\n\n**Note:** No items are marked complete yet. As you work through the task, remember to mark items as complete when finished.".to_owned()
        } else if (25..50).contains(&percent) {
            format!("\n\n**Note:** {percent}% of items are complete.")
        } else if (50..75).contains(&percent) {
            format!("\n\n**Note:** {percent}% of items are complete. Proceed with the task.")
        } else if percent >= 75 {
            format!("\n\n**Note:** {percent}% of items are complete! Focus on finishing the remaining items.")
        } else {
            String::new()
        };
        return format!(
            "\n\n\t\t\t\t{intro}\n\n\t\t\t\t{progress}\n\n\t\t\t\t{list}\n\n\t\t\t\t\n\n\t\t\t\t{}\n\n\t\t\t\t{stub}\n\n\t\t\t\t",
            prompts::REMINDER
        );
    }
    if c.switched_to_act {
        prompts::INITIAL.to_owned()
    } else if mode == Mode::Plan {
        prompts::PLAN_MODE_REMINDER.to_owned()
    } else if c.requests < 10 {
        prompts::RECOMMENDED.to_owned()
    } else {
        prompts::API_REQUEST_COUNT.replace("{{apiRequestCount}}", &c.requests.to_string())
    }
}

/// The focus chain's checklist of a task.
pub(crate) fn task_progress(task: &TaskShared) -> Option<String> {
    with_conversation(task, |c| c.progress.clone())
}

/// The user edited the checklist: it replaces the stored one, and the next result says so.
pub(crate) fn edit_task_progress(task: &TaskShared, list: &str) {
    with_conversation(task, |c| {
        c.progress = Some(list.trim().to_owned()).filter(|l| !l.is_empty());
        c.user_edited = true;
    });
}

/// Records the task's first message (for attempt_completion's double check).
pub(crate) fn set_initial_task(task: &TaskShared, text: &str) {
    with_conversation(task, |c| c.initial_task = Some(text.to_owned()));
}

/// Whether the user accepted attempt_completion's result.
pub(crate) fn is_completed(task: &TaskShared) -> bool {
    with_conversation(task, |c| c.completed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checklists_count_like_cline() {
        assert_eq!(counts("- [ ] a\n  - [x] b\n- [X] c\nnot an item\n- [] d"), (3, 2));
    }

    #[test]
    fn reminders_follow_progress() {
        let mut c = Conversation { progress: Some("- [x] a\n- [ ] b".to_owned()), ..Conversation::default() };
        let text = instructions(&c, Mode::Act);
        assert!(text.starts_with("\n\n\t\t\t\t# TODO LIST UPDATE REQUIRED"));
        assert!(text.contains("**Current Progress: 1/2 items completed (50%)**"));
        assert!(text.contains("**Note:** 50% of items are complete. Proceed with the task."));
        c.progress = Some("- [x] a".to_owned());
        assert!(instructions(&c, Mode::Act).contains("**All 1 items have been completed!**"));
        c.progress = None;
        assert_eq!(instructions(&c, Mode::Plan), prompts::PLAN_MODE_REMINDER);
        c.requests = 12;
        assert!(instructions(&c, Mode::Act).contains("You've made 12 API requests without a task_progress parameter."));
        c.switched_to_act = true;
        assert_eq!(instructions(&c, Mode::Act), prompts::INITIAL);
    }
}
