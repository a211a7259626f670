//! One-shot runtimes (`RuntimeBuilder::only_tools`): the start loads only the libraries that declare the tools
//! asked for, found through the declaration index (`registry::index`), and a call that reaches a tool not
//! loaded yet (attempt_completion's command, a native `{server}__mcp__{tool}` name, a subagent's tools) loads
//! the library declaring it then, through the same index.
//!
//! The index only picks the file to open. The library loaded must have the content hash the index gave and
//! declare the name it was opened for; on any mismatch, a miss or an unusable index, the runtime loads every
//! library (the start as a full start does, in discovery order), and the index is rewritten from what the
//! libraries themselves declared.

use crate::registry::index::{self, Declarations, Index};
use crate::registry::loader::{self, LoadError, LoadedPlugin};
use crate::registry::remote::Policy;
use crate::registry::watch::Reloader;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Which libraries a start loads.
#[derive(Debug, Clone)]
pub(crate) enum LoadSet {
    /// Every library of the plugin directories (and the files given).
    All,
    /// Those declaring these names, through the index at this path (`None`: no index, so everything); the
    /// rest on demand.
    Declaring { names: Vec<String>, index: Option<PathBuf> },
}

/// What a start loaded.
pub(crate) struct FirstLoad {
    /// The libraries loaded, in discovery order (the coordinator registers them in this order).
    pub plugins: Vec<LoadedPlugin>,
    pub errors: Vec<LoadError>,
    /// What is left to load on demand; `None` once everything is loaded.
    pub pending: Option<Pending>,
}

/// The state of the libraries not loaded yet.
pub(crate) struct Pending {
    declarations: Declarations,
    index: Index,
    index_path: Option<PathBuf>,
    /// Files opened by this runtime (loaded or failed).
    opened: HashSet<PathBuf>,
    /// Whether every file has been opened.
    everything: bool,
    /// Whether the index learned something since it was read.
    changed: bool,
    /// Which libraries run out of process.
    policy: Arc<Policy>,
}

/// Loads what `set` asks for from `files` (in discovery order). `blocked` is why the index may not choose
/// (`[plugins] overrides` let one library take another's names: only the whole load order decides).
pub(crate) fn first_load(files: &[PathBuf], set: &LoadSet, blocked: Option<&str>, policy: &Arc<Policy>) -> FirstLoad {
    let LoadSet::Declaring { names, index: index_path } = set else {
        let mut pending = Pending::new(Declarations::default(), Index::default(), None, policy);
        let (plugins, errors) = pending.load_all(files, Vec::new());
        return FirstLoad { plugins, errors, pending: None };
    };
    let (index, usable) = match index_path.as_deref().map(Index::read) {
        Some(Ok(index)) => (index, true),
        Some(Err(why)) => {
            tracing::debug!("declaration index not used: {why}");
            (Index::default(), false)
        }
        None => (Index::default(), false),
    };
    let declarations = match (usable, blocked) {
        (true, None) => index::plan(&index, files),
        (true, Some(why)) => Err(why.to_owned()),
        (false, _) => Err("no usable index".to_owned()),
    };
    let mut pending = Pending::new(Declarations::default(), index, index_path.clone(), policy);
    pending.changed = !usable;
    let declarations = match declarations {
        Ok(declarations) => declarations,
        Err(why) => {
            tracing::debug!("loading every plugin library: {why}");
            let (plugins, errors) = pending.load_all(files, Vec::new());
            pending.save();
            return FirstLoad { plugins, errors, pending: None };
        }
    };
    let mut targets: Vec<&Path> = names.iter().filter_map(|name| declarations.file_of(name)).collect();
    targets.sort_by_key(|file| files.iter().position(|f| f == file));
    targets.dedup();
    if targets.is_empty() {
        // No library declares the name: a name route's (`{server}__mcp__{tool}`) or an unknown tool, whose
        // error lists every tool.
        tracing::debug!("loading every plugin library: no library declares {names:?}");
        let (plugins, errors) = pending.load_all(files, Vec::new());
        pending.save();
        return FirstLoad { plugins, errors, pending: None };
    }
    let targets: Vec<PathBuf> = targets.into_iter().map(Path::to_owned).collect();
    pending.declarations = declarations;
    let mut plugins = Vec::new();
    let mut errors = Vec::new();
    let mut verified = true;
    for file in &targets {
        let wanted: Vec<&String> =
            names.iter().filter(|name| pending.declarations.file_of(name) == Some(file)).collect();
        match pending.open(file) {
            Ok(plugin) => {
                verified &= pending.verify(&plugin, &wanted);
                plugins.push(plugin);
            }
            Err(error) => {
                verified = false;
                errors.push(error);
            }
        }
    }
    if verified {
        return FirstLoad { plugins, errors, pending: Some(pending) };
    }
    let (plugins, mut more) = pending.load_all(files, plugins);
    errors.append(&mut more);
    pending.save();
    FirstLoad { plugins, errors, pending: None }
}

impl Pending {
    fn new(declarations: Declarations, index: Index, index_path: Option<PathBuf>, policy: &Arc<Policy>) -> Self {
        let policy = Arc::clone(policy);
        Self { declarations, index, index_path, opened: HashSet::new(), everything: false, changed: false, policy }
    }

    /// Loads one file, recording in the index what it turned out to be.
    fn open(&mut self, file: &Path) -> Result<LoadedPlugin, LoadError> {
        self.opened.insert(file.to_owned());
        let (loaded, read) = loader::load_read(file, Some(&self.policy));
        self.learn(file, &loaded, read);
        loaded
    }

    fn learn(
        &mut self,
        file: &Path,
        loaded: &Result<LoadedPlugin, LoadError>,
        read: Option<(index::FileStamp, String)>,
    ) {
        let Some((stamp, hash)) = read else {
            return;
        };
        if self.index_path.is_some() {
            let known = self.index.hash_of(file, &stamp).is_some_and(|known| known == hash);
            self.changed |= !known;
            self.index.record(file, stamp, &hash, loaded.as_ref().ok().map(|plugin| &plugin.declaration));
        }
    }

    /// Whether a library opened for `wanted` is what the index said: the same content hash, and its own
    /// declarations name every one of them and exactly the names the index planned for it.
    fn verify(&self, plugin: &LoadedPlugin, wanted: &[&String]) -> bool {
        let file = &plugin.identity.file;
        let expected = self.declarations.hash_of(file);
        if expected != Some(plugin.identity.content_hash.as_str()) {
            tracing::debug!(file = %file.display(), "the declaration index is stale: the library changed");
            return false;
        }
        let declares = |name: &String| {
            plugin
                .declaration
                .tools
                .iter()
                .any(|tool| tool.name == *name || tool.aliases.iter().any(|alias| alias.name == *name))
        };
        if !wanted.iter().all(|name| declares(name)) {
            tracing::debug!(file = %file.display(), "the declaration index is wrong: the library does not declare {wanted:?}");
            return false;
        }
        // A name the index did not plan would register from this library without the others being asked.
        if !self.declarations.declares_exactly(file, &plugin.declaration) {
            tracing::debug!(file = %file.display(), "the library declares other names than the index says");
            return false;
        }
        true
    }

    /// Loads every file not opened yet; the plugins in discovery order, with those already loaded.
    fn load_all(&mut self, files: &[PathBuf], mut loaded: Vec<LoadedPlugin>) -> (Vec<LoadedPlugin>, Vec<LoadError>) {
        self.everything = true;
        let mut errors = Vec::new();
        for file in files {
            if self.opened.contains(file) {
                continue;
            }
            match self.open(file) {
                Ok(plugin) => loaded.push(plugin),
                Err(error) => {
                    tracing::info!("{error}");
                    errors.push(error);
                }
            }
        }
        loaded.sort_by_key(|plugin| files.iter().position(|f| *f == plugin.identity.file));
        (loaded, errors)
    }

    /// Writes the index when it learned something (a failure only costs the next call its fast path).
    fn save(&mut self) {
        let Some(path) = self.index_path.as_deref().filter(|_| self.changed) else {
            return;
        };
        match self.index.write(path) {
            Ok(()) => self.changed = false,
            Err(e) => tracing::debug!("cannot write the declaration index {}: {e}", path.display()),
        }
    }
}

/// Loads the rest of a one-shot runtime's libraries when its calls need them.
pub(crate) struct OnDemand {
    reloader: Arc<Reloader>,
    pending: tokio::sync::Mutex<Pending>,
}

impl OnDemand {
    pub fn new(pending: Pending, reloader: Arc<Reloader>) -> Self {
        Self { reloader, pending: tokio::sync::Mutex::new(pending) }
    }

    /// Loads the library that declares `name`, unless it was opened already; whether one was loaded. A library
    /// that is not what the index said loads everything.
    pub async fn load_declaring(&self, name: &str) -> bool {
        let mut pending = self.pending.lock().await;
        if pending.everything {
            return false;
        }
        let Some(file) = pending.declarations.file_of(name).map(Path::to_owned) else {
            return false;
        };
        if pending.opened.contains(&file) {
            return false;
        }
        pending.opened.insert(file.clone());
        let (loaded, read) = load_off_thread(file.clone(), Arc::clone(&pending.policy)).await;
        pending.learn(&file, &loaded, read);
        let verified = match &loaded {
            Ok(plugin) => pending.verify(plugin, &[&name.to_owned()]),
            Err(error) => {
                tracing::warn!("{error}");
                false
            }
        };
        if let Ok(plugin) = loaded {
            // The library's own declarations decide what registers, whatever the index said.
            self.reloader.install(plugin).await;
        }
        if !verified {
            self.everything(&mut pending).await;
        }
        true
    }

    /// Loads every library not loaded yet (before a call is answered that its tool does not exist, which names
    /// every tool); whether there were any.
    pub async fn load_everything(&self) -> bool {
        let mut pending = self.pending.lock().await;
        if pending.everything {
            return false;
        }
        self.everything(&mut pending).await;
        true
    }

    async fn everything(&self, pending: &mut Pending) {
        pending.everything = true;
        for file in pending.declarations.files().to_vec() {
            if !pending.opened.insert(file.clone()) {
                continue;
            }
            let (loaded, read) = load_off_thread(file.clone(), Arc::clone(&pending.policy)).await;
            pending.learn(&file, &loaded, read);
            match loaded {
                Ok(plugin) => {
                    self.reloader.install(plugin).await;
                }
                Err(error) => tracing::warn!("{error}"),
            }
        }
        if let Some(path) = pending.index_path.clone().filter(|_| pending.changed) {
            let index = pending.index.clone();
            match off_thread(move || index.write(&path)).await {
                Some(Ok(())) => pending.changed = false,
                Some(Err(e)) => tracing::debug!("cannot write the declaration index: {e}"),
                None => {}
            }
        }
    }
}

/// [`loader::load_read`] of `file` on a thread of its own.
async fn load_off_thread(
    file: PathBuf,
    policy: Arc<Policy>,
) -> (Result<LoadedPlugin, LoadError>, Option<(index::FileStamp, String)>) {
    let failed = LoadError { file: file.clone(), reason: "cannot start a thread to load it".to_owned() };
    off_thread(move || loader::load_read(&file, Some(&policy))).await.unwrap_or((Err(failed), None))
}

/// Runs blocking work (copying and mapping a library, writing the index) on a thread of its own, so the
/// executor awaiting it, whichever it is, keeps running.
async fn off_thread<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("toolshed-load".to_owned())
        .spawn(move || {
            let _ = tx.send(work());
        })
        .ok()?;
    rx.await.ok()
}
