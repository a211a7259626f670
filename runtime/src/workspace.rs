//! Workspace roots and path resolution: relative, absolute and `@root:path` paths to absolute ones.

use crate::clineignore::ClineIgnore;
use std::path::{Component, Path, PathBuf};
use toolshed_plugin_api::services::ResolvedPath;
use toolshed_plugin_api::WorkspaceRoot;

/// The roots a task works in (the primary first) and the `.clineignore` of the primary root.
#[derive(Debug)]
pub struct Workspace {
    roots: Vec<(String, PathBuf)>,
    ignore: ClineIgnore,
}

impl Workspace {
    /// A workspace over `roots`; the first is the primary root. Relative roots are made absolute.
    pub fn new(roots: &[WorkspaceRoot]) -> Self {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let mut roots: Vec<(String, PathBuf)> =
            roots.iter().map(|r| (r.name.clone(), normalize(&cwd.join(&r.path)))).collect();
        if roots.is_empty() {
            roots.push((root_name(&cwd), normalize(&cwd)));
        }
        let ignore = ClineIgnore::new(&roots[0].1);
        Self { roots, ignore }
    }

    /// The primary root.
    pub fn primary(&self) -> &Path {
        &self.roots[0].1
    }

    /// Resolves a model-given path as Cline does (§17): absolute paths unchanged, `@hint:rel` against the
    /// named root in multi-root workspaces, everything else against the primary root.
    pub fn resolve(&self, raw: &str) -> ResolvedPath {
        let raw = raw.trim();
        let (root_name, root, rel, display) = match self.parse_hint(raw) {
            Some((index, hint, rel)) => {
                let (name, path) = &self.roots[index];
                (name.clone(), path.clone(), rel.to_owned(), format!("@{hint}:{rel}"))
            }
            None => {
                let (name, path) = &self.roots[0];
                (name.clone(), path.clone(), raw.to_owned(), String::new())
            }
        };
        let absolute = normalize(&root.join(&rel));
        let inside = self.roots.iter().any(|(_, r)| absolute.starts_with(r));
        let display = if !display.is_empty() {
            display
        } else {
            match absolute.strip_prefix(&root) {
                Ok(p) if !p.as_os_str().is_empty() => p.to_string_lossy().into_owned(),
                Ok(_) => ".".to_owned(),
                Err(_) => absolute.to_string_lossy().into_owned(),
            }
        };
        ResolvedPath {
            absolute: absolute.to_string_lossy().into_owned(),
            display,
            root: root_name,
            inside_workspace: inside,
        }
    }

    /// Whether `.clineignore` allows the model-given path (checked on the resolved path, our fix of Cline).
    pub fn allows(&self, raw: &str) -> bool {
        self.ignore.allows(Path::new(&self.resolve(raw).absolute))
    }

    /// Whether an absolute path lies inside a root.
    pub fn contains(&self, absolute: &Path) -> bool {
        let absolute = normalize(absolute);
        self.roots.iter().any(|(_, r)| absolute.starts_with(r))
    }

    fn parse_hint<'a>(&self, raw: &'a str) -> Option<(usize, &'a str, &'a str)> {
        if self.roots.len() < 2 || Path::new(raw).is_absolute() {
            return None;
        }
        let rest = raw.strip_prefix('@')?;
        let (hint, rel) = rest.split_once(':')?;
        let (hint, rel) = (hint.trim(), rel.trim());
        if hint.is_empty() {
            return None;
        }
        let index = self
            .roots
            .iter()
            .position(|(name, _)| name == hint)
            .or_else(|| self.roots.iter().position(|(_, path)| path.to_string_lossy().contains(hint)))
            .unwrap_or(0);
        Some((index, hint, rel))
    }
}

/// A root's default name: its directory name.
pub fn root_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "root".to_owned())
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

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn root(name: &str, path: &str) -> WorkspaceRoot {
        WorkspaceRoot { name: name.into(), path: path.into() }
    }

    #[test]
    fn single_root_resolution() {
        let ws = Workspace::new(&[root("proj", "/w/proj")]);
        let r = ws.resolve("src/../src/a.rs");
        assert_eq!(r.absolute, "/w/proj/src/a.rs");
        assert_eq!(r.display, "src/a.rs");
        assert!(r.inside_workspace);
        let outside = ws.resolve("../other/x");
        assert_eq!(outside.absolute, "/w/other/x");
        assert!(!outside.inside_workspace);
        assert_eq!(ws.resolve("/etc/passwd").absolute, "/etc/passwd");
        // Single-root mode treats `@x:` as a literal component.
        assert_eq!(ws.resolve("@x:y").absolute, "/w/proj/@x:y");
    }

    #[test]
    fn multi_root_hints() {
        let ws = Workspace::new(&[root("front", "/w/frontend"), root("back", "/w/backend")]);
        let r = ws.resolve("@back:src/main.rs");
        assert_eq!(r.absolute, "/w/backend/src/main.rs");
        assert_eq!(r.display, "@back:src/main.rs");
        assert_eq!(r.root, "back");
        // Found by path containment, and unknown hints fall back to the primary root.
        assert_eq!(ws.resolve("@backend:x").absolute, "/w/backend/x");
        assert_eq!(ws.resolve("@nope:x").absolute, "/w/frontend/x");
        assert_eq!(ws.resolve("@back:").absolute, "/w/backend");
    }
}
