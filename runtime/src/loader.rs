//! Finds plugin libraries, loads each from a content-named shadow copy, checks its ABI, and reads its declarations.
//!
//! `abi_stable`'s `RootModule::load_from*` caches one module per root-module type, so every library is loaded
//! with `lib_header_from_path` + `init_root_module` instead. Libraries are never unloaded (values they returned
//! point into them); a rebuilt file is loaded from a fresh shadow path, because the dynamic loader hands back
//! the already-mapped object for a path it has seen.

use abi_stable::library::{lib_header_from_path, LibraryError};
use abi_stable::std_types::{RResult, RStr};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use toolshed_plugin_api::{PluginDeclaration, PluginModRef, ToolHandlerBox, API_VERSION};

/// Where a loaded plugin came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginIdentity {
    /// The library file in the plugin directory.
    pub file: PathBuf,
    /// The plugin's name.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// The `toolshed-plugin-api` version it was built against.
    pub api_version: String,
    /// xxh3-128 of the file's bytes, hex.
    pub content_hash: String,
}

/// A library loaded and checked, with its declarations read.
#[derive(Clone)]
pub struct LoadedPlugin {
    /// Where it came from.
    pub identity: Arc<PluginIdentity>,
    /// Its tools.
    pub declaration: PluginDeclaration,
    module: PluginModRef,
}

impl fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedPlugin").field("identity", &self.identity).finish_non_exhaustive()
    }
}

impl LoadedPlugin {
    /// Asks the plugin's factory for the handler of `tool`; `Ok(None)` when the plugin declines it.
    pub fn new_handler(&self, tool: &str, config_json: &str) -> Result<Option<ToolHandlerBox>, String> {
        match (self.module.new_handler())(RStr::from_str(tool), RStr::from_str(config_json)) {
            RResult::ROk(handler) => Ok(handler.into_option()),
            RResult::RErr(message) => Err(message.into_string()),
        }
    }
}

/// Why a library could not be loaded: the file and one or two lines saying why and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {reason}", file.display())]
pub struct LoadError {
    /// The library file.
    pub file: PathBuf,
    /// Why, and what to do.
    pub reason: String,
}

impl LoadError {
    fn new(file: &Path, reason: impl Into<String>) -> Self {
        Self { file: file.to_owned(), reason: reason.into() }
    }
}

/// Lists the plugin libraries in `dirs`, sorted by file name within each directory.
///
/// A directory that does not exist gives a [`LoadError`] and the others are still listed.
pub fn discover(dirs: &[PathBuf]) -> (Vec<PathBuf>, Vec<LoadError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for dir in dirs {
        match std::fs::read_dir(dir) {
            Ok(entries) => {
                let mut found: Vec<PathBuf> =
                    entries.filter_map(|entry| entry.ok().map(|e| e.path())).filter(|path| is_library(path)).collect();
                found.sort();
                files.extend(found);
            }
            Err(e) => errors.push(LoadError::new(dir, format!("cannot read plugin directory: {e}"))),
        }
    }
    (files, errors)
}

/// Whether a path names a dynamic library of this platform.
pub fn is_library(path: &Path) -> bool {
    path.is_file() && path.extension().is_some_and(|ext| ext == std::env::consts::DLL_EXTENSION)
}

/// The directory shadow copies are loaded from: one per user, files named by process and content.
fn shadow_dir() -> PathBuf {
    let user = std::env::var("USER").unwrap_or_else(|_| "user".to_owned());
    std::env::temp_dir().join(format!("toolshed-shadow-{user}"))
}

/// Numbers this process's shadow copies, so concurrent loads of one file never share a temporary name.
static NEXT_COPY: AtomicU64 = AtomicU64::new(0);

/// Loads one library: copy to a content-named shadow path, open, check the ABI, read the declarations.
pub fn load(file: &Path) -> Result<LoadedPlugin, LoadError> {
    let dir = shadow_dir();
    std::fs::create_dir_all(&dir)
        .map_err(|e| LoadError::new(file, format!("cannot create shadow directory {}: {e}", dir.display())))?;
    // Copy to a temporary name while hashing (one pass, bounded memory), then rename to the content's name,
    // so a concurrent load of the same content never maps a half-written file.
    let partial = dir.join(format!("{}-{}.partial", std::process::id(), NEXT_COPY.fetch_add(1, Ordering::Relaxed)));
    let hash = copy_hashing(file, &partial).map_err(|e| {
        let _ = std::fs::remove_file(&partial);
        LoadError::new(file, format!("cannot copy to the shadow directory {}: {e}", dir.display()))
    })?;
    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let shadow = dir.join(format!("{}-{}-{stem}.{}", std::process::id(), &hash[..16], std::env::consts::DLL_EXTENSION));
    std::fs::rename(&partial, &shadow)
        .map_err(|e| LoadError::new(file, format!("cannot write shadow copy {}: {e}", shadow.display())))?;
    let loaded = open(file, &shadow);
    // The mapping outlives the name; removing the copy now leaves nothing behind in the temp directory.
    let _ = std::fs::remove_file(&shadow);
    let module = loaded?;

    let api_version = module.api_version().as_str().to_owned();
    if !api_compatible(&api_version, API_VERSION) {
        return Err(LoadError::new(
            file,
            format!(
                "built against toolshed-plugin-api {api_version}, this host uses {API_VERSION}; rebuild the plugin against toolshed-plugin-api {API_VERSION}"
            ),
        ));
    }
    let declaration = match (module.declarations())() {
        RResult::ROk(json) => serde_json::from_str::<PluginDeclaration>(json.as_str())
            .map_err(|e| LoadError::new(file, format!("unreadable tool declarations: {e}")))?,
        RResult::RErr(message) => {
            return Err(LoadError::new(file, format!("declaring its tools failed: {}", message.as_str())))
        }
    };
    let identity = PluginIdentity {
        file: file.to_owned(),
        name: module.name().as_str().to_owned(),
        version: module.version().as_str().to_owned(),
        api_version,
        content_hash: hash,
    };
    Ok(LoadedPlugin { identity: Arc::new(identity), declaration, module })
}

/// Copies `from` to `to` and returns the xxh3-128 of the bytes, hex.
fn copy_hashing(from: &Path, to: &Path) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut input = std::fs::File::open(from)?;
    let mut output = std::fs::File::create(to)?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        output.write_all(&buf[..n])?;
    }
    output.flush()?;
    Ok(format!("{:032x}", hasher.digest128()))
}

fn open(file: &Path, shadow: &Path) -> Result<PluginModRef, LoadError> {
    let header = lib_header_from_path(shadow).map_err(|e| LoadError::new(file, describe(&e)))?;
    header.init_root_module::<PluginModRef>().map_err(|e| LoadError::new(file, describe(&e)))
}

/// Turns an `abi_stable` error (whose layout dumps run to 15 KB) into one or two lines and what to do.
fn describe(error: &LibraryError) -> String {
    let rebuild = format!("rebuild the plugin against toolshed-plugin-api {API_VERSION}");
    match error {
        LibraryError::OpenError { err, .. } => {
            format!("not a loadable library ({}); is it a Toolshed plugin built for this platform?", one_line(&err.to_string()))
        }
        LibraryError::GetSymbolError { .. } => {
            "not a Toolshed plugin: it exports no abi_stable root module (use toolshed_plugin_api::export_plugin!)".to_owned()
        }
        LibraryError::IncompatibleVersionNumber { library_name, expected_version, actual_version } => format!(
            "incompatible interface version: {library_name} {actual_version} in the plugin, {expected_version} expected; {rebuild}"
        ),
        LibraryError::AbiInstability(_) => {
            let errors = layout_errors(&error.to_string());
            let detail = if errors.is_empty() { "layout differs".to_owned() } else { errors.join("; ") };
            format!("incompatible plugin interface layout ({}); {rebuild}", one_line(&detail))
        }
        LibraryError::RootModule { err, .. } => format!("its root module failed to initialise: {}", one_line(&err.to_string())),
        other => format!("{}; {rebuild}", one_line(&other.to_string())),
    }
}

/// The distinct `Error:` lines of a layout report (at most two), each with its `Expected:`/`Found:` values.
fn layout_errors(report: &str) -> Vec<String> {
    let lines: Vec<&str> = report.lines().map(str::trim).collect();
    let mut errors: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(message) = line.strip_prefix("Error:") else {
            continue;
        };
        let mut error = message.trim().to_owned();
        if let ["Expected:", expected, "Found:", found, ..] = lines.get(i + 1..).unwrap_or_default() {
            error.push_str(&format!(": expected {expected}, found {found}"));
        }
        if !errors.contains(&error) {
            errors.push(error);
        }
        if errors.len() == 2 {
            break;
        }
    }
    errors
}

fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() > 300 {
        joined.chars().take(300).chain("…".chars()).collect()
    } else {
        joined
    }
}

/// Whether a plugin built against interface version `plugin` works with this host's `host` version:
/// same major version, or for 0.x the same minor.
fn api_compatible(plugin: &str, host: &str) -> bool {
    fn key(v: &str) -> Option<(u64, u64)> {
        let mut parts = v.split(['.', '-', '+']).map(str::parse::<u64>);
        let major = parts.next()?.ok()?;
        let minor = parts.next()?.ok()?;
        Some((major, minor))
    }
    match (key(plugin), key(host)) {
        (Some((0, pm)), Some((0, hm))) => pm == hm,
        (Some((pmaj, _)), Some((hmaj, _))) => pmaj == hmaj,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_versions() {
        assert!(api_compatible("0.1.0", "0.1.3"));
        assert!(!api_compatible("0.2.0", "0.1.0"));
        assert!(api_compatible("1.4.0", "1.0.0"));
        assert!(!api_compatible("1.0.0", "0.1.0"));
        assert!(!api_compatible("garbage", "0.1.0"));
    }

    #[test]
    fn layout_reports_shrink_to_their_error_lines() {
        let report = "Error:incompatible package versions\nExpected:\n    0.1.0\nFound:\n    0.2.0\n0 error(s)inside:\n...\nError:incompatible package versions\nExpected:\n 0.1.0\nFound:\n 0.2.0\nError:incompatible type size\n";
        assert_eq!(
            layout_errors(report),
            vec!["incompatible package versions: expected 0.1.0, found 0.2.0", "incompatible type size"]
        );
    }

    #[test]
    fn corrupt_file_is_a_clean_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("libjunk.so");
        std::fs::write(&file, b"\x7fELF this is not really a library").unwrap();
        let err = load(&file).unwrap_err();
        assert_eq!(err.file, file);
        assert!(err.reason.starts_with("not a loadable library"), "{}", err.reason);
        assert!(!err.reason.contains('\n'));
    }

    #[test]
    fn discovery_lists_libraries_and_reports_missing_dirs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(format!("libb.{}", std::env::consts::DLL_EXTENSION)), b"").unwrap();
        std::fs::write(dir.path().join(format!("liba.{}", std::env::consts::DLL_EXTENSION)), b"").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"").unwrap();
        let missing = dir.path().join("missing");
        let (files, errors) = discover(&[dir.path().to_owned(), missing.clone()]);
        let names: Vec<_> = files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(
            names,
            vec![
                format!("liba.{}", std::env::consts::DLL_EXTENSION),
                format!("libb.{}", std::env::consts::DLL_EXTENSION)
            ]
        );
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].file, missing);
    }
}
