//! The plugin author's safe surface: the typed [`Tool`] trait, result builders, the typed host client, and the
//! panic containment that [`crate::export_plugin!`] wraps around every boundary call.

use crate::abi::{HostRef, ToolHandler, ToolHandlerBox, ToolHandler_TO};
use crate::protocol::{
    ApprovalRequest, Block, Outcome, PartialBlock, Prepared, Risk, ServiceError, ServiceErrorKind, ToolCall,
    ToolDeclaration, ToolError,
};
use crate::services::{self, Service};
use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{ROption, RResult, RStr, RString},
};
use serde::{de::DeserializeOwned, Deserialize, Deserializer, Serialize};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// What a factory receives when the runtime asks for a handler.
#[derive(Debug, Clone)]
pub struct ToolInit<'a> {
    /// The primary name being registered.
    pub name: &'a str,
    /// The plugin's configuration JSON from the user's config (`{}` when none).
    pub config: &'a str,
}

/// A tool, written in ordinary safe Rust. Handlers are stateless and shared by every task and every alias:
/// per-task state lives on the host side, behind services.
pub trait Tool: Send + Sync + Sized + 'static {
    /// The tool's input, deserialised from the model's JSON. Use serde defaults for optional parameters.
    type Args: DeserializeOwned;

    /// The tool's names, capabilities and specs.
    fn declaration() -> ToolDeclaration;

    /// Builds the handler; `Ok(None)` declines the tool (it is then not registered).
    fn new(init: &ToolInit<'_>) -> Result<Option<Self>, String>;

    /// Validation and the approval request. The default asks for nothing.
    fn prepare(&self, _call: &ToolCall<Self::Args>, _host: &HostClient<'_>) -> Prepared {
        Prepared::Proceed
    }

    /// Does the work.
    fn execute(&self, call: &ToolCall<Self::Args>, host: &HostClient<'_>) -> Outcome;

    /// Sees a streamed, incomplete tool use (UI only). The default ignores it.
    fn partial(&self, _block: &PartialBlock, _host: &HostClient<'_>) {}

    /// A piece of work `execute` hands to [`HostClient::isolated`] to run in a child process: parsing hostile
    /// content whose recursion or loops cannot be bounded from outside. It runs in a fresh process on the
    /// same handler construction (`new` with the same config), so it must not rely on in-memory state; host
    /// services it calls are forwarded to the host. The default knows no job.
    fn job(&self, name: &str, _input: serde_json::Value, _host: &HostClient<'_>) -> Result<serde_json::Value, String> {
        Err(format!("this tool has no job named `{name}`"))
    }
}

/// Why [`HostClient::isolated`] produced no answer of the job's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IsolatedError {
    /// The job ran and returned this error text.
    Job(String),
    /// The child failed: a crash, a limit, a timeout, a cancellation. One line for the model.
    Failed(String),
}

impl std::fmt::Display for IsolatedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Job(message) | Self::Failed(message) => f.write_str(message),
        }
    }
}

/// Result builders, so handlers read as what they return.
pub mod result {
    use super::*;

    /// A text result.
    pub fn text(text: impl Into<String>) -> Outcome {
        Outcome::Success { blocks: vec![Block::Text { text: text.into() }] }
    }

    /// A result of several blocks.
    pub fn blocks(blocks: Vec<Block>) -> Outcome {
        Outcome::Success { blocks }
    }

    /// An image block.
    pub fn image(media_type: impl Into<String>, data: impl Into<String>) -> Block {
        Block::Image { media_type: media_type.into(), data: data.into() }
    }

    /// A tool error that counts as a mistake of the model.
    pub fn mistake(message: impl Into<String>) -> Outcome {
        Outcome::Error(ToolError { message: message.into(), mistake: true })
    }

    /// A tool error that is not the model's fault (I/O, the environment).
    pub fn error(message: impl Into<String>) -> Outcome {
        Outcome::Error(ToolError { message: message.into(), mistake: false })
    }

    /// The user refused.
    pub fn denied() -> Outcome {
        Outcome::Denied
    }

    /// `prepare`'s refusal, counted as a mistake.
    pub fn refuse(message: impl Into<String>) -> Prepared {
        Prepared::Error(ToolError { message: message.into(), mistake: true })
    }

    /// `prepare`'s approval request.
    pub fn approval(kind: &str, message: impl Into<String>, paths: Vec<String>, risk: Risk) -> Prepared {
        Prepared::Approval(ApprovalRequest {
            kind: kind.to_owned(),
            message: message.into(),
            paths,
            risk,
            denied_message: None,
        })
    }

    /// Cline's `clineIgnoreError`: the message for a path `.clineignore` blocks (wrap it in `refuse` or
    /// `mistake`). One text for every tool, so the model always reads the same words.
    pub fn clineignore_error(path: &str) -> String {
        format!(
            "Access to {path} is blocked by the .clineignore file settings. You must try to continue in the task without using this file, or ask the user to update the .clineignore file."
        )
    }

    /// Cline's `toolUseInstructionsReminder`, which follows its missing-parameter text.
    pub const TOOL_USE_REMINDER: &str = "# Reminder: Instructions for Tool Use
Tool uses are formatted using XML-style tags. The tool name is enclosed in opening and closing tags, and each parameter is similarly enclosed within its own set of tags. Here's the structure:
<tool_name>
<parameter1_name>value1</parameter1_name>
<parameter2_name>value2</parameter2_name>
...
</tool_name>
For example:
<attempt_completion>
<result>
I have completed the task...
</result>
</attempt_completion>
Always adhere to this format for all tool uses to ensure proper parsing and execution.";

    /// Cline's `missingToolParameterError(p)` text, reminder included. The runtime's own check of required
    /// parameters uses it too, so a tool that checks for itself says exactly the same.
    pub fn missing_parameter_text(name: &str) -> String {
        format!(
            "Missing value for required parameter '{name}'. Please retry with complete response.\n\n{TOOL_USE_REMINDER}"
        )
    }

    /// Cline's `truncateContent`: text longer than 400 KB (409,600 JavaScript string units) is cut there and
    /// gets the `[FILE TRUNCATED: …]` notice (read_file and the MCP tools share it).
    pub fn truncate_content(text: String) -> String {
        const MAX: usize = 400 * 1024;
        let units: usize = text.chars().map(char::len_utf16).sum();
        if units <= MAX {
            return text;
        }
        let (mut kept, mut cut) = (0usize, text.len());
        for (index, c) in text.char_indices() {
            if kept + c.len_utf16() > MAX {
                cut = index;
                break;
            }
            kept += c.len_utf16();
        }
        let mut out = text[..cut].to_owned();
        out.push_str(&format!(
            "\n\n---\n\n[FILE TRUNCATED: This content is {} but only the first {} is shown ({} truncated). Use search_files to find specific patterns, or execute_command with grep/head/tail for targeted reading.]",
            format_bytes(units as u64),
            format_bytes(MAX as u64),
            format_bytes((units - MAX) as u64)
        ));
        out
    }

    /// Cline's `formatBytes`: `{n} B`, `{x.x} KB` or `{x.x} MB`, base 1024, tenths rounded half up as
    /// JavaScript's `toFixed(1)` does.
    pub fn format_bytes(bytes: u64) -> String {
        const KB: u128 = 1024;
        const MB: u128 = 1024 * 1024;
        let n = u128::from(bytes);
        let (unit, base) = match n {
            n if n < KB => return format!("{n} B"),
            n if n < MB => ("KB", KB),
            _ => ("MB", MB),
        };
        let tenths = (n * 10 + base / 2) / base;
        format!("{}.{} {unit}", tenths / 10, tenths % 10)
    }

    /// A tool error (a mistake) saying a required parameter is missing, in Cline's words.
    pub fn missing_parameter(name: &str) -> Outcome {
        mistake(missing_parameter_text(name))
    }
}

/// Typed access to the host's services during one call.
pub struct HostClient<'a> {
    host: HostRef<'a>,
}

impl<'a> HostClient<'a> {
    /// Wraps the borrowed host object.
    pub fn new(host: HostRef<'a>) -> Self {
        Self { host }
    }

    /// Calls the host service `S`: `host.call::<PathResolve>(&ResolveRequest { path })?`.
    pub fn call<S: Service>(&self, request: &S::Request) -> Result<S::Response, ServiceError> {
        self.call_named(S::NAME, request)
    }

    /// The untyped call under [`HostClient::call`]: a name, and any request and response shapes.
    fn call_named<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        name: &str,
        request: &Req,
    ) -> Result<Resp, ServiceError> {
        let request = serde_json::to_string(request)
            .map_err(|e| ServiceError::new(ServiceErrorKind::InvalidRequest, e.to_string()))?;
        match self.host.service(RStr::from_str(name), RStr::from_str(&request)) {
            RResult::ROk(text) => serde_json::from_str(text.as_str()).map_err(|e| {
                ServiceError::new(ServiceErrorKind::Failed, format!("unreadable answer from service {name}: {e}"))
            }),
            RResult::RErr(text) => Err(serde_json::from_str(text.as_str())
                .unwrap_or_else(|_| ServiceError::new(ServiceErrorKind::Failed, text.into_string()))),
        }
    }

    /// Whether the host offers the service `S`, so a plugin can degrade cleanly without it.
    pub fn offers<S: Service>(&self) -> bool {
        self.host.services().iter().any(|s| s.as_str() == S::NAME)
    }

    /// Whether the call was cancelled or timed out.
    pub fn is_cancelled(&self) -> bool {
        self.host.is_cancelled()
    }

    /// Logs through the host.
    pub fn log(&self, level: u8, message: &str) {
        self.host.log(level, RStr::from_str(message));
    }

    /// `say`: a UI message. Hosts without the service (or subagent runs) drop it.
    pub fn say(&self, kind: &str, text: &str, partial: bool) {
        let request = crate::services::SayRequest { kind: kind.to_owned(), text: text.to_owned(), partial };
        let _ = self.call::<services::Say>(&request);
    }

    /// `state.get`: a value from the task's state.
    pub fn state_get(&self, key: &str) -> Result<Option<serde_json::Value>, ServiceError> {
        let request = crate::services::StateGetRequest { key: key.to_owned() };
        Ok(self.call::<services::StateGet>(&request)?.value)
    }

    /// `state.set`: stores (or with `None`, deletes) a value in the task's state.
    pub fn state_set(&self, key: &str, value: Option<serde_json::Value>) -> Result<(), ServiceError> {
        let request = crate::services::StateSetRequest { key: key.to_owned(), value };
        self.call::<services::StateSet>(&request).map(|_| ())
    }

    /// `call.commit`, right before a tool's first write: `Ok` when it may write, `Err` with a sentence for the
    /// model when the call already timed out or was cancelled, so it must return without writing. A host
    /// without the service (an older one) lets the tool write, as before the gate existed; any other failure
    /// of the service keeps the files as they are, since a call whose host cannot answer is not known to be
    /// still wanted.
    pub fn commit(&self) -> Result<(), String> {
        let refused = "the call timed out or was cancelled before it wrote anything, so no file was changed";
        match self.call::<services::CallCommit>(&services::Empty {}) {
            Ok(answer) if answer.committed => Ok(()),
            Ok(_) => Err(refused.to_owned()),
            Err(e) if e.kind == ServiceErrorKind::UnknownService => Ok(()),
            Err(e) if e.kind == ServiceErrorKind::Cancelled => Err(refused.to_owned()),
            Err(e) => Err(format!("{refused} (the host could not confirm the write: {})", e.message)),
        }
    }

    /// `read_cache.forget`: drops paths from the task's read cache after a write (all when empty).
    pub fn forget_reads(&self, paths: Vec<String>) -> Result<(), ServiceError> {
        let request = crate::services::ForgetRequest { paths };
        self.call::<services::ReadCacheForget>(&request).map(|_| ())
    }

    /// `path.resolve`.
    pub fn resolve_path(&self, path: &str) -> Result<crate::services::ResolvedPath, ServiceError> {
        self.call::<services::PathResolve>(&services::ResolveRequest { path: path.to_owned() })
    }

    /// Opens a file for reading and confirms that what was opened is what the path checks saw.
    ///
    /// A link swapped between a tool's checks and its `open` would otherwise lead a read that needed no
    /// approval (inside the workspace) to a file outside it, or past `.clineignore`. The real path of the open
    /// descriptor is checked again, so whatever the file system did in between, the bytes read are the ones
    /// the checks allowed. Never blocks on a FIFO (opened non-blocking; the caller checks the file type).
    ///
    /// `approved` is the call's [`ToolCall::approved`](crate::ToolCall): without it, a file that turns out to
    /// lie outside the workspace is refused.
    pub fn open_confirmed(&self, absolute: &str, approved: bool) -> Result<std::fs::File, OpenError> {
        let file = open_nonblocking(Path::new(absolute)).map_err(OpenError::Io)?;
        if let Some(real) = opened_path(&file) {
            let real = real.to_string_lossy();
            // Without links on the way, the checks saw this very path.
            if real != absolute {
                let allowed = self.path_allowed(&real).map_err(|e| OpenError::Refused(e.message))?;
                if !allowed {
                    return Err(OpenError::Refused(result::clineignore_error(&real)));
                }
                if !approved && !self.resolve_path(&real).map_err(|e| OpenError::Refused(e.message))?.inside_workspace {
                    return Err(OpenError::Refused(format!(
                        "{absolute} leads to {real}, outside the workspace, which this call was not approved to \
                         read (a link, or one changed after it was checked). Read that file with read_file to be \
                         asked for approval."
                    )));
                }
            }
        }
        Ok(file)
    }

    /// Reads a whole file through [`HostClient::open_confirmed`]: a regular file only (a FIFO or a device could
    /// block or never end), and at most `cap` bytes. The one way a tool that needs a file's bytes at once (an
    /// outline, an image, a document, an edit) reads it, so a link swapped after the checks, a file that lies
    /// outside the workspace, and a huge or endless file all end the same way, with a reason.
    pub fn read_confirmed(&self, absolute: &str, approved: bool, cap: u64) -> Result<Vec<u8>, ReadError> {
        let file = self.open_confirmed(absolute, approved).map_err(|e| match e {
            OpenError::Io(e) => ReadError::Io(e),
            OpenError::Refused(message) => ReadError::Refused(message),
        })?;
        read_capped(file, cap)
    }

    /// `path.check` for one path: `false` when `.clineignore` blocks it. A host without the service blocks nothing.
    pub fn path_allowed(&self, path: &str) -> Result<bool, ServiceError> {
        Ok(self.paths_allowed(vec![path.to_owned()])?.first().copied().unwrap_or(true))
    }

    /// `path.check` for many paths at once.
    pub fn paths_allowed(&self, paths: Vec<String>) -> Result<Vec<bool>, ServiceError> {
        self.check_paths(paths, false)
    }

    /// `path.check` for a path a tool means to write, move or delete: `false` when `.clineignore` blocks
    /// it or it is one of the rules files (`.clineignore` and the files it includes).
    pub fn path_writable(&self, path: &str) -> Result<bool, ServiceError> {
        Ok(self.check_paths(vec![path.to_owned()], true)?.first().copied().unwrap_or(true))
    }

    fn check_paths(&self, paths: Vec<String>, write: bool) -> Result<Vec<bool>, ServiceError> {
        let n = paths.len();
        match self.call::<services::PathCheck>(&services::CheckRequest { paths, write }) {
            Ok(resp) => Ok(resp.allowed),
            Err(e) if e.kind == ServiceErrorKind::UnknownService => Ok(vec![true; n]),
            Err(e) => Err(e),
        }
    }

    /// `path.check_command` (Cline's `validateCommand`): the argument of a file-reading command that
    /// `.clineignore` blocks, if any. A host without the service blocks nothing.
    pub fn command_blocked_by_clineignore(&self, command: &str) -> Result<Option<String>, ServiceError> {
        self.command_blocked_by_clineignore_in(command, None)
    }

    /// [`HostClient::command_blocked_by_clineignore`] for a command that runs in `cwd` (absolute): give the
    /// command and the directory that will really run, so the check sees what runs.
    pub fn command_blocked_by_clineignore_in(
        &self,
        command: &str,
        cwd: Option<&str>,
    ) -> Result<Option<String>, ServiceError> {
        let request = crate::services::CheckCommandRequest { command: command.to_owned(), cwd: cwd.map(str::to_owned) };
        match self.call::<services::PathCheckCommand>(&request) {
            Ok(resp) => Ok(resp.blocked),
            Err(e) if e.kind == ServiceErrorKind::UnknownService => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `mcp.call_tool`: one tool call on a connected MCP server; the server's raw `CallToolResult` JSON.
    pub fn mcp_call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<serde_json::Value, ServiceError> {
        let request =
            crate::services::McpCallToolRequest { server: server.to_owned(), tool: tool.to_owned(), arguments };
        Ok(self.call::<services::McpCallTool>(&request)?.result)
    }

    /// `mcp.read_resource`: one resource read on a connected MCP server; the raw `ReadResourceResult` JSON.
    pub fn mcp_read_resource(&self, server: &str, uri: &str) -> Result<serde_json::Value, ServiceError> {
        let request = crate::services::McpReadResourceRequest { server: server.to_owned(), uri: uri.to_owned() };
        Ok(self.call::<services::McpReadResource>(&request)?.result)
    }

    /// `mcp.servers`: the configured MCP servers with their state, tools and resources.
    pub fn mcp_servers(&self) -> Result<crate::services::McpServersResponse, ServiceError> {
        self.call::<services::McpServers>(&services::Empty {})
    }

    /// `web.settings`: the user's `[web]` settings (gates, backend, API base URL, timeout, whether a token is
    /// set).
    pub fn web_settings(&self) -> Result<crate::services::WebSettings, ServiceError> {
        self.call::<services::WebSettingsService>(&services::Empty {})
    }

    /// `http.request`: one request on the host's HTTP client. A response of any status and the typed
    /// failures (timeout, refused address, too large, …) are `Ok`; cancellation and a host without the
    /// service are `Err`.
    pub fn http_request(
        &self,
        request: &crate::services::HttpRequest,
    ) -> Result<crate::services::HttpReply, ServiceError> {
        self.call::<services::HttpRequestService>(request)
    }
}

// No thread-local here may need dropping: a thread-local destructor registered on a host thread keeps the
// library mapped until that thread ends, so the host could not unload a replaced version (see the runtime's
// loader). State lives in globals and in the handler instead.

thread_local! {
    // Only its address is used: it tells the threads apart without `std::thread::current()`, which would
    // register a destructor.
    static THREAD_KEY: u8 = const { 0 };
}

/// Panic messages the hook recorded, by thread, until `guard` on that thread takes them. A few at most:
/// panics are rare and each is taken at once; ones on threads no guard runs on age out.
static PANICS: std::sync::Mutex<Vec<(usize, String)>> = std::sync::Mutex::new(Vec::new());

/// Panics recorded but not yet taken kept at most (the oldest go first).
const KEPT_PANICS: usize = 16;

fn thread_key() -> usize {
    THREAD_KEY.with(|key| std::ptr::from_ref(key) as usize)
}

fn panics() -> std::sync::MutexGuard<'static, Vec<(usize, String)>> {
    PANICS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Installs the plugin's quiet panic hook: it records the message and location for the boundary guard and
/// prints nothing. It never symbolises a backtrace unless `TOOLSHED_PLUGIN_BACKTRACE` is set, because one
/// symbolised backtrace costs ~100 ms and ~35 MB of RSS per panic. Called once from the root-module
/// constructor; each cdylib has its own `std`, so this is the plugin's hook, not the host's.
pub fn install_panic_hook() {
    let want_backtrace = std::env::var_os("TOOLSHED_PLUGIN_BACKTRACE").is_some();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "Box<dyn Any>".to_owned());
        let mut text = match info.location() {
            Some(loc) => format!("panicked at {}:{}: {message}", loc.file(), loc.line()),
            None => format!("panicked: {message}"),
        };
        if want_backtrace {
            text.push_str(&format!("\n{}", std::backtrace::Backtrace::force_capture()));
        }
        let key = thread_key();
        let mut recorded = panics();
        recorded.retain(|(thread, _)| *thread != key);
        if recorded.len() >= KEPT_PANICS {
            recorded.remove(0);
        }
        recorded.push((key, text));
    }));
}

/// Runs `f` and turns a panic into an error message, so no unwind ever reaches the `extern "C"` boundary.
pub fn guard<T>(f: impl FnOnce() -> Result<T, String>) -> RResult<T, RString> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(value)) => RResult::ROk(value),
        Ok(Err(message)) => RResult::RErr(message.into()),
        Err(payload) => {
            let key = thread_key();
            let recorded = {
                let mut recorded = panics();
                let at = recorded.iter().position(|(thread, _)| *thread == key);
                at.map(|at| recorded.remove(at).1)
            };
            let message = recorded.unwrap_or_else(|| {
                payload
                    .downcast_ref::<&str>()
                    .map(|s| format!("panicked: {s}"))
                    .or_else(|| payload.downcast_ref::<String>().map(|s| format!("panicked: {s}")))
                    .unwrap_or_else(|| "panicked".to_owned())
            });
            // Dropping the payload could itself panic (a payload with a panicking Drop); contain that too.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            RResult::RErr(message.into())
        }
    }
}

fn to_json<T: Serialize>(value: &T) -> Result<RString, String> {
    serde_json::to_string(value).map(RString::from).map_err(|e| format!("could not serialise the answer: {e}"))
}

/// A call as it arrives, its task still raw: every call of a task carries the same task JSON, so it is parsed
/// once per thread and task rather than once per phase (it is most of a small call's parsing cost).
#[derive(serde::Deserialize)]
struct RawCall<'a, A> {
    tool: String,
    #[serde(default)]
    id: String,
    input: A,
    #[serde(borrow, default)]
    task: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    approved: bool,
}

/// The envelope a job call's answer travels in through `execute` (see [`crate::services::IsolateResponse`]).
pub use crate::services::IsolateResponse as JobAnswer;

/// The task infos a handler parsed last, by their JSON text: every call of a task carries the same task JSON,
/// so it is parsed once per task rather than once per phase (it is most of a small call's parsing cost).
/// Kept in the handler, not in a thread-local, so it goes with the handler (see `THREAD_KEY`).
#[derive(Default)]
struct TaskCache(std::sync::Mutex<Vec<(String, crate::protocol::TaskInfo)>>);

/// Tasks a handler remembers: more than a host usually runs at once on one tool.
const CACHED_TASKS: usize = 8;

impl TaskCache {
    fn parse(&self, raw: Option<&serde_json::value::RawValue>) -> Result<crate::protocol::TaskInfo, String> {
        let Some(raw) = raw else {
            return Ok(crate::protocol::TaskInfo::default());
        };
        let lock = || self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, task)) = lock().iter().find(|(text, _)| text == raw.get()) {
            return Ok(task.clone());
        }
        let task: crate::protocol::TaskInfo = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
        let mut cache = lock();
        if cache.len() >= CACHED_TASKS {
            cache.remove(0);
        }
        cache.push((raw.get().to_owned(), task.clone()));
        Ok(task)
    }
}

fn parse_call<A: DeserializeOwned>(call: &str, tasks: &TaskCache) -> Result<ToolCall<A>, String> {
    let raw: RawCall<'_, A> = serde_json::from_str(call).map_err(|e| e.to_string())?;
    Ok(ToolCall { tool: raw.tool, id: raw.id, input: raw.input, task: tasks.parse(raw.task)?, approved: raw.approved })
}

/// Connects a typed [`Tool`] to the [`ToolHandler`] vtable.
struct Adapter<T> {
    tool: T,
    tasks: TaskCache,
}

impl<T: Tool> ToolHandler for Adapter<T> {
    fn prepare(&self, call: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString> {
        guard(|| {
            let answer = match parse_call::<T::Args>(call.as_str(), &self.tasks) {
                Ok(call) => self.tool.prepare(&call, &HostClient::new(host)),
                Err(e) => Prepared::Error(invalid_input(&e)),
            };
            to_json(&answer)
        })
    }

    fn execute(&self, call: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString> {
        guard(|| {
            let host = HostClient::new(host);
            if let Some(answer) = run_job(&self.tool, call.as_str(), &host) {
                return to_json(&answer);
            }
            let answer = match parse_call::<T::Args>(call.as_str(), &self.tasks) {
                Ok(call) => self.tool.execute(&call, &host),
                Err(e) => Outcome::Error(invalid_input(&e)),
            };
            to_json(&answer)
        })
    }

    fn partial(&self, block: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString> {
        guard(|| {
            if let Ok(block) = serde_json::from_str::<PartialBlock>(block.as_str()) {
                self.tool.partial(&block, &HostClient::new(host));
            }
            Ok(RString::from("{}"))
        })
    }
}

/// Runs the job a job call names; `None` for an ordinary call. The cheap look for the `job` key keeps the
/// ordinary path from parsing its call twice.
fn run_job<T: Tool>(tool: &T, call: &str, host: &HostClient<'_>) -> Option<JobAnswer> {
    if !call.contains("\"job\"") {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct JobCall {
        job: Option<String>,
        #[serde(default)]
        input: serde_json::Value,
    }
    let parsed: JobCall = serde_json::from_str(call).ok()?;
    let name = parsed.job?;
    Some(match tool.job(&name, parsed.input, host) {
        Ok(value) => JobAnswer::Ok(value),
        Err(message) => JobAnswer::Error(message),
    })
}

fn invalid_input(error: &str) -> ToolError {
    ToolError { message: format!("Invalid tool input: {error}"), mistake: true }
}

/// The factory step of [`crate::export_plugin!`] for one tool type: `Ok(None)` when `name` is not its name.
pub fn construct<T: Tool>(name: &str, config: &str) -> Result<Option<ToolHandlerBox>, String> {
    if T::declaration().name != name {
        return Ok(None);
    }
    let tool = T::new(&ToolInit { name, config })?;
    Ok(tool.map(|tool| ToolHandler_TO::from_value(Adapter { tool, tasks: TaskCache::default() }, TD_Opaque)))
}

/// Converts the factory's answer for the ABI.
pub fn into_abi(handler: Option<ToolHandlerBox>) -> ROption<ToolHandlerBox> {
    handler.map_or(ROption::RNone, ROption::RSome)
}

/// Serialises the declarations of a plugin's tools.
pub fn declarations_json(tools: Vec<ToolDeclaration>) -> Result<RString, String> {
    to_json(&crate::protocol::PluginDeclaration { tools })
}

/// Deserialises an optional integer the lenient way Cline does: numbers, numeric strings, and anything
/// else (non-numeric text, NaN, null) as absent. Models send `"10"` as often as `10`.
pub fn lenient_int<'de, D: Deserializer<'de>>(de: D) -> Result<Option<i64>, D::Error> {
    let value = serde_json::Value::deserialize(de)?;
    Ok(match value {
        serde_json::Value::Number(n) => n.as_i64().or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64)),
        serde_json::Value::String(s) => {
            let t = s.trim();
            t.parse::<i64>().ok().or_else(|| t.parse::<f64>().ok().filter(|f| f.is_finite()).map(|f| f as i64))
        }
        _ => None,
    })
}

/// Deserialises an optional boolean the lenient way Cline does: `true`, or a string equal to `"true"`
/// ignoring case; everything else is `false`.
pub fn lenient_bool<'de, D: Deserializer<'de>>(de: D) -> Result<bool, D::Error> {
    let value = serde_json::Value::deserialize(de)?;
    Ok(match value {
        serde_json::Value::Bool(b) => b,
        serde_json::Value::String(s) => s.trim().eq_ignore_ascii_case("true"),
        _ => false,
    })
}

/// Deserialises a parameter that should be a string but may arrive as any JSON value (Cline stringifies
/// non-string native arguments).
pub fn lenient_string<'de, D: Deserializer<'de>>(de: D) -> Result<Option<String>, D::Error> {
    let value = serde_json::Value::deserialize(de)?;
    Ok(match value {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s),
        other => Some(other.to_string()),
    })
}

/// The conversational and task services (issue 14), typed.
impl HostClient<'_> {
    /// `ask`: a question to the user. `answered` is false when nobody is there to answer.
    pub fn ask(
        &self,
        kind: &str,
        text: &str,
        options: Vec<String>,
    ) -> Result<crate::services::AskResponse, ServiceError> {
        let request = crate::services::AskRequest { kind: kind.to_owned(), text: text.to_owned(), options };
        self.call::<services::Ask>(&request)
    }

    /// `task.settings`: the task's current mode and conversational settings. A host without the service
    /// reports the mode of the call's task info and every setting off.
    pub fn task_settings(&self, task: &crate::TaskInfo) -> Result<crate::services::TaskSettings, ServiceError> {
        match self.call::<services::TaskSettingsService>(&services::Empty {}) {
            Err(e) if e.kind == ServiceErrorKind::UnknownService => {
                Ok(crate::services::TaskSettings { mode: task.mode.clone(), ..Default::default() })
            }
            other => other,
        }
    }

    /// One of the host-owned task actions ([`services::TaskNew`], [`services::TaskCondense`], …): the user's
    /// answer.
    pub fn task_action<S: Service<Response = services::AskResponse>>(
        &self,
        request: &S::Request,
    ) -> Result<services::AskResponse, ServiceError> {
        self.call::<S>(request)
    }
}

/// Texts shared by the conversational tools.
pub mod conversation {
    use crate::protocol::{Block, ServiceError, ServiceErrorKind};
    use crate::services::Service;

    /// The tool error for a host that does not offer the service `S` the tool needs (or another failure of it).
    pub fn service_error<S: Service>(tool: &str, error: &ServiceError) -> crate::Outcome {
        match error.kind {
            ServiceErrorKind::UnknownService => super::result::error(format!(
                "This host does not support {tool}: it offers no '{}' service. Continue the task without this tool.",
                S::NAME
            )),
            _ => super::result::error(format!("Error executing {tool}: {}", error.message)),
        }
    }

    /// Cline's `toolResult(text, images)`: the text alone, or the text followed by the images.
    pub fn with_images(text: String, images: &[crate::services::AttachedImage]) -> crate::Outcome {
        let mut blocks = vec![Block::Text { text }];
        blocks.extend(images.iter().map(|i| Block::Image { media_type: i.media_type.clone(), data: i.data.clone() }));
        crate::Outcome::Success { blocks }
    }

    /// Parses an `options` parameter the lenient way Cline's `parsePartialArrayString` does for display:
    /// a JSON array of strings, else nothing.
    pub fn parse_options(raw: Option<&str>) -> Vec<String> {
        raw.and_then(|raw| serde_json::from_str::<Vec<serde_json::Value>>(raw.trim()).ok())
            .map(|items| {
                items
                    .into_iter()
                    .map(|v| match v {
                        serde_json::Value::String(s) => s,
                        other => other.to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Why [`HostClient::open_confirmed`] gave no file.
#[derive(Debug)]
pub enum OpenError {
    /// The open itself failed.
    Io(std::io::Error),
    /// The opened file is not one the checks allowed; the text says why, for the model.
    Refused(String),
}

/// Opens for reading without blocking on a FIFO.
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc_nonblock());
    }
    options.open(path)
}

/// Opens `real`, a path whose links the caller already resolved and checked (an edit's target), and confirms
/// that the opened file is still at that path: a link swapped into it since the checks is refused instead
/// of followed. The confirmed open for callers that did their checks on the real path themselves.
pub fn open_real(real: &Path) -> Result<std::fs::File, OpenError> {
    let file = open_nonblocking(real).map_err(OpenError::Io)?;
    match opened_path(&file) {
        Some(opened) if opened != real => Err(OpenError::Refused(format!(
            "{} changed after it was checked: it now leads to {}. Try again.",
            real.display(),
            opened.display()
        ))),
        _ => Ok(file),
    }
}

/// Why [`HostClient::read_confirmed`] (or [`read_capped`]) gave no bytes.
#[derive(Debug)]
pub enum ReadError {
    /// The open or the read failed.
    Io(std::io::Error),
    /// The opened file is not one the checks allowed; the text says why, for the model.
    Refused(String),
    /// A directory, FIFO, device or socket: nothing was read.
    NotAFile,
    /// Larger than the cap: nothing is returned. `size` is the size the file had (at least).
    TooLarge {
        /// The file's size in bytes, or how far a read got before passing the cap.
        size: u64,
        /// The cap it passed.
        cap: u64,
    },
}

impl ReadError {
    /// The reason in words, for a note or a tool error about `path`.
    pub fn describe(&self, path: &str) -> String {
        match self {
            ReadError::Io(e) => format!("{path}: {e}"),
            ReadError::Refused(message) => message.clone(),
            ReadError::NotAFile => format!("{path} is not a regular file."),
            ReadError::TooLarge { size, cap } => format!(
                "{path} is {}, over the {} limit for this tool.",
                result::format_bytes(*size),
                result::format_bytes(*cap)
            ),
        }
    }
}

/// Reads an opened file whole when it is a regular file of at most `cap` bytes. The size is checked before
/// reading (a sparse 1 GB file costs nothing to refuse) and again while reading, since a file can grow after
/// its size was taken: no more than `cap + 1` bytes are ever held.
pub fn read_capped(file: std::fs::File, cap: u64) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let metadata = file.metadata().map_err(ReadError::Io)?;
    if !metadata.is_file() {
        return Err(ReadError::NotAFile);
    }
    if metadata.len() > cap {
        return Err(ReadError::TooLarge { size: metadata.len(), cap });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes).map_err(ReadError::Io)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLarge { size: bytes.len() as u64, cap });
    }
    Ok(bytes)
}

/// `O_NONBLOCK`, so opening a FIFO returns at once (regular files ignore the flag).
#[cfg(unix)]
fn libc_nonblock() -> i32 {
    // The value is fixed per platform; spelled out to keep `libc` out of every plugin's dependencies.
    #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
    return 0x0004;
    #[cfg(not(any(target_os = "macos", target_os = "ios", target_os = "freebsd")))]
    return 0o4000;
}

/// The real path of an open file, where the platform tells it.
fn opened_path(file: &std::fs::File) -> Option<std::path::PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        None
    }
}

impl HostClient<'_> {
    /// `subagents.spawn`: runs the prompts as parallel subagents of this task and waits for every outcome.
    pub fn subagents_spawn(
        &self,
        request: &crate::services::SubagentsSpawnRequest,
    ) -> Result<crate::services::SubagentsSpawnResponse, ServiceError> {
        self.call::<services::SubagentsSpawn>(request)
    }
}

impl HostClient<'_> {
    /// Runs `tool`'s [`Tool::job`] named `job` in a child process through `isolate.run`, so a parser of hostile
    /// content that overflows its stack, runs out of memory or loops ends the child, not the host. A host
    /// without the service (an older host, a test host, or inside a job already) runs the job here instead.
    pub fn isolated<T: Tool>(
        &self,
        tool: &T,
        job: &str,
        input: serde_json::Value,
    ) -> Result<serde_json::Value, IsolatedError> {
        if !self.offers::<services::IsolateRun>() {
            return tool.job(job, input, self).map_err(IsolatedError::Job);
        }
        let request = crate::services::IsolateRequest { job: job.to_owned(), input };
        match self.call::<services::IsolateRun>(&request) {
            Ok(crate::services::IsolateResponse::Ok(value)) => Ok(value),
            Ok(crate::services::IsolateResponse::Error(message)) => Err(IsolatedError::Job(message)),
            Err(e) => Err(IsolatedError::Failed(e.message)),
        }
    }
}
