//! The soak's calls and what each may end as: every case names, before anything runs, the kinds of result it
//! expects (a valid input `Ok`, an invalid one the tool error it must get), and [`classify`] sorts every
//! result into exactly one [`Kind`] from its status and text. A result of a kind its case does not list is an
//! unexpected failure.

use serde_json::{json, Value};
use toolshed::{Mode, ResultStatus, ToolResult};

/// How a call ended. The first group are the outcomes cases may expect; the second group are failures of the
/// runtime itself, which no case ever expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// The tool did its work.
    Ok,
    /// A required parameter is missing (the SDK's shared text).
    MissingParameter,
    /// The file or directory does not exist.
    NotFound,
    /// `.clineignore` fences the path off.
    Clineignore,
    /// A write outside the workspace, refused before anyone is asked.
    OutsideWorkspace,
    /// The approval policy or the user refused.
    Denied,
    /// search_files: the regex does not compile.
    InvalidRegex,
    /// list_code_definition_names: the path is a file.
    NotADirectory,
    /// read_file: a binary file type.
    UnsupportedFileType,
    /// new_rule: a path outside `.clinerules/`.
    OutsideClinerules,
    /// replace_in_file / apply_patch: the search text or context is not in the file.
    NoMatch,
    /// apply_patch: the text is not a V4A patch.
    InvalidPatch,
    /// ask_followup_question: `options` is not a JSON array of 2–5 strings.
    BadOptions,
    /// web_search: both domain lists.
    ConflictingDomains,
    /// execute_command: the command ran and exited non-zero.
    ExitNonzero,
    /// execute_command: `CLINE_COMMAND_PERMISSIONS` refuses the command.
    CommandNotPermitted,
    /// use_mcp_tool / access_mcp_resource: the server is not connected.
    McpNoConnection,
    /// use_mcp_tool: `arguments` is not JSON.
    McpInvalidJson,
    /// A conversational tool whose host action this host does not offer.
    HostUnsupported,
    /// use_skill: no such skill.
    SkillNotFound,
    /// web_fetch: the address is refused or unreachable.
    FetchRefused,
    /// plan_mode_respond outside PLAN MODE.
    WrongMode,
    /// focus_chain called as a tool.
    NotATool,
    /// use_subagents without an agent driver.
    SubagentsDisabled,
    /// A question nobody can answer.
    NoAnswer,
    /// Never expected: the runtime's timeout fired.
    Timeout,
    /// Never expected: a plugin panicked (caught at the boundary).
    Panic,
    /// Never expected: the call was cancelled.
    Cancelled,
    /// Never expected: the tool is quarantined.
    Quarantined,
    /// Never expected: the tool was not found (e.g. gone for a moment during a reload).
    UnknownTool,
    /// Never expected: the boundary failed (a stopped actor, an unreadable answer).
    Boundary,
    /// Never expected: a message-level rule skipped the call.
    Skipped,
    /// Never expected: a result no pattern recognises.
    Other,
}

impl Kind {
    /// The name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Ok => "ok",
            Kind::MissingParameter => "missing_parameter",
            Kind::NotFound => "not_found",
            Kind::Clineignore => "clineignore",
            Kind::OutsideWorkspace => "outside_workspace",
            Kind::Denied => "denied",
            Kind::InvalidRegex => "invalid_regex",
            Kind::NotADirectory => "not_a_directory",
            Kind::UnsupportedFileType => "unsupported_file_type",
            Kind::OutsideClinerules => "outside_clinerules",
            Kind::NoMatch => "no_match",
            Kind::InvalidPatch => "invalid_patch",
            Kind::BadOptions => "bad_options",
            Kind::ConflictingDomains => "conflicting_domains",
            Kind::ExitNonzero => "exit_nonzero",
            Kind::CommandNotPermitted => "command_not_permitted",
            Kind::McpNoConnection => "mcp_no_connection",
            Kind::McpInvalidJson => "mcp_invalid_json",
            Kind::HostUnsupported => "host_unsupported",
            Kind::SkillNotFound => "skill_not_found",
            Kind::FetchRefused => "fetch_refused",
            Kind::WrongMode => "wrong_mode",
            Kind::NotATool => "not_a_tool",
            Kind::SubagentsDisabled => "subagents_disabled",
            Kind::NoAnswer => "no_answer",
            Kind::Timeout => "timeout",
            Kind::Panic => "panic",
            Kind::Cancelled => "cancelled",
            Kind::Quarantined => "quarantined",
            Kind::UnknownTool => "unknown_tool",
            Kind::Boundary => "boundary",
            Kind::Skipped => "skipped",
            Kind::Other => "other",
        }
    }
}

/// Texts of error results, checked in order anywhere in the text: the runtime's own failures first, so a
/// panic message that happens to quote a tool error is still a panic.
const ERROR_PATTERNS: &[(Kind, &str)] = &[
    (Kind::Panic, "panicked"),
    (Kind::Timeout, "did not finish within"),
    (Kind::Quarantined, "is quarantined because"),
    (Kind::Cancelled, "the task was cancelled"),
    (Kind::UnknownTool, "does not exist. Available tools:"),
    (Kind::Boundary, "the tool's actor has stopped"),
    (Kind::Boundary, "unreadable answer from"),
    (Kind::MissingParameter, "Missing value for required parameter"),
    // The tools' own texts, which Cline's handlers give instead (execute_command, write_to_file, replace_in_file;
    // condense and use_skill).
    (Kind::MissingParameter, "parameter was empty"),
    (Kind::MissingParameter, "Missing required parameter"),
    (Kind::CommandNotPermitted, "blocked by CLINE_COMMAND_PERMISSIONS"),
    (Kind::Clineignore, ".clineignore"),
    (Kind::OutsideWorkspace, "which is outside the workspace"),
    (Kind::InvalidRegex, "is not valid Rust regex syntax"),
    (Kind::NotADirectory, "is a file, not a directory"),
    (Kind::UnsupportedFileType, "Cannot read text for file type"),
    (Kind::OutsideClinerules, "new_rule only creates Cline rule files"),
    (Kind::NoMatch, "does not match anything in the file"),
    (Kind::NoMatch, "did not match"),
    (Kind::InvalidPatch, "Unknown line while parsing"),
    (Kind::BadOptions, "Provide a JSON array of 2-5 strings"),
    (Kind::ConflictingDomains, "Cannot specify both allowed_domains and blocked_domains"),
    (Kind::McpNoConnection, "No connection found"),
    (Kind::McpInvalidJson, "Invalid JSON argument"),
    (Kind::HostUnsupported, "This host does not support"),
    (Kind::WrongMode, "is only available in PLAN MODE"),
    (Kind::NotATool, "is not a tool to call"),
    (Kind::SubagentsDisabled, "Subagents are disabled"),
    (Kind::NoAnswer, "No user is available to answer"),
    (Kind::NotFound, "File not found"),
    (Kind::NotFound, "Directory not found"),
    (Kind::NotFound, "does not exist"),
];

/// Successful results that report a failure in their body (Cline returns these as ordinary results), matched
/// at the start of the body so a file's content can never be mistaken for one.
const SOFT_PATTERNS: &[(Kind, &str)] = &[
    (Kind::ExitNonzero, "Command failed with exit code"),
    (Kind::SkillNotFound, "Error: Skill"),
    (Kind::FetchRefused, "Error fetching web content"),
];

/// Sorts one result into its kind.
pub fn classify(result: &ToolResult) -> Kind {
    let text = result.to_model_text();
    match result.status {
        ResultStatus::Denied => Kind::Denied,
        ResultStatus::Skipped => Kind::Skipped,
        ResultStatus::Error => {
            ERROR_PATTERNS.iter().find(|(_, pattern)| text.contains(pattern)).map_or(Kind::Other, |(kind, _)| *kind)
        }
        ResultStatus::Success => {
            // The body follows the result header's first line.
            let body = text.split_once('\n').map_or(text.as_str(), |(_, body)| body);
            let head = body.get(..body.len().min(300)).unwrap_or(body);
            SOFT_PATTERNS.iter().find(|(_, pattern)| head.contains(pattern)).map_or(Kind::Ok, |(kind, _)| *kind)
        }
    }
}

/// One call and the kinds it may end as.
pub struct Case {
    pub tool: &'static str,
    pub input: Value,
    pub expect: &'static [Kind],
    /// The task's mode for this call (plan_mode_respond needs PLAN MODE).
    pub mode: Mode,
}

fn case(tool: &'static str, input: Value, expect: &'static [Kind]) -> Case {
    Case { tool, input, expect, mode: Mode::Act }
}

/// A task's calls for one round: groups whose order rotates from round to round (the calls inside a group
/// depend on each other and keep their order), then the calls that end the task.
pub struct Script {
    pub groups: Vec<Vec<Case>>,
    pub last: Vec<Case>,
}

/// Which runtime a task runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `.yes(true)`, a host that answers questions and drives subagents.
    Approving,
    /// A host whose user denies every ask, with no interaction and no agent driver.
    Denying,
}

use Kind::*;

/// The calls of one task. `dir` is the task's own directory (relative to the workspace), where its writes go;
/// `site` the address of the local HTTP server playing the Cline API and a web page.
pub fn script(side: Side, dir: &str, site: &str) -> Script {
    match side {
        Side::Approving => approving(dir, site),
        Side::Denying => denying(dir, site),
    }
}

const DIFF_ONE: &str = "------- SEARCH\n- one\n=======\n- one\n- two\n+++++++ REPLACE";
const DIFF_NONE: &str = "------- SEARCH\n- nothing like this\n=======\nx\n+++++++ REPLACE";

fn approving(dir: &str, site: &str) -> Script {
    let reads = vec![
        case("read_file", json!({"path": "docs/guide.md"}), &[Ok]),
        case("read_file", json!({"path": "data/journal.log", "start_line": 1500, "end_line": 1510}), &[Ok]),
        case("read_file", json!({"path": "analysis.ipynb"}), &[Ok]),
        case("read_file", json!({"path": "secrets/token.txt"}), &[Clineignore]),
        case("read_file", json!({"path": "logo.bin"}), &[UnsupportedFileType]),
        case("read_file", json!({"path": "no/such/file.txt"}), &[NotFound]),
        case("read_file", json!({}), &[MissingParameter]),
    ];
    let lists = vec![
        case("list_files", json!({"path": "."}), &[Ok]),
        case("list_files", json!({"path": "src", "recursive": true}), &[Ok]),
        case("list_files", json!({"path": "does-not-exist"}), &[Ok]),
        case("list_files", json!({}), &[MissingParameter]),
        case("list_code_definition_names", json!({"path": "src"}), &[Ok]),
        case("list_code_definition_names", json!({"path": "docs/guide.md"}), &[NotADirectory]),
        case("list_code_definition_names", json!({"path": "no/such/dir"}), &[NotFound]),
        case("list_code_definition_names", json!({}), &[MissingParameter]),
    ];
    let searches = vec![
        case("search_files", json!({"path": "src", "regex": "fn \\w+", "file_pattern": "*.rs"}), &[Ok]),
        // The whole workspace, while other tasks write and delete files under tasks/.
        case("search_files", json!({"path": ".", "regex": "TODO"}), &[Ok]),
        case("search_files", json!({"path": "src", "regex": "(unclosed"}), &[InvalidRegex]),
        case("search_files", json!({"path": "no/such/dir", "regex": "x"}), &[NotFound]),
        case("search_files", json!({"path": "src"}), &[MissingParameter]),
    ];
    let command = |command: &str| json!({"command": command, "requires_approval": false});
    let commands = vec![
        case("execute_command", command("echo soak"), &[Ok]),
        case("execute_command", command("true"), &[Ok]),
        case("execute_command", command("false"), &[ExitNonzero]),
        case("execute_command", command("ls src"), &[Ok]),
        case("execute_command", command("cat secrets/token.txt"), &[Clineignore]),
        case("execute_command", command("rm -rf src"), &[CommandNotPermitted]),
        case("execute_command", json!({"requires_approval": false}), &[MissingParameter]),
    ];
    let notes = format!("{dir}/notes.md");
    let edits = vec![
        case("write_to_file", json!({"path": notes, "content": "# Notes\n\n- one\n"}), &[Ok]),
        case("replace_in_file", json!({"path": notes, "diff": DIFF_ONE}), &[Ok]),
        case("replace_in_file", json!({"path": notes, "diff": DIFF_NONE}), &[NoMatch]),
        // Cline edits a missing file as an empty one: the search text is not found, and nothing is created.
        case("replace_in_file", json!({"path": format!("{dir}/absent.md"), "diff": DIFF_ONE}), &[NoMatch]),
        case("write_to_file", json!({"path": format!("{dir}/empty.md")}), &[MissingParameter]),
        case("write_to_file", json!({"path": "secrets/stolen.txt", "content": "x"}), &[Clineignore]),
        case(
            "apply_patch",
            json!({"input": format!("*** Begin Patch\n*** Update File: {notes}\n@@\n-- two\n+- two, patched\n*** Add File: {dir}/patched.md\n+- added\n*** End Patch")}),
            &[Ok],
        ),
        case(
            "apply_patch",
            json!({"input": format!("*** Begin Patch\n*** Delete File: {dir}/patched.md\n*** End Patch")}),
            &[Ok],
        ),
        case(
            "apply_patch",
            json!({"input": format!("*** Begin Patch\n*** Update File: {notes}\n@@\n-- no such line\n+x\n*** End Patch")}),
            &[NoMatch],
        ),
        case("apply_patch", json!({"input": "this is not a patch"}), &[InvalidPatch]),
        case(
            "new_rule",
            json!({"path": format!(".clinerules/soak-{}.md", dir.replace('/', "-")), "content": "## Soak\n- Keep it short.\n"}),
            &[Ok],
        ),
        case("new_rule", json!({"path": "rule.md", "content": "x"}), &[OutsideClinerules]),
    ];
    let conversation = vec![
        case("ask_followup_question", json!({"question": "Which file?", "options": "[\"a.md\", \"b.md\"]"}), &[Ok]),
        case("ask_followup_question", json!({"question": "Which?", "options": "[\"only one\"]"}), &[BadOptions]),
        case("ask_followup_question", json!({}), &[MissingParameter]),
        case("act_mode_respond", json!({"response": "Working on it."}), &[Ok]),
        case("plan_mode_respond", json!({"response": "The plan"}), &[WrongMode]),
        Case {
            mode: Mode::Plan,
            ..case("plan_mode_respond", json!({"response": "The plan: read, then edit."}), &[Ok])
        },
        case("focus_chain", json!({}), &[NotATool]),
        case("new_task", json!({"context": "Continue the soak."}), &[Ok]),
        case("condense", json!({"context": "We read and edited files."}), &[Ok]),
        case("summarize_task", json!({"context": "1. Primary Request: a soak"}), &[HostUnsupported]),
        case(
            "report_bug",
            json!({"title": "Soak", "what_happened": "Nothing", "steps_to_reproduce": "Run the soak", "api_request_output": "none", "additional_context": "none"}),
            &[Ok],
        ),
        case("generate_explanation", json!({"title": "Last commit", "from_ref": "HEAD~1"}), &[HostUnsupported]),
        case("use_skill", json!({"skill_name": "release-notes"}), &[Ok]),
        case("use_skill", json!({"skill_name": "no-such-skill"}), &[SkillNotFound]),
    ];
    let web = vec![
        case("web_fetch", json!({"url": format!("http://{site}/docs"), "prompt": "What does it say?"}), &[Ok]),
        case("web_fetch", json!({"url": "http://169.254.169.254/latest/meta-data", "prompt": "p"}), &[FetchRefused]),
        // Allowed, but nothing listens on port 1.
        case("web_fetch", json!({"url": "http://127.0.0.1:1/", "prompt": "p"}), &[FetchRefused]),
        case("web_fetch", json!({"prompt": "p"}), &[MissingParameter]),
        case("web_search", json!({"query": "toolshed", "allowed_domains": "[\"docs.rs\"]"}), &[Ok]),
        case(
            "web_search",
            json!({"query": "x", "allowed_domains": "[\"a.com\"]", "blocked_domains": "[\"b.com\"]"}),
            &[ConflictingDomains],
        ),
    ];
    let mcp = vec![
        case(
            "use_mcp_tool",
            json!({"server_name": "absent", "tool_name": "echo", "arguments": "{}"}),
            &[McpNoConnection],
        ),
        case(
            "use_mcp_tool",
            json!({"server_name": "absent", "tool_name": "echo", "arguments": "{oops"}),
            &[McpInvalidJson],
        ),
        case("access_mcp_resource", json!({"server_name": "absent", "uri": "demo://x"}), &[McpNoConnection]),
        case("load_mcp_documentation", json!({}), &[Ok]),
    ];
    let subagents = vec![
        case("use_subagents", json!({"prompt_1": "Where is the guide?"}), &[Ok]),
        case("use_subagents", json!({}), &[MissingParameter]),
    ];
    Script {
        groups: vec![reads, lists, searches, commands, edits, conversation, web, mcp, subagents],
        last: vec![case("attempt_completion", json!({"result": "The soak round is done."}), &[Ok])],
    }
}

fn denying(dir: &str, site: &str) -> Script {
    let reads = vec![
        // Read-only tools inside the workspace run without asking.
        case("read_file", json!({"path": "docs/guide.md"}), &[Ok]),
        case("list_files", json!({"path": "src"}), &[Ok]),
        case("search_files", json!({"path": "src", "regex": "fn \\w+"}), &[Ok]),
        // Outside the workspace asks, and the user says no.
        case("read_file", json!({"path": "../outside.txt"}), &[Denied]),
    ];
    let edits = vec![
        case("write_to_file", json!({"path": format!("{dir}/denied.md"), "content": "x"}), &[Denied]),
        // The shared files exist, so only the denial stops these; the soak checks at the end that they never
        // changed.
        case("replace_in_file", json!({"path": "docs/guide.md", "diff": DIFF_ONE}), &[Denied, NoMatch]),
        case(
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** Update File: docs/guide.md\n@@\n-# Guide\n+# Changed\n*** End Patch"}),
            &[Denied],
        ),
        case("new_rule", json!({"path": ".clinerules/denied.md", "content": "x"}), &[Denied]),
        case("write_to_file", json!({"path": "../escape.txt", "content": "x"}), &[OutsideWorkspace]),
    ];
    let commands = vec![
        case("execute_command", json!({"command": "echo denied", "requires_approval": false}), &[Denied]),
        case(
            "execute_command",
            json!({"command": "rm -rf src", "requires_approval": true}),
            &[CommandNotPermitted, Denied],
        ),
    ];
    let web = vec![
        case("web_fetch", json!({"url": format!("http://{site}/docs"), "prompt": "p"}), &[Denied]),
        case("web_search", json!({"query": "toolshed"}), &[Denied]),
        case(
            "use_mcp_tool",
            json!({"server_name": "absent", "tool_name": "echo", "arguments": "{}"}),
            &[Denied, McpNoConnection],
        ),
    ];
    let conversation = vec![
        case(
            "ask_followup_question",
            json!({"question": "Anyone there?", "options": "[\"yes\", \"no\"]"}),
            &[NoAnswer],
        ),
        case("new_task", json!({"context": "x"}), &[HostUnsupported]),
        case("use_subagents", json!({"prompt_1": "Where is the guide?"}), &[SubagentsDisabled]),
    ];
    Script {
        groups: vec![reads, edits, commands, web, conversation],
        last: vec![case("attempt_completion", json!({"result": "Done."}), &[Ok])],
    }
}
