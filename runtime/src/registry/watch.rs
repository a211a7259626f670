//! Hot reload: watches the plugin directories, debounces their file events, and loads, reloads or unloads each
//! library that changed, reporting what happened as [`PluginEvent`]s to every subscriber.
//!
//! A reload never replaces a working version with a broken one: the new copy is loaded (from a fresh shadow
//! path, since the dynamic loader hands back the object it mapped for a path it has seen), its ABI and
//! declarations checked and its handlers constructed before the coordinator is asked to [`Swap`] it in, and
//! the coordinator refuses a version that would lose a tool the previous one served. A replaced copy is
//! unloaded once its last call has finished (`[plugins] unload`, on by default); [`ReloadStats`] counts the
//! copies still held.

use crate::registry::coordinator::{build_handlers, Coordinator, RegisterEvent, Swap, Unregister};
use crate::registry::loader::{self, Library, LoadedPlugin};
use actix::Addr;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// What happened to a plugin library while the runtime ran.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PluginEvent {
    /// A new library was loaded and its tools registered.
    Loaded {
        /// The library file.
        file: PathBuf,
        /// The plugin's name and version.
        plugin: String,
        /// The plugin's version.
        version: String,
        /// The identity of the file (`PluginIdentity::content_hash`: xxh3-128 of its bytes, or its stamp's for a library loaded in place).
        hash: String,
        /// The names it serves now, sorted.
        tools: Vec<String>,
    },
    /// A changed library replaced its previous version; new calls reach the new code.
    Reloaded {
        /// The library file.
        file: PathBuf,
        /// The plugin's name.
        plugin: String,
        /// The plugin's version.
        version: String,
        /// The identity of the new file (as `Loaded`'s `hash`).
        hash: String,
        /// The names it serves now, sorted.
        tools: Vec<String>,
        /// Names the previous version served that this one does not.
        removed: Vec<String>,
    },
    /// A library was removed; its tools are gone.
    Unloaded {
        /// The library file.
        file: PathBuf,
        /// The names it served, sorted.
        tools: Vec<String>,
    },
    /// An out-of-process plugin crashed too often: its calls fail at once until its library changes.
    Quarantined {
        /// The library file.
        file: PathBuf,
        /// The plugin's name.
        plugin: String,
        /// How many crashes in what window, and the last one's cause.
        reason: String,
    },
    /// A library could not be loaded, or one of its tools could not be registered; a previous version, if
    /// any, keeps serving.
    Failed {
        /// The library file.
        file: PathBuf,
        /// Why, and what to do, in one line.
        reason: String,
    },
}

impl PluginEvent {
    /// The library file the event is about.
    pub fn file(&self) -> &Path {
        match self {
            Self::Loaded { file, .. } | Self::Reloaded { file, .. } | Self::Unloaded { file, .. } => file,
            Self::Failed { file, .. } | Self::Quarantined { file, .. } => file,
        }
    }

    /// Whether the set of callable tools (or their specs) may have changed: what an MCP server tells its
    /// clients as `notifications/tools/list_changed`.
    pub fn changes_tools(&self) -> bool {
        match self {
            Self::Loaded { .. } | Self::Reloaded { .. } | Self::Unloaded { .. } => true,
            Self::Failed { .. } | Self::Quarantined { .. } => false,
        }
    }
}

/// One line, as `toolshed watch` prints it. File names and reasons come from the plugin directory and the
/// plugins themselves, so they are escaped for the terminal (`shown::escape_line`).
impl fmt::Display for PluginEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::shown::escape_line as shown;
        let list =
            |names: &[String]| if names.is_empty() { "-".to_owned() } else { shown(&names.join(",")).into_owned() };
        let path = |file: &std::path::Path| shown(&file.display().to_string()).into_owned();
        match self {
            Self::Loaded { file, plugin, version, hash, tools } => write!(
                f,
                "loaded {} plugin={} version={} hash={} tools={}",
                path(file),
                shown(plugin),
                shown(version),
                short(hash),
                list(tools)
            ),
            Self::Reloaded { file, plugin, version, hash, tools, removed } => write!(
                f,
                "reloaded {} plugin={} version={} hash={} tools={} removed={}",
                path(file),
                shown(plugin),
                shown(version),
                short(hash),
                list(tools),
                list(removed)
            ),
            Self::Unloaded { file, tools } => write!(f, "unloaded {} tools={}", path(file), list(tools)),
            Self::Failed { file, reason } => write!(f, "failed {}: {}", path(file), shown(reason)),
            Self::Quarantined { file, plugin, reason } => {
                write!(f, "quarantined {} plugin={}: {}", path(file), shown(plugin), shown(reason))
            }
        }
    }
}

fn short(hash: &str) -> &str {
    hash.get(..16).unwrap_or(hash)
}

/// A subscription to a runtime's [`PluginEvent`]s, from the moment it was made. Every subscriber gets every
/// event, in order; an unread subscription buffers them.
#[derive(Debug)]
pub struct PluginEvents {
    rx: tokio::sync::mpsc::UnboundedReceiver<PluginEvent>,
}

impl PluginEvents {
    /// The next event; `None` once the runtime is gone. Any executor can await it.
    pub async fn recv(&mut self) -> Option<PluginEvent> {
        self.rx.recv().await
    }

    /// The next event if one is waiting.
    pub fn try_recv(&mut self) -> Option<PluginEvent> {
        self.rx.try_recv().ok()
    }

    /// Blocks for the next event up to `timeout`; `None` on timeout or once the runtime is gone. For threads
    /// outside async code (it runs a small executor of its own, which panics inside another).
    pub fn recv_timeout(&mut self, timeout: Duration) -> Option<PluginEvent> {
        let executor = tokio::runtime::Builder::new_current_thread().enable_time().build().ok()?;
        executor.block_on(async { tokio::time::timeout(timeout, self.rx.recv()).await.ok().flatten() })
    }
}

/// The subscribers of one runtime.
#[derive(Debug, Default)]
pub(crate) struct EventHub {
    subscribers: Mutex<Vec<tokio::sync::mpsc::UnboundedSender<PluginEvent>>>,
}

impl EventHub {
    pub fn subscribe(&self) -> PluginEvents {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        lock(&self.subscribers).push(tx);
        PluginEvents { rx }
    }

    pub(crate) fn emit(&self, event: &PluginEvent) {
        tracing::info!("{event}");
        lock(&self.subscribers).retain(|tx| tx.send(event.clone()).is_ok());
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What hot reload has cost so far: library copies that no longer serve — replaced or removed versions, and
/// new versions that were refused — but are still held, and what the process has mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct ReloadStats {
    /// Versions replaced by a reload.
    pub reloads: u64,
    /// Library copies of this runtime that serve nothing but are still held: calls on them have not
    /// finished yet, or unloading is off (`[plugins] unload = false`).
    pub old_copies: u64,
    /// Their total file size in bytes (an upper bound of what they keep resident).
    pub old_bytes: u64,
    /// Library copies this process has unloaded, by every runtime in it.
    pub unloaded: u64,
    /// Library copies mapped in this process now, serving or not, by every runtime in it.
    pub process_copies: u64,
    /// Their mapped size in bytes.
    pub process_bytes: u64,
    /// Libraries mapped in place under a read lease that this process moved to a private copy because their
    /// file was opened for writing (`[plugins] lease_poll_ms`), by every runtime in it.
    pub moved_off_leases: u64,
}

/// The version of a library file that serves now.
#[derive(Debug, Clone)]
struct Serving {
    hash: String,
    library: Arc<Library>,
}

/// A copy that serves no more: draining (held only by calls still running on it, unloaded after the last) or
/// kept mapped for good because unloading is off.
enum Retired {
    Draining(std::sync::Weak<Library>),
    Kept(Arc<Library>),
}

impl Retired {
    /// Its size while it is still held.
    fn held_bytes(&self) -> Option<u64> {
        match self {
            Retired::Draining(weak) => weak.upgrade().map(|library| library.bytes()),
            Retired::Kept(library) => Some(library.bytes()),
        }
    }
}

#[derive(Debug, Default)]
struct ReloadState {
    serving: HashMap<PathBuf, Serving>,
    /// The content of a file that failed last, so the same broken bytes are reported once.
    failed: HashMap<PathBuf, String>,
}

/// Loads, reloads and unloads libraries of the plugin directories; shared by the watcher thread and
/// [`crate::Runtime::rescan`]. One change at a time.
pub(crate) struct Reloader {
    dirs: Vec<PathBuf>,
    coordinator: Addr<Coordinator>,
    plugin_config: BTreeMap<String, String>,
    state: tokio::sync::Mutex<ReloadState>,
    pub hub: Arc<EventHub>,
    /// Which libraries run out of process.
    policy: Arc<crate::registry::remote::Policy>,
    reloads: AtomicU64,
    retired: Mutex<Vec<Retired>>,
    /// `[plugins] unload`: close copies nobody uses any more.
    unload: bool,
}

impl Reloader {
    pub fn new(
        dirs: Vec<PathBuf>,
        coordinator: Addr<Coordinator>,
        plugin_config: BTreeMap<String, String>,
        loaded: &[LoadedPlugin],
        unload: bool,
        policy: Arc<crate::registry::remote::Policy>,
        hub: Arc<EventHub>,
    ) -> Self {
        let serving = loaded
            .iter()
            .map(|plugin| {
                let library = Arc::clone(plugin.library());
                (plugin.identity.file.clone(), Serving { hash: plugin.identity.content_hash.clone(), library })
            })
            .collect();
        Self {
            dirs,
            coordinator,
            plugin_config,
            state: tokio::sync::Mutex::new(ReloadState { serving, failed: HashMap::new() }),
            hub,
            policy,
            reloads: AtomicU64::new(0),
            retired: Mutex::new(Vec::new()),
            unload,
        }
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    pub fn stats(&self) -> ReloadStats {
        let (process_copies, process_bytes) = loader::mapped();
        let mut retired = lock(&self.retired);
        retired.retain(|copy| copy.held_bytes().is_some());
        let held: Vec<u64> = retired.iter().filter_map(Retired::held_bytes).collect();
        ReloadStats {
            process_copies,
            process_bytes,
            reloads: self.reloads.load(Ordering::Relaxed),
            old_copies: held.len() as u64,
            old_bytes: held.iter().sum(),
            unloaded: loader::closed(),
            moved_off_leases: loader::moved_off_leases(),
        }
    }

    /// Records a copy that serves no more and lets go of it: it unloads once its last call has finished,
    /// unless unloading is off.
    fn retire(&self, library: Arc<Library>) {
        let mut retired = lock(&self.retired);
        retired.retain(|copy| copy.held_bytes().is_some());
        retired.push(match self.unload {
            true => Retired::Draining(Arc::downgrade(&library)),
            false => Retired::Kept(library),
        });
    }

    /// Applies `[plugins] unload` to a copy just loaded.
    fn adopt(&self, plugin: &LoadedPlugin) {
        if !self.unload {
            plugin.library().keep_mapped();
        }
    }

    /// Brings every plugin directory up to date at once: new and changed libraries loaded, removed ones
    /// unloaded. Returns the events (which subscribers get too).
    pub async fn rescan(&self) -> Vec<PluginEvent> {
        let (files, _) = loader::discover(&self.dirs);
        let mut paths: Vec<PathBuf> = files;
        {
            let state = self.state.lock().await;
            let gone = state.serving.keys().filter(|file| {
                !paths.contains(file) && file.parent().is_some_and(|dir| self.dirs.iter().any(|d| d == dir))
            });
            paths.extend(gone.cloned().collect::<Vec<_>>());
        }
        let mut events = Vec::new();
        for path in paths {
            events.extend(self.apply(&path).await);
        }
        events
    }

    /// Brings one library file up to date: loaded, reloaded, unloaded, or left alone when its content is
    /// what serves already (or what failed last).
    pub async fn apply(&self, file: &Path) -> Vec<PluginEvent> {
        let mut state = self.state.lock().await;
        let events = self.apply_locked(&mut state, file).await;
        for event in &events {
            self.hub.emit(event);
        }
        events
    }

    async fn apply_locked(&self, state: &mut ReloadState, file: &Path) -> Vec<PluginEvent> {
        let failed = |reason: String| vec![PluginEvent::Failed { file: file.to_owned(), reason }];
        if !loader::is_library(file) {
            state.failed.remove(file);
            let Some(old) = state.serving.remove(file) else {
                return Vec::new();
            };
            let tools = match self.coordinator.send(Unregister(file.to_owned())).await {
                Ok(tools) => tools,
                Err(_) => return failed("the runtime is stopping".to_owned()),
            };
            self.retire(old.library);
            return vec![PluginEvent::Unloaded { file: file.to_owned(), tools }];
        }
        let hash = match loader::identity(file, Some(&self.policy)) {
            Ok(hash) => hash,
            Err(e) => return failed(format!("cannot read the library: {e}")),
        };
        if state.serving.get(file).is_some_and(|s| s.hash == hash || s.library.moved_and_same_as(file))
            || state.failed.get(file) == Some(&hash)
        {
            return Vec::new();
        }
        let plugin = match loader::load_read(file, Some(&self.policy)).0 {
            Ok(plugin) => plugin,
            Err(error) => {
                state.failed.insert(file.to_owned(), hash);
                let reason = match state.serving.contains_key(file) {
                    true => format!("{}; the previous version keeps serving", error.reason),
                    false => error.reason,
                };
                return failed(reason);
            }
        };
        self.install_locked(state, plugin).await
    }

    /// Registers a library loaded by someone else (a one-shot runtime's on-demand load) as [`Reloader::apply`]
    /// would have; the same content already serving is left alone.
    pub async fn install(&self, plugin: LoadedPlugin) -> Vec<PluginEvent> {
        let mut state = self.state.lock().await;
        let file = plugin.identity.file.clone();
        if state.serving.get(&file).is_some_and(|s| s.hash == plugin.identity.content_hash) {
            return Vec::new();
        }
        let events = self.install_locked(&mut state, plugin).await;
        for event in &events {
            self.hub.emit(event);
        }
        events
    }

    /// Swaps a loaded library in: its handlers constructed, then the coordinator asked.
    async fn install_locked(&self, state: &mut ReloadState, plugin: LoadedPlugin) -> Vec<PluginEvent> {
        let file = &plugin.identity.file.clone();
        let failed = |reason: String| vec![PluginEvent::Failed { file: file.to_owned(), reason }];
        self.adopt(&plugin);
        let hash = plugin.identity.content_hash.clone();
        let handlers = build_handlers(&plugin, &self.plugin_config);
        let swap = Swap { plugin: plugin.clone(), handlers };
        let report = match self.coordinator.send(swap).await {
            Ok(Ok(report)) => report,
            Ok(Err(reasons)) => {
                state.failed.insert(file.to_owned(), hash);
                self.retire(Arc::clone(plugin.library()));
                return failed(format!("not reloaded, the previous version keeps serving: {}", reasons.join("; ")));
            }
            Err(_) => return failed("the runtime is stopping".to_owned()),
        };
        state.failed.remove(file);
        let mut events = Vec::new();
        let mut tools = Vec::new();
        for event in report.events {
            match event {
                RegisterEvent::Registered { names, .. } => tools.extend(names),
                RegisterEvent::Refused { reason, .. } => {
                    events.push(PluginEvent::Failed { file: file.to_owned(), reason })
                }
                RegisterEvent::Declined { name, .. } => {
                    tracing::info!(tool = %name, file = %file.display(), "the plugin declined the tool")
                }
            }
        }
        tools.sort();
        let identity = &plugin.identity;
        let (name, version) = (identity.name.clone(), identity.version.clone());
        let library = Arc::clone(plugin.library());
        let previous = state.serving.insert(file.to_owned(), Serving { hash: hash.clone(), library });
        if let Some(old) = previous.filter(|_| report.replaced) {
            self.reloads.fetch_add(1, Ordering::Relaxed);
            self.retire(old.library);
            events.push(PluginEvent::Reloaded {
                file: file.to_owned(),
                plugin: name,
                version,
                hash,
                tools,
                removed: report.removed,
            });
        } else if !tools.is_empty() || events.is_empty() {
            events.push(PluginEvent::Loaded { file: file.to_owned(), plugin: name, version, hash, tools });
        }
        events
    }
}

/// Why watching could not start.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The file-system notification backend failed.
    #[error("cannot watch the plugin directories: {0}")]
    Notify(#[from] notify::Error),
    /// The watcher thread could not start.
    #[error("cannot start the plugin watcher: {0}")]
    Thread(#[from] std::io::Error),
}

enum WatchMsg {
    Fs(notify::Result<notify::Event>),
    Stop,
}

/// The watcher thread of one runtime; dropping it stops the thread.
pub(crate) struct Watcher {
    tx: crossbeam_channel::Sender<WatchMsg>,
    thread: Option<JoinHandle<()>>,
    /// Disconnects when the thread ends, so the drop waits for it without polling.
    ended: crossbeam_channel::Receiver<()>,
    _notify: notify::RecommendedWatcher,
}

impl Watcher {
    /// Watches the reloader's directories; a file is looked at once no event has touched it for `debounce`
    /// and its size and modification time have held still meanwhile, so a half-written file is never loaded.
    pub fn start(reloader: Arc<Reloader>, debounce: Duration) -> Result<Self, WatchError> {
        use notify::Watcher as _;
        let (tx, rx) = crossbeam_channel::unbounded();
        let events = tx.clone();
        let mut watcher = notify::recommended_watcher(move |event| {
            let _ = events.send(WatchMsg::Fs(event));
        })?;
        for dir in reloader.dirs() {
            if let Err(e) = watcher.watch(dir, notify::RecursiveMode::NonRecursive) {
                tracing::warn!(dir = %dir.display(), "not watching the plugin directory: {e}");
            }
        }
        let (ended_tx, ended) = crossbeam_channel::bounded::<()>(0);
        let thread = std::thread::Builder::new().name("toolshed-watch".to_owned()).spawn(move || {
            let _ended = ended_tx;
            watch_loop(&reloader, &rx, debounce)
        })?;
        Ok(Self { tx, thread: Some(thread), ended, _notify: watcher })
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.tx.send(WatchMsg::Stop);
        if let Some(thread) = self.thread.take() {
            // A change being applied finishes first (a load takes milliseconds); never wait for long.
            if let Err(crossbeam_channel::RecvTimeoutError::Disconnected) =
                self.ended.recv_timeout(Duration::from_secs(2))
            {
                let _ = thread.join();
            }
        }
    }
}

/// A file's size and modification time: what must hold still through the debounce.
fn fingerprint(path: &Path) -> Option<(u64, SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

struct Pending {
    due: Instant,
    seen: Option<(u64, SystemTime)>,
}

fn watch_loop(reloader: &Reloader, rx: &crossbeam_channel::Receiver<WatchMsg>, debounce: Duration) {
    let Ok(executor) = tokio::runtime::Builder::new_current_thread().build() else {
        tracing::error!("the plugin watcher cannot start its executor");
        return;
    };
    let mut pending: HashMap<PathBuf, Pending> = HashMap::new();
    loop {
        let wait = pending.values().map(|p| p.due.saturating_duration_since(Instant::now())).min();
        let message = match wait {
            Some(wait) => rx.recv_timeout(wait),
            None => rx.recv().map_err(|_| crossbeam_channel::RecvTimeoutError::Disconnected),
        };
        match message {
            Ok(WatchMsg::Fs(Ok(event))) => {
                if matches!(event.kind, notify::EventKind::Access(_)) {
                    continue;
                }
                for path in &event.paths {
                    if let Some(file) = library_in(reloader.dirs(), path) {
                        let seen = fingerprint(&file);
                        pending.insert(file, Pending { due: Instant::now() + debounce, seen });
                    }
                }
            }
            Ok(WatchMsg::Fs(Err(e))) => tracing::warn!("plugin watcher: {e}"),
            Ok(WatchMsg::Stop) | Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
        }
        let now = Instant::now();
        let due: Vec<PathBuf> = pending.iter().filter(|(_, p)| p.due <= now).map(|(f, _)| f.clone()).collect();
        for file in due {
            let seen = fingerprint(&file);
            match pending.get_mut(&file) {
                // Still changing without events (or written in place by mmap): wait another round.
                Some(entry) if entry.seen != seen => {
                    entry.seen = seen;
                    entry.due = now + debounce;
                }
                _ => {
                    pending.remove(&file);
                    executor.block_on(reloader.apply(&file));
                }
            }
        }
    }
}

/// The library file an event path names, spelled as discovery spells it (the watched directory joined with
/// the file name), or `None` for anything that is not a library of this platform.
fn library_in(dirs: &[PathBuf], path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
    let parent = path.parent()?;
    let is_library = Path::new(name).extension().is_some_and(|ext| ext == std::env::consts::DLL_EXTENSION);
    if !is_library || name.to_string_lossy().starts_with('.') {
        return None;
    }
    let dir = dirs.iter().find(|dir| {
        dir.as_path() == parent || dir.canonicalize().ok().zip(parent.canonicalize().ok()).is_some_and(|(a, b)| a == b)
    })?;
    Some(dir.join(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_print_one_line_each() {
        let event = PluginEvent::Reloaded {
            file: PathBuf::from("/p/libx.so"),
            plugin: "x".to_owned(),
            version: "0.1.0".to_owned(),
            hash: "0123456789abcdef0123456789abcdef".to_owned(),
            tools: vec!["a".to_owned(), "b".to_owned()],
            removed: vec![],
        };
        assert_eq!(
            event.to_string(),
            "reloaded /p/libx.so plugin=x version=0.1.0 hash=0123456789abcdef tools=a,b removed=-"
        );
        let failed = PluginEvent::Failed { file: PathBuf::from("/p/liby.so"), reason: "broken".to_owned() };
        assert_eq!(failed.to_string(), "failed /p/liby.so: broken");
        assert!(!failed.changes_tools() && event.changes_tools());
    }

    #[test]
    fn only_libraries_of_watched_directories_count() {
        let dir = tempfile::tempdir().unwrap();
        let dirs = vec![dir.path().to_owned()];
        let lib = format!("libx.{}", std::env::consts::DLL_EXTENSION);
        assert_eq!(library_in(&dirs, &dir.path().join(&lib)), Some(dir.path().join(&lib)));
        assert_eq!(library_in(&dirs, &dir.path().join("notes.txt")), None);
        assert_eq!(library_in(&dirs, &dir.path().join(format!(".{lib}"))), None);
        assert_eq!(library_in(&dirs, &dir.path().join("sub").join(&lib)), None);
    }

    #[test]
    fn every_subscriber_gets_every_event_in_order() {
        let hub = EventHub::default();
        let (mut a, mut b) = (hub.subscribe(), hub.subscribe());
        for reason in ["one", "two"] {
            hub.emit(&PluginEvent::Failed { file: PathBuf::from("f"), reason: reason.to_owned() });
        }
        assert_eq!(b.try_recv().map(|e| e.to_string()), Some("failed f: one".into()));
        let got: Vec<String> = std::iter::from_fn(|| a.try_recv()).map(|e| e.to_string()).collect();
        assert_eq!(got, vec!["failed f: one", "failed f: two"]);
        assert_eq!(b.recv_timeout(Duration::from_millis(10)).map(|e| e.to_string()), Some("failed f: two".into()));
        assert_eq!(b.recv_timeout(Duration::from_millis(10)), None);
    }
}
