//! The `.clineignore` controller: gitignore rules at the primary root that fence files off from the model.

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// The rules of one workspace root's `.clineignore`, reloaded when the file changes.
#[derive(Debug)]
pub struct ClineIgnore {
    root: PathBuf,
    state: Mutex<Loaded>,
}

#[derive(Debug)]
struct Loaded {
    mtime: Option<SystemTime>,
    rules: Option<Gitignore>,
}

impl ClineIgnore {
    /// The controller for `root` (the file need not exist).
    pub fn new(root: &Path) -> Self {
        let file = root.join(".clineignore");
        let mtime = modified(&file);
        Self { root: root.to_owned(), state: Mutex::new(Loaded { mtime, rules: build(root, &file) }) }
    }

    /// Whether the model may access `absolute`. Paths outside the root are allowed (as Cline does),
    /// `.clineignore` itself never is.
    pub fn allows(&self, absolute: &Path) -> bool {
        let Ok(relative) = absolute.strip_prefix(&self.root) else {
            return true;
        };
        if relative.as_os_str().is_empty() {
            return true;
        }
        if relative == Path::new(".clineignore") {
            return false;
        }
        let file = self.root.join(".clineignore");
        let mtime = modified(&file);
        let Ok(mut state) = self.state.lock() else {
            // A poisoned lock means a panic elsewhere mid-reload; fail closed.
            return false;
        };
        if state.mtime != mtime {
            *state = Loaded { mtime, rules: build(&self.root, &file) };
        }
        match &state.rules {
            // Cline checks paths as files: `secret/` blocks `secret/a.txt` but not the bare `secret`.
            Some(rules) => !rules.matched_path_or_any_parents(relative, false).is_ignore(),
            None => true,
        }
    }
}

fn modified(file: &Path) -> Option<SystemTime> {
    std::fs::metadata(file).and_then(|m| m.modified()).ok()
}

/// Builds the rules, expanding `!include FILE` lines (one level, missing files skipped) as Cline does.
fn build(root: &Path, file: &Path) -> Option<Gitignore> {
    let text = std::fs::read_to_string(file).ok()?;
    let mut builder = GitignoreBuilder::new(root);
    let mut add = |line: &str| {
        // A malformed glob is skipped rather than disabling the whole file.
        let _ = builder.add_line(None, line);
    };
    for line in text.lines() {
        match line.trim().strip_prefix("!include ") {
            Some(include) => {
                if let Ok(included) = std::fs::read_to_string(root.join(include.trim())) {
                    included.lines().for_each(&mut add);
                }
            }
            None => add(line),
        }
    }
    builder.build().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_includes_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".clineignore"), "secret/\n*.key\n!include extra.txt\n").unwrap();
        std::fs::write(root.join("extra.txt"), "private.md\n").unwrap();
        let ci = ClineIgnore::new(root);
        assert!(!ci.allows(&root.join("secret/a.txt")));
        assert!(ci.allows(&root.join("secret")));
        assert!(!ci.allows(&root.join("deep/x.key")));
        assert!(!ci.allows(&root.join("private.md")));
        assert!(!ci.allows(&root.join(".clineignore")));
        assert!(ci.allows(&root.join("src/main.rs")));
        assert!(ci.allows(Path::new("/elsewhere/secret/a.txt")));
        // Rewritten with a different mtime: the new rules apply.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(root.join(".clineignore"), "src/\n").unwrap();
        let later = SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options().write(true).open(root.join(".clineignore")).unwrap().set_modified(later).unwrap();
        assert!(!ci.allows(&root.join("src/main.rs")));
        assert!(ci.allows(&root.join("secret/a.txt")));
    }
}
