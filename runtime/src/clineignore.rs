//! The `.clineignore` controller (Cline's `ClineIgnoreController`, §15): gitignore rules in a workspace root's
//! `.clineignore` that fence files off from the model, plus `validateCommand` for file-reading commands.
//!
//! Semantics follow what Cline's `ignore@7` package does, not what git's own matcher would do where the two
//! differ: patterns are matched case-insensitively, a file inside an ignored directory cannot be re-included
//! by a later `!negation`, and a directory pattern `secret/` blocks `secret/a.txt` but not the bare `secret`
//! (every checked path is treated as a file). `!include FILE` lines are replaced by the lines of `FILE`
//! (resolved against the root, missing files skipped). Unlike Cline, an included file's own `!include` lines
//! are followed too, up to [`MAX_INCLUDE_DEPTH`] levels, each file once. When the file exists and is not
//! empty, `.clineignore` itself is blocked wherever it appears, and every rules file it pulls in (under any
//! spelling, through a link, or a hard link to it) may not be written, moved or deleted by a tool: rewriting
//! an included file would switch the rules off as surely as rewriting `.clineignore`. No file, or an empty
//! one, blocks nothing.
//!
//! The rules are reloaded whenever `.clineignore` or an included file changes: every check compares their
//! metadata (modification time, size, inode) with what was read, which costs one `stat` per file and batch.

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The name of the file, relative to its root.
const FILE_NAME: &str = ".clineignore";
/// How deep `!include` lines are followed: a chain this long is already more than anyone writes by hand.
pub const MAX_INCLUDE_DEPTH: usize = 8;
/// The largest rules file read. A bigger one (a link to a huge file, or one that grows) blocks everything
/// rather than being skipped, because skipping a rules file would unblock what it names.
const MAX_RULES_BYTES: u64 = 1024 * 1024;

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
    /// The rules files (`.clineignore` and what it includes) a tool may not write while the rules are active.
    protected: Vec<Protected>,
}

/// One rules file under every name a write could reach it by.
#[derive(Debug)]
struct Protected {
    /// Lexically normalised, as the rules name it.
    spelled: PathBuf,
    /// With its links resolved (its parent's, when it does not exist).
    real: Option<PathBuf>,
    /// Device and inode, when it exists: a hard link is the same file under another name.
    identity: Option<(u64, u64)>,
}

/// What identifies one version of a file on disk without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    identity: Option<(u64, u64)>,
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
        let file = crate::paths::normalize(&root.join(FILE_NAME));
        let mut sources = vec![(file.clone(), stamp(&file))];
        let text = match read_regular(&file) {
            Ok(Some(text)) if !text.is_empty() => text,
            Ok(_) => return Self { sources, matcher: None, protected: Vec::new() },
            Err(TooLarge) => return Self::deny_all_from(root, sources),
        };
        let mut lines = Vec::new();
        if expand(root, &text, 0, &mut sources, &mut lines).is_err() {
            return Self::deny_all_from(root, sources);
        }
        let mut builder = GitignoreBuilder::new(root);
        // Cline's `ignore` package matches case-insensitively by default.
        builder.case_insensitive(true).ok();
        for line in lines.iter().map(String::as_str).chain([FILE_NAME]) {
            // A malformed glob is skipped rather than disabling the whole file.
            let _ = builder.add_line(None, line);
        }
        let protected = protect(&sources);
        match builder.build() {
            Ok(matcher) => Self { sources, matcher: Some(matcher), protected },
            // Every line that failed was skipped above, so this cannot happen in practice; fail closed.
            Err(_) => Self { sources, matcher: Some(deny_everything(root)), protected },
        }
    }

    /// Rules that block every path, for when the controller itself is broken.
    fn deny_all() -> Self {
        Self { sources: Vec::new(), matcher: Some(deny_everything(Path::new("/"))), protected: Vec::new() }
    }

    /// Rules that block every path below `root`, for rules files that could not be read whole; they are
    /// reloaded once those files change.
    fn deny_all_from(root: &Path, sources: Vec<(PathBuf, Option<Stamp>)>) -> Self {
        let protected = protect(&sources);
        Self { sources, matcher: Some(deny_everything(root)), protected }
    }

    /// Whether `absolute` (lexically normalised), `real` (the same with its links resolved) or the file with
    /// `identity` is one of the rules files, which a tool may not write while the rules are active.
    pub fn protects(&self, absolute: &Path, real: Option<&Path>, identity: Option<(u64, u64)>) -> bool {
        self.is_active()
            && self.protected.iter().any(|file| {
                let names = [Some(file.spelled.as_path()), file.real.as_deref()];
                names.iter().flatten().any(|name| *name == absolute || Some(*name) == real)
                    || (identity.is_some() && file.identity == identity)
            })
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

/// Appends the lines of a rules file to `out`, replacing each `!include FILE` by FILE's lines (recursively
/// below [`MAX_INCLUDE_DEPTH`]; each file once, so a cycle ends) and recording every included file in
/// `sources`, whether it exists or not: a missing one may be created later.
fn expand(
    root: &Path,
    text: &str,
    depth: usize,
    sources: &mut Vec<(PathBuf, Option<Stamp>)>,
    out: &mut Vec<String>,
) -> Result<(), TooLarge> {
    for line in text.lines() {
        let Some(include) = line.trim().strip_prefix("!include ") else {
            out.push(line.to_owned());
            continue;
        };
        if depth >= MAX_INCLUDE_DEPTH {
            continue;
        }
        // Node's `path.join(cwd, arg)`: an absolute argument is still taken below the root.
        let included = crate::paths::normalize(&root.join(include.trim().trim_start_matches('/')));
        if sources.iter().any(|(seen, _)| *seen == included) {
            continue;
        }
        sources.push((included.clone(), stamp(&included)));
        if let Some(content) = read_regular(&included)? {
            expand(root, &content, depth + 1, sources, out)?;
        }
    }
    Ok(())
}

/// Every name of the rules files read.
fn protect(sources: &[(PathBuf, Option<Stamp>)]) -> Vec<Protected> {
    sources
        .iter()
        .map(|(path, stamp)| Protected {
            spelled: path.clone(),
            real: crate::paths::resolve_links(path),
            identity: stamp.and_then(|s| s.identity),
        })
        .collect()
}

/// A rules file over [`MAX_RULES_BYTES`].
#[derive(Debug)]
struct TooLarge;

/// A rules file's text, read only when it is a regular file. `!include ../../dev/zero` (or a FIFO, or a
/// `.clineignore` linked to a device) would otherwise read forever and take the host down with it (found
/// writing the clineignore fuzz target); such a file is skipped, like a missing one. One over the size cap
/// is an error (the caller blocks everything) rather than skipped.
fn read_regular(path: &Path) -> Result<Option<String>, TooLarge> {
    match crate::small_file::read(path, MAX_RULES_BYTES) {
        // Not UTF-8 (a Latin-1 comment, say): its ASCII patterns still apply; dropping the file would unblock
        // everything it names.
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => Err(TooLarge),
        Err(_) => Ok(None),
    }
}

fn deny_everything(root: &Path) -> Gitignore {
    let mut builder = GitignoreBuilder::new(root);
    let _ = builder.add_line(None, "*");
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp { modified: meta.modified().ok(), len: meta.len(), identity: identity(&meta) })
}

/// A file's device and inode, where the platform has them.
pub fn identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    #[cfg(unix)]
    return Some((std::os::unix::fs::MetadataExt::dev(meta), std::os::unix::fs::MetadataExt::ino(meta)));
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// Words that run the command after them: `sudo cat x` reads `x` as `cat x` does.
const WRAPPERS: &[&str] = &["sudo", "command", "builtin", "exec", "env", "nohup", "time", "nice", "doas"];

/// Cline's `validateCommand`: for a command whose first word is a file-reading command, the first later
/// argument that `denied` reports, skipping options (`-x`) and anything with a `:` (PowerShell parameters,
/// `@root:` hints) as Cline does.
///
/// Where Cline looks only at the first word of the whole text, this looks at every simple command of a
/// list, pipeline or substitution (`true && cat x`, `echo $(cat x)`), past variable assignments, wrappers
/// (`sudo`, `env`, …) and a directory part (`/bin/cat`); a relative argument after `cd DIR` is checked as
/// `DIR/arg`, where it is really read; and an absolute path is checked too (Cline skips words starting with
/// `/` as Windows switches, which lie in no workspace root and so are never blocked). An argument wrapped in
/// matching quotes is checked without them. `denied` gets paths relative to the command's directory, or
/// absolute.
pub fn blocked_argument(command: &str, denied: impl Fn(&str) -> bool) -> Option<String> {
    let mut dir: Option<PathBuf> = None;
    for segment in command.split([';', '|', '&', '\n', '(', ')', '`', '{', '}']) {
        let mut words = segment.split(|c: char| c.is_whitespace() || c == '<' || c == '>').filter(|w| !w.is_empty());
        let mut first = None;
        for word in words.by_ref() {
            let base = Path::new(&dequote(word)).file_name().map(|n| n.to_string_lossy().to_lowercase());
            let Some(base) = base else { continue };
            if word.contains('=') || WRAPPERS.contains(&base.as_str()) || word.starts_with('-') {
                continue;
            }
            first = Some(base);
            break;
        }
        let Some(first) = first else { continue };
        if first == "cd" {
            if let Some(target) = words.next().map(dequote).filter(|t| !t.starts_with('-')) {
                dir = Some(dir.take().map_or_else(|| PathBuf::from(&target), |d| d.join(&target)));
            }
            continue;
        }
        if !FILE_READING_COMMANDS.contains(&first.as_str()) {
            continue;
        }
        let checked = |word: &str| {
            let path = dequote(word);
            match &dir {
                Some(dir) => denied(&dir.join(&path).to_string_lossy()),
                None => denied(&path),
            }
        };
        if let Some(word) = words.filter(|word| !word.starts_with('-') && !word.contains(':')).find(|w| checked(w)) {
            return Some(word.to_owned());
        }
    }
    None
}

/// A shell word after bash's quote removal: quotes anywhere in it (`'secrets'/x`, `sec""rets/x`) and
/// backslash escapes (`se\crets/x`) are taken out, so the path checked is the path the command opens.
fn dequote(word: &str) -> String {
    let mut text = String::with_capacity(word.len());
    let mut chars = word.chars();
    let mut quote = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\'') | (None, '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '\\') => text.extend(chars.next()),
            (Some('"'), '\\') => match chars.next() {
                Some(next @ ('$' | '`' | '"' | '\\')) => text.push(next),
                Some(next) => {
                    text.push('\\');
                    text.push(next);
                }
                None => text.push('\\'),
            },
            (_, c) => text.push(c),
        }
    }
    text
}

/// The paths a word naming `path` reaches once bash expands its globs (`secret*/x`, `.clineign*`): every
/// existing match, or the path itself when it has no glob characters or nothing matches (bash then passes the
/// word on as written). Quoted glob characters are expanded too, which can only block more. At most
/// `MAX_GLOB_MATCHES` paths are returned.
pub fn glob_expansions(path: &Path) -> Vec<PathBuf> {
    const MAX_GLOB_MATCHES: usize = 10_000;
    let is_glob = |part: &str| part.contains(['*', '?', '[']);
    if !path.to_string_lossy().contains(['*', '?', '[']) {
        return vec![path.to_path_buf()];
    }
    let mut found = vec![PathBuf::new()];
    for component in path.components() {
        let part = component.as_os_str().to_string_lossy();
        if !is_glob(&part) {
            found.iter_mut().for_each(|p| p.push(component));
            continue;
        }
        let Ok(matcher) = globset::GlobBuilder::new(&part).literal_separator(true).build().map(|g| g.compile_matcher())
        else {
            return vec![path.to_path_buf()];
        };
        let hidden_ok = part.starts_with('.');
        let mut next = Vec::new();
        for dir in &found {
            let Ok(entries) = std::fs::read_dir(if dir.as_os_str().is_empty() { Path::new(".") } else { dir }) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                // bash's globs leave out dot files unless the pattern starts with a dot.
                if (hidden_ok || !name.to_string_lossy().starts_with('.')) && matcher.is_match(&name) {
                    next.push(dir.join(&name));
                    if next.len() >= MAX_GLOB_MATCHES {
                        return next;
                    }
                }
            }
        }
        found = next;
    }
    if found.is_empty() {
        vec![path.to_path_buf()]
    } else {
        found
    }
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
    fn a_rules_file_that_is_not_utf8_still_applies() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(".clineignore"), b"# caf\xe9\nsecrets/\n").unwrap();
        let ignore = ClineIgnore::new(dir.path());
        assert!(!ignore.allows(&dir.path().join("secrets/x")));
        assert!(ignore.allows(&dir.path().join("ok.txt")));
    }

    #[test]
    fn nested_includes_apply_and_every_rules_file_is_protected() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("conf")).unwrap();
        fs::write(root.join(".clineignore"), "!include conf/a.txt\n").unwrap();
        fs::write(root.join("conf/a.txt"), "a-secret\n!include conf/b.txt\n!include conf/a.txt\n").unwrap();
        fs::write(root.join("conf/b.txt"), "b-secret\n!include ../outside.txt\n").unwrap();
        let ci = ClineIgnore::new(root);
        assert!(!ci.allows(&root.join("a-secret")));
        assert!(!ci.allows(&root.join("b-secret")));
        let rules = ci.rules();
        for file in [".clineignore", "conf/a.txt", "conf/b.txt"] {
            assert!(rules.protects(&root.join(file), None, None), "{file}");
        }
        // A missing included file is protected too: creating it would change the rules.
        assert!(rules.protects(&crate::paths::normalize(&root.join("../outside.txt")), None, None));
        assert!(!rules.protects(&root.join("conf/c.txt"), None, None));
        // The same file by its identity (a hard link).
        let meta = fs::metadata(root.join("conf/b.txt")).unwrap();
        assert!(rules.protects(&root.join("elsewhere"), None, identity(&meta)));
    }

    #[test]
    fn a_rules_file_too_large_to_read_blocks_everything() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join(".clineignore"), "!include big.txt\n").unwrap();
        fs::File::create(root.join("big.txt")).unwrap().set_len(MAX_RULES_BYTES + 1).unwrap();
        let ci = ClineIgnore::new(root);
        assert!(!ci.allows(&root.join("src/main.rs")));
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

    #[test]
    fn every_simple_command_is_checked_where_it_reads() {
        let denied = |path: &str| path.starts_with("secret") || path.starts_with("/ws/secret");
        for command in [
            "true && cat secret/a",
            "echo hi; head -n 1 secret/a",
            "echo $(cat secret/a)",
            "ls | grep x secret/a",
            "X=1 sudo /bin/cat secret/a",
            "cat < secret/a",
            "cat /ws/secret/a",
            "(cat secret/a)",
        ] {
            assert!(blocked_argument(command, denied).is_some(), "{command}");
        }
        // After `cd`, a relative argument is read from there.
        let under = |path: &str| path == "sub/secret/a";
        assert_eq!(blocked_argument("cd sub && cat secret/a", under), Some("secret/a".to_owned()));
        assert_eq!(blocked_argument("cat secret/a", under), None);
    }
}
