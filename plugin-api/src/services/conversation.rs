//! The conversation and the task itself (issue 14): questions to the user, the task's mode and settings, the
//! actions that belong to the host (a new task, condensing), another tool in the same task, and skills.

use super::Empty;
use serde::{Deserialize, Serialize};

services! {
    /// `ask`: a question to the user (Cline's `ask`); the answer is the user's text and images, or "not answered"
    /// when no user is there (no interaction registered, or the ask timed out).
    Ask(ASK) = "ask": AskRequest => AskResponse;
    /// `task.settings`: the task's current mode and the settings the conversational tools follow.
    TaskSettingsService(TASK_SETTINGS) = "task.settings": Empty => TaskSettings;
    /// `task.set_mode`: switches the task between `plan` and `act` (plan_mode_respond's switch in YOLO mode).
    TaskSetMode(TASK_SET_MODE) = "task.set_mode": SetModeRequest => Empty;
    /// `task.complete`: the user accepted attempt_completion's result: the task is complete.
    TaskComplete(TASK_COMPLETE) = "task.complete": TaskTextRequest => Empty;
    /// `task.new`: the host offers the user a new task with this context (new_task).
    TaskNew(TASK_NEW) = "task.new": TaskTextRequest => AskResponse;
    /// `task.condense`: the host offers the user to condense the conversation to this summary (condense).
    TaskCondense(TASK_CONDENSE) = "task.condense": TaskTextRequest => AskResponse;
    /// `task.summarize`: the host truncates the conversation behind this summary (summarize_task).
    TaskSummarize(TASK_SUMMARIZE) = "task.summarize": TaskTextRequest => AskResponse;
    /// `task.report_bug`: the host shows the user a bug report to file (report_bug).
    TaskReportBug(TASK_REPORT_BUG) = "task.report_bug": BugReport => AskResponse;
    /// `task.explain`: the host explains the changes between two git refs (generate_explanation).
    TaskExplain(TASK_EXPLAIN) = "task.explain": ExplainRequest => AskResponse;
    /// `tool.call`: runs another tool in the same task through the whole pipeline (checks, approval, execution).
    ToolCallService(TOOL_CALL) = "tool.call": ToolCallRequest => ToolCallResponse;
    /// `skills.list`: the skills this task may use (the user's skill directories, the workspace's when trusted).
    SkillsList(SKILLS_LIST) = "skills.list": Empty => SkillList;
    /// `skills.load`: one skill's instructions (the body of its `SKILL.md`).
    SkillsLoad(SKILLS_LOAD) = "skills.load": SkillLoadRequest => SkillContent;
}

/// An image the user attached to an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachedImage {
    /// `image/png`, `image/jpeg` or `image/webp`.
    pub media_type: String,
    /// Base64 data.
    pub data: String,
}

/// Request of [`Ask`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskRequest {
    /// Cline's ask type: `followup`, `plan_mode_respond`, `completion_result`, …
    pub kind: String,
    /// The question (or the response shown to the user).
    pub text: String,
    /// Options the user may pick from.
    #[serde(default)]
    pub options: Vec<String>,
}

/// Response of [`Ask`] and of the host actions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskResponse {
    /// Whether a user answered; `false` when nobody is there to ask.
    #[serde(default)]
    pub answered: bool,
    /// What the user typed (none when they only pressed a button).
    #[serde(default)]
    pub text: Option<String>,
    /// Images the user attached.
    #[serde(default)]
    pub images: Vec<AttachedImage>,
    /// The user answered by switching the task to ACT mode (plan_mode_respond).
    #[serde(default)]
    pub switched_to_act: bool,
}

/// Response of [`TaskSettingsService`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSettings {
    /// `act` or `plan`, as it is now (the call's task info holds the mode as of the call's start).
    pub mode: String,
    /// YOLO mode: nobody answers questions.
    #[serde(default)]
    pub yolo: bool,
    /// The focus chain (`task_progress`) is on.
    #[serde(default)]
    pub focus_chain: bool,
    /// Cline's `doubleCheckCompletionEnabled`.
    #[serde(default)]
    pub double_check_completion: bool,
    /// The task's first message, when the host told the runtime.
    #[serde(default)]
    pub initial_task: Option<String>,
    /// The tool called before this call in the task.
    #[serde(default)]
    pub last_tool: Option<String>,
    /// The task's consecutive mistakes before this call (Cline's `consecutiveMistakeCount`), which some of
    /// Cline's texts count with (write_to_file's missing `content`).
    #[serde(default)]
    pub consecutive_mistakes: u32,
}

/// Request of [`TaskSetMode`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetModeRequest {
    /// `act` or `plan`.
    pub mode: String,
}

/// Request of [`TaskComplete`], [`TaskNew`], [`TaskCondense`] and [`TaskSummarize`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskTextRequest {
    /// The result, the new task's context, or the summary.
    pub text: String,
}

/// Request of [`TaskReportBug`]: Cline's report_bug parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BugReport {
    /// The title.
    pub title: String,
    /// What happened.
    pub what_happened: String,
    /// Steps to reproduce.
    pub steps_to_reproduce: String,
    /// The relevant API request output.
    pub api_request_output: String,
    /// Anything else.
    pub additional_context: String,
}

/// Request of [`TaskExplain`]: Cline's generate_explanation parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplainRequest {
    /// The explanation's title.
    pub title: String,
    /// The git ref to compare from.
    pub from_ref: String,
    /// The git ref to compare to; the working directory when absent.
    #[serde(default)]
    pub to_ref: Option<String>,
}

/// Request of [`ToolCallService`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// The tool's name.
    pub name: String,
    /// Its input.
    pub input: serde_json::Value,
}

/// Response of [`ToolCallService`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallResponse {
    /// `success`, `error` or `denied`.
    pub status: String,
    /// The result blocks (an error's text already in Cline's `toolError` wrapping).
    pub blocks: Vec<crate::protocol::Block>,
}

/// One skill, as [`SkillsList`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillInfo {
    /// Its name (its directory's name).
    pub name: String,
    /// Its description, from the front matter.
    pub description: String,
    /// The absolute path of its `SKILL.md`.
    pub path: String,
    /// `global` (the user's) or `project` (the workspace's).
    pub source: String,
}

/// Response of [`SkillsList`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillList {
    /// The available skills; a name found in several directories is listed once (the user's wins).
    pub skills: Vec<SkillInfo>,
}

/// Request of [`SkillsLoad`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillLoadRequest {
    /// The skill's name.
    pub name: String,
}

/// Response of [`SkillsLoad`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillContent {
    /// The skill; `None` when no available skill has that name.
    #[serde(default)]
    pub skill: Option<SkillInfo>,
    /// The body of its `SKILL.md`, trimmed.
    #[serde(default)]
    pub instructions: String,
}
