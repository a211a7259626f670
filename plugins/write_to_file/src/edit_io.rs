//! File access shared by the edit tools (write_to_file and its aliases, apply_patch): where a model-given path
//! really leads, text with its byte-order mark kept aside, and writes that go through a temporary file in the
//! same directory and a rename, so no reader ever sees a half-written file and a failure changes nothing.
//!
//! The apply_patch plugin compiles this same file with `#[path]`. Plugins are separate `cdylib`s that each
//! export a root module, so one cannot link another; sharing the source keeps one implementation of the
//! rules every write must follow.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use toolshed_plugin_api::{HostClient, TaskInfo};

/// JavaScript's whitespace for `trim`/`trimEnd`: Cline compares and trims text with it.
pub fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

/// Cline's `finalContent` of a saved file: the text with its line breaks in the style it uses (CRLF if any),
/// trailing whitespace trimmed as JavaScript trims, and exactly one line break at the end.
pub fn final_content(saved: &str) -> String {
    let eol = if saved.contains("\r\n") { "\r\n" } else { "\n" };
    let normalised = saved.replace("\r\n", "\n").replace('\n', eol);
    format!("{}{eol}", normalised.trim_end_matches(is_js_space))
}

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
    if !host.path_allowed(raw).map_err(service)? {
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
    if lexical_real != absolute && !host.path_allowed(&lexical_real.to_string_lossy()).map_err(service)? {
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

/// A byte-order mark a text file starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bom {
    /// `EF BB BF`.
    Utf8,
    /// `FF FE`.
    Utf16Le,
    /// `FE FF`.
    Utf16Be,
}

/// A text file's content without its byte-order mark, which is kept aside to be written back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextFile {
    /// The mark the file started with.
    pub bom: Option<Bom>,
    /// The decoded text, line endings untouched.
    pub text: String,
}

impl TextFile {
    /// Decodes a file's bytes: UTF-8, or UTF-16 when a byte-order mark says so. Anything else is refused
    /// rather than rewritten in another encoding.
    pub fn decode(bytes: &[u8]) -> Result<TextFile, String> {
        let (bom, body) = match bytes {
            [0xEF, 0xBB, 0xBF, rest @ ..] => (Some(Bom::Utf8), rest),
            [0xFF, 0xFE, rest @ ..] => (Some(Bom::Utf16Le), rest),
            [0xFE, 0xFF, rest @ ..] => (Some(Bom::Utf16Be), rest),
            _ => (None, bytes),
        };
        let text = match bom {
            Some(Bom::Utf16Le) | Some(Bom::Utf16Be) => {
                if body.len() % 2 != 0 {
                    return Err("it is not valid UTF-16 text".to_owned());
                }
                let units = body.chunks_exact(2).map(|pair| match bom {
                    Some(Bom::Utf16Be) => u16::from_be_bytes([pair[0], pair[1]]),
                    _ => u16::from_le_bytes([pair[0], pair[1]]),
                });
                char::decode_utf16(units)
                    .collect::<Result<String, _>>()
                    .map_err(|_| "it is not valid UTF-16 text".to_owned())?
            }
            Some(Bom::Utf8) | None => String::from_utf8(body.to_vec())
                .map_err(|_| "it is not UTF-8 text (binary files and other encodings are not edited)".to_owned())?,
        };
        Ok(TextFile { bom, text })
    }

    /// The bytes of `text` in this file's encoding, with its byte-order mark.
    pub fn encode(&self, text: &str) -> Vec<u8> {
        match self.bom {
            None => text.as_bytes().to_vec(),
            Some(Bom::Utf8) => [&[0xEF, 0xBB, 0xBF][..], text.as_bytes()].concat(),
            Some(Bom::Utf16Le) => {
                [0xFF, 0xFE].into_iter().chain(text.encode_utf16().flat_map(u16::to_le_bytes)).collect()
            }
            Some(Bom::Utf16Be) => {
                [0xFE, 0xFF].into_iter().chain(text.encode_utf16().flat_map(u16::to_be_bytes)).collect()
            }
        }
    }
}

/// How a text ends its lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEndings {
    /// Every line break is `\n`.
    Lf,
    /// Every line break is `\r\n`.
    Crlf,
    /// No line breaks, or both kinds.
    Mixed,
}

impl LineEndings {
    /// The style of `text`.
    pub fn of(text: &str) -> LineEndings {
        let breaks = text.matches('\n').count();
        let crlf = text.matches("\r\n").count();
        match (breaks, crlf) {
            (0, _) => LineEndings::Mixed,
            (b, c) if b == c => LineEndings::Crlf,
            (_, 0) => LineEndings::Lf,
            _ => LineEndings::Mixed,
        }
    }

    /// `text` with its line breaks in this style; a mixed style leaves it as it is.
    pub fn apply(self, text: &str) -> String {
        match self {
            LineEndings::Lf => text.replace("\r\n", "\n"),
            LineEndings::Crlf => text.replace("\r\n", "\n").replace('\n', "\r\n"),
            LineEndings::Mixed => text.to_owned(),
        }
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary file beside `target` holding its new bytes, synced to disk, not yet renamed into place.
struct Staged {
    temp: PathBuf,
    target: PathBuf,
}

impl Staged {
    fn new(target: &Path, bytes: &[u8], permissions: Option<Permissions>) -> io::Result<Staged> {
        let dir = target.parent().unwrap_or(Path::new("/"));
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temp = dir.join(format!(
            ".{name}.{}.{}.toolshed-tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        // A file whose permissions are copied starts private, so a file the user keeps private never leaks
        // while it is written; a new file gets what `creat(0o666)` gives under the process umask.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, if permissions.is_some() { 0o600 } else { 0o666 });
        let staged = Staged { temp, target: target.to_owned() };
        let mut file = options.open(&staged.temp)?;
        let written = (|| {
            file.write_all(bytes)?;
            if let Some(permissions) = permissions {
                file.set_permissions(permissions)?;
            }
            file.sync_all()
        })();
        match written {
            Ok(()) => Ok(staged),
            Err(e) => {
                staged.discard();
                Err(e)
            }
        }
    }

    fn commit(&self) -> io::Result<()> {
        fs::rename(&self.temp, &self.target)?;
        // Make the rename itself durable; a directory that cannot be synced is not worth failing for.
        if let Some(dir) = self.target.parent() {
            if let Ok(dir) = File::open(dir) {
                let _ = dir.sync_all();
            }
        }
        Ok(())
    }

    fn discard(&self) {
        let _ = fs::remove_file(&self.temp);
    }
}

/// One change of a [`Transaction`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Write `bytes` to `path`, creating its parent directories. A new file takes the permissions of
    /// `permissions_from` when given (a moved file keeps its mode), else the default.
    Write {
        /// The file (symbolic links already resolved).
        path: PathBuf,
        /// Its new content.
        bytes: Vec<u8>,
        /// Where a new file's permissions come from.
        permissions_from: Option<PathBuf>,
    },
    /// Delete the file at `path`.
    Delete {
        /// The file.
        path: PathBuf,
    },
}

/// What a file was before a transaction touched it, to put it back.
struct Backup {
    path: PathBuf,
    bytes: Option<Vec<u8>>,
    permissions: Option<Permissions>,
}

/// Changes to several files that happen all together or not at all.
///
/// Every new content is first staged in a temporary file beside its target; only when all are staged are
/// they renamed into place, and deletions come last. Should a rename or a deletion still fail, what was
/// already done is undone from in-memory copies of the originals.
#[derive(Debug, Default)]
pub struct Transaction {
    changes: Vec<Change>,
}

impl Transaction {
    /// An empty transaction.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a change.
    pub fn push(&mut self, change: Change) {
        self.changes.push(change);
    }

    /// Applies every change, or none. The error names the file that failed.
    pub fn commit(self) -> Result<(), String> {
        let mut backups = Vec::new();
        for change in &self.changes {
            let path = match change {
                Change::Write { path, .. } | Change::Delete { path } => path,
            };
            if backups.iter().any(|b: &Backup| &b.path == path) {
                continue;
            }
            let backup = match fs::read(path) {
                Ok(bytes) => Backup {
                    path: path.clone(),
                    permissions: fs::metadata(path).ok().map(|m| m.permissions()),
                    bytes: Some(bytes),
                },
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    Backup { path: path.clone(), bytes: None, permissions: None }
                }
                Err(e) => return Err(format!("could not read {}: {e}", path.display())),
            };
            backups.push(backup);
        }

        let mut created_dirs = Vec::new();
        let mut staged = Vec::new();
        for change in &self.changes {
            let Change::Write { path, bytes, permissions_from } = change else { continue };
            let result = (|| {
                if let Some(parent) = path.parent() {
                    create_dirs(parent, &mut created_dirs)?;
                }
                let permissions = match fs::metadata(path) {
                    Ok(meta) => Some(meta.permissions()),
                    Err(_) => {
                        permissions_from.as_ref().and_then(|from| fs::metadata(from).ok()).map(|m| m.permissions())
                    }
                };
                Staged::new(path, bytes, permissions)
            })();
            match result {
                Ok(s) => staged.push(s),
                Err(e) => {
                    staged.iter().for_each(Staged::discard);
                    remove_dirs(&created_dirs);
                    return Err(format!("could not write {}: {e}", path.display()));
                }
            }
        }

        let mut done: Vec<&Path> = Vec::new();
        let mut failure = None;
        for (i, s) in staged.iter().enumerate() {
            if let Err(e) = s.commit() {
                staged[i..].iter().for_each(Staged::discard);
                failure = Some(format!("could not write {}: {e}", s.target.display()));
                break;
            }
            done.push(&s.target);
        }
        if failure.is_none() {
            for change in &self.changes {
                let Change::Delete { path } = change else { continue };
                // A path written earlier in this transaction (a move onto its own source) is not deleted.
                if done.contains(&path.as_path()) {
                    continue;
                }
                if let Err(e) = fs::remove_file(path) {
                    failure = Some(format!("could not delete {}: {e}", path.display()));
                    break;
                }
                done.push(path);
            }
        }
        match failure {
            None => Ok(()),
            Some(message) => {
                restore(&backups, &done);
                remove_dirs(&created_dirs);
                Err(message)
            }
        }
    }
}

/// Puts back the files in `done` as `backups` recorded them.
fn restore(backups: &[Backup], done: &[&Path]) {
    for backup in backups.iter().filter(|b| done.contains(&b.path.as_path())) {
        match &backup.bytes {
            Some(bytes) => {
                if let Ok(staged) = Staged::new(&backup.path, bytes, backup.permissions.clone()) {
                    if staged.commit().is_err() {
                        staged.discard();
                    }
                }
            }
            None => {
                let _ = fs::remove_file(&backup.path);
            }
        }
    }
}

/// `create_dir_all`, recording the directories it created so a failed transaction can remove them.
fn create_dirs(dir: &Path, created: &mut Vec<PathBuf>) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut current = dir;
    while !current.exists() {
        missing.push(current.to_path_buf());
        match current.parent() {
            Some(parent) => current = parent,
            None => break,
        }
    }
    for dir in missing.into_iter().rev() {
        match fs::create_dir(&dir) {
            Ok(()) => created.push(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Removes directories a failed transaction created, deepest first; any that is not empty stays.
fn remove_dirs(created: &[PathBuf]) {
    for dir in created.iter().rev() {
        let _ = fs::remove_dir(dir);
    }
}

/// Reads a file's bytes, for an edit.
pub fn read(path: &Path) -> Result<Vec<u8>, String> {
    fs::read(path).map_err(|e| format!("could not read {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn text_files_keep_their_marks() {
        for bytes in [
            b"\xEF\xBB\xBFa\r\nb".to_vec(),
            [0xFF, 0xFE].into_iter().chain("a\r\nb".encode_utf16().flat_map(u16::to_le_bytes)).collect(),
            [0xFE, 0xFF].into_iter().chain("a\r\nb".encode_utf16().flat_map(u16::to_be_bytes)).collect(),
            b"a\r\nb".to_vec(),
        ] {
            let file = TextFile::decode(&bytes).unwrap();
            assert_eq!(file.text, "a\r\nb");
            assert_eq!(file.encode(&file.text), bytes);
        }
        assert!(TextFile::decode(b"\xff\x00binary").is_err());
        assert!(TextFile::decode(&[0xFF, 0xFE, 0x41]).is_err());
    }

    #[test]
    fn line_ending_styles() {
        assert_eq!(LineEndings::of("a\r\nb\r\n"), LineEndings::Crlf);
        assert_eq!(LineEndings::of("a\nb"), LineEndings::Lf);
        assert_eq!(LineEndings::of("a\r\nb\n"), LineEndings::Mixed);
        assert_eq!(LineEndings::of("a"), LineEndings::Mixed);
        assert_eq!(LineEndings::Crlf.apply("x\ny\r\n"), "x\r\ny\r\n");
        assert_eq!(LineEndings::Lf.apply("x\r\ny\n"), "x\ny\n");
    }

    #[cfg(unix)]
    #[test]
    fn writes_keep_permissions_and_leave_no_temp_files() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        fs::write(&script, "old").unwrap();
        fs::set_permissions(&script, Permissions::from_mode(0o750)).unwrap();
        let mut tx = Transaction::new();
        tx.push(Change::Write { path: script.clone(), bytes: b"new".to_vec(), permissions_from: None });
        tx.push(Change::Write {
            path: dir.path().join("deep/er/new.txt"),
            bytes: b"x".to_vec(),
            permissions_from: None,
        });
        tx.commit().unwrap();
        assert_eq!(fs::read_to_string(&script).unwrap(), "new");
        assert_eq!(fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o750);
        assert_eq!(fs::read_to_string(dir.path().join("deep/er/new.txt")).unwrap(), "x");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn a_failed_transaction_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let keep = dir.path().join("keep.txt");
        fs::write(&keep, "original").unwrap();
        fs::create_dir(dir.path().join("blocker")).unwrap();
        let mut tx = Transaction::new();
        tx.push(Change::Write { path: keep.clone(), bytes: b"changed".to_vec(), permissions_from: None });
        tx.push(Change::Write { path: dir.path().join("new/file.txt"), bytes: b"x".to_vec(), permissions_from: None });
        // Deleting a directory with remove_file fails after both writes were renamed into place.
        tx.push(Change::Delete { path: dir.path().join("blocker") });
        assert!(tx.commit().is_err());
        assert_eq!(fs::read_to_string(&keep).unwrap(), "original");
        assert!(!dir.path().join("new").exists());
        let mut names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, ["blocker", "keep.txt"]);
    }

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
