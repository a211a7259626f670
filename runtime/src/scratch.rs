//! Scratch space: directories the runtime made itself and checked, private to the user (mode 0700, owned by
//! them, no symbolic link on the way), and below them one per task, for the files that hold a task's data (a
//! command's spilled output, the browser's profile). Never a shared directory such as `$TMPDIR/cline`, which
//! another user may have made first.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// This user's scratch root: `$TMPDIR/toolshed-<uid>` when it is (or can be made) this user's own and
/// private; else a new directory of random name beside it. Made once per process.
pub(crate) fn root() -> Result<&'static Path, String> {
    static ROOT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    ROOT.get_or_init(|| {
        let uid = nix::unistd::geteuid().as_raw();
        let tmp = std::env::temp_dir();
        let named = tmp.join(format!("toolshed-{uid}"));
        match private_dir(&named) {
            Ok(()) => Ok(named),
            Err(why) => {
                tracing::warn!("not using {}: {why}; using a new private directory instead", named.display());
                tempfile::Builder::new()
                    .prefix(&format!("toolshed-{uid}-"))
                    .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                    .tempdir_in(&tmp)
                    .map(tempfile::TempDir::keep)
                    .map_err(|e| format!("cannot make a private scratch directory in {}: {e}", tmp.display()))
            }
        }
    })
    .as_ref()
    .map(PathBuf::as_path)
    .map_err(Clone::clone)
}

/// The scratch directory of the task `task_id`, made private below [`root`] if it is not there yet.
pub(crate) fn task_dir(task_id: &str) -> Result<PathBuf, String> {
    // A task id names a directory only through characters that cannot climb or hide: anything else, and
    // the length, is folded into a hash.
    let plain = !task_id.is_empty()
        && task_id.len() <= 64
        && task_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let name = match plain {
        true => format!("task-{task_id}"),
        false => format!("task-{:016x}", xxhash_rust::xxh3::xxh3_64(task_id.as_bytes())),
    };
    let dir = root()?.join(name);
    private_dir(&dir).map_err(|why| format!("cannot use the task's scratch directory {}: {why}", dir.display()))?;
    Ok(dir)
}

/// Makes `dir` with mode 0700, or accepts it as it is only when it is a directory (not a link to one) owned
/// by this user that nobody else may enter.
fn private_dir(dir: &Path) -> Result<(), String> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e.to_string()),
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    let uid = nix::unistd::geteuid().as_raw();
    if !meta.file_type().is_dir() {
        return Err("it is not a directory".to_owned());
    }
    if meta.uid() != uid {
        return Err(format!("it is owned by uid {}, not by this user ({uid})", meta.uid()));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!("others may use it (mode {:o})", meta.mode() & 0o7777));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_someone_else_could_use_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        let open = base.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(private_dir(&open).unwrap_err().contains("mode 777"));
        let link = base.path().join("link");
        let own = base.path().join("own");
        assert_eq!(private_dir(&own), Ok(()));
        std::os::unix::fs::symlink(&own, &link).unwrap();
        assert!(private_dir(&link).unwrap_err().contains("not a directory"));
        let file = base.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(private_dir(&file).is_err());
    }

    #[test]
    fn task_names_cannot_climb() {
        for id in ["../x", "a/b", "", &"x".repeat(200), ".."] {
            let dir = task_dir(id).unwrap();
            assert_eq!(dir.parent(), Some(root().unwrap()), "{id}");
            let name = dir.file_name().unwrap().to_str().unwrap();
            assert!(name.starts_with("task-") && !name.contains(".."), "{id} -> {name}");
        }
    }
}
