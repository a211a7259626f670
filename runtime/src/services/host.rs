//! The host object a plugin sees during one call, and the router that answers its service calls.
//!
//! Each service registers one typed handler ([`Router::register`] with a plugin-api
//! [`Service`](toolshed_plugin_api::services::Service) type: its name, request and response), so the name a
//! plugin calls, the JSON it sends and the list `services()` reports come from one place. Every handler runs
//! under `catch_unwind`: a panic in host code called from a plugin would otherwise cross the plugin's
//! `extern "C"` frames and end the process.

use crate::registry::loader::HandlerOrigin;
use crate::services::commit_gate::CommitGate;
use crate::task::{CallCancel, Cancels, TaskShared};
use abi_stable::std_types::{RResult, RStr, RString, RVec};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use toolshed_plugin_api::services::Service;
use toolshed_plugin_api::{log_level, Host, ServiceError, ServiceErrorKind};

/// The host for one call of one tool. It borrows what the call runs with rather than holding its own
/// references: made for every call, eight reference counts taken and given back were a measurable part of a
/// no-op call (8 `Arc` clone/drop pairs: ~40 ns here).
pub(crate) struct CallHost<'a> {
    /// The tool-use id of the call, carried by its UI events.
    pub call_id: &'a str,
    pub task: &'a Arc<TaskShared>,
    /// The task's info as this call was sent it (`task.info`).
    pub task_json: &'a crate::task::TaskJson,
    /// The services this call may use.
    pub router: &'a Arc<Router>,
    /// Cancelled on timeout or cancellation of this call (the task's own cancellation is `task.cancel`).
    pub cancelled: &'a CallCancel,
    /// Whether the call may still write (`call.commit`), shared with the actor that times it out.
    pub commit: &'a Arc<CommitGate>,
    pub tool: &'a Arc<str>,
    /// The handler's library and construction, for `isolate.run`; `None` runs no jobs.
    pub origin: Option<&'a Arc<HandlerOrigin>>,
}

impl CallHost<'_> {
    /// Whether this call or its task was cancelled.
    pub fn is_cancelled_now(&self) -> bool {
        self.cancels().is_cancelled()
    }

    /// The call's cancellations, for a blocking service to wait on besides its own work.
    pub fn cancels(&self) -> Cancels<'_> {
        Cancels { call: self.cancelled, task: &self.task.cancel }
    }
}

/// The cancellation a host future races against, owned so it can travel to the runtime's thread.
pub(crate) type Cancellation = std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>;

/// Runs the host future `make` builds on the runtime's thread (its own task there, so it keeps running when
/// nobody waits for it any more), hands it with the call's cancellation to `settle`, and blocks this plugin
/// thread until `settle` answers. Nothing polls: the plugin thread sleeps in `recv` and the runtime's thread
/// wakes on whichever of the work, the cancellation or `settle`'s own timers comes first.
pub(crate) fn race<T, M, Fut, S, SFut>(
    arbiter: &actix::ArbiterHandle,
    call: &CallHost<'_>,
    make: M,
    settle: S,
) -> Result<T, ServiceError>
where
    T: Send + 'static,
    M: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future + 'static,
    Fut::Output: 'static,
    S: FnOnce(tokio::task::JoinHandle<Fut::Output>, Cancellation) -> SFut + Send + 'static,
    SFut: std::future::Future<Output = T> + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let (call_cancelled, task) = (call.cancelled.to_arc(), Arc::clone(call.task));
    let spawned = arbiter.spawn_fn(move || {
        actix::spawn(async move {
            let work = actix::spawn(make());
            let cancellation: Cancellation = Box::pin(async move {
                tokio::select! {
                    () = call_cancelled.cancelled() => {}
                    () = task.cancel.cancelled() => {}
                }
            });
            let _ = tx.send(settle(work, cancellation).await);
        });
    });
    if !spawned {
        return Err(failed("the runtime is shutting down"));
    }
    rx.recv().map_err(|_| failed("the runtime is shutting down"))
}

/// Sleeps for `limit`, or forever without one.
pub(crate) async fn sleep_for(limit: Option<std::time::Duration>) {
    match limit {
        Some(limit) => tokio::time::sleep(limit).await,
        None => std::future::pending().await,
    }
}

type Handler = Box<dyn Fn(&CallHost<'_>, &str) -> Result<String, ServiceError> + Send + Sync>;
type Offered = Box<dyn Fn(&CallHost<'_>) -> bool + Send + Sync>;

struct Entry {
    name: &'static str,
    handler: Handler,
    /// When the service is offered to a call; always when `None`.
    offered: Option<Offered>,
    /// Whether it still answers once the call was cancelled (stopping what the call started must work).
    after_cancel: bool,
}

/// The host services by name, in the order `services()` lists them.
#[derive(Default)]
pub(crate) struct Router {
    entries: Vec<Entry>,
    index: HashMap<&'static str, usize>,
}

/// A service just registered, for its options.
pub(crate) struct Registered<'a>(&'a mut Entry);

impl Registered<'_> {
    /// Offers the service only to calls for which `offered` holds (a plugin then takes another path).
    pub fn offered_when(self, offered: impl Fn(&CallHost<'_>) -> bool + Send + Sync + 'static) -> Self {
        self.0.offered = Some(Box::new(offered));
        self
    }

    /// Keeps answering after the call was cancelled (every other service then answers `Cancelled`, so a
    /// blocking service cannot keep an abandoned call busy).
    pub fn after_cancel(self) -> Self {
        self.0.after_cancel = true;
        self
    }
}

impl Router {
    /// Registers `S`'s handler. A second registration of the same name replaces the first.
    pub fn register<S: Service>(
        &mut self,
        handler: impl Fn(&CallHost<'_>, S::Request) -> Result<S::Response, ServiceError> + Send + Sync + 'static,
    ) -> Registered<'_> {
        let handler: Handler = Box::new(move |call, request| {
            let response = handler(call, parse_request::<S>(request)?)?;
            serde_json::to_string(&response).map_err(|e| ServiceError::new(ServiceErrorKind::Failed, e.to_string()))
        });
        let entry = Entry { name: S::NAME, handler, offered: None, after_cancel: false };
        let at = match self.index.get(S::NAME) {
            Some(&at) => {
                self.entries[at] = entry;
                at
            }
            None => {
                self.entries.push(entry);
                self.index.insert(S::NAME, self.entries.len() - 1);
                self.entries.len() - 1
            }
        };
        Registered(&mut self.entries[at])
    }

    fn dispatch(&self, call: &CallHost<'_>, name: &str, request: &str) -> Result<String, ServiceError> {
        let entry = self
            .index
            .get(name)
            .map(|&at| &self.entries[at])
            .filter(|entry| entry.offered.as_ref().is_none_or(|offered| offered(call)));
        // Once cancelled, every service but those that stop what the call started answers `Cancelled`, known
        // or not.
        if !entry.is_some_and(|entry| entry.after_cancel) && call.is_cancelled_now() {
            return Err(cancelled());
        }
        (entry.ok_or_else(|| unknown_service(name))?.handler)(call, request)
    }

    fn names(&self, call: &CallHost<'_>) -> RVec<RString> {
        self.entries
            .iter()
            .filter(|entry| entry.offered.as_ref().is_none_or(|offered| offered(call)))
            .map(|entry| RString::from(entry.name))
            .collect()
    }
}

/// The error for a service this host does not offer (to this call).
pub(crate) fn unknown_service(name: &str) -> ServiceError {
    ServiceError::new(ServiceErrorKind::UnknownService, format!("this host offers no service named '{name}'"))
}

/// The error every service gives a cancelled call.
pub(crate) fn cancelled() -> ServiceError {
    ServiceError::new(ServiceErrorKind::Cancelled, "the call was cancelled or timed out")
}

/// A failure as a `Failed` service error.
pub(crate) fn failed(error: impl std::fmt::Display) -> ServiceError {
    ServiceError::new(ServiceErrorKind::Failed, error.to_string())
}

fn error_json(error: &ServiceError) -> RString {
    serde_json::to_string(error)
        .unwrap_or_else(|_| r#"{"kind":"failed","message":"unserialisable error"}"#.to_owned())
        .into()
}

impl Host for CallHost<'_> {
    fn service(&self, name: RStr<'_>, request: RStr<'_>) -> RResult<RString, RString> {
        match catch_unwind(AssertUnwindSafe(|| self.router.dispatch(self, name.as_str(), request.as_str()))) {
            Ok(Ok(text)) => RResult::ROk(text.into()),
            Ok(Err(error)) => RResult::RErr(error_json(&error)),
            Err(_) => RResult::RErr(error_json(&ServiceError::new(
                ServiceErrorKind::Failed,
                format!("the host's '{}' service failed internally", name.as_str()),
            ))),
        }
    }

    fn services(&self) -> RVec<RString> {
        self.router.names(self)
    }

    fn is_cancelled(&self) -> bool {
        self.is_cancelled_now()
    }

    fn log(&self, level: u8, message: RStr<'_>) {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            let (tool, message) = (&**self.tool, message.as_str());
            match level {
                log_level::ERROR => tracing::error!(tool, "{message}"),
                log_level::WARN => tracing::warn!(tool, "{message}"),
                log_level::INFO => tracing::info!(tool, "{message}"),
                _ => tracing::debug!(tool, "{message}"),
            }
        }));
    }
}

/// A plugin's request to `S`, or the error that names the service and says what is wrong in JSON's words
/// (plugins hand service errors on to the model).
fn parse_request<S: Service>(request: &str) -> Result<S::Request, ServiceError> {
    serde_json::from_str(request).map_err(|e| {
        let e = toolshed_plugin_api::sdk::json_error(&e);
        ServiceError::new(ServiceErrorKind::InvalidRequest, format!("invalid request to {}: {e}", S::NAME))
    })
}

#[cfg(test)]
mod tests {
    use super::parse_request;
    use toolshed_plugin_api::services::McpCallTool;

    #[test]
    fn a_malformed_request_is_described_without_rust_type_names() {
        let message = |request: &str| parse_request::<McpCallTool>(request).unwrap_err().message;
        assert_eq!(
            message("\"everything\""),
            "invalid request to mcp.call_tool: invalid type: string \"everything\", expected a JSON object"
        );
        assert_eq!(message("{\"tool\": \"echo\"}"), "invalid request to mcp.call_tool: missing field `server`");
        assert_eq!(
            message("{\"server\": 1, \"tool\": \"echo\"}"),
            "invalid request to mcp.call_tool: invalid type: integer `1`, expected a string"
        );
        assert_eq!(
            message("{\"server\": \"s\", \"tool\": \"t\", \"arguments\": [1]}"),
            "invalid request to mcp.call_tool: invalid type: sequence, expected a map"
        );
    }
}
