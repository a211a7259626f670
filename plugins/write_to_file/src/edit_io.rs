//! File access shared by the edit tools (write_to_file and its aliases, apply_patch): where a model-given path
//! really leads, text with its byte-order mark kept aside, and the one write path every edit takes. A write
//! goes through a temporary file in the same directory and a rename, so no reader ever sees a half-written
//! file and a failure changes nothing — unless the rename would change the file in more than its bytes
//! (its owner or group, another hard link, an ACL or other extended attribute, set-id bits): then it goes
//! through the existing inode, after a backup of the old bytes, which a failure puts back.
//!
//! The apply_patch plugin compiles this same file with `#[path]`. Plugins are separate `cdylib`s that each
//! export a root module, so one cannot link another; sharing the source keeps one implementation of the
//! rules every write must follow.

use std::cell::Cell;
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

/// A fresh name beside `target` for one of our own files (`kind`: `tmp` or `backup`), unique in this process.
fn sibling(target: &Path, kind: &str) -> PathBuf {
    let dir = target.parent().unwrap_or(Path::new("/"));
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    dir.join(format!(".{name}.{}.{}.toolshed-{kind}", std::process::id(), TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)))
}

/// Creates `path` (which must not exist) private to us, with `bytes` in it, synced to disk.
fn create_private(path: &Path, bytes: &[u8], mode: u32) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(path)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    match written {
        Ok(()) => Ok(file),
        Err(e) => {
            drop(file);
            let _ = fs::remove_file(path);
            Err(e)
        }
    }
}

/// A temporary file beside `target` holding its new bytes, synced to disk, not yet renamed into place.
struct Staged {
    temp: PathBuf,
    target: PathBuf,
}

impl Staged {
    /// A new file's content, with the permissions (and, where we may set it, the owner) of `like` when given;
    /// else what `creat(0o666)` gives under the process umask.
    fn new(target: &Path, bytes: &[u8], like: Option<&fs::Metadata>) -> io::Result<Staged> {
        let temp = sibling(target, "tmp");
        // A file whose permissions are copied starts private, so a file the user keeps private never leaks
        // while it is written.
        let file = create_private(&temp, bytes, if like.is_some() { 0o600 } else { 0o666 })?;
        let staged = Staged { temp, target: target.to_owned() };
        if let Some(like) = like {
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                // Best effort: only root may give a file away; the mode below is what must hold.
                let _ = std::os::unix::fs::fchown(&file, Some(like.uid()), Some(like.gid()));
            }
            if let Err(e) = file.set_permissions(like.permissions()) {
                staged.discard();
                return Err(e);
            }
        }
        Ok(staged)
    }

    /// The new content of the existing file `meta` describes, staged for a rename only when the renamed file
    /// would be indistinguishable from the old one but for its bytes: same owner, group, mode (set-id bits
    /// included) and extended attributes (ACLs, security labels), and no other hard link to the old inode.
    /// `None` when it would not be; the caller then writes through the existing inode.
    fn replacing(target: &Path, bytes: &[u8], meta: &fs::Metadata) -> io::Result<Option<Staged>> {
        if !identity::renamable(meta) {
            return Ok(None);
        }
        let temp = sibling(target, "tmp");
        let file = create_private(&temp, bytes, 0o600)?;
        let staged = Staged { temp, target: target.to_owned() };
        match identity::copy(target, meta, &file) {
            Ok(true) => Ok(Some(staged)),
            // The attributes could not be reproduced (or the file changed under us): write in place.
            Ok(false) | Err(_) => {
                staged.discard();
                Ok(None)
            }
        }
    }

    fn commit(&self) -> io::Result<()> {
        fs::rename(&self.temp, &self.target)?;
        sync_parent(&self.target);
        Ok(())
    }

    fn discard(&self) {
        let _ = fs::remove_file(&self.temp);
    }
}

/// Makes a rename or an unlink in `path`'s directory durable; a directory that cannot be synced is not worth
/// failing for.
fn sync_parent(path: &Path) {
    if let Some(dir) = path.parent() {
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
    }
}

/// A write through the existing inode, for a file a rename would change in more than its bytes. Its old
/// bytes are first copied to a backup file beside it (synced, so even a crash mid-write leaves them on
/// disk); a failed write puts them back in place, and the backup goes once the transaction is over.
struct InPlace {
    target: PathBuf,
    backup: PathBuf,
    /// The inode that was checked: a different file at the path (swapped meanwhile) is not written.
    inode: (u64, u64),
    /// The mode to keep: a write by a process without `CAP_FSETID` clears set-id bits.
    permissions: Permissions,
    /// Set when the old content could not be put back: the backup is then the only copy, and stays.
    keep_backup: Cell<bool>,
}

impl InPlace {
    fn prepare(target: &Path, original: &[u8], meta: &fs::Metadata) -> io::Result<InPlace> {
        let backup = sibling(target, "backup");
        create_private(&backup, original, 0o600)?;
        Ok(InPlace {
            target: target.to_owned(),
            backup,
            inode: identity::inode(meta),
            permissions: meta.permissions(),
            keep_backup: Cell::new(false),
        })
    }

    /// Overwrites the file with `bytes`: from the start, cut to their length, synced.
    fn write(&self, bytes: &[u8]) -> io::Result<()> {
        let mut options = OpenOptions::new();
        options.write(true);
        // Every link on the way was resolved when the path was located; one appearing now is not followed.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, identity::NO_FOLLOW);
        let mut file = options.open(&self.target)?;
        let meta = file.metadata()?;
        if identity::inode(&meta) != self.inode {
            return Err(io::Error::other("the file was replaced while it was being edited"));
        }
        file.write_all(bytes)?;
        file.set_len(bytes.len() as u64)?;
        file.sync_all()?;
        if file.metadata().map(|m| m.permissions()).ok().as_ref() != Some(&self.permissions) {
            let _ = file.set_permissions(self.permissions.clone());
        }
        Ok(())
    }

    /// Writes `bytes`, putting `original` back if that fails. The error says whether the file is whole.
    fn commit(&self, bytes: &[u8], original: &[u8]) -> Result<(), String> {
        let Err(e) = self.write(bytes) else { return Ok(()) };
        match self.restore(original) {
            Ok(()) => Err(format!("could not write {}: {e}", self.target.display())),
            Err(restore) => Err(format!(
                "could not write {}: {e}; putting its old content back failed too ({restore}), so it is kept in {}",
                self.target.display(),
                self.backup.display()
            )),
        }
    }

    fn restore(&self, original: &[u8]) -> io::Result<()> {
        let restored = self.write(original);
        if restored.is_err() {
            self.keep_backup.set(true);
        }
        restored
    }

    /// Removes the backup, once the file holds either its new or its old content in full.
    fn finish(&self) {
        if !self.keep_backup.get() {
            let _ = fs::remove_file(&self.backup);
            sync_parent(&self.backup);
        }
    }
}

/// What `rename` would lose, and how a staged file is given the old one's attributes.
#[cfg(unix)]
mod identity {
    use std::fs::{self, File, OpenOptions};
    use std::io;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    use std::path::Path;

    /// `O_NOFOLLOW`, for `OpenOptionsExt::custom_flags`.
    pub const NO_FOLLOW: i32 = rustix::fs::OFlags::NOFOLLOW.bits() as i32;
    /// `O_NONBLOCK`: a FIFO swapped in for the file must not hang the open.
    const NON_BLOCK: i32 = rustix::fs::OFlags::NONBLOCK.bits() as i32;

    pub fn inode(meta: &fs::Metadata) -> (u64, u64) {
        (meta.dev(), meta.ino())
    }

    /// Whether a rename could keep the file what it is: a file with another hard link cannot be, since the
    /// other name would keep the old content.
    pub fn renamable(meta: &fs::Metadata) -> bool {
        meta.nlink() <= 1
    }

    /// Gives `staged` the extended attributes and mode of the file at `target`, then checks that owner, group,
    /// mode and every attribute now match. `Ok(false)`: they do not (another owner, an attribute we may not
    /// set), so a rename would change the file.
    pub fn copy(target: &Path, meta: &fs::Metadata, staged: &File) -> io::Result<bool> {
        let original = OpenOptions::new().read(true).custom_flags(NO_FOLLOW | NON_BLOCK).open(target)?;
        if inode(&original.metadata()?) != inode(meta) {
            return Ok(false);
        }
        let wanted = attributes(&original)?;
        for (name, value) in &wanted {
            rustix::fs::fsetxattr(staged, name.as_slice(), value, rustix::fs::XattrFlags::empty())?;
        }
        // A new file may inherit attributes the old one lacks (a directory's default ACL, a label).
        for (name, _) in attributes(staged)? {
            if !wanted.iter().any(|(n, _)| *n == name) {
                rustix::fs::fremovexattr(staged, name.as_slice())?;
            }
        }
        // The mode last: it sets an ACL's mask, and set-id bits survive only if nothing follows.
        staged.set_permissions(meta.permissions())?;
        let now = staged.metadata()?;
        Ok(now.uid() == meta.uid()
            && now.gid() == meta.gid()
            && now.mode() == meta.mode()
            && attributes(staged)? == wanted)
    }

    /// Every extended attribute of a file, sorted by name; none where the filesystem has none.
    fn attributes(file: &File) -> io::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let unsupported = |e: &rustix::io::Errno| *e == rustix::io::Errno::NOTSUP;
        let size = match rustix::fs::flistxattr_query(file) {
            Ok(size) => size,
            Err(e) if unsupported(&e) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut names = vec![0u8; size];
        let len = rustix::fs::flistxattr(file, &mut names[..])?;
        let mut out = Vec::new();
        for name in names[..len].split(|&b| b == 0).filter(|n| !n.is_empty()) {
            let size = rustix::fs::fgetxattr_query(file, name)?;
            let mut value = vec![0u8; size];
            let len = rustix::fs::fgetxattr(file, name, &mut value[..])?;
            value.truncate(len);
            out.push((name.to_vec(), value));
        }
        out.sort();
        Ok(out)
    }
}

/// Elsewhere only the mode is known to matter, and a rename keeps it.
#[cfg(not(unix))]
mod identity {
    use std::fs::{self, File};
    use std::io;
    use std::path::Path;

    pub fn inode(_: &fs::Metadata) -> (u64, u64) {
        (0, 0)
    }

    pub fn renamable(_: &fs::Metadata) -> bool {
        true
    }

    pub fn copy(_: &Path, meta: &fs::Metadata, staged: &File) -> io::Result<bool> {
        staged.set_permissions(meta.permissions())?;
        Ok(true)
    }
}

/// One change of a [`Transaction`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Write `bytes` to `path`, creating its parent directories. A new file takes the permissions (and,
    /// where the process may set it, the owner) of `permissions_from` when given (a moved file keeps its
    /// mode), else the default.
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
    meta: Option<fs::Metadata>,
}

/// How one write is staged: a file to rename over the target, or a write through the target's inode.
enum Step {
    Rename(Staged),
    InPlace { write: InPlace, bytes: Vec<u8>, original: Vec<u8> },
}

impl Step {
    fn target(&self) -> &Path {
        match self {
            Step::Rename(staged) => &staged.target,
            Step::InPlace { write, .. } => &write.target,
        }
    }

    fn discard(&self) {
        match self {
            Step::Rename(staged) => staged.discard(),
            Step::InPlace { write, .. } => write.finish(),
        }
    }
}

/// Changes to several files that happen all together or not at all, each file keeping what it is: its
/// inode where anything but the bytes would change otherwise.
///
/// Every new content is first staged: in a temporary file beside its target, or, for a file that a rename
/// would change in more than its bytes (another owner or group than a new file gets, another hard link, an
/// attribute or ACL that cannot be copied), as a backup of the old content beside it, to be written through
/// the existing inode. Only when all are staged are they put in place, and deletions come last. Should one
/// still fail, what was already done is undone from in-memory copies of the originals, the same way it was
/// done. A write of the bytes a file already holds is no write at all.
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
    ///
    /// `may_write` is asked once, after the files are read and before anything on disk changes: the call's
    /// commit gate ([`HostClient::commit`](toolshed_plugin_api::HostClient::commit)). When it refuses (the
    /// call timed out or was cancelled and has been reported as failed), nothing is written. Every edit tool
    /// writes through here, so none can write after its call was given up.
    pub fn commit(self, may_write: &dyn Fn() -> Result<(), String>) -> Result<(), String> {
        let mut backups: Vec<Backup> = Vec::new();
        for change in &self.changes {
            let path = match change {
                Change::Write { path, .. } | Change::Delete { path } => path,
            };
            if backups.iter().any(|b| &b.path == path) {
                continue;
            }
            let backup = match fs::read(path) {
                Ok(bytes) => Backup { path: path.clone(), meta: fs::symlink_metadata(path).ok(), bytes: Some(bytes) },
                Err(e) if e.kind() == io::ErrorKind::NotFound => Backup { path: path.clone(), bytes: None, meta: None },
                Err(e) => return Err(format!("could not read {}: {e}", path.display())),
            };
            backups.push(backup);
        }
        let backup_of = |path: &Path| backups.iter().find(|b| b.path == path);
        may_write()?;

        let mut created_dirs = Vec::new();
        let mut steps: Vec<Step> = Vec::new();
        for change in &self.changes {
            let Change::Write { path, bytes, permissions_from } = change else { continue };
            let existing = backup_of(path).and_then(|b| Some((b.bytes.as_deref()?, b.meta.as_ref()?)));
            if existing.is_some_and(|(old, _)| old == bytes.as_slice()) {
                continue;
            }
            let result = (|| {
                if let Some(parent) = path.parent() {
                    create_dirs(parent, &mut created_dirs)?;
                }
                match existing {
                    Some((original, meta)) => Ok(match Staged::replacing(path, bytes, meta)? {
                        Some(staged) => Step::Rename(staged),
                        None => Step::InPlace {
                            write: InPlace::prepare(path, original, meta)?,
                            bytes: bytes.clone(),
                            original: original.to_vec(),
                        },
                    }),
                    None => {
                        let like = permissions_from.as_ref().and_then(|from| fs::metadata(from).ok());
                        Staged::new(path, bytes, like.as_ref()).map(Step::Rename)
                    }
                }
            })();
            match result {
                Ok(step) => steps.push(step),
                Err(e) => {
                    steps.iter().for_each(Step::discard);
                    remove_dirs(&created_dirs);
                    return Err(format!("could not write {}: {e}", path.display()));
                }
            }
        }

        let mut done: Vec<&Path> = Vec::new();
        let mut failure = None;
        for (i, step) in steps.iter().enumerate() {
            let result = match step {
                Step::Rename(staged) => {
                    staged.commit().map_err(|e| format!("could not write {}: {e}", staged.target.display()))
                }
                Step::InPlace { write, bytes, original } => write.commit(bytes, original),
            };
            if let Err(message) = result {
                // A failed write through an inode has put its file back already.
                steps[i..].iter().for_each(Step::discard);
                failure = Some(message);
                break;
            }
            done.push(step.target());
        }
        if failure.is_none() {
            for change in &self.changes {
                let Change::Delete { path } = change else { continue };
                // A path this transaction writes (a move onto its own source) is not deleted.
                if self.changes.iter().any(|c| matches!(c, Change::Write { path: written, .. } if written == path)) {
                    continue;
                }
                if let Err(e) = fs::remove_file(path) {
                    failure = Some(format!("could not delete {}: {e}", path.display()));
                    break;
                }
                done.push(path);
            }
        }
        let result = match failure {
            None => Ok(()),
            Some(message) => {
                restore(&backups, &done, &steps);
                remove_dirs(&created_dirs);
                Err(message)
            }
        };
        for step in &steps {
            if let Step::InPlace { write, .. } = step {
                write.finish();
            }
        }
        result
    }
}

/// Puts back the files in `done` as `backups` recorded them: through the same inode where the change was
/// written through it.
fn restore(backups: &[Backup], done: &[&Path], steps: &[Step]) {
    for backup in backups.iter().filter(|b| done.contains(&b.path.as_path())) {
        let in_place = steps.iter().find_map(|step| match step {
            Step::InPlace { write, .. } if write.target == backup.path => Some(write),
            Step::InPlace { .. } | Step::Rename(_) => None,
        });
        match (&backup.bytes, in_place) {
            (Some(bytes), Some(write)) => {
                let _ = write.restore(bytes);
            }
            (Some(bytes), None) => {
                if let Ok(staged) = Staged::new(&backup.path, bytes, backup.meta.as_ref()) {
                    if staged.commit().is_err() {
                        staged.discard();
                    }
                }
            }
            (None, _) => {
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
        tx.commit(&|| Ok(())).unwrap();
        assert_eq!(fs::read_to_string(&script).unwrap(), "new");
        assert_eq!(fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o750);
        assert_eq!(fs::read_to_string(dir.path().join("deep/er/new.txt")).unwrap(), "x");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[cfg(unix)]
    fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
        let mut tx = Transaction::new();
        tx.push(Change::Write { path: path.to_owned(), bytes: bytes.to_vec(), permissions_from: None });
        tx.commit(&|| Ok(()))
    }

    #[cfg(unix)]
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<_> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    #[cfg(unix)]
    #[test]
    fn hard_links_owners_and_set_id_bits_are_written_through_the_inode() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let (file, link) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
        fs::write(&file, "old").unwrap();
        fs::hard_link(&file, &link).unwrap();
        let inode = fs::metadata(&file).unwrap().ino();
        write(&file, b"new, and longer").unwrap();
        assert_eq!(fs::read_to_string(&link).unwrap(), "new, and longer");
        write(&link, b"short").unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "short");
        assert_eq!((fs::metadata(&file).unwrap().ino(), fs::metadata(&file).unwrap().nlink()), (inode, 2));
        assert_eq!(names(dir.path()), ["a.txt", "b.txt"], "no backup or temporary file is left");

        let owned = dir.path().join("owned.txt");
        fs::write(&owned, "old").unwrap();
        fs::set_permissions(&owned, Permissions::from_mode(0o4750)).unwrap();
        // As root the file can belong to someone else; otherwise the set-uid bit alone is kept.
        let other = std::os::unix::fs::chown(&owned, Some(1234), Some(4321)).is_ok();
        let before = fs::metadata(&owned).unwrap();
        write(&owned, b"new").unwrap();
        let after = fs::metadata(&owned).unwrap();
        assert_eq!(fs::read_to_string(&owned).unwrap(), "new");
        assert_eq!((after.uid(), after.gid(), after.mode()), (before.uid(), before.gid(), before.mode()));
        if other {
            assert_eq!((after.uid(), after.gid(), after.ino()), (1234, 4321, before.ino()));
        }
    }

    #[cfg(unix)]
    #[test]
    fn extended_attributes_survive_a_rename() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        fs::write(&file, "old").unwrap();
        if rustix::fs::setxattr(&file, "user.toolshed", b"kept", rustix::fs::XattrFlags::empty()).is_err() {
            return; // A filesystem without user attributes has nothing to lose.
        }
        write(&file, b"new").unwrap();
        let mut value = [0u8; 16];
        let len = rustix::fs::getxattr(&file, "user.toolshed", &mut value[..]).unwrap();
        assert_eq!(&value[..len], b"kept");
        assert_eq!(fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(fs::metadata(&file).unwrap().nlink(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn writing_the_same_bytes_writes_nothing() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        fs::write(&file, "same").unwrap();
        let before = fs::metadata(&file).unwrap();
        write(&file, b"same").unwrap();
        let after = fs::metadata(&file).unwrap();
        assert_eq!(
            (after.ino(), after.mtime_nsec(), after.mtime()),
            (before.ino(), before.mtime_nsec(), before.mtime())
        );
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
        assert!(tx.commit(&|| Ok(())).is_err());
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
