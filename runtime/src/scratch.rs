//! Scratch space: directories the runtime made itself and checked, private to the user (mode 0700, owned by
//! them, no symbolic link on the way), and below them one per task, for the files that hold a task's data (a
//! command's spilled output, the browser's profile). Never a shared directory such as `$TMPDIR/cline`, which
//! another user may have made first; and, where the user has a place of their own, not below `/tmp` or
//! `TMPDIR` at all, which a command in the `workspace-write` sandbox may write: there it could swap a task's
//! directory for a link between its check and the file's creation, and have the host write where it cannot.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The user's cache directory for Toolshed: `$XDG_CACHE_HOME/toolshed` (an absolute `XDG_CACHE_HOME` only, as
/// the XDG spec says), else `$HOME/.cache/toolshed`; `None` without either. A relative or empty `HOME` names no
/// home: joined, it would put the cache in the current directory, a workspace's.
pub(crate) fn user_cache(
    xdg_cache_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    let cache = xdg_cache_home
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| home.map(PathBuf::from).filter(|home| home.is_absolute()).map(|home| home.join(".cache")))?;
    Some(cache.join("toolshed"))
}

/// This user's scratch root, made once per process: the first of `$XDG_RUNTIME_DIR/toolshed`, the user's
/// cache (`~/.cache/toolshed/scratch`) and `$TMPDIR/toolshed-<uid>` that is (or can be made) this user's own
/// and private; else a new directory of random name in `TMPDIR`.
pub(crate) fn root() -> Result<&'static Path, String> {
    static ROOT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    ROOT.get_or_init(|| {
        let uid = nix::unistd::geteuid().as_raw();
        let tmp = std::env::temp_dir();
        let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).filter(|d| d.is_absolute());
        let cache = user_cache(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME"));
        let candidates = [
            runtime_dir.filter(|dir| private_dir(dir).is_ok()).map(|dir| dir.join("toolshed")),
            cache.map(|cache| cache.join("scratch")),
            Some(tmp.join(format!("toolshed-{uid}"))),
        ];
        for candidate in candidates.into_iter().flatten() {
            if let Some(parent) = candidate.parent() {
                let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent);
            }
            match private_dir(&candidate) {
                Ok(()) => return Ok(candidate),
                Err(why) => tracing::warn!("not using {} for scratch files: {why}", candidate.display()),
            }
        }
        tempfile::Builder::new()
            .prefix(&format!("toolshed-{uid}-"))
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir_in(&tmp)
            .map(tempfile::TempDir::keep)
            .map_err(|e| format!("cannot make a private scratch directory in {}: {e}", tmp.display()))
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
