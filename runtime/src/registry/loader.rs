//! Finds plugin libraries, loads each from a content-named shadow copy, checks its ABI, and reads its declarations.
//!
//! `abi_stable`'s `RootModule::load_from*` caches one module per root-module type, so every library is loaded
//! with `lib_header_from_raw_library` + `init_root_module` instead. A rebuilt file is loaded from a fresh shadow
//! path, because the dynamic loader hands back the already-mapped object for a path it has seen.
//!
//! Unloading: every value that points into a library (its root module, each handler it constructed) holds an
//! `Arc` of the [`Library`], dropped after the value itself; when the last one goes — a replaced version whose
//! calls have all finished — the library is closed. The host converts everything a plugin returns into its own
//! types at once, so nothing else points into it. Two things keep a closed library mapped, safely: a thread-local
//! destructor the plugin registered on a thread that is still alive (glibc defers the unmapping until it has
//! run), and a library built against another interface version, which is never closed (`abi_stable`'s global
//! layout map may keep a reference into a library whose interface has more fields than the host's).

mod lease;
mod placement;
mod segments;
mod shadow;

use crate::registry::index::FileStamp;
use abi_stable::library::{lib_header_from_raw_library, LibraryError, RawLibrary};
use abi_stable::std_types::{RResult, RStr};
pub use lease::moved as moved_off_leases;
use placement::{lease_poll_ms, load_in_place, placement, stamp_identity, InPlace, InPlaceLoad};
pub use shadow::shadow_dir;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use toolshed_plugin_api::{PluginDeclaration, PluginModRef, ToolHandlerBox, ABI_VERSION, API_VERSION};

/// Where a loaded plugin came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginIdentity {
    /// The library file in the plugin directory.
    pub file: PathBuf,
    /// The plugin's name.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// The plugin ABI version it was built against.
    pub api_version: String,
    /// What identifies the bytes loaded: xxh3-128 of them, hex; for a library loaded in place, the xxh3-128 of
    /// its file's stamp instead, after `fixed-` where it cannot change there (immutable, or on a read-only file
    /// system) and after `leased-` where a lease guards it (see [`identity`]).
    pub content_hash: String,
}

/// One mapped library copy, closed when the last value pointing into it is dropped (see the module docs).
pub struct Library {
    raw: Option<RawLibrary>,
    /// Closing is safe for this copy: it was built against exactly this host's interface version.
    closable: bool,
    /// Set by [`Library::keep_mapped`]: never close it.
    keep: AtomicBool,
    bytes: u64,
    /// The copy, open: its name is gone once mapped, and a child process that runs one of the plugin's jobs
    /// (`crate::services::isolate`) loads these same checked bytes from this descriptor rather than copying again.
    /// For a library loaded in place, its own file (which holds the lease of a leased one).
    file: Option<std::fs::File>,
    /// For a library mapped from its own file, which file and where.
    placed: Option<lease::Placed>,
    /// The read lease that guards a writable library mapped in place (`lease`).
    lease: Option<lease::Lease>,
}

impl Library {
    /// Never close this copy, even once nothing uses it (`[plugins] unload_replaced = false`).
    pub fn keep_mapped(&self) {
        self.keep.store(true, Ordering::Relaxed);
    }

    /// The size of the library file, in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Whether `file` now holds the very bytes this library was moved to when its lease was broken: a file
    /// rewritten in place with the same content gets a new stamp, so a new identity, and is not worth a reload.
    pub(crate) fn moved_and_same_as(&self, file: &Path) -> bool {
        let Some(moved) = self.lease.as_ref().and_then(lease::Lease::moved_hash) else {
            return false;
        };
        std::fs::File::open(file).and_then(|input| hash_copying(&input, None)).is_ok_and(|hash| hash == moved)
    }

    /// The open copy, for a child process to load (see [`load_inherited`]): for a leased library moved off its
    /// file, the private copy it now runs from, so a child loads the same bytes as this process.
    pub(crate) fn file(&self) -> Option<&std::fs::File> {
        // A child maps whatever it is handed, and shares this descriptor (and so the lease) with us: a leased
        // library moves to its private copy first, so a child runs the very bytes this process runs, and keeps
        // no lease alive.
        if self.lease.as_ref().is_some_and(lease::Lease::held) {
            lease::detach(self);
        }
        self.lease.as_ref().and_then(lease::Lease::copy).or(self.file.as_ref())
    }
}

impl fmt::Debug for Library {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Library").field("closable", &self.closable).field("bytes", &self.bytes).finish_non_exhaustive()
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        let Some(raw) = self.raw.take() else {
            return;
        };
        let leased = self.lease.as_ref().is_some_and(lease::Lease::held);
        let closing = self.closable && !self.keep.load(Ordering::Relaxed);
        // What keeps it mapped while it is dealt with below: its own handle when it is never closed; after a
        // close whose unmapping was deferred (a thread-local destructor it registered has not run), a
        // reference taken by name (see `lease::Placed::hold`), since any thread's `dlclose` may unmap it.
        let (kept, mut held) = if closing {
            // dlclose: the dynamic loader unmaps it now, or once that destructor has run.
            drop(raw);
            CLOSED_COPIES.fetch_add(1, Ordering::Relaxed);
            (None, self.placed.as_ref().and_then(lease::Placed::hold))
        } else {
            (Some(raw), None)
        };
        // Still mapped: it must not go on reading its file once the lease goes with the descriptor.
        if leased && (kept.is_some() || held.is_some()) {
            lease::detach(self);
            // The move failed: the lease must not go with this handle while the library is mapped.
            if self.lease.as_ref().is_some_and(lease::Lease::held)
                && let (Some(placed), Some(lease), Some(file)) =
                    (self.placed.take(), self.lease.take(), self.file.take())
            {
                lease::park(placed, lease, file, held.take());
            }
        }
        drop(held);
        // Counted as mapped from its file for as long as the dynamic loader may still know it by that file's
        // device and inode (see `load_copy`), so until it is seen unmapped: never, for one never closed.
        if let Some(placed) = &self.placed
            && closing
            && placed.hold().is_none()
        {
            placed.unmapped();
        }
        if closing {
            give_back_free_memory();
        }
        if let Some(raw) = kept {
            std::mem::forget(raw);
        }
    }
}

/// Returns the allocator's free pages to the system. An unloaded version's handlers, caches and buffers were
/// freed into glibc's per-thread arenas, which keep free memory for reuse; without this, a process that
/// reloads often sees its resident memory creep up while the heap in use stays flat (measured by the soak).
/// A reload is rare next to calls, so walking the arenas once per unload costs nothing that matters.
fn give_back_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it takes each arena's lock itself.
    unsafe {
        nix::libc::malloc_trim(0);
    }
}

/// A handler a plugin constructed, with the library its vtable points into (dropped after the handler).
pub struct PluginHandler {
    handler: ToolHandlerBox,
    origin: Arc<HandlerOrigin>,
    /// The handler lives in a child process: each phase is a round trip on a socket and may block, so it is
    /// never called on an async caller's thread.
    remote: bool,
}

/// Where a handler came from: enough for a child process to build the same handler again (`crate::services::isolate`).
#[derive(Debug)]
pub struct HandlerOrigin {
    /// The mapped copy the handler's vtable points into.
    pub library: Arc<Library>,
    /// The primary name it was built for.
    pub tool: String,
    /// The plugin configuration JSON it was built with.
    pub config: String,
}

impl PluginHandler {
    /// Where this handler came from.
    pub fn origin(&self) -> &Arc<HandlerOrigin> {
        &self.origin
    }

    /// Whether the handler runs in a child process (`[plugins] isolation = "process"`).
    pub fn out_of_process(&self) -> bool {
        self.remote
    }
}

impl std::ops::Deref for PluginHandler {
    type Target = ToolHandlerBox;

    fn deref(&self) -> &ToolHandlerBox {
        &self.handler
    }
}

/// A library loaded and checked, with its declarations read.
#[derive(Clone)]
pub struct LoadedPlugin {
    /// Where it came from.
    pub identity: Arc<PluginIdentity>,
    /// Its tools.
    pub declaration: PluginDeclaration,
    factory: Factory,
    library: Arc<Library>,
}

/// Where a plugin's handlers come from.
#[derive(Clone)]
enum Factory {
    /// The root module of a library mapped into this process.
    Module(PluginModRef),
    /// A child process that loaded the library (`crate::registry::remote`).
    Process(Arc<crate::registry::remote::Supervisor>),
}

impl fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedPlugin").field("identity", &self.identity).finish_non_exhaustive()
    }
}

impl LoadedPlugin {
    /// Asks the plugin's factory for the handler of `tool`; `Ok(None)` when the plugin declines it.
    pub fn new_handler(&self, tool: &str, config_json: &str) -> Result<Option<PluginHandler>, String> {
        let origin = || {
            Arc::new(HandlerOrigin {
                library: Arc::clone(&self.library),
                tool: tool.to_owned(),
                config: config_json.to_owned(),
            })
        };
        match &self.factory {
            Factory::Module(module) => {
                match (module.new_handler())(RStr::from_str(tool), RStr::from_str(config_json)) {
                    RResult::ROk(handler) => Ok(handler.into_option().map(|handler| PluginHandler {
                        handler,
                        origin: origin(),
                        remote: false,
                    })),
                    RResult::RErr(message) => Err(message.into_string()),
                }
            }
            Factory::Process(supervisor) => {
                Ok(crate::registry::remote::Supervisor::handler(supervisor, tool, config_json)?
                    .map(|handler| PluginHandler { handler, origin: origin(), remote: true }))
            }
        }
    }

    /// Whether the plugin runs in a child process.
    pub fn out_of_process(&self) -> bool {
        matches!(self.factory, Factory::Process(_))
    }

    /// The mapped copy this plugin was loaded from.
    pub fn library(&self) -> &Arc<Library> {
        &self.library
    }
}

/// Why a library could not be loaded: the file and one or two lines saying why and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {reason}", file.display())]
pub struct LoadError {
    /// The library file.
    pub file: PathBuf,
    /// Why, and what to do.
    pub reason: String,
}

impl LoadError {
    fn new(file: &Path, reason: impl Into<String>) -> Self {
        Self { file: file.to_owned(), reason: reason.into() }
    }
}

/// Lists the plugin libraries in `dirs`, sorted by file name within each directory.
///
/// A directory that does not exist gives a [`LoadError`] and the others are still listed.
pub fn discover(dirs: &[PathBuf]) -> (Vec<PathBuf>, Vec<LoadError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for dir in dirs {
        match std::fs::read_dir(dir) {
            Ok(entries) => {
                let mut found: Vec<PathBuf> =
                    entries.filter_map(|entry| entry.ok().map(|e| e.path())).filter(|path| is_library(path)).collect();
                found.sort();
                files.extend(found);
            }
            Err(e) => errors.push(LoadError::new(dir, format!("cannot read plugin directory: {e}"))),
        }
    }
    (files, errors)
}

/// Whether a path names a dynamic library of this platform.
pub fn is_library(path: &Path) -> bool {
    path.is_file() && path.extension().is_some_and(|ext| ext == std::env::consts::DLL_EXTENSION)
}

/// Numbers this process's shadow copies, so concurrent loads of one file never share a temporary name.
static NEXT_COPY: AtomicU64 = AtomicU64::new(0);

/// Library copies this process has opened and closed.
static OPENED_COPIES: AtomicU64 = AtomicU64::new(0);
static OPENED_BYTES: AtomicU64 = AtomicU64::new(0);
static CLOSED_COPIES: AtomicU64 = AtomicU64::new(0);

/// How many library copies this process has closed (unloaded).
pub fn closed() -> u64 {
    CLOSED_COPIES.load(Ordering::Relaxed)
}

/// How many plugin library copies are mapped in this process now, and their mapped size in bytes.
///
/// Read from `/proc/self/maps` where there is one, so a closed copy whose unmapping the dynamic loader
/// deferred still counts, with the libraries loaded in place (by inode: the path is theirs, not the shadow
/// directory's); elsewhere, every copy opened (an upper bound).
pub fn mapped() -> (u64, u64) {
    shadow::mapped_copies(&lease::placed_inodes())
        .unwrap_or_else(|| (OPENED_COPIES.load(Ordering::Relaxed), OPENED_BYTES.load(Ordering::Relaxed)))
}

/// The identity [`load_read`] gives a file ([`PluginIdentity::content_hash`]) under `policy`, without loading
/// it: the same decision, in place or copied, on the same checks.
pub fn identity(file: &Path, policy: Option<&Arc<crate::registry::remote::Policy>>) -> std::io::Result<String> {
    let input = std::fs::File::open(file)?;
    let meta = input.metadata()?;
    let remote = policy.is_some_and(|policy| policy.isolates(file));
    match placement(&input, &meta, remote, lease_poll_ms(policy)) {
        // Stamped after the attribute was read or the lease taken, as `load_in_place` does.
        Some(how) => {
            let identity = stamp_identity(how, &FileStamp::of(&input.metadata()?));
            if how == InPlace::Leased {
                lease::release(&input);
            }
            Ok(identity)
        }
        // Read, not mapped: the file may be any library, rewritten while it is read.
        None => hash_copying(&input, None),
    }
}

/// Loads one library: from the file itself where it cannot be overwritten in place (immutable, or on a read-only
/// file system), else from a content-named shadow copy; then open, check the ABI, read the declarations.
pub fn load(file: &Path) -> Result<LoadedPlugin, LoadError> {
    load_read(file, None).0
}

type Loaded = (Result<LoadedPlugin, LoadError>, Option<(FileStamp, String)>);

/// [`load`], with what the declaration index records of the bytes it read: the file's stamp when it was
/// opened and their content hash (`None` when they could not be read), whether or not the library loaded.
/// With a `policy` that isolates the file, the library is loaded in a child process instead of this one.
pub(crate) fn load_read(file: &Path, policy: Option<&Arc<crate::registry::remote::Policy>>) -> Loaded {
    let dir = match shadow_dir() {
        Ok(dir) => dir,
        Err(message) => return (Err(LoadError::new(file, message)), None),
    };
    let copy = NEXT_COPY.fetch_add(1, Ordering::Relaxed);
    let remote = policy.filter(|policy| policy.isolates(file));
    let opened = std::fs::File::open(file).and_then(|input| {
        let meta = input.metadata()?;
        Ok((input, meta))
    });
    let (input, meta) = match opened {
        Ok(opened) => opened,
        Err(e) => return (Err(LoadError::new(file, format!("cannot read the library: {e}"))), None),
    };
    let poll_ms = lease_poll_ms(policy);
    let in_place = placement(&input, &meta, remote.is_some(), poll_ms);
    let (loaded, read) = match in_place {
        Some(how) => load_in_place(file, dir, input, copy, remote, how, poll_ms),
        None => load_on_disk(file, dir, input, &meta, copy, remote, None),
    };
    if loaded.is_ok() {
        // One line per library opened, so a one-shot call's loads can be counted (`RUST_LOG=toolshed=debug`).
        tracing::debug!(file = %file.display(), ?in_place, "plugin library loaded");
    }
    (loaded, read)
}

/// Copies the library to a temporary name in the shadow directory while hashing it (one pass, bounded memory),
/// checks the copy, renames it to the content's name, and loads it from there. `identity` replaces the content
/// hash as the library's identity, for a file whose stamp stands for its bytes (see [`load_in_place`]).
fn load_on_disk(
    file: &Path,
    dir: &Path,
    input: std::fs::File,
    meta: &std::fs::Metadata,
    copy: u64,
    remote: Option<&Arc<crate::registry::remote::Policy>>,
    identity: Option<String>,
) -> Loaded {
    let partial = dir.join(format!("{copy}.partial"));
    // Hashed as it is written, so the hash is of exactly the bytes that will be loaded. (Copying in the kernel
    // and hashing through a mapping of the copy measured no faster, and the mapping made the whole library
    // resident in the process while it was hashed.)
    let copied = std::fs::File::options().read(true).write(true).create_new(true).open(&partial).and_then(|mut out| {
        let hash = hash_copying(&input, Some(&mut out))?;
        Ok(check_complete(&out, out.metadata()?.len()).map(|()| hash))
    });
    let hash = match copied {
        Ok(Ok(hash)) => hash,
        Ok(Err(reason)) => {
            let _ = std::fs::remove_file(&partial);
            return (Err(LoadError::new(file, reason)), None);
        }
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            let reason = format!("cannot copy to the shadow directory {}: {e}", dir.display());
            return (Err(LoadError::new(file, reason)), None);
        }
    };
    let hash = identity.unwrap_or(hash);
    let read = Some((FileStamp::of(meta), hash.clone()));
    (load_copy(file, dir, &partial, copy, hash, remote), read)
}

/// The shadow path of copy (or link) number `copy` of `file`, after `tag`: the content hash's first 16 digits
/// for a copy, so its mapping names its content. The copy number keeps two loads of the same content apart
/// (two runtimes starting at once): each removes its own name after opening it, which must not pull the file
/// from under the other.
fn shadow_name(dir: &Path, tag: &str, copy: u64, file: &Path) -> PathBuf {
    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    dir.join(format!("{tag}-{copy}-{stem}.{}", std::env::consts::DLL_EXTENSION))
}

/// The rest of [`load_on_disk`], once the bytes are copied to `partial`.
fn load_copy(
    file: &Path,
    dir: &Path,
    partial: &Path,
    copy: u64,
    hash: String,
    remote: Option<&Arc<crate::registry::remote::Policy>>,
) -> Result<LoadedPlugin, LoadError> {
    let mut shadow = shadow_name(dir, &hash[..16], copy, file);
    std::fs::rename(partial, &shadow)
        .map_err(|e| LoadError::new(file, format!("cannot write shadow copy {}: {e}", shadow.display())))?;
    // Opened again, read-only: the `Library` keeps this descriptor, and a child process that loads the plugin
    // inherits it (the one the copy was written through could write it).
    // A library moved off its own file (`lease`) that the dynamic loader still holds is known to it by that
    // file's device and inode, which nothing keeps in use any more: it would hand that library back for a copy
    // given the same inode number. Such a copy is copied again while it is held open, so the next copy gets
    // another number.
    let mut taken = Vec::new();
    let opened = loop {
        let (meta, copy) = match std::fs::File::open(&shadow).and_then(|copy| Ok((copy.metadata()?, copy))) {
            Ok(opened) => opened,
            Err(e) => break Err(e),
        };
        if !lease::placed(placement::file_id(&meta)) {
            break Ok((meta, copy));
        }
        if taken.len() >= 8 {
            break Err(std::io::Error::other("every copy got the inode number of a library still loaded"));
        }
        let next = shadow_name(dir, &hash[..16], NEXT_COPY.fetch_add(1, Ordering::Relaxed), file);
        let copied = std::fs::copy(&shadow, &next);
        let _ = std::fs::remove_file(&shadow);
        shadow = next;
        if let Err(e) = copied {
            break Err(e);
        }
        taken.push(copy);
    };
    drop(taken);
    let loaded = opened
        .map_err(|e| LoadError::new(file, format!("cannot open the shadow copy: {e}")))
        .and_then(|(meta, copy)| load_checked(file, &shadow, copy, meta.len(), hash, remote, None));
    // The mapping outlives the name; removing the copy now leaves nothing behind in the temp directory.
    let _ = std::fs::remove_file(&shadow);
    loaded
}

/// Loads a checked library: `path` names it for the dynamic loader and `copy` is it, open (kept by the
/// [`Library`], so a child process can load the same bytes). With `remote`, a child process loads it instead of
/// this one. `in_place` says which file a library mapped from its own file is, and how its lease, if any, is
/// kept.
fn load_checked(
    file: &Path,
    path: &Path,
    copy: std::fs::File,
    bytes: u64,
    hash: String,
    remote: Option<&Arc<crate::registry::remote::Policy>>,
    in_place: Option<InPlaceLoad>,
) -> Result<LoadedPlugin, LoadError> {
    let Some(policy) = remote else {
        let (module, library) = open(file, path, bytes, Some(copy), in_place)?;
        return finish(file, hash, module, library);
    };
    // Out of process: this process never maps the library (its constructors run in the child); the child
    // loads the checked bytes from an open descriptor and says what it declares.
    let library = Arc::new(Library {
        raw: None,
        closable: false,
        keep: AtomicBool::new(false),
        bytes,
        file: Some(copy),
        placed: None,
        lease: None,
    });
    let (supervisor, hello) = crate::registry::remote::Supervisor::start(policy, file, Arc::clone(&library))
        .map_err(|reason| LoadError::new(file, reason))?;
    let declaration = serde_json::from_str::<PluginDeclaration>(&hello.declarations)
        .map_err(|e| LoadError::new(file, format!("unreadable tool declarations: {e}")))?;
    let identity = PluginIdentity {
        file: file.to_owned(),
        name: hello.name,
        version: hello.version,
        api_version: hello.api_version,
        content_hash: hash,
    };
    Ok(LoadedPlugin { identity: Arc::new(identity), declaration, factory: Factory::Process(supervisor), library })
}

/// Loads, in a child process, the copy a parent handed down as an open descriptor
/// ([`Library::file`]): the bytes the parent checked, with the same ABI checks and no copy.
pub(crate) fn load_inherited(fd: &Path) -> Result<LoadedPlugin, LoadError> {
    let bytes = std::fs::metadata(fd).map(|m| m.len()).unwrap_or(0);
    let (module, library) = open(fd, fd, bytes, None, None)?;
    finish(fd, String::new(), module, library)
}

/// The checks after opening: the interface version, then the declarations.
fn finish(file: &Path, hash: String, module: PluginModRef, library: Arc<Library>) -> Result<LoadedPlugin, LoadError> {
    let api_version = module.api_version().as_str().to_owned();
    if !api_compatible(&api_version, ABI_VERSION) {
        return Err(LoadError::new(
            file,
            format!(
                "built for plugin ABI {api_version}, this host uses ABI {ABI_VERSION}; rebuild the plugin against toolshed-plugin-api {API_VERSION}"
            ),
        ));
    }
    let declaration = match (module.declarations())() {
        RResult::ROk(json) => serde_json::from_str::<PluginDeclaration>(json.as_str())
            .map_err(|e| LoadError::new(file, format!("unreadable tool declarations: {e}")))?,
        RResult::RErr(message) => {
            return Err(LoadError::new(file, format!("declaring its tools failed: {}", message.as_str())))
        }
    };
    let identity = PluginIdentity {
        file: file.to_owned(),
        name: module.name().as_str().to_owned(),
        version: module.version().as_str().to_owned(),
        api_version,
        content_hash: hash,
    };
    Ok(LoadedPlugin { identity: Arc::new(identity), declaration, factory: Factory::Module(module), library })
}

/// Reads `input` from its start to its end with positioned reads (its offset is left alone, so a descriptor
/// shared with another reader is safe), copying the bytes to `output` when given, and returns their xxh3-128,
/// hex. The caller takes the file's stamp from the same descriptor first: a change while it is read changes its
/// change time, so the stamp never vouches for other bytes.
fn hash_copying(input: &std::fs::File, mut output: Option<&mut std::fs::File>) -> std::io::Result<String> {
    use std::io::Write as _;
    use std::os::unix::fs::FileExt as _;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut at = 0u64;
    loop {
        let n = match input.read_at(&mut buf, at) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        at += n as u64;
        hasher.update(&buf[..n]);
        if let Some(output) = output.as_deref_mut() {
            output.write_all(&buf[..n])?;
        }
    }
    Ok(format!("{:032x}", hasher.digest128()))
}

/// Checks that an ELF file holds every segment and the section header table its header promises (the table
/// is written last, so a file cut anywhere fails this). Other formats pass through to the dynamic loader.
fn check_complete(file: &std::fs::File, len: u64) -> Result<(), String> {
    use std::os::unix::fs::FileExt as _;
    let cut = |needed: u64| {
        format!(
            "the file is cut short ({len} bytes, its ELF header needs {needed}); was it still being written? Copy the complete library again"
        )
    };
    let mut header = [0u8; 64];
    if file.read_exact_at(&mut header, 0).is_err() || &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        // Not a little-endian ELF64 file: the dynamic loader's own error says what it is.
        return Ok(());
    }
    let u16_at = |b: &[u8], at: usize| u64::from(u16::from_le_bytes([b[at], b[at + 1]]));
    let u64_at = |b: &[u8], at: usize| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&b[at..at + 8]);
        u64::from_le_bytes(word)
    };
    let (phoff, shoff) = (u64_at(&header, 0x20), u64_at(&header, 0x28));
    let (phentsize, phnum) = (u16_at(&header, 0x36), u16_at(&header, 0x38));
    let (shentsize, shnum) = (u16_at(&header, 0x3a), u16_at(&header, 0x3c));
    let mut needed = phoff.saturating_add(phentsize * phnum);
    if shoff != 0 {
        needed = needed.max(shoff.saturating_add(shentsize * shnum));
    }
    if needed > len {
        return Err(cut(needed));
    }
    if phentsize >= 40 {
        let mut table = vec![0u8; (phentsize * phnum) as usize];
        file.read_exact_at(&mut table, phoff).map_err(|_| cut(needed))?;
        for entry in table.chunks_exact(phentsize as usize) {
            // PT_LOAD: its file bytes must all be there.
            if u32::from_le_bytes([entry[0], entry[1], entry[2], entry[3]]) == 1 {
                let end = u64_at(entry, 8).saturating_add(u64_at(entry, 32));
                if end > len {
                    return Err(cut(end));
                }
            }
        }
    }
    Ok(())
}

/// Opens the copy and checks its ABI. The library is closed again when the checks fail, except after its
/// root module's constructor ran: what that constructor registered (a panic hook, thread-locals) may point
/// into it, and a library that failed its checks is not worth the risk.
fn open(
    file: &Path,
    shadow: &Path,
    bytes: u64,
    open_copy: Option<std::fs::File>,
    in_place: Option<InPlaceLoad>,
) -> Result<(PluginModRef, Arc<Library>), LoadError> {
    let raw = RawLibrary::load_at(shadow).map_err(|e| LoadError::new(file, describe(&e)))?;
    OPENED_COPIES.fetch_add(1, Ordering::Relaxed);
    OPENED_BYTES.fetch_add(bytes, Ordering::Relaxed);
    // SAFETY: the header points into the library; it is used only here and through the root module, which
    // `LoadedPlugin` keeps beside the `Arc<Library>` that keeps the library open.
    let header = unsafe { lib_header_from_raw_library(&raw) }.map_err(|e| {
        CLOSED_COPIES.fetch_add(1, Ordering::Relaxed);
        LoadError::new(file, describe(&e))
    })?;
    // Found again by this address if the lease must move it (`lease`).
    let placed =
        in_place.as_ref().map(|in_place| lease::Placed::new(in_place.file, std::ptr::from_ref(header) as usize));
    let lease = match placed.as_ref().zip(in_place.and_then(|in_place| in_place.lease)) {
        Some((placed, leased)) => {
            match lease::Lease::new(placed, shadow, leased.changed, leased.poll_ms, leased.identity) {
                Ok(lease) => Some(lease),
                Err(e) => {
                    // Its data pages still read the file, which a truncate would pull from under them: not used.
                    // Nothing of it has run but its constructors, as when its header is refused above.
                    drop(raw);
                    CLOSED_COPIES.fetch_add(1, Ordering::Relaxed);
                    if placed.hold().is_none() {
                        placed.unmapped();
                    }
                    let reason =
                        format!("cannot map the library in place ({e}); `[plugins] lease_poll_ms = 0` copies it");
                    return Err(LoadError::new(file, reason));
                }
            }
        }
        None => None,
    };
    let module = match header.init_root_module::<PluginModRef>() {
        Ok(module) => module,
        Err(e) => {
            // Never closed; dropped as a library that is not closable, which moves a leased one off its file.
            let library = Library {
                raw: Some(raw),
                closable: false,
                keep: AtomicBool::new(true),
                bytes,
                file: open_copy,
                placed,
                lease,
            };
            drop(library);
            return Err(LoadError::new(file, describe(&e)));
        }
    };
    let closable = module.api_version().as_str() == ABI_VERSION;
    let library = Arc::new(Library {
        raw: Some(raw),
        closable,
        keep: AtomicBool::new(false),
        bytes,
        file: open_copy,
        placed,
        lease,
    });
    if library.lease.is_some() {
        lease::watch(&library);
    }
    Ok((module, library))
}

/// Turns an `abi_stable` error (whose layout dumps run to 15 KB) into one or two lines and what to do.
fn describe(error: &LibraryError) -> String {
    let rebuild = format!("rebuild the plugin against toolshed-plugin-api {API_VERSION}");
    match error {
        LibraryError::OpenError { err, .. } => {
            format!("not a loadable library ({}); is it a Toolshed plugin built for this platform?", one_line(&err.to_string()))
        }
        LibraryError::GetSymbolError { .. } => {
            "not a Toolshed plugin: it exports no abi_stable root module (use toolshed_plugin_api::export_plugin!)".to_owned()
        }
        LibraryError::IncompatibleVersionNumber { library_name, expected_version, actual_version } => format!(
            "incompatible interface version: {library_name} {actual_version} in the plugin, {expected_version} expected; {rebuild}"
        ),
        LibraryError::AbiInstability(_) => {
            let errors = layout_errors(&error.to_string());
            let detail = if errors.is_empty() { "layout differs".to_owned() } else { errors.join("; ") };
            format!("incompatible plugin interface layout ({}); {rebuild}", one_line(&detail))
        }
        LibraryError::RootModule { err, .. } => format!("its root module failed to initialise: {}", one_line(&err.to_string())),
        other => format!("{}; {rebuild}", one_line(&other.to_string())),
    }
}

/// The distinct `Error:` lines of a layout report (at most two), each with its `Expected:`/`Found:` values.
fn layout_errors(report: &str) -> Vec<String> {
    let lines: Vec<&str> = report.lines().map(str::trim).collect();
    let mut errors: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(message) = line.strip_prefix("Error:") else {
            continue;
        };
        let mut error = message.trim().to_owned();
        if let ["Expected:", expected, "Found:", found, ..] = lines.get(i + 1..).unwrap_or_default() {
            error.push_str(&format!(": expected {expected}, found {found}"));
        }
        if !errors.contains(&error) {
            errors.push(error);
        }
        if errors.len() == 2 {
            break;
        }
    }
    errors
}

fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() > 300 {
        joined.chars().take(300).chain("…".chars()).collect()
    } else {
        joined
    }
}

/// Whether a plugin built against interface version `plugin` works with this host's `host` version:
/// same major version, or for 0.x the same minor.
fn api_compatible(plugin: &str, host: &str) -> bool {
    fn key(v: &str) -> Option<(u64, u64)> {
        let mut parts = v.split(['.', '-', '+']).map(str::parse::<u64>);
        let major = parts.next()?.ok()?;
        let minor = parts.next()?.ok()?;
        Some((major, minor))
    }
    match (key(plugin), key(host)) {
        (Some((0, pm)), Some((0, hm))) => pm == hm,
        (Some((pmaj, _)), Some((hmaj, _))) => pmaj == hmaj,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_versions() {
        assert!(api_compatible("0.1.0", "0.1.3"));
        assert!(!api_compatible("0.2.0", "0.1.0"));
        assert!(api_compatible("1.4.0", "1.0.0"));
        assert!(!api_compatible("1.0.0", "0.1.0"));
        assert!(!api_compatible("garbage", "0.1.0"));
    }

    #[test]
    fn layout_reports_shrink_to_their_error_lines() {
        let report = "Error:incompatible package versions\nExpected:\n    0.1.0\nFound:\n    0.2.0\n0 error(s)inside:\n...\nError:incompatible package versions\nExpected:\n 0.1.0\nFound:\n 0.2.0\nError:incompatible type size\n";
        assert_eq!(
            layout_errors(report),
            vec!["incompatible package versions: expected 0.1.0, found 0.2.0", "incompatible type size"]
        );
    }

    #[test]
    fn a_library_cut_short_is_refused_before_it_is_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let exe = std::fs::read("/proc/self/exe").unwrap();
        let file = dir.path().join(format!("libcut.{}", std::env::consts::DLL_EXTENSION));
        for len in [exe.len() - 1, exe.len() / 2, 4096] {
            std::fs::write(&file, &exe[..len]).unwrap();
            let err = load(&file).unwrap_err();
            assert!(err.reason.starts_with(&format!("the file is cut short ({len} bytes")), "{}", err.reason);
        }
    }

    #[test]
    fn corrupt_file_is_a_clean_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("libjunk.so");
        std::fs::write(&file, b"\x7fELF this is not really a library").unwrap();
        let err = load(&file).unwrap_err();
        assert_eq!(err.file, file);
        assert!(err.reason.starts_with("not a loadable library"), "{}", err.reason);
        assert!(!err.reason.contains('\n'));
    }

    #[test]
    fn discovery_lists_libraries_and_reports_missing_dirs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(format!("libb.{}", std::env::consts::DLL_EXTENSION)), b"").unwrap();
        std::fs::write(dir.path().join(format!("liba.{}", std::env::consts::DLL_EXTENSION)), b"").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"").unwrap();
        let missing = dir.path().join("missing");
        let (files, errors) = discover(&[dir.path().to_owned(), missing.clone()]);
        let names: Vec<_> = files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(
            names,
            vec![
                format!("liba.{}", std::env::consts::DLL_EXTENSION),
                format!("libb.{}", std::env::consts::DLL_EXTENSION)
            ]
        );
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].file, missing);
    }
}
