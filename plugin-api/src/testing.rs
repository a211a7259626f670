//! One fake host for every plugin's unit tests (the `testing` feature): services answered by typed handlers,
//! every request recorded, a workspace preset, and the phases run as the export adapter runs them.
//!
//! ```
//! use toolshed_plugin_api::services::{PathResolve, ResolveRequest, ResolvedPath};
//! use toolshed_plugin_api::testing::FakeHost;
//!
//! let host = FakeHost::new().on::<PathResolve>(|req| {
//!     Ok(ResolvedPath { absolute: format!("/w/{}", req.path), display: req.path, root: "w".into(), inside_workspace: true })
//! });
//! let resolved = host.client().resolve_path("a.txt").unwrap();
//! assert_eq!(resolved.absolute, "/w/a.txt");
//! assert_eq!(host.requests::<PathResolve>(), [ResolveRequest { path: "a.txt".to_owned() }]);
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::abi::{Host, Host_TO};
use crate::protocol::{Outcome, Prepared, ServiceError, ServiceErrorKind, ToolCall};
use crate::sdk::{Failure, HostClient, Tool};
use crate::services::{self, Service};
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RStr, RString, RVec};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

type Handler = Box<dyn Fn(&str) -> Result<String, ServiceError> + Send + Sync>;

/// A host for unit tests. It offers exactly the services given handlers ([`FakeHost::on`]), in the order
/// they were given; any other service is `UnknownService`. Every request is recorded for
/// [`FakeHost::requests`].
pub struct FakeHost {
    handlers: Vec<(&'static str, Handler)>,
    requests: Mutex<Vec<(&'static str, String)>>,
    cancelled: AtomicBool,
    blocked: Arc<Mutex<Vec<String>>>,
    state: Arc<Mutex<BTreeMap<String, serde_json::Value>>>,
}

impl Default for FakeHost {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeHost {
    /// A host that offers no service.
    pub fn new() -> Self {
        Self {
            handlers: Vec::new(),
            requests: Mutex::default(),
            cancelled: AtomicBool::new(false),
            blocked: Arc::default(),
            state: Arc::default(),
        }
    }

    /// A host over one workspace `root`: `path.resolve` normalises lexically and shows paths relative to the
    /// root (root name `root`); `path.check` refuses paths whose shown form starts with a prefix given to
    /// [`FakeHost::block`]; `state.*` keeps the task state; `say` and `read_cache.forget` are recorded.
    pub fn workspace(root: &Path) -> Self {
        let host = Self::new();
        let (resolve_root, check_root) = (root.to_owned(), root.to_owned());
        let blocked = Arc::clone(&host.blocked);
        let (get, set) = (Arc::clone(&host.state), Arc::clone(&host.state));
        host.on::<services::PathResolve>(move |req| Ok(resolve_in(&resolve_root, &req.path)))
            .on::<services::PathCheck>(move |req| {
                let blocked = lock(&blocked);
                let allowed = req
                    .paths
                    .iter()
                    .map(|p| {
                        let display = resolve_in(&check_root, p).display;
                        !blocked.iter().any(|b| display.starts_with(b.as_str()))
                    })
                    .collect();
                Ok(services::CheckResponse { allowed })
            })
            .on::<services::ReadCacheForget>(|_| Ok(services::Empty {}))
            .on::<services::Say>(|_| Ok(services::Empty {}))
            .on::<services::StateGet>(move |req| {
                Ok(services::StateGetResponse { value: lock(&get).get(&req.key).cloned() })
            })
            .on::<services::StateSet>(move |req| {
                let mut state = lock(&set);
                match req.value {
                    Some(value) => state.insert(req.key, value),
                    None => state.remove(&req.key),
                };
                Ok(services::Empty {})
            })
    }

    /// Answers `S` with `handler` (replacing an earlier handler of `S`); the host then offers `S`.
    pub fn on<S: Service + 'static>(
        mut self,
        handler: impl Fn(S::Request) -> Result<S::Response, ServiceError> + Send + Sync + 'static,
    ) -> Self {
        let handler: Handler = Box::new(move |request| {
            let request: S::Request = serde_json::from_str(request)
                .map_err(|e| ServiceError::new(ServiceErrorKind::InvalidRequest, e.to_string()))?;
            let response = handler(request)?;
            serde_json::to_string(&response).map_err(|e| ServiceError::new(ServiceErrorKind::Failed, e.to_string()))
        });
        match self.handlers.iter_mut().find(|(name, _)| *name == S::NAME) {
            Some(slot) => slot.1 = handler,
            None => self.handlers.push((S::NAME, handler)),
        }
        self
    }

    /// Stops offering `S`, as a host without that service.
    pub fn without<S: Service>(mut self) -> Self {
        self.handlers.retain(|(name, _)| *name != S::NAME);
        self
    }

    /// The prefixes the [`FakeHost::workspace`] preset's `path.check` refuses, as `.clineignore` would.
    pub fn block<P: Into<String>>(&self, prefixes: impl IntoIterator<Item = P>) {
        *lock(&self.blocked) = prefixes.into_iter().map(Into::into).collect();
    }

    /// Marks the call cancelled (or not): [`HostClient::is_cancelled`] says so.
    pub fn set_cancelled(&self, cancelled: bool) {
        self.cancelled.store(cancelled, Ordering::SeqCst);
    }

    /// Every request of `S` so far, in order.
    pub fn requests<S: Service>(&self) -> Vec<S::Request> {
        lock(&self.requests).iter().filter(|(name, _)| *name == S::NAME).map(|(_, text)| parse(text)).collect()
    }

    /// Every request of `S` so far, forgetting them.
    pub fn take_requests<S: Service>(&self) -> Vec<S::Request> {
        let mut requests = lock(&self.requests);
        let (taken, kept) = std::mem::take(&mut *requests).into_iter().partition(|(name, _)| *name == S::NAME);
        *requests = kept;
        taken.into_iter().map(|(_, text): (&str, String)| parse(&text)).collect()
    }

    /// The client a tool's phases receive.
    pub fn client(&self) -> HostClient<'_> {
        HostClient::new(Host_TO::from_ptr(self, TD_Opaque))
    }

    /// Runs `prepare` as the host sees it: a [`Failure`] becomes [`Prepared::Error`].
    pub fn prepare<T: Tool>(&self, tool: &T, call: &ToolCall<T::Args>) -> Prepared {
        Failure::prepared(tool.prepare(call, &self.client()))
    }

    /// Runs `execute` as the model sees it: a [`Failure`] becomes [`Outcome::Error`].
    pub fn execute<T: Tool>(&self, tool: &T, call: &ToolCall<T::Args>) -> Outcome {
        Failure::outcome(tool.execute(call, &self.client()))
    }
}

impl Host for FakeHost {
    fn service(&self, name: RStr<'_>, request: RStr<'_>) -> RResult<RString, RString> {
        let Some((known, handler)) = self.handlers.iter().find(|(known, _)| *known == name.as_str()) else {
            let error = ServiceError::new(ServiceErrorKind::UnknownService, name.as_str());
            return RResult::RErr(serde_json::to_string(&error).unwrap_or_default().into());
        };
        lock(&self.requests).push((known, request.as_str().to_owned()));
        match handler(request.as_str()) {
            Ok(answer) => RResult::ROk(answer.into()),
            Err(error) => RResult::RErr(serde_json::to_string(&error).unwrap_or_default().into()),
        }
    }

    fn services(&self) -> RVec<RString> {
        self.handlers.iter().map(|(name, _)| RString::from(*name)).collect()
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    fn log(&self, _level: u8, _message: RStr<'_>) {}
}

/// `path.resolve` over one root as [`FakeHost::workspace`] answers it: `raw` joined to `root`, `.` and `..`
/// resolved lexically, shown relative to the root (empty for the root itself or outside it).
pub fn resolve_in(root: &Path, raw: &str) -> services::ResolvedPath {
    let mut absolute = PathBuf::new();
    for part in root.join(raw.trim()).components() {
        match part {
            Component::ParentDir => {
                absolute.pop();
            }
            Component::CurDir => {}
            other => absolute.push(other),
        }
    }
    services::ResolvedPath {
        display: absolute.strip_prefix(root).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default(),
        inside_workspace: absolute.starts_with(root),
        absolute: absolute.to_string_lossy().into_owned(),
        root: "root".to_owned(),
    }
}

fn parse<T: serde::de::DeserializeOwned>(text: &str) -> T {
    serde_json::from_str(text).expect("a request the fake host parsed once parses again")
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
