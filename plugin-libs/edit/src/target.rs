//! Where a model-given path really leads: resolved by the host, every symbolic link followed, checked against
//! the workspace roots and `.clineignore`, and what kind of entry is there; and the capped read of the file
//! found there.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use toolshed_plugin_api::{HostClient, TaskInfo};

/// Where a model-given path leads, checked against the workspace and `.clineignore`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The lexical absolute path (what the user recognises).
    pub absolute: PathBuf,
    /// The same path with every symbolic link resolved: the file that is read and replaced.
    pub real: PathBuf,
    /// The path relative to its workspace root, for messages.
    pub display: String,
    /// The real path relative to the canonical root that contains it.
    pub root_relative: PathBuf,
    /// Whether that root is the primary one (the task's `cwd`).
    pub in_primary_root: bool,
    /// Whether a regular file exists there.
    pub exists: bool,
}

impl Target {
    /// The absolute paths an approval request names: the path, and the file it resolves to when that differs.
    pub fn approval_paths(&self) -> Vec<String> {
        let mut paths = vec![self.absolute.to_string_lossy().into_owned()];
        if self.real != self.absolute {
            paths.push(self.real.to_string_lossy().into_owned());
        }
        paths
    }

    /// The paths whose read-cache entries a write invalidates.
    pub fn cache_paths(&self) -> Vec<String> {
        self.approval_paths()
    }
}

/// Why a path cannot be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetError {
    /// `.clineignore` blocks the path, or the file a symbolic link leads to.
    Ignored,
    /// The path resolves outside every workspace root.
    OutsideWorkspace {
        /// Where it resolves to.
        real: PathBuf,
    },
    /// The path is a directory.
    Directory {
        /// The directory.
        real: PathBuf,
    },
    /// Something other than a regular file: a FIFO, a socket, a device.
    NotAFile {
        /// The entry.
        real: PathBuf,
    },
    /// A component of the path is a file, not a directory.
    ParentNotDirectory {
        /// That file.
        ancestor: PathBuf,
    },
    /// A symbolic link whose target does not exist.
    DanglingLink {
        /// The link.
        link: PathBuf,
    },
    /// The file's permissions make it read-only.
    ReadOnly {
        /// The file.
        real: PathBuf,
    },
    /// A host service or the filesystem failed.
    Failed(String),
}

impl TargetError {
    /// The reason, as a sentence for the model.
    pub fn reason(&self) -> String {
        match self {
            TargetError::Ignored => "the path is blocked by the .clineignore file settings.".to_owned(),
            TargetError::OutsideWorkspace { real } => format!(
                "it resolves to {}, which is outside the workspace. Only files inside the workspace can be changed.",
                real.display()
            ),
            TargetError::Directory { real } => format!("{} is a directory, not a file.", real.display()),
            TargetError::NotAFile { real } => format!("{} is not a regular file.", real.display()),
            TargetError::ParentNotDirectory { ancestor } => {
                format!("{} is a file, so it cannot contain other files.", ancestor.display())
            }
            TargetError::DanglingLink { link } => {
                format!("{} is a symbolic link to a file that does not exist.", link.display())
            }
            TargetError::ReadOnly { real } => format!(
                "{} is read-only. It was left unchanged; ask the user to make it writable if it should be edited.",
                real.display()
            ),
            TargetError::Failed(message) => message.clone(),
        }
    }
}

/// One workspace root: as configured and with its symbolic links resolved.
struct Root {
    lexical: PathBuf,
    canonical: PathBuf,
}

fn roots(task: &TaskInfo) -> Vec<Root> {
    let mut paths: Vec<&str> = task.roots.iter().map(|r| r.path.as_str()).collect();
    if paths.is_empty() && !task.cwd.is_empty() {
        paths.push(&task.cwd);
    }
    paths
        .into_iter()
        .map(|p| {
            let lexical = PathBuf::from(p);
            // A root that cannot be canonicalised (it vanished) still bounds the lexical check.
            let canonical = fs::canonicalize(&lexical).unwrap_or_else(|_| lexical.clone());
            Root { lexical, canonical }
        })
        .collect()
}

/// Resolves `raw` (as the model wrote it) with the host, then follows symbolic links on the filesystem and
/// checks the result against the workspace roots and `.clineignore`, and what kind of entry is there.
pub fn locate(host: &HostClient<'_>, raw: &str, task: &TaskInfo) -> Result<Target, TargetError> {
    let service = |e: toolshed_plugin_api::ServiceError| TargetError::Failed(e.message);
    // A write's check: the rules files themselves (`.clineignore` and what it includes) are refused too.
    if !host.path_writable(raw).map_err(service)? {
        return Err(TargetError::Ignored);
    }
    let resolved = host.resolve_path(raw).map_err(service)?;
    let absolute = PathBuf::from(&resolved.absolute);
    let real = real_path(&absolute)?;
    let roots = roots(task);
    let Some((index, root)) = roots.iter().enumerate().find(|(_, root)| real.starts_with(&root.canonical)) else {
        return Err(TargetError::OutsideWorkspace { real });
    };
    if !resolved.inside_workspace {
        return Err(TargetError::OutsideWorkspace { real });
    }
    let root_relative = real.strip_prefix(&root.canonical).map(Path::to_path_buf).unwrap_or_default();
    // `.clineignore` patterns are relative to the lexical root; check the file a link leads to as well.
    let lexical_real = root.lexical.join(&root_relative);
    if lexical_real != absolute && !host.path_writable(&lexical_real.to_string_lossy()).map_err(service)? {
        return Err(TargetError::Ignored);
    }
    let exists = match fs::symlink_metadata(&real) {
        Ok(meta) if meta.is_dir() => return Err(TargetError::Directory { real }),
        Ok(meta) if !meta.is_file() => return Err(TargetError::NotAFile { real }),
        Ok(meta) if meta.permissions().readonly() => return Err(TargetError::ReadOnly { real }),
        Ok(_) => true,
        Err(e) if e.kind() == io::ErrorKind::NotFound => false,
        Err(e) => return Err(TargetError::Failed(format!("{}: {e}", real.display()))),
    };
    Ok(Target { absolute, real, display: resolved.display, root_relative, in_primary_root: index == 0, exists })
}

/// The path with every symbolic link resolved. The deepest ancestor that exists is canonicalised; the part
/// below it does not exist yet, so it holds no links.
fn real_path(absolute: &Path) -> Result<PathBuf, TargetError> {
    let mut existing = absolute.to_path_buf();
    let mut missing: Vec<OsString> = Vec::new();
    loop {
        match fs::symlink_metadata(&existing) {
            Ok(meta) => {
                if !missing.is_empty() && !meta.is_dir() && !meta.file_type().is_symlink() {
                    return Err(TargetError::ParentNotDirectory { ancestor: existing });
                }
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound || e.kind() == io::ErrorKind::NotADirectory => {
                let Some(name) = existing.file_name() else {
                    return Err(TargetError::Failed(format!("{}: {e}", absolute.display())));
                };
                missing.push(name.to_owned());
                existing.pop();
            }
            Err(e) => return Err(TargetError::Failed(format!("{}: {e}", existing.display()))),
        }
    }
    let mut real = match fs::canonicalize(&existing) {
        Ok(real) => real,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(TargetError::DanglingLink { link: existing }),
        Err(e) => return Err(TargetError::Failed(format!("{}: {e}", existing.display()))),
    };
    if !missing.is_empty() && !real.is_dir() {
        return Err(TargetError::ParentNotDirectory { ancestor: real });
    }
    real.extend(missing.iter().rev());
    Ok(real)
}

/// The largest file an edit reads: Cline's limit for reading a file into context (20 × 1000 × 1024 bytes).
/// An edit holds the file, its new text and a diff in memory at once.
pub const MAX_EDIT_BYTES: u64 = 20 * 1000 * 1024;

/// Reads a file's bytes, for an edit: `path` is the target's real path, checked by [`locate`], and the open
/// confirms the file opened is still there (a link swapped in since is refused), a regular file, and at most
/// [`MAX_EDIT_BYTES`].
pub fn read(path: &Path) -> Result<Vec<u8>, String> {
    let failed = |why: String| format!("could not read {}: {why}", path.display());
    let file = toolshed_plugin_api::sdk::open_real(path).map_err(|e| match e {
        toolshed_plugin_api::sdk::OpenError::Io(e) => failed(e.to_string()),
        toolshed_plugin_api::sdk::OpenError::Refused(why) => failed(why),
    })?;
    toolshed_plugin_api::sdk::read_capped(file, MAX_EDIT_BYTES)
        .map_err(|e| failed(e.describe(&path.display().to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[cfg(unix)]
    #[test]
    fn real_paths_follow_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir(root.join("src")).unwrap();
        fs::write(root.join("src/a.txt"), "a").unwrap();
        std::os::unix::fs::symlink(root.join("src"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("dangling")).unwrap();
        assert_eq!(real_path(&root.join("link/a.txt")).unwrap(), root.join("src/a.txt"));
        assert_eq!(real_path(&root.join("link/new/b.txt")).unwrap(), root.join("src/new/b.txt"));
        assert_eq!(
            real_path(&root.join("src/a.txt/c")),
            Err(TargetError::ParentNotDirectory { ancestor: root.join("src/a.txt") })
        );
        assert_eq!(real_path(&root.join("dangling")), Err(TargetError::DanglingLink { link: root.join("dangling") }));
    }
}
