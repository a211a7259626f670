//! Where a library is mapped from: its own file where nobody can change it in place (immutable, a read-only
//! file system) or where a read lease guards it (`lease`), else a copy; and the identity each gives it.

use super::{check_complete, lease, load_checked, load_on_disk, shadow_name, LoadError, Loaded};
use crate::registry::index::FileStamp;
use std::path::Path;
use std::sync::Arc;

/// The identity of a library loaded in place: its stamp (device, inode, size, modification and change times)
/// stands for its bytes, as the declaration index already trusts a stamp for a hash. Its bytes cannot change
/// without the change time moving (for a fixed file, clearing the attribute or remounting writable moves it;
/// a leased one's writer first waits for the library to move to a copy, `lease`), and no user can set the
/// change time, so it is never read to be hashed: hashing was most of an in-place load (README, Performance,
/// 5i), and all of a 28 MB one. Prefixed so it never equals a content hash or the other kind: a library whose
/// placement changes gets a new identity, and so is reloaded.
pub(super) fn stamp_identity(how: InPlace, stamp: &FileStamp) -> String {
    let kind = match how {
        InPlace::Fixed => "fixed",
        InPlace::Leased => "leased",
    };
    format!("{kind}-{:032x}", stamp.digest())
}

/// Why a library is mapped as it is, with no copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum InPlace {
    /// Nobody can change the file in place ([`fixed_in_place`]).
    Fixed,
    /// A read lease holds back every writer until the library has moved to a private copy (`lease`).
    Leased,
}

/// Whether the library open as `input` is mapped in place, and why; `None` to copy it. A library that a child
/// process loads (`remote`) is leased by nobody, so only a fixed one is mapped from its own file then. Takes
/// the lease, to be checked every `poll_ms`, when it answers [`InPlace::Leased`]; it is given up with `input`.
pub(super) fn placement(
    input: &std::fs::File,
    meta: &std::fs::Metadata,
    remote: bool,
    poll_ms: u64,
) -> Option<InPlace> {
    let (fixed, fs) = fixed_in_place(input, meta);
    match (fixed, fs) {
        (Some(_), _) => Some(InPlace::Fixed),
        (None, FileSystem::Local) if meta.is_file() && !remote && lease::take(input, poll_ms) => Some(InPlace::Leased),
        (None, _) => None,
    }
}

/// `[plugins] lease_poll_ms` of the runtime loading, or its default for a load outside one.
pub(super) fn lease_poll_ms(policy: Option<&Arc<crate::registry::remote::Policy>>) -> u64 {
    policy.map_or(lease::DEFAULT_POLL_MS, |policy| policy.lease_poll_ms())
}

/// Why the library open as `input` cannot be overwritten in place while it is mapped, if it cannot: then it is
/// loaded as it is, with no copy. A copy costs more than the load itself (README, Performance, rows 5.x): the
/// bytes are written again, and the dynamic loader maps a freshly written file ~40% slower than a settled one.
/// Also says what kind of file system holds it.
fn fixed_in_place(input: &std::fs::File, meta: &std::fs::Metadata) -> (Option<Fixed>, FileSystem) {
    use std::os::fd::AsRawFd as _;
    // Only a regular file is ever mapped as it is; and a device must not be handed a file system's ioctl.
    if !meta.is_file() {
        return (None, FileSystem::Remote);
    }
    let fd = input.as_raw_fd();
    let mut flags: nix::libc::c_long = 0;
    // SAFETY: FS_IOC_GETFLAGS writes the inode's flags (an int, which fits the long) through the pointer.
    let immutable =
        unsafe { nix::libc::ioctl(fd, nix::libc::FS_IOC_GETFLAGS, &mut flags) } == 0 && flags & FS_IMMUTABLE_FL != 0;
    let mut stat = std::mem::MaybeUninit::<nix::libc::statvfs>::uninit();
    // SAFETY: fstatvfs fills the struct when it returns 0, and only then is it read.
    let read_only = unsafe { nix::libc::fstatvfs(fd, stat.as_mut_ptr()) } == 0
        && unsafe { stat.assume_init() }.f_flag & nix::libc::ST_RDONLY != 0;
    let mut fs = std::mem::MaybeUninit::<nix::libc::statfs>::uninit();
    // SAFETY: fstatfs fills the struct when it returns 0, and only then is it read. Unknown counts as remote.
    let kind = match unsafe { nix::libc::fstatfs(fd, fs.as_mut_ptr()) } {
        0 => file_system(u32::try_from(unsafe { fs.assume_init() }.f_type).unwrap_or(0)),
        _ => FileSystem::Remote,
    };
    (fixed(immutable, read_only, kind), kind)
}

/// What a library's file system says about who else may change its bytes under a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileSystem {
    /// A server or a user's daemon answers for the file (FUSE, NFS, SMB, 9p, Ceph, AFS): it can claim the
    /// immutable attribute, set any stamp, and change the bytes under a mapping. Never mapped in place.
    Remote,
    /// A file system that cannot be written at all (squashfs, EROFS, ISO 9660, cramfs, romfs).
    ReadOnly,
    /// Any other local file system. A read-only mount of it may be a view of files another mount writes (a
    /// bind mount, a container's `:ro` volume), so only the immutable attribute vouches for its files.
    Local,
    /// An overlay: its files are views of another file system's, which can be written there without the
    /// overlay's file knowing, so a lease on the overlay's file guards nothing. Otherwise as [`FileSystem::Local`].
    Overlay,
}

/// The kind of file system whose `statfs` magic is `magic` (`<linux/magic.h>`).
fn file_system(magic: u32) -> FileSystem {
    match magic {
        0x6573_5546 | 0x6969 | 0x517B | 0xFF53_4D42 | 0xFE53_4D42 | 0x0102_1997 | 0x00C3_6400 | 0x5346_414F
        | 0x7375_7245 => FileSystem::Remote,
        0x7371_7368 | 0xE0F5_E1E2 | 0x9660 | 0x28CD_3D45 | 0x7275 => FileSystem::ReadOnly,
        0x794C_7630 => FileSystem::Overlay,
        _ => FileSystem::Local,
    }
}

/// `FS_IMMUTABLE_FL` of `<linux/fs.h>`: the file cannot be written, truncated, renamed over or removed.
const FS_IMMUTABLE_FL: nix::libc::c_long = 0x10;

/// What makes a library safe to map as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fixed {
    /// The immutable attribute (`chattr +i`): nobody, root included, writes, truncates, renames over or removes
    /// the file before clearing the attribute.
    Immutable,
    /// A file system that cannot be written, mounted read-only: a squashfs or EROFS image (a container's or a
    /// snap's root), an ISO.
    ReadOnlyMount,
}

/// The rule behind [`fixed_in_place`] for a regular file, apart from the system calls that feed it.
/// Permissions are not enough: a root-owned library that only root may write is still overwritten in place by
/// root's `cp`.
fn fixed(immutable: bool, read_only: bool, fs: FileSystem) -> Option<Fixed> {
    match (fs, immutable, read_only) {
        (FileSystem::Remote, _, _) => None,
        (_, true, _) => Some(Fixed::Immutable),
        (FileSystem::ReadOnly, false, true) => Some(Fixed::ReadOnlyMount),
        (_, false, _) => None,
    }
}

/// Loads a library that cannot change in place ([`fixed_in_place`]), or one under a read lease, from its own
/// file, through a link of its own in the shadow directory to the descriptor whose file was checked. The dynamic loader knows a library by
/// the path it was opened with, so the file's own path would hand back an earlier version still mapped (a
/// replacement renamed over it), and `/proc/self/fd/N` one whose number was reused; the link's name is this
/// load's alone, and it names the very file the checks read, not whatever the path names a moment later.
pub(super) fn load_in_place(
    file: &Path,
    dir: &Path,
    input: std::fs::File,
    copy: u64,
    remote: Option<&Arc<crate::registry::remote::Policy>>,
    how: InPlace,
    poll_ms: u64,
) -> Loaded {
    let failed = |reason: String| (Err(LoadError::new(file, reason)), None);
    // Stamped after the attribute was read or the lease taken: a change made before then shows in this stamp,
    // and none can be made after it without moving the change time, which the next rescan sees as a new
    // identity.
    let meta = match input.metadata() {
        Ok(meta) => meta,
        Err(e) => return failed(format!("cannot read the library: {e}")),
    };
    let stamp = FileStamp::of(&meta);
    let bytes = meta.len();
    if let Err(reason) = check_complete(&input, bytes) {
        return failed(reason);
    }
    let identity = stamp_identity(how, &stamp);
    let file_id = file_id(&meta);
    // One at a time from the check to the end of the load: two loads of one file at once would share one
    // mapping, and the second could run the library's code while the first still moves its written segments
    // (`lease::Lease::new`).
    let one_at_a_time = IN_PLACE_LOADS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if lease::placed(file_id) {
        // An earlier version of this very file (rewritten in place since) is still mapped, and the dynamic
        // loader would hand it back: copied instead, still under the lease if there is one, so the bytes copied
        // are the ones the stamp stands for.
        drop(one_at_a_time);
        return load_on_disk(file, dir, input, &meta, copy, remote, Some(identity));
    }
    let fd_path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&input));
    let link = shadow_name(dir, "in-place", copy, file);
    if let Err(e) = std::os::unix::fs::symlink(&fd_path, &link) {
        return failed(format!("cannot link the library into {}: {e}", dir.display()));
    }
    let lease = (how == InPlace::Leased).then(|| Leased {
        changed: lease::Changed::of(&meta),
        poll_ms,
        identity: identity.clone(),
    });
    let in_place = InPlaceLoad { file: file_id, lease };
    let loaded = load_checked(file, &link, input, bytes, identity.clone(), remote, Some(in_place));
    drop(one_at_a_time);
    let _ = std::fs::remove_file(&link);
    (loaded, Some((stamp, identity)))
}

/// The device and inode of a file: what the dynamic loader knows a loaded file by, besides its name.
pub(super) fn file_id(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt as _;
    (meta.dev(), meta.ino())
}

/// Held by a load from a library's own file (see [`load_in_place`]).
static IN_PLACE_LOADS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A library mapped from its own file: the file (device, inode), and its lease if a lease guards it.
#[derive(Debug, Clone)]
pub(super) struct InPlaceLoad {
    pub(super) file: (u64, u64),
    pub(super) lease: Option<Leased>,
}

/// How the lease of a library mapped in place under one is kept: the file's change time when leased, and how
/// often the lease is checked.
#[derive(Debug, Clone)]
pub(super) struct Leased {
    pub(super) changed: lease::Changed,
    pub(super) poll_ms: u64,
    /// The library's identity, which names its private copy if it moves to one.
    pub(super) identity: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_nobody_can_write_in_place_are_loaded_without_a_copy() {
        use FileSystem::{Local, ReadOnly, Remote};
        assert_eq!(fixed(true, false, Local), Some(Fixed::Immutable));
        assert_eq!(fixed(true, true, Local), Some(Fixed::Immutable));
        assert_eq!(fixed(false, true, ReadOnly), Some(Fixed::ReadOnlyMount));
        assert_eq!(fixed(false, false, Local), None, "a writable file is copied");
        // A read-only mount of a writable file system may be a view of a file another mount writes.
        assert_eq!(fixed(false, true, Local), None);
        // A server or a FUSE daemon can claim anything and change the bytes under the mapping.
        for (immutable, read_only) in [(true, true), (true, false), (false, true)] {
            assert_eq!(fixed(immutable, read_only, Remote), None);
        }
        assert_eq!(file_system(0x6573_5546), Remote, "FUSE");
        assert_eq!(file_system(0x6969), Remote, "NFS");
        assert_eq!(file_system(0x7371_7368), ReadOnly, "squashfs");
        assert_eq!(file_system(0xEF53), Local, "ext4");
        // Only regular files are mapped as they are: not a device, and not a directory even where its file
        // system is read-only (the mount points of read-only mounts this machine has, if any).
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let read_only_dirs = mountinfo.lines().filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            fields.get(5).filter(|options| options.split(',').any(|o| o == "ro")).and(fields.get(4).copied())
        });
        for path in std::iter::once("/dev/null").chain(read_only_dirs) {
            let Ok(input) = std::fs::File::open(path) else { continue };
            let meta = input.metadata().unwrap();
            assert_eq!(fixed_in_place(&input, &meta).0, None, "{path}");
        }
    }
}
