//! The child's side of an out-of-process plugin: load the library handed down, build the handlers the host
//! asks for, run each call on a thread of its own, and forward every host-service call to the host.

use super::{frame, Built, Hello, Phase, Spec, Start, ToChild, ToHost, CALL_STACK};
use crate::child_process::{exit, frames, limit_self, take_socket, LIBRARY_FD};
use crate::registry::loader::{LoadedPlugin, PluginHandler};
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RStr, RString, RVec};
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use toolshed_plugin_api::{Host, Host_TO, ServiceError, ServiceErrorKind};

/// An answer from the host to one waiting call.
enum Answer {
    Reply { ok: bool, text: String },
    Services(Vec<String>),
}

/// The child's end of the socket, shared by the reading loop and every call thread.
struct Link {
    out: Mutex<File>,
    /// Calls in flight: where their answers go, and whether they were cancelled.
    calls: Mutex<HashMap<u64, InFlight>>,
}

/// Where one call's answers go, and whether it was cancelled.
type InFlight = (crossbeam_channel::Sender<Answer>, Arc<AtomicBool>);

impl Link {
    fn send(&self, message: &ToHost) {
        let Ok(bytes) = frame(message) else { return };
        let mut out = self.out.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // The host is gone or stopped reading: nothing useful is left to do (it kills this process anyway).
        if out.write_all(&bytes).is_err() {
            exit(3);
        }
    }
}

/// The host as one call sees it: every service goes to the host, tagged with the call's id.
struct CallHost {
    link: Arc<Link>,
    id: u64,
    answers: crossbeam_channel::Receiver<Answer>,
    cancelled: Arc<AtomicBool>,
    services: OnceLock<Vec<String>>,
}

impl Host for CallHost {
    fn service(&self, name: RStr<'_>, request: RStr<'_>) -> RResult<RString, RString> {
        self.link.send(&ToHost::Service {
            id: self.id,
            name: name.as_str().to_owned(),
            request: request.as_str().to_owned(),
        });
        match self.answers.recv() {
            Ok(Answer::Reply { ok: true, text }) => RResult::ROk(text.into()),
            Ok(Answer::Reply { ok: false, text }) => RResult::RErr(text.into()),
            Ok(Answer::Services(_)) | Err(_) => {
                let error = ServiceError::new(ServiceErrorKind::Failed, "the host did not answer");
                RResult::RErr(serde_json::to_string(&error).unwrap_or_default().into())
            }
        }
    }

    fn services(&self) -> RVec<RString> {
        let names = self.services.get_or_init(|| {
            self.link.send(&ToHost::ListServices { id: self.id });
            match self.answers.recv() {
                Ok(Answer::Services(names)) => names,
                _ => Vec::new(),
            }
        });
        names.iter().map(|name| RString::from(name.as_str())).collect()
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    fn log(&self, level: u8, message: RStr<'_>) {
        self.link.send(&ToHost::Log { id: self.id, level, message: message.as_str().to_owned() });
    }
}

/// Builds the handler `spec` asks for.
fn build(plugin: &LoadedPlugin, spec: &Spec) -> (Built, Option<Arc<PluginHandler>>) {
    match plugin.new_handler(&spec.tool, &spec.config) {
        Ok(Some(handler)) => (Built::Ready, Some(Arc::new(handler))),
        Ok(None) => (Built::Declined, None),
        Err(message) => (Built::Failed(message), None),
    }
}

/// The plugin host's `main`: returns only through [`exit`].
pub fn main() -> ! {
    limit_self();
    let socket = take_socket();
    let Ok(mut input) = socket.try_clone() else { exit(2) };
    let link = Arc::new(Link { out: Mutex::new(socket), calls: Mutex::new(HashMap::new()) });
    let Ok(start) = frames::read_blocking(&mut input, u64::from(u32::MAX)) else { exit(2) };
    let Ok(start) = serde_json::from_slice::<Start>(&start) else { exit(2) };
    let library = std::path::PathBuf::from(format!("/proc/self/fd/{LIBRARY_FD}"));
    let plugin = match crate::registry::loader::load_inherited(&library) {
        Ok(plugin) => plugin,
        Err(e) => {
            link.send(&ToHost::Broken { message: format!("its library does not load: {}", e.reason) });
            exit(1)
        }
    };
    let Ok(declarations) = serde_json::to_string(&plugin.declaration) else { exit(2) };
    let handlers: RwLock<Vec<Option<Arc<PluginHandler>>>> = RwLock::new(Vec::new());
    let mut built = Vec::new();
    for spec in &start.handlers {
        let (answer, handler) = build(&plugin, spec);
        built.push(answer);
        handlers.write().unwrap_or_else(std::sync::PoisonError::into_inner).push(handler);
    }
    link.send(&ToHost::Hello(Hello {
        name: plugin.identity.name.clone(),
        version: plugin.identity.version.clone(),
        api_version: plugin.identity.api_version.clone(),
        declarations,
        built,
    }));
    let workers = Workers::new();
    let mut input = std::io::BufReader::with_capacity(64 * 1024, input);
    loop {
        let Ok(bytes) = frames::read_blocking(&mut input, start.max_message) else {
            // The host closed its end (it unloaded the plugin) or broke the protocol.
            let _ = std::io::stderr().flush();
            exit(0)
        };
        let Ok(message) = serde_json::from_slice::<ToChild>(&bytes) else { exit(2) };
        match message {
            ToChild::Build { id, handler, spec } => {
                let (answer, built) = build(&plugin, &spec);
                let mut handlers = handlers.write().unwrap_or_else(std::sync::PoisonError::into_inner);
                let at = handler as usize;
                if handlers.len() <= at {
                    handlers.resize(at + 1, None);
                }
                handlers[at] = built;
                drop(handlers);
                link.send(&ToHost::Built { id, built: answer });
            }
            ToChild::Call { id, handler, phase, call } => {
                let handler = handlers
                    .read()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get(handler as usize)
                    .cloned()
                    .flatten();
                start_call(&link, &workers, id, handler, phase, call);
            }
            ToChild::Reply { id, ok, text } => route(&link, id, Answer::Reply { ok, text }),
            ToChild::Services { id, names } => route(&link, id, Answer::Services(names)),
            ToChild::Cancel { id } => {
                if let Some((_, cancelled)) = lock(&link.calls).get(&id) {
                    cancelled.store(true, Ordering::Relaxed);
                }
            }
        }
    }
}

fn route(link: &Link, id: u64, answer: Answer) {
    if let Some((tx, _)) = lock(&link.calls).get(&id) {
        let _ = tx.send(answer);
    }
}

/// The threads calls run on: an idle one if there is one, else a new one, so a call never waits behind
/// another (one may wait for what another does) and a call costs no thread start once the pool is warm.
struct Workers {
    jobs: crossbeam_channel::Sender<Job>,
    waiting: crossbeam_channel::Receiver<Job>,
    /// Workers blocked on `waiting` that no job has been promised to yet.
    idle: AtomicUsize,
}

type Job = Box<dyn FnOnce() + Send>;

impl Workers {
    fn new() -> Arc<Self> {
        let (jobs, waiting) = crossbeam_channel::unbounded();
        Arc::new(Self { jobs, waiting, idle: AtomicUsize::new(0) })
    }

    /// Runs `job` on an idle worker (taking its place, so no other job is promised to it) or a new one.
    fn run(self: &Arc<Self>, job: Job) -> Result<(), Job> {
        if self.idle.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)).is_ok() {
            return self.jobs.send(job).map_err(crossbeam_channel::SendError::into_inner);
        }
        let workers = Arc::clone(self);
        let slot = Arc::new(Mutex::new(Some(job)));
        let first = Arc::clone(&slot);
        let spawned = std::thread::Builder::new().name("call".to_owned()).stack_size(CALL_STACK).spawn(move || {
            if let Some(job) = lock(&first).take() {
                job();
            }
            loop {
                workers.idle.fetch_add(1, Ordering::AcqRel);
                match workers.waiting.recv() {
                    Ok(job) => job(),
                    Err(_) => return,
                }
            }
        });
        match spawned {
            Ok(_) => Ok(()),
            Err(_) => Err(lock(&slot).take().unwrap_or_else(|| Box::new(|| {}))),
        }
    }
}

/// Runs one call on a worker thread and sends its answer.
fn start_call(
    link: &Arc<Link>,
    workers: &Arc<Workers>,
    id: u64,
    handler: Option<Arc<PluginHandler>>,
    phase: Phase,
    call: String,
) {
    let Some(handler) = handler else {
        link.send(&ToHost::Done { id, ok: false, text: "the plugin's process has no such handler".to_owned() });
        return;
    };
    let (tx, answers) = crossbeam_channel::unbounded();
    let cancelled = Arc::new(AtomicBool::new(false));
    lock(&link.calls).insert(id, (tx, Arc::clone(&cancelled)));
    let host = CallHost { link: Arc::clone(link), id, answers, cancelled, services: OnceLock::new() };
    let spawned = workers.run(Box::new(move || {
        let answer = {
            let host_ref = Host_TO::from_ptr(&host, TD_Opaque);
            let call = RStr::from_str(&call);
            match phase {
                Phase::Prepare => handler.prepare(call, host_ref),
                Phase::Execute => handler.execute(call, host_ref),
                Phase::Partial => handler.partial(call, host_ref),
            }
        };
        lock(&host.link.calls).remove(&id);
        let (ok, text) = match answer {
            RResult::ROk(text) => (true, text.into_string()),
            RResult::RErr(text) => (false, text.into_string()),
        };
        host.link.send(&ToHost::Done { id, ok, text });
    }));
    if spawned.is_err() {
        lock(&link.calls).remove(&id);
        link.send(&ToHost::Done { id, ok: false, text: "the plugin's process cannot start a thread".to_owned() });
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
