//! Writable libraries mapped as they are, under a read lease: no copy when they load, and a private copy made
//! only if someone opens the file to write it.
//!
//! A library mapped from a file that is then overwritten in place (`cp` over it, an editor saving in place, a
//! truncate) runs whatever the file holds next, and the host crashes. A copy made at every load rules that out
//! but costs more than the load itself (README, Performance, rows 5.x). A read lease (`F_SETLEASE`) rules it
//! out too, for free until it matters: while the lease is held, the kernel makes every open of the file for
//! writing, and every truncate, wait (up to `/proc/sys/fs/lease-break-time`) until the holder gives the lease
//! up, and the lease cannot be taken at all while anyone has the file open for writing. Nothing can change the
//! bytes under the mapping without going through that wait.
//!
//! Two moves keep the file from backing any page the library uses once a writer gets through:
//! - At load ([`Lease::new`]), right after the dynamic loader mapped and relocated it and before any other
//!   thread can reach it, the pages it writes from then on (data, the lazily bound GOT) become anonymous memory
//!   with the same bytes. Private pages are not enough: truncating a file unmaps even the private copies of its
//!   pages from every mapping (the kernel's `truncate_pagecache`), and the next access is SIGBUS. Later, with
//!   other threads writing them, they could not be moved without losing a write.
//! - When a lease is being broken ([`watch`] polls them), the RELRO pages (read-only since relocation) are moved
//!   to anonymous memory the same way, and the never-written segments (code, read-only data) are mapped again,
//!   at the same addresses, from a private copy of the same bytes in the shadow directory, which the waiting
//!   writer has not touched yet ([`detach`]). Only then is the lease given up and the writer let through; the
//!   watcher then sees a changed file and reloads it as ever. The library's code keeps running throughout: the
//!   new pages hold the same bytes, and the kernel swaps a mapping under its lock.
//!
//! A library is leased only where all of that holds: leases enabled with a break time far above the poll
//! interval, a local file system (a server or an overlay's lower layer can change a file without breaking a
//! lease), and an ELF file without text relocations (whose code pages differ from the file's). Anything else
//! is copied as before.

use super::segments::{loaded_object, mapped_range, privatize, LinkMap, Written};
use super::Library;
use std::fs::File;
use std::os::fd::AsRawFd as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

/// `F_SETSIG` of `<fcntl.h>`: the signal sent when the lease is being broken.
const F_SETSIG: libc::c_int = 10;

/// `[plugins] lease_poll_ms`'s default, for a load outside a runtime (`load`).
pub(super) use crate::config::DEFAULT_LEASE_POLL_MS as DEFAULT_POLL_MS;

/// A library mapped from its own file (fixed or leased): which file, and how to find the mapping again.
pub(super) struct Placed {
    /// The file's device and inode. The dynamic loader knows a loaded file by them as well as by name, and
    /// hands back the mapping it has for any other name of the same file: a file rewritten in place while an
    /// earlier version of it is still mapped must not be opened again ([`placed`]).
    file: (u64, u64),
    /// An address inside the library (its root module's header) and the name the dynamic loader knows it by:
    /// together they find its segments among the loaded objects, and never another library's that was mapped
    /// at the same address after this one was closed.
    inside: usize,
    name: Vec<u8>,
}

/// The names the dynamic loader knows the libraries mapped from each file (device, inode) by.
type PlacedFiles = std::collections::BTreeMap<(u64, u64), Vec<Vec<u8>>>;

/// The libraries mapped from their own files that may still be loaded.
static PLACED: Mutex<PlacedFiles> = Mutex::new(std::collections::BTreeMap::new());

fn placed_files() -> std::sync::MutexGuard<'static, PlacedFiles> {
    PLACED.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether a library mapped from `file` (device, inode) is still loaded in this process. A closed library whose
/// unmapping was deferred stays listed when it closes, so each listed one is asked of the dynamic loader here:
/// once it is gone, its inode number may belong to another file, which must then not count as mapped.
pub(super) fn placed(file: (u64, u64)) -> bool {
    // Closed after the lock is let go: the last close of a library whose unmapping was deferred runs its
    // destructors and unmaps it, which is no work to do under this lock.
    let mut references = Vec::new();
    let mut placed = placed_files();
    let Some(names) = placed.get_mut(&file) else {
        return false;
    };
    names.retain(|name| {
        let held = still_loaded(name);
        let loaded = held.is_some();
        references.extend(held);
        loaded
    });
    let any = !names.is_empty();
    if !any {
        placed.remove(&file);
    }
    drop(placed);
    drop(references);
    any
}

/// The inodes of the files libraries are mapped from now.
pub(super) fn placed_inodes() -> std::collections::BTreeSet<u64> {
    placed_files().keys().map(|(_, inode)| *inode).collect()
}

/// A reference of our own to the library the dynamic loader knows by `name`, if it still holds one: asked with
/// `RTLD_NOLOAD`, which reads nothing of the library.
fn still_loaded(name: &[u8]) -> Option<Held> {
    let name = std::ffi::CString::new(name).ok().filter(|name| !name.is_empty())?;
    // SAFETY: RTLD_NOLOAD only looks the name up (nothing is mapped or run), under the loader's lock.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
    if handle.is_null() {
        // Clears the error the miss left for `dlerror`.
        // SAFETY: dlerror reads this thread's last error.
        unsafe { libc::dlerror() };
        return None;
    }
    let held = Held(handle);
    // A name no loaded library has is looked up as a path, and a file still there under it (the load's link,
    // before it is removed) matches whichever library was loaded from the same device and inode: only the
    // library that has this very name counts.
    let mut map: *const LinkMap = std::ptr::null();
    // SAFETY: dlinfo writes the handle's `link_map` pointer, which lives as long as the handle.
    let known = unsafe { libc::dlinfo(held.0, libc::RTLD_DI_LINKMAP, std::ptr::addr_of_mut!(map).cast()) } == 0
        && !map.is_null()
        // SAFETY: a live `link_map`'s name is null or a C string.
        && unsafe { !(*map).name.is_null() && std::ffi::CStr::from_ptr((*map).name) == name.as_c_str() };
    known.then_some(held)
}

impl Placed {
    /// The library just opened from `file` (device, inode) that holds `inside`.
    pub(super) fn new(file: (u64, u64), inside: usize) -> Self {
        let name = loaded_object(inside, None).map(|object| object.name).unwrap_or_default();
        placed_files().entry(file).or_default().push(name.clone());
        Self { file, inside, name }
    }

    /// A reference of our own to the library if it is still mapped after its handle was closed (another handle
    /// holds it, or its unmapping waits for a thread-local destructor it registered). Asked of the dynamic
    /// loader by the name only this load used (`dlopen` with `RTLD_NOLOAD`), which reads nothing of the library:
    /// any other thread's `dlclose`, of any library, can unmap one whose unmapping was deferred, so its pages
    /// may be read only while such a reference keeps it mapped.
    pub(super) fn hold(&self) -> Option<Held> {
        still_loaded(&self.name)
    }

    /// Says the library is no longer mapped.
    pub(super) fn unmapped(&self) {
        let mut placed = placed_files();
        if let Some(names) = placed.get_mut(&self.file) {
            if let Some(at) = names.iter().position(|name| *name == self.name) {
                names.swap_remove(at);
            }
            if names.is_empty() {
                placed.remove(&self.file);
            }
        }
    }
}

/// A reference to a loaded library taken by [`Placed::hold`], given back when dropped.
pub(super) struct Held(*mut libc::c_void);

// SAFETY: a `dlopen` handle is a reference count in the dynamic loader, which any thread may close.
unsafe impl Send for Held {}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: the handle `dlopen` returned, closed once.
        unsafe { libc::dlclose(self.0) };
    }
}

/// When a leased file last changed: its change time (any change, its attributes' too) and its modification time
/// and size (its bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Changed {
    status: (i64, i64),
    /// What says the bytes may have changed: a `chmod`, a rename or a new link moves the change time, breaks no
    /// lease and leaves the bytes as they were, so it must not stop a move.
    content: (i64, i64, u64),
}

impl Changed {
    pub(super) fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt as _;
        Self { status: (meta.ctime(), meta.ctime_nsec()), content: (meta.mtime(), meta.mtime_nsec(), meta.len()) }
    }
}

/// The lease of one library loaded in place, and what moving it needs.
pub(super) struct Lease {
    /// The file's change time when it was leased: the lease is given up only once the clock has passed it, so
    /// the writer's change gets a later change time and a new stamp (a new identity the watcher reloads).
    changed: Changed,
    /// How often its runtime wants it checked (`[plugins] lease_poll_ms`): the polling thread checks every
    /// lease at the shortest interval any live one asks for.
    poll_ms: u64,
    /// What its private copy is called: `moved-`, the library's identity (`PluginIdentity::content_hash`) and
    /// the name it was opened by (which names the plugin), so `/proc/PID/maps` says what it is.
    copy_name: String,
    /// The private copy the library was moved to, once it was, and the xxh3-128 of its bytes.
    copy: OnceLock<(File, String)>,
    /// Set once the library has moved and the lease is given up.
    done: std::sync::atomic::AtomicBool,
    /// Held while the library moves.
    moving: Mutex<()>,
    /// Set once a failed move was reported.
    warned: std::sync::atomic::AtomicBool,
}

impl Lease {
    /// The lease of the library `placed`, just opened from `path`, whose file changed last at `changed`; its
    /// written segments are moved to anonymous memory now (see the module docs). Must run before anything but
    /// the opening thread can reach the library.
    pub(super) fn new(
        placed: &Placed,
        path: &std::path::Path,
        changed: Changed,
        poll_ms: u64,
        identity: String,
    ) -> Result<Self, String> {
        use std::os::unix::ffi::OsStrExt as _;
        // Without its name the library could not be told from another mapped at its address later, nor held
        // once closed: not leased.
        if placed.name.is_empty() {
            return Err("its segments were not found".to_owned());
        }
        // The dynamic loader hands back an object it already had for another name of the same file; whoever
        // opened it first moved its written segments, and other threads may be using them now.
        if placed.name == path.as_os_str().as_bytes() {
            let object = loaded_object(placed.inside, Some(&placed.name)).ok_or("its segments were not found")?;
            privatize(&object, Written::Writable)?;
        }
        let done = std::sync::atomic::AtomicBool::new(false);
        let warned = std::sync::atomic::AtomicBool::new(false);
        let opened_as = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        let copy_name = format!("moved-{identity}-{opened_as}");
        Ok(Self { changed, poll_ms, copy_name, copy: OnceLock::new(), done, moving: Mutex::new(()), warned })
    }

    /// Whether the lease is still held (the library has not moved).
    pub(super) fn held(&self) -> bool {
        !self.done.load(Ordering::Acquire)
    }

    /// The private copy, once the library was moved to it: what a child process must load from then on.
    pub(super) fn copy(&self) -> Option<&File> {
        self.copy.get().map(|(file, _)| file)
    }

    /// The content hash of the bytes the library was moved to, once it was.
    pub(super) fn moved_hash(&self) -> Option<&str> {
        self.copy.get().map(|(_, hash)| hash.as_str())
    }
}

/// Whether leases can guard a mapping in this process: leasing on, leases enabled, and a break time at least
/// 20 polls and 2 s long. Read again when the last reading is a second old (two small reads of `/proc`, kept
/// off every load): an administrator may shorten the break time while libraries are leased, and the polling
/// thread then moves them all ([`poll`]).
fn supported(poll_ms: u64) -> bool {
    static READ: Mutex<Option<(std::time::Instant, Option<u64>)>> = Mutex::new(None);
    let mut last = READ.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let break_ms = match *last {
        Some((at, break_ms)) if at.elapsed() < Duration::from_secs(1) => break_ms,
        _ => {
            let read = |path: &str| std::fs::read_to_string(path).ok()?.trim().parse::<u64>().ok();
            let break_ms = match read("/proc/sys/fs/leases-enable") {
                Some(1) => read("/proc/sys/fs/lease-break-time").map(|seconds| seconds.saturating_mul(1000)),
                _ => None,
            };
            *last = Some((std::time::Instant::now(), break_ms));
            break_ms
        }
    };
    poll_ms > 0 && break_ms.is_some_and(|ms| ms >= 2000 && ms >= poll_ms.saturating_mul(20))
}

/// Takes a read lease on `input` (open read-only, a regular file on a local file system) when this library may
/// be mapped under one, checked every `poll_ms`; true when it is held. It is refused while anyone has the file
/// open for writing, and the caller then copies the library as ever.
pub(super) fn take(input: &File, poll_ms: u64) -> bool {
    if !supported(poll_ms) || has_text_relocations(input) {
        return false;
    }
    let fd = input.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own. The break is announced with SIGURG, ignored unless the host
    // handles it, rather than the default SIGIO, which would end the process: the leases are polled instead.
    unsafe { libc::fcntl(fd, F_SETSIG, libc::SIGURG) == 0 && libc::fcntl(fd, libc::F_SETLEASE, libc::F_RDLCK) == 0 }
}

/// Gives up the lease on `input`, if it holds one.
pub(super) fn release(input: &File) {
    // SAFETY: fcntl on a descriptor we own.
    unsafe { libc::fcntl(input.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) };
}

/// Whether the ELF library open as `input` asks the dynamic loader to write into its code (`DT_TEXTREL`, or
/// `DF_TEXTREL` in `DT_FLAGS`): its code pages then differ from the file's, and mapping the file again over
/// them would undo the relocations. Anything that is not a readable little-endian ELF64 file counts as yes.
fn has_text_relocations(input: &File) -> bool {
    use std::os::unix::fs::FileExt as _;
    let mut header = [0u8; 64];
    if input.read_exact_at(&mut header, 0).is_err() || &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return true;
    }
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
    let (phoff, phentsize, phnum) = (
        u64_at(&header, 0x20),
        usize::from(u16::from_le_bytes([header[0x36], header[0x37]])),
        usize::from(u16::from_le_bytes([header[0x38], header[0x39]])),
    );
    if phentsize < 56 || phnum > 256 {
        return true;
    }
    let mut table = vec![0u8; phentsize * phnum];
    if input.read_exact_at(&mut table, phoff).is_err() {
        return true;
    }
    let Some(dynamic) = table.chunks_exact(phentsize).find(|entry| entry[..4] == 2u32.to_le_bytes()) else {
        // No dynamic section: nothing to relocate at all.
        return false;
    };
    let (offset, size) = (u64_at(dynamic, 8), u64_at(dynamic, 32));
    if size > 1 << 20 {
        return true;
    }
    let mut entries = vec![0u8; usize::try_from(size).unwrap_or(0)];
    if input.read_exact_at(&mut entries, offset).is_err() {
        return true;
    }
    const DT_NULL: u64 = 0;
    const DT_TEXTREL: u64 = 22;
    const DT_FLAGS: u64 = 30;
    const DF_TEXTREL: u64 = 4;
    for entry in entries.chunks_exact(16) {
        match (u64_at(entry, 0), u64_at(entry, 8)) {
            (DT_NULL, _) => break,
            (DT_TEXTREL, _) => return true,
            (DT_FLAGS, flags) if flags & DF_TEXTREL != 0 => return true,
            _ => {}
        }
    }
    false
}

/// The leased libraries, and whether the thread that polls them runs.
struct Watched {
    /// Each library and the poll interval its runtime asks for.
    libraries: Vec<(Weak<Library>, u64)>,
    /// Closed libraries still mapped whose move failed ([`park`]).
    parked: Vec<Parked>,
    polling: bool,
}

static WATCHED: Mutex<Watched> = Mutex::new(Watched { libraries: Vec::new(), parked: Vec::new(), polling: false });

/// What is left of a library closed while still mapped, whose move to a copy failed: its lease (still held),
/// its file, and a reference of our own that keeps it mapped, kept until a move succeeds.
pub(super) struct Parked {
    placed: Placed,
    lease: Lease,
    file: File,
    _held: Option<Held>,
}

/// Keeps a closed library's lease and file until it has moved: giving the lease up with its handle would let a
/// writer change the bytes under a mapping that is still there. The polling thread goes on trying to move it.
pub(super) fn park(placed: Placed, lease: Lease, file: File, held: Option<Held>) {
    let mut watched = WATCHED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    watched.parked.push(Parked { placed, lease, file, _held: held });
    if let Err(e) = start_polling(&mut watched) {
        tracing::error!("cannot start the lease thread ({e}); a closed library that could not move keeps its lease");
    }
}

/// Starts the polling thread unless it runs.
fn start_polling(watched: &mut Watched) -> std::io::Result<()> {
    if !watched.polling {
        std::thread::Builder::new().name("toolshed-lease".to_owned()).spawn(poll)?;
        watched.polling = true;
    }
    Ok(())
}

/// Puts a library loaded under a lease in the poll, starting the polling thread if none runs.
pub(super) fn watch(library: &Arc<Library>) {
    let mut watched = WATCHED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let poll_ms = library.lease.as_ref().map_or(DEFAULT_POLL_MS, |lease| lease.poll_ms);
    watched.libraries.push((Arc::downgrade(library), poll_ms));
    // Without the thread, a break goes unanswered for the break time and the writer then goes ahead: move this
    // library now instead (the rest were moved when their own thread could not start).
    if let Err(e) = start_polling(&mut watched) {
        drop(watched);
        tracing::warn!("cannot start the lease thread ({e}); moving the library to a copy now");
        detach(library);
    }
}

/// The polling thread: every `lease_poll_ms` (the shortest any live lease asks for), each leased library whose
/// lease is being broken is moved to a copy. It ends when no leased library is left.
fn poll() {
    loop {
        let interval = {
            let watched = WATCHED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let parked = watched.parked.iter().map(|parked| parked.lease.poll_ms);
            watched.libraries.iter().map(|(_, poll_ms)| *poll_ms).chain(parked).min().unwrap_or(DEFAULT_POLL_MS)
        };
        std::thread::sleep(Duration::from_millis(interval.max(1)));
        // The references taken here may be the last ones: they are dropped (the library closed) only after
        // the lock is let go, since a close can move a library (a copy of the whole file) and `watch` waits.
        let mut gone = Vec::new();
        let live: Vec<Arc<Library>> = {
            let mut watched = WATCHED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut live = Vec::new();
            watched.libraries.retain(|(library, _)| match library.upgrade() {
                Some(library) if library.lease.as_ref().is_some_and(Lease::held) => {
                    live.push(library);
                    true
                }
                other => {
                    gone.extend(other);
                    false
                }
            });
            if watched.libraries.is_empty() && watched.parked.is_empty() {
                watched.polling = false;
                drop(watched);
                drop(gone);
                return;
            }
            live
        };
        drop(gone);
        // Leases disabled or the break time shortened since: a writer could get through before a poll sees
        // it, so every library moves now.
        let still_safe = supported(interval);
        for library in &live {
            if library.file.as_ref().is_some_and(breaking) || !still_safe {
                detach(library);
            }
        }
        // The last reference to a library may be dropped here: it is closed on this thread then.
        drop(live);
        // Parked libraries move, like live ones, when a writer waits; one whose lease the kernel no longer lists
        // (ended after its break time) has nothing left to guard.
        let parked = std::mem::take(&mut WATCHED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).parked);
        let (moved, still): (Vec<Parked>, Vec<Parked>) = parked.into_iter().partition(|parked| {
            if breaking(&parked.file) || !still_safe {
                move_parts(&parked.placed, &parked.lease, &parked.file);
            }
            !parked.lease.held() || lease_listed(&parked.file) == Some(false)
        });
        WATCHED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).parked.extend(still);
        drop(moved);
    }
}

/// Whether the lease on `file` is no longer a plain read lease: being broken (the kernel then reports the type it
/// is being broken to, none), or gone.
fn breaking(file: &File) -> bool {
    // SAFETY: fcntl on a descriptor the caller keeps open.
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLEASE) != libc::F_RDLCK }
}

/// Moves `library` off its file onto a private copy of the same bytes, then gives the lease up. A library that
/// cannot be moved keeps its lease, and the next poll tries again: giving the lease up would let the writer
/// change the bytes under the mapping (the kernel ends the lease itself only after its break time).
pub(super) fn detach(library: &Library) {
    if let (Some(placed), Some(lease), Some(file)) =
        (library.placed.as_ref(), library.lease.as_ref(), library.file.as_ref())
    {
        move_parts(placed, lease, file);
    }
}

/// [`detach`] of a library's parts: where it is mapped, its lease, and the file the lease is on.
fn move_parts(placed: &Placed, lease: &Lease, file: &File) {
    // One move at a time per library (the polling thread, a child process's first job, a drop).
    let _moving = lease.moving.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !lease.held() {
        return;
    }
    match move_to_copy(placed, lease, file) {
        Ok(copy) => {
            let _ = lease.copy.set(copy);
            wait_for_clock(lease.changed.status);
            lease.done.store(true, Ordering::Release);
            // Counted before the writer is let through, so whoever it tells sees the move.
            MOVED.fetch_add(1, Ordering::Relaxed);
            release(file);
            tracing::info!("a plugin library loaded in place moved to a private copy (its file is being written)");
        }
        // Said once: the next polls try again, quietly.
        Err(e) if !lease.warned.swap(true, Ordering::Relaxed) => {
            tracing::error!("a plugin library loaded in place could not move to a private copy yet: {e}")
        }
        Err(e) => tracing::debug!("a plugin library loaded in place still cannot move to a private copy: {e}"),
    }
}

static MOVED: AtomicU64 = AtomicU64::new(0);

/// How many leased libraries were moved to a private copy because their file was opened for writing.
pub fn moved() -> u64 {
    MOVED.load(Ordering::Relaxed)
}

/// Waits until the coarse clock, which stamps file changes, has passed `changed`, so a change made after this
/// returns has a later change time than the one the library's identity was taken from.
fn wait_for_clock(changed: (i64, i64)) {
    for _ in 0..1000 {
        let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes the struct.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut now) };
        if (now.tv_sec, now.tv_nsec) > changed {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Whether `file` still holds the bytes the library was loaded from: true while the kernel still lists this
/// process's lease on it, held or being broken (a writer then still waits). A host stopped longer than the break
/// time (SIGSTOP, a debugger, a frozen cgroup) loses it, and a writer may have changed the file since. Neither a
/// `chmod`, a rename, a new link nor `touch` breaks a lease or changes a byte, so none of them counts. Where
/// `/proc/locks` cannot be read, an unchanged modification time and size stand in.
fn intact(file: &File, lease: &Lease) -> bool {
    match lease_listed(file) {
        Some(listed) => listed,
        None => file.metadata().is_ok_and(|meta| Changed::of(&meta).content == lease.changed.content),
    }
}

/// Whether the kernel lists a lease of this process on `file` (`/proc/locks`: `ID: LEASE STATE TYPE PID
/// MAJOR:MINOR:INODE START END`); `None` where that cannot be read.
fn lease_listed(file: &File) -> Option<bool> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = file.metadata().ok()?;
    let wanted = format!("{:02x}:{:02x}:{}", libc::major(meta.dev()), libc::minor(meta.dev()), meta.ino());
    let pid = std::process::id().to_string();
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    Some(locks.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.get(1) == Some(&"LEASE")
            && fields.get(4) == Some(&pid.as_str())
            && fields.get(5) == Some(&wanted.as_str())
    }))
}

/// Copies `file` into a file of its own in the shadow directory, moves the library's RELRO pages to anonymous
/// memory, maps its never-written segments again from that copy at the same addresses, and returns the copy
/// (open read-only) and its content hash.
fn move_to_copy(placed: &Placed, lease: &Lease, file: &File) -> Result<(File, String), String> {
    let object = loaded_object(placed.inside, Some(&placed.name)).ok_or("its segments were not found")?;
    // The bytes copied must be the ones mapped, or mapping the copy would put other code under the library's
    // addresses. Checked before and after copying.
    let unchanged = || intact(file, lease);
    if !unchanged() {
        return Err("its file changed while the lease was lost (was the host stopped?); it is left as it is".to_owned());
    }
    let (copy, hash) = private_copy(file, &lease.copy_name)
        .or_else(|on_disk| memory_copy(file).map_err(|in_memory| format!("{on_disk}; in memory: {in_memory}")))
        .map_err(|e| format!("copying it: {e}"))?;
    if !unchanged() {
        return Err("its file changed while it was copied (was the host stopped?); it is left as it is".to_owned());
    }
    privatize(&object, Written::Relro)?;
    for segment in object.segments.iter().filter(|segment| segment.flags & libc::PF_W == 0) {
        let (start, end, offset) = mapped_range(segment);
        let mut prot = 0;
        for (flag, bit) in [(libc::PF_R, libc::PROT_READ), (libc::PF_X, libc::PROT_EXEC)] {
            if segment.flags & flag != 0 {
                prot |= bit;
            }
        }
        // SAFETY: the range is this library's own never-written segment, mapped from its file at this offset by
        // the dynamic loader; the copy holds the same bytes there, so the code and data in it do not change.
        let at = unsafe {
            libc::mmap(
                start as *mut libc::c_void,
                end - start,
                prot,
                libc::MAP_PRIVATE | libc::MAP_FIXED,
                copy.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        if at != start as *mut libc::c_void {
            return Err(format!("mapping its segment at {start:#x} again: {}", std::io::Error::last_os_error()));
        }
    }
    Ok((copy, hash))
}

/// A sealed in-memory copy of `file`'s bytes and their content hash, where the shadow directory cannot take one
/// (a full disk): nobody can write, grow or shrink it.
fn memory_copy(file: &File) -> std::io::Result<(File, String)> {
    use std::os::fd::FromRawFd as _;
    // MFD_EXEC (Linux 6.3): executable even where `vm.memfd_noexec` makes memory files non-executable by default;
    // an older kernel refuses the flag, and then makes them executable anyway.
    const MFD_EXEC: libc::c_uint = 0x10;
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // SAFETY: memfd_create returns a new descriptor we own, or -1.
    let mut fd = unsafe { libc::memfd_create(c"toolshed-moved".as_ptr(), flags | MFD_EXEC) };
    if fd < 0 {
        // SAFETY: as above.
        fd = unsafe { libc::memfd_create(c"toolshed-moved".as_ptr(), flags) };
    }
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is ours alone.
    let mut copy = unsafe { File::from_raw_fd(fd) };
    let hash = super::hash_copying(file, Some(&mut copy))?;
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: fcntl on our own descriptor.
    if unsafe { libc::fcntl(copy.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((copy, hash))
}

/// A copy of `file`'s bytes in the shadow directory (private to the user), open read-only with its name already
/// removed, and their content hash. Its `name` (unique per load) shows in `/proc/self/maps`.
fn private_copy(file: &File, name: &str) -> std::io::Result<(File, String)> {
    let dir = super::shadow_dir().map_err(std::io::Error::other)?;
    let path = dir.join(name);
    let written = std::fs::File::options().write(true).create_new(true).open(&path).and_then(|mut out| {
        let hash = super::hash_copying(file, Some(&mut out))?;
        // Opened again read-only: a child process that loads the library inherits this descriptor.
        Ok((File::open(&path)?, hash))
    });
    let _ = std::fs::remove_file(&path);
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    /// A minimal ELF64 file: its header, one program header (`PT_DYNAMIC` when `dynamic` is given, else
    /// `PT_LOAD`), and the dynamic entries.
    fn elf(dynamic: Option<&[(u64, u64)]>) -> tempfile::NamedTempFile {
        let mut bytes = vec![0u8; 64 + 56];
        bytes[..6].copy_from_slice(b"\x7fELF\x02\x01");
        bytes[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        bytes[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        bytes[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        let entries: Vec<u8> = dynamic
            .unwrap_or_default()
            .iter()
            .chain(&[(0, 0)])
            .flat_map(|(tag, value)| tag.to_le_bytes().into_iter().chain(value.to_le_bytes()))
            .collect();
        let kind: u32 = if dynamic.is_some() { 2 } else { 1 };
        bytes[64..68].copy_from_slice(&kind.to_le_bytes());
        bytes[64 + 8..64 + 16].copy_from_slice(&120u64.to_le_bytes());
        bytes[64 + 32..64 + 40].copy_from_slice(&(entries.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&entries);
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&bytes).unwrap();
        file
    }

    #[test]
    fn only_elf_libraries_without_text_relocations_are_leased() {
        let no = |file: tempfile::NamedTempFile| !has_text_relocations(file.as_file());
        assert!(no(elf(Some(&[(1, 5), (30, 8)]))), "DT_NEEDED and DT_FLAGS without DF_TEXTREL");
        assert!(no(elf(None)), "no dynamic section");
        assert!(!no(elf(Some(&[(22, 0)]))), "DT_TEXTREL");
        assert!(!no(elf(Some(&[(30, 4 | 8)]))), "DF_TEXTREL in DT_FLAGS");
        let mut text = tempfile::NamedTempFile::new().unwrap();
        text.write_all(b"#!/bin/sh\n").unwrap();
        assert!(!no(text), "not ELF");
        let mut cut = tempfile::NamedTempFile::new().unwrap();
        cut.write_all(b"\x7fELF\x02\x01").unwrap();
        assert!(!no(cut), "cut short");
    }

    #[test]
    fn a_lease_is_refused_while_the_file_is_open_for_writing_and_blocks_writers_while_held() {
        if !supported(DEFAULT_POLL_MS) {
            return;
        }
        // The temporary file's own handle is open for writing: closed, only its path kept.
        let file = elf(None).into_temp_path();
        let writer = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
        let input = File::open(&file).unwrap();
        assert!(!take(&input, DEFAULT_POLL_MS), "a writer has it open");
        drop(writer);
        assert!(take(&input, DEFAULT_POLL_MS));
        // A non-blocking open for writing is refused while the lease is held, and goes through once it is given
        // up (a blocking one would wait for it).
        use std::os::unix::fs::OpenOptionsExt as _;
        let open = || std::fs::OpenOptions::new().append(true).custom_flags(libc::O_NONBLOCK).open(&file);
        assert_eq!(open().unwrap_err().raw_os_error(), Some(libc::EWOULDBLOCK));
        // SAFETY: fcntl on our own descriptor.
        assert_eq!(unsafe { libc::fcntl(input.as_raw_fd(), libc::F_GETLEASE) }, libc::F_UNLCK, "being broken");
        release(&input);
        assert!(open().is_ok());
        assert!(!take(&input, 0), "leasing off");
    }
}
