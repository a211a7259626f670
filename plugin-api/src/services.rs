//! The host services every Toolshed host offers: one type per service, carrying its name and the JSON shapes of
//! its request and response. Plugins reach them through [`crate::HostClient::call`]:
//!
//! ```no_run
//! # use toolshed_plugin_api::{services::{PathResolve, ResolveRequest}, HostClient, ServiceError};
//! # fn f(host: &HostClient<'_>) -> Result<(), ServiceError> {
//! let resolved = host.call::<PathResolve>(&ResolveRequest { path: "src/main.rs".to_owned() })?;
//! println!("{}", resolved.absolute);
//! # Ok(())
//! # }
//! ```
//!
//! The wire format is the service's name and its request and response as JSON text: a type here only names
//! what both sides already exchange, so the compiler checks each call against it.

use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// A host service: its name on the wire and the types of its request and response.
///
/// Implemented by uninhabited marker types (`enum PathResolve {}`): a service is a name and two shapes, never a
/// value. Services that take nothing take [`Empty`].
pub trait Service {
    /// The service's name, as the host registers it.
    const NAME: &'static str;
    /// What the plugin sends.
    type Request: Serialize + DeserializeOwned;
    /// What the host answers.
    type Response: Serialize + DeserializeOwned;
}

/// Declares one service marker: `Marker = "name": Request => Response`, with its documentation.
macro_rules! service {
    ($(#[$doc:meta])* $marker:ident = $name:literal: $request:ty => $response:ty) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub enum $marker {}

        impl Service for $marker {
            const NAME: &'static str = $name;
            type Request = $request;
            type Response = $response;
        }
    };
}

service! {
    /// `path.resolve`: a model-given path (relative, absolute, or `@root:path`) to an absolute one.
    PathResolve = "path.resolve": ResolveRequest => ResolvedPath
}
/// The name of [`PathResolve`], for the host's dispatch.
pub const PATH_RESOLVE: &str = PathResolve::NAME;

service! {
    /// `path.check`: whether `.clineignore` lets the model access paths.
    PathCheck = "path.check": CheckRequest => CheckResponse
}
/// The name of [`PathCheck`], for the host's dispatch.
pub const PATH_CHECK: &str = PathCheck::NAME;

service! {
    /// `read_cache.record`: records a file read in the task's dedup cache and returns its read count.
    ReadCacheRecord = "read_cache.record": RecordReadRequest => RecordReadResponse
}
/// The name of [`ReadCacheRecord`], for the host's dispatch.
pub const READ_CACHE_RECORD: &str = ReadCacheRecord::NAME;

service! {
    /// `read_cache.forget`: drops paths from the task's read cache (after a write).
    ReadCacheForget = "read_cache.forget": ForgetRequest => Empty
}
/// The name of [`ReadCacheForget`], for the host's dispatch.
pub const READ_CACHE_FORGET: &str = ReadCacheForget::NAME;

service! {
    /// `say`: a message for the user's UI (progress, a streamed diff); never part of a tool result. Subagent
    /// runs drop them.
    Say = "say": SayRequest => Empty
}
/// The name of [`Say`], for the host's dispatch.
pub const SAY: &str = Say::NAME;

service! {
    /// `state.get`: reads a JSON value from the task's state (where a stateless handler keeps per-task state,
    /// such as a streamed edit's progress).
    StateGet = "state.get": StateGetRequest => StateGetResponse
}
/// The name of [`StateGet`], for the host's dispatch.
pub const STATE_GET: &str = StateGet::NAME;

service! {
    /// `state.set`: writes (or with `null`, deletes) a JSON value in the task's state.
    StateSet = "state.set": StateSetRequest => Empty
}
/// The name of [`StateSet`], for the host's dispatch.
pub const STATE_SET: &str = StateSet::NAME;

service! {
    /// `process.spawn`: starts `$SHELL -c COMMAND` in its own process group, stdin closed, stdout and stderr
    /// interleaved into one stream, with Cline's pager-free environment. Plugins never spawn or reap children
    /// themselves.
    ProcessSpawn = "process.spawn": SpawnRequest => SpawnResponse
}
/// The name of [`ProcessSpawn`], for the host's dispatch.
pub const PROCESS_SPAWN: &str = ProcessSpawn::NAME;

service! {
    /// `process.read`: the output that arrived since the last read, waiting up to `wait_ms` for some.
    ProcessRead = "process.read": ReadRequest => ReadResponse
}
/// The name of [`ProcessRead`], for the host's dispatch.
pub const PROCESS_READ: &str = ProcessRead::NAME;

service! {
    /// `process.kill`: SIGTERM to the process group, SIGKILL after the grace period. Works after cancellation.
    ProcessKill = "process.kill": KillRequest => Empty
}
/// The name of [`ProcessKill`], for the host's dispatch.
pub const PROCESS_KILL: &str = ProcessKill::NAME;

service! {
    /// `commands.settings`: the user's command settings (permissions JSON, timeouts, YOLO).
    CommandsSettingsService = "commands.settings": Empty => CommandsSettings
}
/// The name of [`CommandsSettingsService`], for the host's dispatch.
pub const COMMANDS_SETTINGS: &str = CommandsSettingsService::NAME;

/// Request of [`ProcessSpawn`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpawnRequest {
    /// The shell command.
    pub command: String,
    /// The absolute working directory; the primary workspace root when absent.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Extra environment variables.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
}

/// Response of [`ProcessSpawn`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpawnResponse {
    /// The handle for `process.read` and `process.kill`.
    pub id: u64,
    /// The shell's process id (also its process group id).
    pub pid: u32,
}

/// Request of [`ProcessRead`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadRequest {
    /// The process.
    pub id: u64,
    /// How long to wait for output when none is buffered.
    pub wait_ms: u64,
    /// The most bytes to return at once.
    #[serde(default = "default_read_max")]
    pub max_bytes: usize,
}

fn default_read_max() -> usize {
    256 * 1024
}

/// Response of [`ProcessRead`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadResponse {
    /// Output since the last read (invalid UTF-8 replaced; a character split across reads is kept whole).
    pub output: String,
    /// The process has exited and all its output was read.
    pub done: bool,
    /// Its exit code, once exited normally.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// The signal that ended it, by name (`SIGKILL`), once ended by one.
    #[serde(default)]
    pub signal: Option<String>,
}

/// Request of [`ProcessKill`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KillRequest {
    /// The process.
    pub id: u64,
}

/// Response of [`CommandsSettingsService`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandsSettings {
    /// The JSON of `CLINE_COMMAND_PERMISSIONS` (the environment variable wins over the config file).
    #[serde(default)]
    pub permissions: Option<String>,
    /// The default command timeout.
    pub default_timeout_ms: u64,
    /// The timeout of long-running commands (builds, installs, tests).
    pub long_timeout_ms: u64,
    /// YOLO mode: commands get timeouts.
    #[serde(default)]
    pub yolo: bool,
    /// How long "still running" waits before it is said.
    #[serde(default)]
    pub notice_ms: u64,
}

/// Request of [`Say`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SayRequest {
    /// What kind of message (`tool`, `diff`, `command_output`, `text`, …).
    pub kind: String,
    /// The message.
    pub text: String,
    /// Whether a later message of the same kind will replace this one (streaming).
    #[serde(default)]
    pub partial: bool,
}

/// Request of [`StateGet`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateGetRequest {
    /// The key; plugins prefix keys with their tool name.
    pub key: String,
}

/// Response of [`StateGet`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateGetResponse {
    /// The value, if set.
    #[serde(default)]
    pub value: Option<serde_json::Value>,
}

/// Request of [`StateSet`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateSetRequest {
    /// The key.
    pub key: String,
    /// The value; `None` deletes the key.
    #[serde(default)]
    pub value: Option<serde_json::Value>,
}

/// The empty request or response of services that take or answer nothing. It reads from any JSON value
/// (`{}`, `null`, anything else), as hosts always accepted: plugins built before a service took a typed
/// request keep working.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Empty {}

impl<'de> Deserialize<'de> for Empty {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer).map(|_| Empty {})
    }
}

/// Request of [`PathResolve`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolveRequest {
    /// The path as the model wrote it.
    pub path: String,
}

/// Response of [`PathResolve`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedPath {
    /// The absolute, lexically normalised path.
    pub absolute: String,
    /// The path to show the model and the user (relative to its root, `@root:rel` in multi-root).
    pub display: String,
    /// The workspace root it resolved against.
    pub root: String,
    /// Whether the absolute path lies inside a workspace root.
    pub inside_workspace: bool,
}

service! {
    /// `path.check_command`: Cline's `validateCommand` — the first argument of a file-reading command that
    /// `.clineignore` blocks.
    PathCheckCommand = "path.check_command": CheckCommandRequest => CheckCommandResponse
}
/// The name of [`PathCheckCommand`], for the host's dispatch.
pub const PATH_CHECK_COMMAND: &str = PathCheckCommand::NAME;

/// Request of [`PathCheckCommand`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckCommandRequest {
    /// The shell command, as it will run (an `@root:` prefix already taken off).
    pub command: String,
    /// The absolute directory it runs in, where its relative arguments are; the primary root when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// Response of [`PathCheckCommand`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckCommandResponse {
    /// The blocked argument, if any.
    #[serde(default)]
    pub blocked: Option<String>,
}

/// Request of [`PathCheck`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckRequest {
    /// Paths as the model wrote them or absolute.
    pub paths: Vec<String>,
    /// The paths are to be written, moved or deleted: the rules files themselves (`.clineignore` and the
    /// files it includes) are refused too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub write: bool,
}

/// Response of [`PathCheck`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResponse {
    /// One flag per requested path: `false` when `.clineignore` blocks it.
    pub allowed: Vec<bool>,
}

/// Request of [`ReadCacheRecord`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordReadRequest {
    /// The absolute path read.
    pub path: String,
    /// Its modification time, in nanoseconds since the epoch.
    pub mtime_ns: u128,
}

/// Response of [`ReadCacheRecord`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordReadResponse {
    /// How many times this task has read the unchanged file, this read included.
    pub read_count: u32,
}

/// Request of [`ReadCacheForget`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForgetRequest {
    /// Absolute paths to forget; empty forgets everything.
    pub paths: Vec<String>,
}

service! {
    /// `web.settings`: what the web tools need to know from the user's `[web]` configuration: the gates, the
    /// backend, the API base URL, the request timeout, and whether a token is set (never the token itself: the
    /// host adds it to requests for the API, so it reaches nothing else).
    WebSettingsService = "web.settings": Empty => WebSettings
}
/// The name of [`WebSettingsService`], for the host's dispatch.
pub const WEB_SETTINGS: &str = WebSettingsService::NAME;

service! {
    /// `http.request`: one HTTP request on the host's shared client. A request with `cline_api` set must target
    /// the configured API base URL and gets the bearer token; every other request is a direct fetch under the
    /// host's address policy (private, loopback and link-local addresses refused unless allowed, checked after
    /// DNS resolution and again on every redirect). Plugins never open their own clients.
    HttpRequestService = "http.request": HttpRequest => HttpReply
}
/// The name of [`HttpRequestService`], for the host's dispatch.
pub const HTTP_REQUEST: &str = HttpRequestService::NAME;

/// Response of [`WebSettingsService`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSettings {
    /// The provider; `"cline"` enables the Cline API contract.
    #[serde(default)]
    pub provider: Option<String>,
    /// The user's setting that turns the web tools on.
    #[serde(default)]
    pub enabled: bool,
    /// The feature flag that must also be on for the Cline API tools.
    #[serde(default)]
    pub feature_flag: bool,
    /// `"cline"` (through the Cline API) or `"direct"` (web_fetch fetches the URL itself).
    #[serde(default)]
    pub backend: String,
    /// The base URL of the Cline API, without a trailing slash.
    #[serde(default)]
    pub api_base_url: String,
    /// The timeout of one web tool request, in milliseconds.
    #[serde(default)]
    pub fetch_timeout_ms: u64,
    /// Whether the host holds a bearer token for the API (`TOOLSHED_WEB_TOKEN`).
    #[serde(default)]
    pub has_token: bool,
}

/// Cline's answer when a web tool's gates are closed (a tool error, not a mistake of the model).
pub const WEB_TOOLS_DISABLED: &str = "Cline web tools are currently disabled.";

impl WebSettings {
    /// Whether the web tools talk to a direct fetch rather than the Cline API.
    pub fn direct(&self) -> bool {
        self.backend == "direct"
    }

    /// Cline's three gates for the API tools: the provider is `cline`, the user's setting is on, and the
    /// feature flag is on.
    pub fn cline_api_open(&self) -> bool {
        self.provider.as_deref() == Some("cline") && self.enabled && self.feature_flag
    }

    /// The gates of a tool that can fetch directly (web_fetch): with the direct backend, the user's setting
    /// alone (the provider and the flag belong to the Cline account); otherwise the three of the API.
    pub fn fetch_open(&self) -> bool {
        if self.direct() {
            self.enabled
        } else {
            self.cline_api_open()
        }
    }
}

/// Request of [`HttpRequestService`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpRequest {
    /// The method (`GET`, `POST`, …).
    #[serde(default = "default_method")]
    pub method: String,
    /// The absolute `http://` or `https://` URL.
    pub url: String,
    /// Request headers in order, as name/value pairs.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The request body.
    #[serde(default)]
    pub body: Option<String>,
    /// The whole request's timeout, body included; the host's `[web] fetch_timeout_ms` when absent.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// A request to the configured Cline API: the URL must lie under `api_base_url`, and the host adds
    /// `Authorization: Bearer {token}`.
    #[serde(default)]
    pub cline_api: bool,
}

fn default_method() -> String {
    "GET".to_owned()
}

/// A response of [`HttpRequestService`], whatever its status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Response headers in order, names lower-cased.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The body as text (invalid UTF-8 replaced).
    #[serde(default)]
    pub body: String,
    /// The URL that answered, after redirects.
    #[serde(default)]
    pub final_url: String,
}

impl HttpResponse {
    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Why an HTTP request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HttpErrorKind {
    /// The request did not finish within its timeout.
    Timeout,
    /// The host (or an address it resolves to, or a redirect target) is refused by the address policy.
    RefusedAddress,
    /// The response body is larger than `[web] max_response_bytes`.
    TooLarge,
    /// More redirects than `[web] max_redirects`.
    TooManyRedirects,
    /// The URL is not an absolute http(s) URL, or (with `cline_api`) not under the API base URL.
    InvalidUrl,
    /// `cline_api` was asked and the host has no token.
    NoToken,
    /// The connection could not be made (refused, DNS failure, TLS).
    Connect,
    /// Anything else.
    Failed,
}

/// The failure half of [`HttpReply`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpFailure {
    /// The kind of failure.
    pub kind: HttpErrorKind,
    /// What happened, for a human or the model.
    pub message: String,
}

/// The answer of [`HttpRequestService`]: a response (any status) or a typed failure. Cancellation and malformed
/// requests are service errors instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum HttpReply {
    /// The server answered.
    Response(HttpResponse),
    /// No answer.
    Failed(HttpFailure),
}

service! {
    /// `mcp.call_tool`: one `tools/call` on a connected MCP server, with that server's timeout (its settings'
    /// `timeout`, else the host's default of 60 s). Unknown or disabled servers and transport failures are
    /// service errors whose message is the text after Cline's `Error executing MCP tool: `.
    McpCallTool = "mcp.call_tool": McpCallToolRequest => McpCallToolResponse
}
/// The name of [`McpCallTool`], for the host's dispatch.
pub const MCP_CALL_TOOL: &str = McpCallTool::NAME;

service! {
    /// `mcp.read_resource`: one `resources/read` on a connected MCP server.
    McpReadResource = "mcp.read_resource": McpReadResourceRequest => McpReadResourceResponse
}
/// The name of [`McpReadResource`], for the host's dispatch.
pub const MCP_READ_RESOURCE: &str = McpReadResource::NAME;

service! {
    /// `mcp.servers`: the configured MCP servers, their state, tools and resources.
    McpServers = "mcp.servers": Empty => McpServersResponse
}
/// The name of [`McpServers`], for the host's dispatch.
pub const MCP_SERVERS: &str = McpServers::NAME;

/// Request of [`McpCallTool`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpCallToolRequest {
    /// The server's name in the settings file.
    pub server: String,
    /// The tool's name on that server.
    pub tool: String,
    /// The arguments object; `{}` when absent.
    #[serde(default)]
    pub arguments: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Response of [`McpCallTool`]: the server's `CallToolResult` as it sent it (`content`, `isError`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpCallToolResponse {
    /// The result JSON.
    pub result: serde_json::Value,
}

/// Request of [`McpReadResource`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpReadResourceRequest {
    /// The server's name.
    pub server: String,
    /// The resource URI.
    pub uri: String,
}

/// Response of [`McpReadResource`]: the server's `ReadResourceResult` as it sent it (`contents`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpReadResourceResponse {
    /// The result JSON.
    pub result: serde_json::Value,
}

/// Response of [`McpServers`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServersResponse {
    /// The settings file the servers come from, if one is configured.
    #[serde(default)]
    pub settings_path: Option<String>,
    /// Why the settings file could not be used, if so (the servers started before keep running).
    #[serde(default)]
    pub settings_error: Option<String>,
    /// The servers, by name.
    #[serde(default)]
    pub servers: Vec<McpServerStatus>,
}

/// One MCP server as [`McpServers`] reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerStatus {
    /// Its name.
    pub name: String,
    /// `connected`, `connecting`, `disconnected` or `disabled`.
    pub status: String,
    /// Why it is disconnected.
    #[serde(default)]
    pub error: Option<String>,
    /// Its tools: name, description and input schema.
    #[serde(default)]
    pub tools: Vec<serde_json::Value>,
    /// Its resources: uri, name, mimeType, description.
    #[serde(default)]
    pub resources: Vec<serde_json::Value>,
    /// The tools its settings auto-approve.
    #[serde(default)]
    pub auto_approve: Vec<String>,
}

// The conversation and the task itself (issue 14): questions to the user, the task's mode and settings, the
// actions that belong to the host (a new task, condensing), another tool in the same task, and skills.

service! {
    /// `ask`: a question to the user (Cline's `ask`); the answer is the user's text and images, or "not answered"
    /// when no user is there (no interaction registered, or the ask timed out).
    Ask = "ask": AskRequest => AskResponse
}
/// The name of [`Ask`], for the host's dispatch.
pub const ASK: &str = Ask::NAME;

service! {
    /// `task.settings`: the task's current mode and the settings the conversational tools follow.
    TaskSettingsService = "task.settings": Empty => TaskSettings
}
/// The name of [`TaskSettingsService`], for the host's dispatch.
pub const TASK_SETTINGS: &str = TaskSettingsService::NAME;

service! {
    /// `task.set_mode`: switches the task between `plan` and `act` (plan_mode_respond's switch in YOLO mode).
    TaskSetMode = "task.set_mode": SetModeRequest => Empty
}
/// The name of [`TaskSetMode`], for the host's dispatch.
pub const TASK_SET_MODE: &str = TaskSetMode::NAME;

service! {
    /// `task.complete`: the user accepted attempt_completion's result: the task is complete.
    TaskComplete = "task.complete": TaskTextRequest => Empty
}
/// The name of [`TaskComplete`], for the host's dispatch.
pub const TASK_COMPLETE: &str = TaskComplete::NAME;

service! {
    /// `task.new`: the host offers the user a new task with this context (new_task).
    TaskNew = "task.new": TaskTextRequest => AskResponse
}
/// The name of [`TaskNew`], for the host's dispatch.
pub const TASK_NEW: &str = TaskNew::NAME;

service! {
    /// `task.condense`: the host offers the user to condense the conversation to this summary (condense).
    TaskCondense = "task.condense": TaskTextRequest => AskResponse
}
/// The name of [`TaskCondense`], for the host's dispatch.
pub const TASK_CONDENSE: &str = TaskCondense::NAME;

service! {
    /// `task.summarize`: the host truncates the conversation behind this summary (summarize_task).
    TaskSummarize = "task.summarize": TaskTextRequest => AskResponse
}
/// The name of [`TaskSummarize`], for the host's dispatch.
pub const TASK_SUMMARIZE: &str = TaskSummarize::NAME;

service! {
    /// `task.report_bug`: the host shows the user a bug report to file (report_bug).
    TaskReportBug = "task.report_bug": BugReport => AskResponse
}
/// The name of [`TaskReportBug`], for the host's dispatch.
pub const TASK_REPORT_BUG: &str = TaskReportBug::NAME;

service! {
    /// `task.explain`: the host explains the changes between two git refs (generate_explanation).
    TaskExplain = "task.explain": ExplainRequest => AskResponse
}
/// The name of [`TaskExplain`], for the host's dispatch.
pub const TASK_EXPLAIN: &str = TaskExplain::NAME;

service! {
    /// `tool.call`: runs another tool in the same task through the whole pipeline (checks, approval, execution).
    ToolCallService = "tool.call": ToolCallRequest => ToolCallResponse
}
/// The name of [`ToolCallService`], for the host's dispatch.
pub const TOOL_CALL: &str = ToolCallService::NAME;

service! {
    /// `skills.list`: the skills this task may use (the user's skill directories, the workspace's when trusted).
    SkillsList = "skills.list": Empty => SkillList
}
/// The name of [`SkillsList`], for the host's dispatch.
pub const SKILLS_LIST: &str = SkillsList::NAME;

service! {
    /// `skills.load`: one skill's instructions (the body of its `SKILL.md`).
    SkillsLoad = "skills.load": SkillLoadRequest => SkillContent
}
/// The name of [`SkillsLoad`], for the host's dispatch.
pub const SKILLS_LOAD: &str = SkillsLoad::NAME;

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
    /// `act` or `plan`, as it is now (the call's task info holds the mode the task started in).
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
    /// The issue's title.
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

// Subagents (issue 15): the coordinator spawns child tasks for use_subagents.

service! {
    /// `subagents.spawn`: runs up to five subagents in parallel, each a child task of the calling task (restricted
    /// tools, no UI, its own state, cancelled with the parent), and answers when every one has finished. Offered
    /// only when the host registered an agent driver and `[subagents] enabled` is on.
    SubagentsSpawn = "subagents.spawn": SubagentsSpawnRequest => SubagentsSpawnResponse
}
/// The name of [`SubagentsSpawn`], for the host's dispatch.
pub const SUBAGENTS_SPAWN: &str = SubagentsSpawn::NAME;

/// Request of [`SubagentsSpawn`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentsSpawnRequest {
    /// One prompt per subagent, trimmed and non-empty.
    pub prompts: Vec<String>,
    /// The configured agent to run (its model, tools and profile); the default subagent when absent.
    #[serde(default)]
    pub agent: Option<String>,
}

/// How one subagent run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentOutcome {
    /// Its prompt.
    pub prompt: String,
    /// `completed` or `failed`.
    pub status: String,
    /// attempt_completion's `result`, when completed.
    #[serde(default)]
    pub result: Option<String>,
    /// Why it failed, when failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Tool calls it made (attempt_completion included).
    #[serde(default)]
    pub tool_calls: u64,
    /// The largest context (prompt plus completion tokens) one of its requests used.
    #[serde(default)]
    pub context_tokens: u64,
    /// The model's context window, when the driver knows it (else 0).
    #[serde(default)]
    pub context_window: u64,
}

/// Response of [`SubagentsSpawn`]: one outcome per prompt, in the request's order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentsSpawnResponse {
    /// The outcomes.
    pub outcomes: Vec<SubagentOutcome>,
}

// Child-process jobs (issue 22): a plugin's parser of hostile content runs in a child process.

service! {
    /// `isolate.run`: runs the calling plugin's [`crate::sdk::Tool::job`] named `job` in a child process (the host
    /// binary in a hidden mode, the same library loaded again) under the host's `[isolation]` limits: address
    /// space, CPU time, stack and wall-clock time. A stack overflow, an allocation failure, an abort or a loop
    /// there ends the child, not the host, and comes back as a [`crate::ServiceError`] of kind `Failed` whose
    /// message says which limit was hit. Host services the job calls are forwarded to the host and run there
    /// under the calling call's checks. Not offered inside a job (no nesting).
    IsolateRun = "isolate.run": IsolateRequest => IsolateResponse
}
/// The name of [`IsolateRun`], for the host's dispatch.
pub const ISOLATE_RUN: &str = IsolateRun::NAME;

/// Request of [`IsolateRun`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IsolateRequest {
    /// The job's name, as the plugin's `job` knows it.
    pub job: String,
    /// The job's input.
    #[serde(default)]
    pub input: serde_json::Value,
}

/// Response of [`IsolateRun`]: the job's own answer, `Ok` or its `Err` text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IsolateResponse {
    /// What the job returned.
    Ok(serde_json::Value),
    /// The job's own error text (not a failure of the child: that is a service error).
    Error(String),
}

// The commit gate (issue 22): a call that was reported as failed never writes afterwards.

service! {
    /// `call.commit`: an edit tool asks it right before its first write. The host moves the call from running to
    /// committing and answers `committed: true`, unless the call already timed out or was cancelled: then it
    /// answers `committed: false` (or the `Cancelled` error every service gives then) and the tool must not
    /// write. A call that committed is waited for when its timeout passes, so its result reports what it wrote.
    /// A tool whose every write goes through the gate declares [`crate::capability::COMMITS_WRITES`].
    CallCommit = "call.commit": Empty => CommitResponse
}
/// The name of [`CallCommit`], for the host's dispatch.
pub const CALL_COMMIT: &str = CallCommit::NAME;

/// Response of [`CallCommit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitResponse {
    /// Whether the call may write now.
    pub committed: bool,
}
