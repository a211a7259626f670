//! How one file gets its new bytes while staying what it is: a temporary file beside it renamed over it, or,
//! when the rename would change the file in more than its bytes (its owner or group, another hard link, an
//! ACL or other extended attribute, set-id bits), a write through the existing inode after a backup of the
//! old bytes, which a failure puts back.

use std::cell::Cell;
use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh name beside `target` for one of our own files (`kind`: `tmp` or `backup`), unique in this process.
fn sibling(target: &Path, kind: &str) -> PathBuf {
    let dir = target.parent().unwrap_or(Path::new("/"));
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    dir.join(format!(".{name}.{}.{}.toolshed-{kind}", std::process::id(), TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)))
}

/// Creates `path` (which must not exist) private to us, with `bytes` in it, synced to disk.
fn create_private(path: &Path, bytes: &[u8], mode: u32) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(path)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    match written {
        Ok(()) => Ok(file),
        Err(e) => {
            drop(file);
            let _ = fs::remove_file(path);
            Err(e)
        }
    }
}

/// A temporary file beside `target` holding its new bytes, synced to disk, not yet renamed into place.
pub(crate) struct Staged {
    temp: PathBuf,
    pub(crate) target: PathBuf,
}

impl Staged {
    /// A new file's content, with the permissions (and, where we may set it, the owner) of `like` when given;
    /// else what `creat(0o666)` gives under the process umask.
    pub(crate) fn new(target: &Path, bytes: &[u8], like: Option<&fs::Metadata>) -> io::Result<Staged> {
        let temp = sibling(target, "tmp");
        // A file whose permissions are copied starts private, so a file the user keeps private never leaks
        // while it is written.
        let file = create_private(&temp, bytes, if like.is_some() { 0o600 } else { 0o666 })?;
        let staged = Staged { temp, target: target.to_owned() };
        if let Some(like) = like {
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                // Best effort: only root may give a file away; the mode below is what must hold.
                let _ = std::os::unix::fs::fchown(&file, Some(like.uid()), Some(like.gid()));
            }
            if let Err(e) = file.set_permissions(like.permissions()) {
                staged.discard();
                return Err(e);
            }
        }
        Ok(staged)
    }

    /// The new content of the existing file `meta` describes, staged for a rename only when the renamed file
    /// would be indistinguishable from the old one but for its bytes: same owner, group, mode (set-id bits
    /// included) and extended attributes (ACLs, security labels), and no other hard link to the old inode.
    /// `None` when it would not be; the caller then writes through the existing inode.
    pub(crate) fn replacing(target: &Path, bytes: &[u8], meta: &fs::Metadata) -> io::Result<Option<Staged>> {
        if !identity::renamable(meta) {
            return Ok(None);
        }
        let temp = sibling(target, "tmp");
        let file = create_private(&temp, bytes, 0o600)?;
        let staged = Staged { temp, target: target.to_owned() };
        match identity::copy(target, meta, &file) {
            Ok(true) => Ok(Some(staged)),
            // The attributes could not be reproduced (or the file changed under us): write in place.
            Ok(false) | Err(_) => {
                staged.discard();
                Ok(None)
            }
        }
    }

    pub(crate) fn commit(&self) -> io::Result<()> {
        fs::rename(&self.temp, &self.target)?;
        sync_parent(&self.target);
        Ok(())
    }

    pub(crate) fn discard(&self) {
        let _ = fs::remove_file(&self.temp);
    }
}

/// Makes a rename or an unlink in `path`'s directory durable; a directory that cannot be synced is not worth
/// failing for.
fn sync_parent(path: &Path) {
    if let Some(dir) = path.parent()
        && let Ok(dir) = File::open(dir)
    {
        let _ = dir.sync_all();
    }
}

/// A write through the existing inode, for a file a rename would change in more than its bytes. Its old
/// bytes are first copied to a backup file beside it (synced, so even a crash mid-write leaves them on
/// disk); a failed write puts them back in place, and the backup goes once the transaction is over.
pub(crate) struct InPlace {
    pub(crate) target: PathBuf,
    backup: PathBuf,
    /// The inode that was checked: a different file at the path (swapped meanwhile) is not written.
    inode: (u64, u64),
    /// The mode to keep: a write by a process without `CAP_FSETID` clears set-id bits.
    permissions: Permissions,
    /// Set when the old content could not be put back: the backup is then the only copy, and stays.
    keep_backup: Cell<bool>,
}

impl InPlace {
    pub(crate) fn prepare(target: &Path, original: &[u8], meta: &fs::Metadata) -> io::Result<InPlace> {
        let backup = sibling(target, "backup");
        create_private(&backup, original, 0o600)?;
        Ok(InPlace {
            target: target.to_owned(),
            backup,
            inode: identity::inode(meta),
            permissions: meta.permissions(),
            keep_backup: Cell::new(false),
        })
    }

    /// Overwrites the file with `bytes`: from the start, cut to their length, synced.
    fn write(&self, bytes: &[u8]) -> io::Result<()> {
        let mut options = OpenOptions::new();
        options.write(true);
        // Every link on the way was resolved when the path was located; one appearing now is not followed.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, identity::NO_FOLLOW);
        let mut file = options.open(&self.target)?;
        let meta = file.metadata()?;
        if identity::inode(&meta) != self.inode {
            return Err(io::Error::other("the file was replaced while it was being edited"));
        }
        file.write_all(bytes)?;
        file.set_len(bytes.len() as u64)?;
        file.sync_all()?;
        if file.metadata().map(|m| m.permissions()).ok().as_ref() != Some(&self.permissions) {
            let _ = file.set_permissions(self.permissions.clone());
        }
        Ok(())
    }

    /// Writes `bytes`, putting `original` back if that fails. The error says whether the file is whole.
    pub(crate) fn commit(&self, bytes: &[u8], original: &[u8]) -> Result<(), String> {
        let Err(e) = self.write(bytes) else { return Ok(()) };
        match self.restore(original) {
            Ok(()) => Err(format!("could not write {}: {e}", self.target.display())),
            Err(restore) => Err(format!(
                "could not write {}: {e}; putting its old content back failed too ({restore}), so it is kept in {}",
                self.target.display(),
                self.backup.display()
            )),
        }
    }

    pub(crate) fn restore(&self, original: &[u8]) -> io::Result<()> {
        let restored = self.write(original);
        if restored.is_err() {
            self.keep_backup.set(true);
        }
        restored
    }

    /// Removes the backup, once the file holds either its new or its old content in full.
    pub(crate) fn finish(&self) {
        if !self.keep_backup.get() {
            let _ = fs::remove_file(&self.backup);
            sync_parent(&self.backup);
        }
    }
}

/// What `rename` would lose, and how a staged file is given the old one's attributes.
#[cfg(unix)]
mod identity {
    use std::fs::{self, File, OpenOptions};
    use std::io;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    use std::path::Path;

    /// `O_NOFOLLOW`, for `OpenOptionsExt::custom_flags`.
    pub const NO_FOLLOW: i32 = rustix::fs::OFlags::NOFOLLOW.bits() as i32;
    /// `O_NONBLOCK`: a FIFO swapped in for the file must not hang the open.
    const NON_BLOCK: i32 = rustix::fs::OFlags::NONBLOCK.bits() as i32;

    pub fn inode(meta: &fs::Metadata) -> (u64, u64) {
        (meta.dev(), meta.ino())
    }

    /// Whether a rename could keep the file what it is: a file with another hard link cannot be, since the
    /// other name would keep the old content.
    pub fn renamable(meta: &fs::Metadata) -> bool {
        meta.nlink() <= 1
    }

    /// Gives `staged` the extended attributes and mode of the file at `target`, then checks that owner, group,
    /// mode and every attribute now match. `Ok(false)`: they do not (another owner, an attribute we may not
    /// set), so a rename would change the file.
    pub fn copy(target: &Path, meta: &fs::Metadata, staged: &File) -> io::Result<bool> {
        let original = OpenOptions::new().read(true).custom_flags(NO_FOLLOW | NON_BLOCK).open(target)?;
        if inode(&original.metadata()?) != inode(meta) {
            return Ok(false);
        }
        let wanted = attributes(&original)?;
        for (name, value) in &wanted {
            rustix::fs::fsetxattr(staged, name.as_slice(), value, rustix::fs::XattrFlags::empty())?;
        }
        // A new file may inherit attributes the old one lacks (a directory's default ACL, a label).
        for (name, _) in attributes(staged)? {
            if !wanted.iter().any(|(n, _)| *n == name) {
                rustix::fs::fremovexattr(staged, name.as_slice())?;
            }
        }
        // The mode last: it sets an ACL's mask, and set-id bits survive only if nothing follows.
        staged.set_permissions(meta.permissions())?;
        let now = staged.metadata()?;
        Ok(now.uid() == meta.uid()
            && now.gid() == meta.gid()
            && now.mode() == meta.mode()
            && attributes(staged)? == wanted)
    }

    /// Every extended attribute of a file, sorted by name; none where the filesystem has none.
    fn attributes(file: &File) -> io::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let unsupported = |e: &rustix::io::Errno| *e == rustix::io::Errno::NOTSUP;
        let size = match rustix::fs::flistxattr_query(file) {
            Ok(size) => size,
            Err(e) if unsupported(&e) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut names = vec![0u8; size];
        let len = rustix::fs::flistxattr(file, &mut names[..])?;
        let mut out = Vec::new();
        for name in names[..len].split(|&b| b == 0).filter(|n| !n.is_empty()) {
            let size = rustix::fs::fgetxattr_query(file, name)?;
            let mut value = vec![0u8; size];
            let len = rustix::fs::fgetxattr(file, name, &mut value[..])?;
            value.truncate(len);
            out.push((name.to_vec(), value));
        }
        out.sort();
        Ok(out)
    }
}

/// Elsewhere only the mode is known to matter, and a rename keeps it.
#[cfg(not(unix))]
mod identity {
    use std::fs::{self, File};
    use std::io;
    use std::path::Path;

    pub fn inode(_: &fs::Metadata) -> (u64, u64) {
        (0, 0)
    }

    pub fn renamable(_: &fs::Metadata) -> bool {
        true
    }

    pub fn copy(_: &Path, meta: &fs::Metadata, staged: &File) -> io::Result<bool> {
        staged.set_permissions(meta.permissions())?;
        Ok(true)
    }
}
