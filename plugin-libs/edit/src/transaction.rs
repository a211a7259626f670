//! Changes to several files that happen all together or not at all: the one write path every edit takes.

use crate::replace::{InPlace, Staged};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// One change of a [`Transaction`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Write `bytes` to `path`, creating its parent directories. A new file takes the permissions (and,
    /// where the process may set it, the owner) of `permissions_from` when given (a moved file keeps its
    /// mode), else the default.
    Write {
        /// The file (symbolic links already resolved).
        path: PathBuf,
        /// Its new content.
        bytes: Vec<u8>,
        /// Where a new file's permissions come from.
        permissions_from: Option<PathBuf>,
    },
    /// Delete the file at `path`.
    Delete {
        /// The file.
        path: PathBuf,
    },
}

/// What a file was before a transaction touched it, to put it back.
struct Backup {
    path: PathBuf,
    bytes: Option<Vec<u8>>,
    meta: Option<fs::Metadata>,
}

/// How one write is staged: a file to rename over the target, or a write through the target's inode.
enum Step {
    Rename(Staged),
    InPlace { write: InPlace, bytes: Vec<u8>, original: Vec<u8> },
}

impl Step {
    fn target(&self) -> &Path {
        match self {
            Step::Rename(staged) => &staged.target,
            Step::InPlace { write, .. } => &write.target,
        }
    }

    fn discard(&self) {
        match self {
            Step::Rename(staged) => staged.discard(),
            Step::InPlace { write, .. } => write.finish(),
        }
    }
}

/// Changes to several files that happen all together or not at all, each file keeping what it is: its
/// inode where anything but the bytes would change otherwise.
///
/// Every new content is first staged: in a temporary file beside its target, or, for a file that a rename
/// would change in more than its bytes (another owner or group than a new file gets, another hard link, an
/// attribute or ACL that cannot be copied), as a backup of the old content beside it, to be written through
/// the existing inode. Only when all are staged are they put in place, and deletions come last. Should one
/// still fail, what was already done is undone from in-memory copies of the originals, the same way it was
/// done. A write of the bytes a file already holds is no write at all.
#[derive(Debug, Default)]
pub struct Transaction {
    changes: Vec<Change>,
}

impl Transaction {
    /// An empty transaction.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a change.
    pub fn push(&mut self, change: Change) {
        self.changes.push(change);
    }

    /// Applies every change, or none. The error names the file that failed.
    ///
    /// `may_write` is asked once, after the files are read and before anything on disk changes: the call's
    /// commit gate ([`HostClient::commit`](toolshed_plugin_api::HostClient::commit)). When it refuses (the
    /// call timed out or was cancelled and has been reported as failed), nothing is written. Every edit tool
    /// writes through here, so none can write after its call was given up.
    pub fn commit(self, may_write: &dyn Fn() -> Result<(), String>) -> Result<(), String> {
        let mut backups: Vec<Backup> = Vec::new();
        for change in &self.changes {
            let path = match change {
                Change::Write { path, .. } | Change::Delete { path } => path,
            };
            if backups.iter().any(|b| &b.path == path) {
                continue;
            }
            let backup = match fs::read(path) {
                Ok(bytes) => Backup { path: path.clone(), meta: fs::symlink_metadata(path).ok(), bytes: Some(bytes) },
                Err(e) if e.kind() == io::ErrorKind::NotFound => Backup { path: path.clone(), bytes: None, meta: None },
                Err(e) => return Err(format!("could not read {}: {e}", path.display())),
            };
            backups.push(backup);
        }
        let backup_of = |path: &Path| backups.iter().find(|b| b.path == path);
        may_write()?;

        let mut created_dirs = Vec::new();
        let mut steps: Vec<Step> = Vec::new();
        for change in &self.changes {
            let Change::Write { path, bytes, permissions_from } = change else { continue };
            let existing = backup_of(path).and_then(|b| Some((b.bytes.as_deref()?, b.meta.as_ref()?)));
            if existing.is_some_and(|(old, _)| old == bytes.as_slice()) {
                continue;
            }
            let result = (|| {
                if let Some(parent) = path.parent() {
                    create_dirs(parent, &mut created_dirs)?;
                }
                match existing {
                    Some((original, meta)) => Ok(match Staged::replacing(path, bytes, meta)? {
                        Some(staged) => Step::Rename(staged),
                        None => Step::InPlace {
                            write: InPlace::prepare(path, original, meta)?,
                            bytes: bytes.clone(),
                            original: original.to_vec(),
                        },
                    }),
                    None => {
                        let like = permissions_from.as_ref().and_then(|from| fs::metadata(from).ok());
                        Staged::new(path, bytes, like.as_ref()).map(Step::Rename)
                    }
                }
            })();
            match result {
                Ok(step) => steps.push(step),
                Err(e) => {
                    steps.iter().for_each(Step::discard);
                    remove_dirs(&created_dirs);
                    return Err(format!("could not write {}: {e}", path.display()));
                }
            }
        }

        let mut done: Vec<&Path> = Vec::new();
        let mut failure = None;
        for (i, step) in steps.iter().enumerate() {
            let result = match step {
                Step::Rename(staged) => {
                    staged.commit().map_err(|e| format!("could not write {}: {e}", staged.target.display()))
                }
                Step::InPlace { write, bytes, original } => write.commit(bytes, original),
            };
            if let Err(message) = result {
                // A failed write through an inode has put its file back already.
                steps[i..].iter().for_each(Step::discard);
                failure = Some(message);
                break;
            }
            done.push(step.target());
        }
        if failure.is_none() {
            for change in &self.changes {
                let Change::Delete { path } = change else { continue };
                // A path this transaction writes (a move onto its own source) is not deleted.
                if self.changes.iter().any(|c| matches!(c, Change::Write { path: written, .. } if written == path)) {
                    continue;
                }
                if let Err(e) = fs::remove_file(path) {
                    failure = Some(format!("could not delete {}: {e}", path.display()));
                    break;
                }
                done.push(path);
            }
        }
        let result = match failure {
            None => Ok(()),
            Some(message) => {
                restore(&backups, &done, &steps);
                remove_dirs(&created_dirs);
                Err(message)
            }
        };
        for step in &steps {
            if let Step::InPlace { write, .. } = step {
                write.finish();
            }
        }
        result
    }
}

/// Puts back the files in `done` as `backups` recorded them: through the same inode where the change was
/// written through it.
fn restore(backups: &[Backup], done: &[&Path], steps: &[Step]) {
    for backup in backups.iter().filter(|b| done.contains(&b.path.as_path())) {
        let in_place = steps.iter().find_map(|step| match step {
            Step::InPlace { write, .. } if write.target == backup.path => Some(write),
            Step::InPlace { .. } | Step::Rename(_) => None,
        });
        match (&backup.bytes, in_place) {
            (Some(bytes), Some(write)) => {
                let _ = write.restore(bytes);
            }
            (Some(bytes), None) => {
                if let Ok(staged) = Staged::new(&backup.path, bytes, backup.meta.as_ref())
                    && staged.commit().is_err()
                {
                    staged.discard();
                }
            }
            (None, _) => {
                let _ = fs::remove_file(&backup.path);
            }
        }
    }
}

/// `create_dir_all`, recording the directories it created so a failed transaction can remove them.
fn create_dirs(dir: &Path, created: &mut Vec<PathBuf>) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut current = dir;
    while !current.exists() {
        missing.push(current.to_path_buf());
        match current.parent() {
            Some(parent) => current = parent,
            None => break,
        }
    }
    for dir in missing.into_iter().rev() {
        match fs::create_dir(&dir) {
            Ok(()) => created.push(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Removes directories a failed transaction created, deepest first; any that is not empty stays.
fn remove_dirs(created: &[PathBuf]) {
    for dir in created.iter().rev() {
        let _ = fs::remove_dir(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::fs::Permissions;

    #[cfg(unix)]
    #[test]
    fn writes_keep_permissions_and_leave_no_temp_files() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        fs::write(&script, "old").unwrap();
        fs::set_permissions(&script, Permissions::from_mode(0o750)).unwrap();
        let mut tx = Transaction::new();
        tx.push(Change::Write { path: script.clone(), bytes: b"new".to_vec(), permissions_from: None });
        tx.push(Change::Write {
            path: dir.path().join("deep/er/new.txt"),
            bytes: b"x".to_vec(),
            permissions_from: None,
        });
        tx.commit(&|| Ok(())).unwrap();
        assert_eq!(fs::read_to_string(&script).unwrap(), "new");
        assert_eq!(fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o750);
        assert_eq!(fs::read_to_string(dir.path().join("deep/er/new.txt")).unwrap(), "x");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[cfg(unix)]
    fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
        let mut tx = Transaction::new();
        tx.push(Change::Write { path: path.to_owned(), bytes: bytes.to_vec(), permissions_from: None });
        tx.commit(&|| Ok(()))
    }

    #[cfg(unix)]
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<_> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    #[cfg(unix)]
    #[test]
    fn hard_links_owners_and_set_id_bits_are_written_through_the_inode() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let (file, link) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
        fs::write(&file, "old").unwrap();
        fs::hard_link(&file, &link).unwrap();
        let inode = fs::metadata(&file).unwrap().ino();
        write(&file, b"new, and longer").unwrap();
        assert_eq!(fs::read_to_string(&link).unwrap(), "new, and longer");
        write(&link, b"short").unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "short");
        assert_eq!((fs::metadata(&file).unwrap().ino(), fs::metadata(&file).unwrap().nlink()), (inode, 2));
        assert_eq!(names(dir.path()), ["a.txt", "b.txt"], "no backup or temporary file is left");

        let owned = dir.path().join("owned.txt");
        fs::write(&owned, "old").unwrap();
        fs::set_permissions(&owned, Permissions::from_mode(0o4750)).unwrap();
        // As root the file can belong to someone else; otherwise the set-uid bit alone is kept.
        let other = std::os::unix::fs::chown(&owned, Some(1234), Some(4321)).is_ok();
        let before = fs::metadata(&owned).unwrap();
        write(&owned, b"new").unwrap();
        let after = fs::metadata(&owned).unwrap();
        assert_eq!(fs::read_to_string(&owned).unwrap(), "new");
        assert_eq!((after.uid(), after.gid(), after.mode()), (before.uid(), before.gid(), before.mode()));
        if other {
            assert_eq!((after.uid(), after.gid(), after.ino()), (1234, 4321, before.ino()));
        }
    }

    #[cfg(unix)]
    #[test]
    fn extended_attributes_survive_a_rename() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        fs::write(&file, "old").unwrap();
        if rustix::fs::setxattr(&file, "user.toolshed", b"kept", rustix::fs::XattrFlags::empty()).is_err() {
            return; // A filesystem without user attributes has nothing to lose.
        }
        write(&file, b"new").unwrap();
        let mut value = [0u8; 16];
        let len = rustix::fs::getxattr(&file, "user.toolshed", &mut value[..]).unwrap();
        assert_eq!(&value[..len], b"kept");
        assert_eq!(fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(fs::metadata(&file).unwrap().nlink(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn writing_the_same_bytes_writes_nothing() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        fs::write(&file, "same").unwrap();
        let before = fs::metadata(&file).unwrap();
        write(&file, b"same").unwrap();
        let after = fs::metadata(&file).unwrap();
        assert_eq!(
            (after.ino(), after.mtime_nsec(), after.mtime()),
            (before.ino(), before.mtime_nsec(), before.mtime())
        );
    }

    #[test]
    fn a_failed_transaction_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let keep = dir.path().join("keep.txt");
        fs::write(&keep, "original").unwrap();
        fs::create_dir(dir.path().join("blocker")).unwrap();
        let mut tx = Transaction::new();
        tx.push(Change::Write { path: keep.clone(), bytes: b"changed".to_vec(), permissions_from: None });
        tx.push(Change::Write { path: dir.path().join("new/file.txt"), bytes: b"x".to_vec(), permissions_from: None });
        // Deleting a directory with remove_file fails after both writes were renamed into place.
        tx.push(Change::Delete { path: dir.path().join("blocker") });
        assert!(tx.commit(&|| Ok(())).is_err());
        assert_eq!(fs::read_to_string(&keep).unwrap(), "original");
        assert!(!dir.path().join("new").exists());
        let mut names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, ["blocker", "keep.txt"]);
    }
}
