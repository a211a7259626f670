//! Paths as the checks see them: `.` and `..` removed without touching the disk, and symbolic links resolved
//! (for a path that does not exist yet, those of its longest existing ancestor). The workspace's containment
//! check and `.clineignore` both start here.

use std::path::{Component, Path, PathBuf};

/// `path` with its symbolic links resolved: the canonical form of its longest existing ancestor joined with
/// the rest. `None` when not even the filesystem root resolves.
pub(crate) fn resolve_links(path: &Path) -> Option<PathBuf> {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return Some(rest.iter().rev().fold(real, |acc: PathBuf, part| acc.join(part)));
        }
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    }
}

/// Lexical normalisation (`.` and `..` removed) without touching the filesystem, as Node's `path.resolve`.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}
