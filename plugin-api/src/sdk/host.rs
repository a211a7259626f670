//! [`HostClient`]: the host as a plugin sees it during one call, with a typed [`HostClient::call`] for every
//! service and helpers for the common ones.

use crate::abi::HostRef;
use crate::protocol::{ServiceError, ServiceErrorKind};
use crate::services::{self, Service};
use abi_stable::std_types::{RResult, RStr};
use serde::{de::DeserializeOwned, Serialize};

/// Typed access to the host's services during one call.
pub struct HostClient<'a> {
    host: HostRef<'a>,
}

impl<'a> HostClient<'a> {
    /// Wraps the borrowed host object (the export adapter and the test host do; tools receive a client).
    #[doc(hidden)]
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
            .map_err(|e| ServiceError::new(ServiceErrorKind::InvalidRequest, super::json_error(&e)))?;
        match self.host.service(RStr::from_str(name), RStr::from_str(&request)) {
            RResult::ROk(text) => serde_json::from_str(text.as_str()).map_err(|e| {
                ServiceError::new(
                    ServiceErrorKind::Failed,
                    format!("unreadable answer from service {name}: {}", super::json_error(&e)),
                )
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

impl HostClient<'_> {
    /// `subagents.spawn`: runs the prompts as parallel subagents of this task and waits for every outcome.
    pub fn subagents_spawn(
        &self,
        request: &crate::services::SubagentsSpawnRequest,
    ) -> Result<crate::services::SubagentsSpawnResponse, ServiceError> {
        self.call::<services::SubagentsSpawn>(request)
    }
}
