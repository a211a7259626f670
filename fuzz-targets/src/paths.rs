//! Targets for workspace paths: `.clineignore` files and the `@name:path` hints of multi-root workspaces,
//! each over fresh roots on disk.

use crate::parts;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;
use toolshed::fuzzing::{normalize, FuzzWorkspace};
use toolshed_plugin_api::WorkspaceRoot;

/// The directories of roots `front` and `back`, made once per process in a temporary directory (a fresh one
/// per input cost more than the checks themselves), canonical so that containment can be checked lexically
/// (they hold no links). Every workspace built on them reads its `.clineignore` afresh.
fn root_dirs() -> Option<&'static [PathBuf; 2]> {
    static DIRS: OnceLock<Option<(tempfile::TempDir, [PathBuf; 2])>> = OnceLock::new();
    DIRS.get_or_init(|| {
        let dir = tempfile::tempdir().ok()?;
        let base = dir.path().canonicalize().ok()?;
        let dirs = [base.join("front"), base.join("back")];
        dirs.iter().try_for_each(std::fs::create_dir_all).ok()?;
        Some((dir, dirs))
    })
    .as_ref()
    .map(|(_, dirs)| dirs)
}

/// Roots on [`root_dirs`] with the given names.
fn roots(names: [&str; 2]) -> Option<Vec<WorkspaceRoot>> {
    let dirs = root_dirs()?;
    Some(
        dirs.iter()
            .zip(names)
            .map(|(path, name)| WorkspaceRoot { name: name.to_owned(), path: path.to_string_lossy().into_owned() })
            .collect(),
    )
}

/// `.clineignore` (the first part), a file it may `!include` as `inc.txt` (the second), paths to check (the
/// lines of the third) and a command (the fourth). Invariants: no panic or hang; a non-empty `.clineignore`
/// blocks itself wherever it appears; checks are deterministic; a blocked command argument is one of the
/// command's words.
pub fn clineignore(data: &[u8]) {
    let parts = parts(data);
    let part = |i: usize| parts.get(i).map(String::as_str).unwrap_or_default();
    let Some(roots) = roots(["front", "back"]) else {
        return;
    };
    let primary = Path::new(&roots[0].path);
    if std::fs::write(primary.join(".clineignore"), part(0)).is_err()
        || std::fs::write(primary.join("inc.txt"), part(1)).is_err()
    {
        return;
    }
    let workspace = FuzzWorkspace::new(&roots);
    let mut paths: Vec<String> = part(2).lines().map(str::to_owned).collect();
    paths.extend([".clineignore", "deep/dir/.clineignore", "@front:.clineignore"].map(str::to_owned));
    let allowed = workspace.allows_all(&paths);
    assert_eq!(allowed.len(), paths.len());
    assert_eq!(allowed, workspace.allows_all(&paths), "checks are not deterministic");
    if !part(0).is_empty() {
        assert!(allowed[paths.len() - 3..].iter().all(|a| !a), ".clineignore is not blocked by itself");
    }
    if let Some(argument) = workspace.check_command(part(3)) {
        assert!(part(3).split_whitespace().any(|w| w == argument), "{argument:?} is not a word of the command");
    }
}

/// Whether `path` is lexically inside one of `roots`.
fn lexically_inside(path: &Path, roots: &[WorkspaceRoot]) -> bool {
    roots.iter().any(|root| path.starts_with(&root.path))
}

/// Paths as a model writes them (one per line of the second part), in a two-root workspace whose second
/// root is named by the first part. Invariants: no panic; the absolute path is normalised; inside means
/// lexically inside a root (the roots hold no links); a hint naming a root with a relative path that never
/// climbs lands inside that root and is displayed as `@hint:rel`; resolving an absolute result again
/// changes nothing.
pub fn path_hints(data: &[u8]) {
    let parts = parts(data);
    let name = parts.first().map(String::as_str).filter(|n| !n.is_empty()).unwrap_or("back");
    let Some(roots) = roots(["front", name]) else {
        return;
    };
    let workspace = FuzzWorkspace::new(&roots);
    let raws = parts.get(1).map(String::as_str).unwrap_or_default();
    for raw in raws.split('\n').take(64) {
        let resolved = workspace.resolve(raw);
        let absolute = PathBuf::from(&resolved.absolute);
        assert!(absolute.is_absolute(), "{raw:?} resolved to a relative path {absolute:?}");
        assert_eq!(normalize(&absolute), absolute, "{raw:?} resolved to an unnormalised path");
        assert_eq!(resolved.inside_workspace, workspace.contains(&absolute), "{raw:?}: inside disagrees");
        assert_eq!(resolved.inside_workspace, lexically_inside(&absolute, &roots), "{raw:?}: inside is wrong");
        // Paths are trimmed as Cline trims them, so one ending in a space is not a fixed point (the fuzzer found
        // `@back: / /`, whose last component is a space).
        if resolved.absolute.trim() == resolved.absolute {
            let again = workspace.resolve(&resolved.absolute);
            assert_eq!(again.absolute, resolved.absolute, "resolving {raw:?} twice moved it");
        }
        // A hint that names a root exactly, with a relative path that never climbs, stays in that root.
        let Some((hint, rel)) = raw.trim().strip_prefix('@').and_then(|rest| rest.split_once(':')) else {
            continue;
        };
        let (hint, rel) = (hint.trim(), rel.trim());
        let Some(root) = roots.iter().find(|r| r.name == hint) else {
            continue;
        };
        let climbs = Path::new(rel).components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
        if hint.is_empty() || climbs || Path::new(raw.trim()).is_absolute() {
            continue;
        }
        assert!(absolute.starts_with(&root.path), "{raw:?} left root {}: {absolute:?}", root.name);
        assert!(resolved.inside_workspace, "{raw:?} is not inside");
        assert_eq!(resolved.display, format!("@{hint}:{rel}"));
        assert_eq!(resolved.root, root.name);
    }
}
