//! `toolshed plugins install|list|remove`: third-party plugin libraries in the user plugin directory.
//!
//! A library is checked before it is placed: copied (from one open descriptor, so the bytes checked are the
//! bytes placed) to a hidden temporary file in the plugin directory, then loaded from there through the
//! runtime's own loader (`toolshed::load_plugin`: a shadow copy, the cut-short check, the ABI and layout checks,
//! the declarations), and only then renamed to its name. Removal renames the file away before deleting it.
//! The temporary names do not end in the library extension, so a running runtime, its discovery and its hot
//! reload never look at them; a rename is atomic, so they see the old library or the new one, whole.

use crate::args::PluginsCommand;
use anyhow::Context as _;
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolshed::shown::escape_line;

/// The most libraries one install takes from a directory: the shipped set is 24; a directory with more is
/// more likely a mistake (a build's `deps/`) than a set of plugins, and each one is loaded to be checked.
const MAX_LIBRARIES: usize = 256;

/// The largest library one install copies (the largest shipped plugin is 28 MB in release).
const MAX_BYTES: u64 = 1 << 30;

/// Runs one `toolshed plugins` subcommand on the directory `--plugins` names, else the user's.
pub fn run(plugins: &[PathBuf], command: &PluginsCommand) -> anyhow::Result<ExitCode> {
    let dir = match plugins {
        [dir] => dir.clone(),
        [] => crate::setup::user_plugin_dir()
            .context("no plugin directory: HOME is not set or not an absolute path (pass --plugins DIR)")?,
        _ => anyhow::bail!("`toolshed plugins` manages one directory: pass --plugins once"),
    };
    let code = match command {
        PluginsCommand::Install { path, force } => return install(&dir, path, *force),
        PluginsCommand::List { json } => list(&dir, *json)?,
        PluginsCommand::Remove { name } => remove(&dir, name)?,
    };
    // `cargo xtask install --prefix P` puts the shipped plugins in `P/lib/toolshed/plugins`, which the binary
    // loads but this command does not manage by default: a listing (or a failed removal) that said nothing of
    // them would say the plugins the runtime loads are not there.
    let said_nothing_there = matches!(command, PluginsCommand::List { .. }) || code != ExitCode::SUCCESS;
    if said_nothing_there && plugins.is_empty() && std::env::var_os("TOOLSHED_PLUGINS").is_none() {
        let managed = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        for other in crate::setup::default_plugin_dirs() {
            if other.canonicalize().is_ok_and(|other| other != managed)
                && crate::setup::any_library(std::slice::from_ref(&other))
            {
                let shown = escape_line(&other.display().to_string()).into_owned();
                let word = if shown.contains(char::is_whitespace) { format!("'{shown}'") } else { shown.clone() };
                err!("toolshed: {shown} holds plugin libraries too, which toolshed loads; pass --plugins {word} to list or remove them");
            }
        }
    }
    Ok(code)
}

/// What a library declares.
#[derive(Debug, Clone)]
struct Plugin {
    name: String,
    version: String,
    /// Every tool name it serves, aliases included, in declaration order.
    tools: Vec<String>,
}

/// A library in the plugin directory, and what it declares or why it does not load.
struct Entry {
    file: OsString,
    plugin: Result<Plugin, String>,
}

impl Entry {
    fn shown_file(&self) -> String {
        escape_line(&self.file.to_string_lossy()).into_owned()
    }
}

/// Loads `library` through the runtime's loader with all its checks, reads its declarations and closes it.
fn inspect(library: &Path) -> Result<Plugin, String> {
    let loaded = toolshed::load_plugin(library).map_err(|e| e.reason)?;
    let tools = loaded
        .declaration
        .tools
        .iter()
        .flat_map(|tool| std::iter::once(tool.name.clone()).chain(tool.aliases.iter().map(|alias| alias.name.clone())))
        .collect();
    Ok(Plugin { name: loaded.identity.name.clone(), version: loaded.identity.version.clone(), tools })
}

/// The libraries in `dir` (what the runtime would load from it), sorted by file name; none if it does not exist.
fn installed(dir: &Path) -> anyhow::Result<Vec<Entry>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    let mut found: Vec<Entry> = entries
        .filter_map(Result::ok)
        .filter(|entry| crate::setup::is_library(&entry.path()))
        .map(|entry| Entry { plugin: inspect(&entry.path()), file: entry.file_name() })
        .collect();
    found.sort_by(|a, b| a.file.cmp(&b.file));
    Ok(found)
}

fn list(dir: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let entries = installed(dir)?;
    if json {
        let listed: Vec<serde_json::Value> = entries
            .iter()
            .map(|entry| match &entry.plugin {
                Ok(plugin) => serde_json::json!({
                    "file": entry.file.to_string_lossy(),
                    "plugin": plugin.name,
                    "version": plugin.version,
                    "tools": plugin.tools,
                }),
                Err(why) => serde_json::json!({ "file": entry.file.to_string_lossy(), "error": why }),
            })
            .collect();
        out!("{}", serde_json::to_string_pretty(&listed)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if entries.is_empty() {
        err!("toolshed: no plugins in {}", escape_line(&dir.display().to_string()));
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|entry| match &entry.plugin {
            Ok(plugin) => vec![
                entry.file.to_string_lossy().into_owned(),
                plugin.name.clone(),
                plugin.version.clone(),
                plugin.tools.join(","),
            ],
            Err(why) => {
                vec![
                    entry.file.to_string_lossy().into_owned(),
                    "-".to_owned(),
                    "-".to_owned(),
                    format!("not loadable: {why}"),
                ]
            }
        })
        .collect();
    crate::table::print(&["FILE", "PLUGIN", "VERSION", "TOOLS"], &rows)?;
    Ok(ExitCode::SUCCESS)
}

/// A library to install: where it is, and the name it goes by.
struct Candidate {
    path: PathBuf,
    name: String,
    /// Named on the command line (a link is followed), not found in a directory (a link is refused).
    named: bool,
}

/// Hidden temporary files in the plugin directory, removed unless they were put in place.
#[derive(Default)]
struct Partials(Vec<PathBuf>);

impl Drop for Partials {
    fn drop(&mut self) {
        for partial in &self.0 {
            let _ = std::fs::remove_file(partial);
        }
    }
}

/// How a checked library goes in: under which file name, and what it replaces there.
struct Placement {
    partial: PathBuf,
    file: String,
    plugin: Plugin,
    replaces: Option<String>,
}

fn install(dir: &Path, source: &Path, force: bool) -> anyhow::Result<ExitCode> {
    let mut refused = Vec::new();
    let candidates = candidates(source, &mut refused)?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    clear_leftovers(dir);
    let existing = installed(dir)?;
    let mut partials = Partials::default();
    let mut placements: Vec<Placement> = Vec::new();
    for candidate in candidates {
        let shown = escape_line(&candidate.path.display().to_string()).into_owned();
        let (partial, plugin) = match stage(dir, &candidate, &mut partials) {
            Ok(staged) => staged,
            Err(why) => {
                refused.push(format!("{shown}: {why}"));
                continue;
            }
        };
        if let Some(twin) = placements.iter().find(|placed| placed.plugin.name == plugin.name) {
            let (name, twin) = (escape_line(&plugin.name), escape_line(&twin.file));
            refused.push(format!("{shown}: declares plugin {name} as {twin} does"));
            continue;
        }
        match placement(&existing, candidate.name, partial, plugin, force) {
            Ok(placed) => placements.push(placed),
            Err(why) => refused.push(format!("{shown}: {why}")),
        }
    }
    if !refused.is_empty() {
        for why in &refused {
            err!("toolshed: not installed: {why}");
        }
        err!("toolshed: nothing was installed");
        return Ok(ExitCode::from(1));
    }
    for placed in &placements {
        let to = dir.join(&placed.file);
        std::fs::rename(&placed.partial, &to).with_context(|| format!("putting {} in place", to.display()))?;
        partials.0.retain(|partial| partial != &placed.partial);
        let plugin = &placed.plugin;
        out!(
            "installed {} {} as {} (tools: {})",
            escape_line(&plugin.name),
            escape_line(&plugin.version),
            escape_line(&to.display().to_string()),
            escape_line(&plugin.tools.join(", "))
        )?;
        if let Some(replaced) = &placed.replaces {
            out!("  replaced {replaced}")?;
        }
    }
    warn_of_shared_tools(&existing, &placements);
    Ok(ExitCode::SUCCESS)
}

/// The libraries `source` names: itself, or those directly in it. A name that cannot be a plugin's, a link or
/// a special file found in a directory is refused into `refused`; other files in a directory are left alone.
fn candidates(source: &Path, refused: &mut Vec<String>) -> anyhow::Result<Vec<Candidate>> {
    let shown = escape_line(&source.display().to_string()).into_owned();
    let meta = std::fs::metadata(source).with_context(|| shown.clone())?;
    let mut found = Vec::new();
    if !meta.is_dir() {
        match file_name_of(source.file_name().unwrap_or_default()) {
            Ok(name) => found.push(Candidate { path: source.to_owned(), name, named: true }),
            Err(why) => refused.push(format!("{shown}: {why}")),
        }
        return Ok(found);
    }
    for entry in std::fs::read_dir(source).with_context(|| shown.clone())? {
        let entry = entry.with_context(|| shown.clone())?;
        let path = entry.path();
        if path.extension() != Some(OsStr::new(std::env::consts::DLL_EXTENSION)) {
            continue;
        }
        if found.len() + refused.len() == MAX_LIBRARIES {
            anyhow::bail!("{shown} holds more than {MAX_LIBRARIES} libraries; install them from a smaller directory");
        }
        let shown_path = escape_line(&path.display().to_string()).into_owned();
        let kind = entry.file_type().with_context(|| shown_path.clone())?;
        let name = file_name_of(&entry.file_name());
        match name {
            _ if kind.is_symlink() => {
                refused.push(format!("{shown_path}: a symbolic link (install the file it names)"))
            }
            _ if !kind.is_file() => refused.push(format!("{shown_path}: not a regular file")),
            Ok(name) => found.push(Candidate { path, name, named: false }),
            Err(why) => refused.push(format!("{shown_path}: {why}")),
        }
    }
    if found.is_empty() && refused.is_empty() {
        anyhow::bail!("no plugin libraries (*.{}) in {shown}", std::env::consts::DLL_EXTENSION);
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// The file name a library keeps in the plugin directory, if it can be one: text that shows as itself (no
/// control, invisible or bidirectional characters, which would make `list` lie), not hidden, and ending in the
/// library extension the runtime loads.
fn file_name_of(name: &OsStr) -> Result<String, String> {
    let Some(text) = name.to_str() else {
        return Err(format!("its name {} is not UTF-8", escape_line(&name.to_string_lossy())));
    };
    if escape_line(text) != text {
        return Err(format!("its name {} holds control or invisible characters", escape_line(text)));
    }
    if text.starts_with('.') {
        return Err("a hidden file name".to_owned());
    }
    if Path::new(text).extension() != Some(OsStr::new(std::env::consts::DLL_EXTENSION)) {
        return Err(format!("not a library: its name must end in .{}", std::env::consts::DLL_EXTENSION));
    }
    Ok(text.to_owned())
}

/// Copies the candidate to a hidden temporary file in `dir` (tracked in `partials`) and checks that copy.
fn stage(dir: &Path, candidate: &Candidate, partials: &mut Partials) -> Result<(PathBuf, Plugin), String> {
    // Non-blocking, so a FIFO cannot hang the open; never following a link found in a directory, so the file
    // checked to be regular is the one read.
    let mut flags = nix::libc::O_NONBLOCK;
    if !candidate.named {
        flags |= nix::libc::O_NOFOLLOW;
    }
    let mut from = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(&candidate.path)
        .map_err(|e| format!("cannot open it: {e}"))?;
    let meta = from.metadata().map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file".to_owned());
    }
    if meta.len() > MAX_BYTES {
        return Err(format!("{} bytes, over the {MAX_BYTES}-byte limit for a library", meta.len()));
    }
    let partial = dir.join(temporary_name("partial"));
    let mut to = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(&partial)
        .map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
    partials.0.push(partial.clone());
    let copied = std::io::copy(&mut std::io::Read::take(&mut from, MAX_BYTES + 1), &mut to)
        .and_then(|copied| to.sync_all().map(|()| copied))
        .map_err(|e| format!("cannot copy it to {}: {e}", partial.display()))?;
    if copied > MAX_BYTES {
        return Err(format!("it grew past the {MAX_BYTES}-byte limit for a library while it was copied"));
    }
    let plugin = inspect(&partial).map_err(|why| format!("not a loadable Toolshed plugin: {why}"))?;
    if plugin.name.is_empty() || escape_line(&plugin.name) != plugin.name || plugin.name.contains('/') {
        return Err(format!("its plugin name '{}' cannot be shown or typed", escape_line(&plugin.name)));
    }
    Ok((partial, plugin))
}

/// Where a checked plugin goes: over the file of the same plugin when one is installed (so the swap is one
/// rename), else under its own name; a file of that name holding another plugin is replaced only with `force`.
fn placement(
    existing: &[Entry],
    name: String,
    partial: PathBuf,
    plugin: Plugin,
    force: bool,
) -> Result<Placement, String> {
    let same = existing.iter().find(|entry| entry.plugin.as_ref().is_ok_and(|old| old.name == plugin.name));
    let file = same.map_or(name, |entry| entry.file.to_string_lossy().into_owned());
    let replaces = match existing.iter().find(|entry| entry.file == OsStr::new(&file)).map(|entry| &entry.plugin) {
        None => None,
        Some(Ok(old)) if old.name == plugin.name => {
            Some(format!("{} {}", escape_line(&old.name), escape_line(&old.version)))
        }
        Some(Ok(old)) if force => {
            Some(format!("plugin {} {}, by --force", escape_line(&old.name), escape_line(&old.version)))
        }
        Some(Ok(old)) => {
            return Err(format!(
                "{} in the plugin directory holds plugin {} {} (tools: {}), which installing {} would remove; \
                 remove it first (toolshed plugins remove {}) or pass --force",
                escape_line(&file),
                escape_line(&old.name),
                escape_line(&old.version),
                escape_line(&old.tools.join(", ")),
                escape_line(&plugin.name),
                escape_line(&old.name)
            ))
        }
        Some(Err(why)) => Some(format!("{}, which did not load: {}", escape_line(&file), escape_line(why))),
    };
    Ok(Placement { partial, file, plugin, replaces })
}

/// Warns of a tool name an installed plugin declares that another plugin in the directory declares too: the
/// runtime registers only the first (unless `[plugins] overrides` lets the later one replace it).
fn warn_of_shared_tools(existing: &[Entry], placements: &[Placement]) {
    for placed in placements {
        for entry in existing {
            let Ok(other) = &entry.plugin else {
                continue;
            };
            if other.name == placed.plugin.name {
                continue;
            }
            for tool in placed.plugin.tools.iter().filter(|tool| other.tools.contains(tool)) {
                tracing::warn!(
                    "tool {} of plugin {} is declared by plugin {} ({}) too: only one of them registers it",
                    escape_line(tool),
                    escape_line(&placed.plugin.name),
                    escape_line(&other.name),
                    entry.shown_file()
                );
            }
        }
    }
}

/// A hidden temporary name in the plugin directory, `.toolshed-N.KIND-PID`: short whatever the library's name
/// (one near the file-name limit must still install and be removable), unique within this process by `N` and
/// across processes by the pid, and in the shape [`clear_leftovers`] knows.
fn temporary_name(kind: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(".toolshed-{n}.{kind}-{}", std::process::id())
}

/// Deletes the temporary files (`.NAME.partial-PID`, `.NAME.removing-PID`, this command's and `cargo xtask
/// install`'s) that a process which has since died left in `dir`: they never load, but they are ours to clean.
fn clear_leftovers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|name| name.starts_with('.'))
            .and_then(|name| name.rsplit_once(".partial-").or_else(|| name.rsplit_once(".removing-")))
            .and_then(|(_, pid)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        // Signal 0 asks whether the process exists; only "no such process" means it is gone.
        let gone = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) == Err(nix::errno::Errno::ESRCH);
        if gone && pid > 0 && entry.file_type().is_ok_and(|kind| kind.is_file()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn remove(dir: &Path, name: &str) -> anyhow::Result<ExitCode> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." || escape_line(name) != name {
        anyhow::bail!("'{}' is not a plugin or file name", escape_line(name));
    }
    clear_leftovers(dir);
    let entries = installed(dir)?;
    let by_file: Vec<&Entry> = entries.iter().filter(|entry| entry.file == OsStr::new(name)).collect();
    let chosen = if by_file.is_empty() {
        entries.iter().filter(|entry| entry.plugin.as_ref().is_ok_and(|plugin| plugin.name == name)).collect()
    } else {
        by_file
    };
    if chosen.is_empty() {
        let names: Vec<String> = entries
            .iter()
            .map(|entry| match &entry.plugin {
                Ok(plugin) => format!("{} ({})", escape_line(&plugin.name), entry.shown_file()),
                Err(_) => entry.shown_file(),
            })
            .collect();
        let installed = if names.is_empty() { "none".to_owned() } else { names.join(", ") };
        err!(
            "toolshed: no plugin or library named {name} in {}; installed: {installed}",
            escape_line(&dir.display().to_string())
        );
        return Ok(ExitCode::from(1));
    }
    for entry in chosen {
        let from = dir.join(&entry.file);
        // Renamed away first: the runtime sees the library whole until it is gone, never a file being deleted.
        let away = dir.join(temporary_name("removing"));
        std::fs::rename(&from, &away).with_context(|| format!("removing {}", from.display()))?;
        std::fs::remove_file(&away).with_context(|| format!("removing {}", away.display()))?;
        match &entry.plugin {
            Ok(plugin) => out!(
                "removed {} {} ({})",
                escape_line(&plugin.name),
                escape_line(&plugin.version),
                escape_line(&from.display().to_string())
            )?,
            Err(_) => out!("removed {}", escape_line(&from.display().to_string()))?,
        }
    }
    Ok(ExitCode::SUCCESS)
}
