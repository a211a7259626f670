//! The `.clineignore` controller (Cline's `ClineIgnoreController`, §15): gitignore rules in a workspace root's
//! `.clineignore` that fence files off from the model, plus `validateCommand` for file-reading commands.
//!
//! Semantics follow what Cline's `ignore@7` package does, not what git's own matcher would do where the two
//! differ: patterns are matched case-insensitively, a file inside an ignored directory cannot be re-included
//! by a later `!negation`, and a directory pattern `secret/` blocks `secret/a.txt` but not the bare `secret`
//! (every checked path is treated as a file). `!include FILE` lines are replaced by the lines of `FILE`
//! (resolved against the root, one level, missing files skipped). When the file exists and is not empty,
//! `.clineignore` itself is blocked wherever it appears. No file, or an empty one, blocks nothing.
//!
//! The rules are reloaded whenever `.clineignore` or an included file changes: every check compares their
//! metadata (modification time, size, inode) with what was read, which costs one `stat` per file and batch.

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The name of the file, relative to its root.
const FILE_NAME: &str = ".clineignore";

/// Commands whose later arguments Cline's `validateCommand` checks as paths (first token, lower-cased).
const FILE_READING_COMMANDS: &[&str] =
    &["cat", "less", "more", "head", "tail", "grep", "awk", "sed", "get-content", "gc", "type", "select-string", "sls"];

/// The `.clineignore` of one workspace root, reloaded when it changes.
#[derive(Debug)]
pub struct ClineIgnore {
    root: PathBuf,
    current: Mutex<Arc<Rules>>,
}

/// One loaded version of a root's rules; cheap to share between the paths of one batch.
#[derive(Debug)]
pub struct Rules {
    /// The files read to build these rules (`.clineignore` first, then included files) and what their
    /// metadata was; a difference on the next check means the rules are stale.
    sources: Vec<(PathBuf, Option<Stamp>)>,
    /// The matcher; `None` when nothing is blocked (no file, or an empty one).
    matcher: Option<Gitignore>,
}

/// What identifies one version of a file on disk without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

impl ClineIgnore {
    /// The controller for `root` (the file need not exist yet).
    pub fn new(root: &Path) -> Self {
        Self { root: root.to_owned(), current: Mutex::new(Arc::new(Rules::load(root))) }
    }

    /// The current rules, reloaded first if `.clineignore` or an included file changed on disk.
    pub fn rules(&self) -> Arc<Rules> {
        let Ok(mut current) = self.current.lock() else {
            // A poisoned lock means a panic elsewhere mid-reload; fail closed.
            return Arc::new(Rules::deny_all());
        };
        if current.is_stale() {
            *current = Arc::new(Rules::load(&self.root));
        }
        Arc::clone(&current)
    }

    /// Whether the model may access the absolute, normalised path `absolute`. Paths outside the root are not
    /// this controller's business and are allowed, as in Cline. (The workspace checks batches through
    /// [`ClineIgnore::rules`]; this is the one-path form its tests read best with.)
    #[cfg(test)]
    pub fn allows(&self, absolute: &Path) -> bool {
        match absolute.strip_prefix(&self.root) {
            Ok(relative) => !self.rules().denies(relative),
            Err(_) => true,
        }
    }
}

impl Rules {
    /// Reads `root/.clineignore` and the files it includes.
    fn load(root: &Path) -> Self {
        let file = root.join(FILE_NAME);
        let mut sources = vec![(file.clone(), stamp(&file))];
        let Some(text) = read_regular(&file) else {
            return Self { sources, matcher: None };
        };
        if text.is_empty() {
            return Self { sources, matcher: None };
        }
        let mut builder = GitignoreBuilder::new(root);
        // Cline's `ignore` package matches case-insensitively by default.
        builder.case_insensitive(true).ok();
        let mut add = |line: &str| {
            // A malformed glob is skipped rather than disabling the whole file.
            let _ = builder.add_line(None, line);
        };
        for line in text.lines() {
            let Some(include) = line.trim().strip_prefix("!include ") else {
                add(line);
                continue;
            };
            // Node's `path.join(cwd, arg)`: an absolute argument is still taken below the root.
            let included = root.join(include.trim().trim_start_matches('/'));
            sources.push((included.clone(), stamp(&included)));
            if let Some(content) = read_regular(&included) {
                content.lines().for_each(&mut add);
            }
        }
        add(FILE_NAME);
        match builder.build() {
            Ok(matcher) => Self { sources, matcher: Some(matcher) },
            // Every line that failed was skipped above, so this cannot happen in practice; fail closed.
            Err(_) => Self { sources, matcher: Some(deny_everything(root)) },
        }
    }

    /// Rules that block every path, for when the controller itself is broken.
    fn deny_all() -> Self {
        Self { sources: Vec::new(), matcher: Some(deny_everything(Path::new("/"))) }
    }

    fn is_stale(&self) -> bool {
        self.sources.iter().any(|(path, seen)| stamp(path) != *seen)
    }

    /// Whether any rules are in force (a non-empty `.clineignore` exists).
    pub fn is_active(&self) -> bool {
        self.matcher.is_some()
    }

    /// Whether the rules block `relative`, a normalised path relative to the root, checked as a file.
    ///
    /// As Cline's `ignore` package (and git) do, each ancestor directory is checked first, outermost
    /// first: a file in an ignored directory stays ignored even when a later `!pattern` names it.
    pub fn denies(&self, relative: &Path) -> bool {
        let Some(matcher) = &self.matcher else {
            return false;
        };
        let parts: Vec<Component<'_>> = relative.components().filter(|c| matches!(c, Component::Normal(_))).collect();
        if parts.is_empty() {
            return false;
        }
        let mut prefix = PathBuf::new();
        for (index, part) in parts.iter().enumerate() {
            prefix.push(part.as_os_str());
            let is_last = index + 1 == parts.len();
            if matcher.matched(&prefix, !is_last).is_ignore() {
                return true;
            }
        }
        false
    }
}

/// A rules file's text, read only when it is a regular file. `!include ../../dev/zero` (or a FIFO, or a
/// `.clineignore` linked to a device) would otherwise read forever and take the host down with it (found
/// writing the clineignore fuzz target); such a file is skipped, like a missing one.
fn read_regular(path: &Path) -> Option<String> {
    std::fs::metadata(path).ok().filter(std::fs::Metadata::is_file)?;
    std::fs::read_to_string(path).ok()
}

fn deny_everything(root: &Path) -> Gitignore {
    let mut builder = GitignoreBuilder::new(root);
    let _ = builder.add_line(None, "*");
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some(Stamp { modified: meta.modified().ok(), len: meta.len(), inode })
}

/// Cline's `validateCommand`: for a command whose first word is a file-reading command, the first later
/// argument that `denied` reports, skipping options (`-x`, `/x`) and anything with a `:` (PowerShell
/// parameters, `@root:` hints) as Cline does. Absolute paths start with `/` and are therefore never checked,
/// as in Cline. Unlike Cline, an argument wrapped in matching quotes is checked without them.
pub fn blocked_argument(command: &str, denied: impl Fn(&str) -> bool) -> Option<String> {
    let mut words = command.split_whitespace();
    let base = words.next()?.to_lowercase();
    if !FILE_READING_COMMANDS.contains(&base.as_str()) {
        return None;
    }
    words
        .filter(|word| !word.starts_with('-') && !word.starts_with('/') && !word.contains(':'))
        .find(|word| denied(unquote(word)))
        .map(str::to_owned)
}

fn unquote(word: &str) -> &str {
    for quote in ['\'', '"'] {
        if let Some(inner) = word.strip_prefix(quote).and_then(|rest| rest.strip_suffix(quote)) {
            return inner;
        }
    }
    word
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn touch_later(path: &Path, secs: u64) {
        // Move the modification time clearly forward, so a rewrite within one clock tick is still seen.
        let later = SystemTime::now() + std::time::Duration::from_secs(secs);
        fs::File::options().write(true).open(path).unwrap().set_modified(later).unwrap();
    }

    #[test]
    fn rules_includes_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join(".clineignore"), "secret/\n*.key\n!include extra.txt\n").unwrap();
        fs::write(root.join("extra.txt"), "private.md\n").unwrap();
        let ci = ClineIgnore::new(root);
        assert!(!ci.allows(&root.join("secret/a.txt")));
        assert!(ci.allows(&root.join("secret")));
        assert!(!ci.allows(&root.join("deep/x.key")));
        assert!(!ci.allows(&root.join("private.md")));
        assert!(!ci.allows(&root.join(".clineignore")));
        assert!(!ci.allows(&root.join("sub/.clineignore")));
        assert!(ci.allows(&root.join("src/main.rs")));
        assert!(ci.allows(Path::new("/elsewhere/secret/a.txt")));
        // Rewritten: the new rules apply.
        fs::write(root.join(".clineignore"), "src/\n").unwrap();
        touch_later(&root.join(".clineignore"), 5);
        assert!(!ci.allows(&root.join("src/main.rs")));
        assert!(ci.allows(&root.join("secret/a.txt")));
    }

    #[test]
    fn an_edited_include_is_reloaded_too() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join(".clineignore"), "!include more.txt\n").unwrap();
        let ci = ClineIgnore::new(root);
        assert!(ci.allows(&root.join("a.txt")));
        fs::write(root.join("more.txt"), "a.txt\n").unwrap();
        assert!(!ci.allows(&root.join("a.txt")));
        fs::write(root.join("more.txt"), "b.txt\n").unwrap();
        touch_later(&root.join("more.txt"), 5);
        assert!(ci.allows(&root.join("a.txt")));
        assert!(!ci.allows(&root.join("b.txt")));
    }

    #[cfg(unix)]
    #[test]
    fn includes_that_are_not_regular_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        // Climbing to a device that never ends: skipped instead of read until memory runs out.
        let climb = "../".repeat(root.components().count());
        fs::write(root.join(".clineignore"), format!("!include {climb}dev/zero\n!include fifo\nsecret.txt\n")).unwrap();
        nix::unistd::mkfifo(&root.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let ci = ClineIgnore::new(root);
        assert!(!ci.allows(&root.join("secret.txt")));
        assert!(ci.allows(&root.join("other.txt")));
    }

    #[test]
    fn negation_cannot_reach_into_an_ignored_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join(".clineignore"), "*.env\n!example.env\nsecret/\n!secret/keep.txt\nlogs/*\n!logs/ok.log\n")
            .unwrap();
        let ci = ClineIgnore::new(root);
        assert!(!ci.allows(&root.join("prod.env")));
        assert!(ci.allows(&root.join("example.env")));
        assert!(ci.allows(&root.join("config/example.env")));
        // The directory itself is ignored, so its file cannot be re-included (git and Cline agree).
        assert!(!ci.allows(&root.join("secret/keep.txt")));
        // Only the directory's contents are ignored here, so a negation works.
        assert!(ci.allows(&root.join("logs/ok.log")));
        assert!(!ci.allows(&root.join("logs/other.log")));
    }

    #[test]
    fn case_insensitive_and_empty_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join(".clineignore"), "Secret.TXT\n").unwrap();
        let ci = ClineIgnore::new(root);
        assert!(!ci.allows(&root.join("secret.txt")));
        fs::write(root.join(".clineignore"), "").unwrap();
        touch_later(&root.join(".clineignore"), 5);
        assert!(ci.allows(&root.join("secret.txt")));
        // Cline blocks nothing, not even the file itself, when it is empty.
        assert!(ci.allows(&root.join(".clineignore")));
        assert!(!ci.rules().is_active());
    }

    #[test]
    fn validate_command_like_cline() {
        let denied = |path: &str| path.starts_with("secret");
        assert_eq!(blocked_argument("cat secret/a.txt", denied), Some("secret/a.txt".to_owned()));
        assert_eq!(blocked_argument("  CAT  -n ok.txt secret/b ", denied), Some("secret/b".to_owned()));
        assert_eq!(blocked_argument("grep -r foo 'secret/c'", denied), Some("'secret/c'".to_owned()));
        // Not a file-reading command, options, absolute paths and anything with a colon are never checked.
        assert_eq!(blocked_argument("ls secret", denied), None);
        assert_eq!(blocked_argument("cat /abs/secret -secret @w:secret", denied), None);
        assert_eq!(blocked_argument("", denied), None);
    }
}
