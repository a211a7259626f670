//! The JSON shapes that cross the boundary: declarations and specs, calls, phase answers, service errors.
//!
//! Every struct tolerates unknown fields and defaults missing optional ones, so either side can grow a field
//! without breaking the other: this is how the ABI evolves.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::cell::Cell;
use std::collections::BTreeMap;

/// What a plugin library declares: its tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct PluginDeclaration {
    /// The tools, each with its own handler.
    pub tools: Vec<ToolDeclaration>,
}

/// One tool: a primary name served by one handler instance, plus aliases that share that instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDeclaration {
    /// The primary name, `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: String,
    /// Extra names served by the same handler instance, each with its own spec.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<AliasDeclaration>,
    /// What the tool may do (see [`capability`]); the approval policy reads these.
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// The result header template, e.g. `[{tool} for '{path}']`: `{tool}` is the name called, `{x}` the
    /// input parameter `x` (`undefined` when missing, as Cline renders it), `{a|b}` the first of `a` and `b`
    /// present, `{?x:text}` the text only when `x` is present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// Specs per model family (`generic` is the fallback).
    pub specs: BTreeMap<String, ToolSpec>,
    /// The handler checks its parameters itself, in its own order and with its own texts, as each of Cline's
    /// handlers does, so the runtime's generic required-parameter check gives way: in Cline a gate such as
    /// web_fetch's comes before the parameters, and execute_command has its own text for an empty `command`.
    /// Absent (false): the runtime refuses a call missing a required parameter before the tool sees it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checks_parameters: bool,
    /// Parameters the model may send under another name, alias → parameter: when the parameter is absent,
    /// null or empty and the alias holds a string, the runtime copies the alias's value to it before any
    /// check, the alias staying (Cline's `canonicalizeAttemptCompletionParams`: `response` → `result`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub param_aliases: BTreeMap<String, String>,
}

/// A second name for a tool's handler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AliasDeclaration {
    /// The alias name.
    pub name: String,
    /// Its result header template; the tool's when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// Its own specs per model family.
    pub specs: BTreeMap<String, ToolSpec>,
}

/// Capability names a tool may declare.
pub mod capability {
    /// Reads files or state, changes nothing.
    pub const READ_ONLY: &str = "read_only";
    /// Creates, changes or deletes files.
    pub const WRITES_FILES: &str = "writes_files";
    /// Every write the tool makes waits for [`crate::services::CallCommit`]: a call that timed out or was
    /// cancelled before committing wrote nothing, and one that committed is waited for and reports its writes.
    pub const COMMITS_WRITES: &str = "commits_writes";
    /// Runs processes.
    pub const RUNS_COMMANDS: &str = "runs_commands";
    /// Talks to the network.
    pub const NETWORK: &str = "network";
    /// Its phases are cheap and never block: the runtime may run them on the actor's thread instead of a
    /// worker thread (no timeout can apply then).
    pub const INLINE: &str = "inline";
    /// Its calls may keep every core busy for long (a search, a walk, an outline of many files): the runtime
    /// runs them, and every thread they start, at a lower CPU priority (`[plugins] bulk_priority`), so short
    /// calls never wait behind them for a core.
    pub const BULK: &str = "bulk";
    /// Its `prepare` always answers `Proceed` (it never asks for approval and never refuses before running): the
    /// runtime skips the call to `prepare` and runs `execute` at once, as if `prepare` had answered `Proceed`.
    /// The approval policy and the hooks still apply as they would to that answer.
    pub const PROCEEDS: &str = "proceeds";
    /// Its handler takes the task by reference: the runtime sends `task_ref`, a key for the task's JSON, instead of
    /// the whole `task`, and the handler resolves a key it has not seen through the
    /// [`crate::services::TaskInfoGet`] service, once per task. The SDK declares it for every tool it exports
    /// and resolves the key itself; a handler without it gets the task by value, as before.
    pub const TASK_BY_REF: &str = "task_by_ref";
}

/// The model-facing description of a tool, as Cline's `ClineToolSpec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool id (the built-in name it implements, or its own name).
    pub id: String,
    /// The name the model calls.
    pub name: String,
    /// The description; may contain template variables such as `{{CWD}}`.
    pub description: String,
    /// The parameters in prompt order.
    #[serde(default)]
    pub parameters: Vec<ParamSpec>,
    /// Declarative context requirements, e.g. `browser`, `multi_root`; all must hold for the tool to be offered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_requirements: Vec<String>,
}

/// One parameter of a tool spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParamSpec {
    /// Parameter name.
    pub name: String,
    /// Whether a call without it is refused with Cline's missing-parameter error.
    #[serde(default)]
    pub required: bool,
    /// JSON schema type: `string`, `integer`, `number`, `boolean`, `array`, `object`.
    #[serde(rename = "type", default = "default_param_type")]
    pub kind: String,
    /// What the parameter means, for the model.
    pub description: String,
    /// Allowed values.
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub enum_values: Option<Vec<String>>,
    /// Item schema of an array parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Value>,
    /// An example value for the XML prompt section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<String>,
    /// Whether an empty string is a value (the runtime's required-parameter check then refuses only an
    /// absent or null one): write_to_file's `content` may be empty, an empty file being a real request.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_empty: bool,
    /// Context requirements of this parameter alone (execute_command's `timeout` is offered in YOLO mode).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_requirements: Vec<String>,
    /// Tool ids that must all be offered too for the XML tool section to show this parameter (Cline's
    /// `dependencies`: `task_progress` needs `focus_chain`). Native tool calling ignores them, as Cline does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
    /// A line the XML tool section appends to the tool's description when it shows this parameter (Cline's
    /// parameter `description`, which is not the parameter's own meaning: that is [`Self::description`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description_note: Option<String>,
}

/// Cline's `TASK_PROGRESS_PARAMETER` instruction (`types.ts`): the focus chain's checklist, accepted by most
/// tools.
pub const TASK_PROGRESS_INSTRUCTION: &str = "A checklist showing task progress after this tool use is completed. The task_progress parameter must be included as a separate parameter inside of the parent tool call, it must be separate from other parameters such as content, arguments, etc. (See 'UPDATING TASK PROGRESS' section for more details)";

fn default_param_type() -> String {
    "string".to_owned()
}

impl ParamSpec {
    /// A string parameter; the setters below add what else it has.
    pub fn new(name: &str, required: bool, description: &str) -> Self {
        Self {
            name: name.to_owned(),
            required,
            kind: default_param_type(),
            description: description.to_owned(),
            enum_values: None,
            items: None,
            usage: None,
            allow_empty: false,
            context_requirements: Vec::new(),
            dependencies: Vec::new(),
            description_note: None,
        }
    }

    /// Cline's `TASK_PROGRESS_PARAMETER`: optional, shown in the XML section only when `focus_chain` is
    /// offered too.
    pub fn task_progress() -> Self {
        Self::new("task_progress", false, TASK_PROGRESS_INSTRUCTION)
            .usage("Checklist here (optional)")
            .depends_on("focus_chain")
    }

    /// Shows the parameter in the XML section only when the tool `tool_id` is offered too.
    pub fn depends_on(mut self, tool_id: &str) -> Self {
        self.dependencies.push(tool_id.to_owned());
        self
    }

    /// A line the XML section appends to the tool's description while it shows this parameter.
    pub fn description_note(mut self, note: &str) -> Self {
        self.description_note = Some(note.to_owned());
        self
    }

    /// Its JSON schema type instead of `string`.
    pub fn kind(mut self, kind: &str) -> Self {
        self.kind = kind.to_owned();
        self
    }

    /// An example value for the XML prompt section (`None`: none).
    pub fn usage<'a>(mut self, usage: impl Into<Option<&'a str>>) -> Self {
        self.usage = usage.into().map(str::to_owned);
        self
    }

    /// The item schema of an array parameter.
    pub fn items(mut self, items: Value) -> Self {
        self.items = Some(items);
        self
    }

    /// Lets an empty string be a value (see [`ParamSpec::allow_empty`]).
    pub fn allow_empty(mut self) -> Self {
        self.allow_empty = true;
        self
    }

    /// Offers the parameter only when `requirement` holds.
    pub fn requires(mut self, requirement: &str) -> Self {
        self.context_requirements.push(requirement.to_owned());
        self
    }
}

/// One workspace root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceRoot {
    /// Its name, used by `@name:path` hints.
    pub name: String,
    /// Its absolute path.
    pub path: String,
}

/// The task a call belongs to, as the plugin sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct TaskInfo {
    /// The task's id.
    pub task_id: String,
    /// The primary workspace root (Cline's `cwd`).
    pub cwd: String,
    /// All workspace roots, the primary first.
    pub roots: Vec<WorkspaceRoot>,
    /// `act` or `plan`.
    pub mode: String,
    /// The model family (`generic`, `claude`, `gpt`, …).
    pub model_family: String,
    /// Whether the model accepts image blocks.
    pub supports_images: bool,
    /// Whether this task is a subagent run.
    pub subagent: bool,
    /// The timeouts the tool should honour itself, in milliseconds, by name (e.g. `list_files`).
    pub timeouts_ms: BTreeMap<String, u64>,
}

/// One tool call as the handler receives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall<A = Value> {
    /// The name the tool was called under (the primary name or an alias).
    pub tool: String,
    /// The tool-use id from the model.
    #[serde(default)]
    pub id: String,
    /// The model's input.
    pub input: A,
    /// The task.
    #[serde(default)]
    pub task: TaskInfo,
    /// In `execute`: the user, or a rule or flag they set, approved what `prepare` asked for, so the call may
    /// reach what its approval request named even outside the workspace. `false` when it runs because it
    /// needed nobody (a read inside the workspace): a path that turns out to lead outside must then be refused.
    #[serde(default)]
    pub approved: bool,
}

/// The layout the host writes a call's JSON in, `{"tool":…,"id":…,"input":…,"task_ref":"N"}` (`"task":{…}` in place
/// of `task_ref` for a handler that takes its task by value, `"approved":true` leading when set), and a reader for
/// exactly that layout: the runtime writes calls from these pieces and the SDK reads them with [`CallParts::read`]
/// before it falls back to the general parse. Serde's derive matches every key against every field; on a no-op
/// call that was a quarter of all the instructions spent on both sides of the boundary.
pub mod call_layout {
    /// Opens a call.
    pub const OPEN: &str = r#"{"tool":"#;
    /// Opens a call whose `prepare` answer was approved.
    pub const OPEN_APPROVED: &str = r#"{"approved":true,"tool":"#;
    /// Between the tool's name and the tool-use id.
    pub const ID: &str = r#","id":"#;
    /// Between the id and the input.
    pub const INPUT: &str = r#","input":"#;
    /// Between the input and the task's key (its digits), for a handler that takes the task by reference.
    pub const TASK_REF: &str = r#","task_ref":""#;
    /// Closes a call after the task's key.
    pub const TASK_REF_CLOSE: &str = r#""}"#;
    /// Between the input and the task's JSON, for a handler that takes the task by value.
    pub const TASK: &str = r#","task":"#;

    /// A call in the host's layout, taken apart but not parsed: the input is still JSON text.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct CallParts<'a> {
        /// The tool's name, as it stands between its quotes (it has no escapes).
        pub tool: &'a str,
        /// The tool-use id, as it stands between its quotes (it has no escapes).
        pub id: &'a str,
        /// The input's JSON text: when it parses as one value, the call is the object these parts make.
        pub input: &'a str,
        /// The task's key: ASCII digits.
        pub task_ref: &'a str,
        /// Whether the call leads with `"approved":true`.
        pub approved: bool,
    }

    impl<'a> CallParts<'a> {
        /// The parts of `call` when it is in exactly the layout the host writes, with its tool and id free of
        /// escapes and control characters and its task by reference; `None` for anything else, which the
        /// general parse reads. The input's text is everything between [`INPUT`] and the closing task key: the
        /// call is then the object of these four keys exactly when the input parses as one JSON value (a value
        /// followed by more keys has trailing characters), so the caller parses it and falls back on failure.
        pub fn read(call: &'a str) -> Option<Self> {
            // The common opening first.
            let (approved, rest) = match call.strip_prefix(OPEN) {
                Some(rest) => (false, rest),
                None => (true, call.strip_prefix(OPEN_APPROVED)?),
            };
            let (tool, rest) = super::json_string::read_plain(rest)?;
            let (id, rest) = super::json_string::read_plain(rest.strip_prefix(ID)?)?;
            let rest = rest.strip_prefix(INPUT)?.strip_suffix(TASK_REF_CLOSE)?;
            let digits = rest.bytes().rev().take_while(u8::is_ascii_digit).count();
            // Split on an ASCII byte: a character boundary.
            let (input_and_tag, task_ref) = rest.split_at(rest.len() - digits);
            let input = input_and_tag.strip_suffix(TASK_REF)?;
            if task_ref.is_empty() {
                return None;
            }
            Some(Self { tool, id, input, task_ref, approved })
        }
    }
}

/// JSON string tokens read and written without serde's walk when they stand as they are, as nearly every tool
/// name, tool-use id and short answer does; anything with an escape goes through serde_json.
pub mod json_string {
    /// Whether a byte stands in a JSON string token as it is: serde_json escapes only `"`, `\` and the control
    /// characters below U+0020 when it writes, and refuses them unescaped when it reads.
    fn plain(byte: u8) -> bool {
        byte >= 0x20 && byte != b'"' && byte != b'\\'
    }

    /// Appends `text` as a JSON string token, byte for byte as serde_json writes it. Into a `String`: text
    /// pieced together this way needs no UTF-8 check after.
    pub fn write(out: &mut String, text: &str) {
        if text.bytes().all(plain) {
            out.reserve(text.len() + 2);
            out.push('"');
            out.push_str(text);
            out.push('"');
        } else if let Ok(token) = serde_json::to_string(text) {
            // (Serialising a string cannot fail.)
            out.push_str(&token);
        }
    }

    /// The string token at the start of `text` when it has no escape: what it stands for (its inside, as it
    /// is) and what follows it. `None` for anything else, which serde_json reads.
    pub fn read_plain(text: &str) -> Option<(&str, &str)> {
        let body = text.strip_prefix('"')?;
        let end = body.bytes().position(|b| !plain(b))?;
        match body.as_bytes()[end] {
            b'"' => Some((&body[..end], &body[end + 1..])),
            _ => None,
        }
    }
}

/// A streamed, incomplete tool use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartialBlock {
    /// The name being called.
    pub tool: String,
    /// The tool-use id, when the host knows it already (key streaming state by it).
    #[serde(default)]
    pub id: String,
    /// The parameters parsed so far.
    #[serde(default)]
    pub input: Value,
    /// The task.
    #[serde(default)]
    pub task: TaskInfo,
}

/// How risky an approval request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads only.
    #[default]
    Low,
    /// Changes the workspace.
    Medium,
    /// Can do anything (commands, network).
    High,
}

/// What `prepare` asks the user (or the policy) to approve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The kind of operation: `read`, `write`, `command`, `network`, `mcp`, or a tool's own.
    pub kind: String,
    /// The question shown to the user.
    pub message: String,
    /// The absolute paths the operation touches; the policy checks them against the workspace.
    #[serde(default)]
    pub paths: Vec<String>,
    /// How risky it is.
    #[serde(default)]
    pub risk: Risk,
    /// The result the model reads when the user refuses (Cline's write tools add that the file was not
    /// changed); `The user denied this operation.` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied_message: Option<String>,
}

/// A tool error: the message is shown to the model wrapped in Cline's `toolError` template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolError {
    /// What went wrong, written for the model.
    pub message: String,
    /// Whether it counts toward the task's consecutive-mistake counter.
    #[serde(default)]
    pub mistake: bool,
}

/// The answer of `prepare`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Prepared {
    /// Run without asking anyone (tools whose work is itself a question to the user).
    Proceed,
    /// Ask the approval policy first.
    Approval(ApprovalRequest),
    /// Refuse the call.
    Error(ToolError),
}

/// One block of a tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// A base64-encoded image.
    Image {
        /// `image/png`, `image/jpeg` or `image/webp`.
        media_type: String,
        /// Base64 data.
        data: String,
    },
}

/// The answer of `execute`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The tool's result blocks.
    Success {
        /// Text and image blocks, in order.
        blocks: Vec<Block>,
        /// The blocks report the tool's own failure (an MCP server's `isError`): the model reads them as
        /// the result they are, under the result header, and the host sees a tool error (`toolshed call`
        /// exits 1, `serve` answers `isError`). Absent in JSON when false, so older hosts read it as before.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    /// A tool error.
    Error(ToolError),
    /// The user (asked by the tool itself) refused.
    Denied,
}

/// Why a host service failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceErrorKind {
    /// The call was cancelled or timed out; stop working.
    Cancelled,
    /// The host does not offer this service.
    UnknownService,
    /// The request JSON was not what the service takes.
    InvalidRequest,
    /// The service refused by policy.
    Denied,
    /// The service tried and failed.
    Failed,
}

/// A host service's error, as JSON in the `Err` of [`crate::Host::service`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceError {
    /// The kind of failure.
    pub kind: ServiceErrorKind,
    /// A message for a human or the model.
    pub message: String,
}

impl ServiceError {
    /// A new error.
    pub fn new(kind: ServiceErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }
}

impl std::fmt::Display for ServiceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ServiceError {}

/// Log levels for [`crate::Host::log`].
pub mod log_level {
    /// An error.
    pub const ERROR: u8 = 1;
    /// A warning.
    pub const WARN: u8 = 2;
    /// Information.
    pub const INFO: u8 = 3;
    /// Debugging detail.
    pub const DEBUG: u8 = 4;
}

/// The answers of `prepare` read through one flat struct ([`FlatOutcome`] for `execute`'s): serde reads
/// internally tagged enums by buffering the whole value first, which costs more than the rest of a small call.
/// The JSON is the same. The tags (`status`, a block's `type`) are borrowed from the answer: they are only
/// compared.
#[derive(Deserialize)]
struct FlatAnswer<'a> {
    #[serde(borrow)]
    status: std::borrow::Cow<'a, str>,
    #[serde(default, deserialize_with = "budgeted_text")]
    message: Option<String>,
    #[serde(default)]
    mistake: bool,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    risk: Risk,
    #[serde(default)]
    denied_message: Option<String>,
}

/// `execute`'s answer, read as [`FlatAnswer`] is, without `prepare`'s fields: fewer field names to tell apart
/// and a smaller struct to fill and move, on every call.
#[derive(Deserialize)]
struct FlatOutcome<'a> {
    #[serde(borrow)]
    status: std::borrow::Cow<'a, str>,
    #[serde(default, deserialize_with = "budgeted_blocks")]
    blocks: ReadBlocks,
    #[serde(default, deserialize_with = "budgeted_text")]
    message: Option<String>,
    #[serde(default)]
    mistake: bool,
    #[serde(default)]
    is_error: bool,
}

#[derive(Deserialize)]
struct FlatBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(default, deserialize_with = "budgeted_text")]
    text: Option<String>,
    #[serde(default)]
    media_type: Option<String>,
    #[serde(default)]
    data: Option<String>,
}

thread_local! {
    /// The text budget of a capped parse on this thread ([`Outcome::from_json_capped`]): the bytes of text
    /// still kept and the bytes cut so far. `None` outside one: every text is read whole.
    static TEXT_BUDGET: Cell<Option<(usize, usize)>> = const { Cell::new(None) };
}

/// A text field (a block's text, an error's message) read against the budget: the part that fits is kept,
/// cut on a character boundary, so a huge answer is never copied whole into the parsed structure.
fn budgeted_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    struct Budgeted;
    impl<'de> serde::de::Visitor<'de> for Budgeted {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string or null")
        }
        fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
            Ok(Some(TEXT_BUDGET.with(|cell| match cell.get() {
                None => text.to_owned(),
                Some((left, cut)) => {
                    let mut keep = left.min(text.len());
                    while !text.is_char_boundary(keep) {
                        keep -= 1;
                    }
                    cell.set(Some((left - keep, cut + (text.len() - keep))));
                    text[..keep].to_owned()
                }
            })))
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
            deserializer.deserialize_str(self)
        }
    }
    deserializer.deserialize_option(Budgeted)
}

/// The blocks, read against the budget: once it is spent, further text blocks are dropped (their bytes are
/// counted as cut), so a flood of small blocks does not become a larger structure than the answer.
/// An answer's blocks, each made a [`Block`] as it is read (no second list of them is built), and the first
/// block that could not be: that fails only a `success` answer, the one whose blocks are read, so an error
/// answer keeps its message whatever blocks came with it (the status may come after them).
#[derive(Default)]
struct ReadBlocks {
    blocks: Vec<Block>,
    invalid: Option<String>,
}

fn budgeted_blocks<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ReadBlocks, D::Error> {
    struct Blocks;
    impl<'de> serde::de::Visitor<'de> for Blocks {
        type Value = ReadBlocks;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of blocks")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut read = ReadBlocks::default();
            loop {
                let spent = TEXT_BUDGET.with(|cell| matches!(cell.get(), Some((0, _))));
                let Some(block) = seq.next_element::<FlatBlock>()? else {
                    return Ok(read);
                };
                if !(spent && block.kind == "text") {
                    match block.into_block() {
                        Ok(block) => read.blocks.push(block),
                        Err(invalid) => {
                            read.invalid.get_or_insert(invalid);
                        }
                    }
                }
            }
        }
    }
    deserializer.deserialize_seq(Blocks)
}

fn flat_error(what: &str) -> serde_json::Error {
    <serde_json::Error as serde::de::Error>::custom(what)
}

impl FlatBlock<'_> {
    fn into_block(self) -> Result<Block, String> {
        match &*self.kind {
            "text" => Ok(Block::Text { text: self.text.unwrap_or_default() }),
            "image" => Ok(Block::Image {
                media_type: self.media_type.ok_or("an image without a media type")?,
                data: self.data.unwrap_or_default(),
            }),
            other => Err(format!("unknown block type '{other}'")),
        }
    }
}

/// The tool error of an answer whose status is `error`.
fn flat_tool_error(message: Option<String>, mistake: bool) -> Result<ToolError, serde_json::Error> {
    Ok(ToolError { message: message.ok_or_else(|| flat_error("an error without a message"))?, mistake })
}

impl Prepared {
    /// Parses `prepare`'s JSON answer (the fast path the runtime uses).
    pub fn from_json(text: &str) -> Result<Prepared, serde_json::Error> {
        let flat: FlatAnswer<'_> = serde_json::from_str(text)?;
        match &*flat.status {
            "proceed" => Ok(Prepared::Proceed),
            "approval" => Ok(Prepared::Approval(ApprovalRequest {
                kind: flat.kind.ok_or_else(|| flat_error("an approval request without a kind"))?,
                message: flat.message.ok_or_else(|| flat_error("an approval request without a message"))?,
                paths: flat.paths,
                risk: flat.risk,
                denied_message: flat.denied_message,
            })),
            "error" => Ok(Prepared::Error(flat_tool_error(flat.message, flat.mistake)?)),
            other => Err(flat_error(&format!("unknown prepare status '{other}'"))),
        }
    }
}

/// What serde writes for the answer nearly every call gets, one text block, around the text's string token.
const ONE_TEXT_HEAD: &str = r#"{"status":"success","blocks":[{"type":"text","text":"#;
const ONE_TEXT_TAIL: &str = "}]}";

/// The text of an answer that is one text block written as serde writes it, read without the general parse:
/// the fixed head and tail compared, and the string token between them taken as it is when it has no escape
/// and ends where the tail begins, else read by serde_json, which fails on anything more than one string (a
/// token followed by more JSON has trailing characters). `None` for every other answer, which the general parse
/// reads. On a no-op call the general parse was a third of the host's instructions: it matches every key and
/// goes through the block's visitor and the text budget.
fn one_text(answer: &str) -> Option<String> {
    let token = answer.strip_prefix(ONE_TEXT_HEAD)?.strip_suffix(ONE_TEXT_TAIL)?;
    match json_string::read_plain(token) {
        Some((text, "")) => Some(text.to_owned()),
        _ => serde_json::from_str(token).ok(),
    }
}

/// The longest text [`Outcome::to_json`] writes without serde's walk: past this, escaping the text is most of
/// the work either way, and a text with escapes would be written into a buffer of its own first.
const ONE_TEXT_WRITE_MAX: usize = 4096;

impl Outcome {
    /// `self` as JSON, byte for byte what serde writes. The one-text-block answer of a few KiB (nearly every
    /// call's) is written around its text's string token: serde's walk through the enum and its five keys
    /// cost more than the text on a small answer.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        // No `let` chains: this crate is also built as edition 2021 (the foreign-version fixture).
        let one_text = match self {
            Outcome::Success { blocks, is_error: false } => match blocks.as_slice() {
                [Block::Text { text }] if text.len() <= ONE_TEXT_WRITE_MAX => Some(text),
                _ => None,
            },
            _ => None,
        };
        if let Some(text) = one_text {
            let mut json = String::with_capacity(ONE_TEXT_HEAD.len() + text.len() + 2 + ONE_TEXT_TAIL.len());
            json.push_str(ONE_TEXT_HEAD);
            json_string::write(&mut json, text);
            json.push_str(ONE_TEXT_TAIL);
            return Ok(json);
        }
        serde_json::to_string(self)
    }

    /// Parses `execute`'s JSON answer (the fast path the runtime uses).
    pub fn from_json(text: &str) -> Result<Outcome, serde_json::Error> {
        if let Some(text) = one_text(text) {
            return Ok(Outcome::Success { blocks: vec![Block::Text { text }], is_error: false });
        }
        Self::from_json_general(text)
    }

    /// [`Outcome::from_json`] for any answer, through one flat struct; under a text budget when one is set.
    fn from_json_general(text: &str) -> Result<Outcome, serde_json::Error> {
        let flat: FlatOutcome<'_> = serde_json::from_str(text)?;
        match &*flat.status {
            "success" => match flat.blocks.invalid {
                Some(invalid) => Err(flat_error(&invalid)),
                None => Ok(Outcome::Success { blocks: flat.blocks.blocks, is_error: flat.is_error }),
            },
            "error" => Ok(Outcome::Error(flat_tool_error(flat.message, flat.mistake)?)),
            "denied" => Ok(Outcome::Denied),
            other => Err(flat_error(&format!("unknown execute status '{other}'"))),
        }
    }

    /// [`Outcome::from_json`] keeping at most `max_text_bytes` of text (blocks' texts and an error's
    /// message together, cut on a character boundary), and how many bytes of text it cut. The parsed
    /// structure stays within the cap however large the answer; images are kept whole.
    pub fn from_json_capped(text: &str, max_text_bytes: usize) -> Result<(Outcome, usize), serde_json::Error> {
        /// Ends the budget however the parse ends.
        struct Reset;
        impl Drop for Reset {
            fn drop(&mut self) {
                TEXT_BUDGET.with(|cell| cell.set(None));
            }
        }
        TEXT_BUDGET.with(|cell| cell.set(Some((max_text_bytes, 0))));
        let _reset = Reset;
        let outcome = Outcome::from_json_general(text)?;
        Ok((outcome, TEXT_BUDGET.with(|cell| cell.get().map_or(0, |(_, cut)| cut))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every text of up to `len` characters from a pool of the ones that matter to JSON (escaped by serde or
    /// not) and to the tails the short paths compare.
    fn short_texts(len: usize) -> Vec<String> {
        let pool = ['a', '"', '\\', '}', ']', '\n', '\u{0}', '\u{1f}', '\u{7f}', 'é', '😀', '/'];
        let mut texts = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..len {
            last = last.iter().flat_map(|text| pool.iter().map(move |c| format!("{text}{c}"))).collect();
            texts.extend(last.iter().cloned());
        }
        texts
    }

    #[test]
    fn a_string_token_is_written_and_read_as_serde_does() {
        for text in short_texts(3) {
            let mut written = String::new();
            json_string::write(&mut written, &text);
            let serde = serde_json::to_string(&text).unwrap();
            assert_eq!(written, serde, "{text:?}");
            // Read as it stands only when serde reads the same; with anything after it, as it stands too.
            for after in ["", ",", "\"x\""] {
                let token = format!("{serde}{after}");
                if let Some((read, rest)) = json_string::read_plain(&token) {
                    assert_eq!((read, rest), (text.as_str(), after), "{token:?}");
                }
            }
            assert_eq!(
                json_string::read_plain(&serde).is_some(),
                !serde[1..serde.len() - 1].contains('\\'),
                "{text:?}"
            );
        }
        // Raw control characters and unterminated tokens are serde's to refuse.
        for token in ["\"a\u{1}\"", "\"a", "a\"", "\"a\\\"\""] {
            assert_eq!(json_string::read_plain(token), None, "{token:?}");
        }
    }

    #[test]
    fn the_fast_parsers_read_what_serde_writes() {
        let outcomes = [
            Outcome::Success {
                blocks: vec![
                    Block::Image { media_type: "image/png".into(), data: "AAAA".into() },
                    Block::Text { text: "ok".into() },
                ],
                is_error: false,
            },
            Outcome::Success { blocks: vec![], is_error: false },
            Outcome::Success { blocks: vec![Block::Text { text: "Error:\nno".into() }], is_error: true },
            Outcome::Error(ToolError { message: "bad".into(), mistake: true }),
            Outcome::Denied,
        ];
        for outcome in outcomes {
            let json = serde_json::to_string(&outcome).unwrap();
            assert_eq!(Outcome::from_json(&json).unwrap(), outcome, "{json}");
        }
        let prepared = [
            Prepared::Proceed,
            Prepared::Approval(ApprovalRequest {
                kind: "write".into(),
                message: "m".into(),
                paths: vec!["/a".into()],
                risk: Risk::High,
                denied_message: Some("kept".into()),
            }),
            Prepared::Error(ToolError { message: "no".into(), mistake: false }),
        ];
        for p in prepared {
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(Prepared::from_json(&json).unwrap(), p, "{json}");
        }
        assert!(Outcome::from_json(r#"{"status":"weird"}"#).is_err());
        assert_eq!(
            Outcome::from_json(r#"{"status":"success","blocks":[{"type":"text","text":null}]}"#).unwrap(),
            Outcome::Success { blocks: vec![Block::Text { text: String::new() }], is_error: false }
        );
        assert!(Prepared::from_json(r#"{"status":"error"}"#).is_err());
        // A block that cannot be read fails a success answer only: an error answer keeps its message.
        assert!(Outcome::from_json(r#"{"status":"success","blocks":[{"type":"video"}]}"#).is_err());
        assert!(Outcome::from_json(r#"{"blocks":[{"type":"image"}],"status":"success"}"#).is_err());
        assert_eq!(
            Outcome::from_json(r#"{"blocks":[{"type":"video"}],"status":"error","message":"no","mistake":true}"#)
                .unwrap(),
            Outcome::Error(ToolError { message: "no".into(), mistake: true })
        );
        assert_eq!(
            Prepared::from_json(r#"{"status":"proceed","blocks":[{"type":"video"}]}"#).unwrap(),
            Prepared::Proceed
        );
    }

    #[test]
    fn a_capped_parse_keeps_the_budget_of_text() {
        let text = |text: &str| Block::Text { text: text.into() };
        let image = Block::Image { media_type: "image/png".into(), data: "AAAA".into() };
        let many: Vec<Block> =
            [text("héllo"), image.clone(), text("world")].into_iter().chain((0..1000).map(|_| text("x"))).collect();
        let json = serde_json::to_string(&Outcome::Success { blocks: many, is_error: false }).unwrap();
        let (outcome, cut) = Outcome::from_json_capped(&json, 8).unwrap();
        // "héllo" is 6 bytes; 2 more fit of "world"; the single-byte blocks after it are dropped.
        assert_eq!(outcome, Outcome::Success { blocks: vec![text("héllo"), image, text("wo")], is_error: false });
        assert_eq!(cut, 3 + 1000);
        // A cut never splits a character, and the budget ends with the parse.
        let json = serde_json::to_string(&Outcome::Error(ToolError { message: "ééé".into(), mistake: false })).unwrap();
        let (outcome, cut) = Outcome::from_json_capped(&json, 3).unwrap();
        assert_eq!((outcome, cut), (Outcome::Error(ToolError { message: "é".into(), mistake: false }), 4));
        assert!(Outcome::from_json_capped("{", 3).is_err());
        assert_eq!(
            Outcome::from_json(&json).unwrap(),
            Outcome::Error(ToolError { message: "ééé".into(), mistake: false })
        );
    }

    /// Both parses of one answer: the same outcome, or both an error.
    fn same_either_way(answer: &str) {
        let (fast, general) = (Outcome::from_json(answer), Outcome::from_json_general(answer));
        assert_eq!(fast.as_ref().ok(), general.as_ref().ok(), "{answer:?}");
        assert_eq!(fast.is_err(), general.is_err(), "{answer:?}");
    }

    #[test]
    fn the_one_text_answer_reads_as_the_general_parse_reads_it() {
        for text in short_texts(4) {
            let outcome = Outcome::Success { blocks: vec![Block::Text { text }], is_error: false };
            let answer = serde_json::to_string(&outcome).unwrap();
            assert!(answer.starts_with(ONE_TEXT_HEAD) && answer.ends_with(ONE_TEXT_TAIL), "{answer}");
            assert_eq!(Outcome::from_json(&answer).unwrap(), outcome, "{answer}");
            assert_eq!(outcome.to_json().unwrap(), answer);
            same_either_way(&answer);
        }
        // Answers that start and end as one text block does and are something else, or nothing valid.
        let head = ONE_TEXT_HEAD;
        for middle in [
            r#""a"},{"type":"text","text":"b""#,
            r#""a","text":"b""#,
            r#""a","extra":1"#,
            r#" "a" "#,
            "null",
            "1",
            r#""\ud800""#,
            r#""\ud83d\ude00""#,
            r#""\u00e9\n\t\"""#,
            r#""unterminated"#,
            "\"raw\ncontrol\"",
            r#""a"}]},{"x":"#,
            r#""a"}],"is_error":true,"x":"#,
            "",
        ] {
            same_either_way(&format!("{head}{middle}{ONE_TEXT_TAIL}"));
        }
        for answer in [
            format!("{head}\"a\"{ONE_TEXT_TAIL} "),
            format!(" {head}\"a\"{ONE_TEXT_TAIL}"),
            format!("{head}\"a\"{ONE_TEXT_TAIL}x"),
            format!("{head}\"a\"}}]}}}}"),
            r#"{"status":"success","blocks":[{"type":"text","text":"a"}],"is_error":true}"#.to_owned(),
            r#"{"blocks":[{"type":"text","text":"a"}],"status":"success"}"#.to_owned(),
            r#"{"status":"success","blocks":[{"text":"a","type":"text"}]}"#.to_owned(),
        ] {
            same_either_way(&answer);
        }
        // A capped parse never takes the short way round: its budget cuts the text.
        let answer = serde_json::to_string(&Outcome::Success {
            blocks: vec![Block::Text { text: "abcdef".into() }],
            is_error: false,
        })
        .unwrap();
        let (outcome, cut) = Outcome::from_json_capped(&answer, 2).unwrap();
        assert_eq!(
            (outcome, cut),
            (Outcome::Success { blocks: vec![Block::Text { text: "ab".into() }], is_error: false }, 4)
        );
    }

    #[test]
    fn every_answer_is_written_as_serde_writes_it() {
        let text = |text: &str| Block::Text { text: text.into() };
        let long = "é\"x".repeat(ONE_TEXT_WRITE_MAX / 4);
        let longer = "a".repeat(ONE_TEXT_WRITE_MAX + 1);
        for outcome in [
            Outcome::Success { blocks: vec![text("ok")], is_error: false },
            Outcome::Success { blocks: vec![text(&long)], is_error: false },
            Outcome::Success { blocks: vec![text(&longer)], is_error: false },
            Outcome::Success { blocks: vec![text("a")], is_error: true },
            Outcome::Success { blocks: vec![text("a"), text("b")], is_error: false },
            Outcome::Success { blocks: vec![], is_error: false },
            Outcome::Success {
                blocks: vec![Block::Image { media_type: "image/png".into(), data: "AAAA".into() }],
                is_error: false,
            },
            Outcome::Error(ToolError { message: "no".into(), mistake: true }),
            Outcome::Denied,
        ] {
            assert_eq!(outcome.to_json().unwrap(), serde_json::to_string(&outcome).unwrap());
        }
    }
}
