//! The host object a plugin sees during one call: the named services, cancellation and logging.
//!
//! Every service runs under `catch_unwind`: a panic in host code called from a plugin would otherwise cross
//! the plugin's `extern "C"` frames and end the process.

use crate::task::TaskShared;
use abi_stable::std_types::{RResult, RStr, RString, RVec};
use serde::{de::DeserializeOwned, Serialize};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use toolshed_plugin_api::services::{
    self, CheckCommandRequest, CheckCommandResponse, CheckRequest, CheckResponse, Empty, ForgetRequest, KillRequest,
    ReadRequest, ReadResponse, RecordReadRequest, RecordReadResponse, ResolveRequest, SayRequest, SpawnRequest,
    SpawnResponse, StateGetRequest, StateGetResponse, StateSetRequest,
};
use toolshed_plugin_api::{log_level, Host, ServiceError, ServiceErrorKind};

/// The services every host offers, in the order `services()` lists them.
const SERVICES: &[&str] = &[
    services::PATH_RESOLVE,
    services::PATH_CHECK,
    services::PATH_CHECK_COMMAND,
    services::READ_CACHE_RECORD,
    services::READ_CACHE_FORGET,
    services::SAY,
    services::STATE_GET,
    services::STATE_SET,
    services::PROCESS_SPAWN,
    services::PROCESS_READ,
    services::PROCESS_KILL,
    services::COMMANDS_SETTINGS,
    services::WEB_SETTINGS,
    services::HTTP_REQUEST,
    services::MCP_CALL_TOOL,
    services::MCP_READ_RESOURCE,
    services::MCP_SERVERS,
    services::CALL_COMMIT,
];

/// The host for one call of one tool.
pub(crate) struct CallHost {
    pub task: Arc<TaskShared>,
    /// Set on timeout or cancellation of this call.
    pub cancelled: Arc<AtomicBool>,
    /// Whether the call may still write (`call.commit`), shared with the actor that times it out.
    pub commit: Arc<crate::services::commit_gate::CommitGate>,
    pub tool: Arc<str>,
    /// The handler's library and construction, for `isolate.run`; `None` runs no jobs.
    pub origin: Option<Arc<crate::registry::loader::HandlerOrigin>>,
}

impl CallHost {
    fn is_cancelled_now(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed) || self.task.cancel.is_cancelled()
    }

    fn dispatch(&self, name: &str, request: &str) -> Result<String, ServiceError> {
        // Stopping what it started must work for a cancelled call too.
        if name == services::PROCESS_KILL {
            return answer(request, |req: KillRequest| {
                self.task
                    .host
                    .processes
                    .kill(req.id)
                    .map_err(|e| ServiceError::new(ServiceErrorKind::Failed, e.to_string()))?;
                Ok(Empty {})
            });
        }
        // Blocking services must not keep an abandoned call busy: once cancelled, every service says so.
        if self.is_cancelled_now() {
            return Err(cancelled());
        }
        match name {
            services::CALL_COMMIT => {
                answer(request, |_: Empty| Ok(services::CommitResponse { committed: self.commit.commit() }))
            }
            services::ISOLATE_RUN => answer(request, |req: services::IsolateRequest| {
                let origin = self
                    .origin
                    .as_deref()
                    .ok_or_else(|| ServiceError::new(ServiceErrorKind::UnknownService, "this call cannot run jobs"))?;
                let host = &self.task.host;
                crate::services::isolate::run(origin, &host.isolation, &host.children, req, self, &self.tool)
            }),
            services::PATH_RESOLVE => answer(request, |req: ResolveRequest| Ok(self.task.workspace.resolve(&req.path))),
            services::PATH_CHECK => answer(request, |req: CheckRequest| {
                let allowed = if req.write {
                    self.task.workspace.writes_allowed(&req.paths)
                } else {
                    self.task.workspace.allows_all(&req.paths)
                };
                Ok(CheckResponse { allowed })
            }),
            services::PATH_CHECK_COMMAND => answer(request, |req: CheckCommandRequest| {
                let cwd = req.cwd.as_deref().map(std::path::Path::new);
                Ok(CheckCommandResponse { blocked: self.task.workspace.check_command_in(&req.command, cwd) })
            }),
            services::READ_CACHE_RECORD => answer(request, |req: RecordReadRequest| {
                Ok(RecordReadResponse { read_count: self.task.record_read(&req.path, req.mtime_ns) })
            }),
            services::READ_CACHE_FORGET => answer(request, |req: ForgetRequest| {
                self.task.forget_reads(&req.paths);
                Ok(Empty {})
            }),
            services::SAY => answer(request, |req: SayRequest| {
                self.task.say(&self.tool, req);
                Ok(Empty {})
            }),
            services::STATE_GET => answer(request, |req: StateGetRequest| {
                Ok(StateGetResponse { value: self.task.state.get(&req.key).map(|v| v.clone()) })
            }),
            services::STATE_SET => answer(request, |req: StateSetRequest| {
                match req.value {
                    Some(value) => self.task.state.insert(req.key, value),
                    None => self.task.state.remove(&req.key).map(|(_, v)| v),
                };
                Ok(Empty {})
            }),
            services::PROCESS_SPAWN => answer(request, |req: SpawnRequest| {
                let cwd = match &req.cwd {
                    Some(dir) => std::path::PathBuf::from(dir),
                    None => self.task.workspace.primary().to_owned(),
                };
                let (id, pid) = self
                    .task
                    .host
                    .processes
                    .spawn(&self.task.info.task_id, &req.command, &cwd, &req.env)
                    .map_err(|e| ServiceError::new(ServiceErrorKind::Failed, e.to_string()))?;
                Ok(SpawnResponse { id, pid })
            }),
            services::PROCESS_READ => answer(request, |req: ReadRequest| {
                let chunk = self
                    .task
                    .host
                    .processes
                    .read(req.id, Duration::from_millis(req.wait_ms), req.max_bytes, &|| self.is_cancelled_now())
                    .map_err(|e| ServiceError::new(ServiceErrorKind::Failed, e.to_string()))?
                    .ok_or_else(cancelled)?;
                Ok(ReadResponse {
                    output: chunk.output,
                    done: chunk.done,
                    exit_code: chunk.exit_code,
                    signal: chunk.signal,
                })
            }),
            services::COMMANDS_SETTINGS => answer(request, |_: serde_json::Value| Ok(self.task.host.commands.clone())),
            services::WEB_SETTINGS => answer(request, |_: serde_json::Value| Ok(self.task.host.web.web_settings())),
            services::HTTP_REQUEST => answer(request, |req: services::HttpRequest| {
                self.task.host.web.request(req, &|| self.is_cancelled_now())
            }),
            services::MCP_CALL_TOOL => answer(request, |req: services::McpCallToolRequest| {
                let hub = self.mcp_hub()?;
                let result = hub
                    .call_tool(&req.server, &req.tool, req.arguments, &|| self.is_cancelled_now())
                    .map_err(mcp_error)?;
                Ok(services::McpCallToolResponse { result })
            }),
            services::MCP_READ_RESOURCE => answer(request, |req: services::McpReadResourceRequest| {
                let hub = self.mcp_hub()?;
                let result =
                    hub.read_resource(&req.server, &req.uri, &|| self.is_cancelled_now()).map_err(mcp_error)?;
                Ok(services::McpReadResourceResponse { result })
            }),
            services::MCP_SERVERS => answer(request, |_: serde_json::Value| {
                Ok(match &self.task.host.mcp {
                    Some(hub) => hub.servers(&|| self.is_cancelled_now()),
                    None => {
                        services::McpServersResponse { settings_path: None, settings_error: None, servers: Vec::new() }
                    }
                })
            }),
            // The conversational tools' services (interaction.rs).
            name if crate::services::interaction::serves(name) => {
                crate::services::interaction::dispatch(self, name, request)
            }
            // Subagent runs (subagents.rs).
            name if crate::services::subagents::serves(name) => crate::services::subagents::dispatch(self, request),
            other => Err(ServiceError::new(
                ServiceErrorKind::UnknownService,
                format!("this host offers no service named '{other}'"),
            )),
        }
    }
}

impl CallHost {
    /// The MCP hub, or the error a host without MCP settings gives.
    fn mcp_hub(&self) -> Result<&crate::services::mcp::McpHub, ServiceError> {
        self.task.host.mcp.as_deref().ok_or_else(|| {
            ServiceError::new(
                ServiceErrorKind::Failed,
                "No MCP servers are configured: set [mcp] settings to a cline_mcp_settings.json-shaped file in your user config",
            )
        })
    }
}

/// A hub failure as a service error: `None` is a cancellation.
fn mcp_error(error: Option<String>) -> ServiceError {
    match error {
        Some(message) => ServiceError::new(ServiceErrorKind::Failed, message),
        None => cancelled(),
    }
}

fn cancelled() -> ServiceError {
    ServiceError::new(ServiceErrorKind::Cancelled, "the call was cancelled or timed out")
}

fn answer<Req: DeserializeOwned, Resp: Serialize>(
    request: &str,
    f: impl FnOnce(Req) -> Result<Resp, ServiceError>,
) -> Result<String, ServiceError> {
    let req = serde_json::from_str(request)
        .map_err(|e| ServiceError::new(ServiceErrorKind::InvalidRequest, format!("invalid request: {e}")))?;
    let resp = f(req)?;
    serde_json::to_string(&resp).map_err(|e| ServiceError::new(ServiceErrorKind::Failed, e.to_string()))
}

fn error_json(error: &ServiceError) -> RString {
    serde_json::to_string(error)
        .unwrap_or_else(|_| r#"{"kind":"failed","message":"unserialisable error"}"#.to_owned())
        .into()
}

impl Host for CallHost {
    fn service(&self, name: RStr<'_>, request: RStr<'_>) -> RResult<RString, RString> {
        match catch_unwind(AssertUnwindSafe(|| self.dispatch(name.as_str(), request.as_str()))) {
            Ok(Ok(text)) => RResult::ROk(text.into()),
            Ok(Err(error)) => RResult::RErr(error_json(&error)),
            Err(_) => RResult::RErr(error_json(&ServiceError::new(
                ServiceErrorKind::Failed,
                format!("the host's '{}' service failed internally", name.as_str()),
            ))),
        }
    }

    fn services(&self) -> RVec<RString> {
        // `subagents.spawn` only when a driver can run them, so use_subagents can tell.
        let subagents: &[&str] =
            if self.task.host.subagents.available() { crate::services::subagents::SERVICES } else { &[] };
        // Without `isolate.run` a plugin runs its jobs in place (`HostClient::isolated`).
        let jobs: &[&str] =
            if self.task.host.isolation.enabled && self.origin.is_some() { &[services::ISOLATE_RUN] } else { &[] };
        SERVICES
            .iter()
            .chain(crate::services::interaction::SERVICES)
            .chain(subagents)
            .chain(jobs)
            .map(|s| RString::from(*s))
            .collect()
    }

    fn is_cancelled(&self) -> bool {
        self.is_cancelled_now()
    }

    fn log(&self, level: u8, message: RStr<'_>) {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            let (tool, message) = (&*self.tool, message.as_str());
            match level {
                log_level::ERROR => tracing::error!(tool, "{message}"),
                log_level::WARN => tracing::warn!(tool, "{message}"),
                log_level::INFO => tracing::info!(tool, "{message}"),
                _ => tracing::debug!(tool, "{message}"),
            }
        }));
    }
}
