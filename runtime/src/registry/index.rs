//! The declaration index: which tool names each plugin library declares, keyed by the library's content hash,
//! and a fast path from a file as it sits on disk (device, inode, size, modification and change times) to that
//! hash, so a one-shot call (`toolshed call`) opens only the library that declares its tool.
//!
//! The index is a cache file the user owns (`$XDG_CACHE_HOME/toolshed/index.json`, else
//! `~/.cache/toolshed/index.json`), and hostile input like any other: it is read only when it is a regular file
//! of this user that nobody else can write, at most [`MAX_INDEX_BYTES`], every entry checked; anything wrong and
//! it is ignored whole. It only ever says which file to open first: the files come from the plugin
//! directories, never from the index, the library loaded is checked against the hash the index gave, and its
//! own declarations decide what registers. It is written atomically (a temporary file renamed over it).

use crate::registry::tool_id::check_plugin_tool_name;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use toolshed_plugin_api::PluginDeclaration;

/// The format written; a file of another format is ignored (and replaced on the next refresh).
const FORMAT: u32 = 1;
/// The most bytes an index may have: 24 libraries take about 10 KB, so this leaves room for many plugin
/// directories and refuses a file someone filled.
pub const MAX_INDEX_BYTES: u64 = 4 << 20;
/// The most files it remembers; past that, the ones not seen last go first.
const MAX_FILES: usize = 1024;
/// The most tools one library may declare in it, and names one tool may have.
const MAX_TOOLS: usize = 256;
const MAX_NAMES: usize = 64;

/// A library file as it sits on disk: what must not have changed for its hash to still hold. The change time
/// cannot be set by a user (unlike the modification time, which `touch -d` and `cp -p` set), so a file
/// rewritten in place under the same size and modification time still misses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
}

impl FileStamp {
    /// The stamp of a file's metadata (of an open file's `fstat`, to match the bytes read from it).
    pub fn of(meta: &std::fs::Metadata) -> Self {
        let ns = |secs: i64, nanos: i64| secs.saturating_mul(1_000_000_000).saturating_add(nanos);
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// A digest of the whole stamp: the identity of a file that cannot change in place (`loader`).
    pub fn digest(&self) -> u128 {
        let mut bytes = [0u8; 40];
        for (at, field) in
            [self.dev, self.ino, self.size, self.mtime_ns as u64, self.ctime_ns as u64].iter().enumerate()
        {
            bytes[at * 8..at * 8 + 8].copy_from_slice(&field.to_le_bytes());
        }
        xxhash_rust::xxh3::xxh3_128(&bytes)
    }

    /// The stamp of the file at `path` now, following links as loading does.
    pub fn read(path: &Path) -> Option<Self> {
        std::fs::metadata(path).ok().map(|meta| Self::of(&meta))
    }
}

/// The names one tool answers to: its primary name first, then its aliases.
pub type ToolNames = Vec<String>;

/// One file the index knows: its stamp and the content hash it had then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct FileEntry {
    path: PathBuf,
    #[serde(flatten)]
    stamp: FileStamp,
    hash: String,
}

/// The file's shape on disk.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct IndexFile {
    format: u32,
    /// Content hash → the names of each tool the library declares (empty for a file that did not load).
    libraries: BTreeMap<String, Vec<ToolNames>>,
    files: Vec<FileEntry>,
}

/// Why an index was not used.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// It could not be opened or read (a missing index is the usual first run).
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The index file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not a file this user alone controls, too big, or not an index.
    #[error("ignoring {}: {reason}", path.display())]
    Refused {
        /// The index file.
        path: PathBuf,
        /// Why, in one line.
        reason: String,
    },
}

/// The index in memory.
#[derive(Debug, Default, Clone)]
pub struct Index {
    libraries: HashMap<String, Vec<ToolNames>>,
    files: HashMap<PathBuf, (FileStamp, String)>,
    /// Files recorded by this process, kept first when the index is pruned.
    recorded: HashSet<PathBuf>,
}

/// Where the index lives: `$XDG_CACHE_HOME/toolshed/index.json` (an absolute `XDG_CACHE_HOME` only, as the XDG
/// spec says), else `$HOME/.cache/toolshed/index.json`; `None` without either.
pub fn default_path() -> Option<PathBuf> {
    cache_path(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME"))
}

/// [`default_path`] from those two variables (see [`crate::scratch::user_cache`]).
fn cache_path(xdg_cache_home: Option<std::ffi::OsString>, home: Option<std::ffi::OsString>) -> Option<PathBuf> {
    Some(crate::scratch::user_cache(xdg_cache_home, home)?.join("index.json"))
}

/// How the index names a file: absolute (a plugin directory may be given relative to the current directory).
fn key(file: &Path) -> PathBuf {
    std::path::absolute(file).unwrap_or_else(|_| file.to_owned())
}

/// Whether `hash` is a library identity the loader gives: xxh3-128 of its bytes, or `fixed-` or `leased-` and
/// the digest of its stamp for a library loaded in place (see `loader::identity`).
fn is_hash(hash: &str) -> bool {
    let digest = hash.strip_prefix("fixed-").or_else(|| hash.strip_prefix("leased-")).unwrap_or(hash);
    digest.len() == 32 && digest.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Index {
    /// Reads and checks the index at `path`. It must be a regular file (not a link) owned by this user and
    /// writable by nobody else, at most [`MAX_INDEX_BYTES`], and every entry well formed.
    pub fn read(path: &Path) -> Result<Self, IndexError> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let refused = |reason: String| IndexError::Refused { path: path.to_owned(), reason };
        let read = |source| IndexError::Read { path: path.to_owned(), source };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
            .open(path)
            .map_err(read)?;
        // Checked on the open file, so the file judged is the file read.
        let meta = file.metadata().map_err(read)?;
        if !meta.is_file() {
            return Err(refused("not a regular file".to_owned()));
        }
        if meta.uid() != nix::unistd::geteuid().as_raw() {
            return Err(refused(format!("owned by uid {}, not by this user", meta.uid())));
        }
        if meta.mode() & 0o022 != 0 {
            return Err(refused(format!("writable by others (mode {:o})", meta.mode() & 0o7777)));
        }
        if meta.len() > MAX_INDEX_BYTES {
            return Err(refused(format!("{} bytes, over the {MAX_INDEX_BYTES}-byte limit", meta.len())));
        }
        let mut bytes = Vec::new();
        file.take(MAX_INDEX_BYTES + 1).read_to_end(&mut bytes).map_err(read)?;
        if bytes.len() as u64 > MAX_INDEX_BYTES {
            return Err(refused(format!("over the {MAX_INDEX_BYTES}-byte limit")));
        }
        let parsed: IndexFile = serde_json::from_slice(&bytes).map_err(|e| refused(format!("not an index ({e})")))?;
        Self::check(parsed).map_err(refused)
    }

    /// Every entry of a parsed file checked; the first bad one refuses the whole file.
    fn check(parsed: IndexFile) -> Result<Self, String> {
        if parsed.format != FORMAT {
            return Err(format!("format {}, this build reads {FORMAT}", parsed.format));
        }
        if parsed.files.len() > MAX_FILES || parsed.libraries.len() > MAX_FILES {
            return Err(format!("more than {MAX_FILES} entries"));
        }
        for (hash, tools) in &parsed.libraries {
            if !is_hash(hash) {
                return Err("a library key is not a content hash".to_owned());
            }
            if tools.len() > MAX_TOOLS || tools.iter().any(|names| names.is_empty() || names.len() > MAX_NAMES) {
                return Err(format!("library {hash} has too many or empty tool entries"));
            }
            if let Some(bad) = tools.iter().flatten().find(|name| check_plugin_tool_name(name).is_err()) {
                return Err(format!(
                    "library {hash} names an invalid tool {:?}",
                    bad.chars().take(80).collect::<String>()
                ));
            }
        }
        let mut files = HashMap::new();
        for entry in parsed.files {
            if !entry.path.is_absolute() || !parsed.libraries.contains_key(&entry.hash) {
                return Err("a file entry has a relative path or an unknown hash".to_owned());
            }
            files.insert(entry.path, (entry.stamp, entry.hash));
        }
        Ok(Self { libraries: parsed.libraries.into_iter().collect(), files, recorded: HashSet::new() })
    }

    /// The content hash the index holds for `file`, when the file still has the stamp it had then.
    pub fn hash_of(&self, file: &Path, stamp: &FileStamp) -> Option<&str> {
        self.files.get(&key(file)).filter(|(known, _)| known == stamp).map(|(_, hash)| hash.as_str())
    }

    /// The tool names the library with this content hash declares.
    pub fn declared(&self, hash: &str) -> Option<&[ToolNames]> {
        self.libraries.get(hash).map(Vec::as_slice)
    }

    /// Records a library just loaded: the stamp its bytes were read under, their hash, and what it declares
    /// (names no plugin may have are left out: they never route). `None` for a file that did not load, which
    /// then declares nothing until it changes.
    pub fn record(&mut self, file: &Path, stamp: FileStamp, hash: &str, declaration: Option<&PluginDeclaration>) {
        let file = &key(file);
        if !is_hash(hash) {
            return;
        }
        let tools: Vec<ToolNames> = declaration
            .map(|declaration| {
                declaration
                    .tools
                    .iter()
                    .take(MAX_TOOLS)
                    .map(|tool| {
                        std::iter::once(&tool.name)
                            .chain(tool.aliases.iter().map(|alias| &alias.name))
                            .filter(|name| check_plugin_tool_name(name).is_ok())
                            .take(MAX_NAMES)
                            .cloned()
                            .collect::<ToolNames>()
                    })
                    .filter(|names| !names.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        self.libraries.insert(hash.to_owned(), tools);
        self.files.insert(file.to_owned(), (stamp, hash.to_owned()));
        self.recorded.insert(file.to_owned());
    }

    /// Writes the index to `path` atomically (a temporary file in the same directory, renamed over it), after
    /// dropping the files that are gone and, past [`MAX_FILES`], the ones not recorded by this process.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        use std::io::Write as _;
        let mut files: Vec<FileEntry> = self
            .files
            .iter()
            .filter(|(file, _)| self.recorded.contains(*file) || file.is_file())
            .map(|(file, (stamp, hash))| FileEntry { path: file.clone(), stamp: *stamp, hash: hash.clone() })
            .collect();
        files.sort_by(|a, b| {
            (!self.recorded.contains(&a.path), &a.path).cmp(&(!self.recorded.contains(&b.path), &b.path))
        });
        files.truncate(MAX_FILES);
        let used: HashSet<&str> = files.iter().map(|entry| entry.hash.as_str()).collect();
        let libraries =
            self.libraries.iter().filter(|(hash, _)| used.contains(hash.as_str())).map(|(h, t)| (h.clone(), t.clone()));
        let record = IndexFile { format: FORMAT, libraries: libraries.collect(), files };
        let dir = path.parent().ok_or_else(|| std::io::Error::other("the index path has no directory"))?;
        create_private_dir(dir)?;
        let mut temp = tempfile::Builder::new().prefix(".index-").suffix(".tmp").tempfile_in(dir)?;
        temp.write_all(&serde_json::to_vec(&record).map_err(std::io::Error::other)?)?;
        temp.as_file().sync_data()?;
        temp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// Creates the index's directory, readable by this user alone, and its parents as needed.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Which files a one-shot start opens, from the index: for each name, the first file in discovery order that
/// declares it. `Err` says why the index cannot answer (a file it does not know as it is now, a name two
/// files declare), and the start loads everything instead.
pub fn plan(index: &Index, files: &[PathBuf]) -> Result<Declarations, String> {
    let mut names: HashMap<String, PathBuf> = HashMap::new();
    let mut hashes = HashMap::new();
    for file in files {
        let stamp = FileStamp::read(file).ok_or_else(|| format!("cannot stat {}", file.display()))?;
        let hash =
            index.hash_of(file, &stamp).ok_or_else(|| format!("{} is not indexed as it is now", file.display()))?;
        let tools = index.declared(hash).ok_or_else(|| format!("no declarations for {}", file.display()))?;
        for name in tools.iter().flatten() {
            // Two files declaring one name: which one serves depends on the load order and `[plugins]
            // overrides`, so the coordinator decides that over every library.
            if let Some(other) = names.insert(name.clone(), file.clone()).filter(|other| other != file) {
                return Err(format!("'{name}' is declared by {} and {}", other.display(), file.display()));
            }
        }
        hashes.insert(file.clone(), hash.to_owned());
    }
    Ok(Declarations { names, hashes, order: files.to_vec() })
}

/// What the index says of the plugin directories now: which file declares each name, and each file's hash.
#[derive(Debug, Clone, Default)]
pub struct Declarations {
    names: HashMap<String, PathBuf>,
    hashes: HashMap<PathBuf, String>,
    /// Every library file, in discovery order.
    order: Vec<PathBuf>,
}

impl Declarations {
    /// The file that declares `name`.
    pub fn file_of(&self, name: &str) -> Option<&Path> {
        self.names.get(name).map(PathBuf::as_path)
    }

    /// Whether `declaration` names exactly what the index said `file` declares: no name more (a tool past the
    /// index's caps, or one a library declares only sometimes, would register unplanned and could take a name
    /// another library serves in a full load) and none fewer. Names no plugin may have never route, so they
    /// do not count.
    pub fn declares_exactly(&self, file: &Path, declaration: &PluginDeclaration) -> bool {
        let planned: HashSet<&str> =
            self.names.iter().filter(|(_, of)| of.as_path() == file).map(|(name, _)| name.as_str()).collect();
        let declared: HashSet<&str> = declaration
            .tools
            .iter()
            .flat_map(|tool| std::iter::once(&tool.name).chain(tool.aliases.iter().map(|alias| &alias.name)))
            .filter(|name| check_plugin_tool_name(name).is_ok())
            .map(String::as_str)
            .collect();
        planned == declared
    }

    /// The content hash the index gave `file`.
    pub fn hash_of(&self, file: &Path) -> Option<&str> {
        self.hashes.get(file).map(String::as_str)
    }

    /// Every library file, in discovery order.
    pub fn files(&self) -> &[PathBuf] {
        &self.order
    }
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
