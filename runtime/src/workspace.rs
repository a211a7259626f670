//! Workspace roots and path resolution: relative, absolute and `@root:path` paths to absolute ones, the
//! `.clineignore` check of each root, and whether a path lies inside the workspace.
//!
//! Both checks look at the path the model will really reach: hints are stripped and `.`/`..` removed first,
//! and then symbolic links are resolved too (for a path that does not exist yet, those of its longest
//! existing ancestor), so a link inside the workspace cannot lead past `.clineignore` or out of the
//! workspace without approval.

use crate::clineignore::{self, ClineIgnore, Rules};
use crate::paths::{normalize, resolve_links};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolshed_plugin_api::services::ResolvedPath;
use toolshed_plugin_api::WorkspaceRoot;

/// The roots a task works in (the primary first), each with its own `.clineignore`.
#[derive(Debug)]
pub struct Workspace {
    roots: Vec<Root>,
}

#[derive(Debug)]
struct Root {
    name: String,
    /// Absolute and lexically normalised, as the host gave it.
    path: PathBuf,
    /// With symbolic links resolved, when it exists and differs from `path`.
    canonical: Option<PathBuf>,
    ignore: ClineIgnore,
}

impl Root {
    /// `path` relative to this root, if it lies inside (under either spelling of the root).
    fn relative<'a>(&self, path: &'a Path) -> Option<&'a Path> {
        path.strip_prefix(&self.path).ok().or_else(|| self.canonical.as_ref().and_then(|c| path.strip_prefix(c).ok()))
    }
}

impl Workspace {
    /// A workspace over `roots`; the first is the primary root. Relative roots are made absolute.
    pub fn new(roots: &[WorkspaceRoot]) -> Self {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let mut named: Vec<(String, PathBuf)> =
            roots.iter().map(|r| (r.name.clone(), normalize(&cwd.join(&r.path)))).collect();
        if named.is_empty() {
            named.push((root_name(&cwd), normalize(&cwd)));
        }
        let roots = named
            .into_iter()
            .map(|(name, path)| {
                let canonical = path.canonicalize().ok().filter(|c| *c != path);
                let ignore = ClineIgnore::new(&path);
                Root { name, path, canonical, ignore }
            })
            .collect();
        Self { roots }
    }

    /// Every root, the primary first, as configured (not resolved).
    pub fn roots(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().map(|r| r.path.as_path())
    }

    /// The primary root.
    pub fn primary(&self) -> &Path {
        // `new` always leaves at least one root.
        self.roots.first().map(|r| r.path.as_path()).unwrap_or(Path::new("/"))
    }

    /// Resolves a model-given path as Cline does (§17): absolute paths unchanged, `@hint:rel` against the
    /// named root in multi-root workspaces, everything else against the primary root.
    pub fn resolve(&self, raw: &str) -> ResolvedPath {
        let raw = raw.trim();
        let (root_index, rel, display) = match self.parse_hint(raw) {
            Some((index, hint, rel)) => (index, rel, Some(format!("@{hint}:{rel}"))),
            None => (0, raw, None),
        };
        let root = &self.roots[root_index.min(self.roots.len() - 1)];
        let absolute = normalize(&root.path.join(rel));
        let display = display.unwrap_or_else(|| match absolute.strip_prefix(&root.path) {
            Ok(p) if !p.as_os_str().is_empty() => p.to_string_lossy().into_owned(),
            Ok(_) => ".".to_owned(),
            Err(_) => absolute.to_string_lossy().into_owned(),
        });
        ResolvedPath {
            inside_workspace: self.contains(&absolute),
            absolute: absolute.to_string_lossy().into_owned(),
            display,
            root: root.name.clone(),
        }
    }

    /// Whether `.clineignore` allows the model-given path (checked on the resolved path, our fix of Cline).
    /// The host's service checks batches with [`Workspace::allows_all`].
    #[cfg(test)]
    pub fn allows(&self, raw: &str) -> bool {
        self.allows_all(std::slice::from_ref(&raw.to_owned())).first().copied().unwrap_or(false)
    }

    /// [`Workspace::allows`] for many paths, with each root's rules loaded (or checked for changes) once.
    pub fn allows_all(&self, raws: &[String]) -> Vec<bool> {
        let rules: Vec<Arc<Rules>> = self.roots.iter().map(|root| root.ignore.rules()).collect();
        if !rules.iter().any(|r| r.is_active()) {
            return vec![true; raws.len()];
        }
        raws.iter().map(|raw| self.allowed_by(&rules, Path::new(&self.resolve(raw).absolute))).collect()
    }

    /// [`Workspace::allows_all`] for paths a tool means to write, move or delete: the rules files themselves
    /// (`.clineignore` and every file it includes, under any name) are refused as well, since changing one
    /// changes what is blocked.
    pub fn writes_allowed(&self, raws: &[String]) -> Vec<bool> {
        let rules: Vec<Arc<Rules>> = self.roots.iter().map(|root| root.ignore.rules()).collect();
        if !rules.iter().any(|r| r.is_active()) {
            return vec![true; raws.len()];
        }
        raws.iter()
            .map(|raw| {
                let absolute = PathBuf::from(self.resolve(raw).absolute);
                let real = resolve_links(&absolute);
                let identity = std::fs::metadata(&absolute).ok().and_then(|meta| clineignore::identity(&meta));
                self.allowed_by(&rules, &absolute)
                    && !rules.iter().any(|rules| rules.protects(&absolute, real.as_deref(), identity))
            })
            .collect()
    }

    /// Cline's `validateCommand` (§15) over every root's rules: the first argument of a file-reading command
    /// that `.clineignore` blocks, resolved as the model's paths are.
    pub fn check_command(&self, command: &str) -> Option<String> {
        self.check_command_in(command, None)
    }

    /// [`Workspace::check_command`] for a command that runs in `cwd` (absolute; the primary root when
    /// `None`): its relative arguments are the files below `cwd`, so that is where they are checked. A
    /// command sent to another root with `@name:` must be checked there, not in the primary root.
    pub fn check_command_in(&self, command: &str, cwd: Option<&Path>) -> Option<String> {
        let rules: Vec<Arc<Rules>> = self.roots.iter().map(|root| root.ignore.rules()).collect();
        if !rules.iter().any(|r| r.is_active()) {
            return None;
        }
        let base = cwd.map_or_else(|| self.primary().to_path_buf(), Path::to_path_buf);
        clineignore::blocked_argument(command, |arg| {
            clineignore::glob_expansions(&base.join(arg)).iter().any(|path| !self.allowed_by(&rules, &normalize(path)))
        })
    }

    /// Whether every root's rules allow `absolute`, spelled as given and with its links resolved.
    fn allowed_by(&self, rules: &[Arc<Rules>], absolute: &Path) -> bool {
        let real = resolve_links(absolute);
        let spellings = std::iter::once(absolute).chain(real.as_deref().filter(|real| *real != absolute));
        for path in spellings {
            for (root, rules) in self.roots.iter().zip(rules) {
                if let Some(relative) = root.relative(path)
                    && rules.denies(relative)
                {
                    return false;
                }
            }
        }
        true
    }

    /// Whether an absolute path lies inside a root, both as spelled and with its symbolic links resolved:
    /// a link inside the workspace that points outside it leads outside.
    pub fn contains(&self, absolute: &Path) -> bool {
        let absolute = normalize(absolute);
        let inside = |path: &Path| self.roots.iter().any(|root| root.relative(path).is_some());
        inside(&absolute) && resolve_links(&absolute).is_none_or(|real| inside(&real))
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
            .position(|root| root.name == hint)
            .or_else(|| self.roots.iter().position(|root| root.path.to_string_lossy().contains(hint)))
            .unwrap_or(0);
        Some((index, hint, rel))
    }
}

/// A root's default name: its directory name.
pub fn root_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "root".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::fs;

    fn root(name: &str, path: &str) -> WorkspaceRoot {
        WorkspaceRoot { name: name.into(), path: path.into() }
    }

    fn root_at(name: &str, path: &Path) -> WorkspaceRoot {
        WorkspaceRoot { name: name.into(), path: path.to_string_lossy().into_owned() }
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

    #[test]
    fn clineignore_is_checked_after_hints_are_stripped_in_every_root() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        fs::create_dir_all(&a).unwrap();
        fs::create_dir_all(&b).unwrap();
        fs::write(a.join(".clineignore"), "secret/\n").unwrap();
        fs::write(b.join(".clineignore"), "*.pem\n").unwrap();
        let ws = Workspace::new(&[root_at("a", &a), root_at("b", &b)]);
        let checks = ws.allows_all(&[
            "secret/x".to_owned(),
            "@a:secret/x".to_owned(),
            "@b:secret/x".to_owned(),
            "@b:keys/k.pem".to_owned(),
            "keys/k.pem".to_owned(),
            b.join("k.pem").to_string_lossy().into_owned(),
        ]);
        assert_eq!(checks, [false, false, true, false, true, false]);
    }

    #[cfg(unix)]
    #[test]
    fn links_are_resolved_for_clineignore_and_containment() {
        let dir = tempfile::tempdir().unwrap();
        let ws_dir = dir.path().join("ws");
        let outside = dir.path().join("outside");
        fs::create_dir_all(ws_dir.join("secret")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(ws_dir.join("secret/key.txt"), "k").unwrap();
        fs::write(ws_dir.join(".clineignore"), "secret/\n").unwrap();
        std::os::unix::fs::symlink(ws_dir.join("secret"), ws_dir.join("innocent")).unwrap();
        std::os::unix::fs::symlink(ws_dir.join("secret/key.txt"), ws_dir.join("key-link.txt")).unwrap();
        std::os::unix::fs::symlink(&outside, ws_dir.join("escape")).unwrap();
        let ws = Workspace::new(&[root_at("ws", &ws_dir)]);
        assert!(!ws.allows("innocent/key.txt"));
        assert!(!ws.allows("key-link.txt"));
        // A file that does not exist yet is checked through its existing ancestor.
        assert!(!ws.allows("innocent/new.txt"));
        assert!(ws.allows("escape/x.txt"));
        assert!(!ws.contains(&ws_dir.join("escape/x.txt")));
        assert!(!ws.resolve("escape/x.txt").inside_workspace);
        assert!(ws.contains(&ws_dir.join("innocent/new.txt")));
        assert!(!ws.contains(&outside));
        assert_eq!(ws.check_command("cat innocent/key.txt"), Some("innocent/key.txt".to_owned()));
        assert_eq!(ws.check_command("cat README.md"), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_root_given_through_a_link_still_matches() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        fs::create_dir_all(real.join("secret")).unwrap();
        fs::write(real.join(".clineignore"), "secret/\n").unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("alias")).unwrap();
        let ws = Workspace::new(&[root_at("alias", &dir.path().join("alias"))]);
        assert!(!ws.allows("secret/a.txt"));
        assert!(!ws.allows(&real.join("secret/a.txt").to_string_lossy()));
        assert!(ws.contains(&real.join("x")));
        assert!(ws.contains(&dir.path().join("alias/x")));
    }
}
