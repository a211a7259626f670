//! What every subcommand starts from: the workspace, the layered configuration, the plugin directories and
//! the task context, from the global options.

use crate::args::Cli;
use anyhow::Context as _;
use std::path::{Path, PathBuf};
use toolshed::shown::escape_line;
use toolshed::{Config, ConfigLoader, TaskContext};

/// The configuration, plugin directories and task context of one run.
pub struct Setup {
    pub config: Config,
    pub dirs: Vec<PathBuf>,
    pub context: TaskContext,
}

/// The workspace: `--cwd`, else the current directory.
pub fn workspace(cli: &Cli) -> anyhow::Result<PathBuf> {
    match &cli.cwd {
        Some(dir) => dir.canonicalize().with_context(|| format!("--cwd {}", dir.display())),
        None => std::env::current_dir().context("the current directory"),
    }
}

/// Reads the configuration for the workspace `cwd` and finds the plugin directories and roots.
pub fn load(cli: &Cli, cwd: PathBuf) -> anyhow::Result<Setup> {
    let loaded = ConfigLoader::new().config_file(cli.config.clone()).workspace(Some(cwd.clone())).load()?;
    for warning in &loaded.warnings {
        tracing::warn!("{}", escape_line(warning));
    }
    let config = loaded.config;
    crate::signals::set_kill_grace_ms(config.timeouts.kill_grace_ms);

    let mut dirs = plugin_dirs(&cli.plugins, &config.plugins.dirs);
    // Loading a library runs its code: a workspace's own plugins load only when the user trusts it.
    let workspace_plugins = cwd.join(".toolshed/plugins");
    if workspace_plugins.is_dir() {
        if loaded.workspace_trusted {
            dirs.push(workspace_plugins);
        } else {
            tracing::warn!(
                "not loading {}: the workspace is not trusted (add it to [plugins] trusted_workspaces in your user config)",
                workspace_plugins.display()
            );
        }
    }

    let mut context = TaskContext::new(cwd);
    for (name, dir) in &cli.roots {
        let dir = dir.canonicalize().with_context(|| format!("--root {name}={}", dir.display()))?;
        context = context.with_root(name.clone(), dir);
    }
    Ok(Setup { config, dirs, context })
}

/// The plugin directories, in order (a tool name belongs to the first plugin that declares it): the `--plugins`
/// directories, else `$TOOLSHED_PLUGINS`; then the configuration's `[plugins] dirs`; then, when neither of the
/// first two names one, the defaults that exist ([`default_plugin_dirs`]). A directory is looked in once.
fn plugin_dirs(given: &[PathBuf], configured: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = given.to_vec();
    if dirs.is_empty() {
        dirs.extend(std::env::var_os("TOOLSHED_PLUGINS").map(PathBuf::from));
    }
    let explicit = !dirs.is_empty();
    dirs.extend(configured.iter().cloned());
    if !explicit {
        dirs.extend(default_plugin_dirs().into_iter().filter(|dir| dir.is_dir()));
    }
    let mut seen = Vec::new();
    dirs.retain(|dir| {
        let key = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        let first = !seen.contains(&key);
        seen.push(key);
        first
    });
    dirs
}

/// Where plugins are looked for when neither `--plugins` nor `$TOOLSHED_PLUGINS` names a directory, existing or
/// not: `~/.toolshed/plugins`, then `lib/toolshed/plugins` beside the binary's `bin/` (`cargo xtask install
/// --prefix P` puts the binary in `P/bin` and the plugins in `P/lib/toolshed/plugins`).
pub fn default_plugin_dirs() -> Vec<PathBuf> {
    // A relative `HOME` names no home: it would resolve in the workspace, whose `.toolshed/plugins` loads only
    // when the workspace is trusted.
    let home = std::env::var_os("HOME").filter(|home| Path::new(home).is_absolute());
    let mut dirs: Vec<PathBuf> = home.map(|home| Path::new(&home).join(".toolshed/plugins")).into_iter().collect();
    // The executable's real path (symbolic links resolved), so a link in another `bin/` finds its own install.
    if let Some(prefix) = std::env::current_exe().ok().and_then(|exe| Some(exe.parent()?.parent()?.to_owned())) {
        dirs.push(prefix.join("lib/toolshed/plugins"));
    }
    dirs
}

/// The directory `toolshed plugins` manages when `--plugins` names none: `$TOOLSHED_PLUGINS`, else
/// `~/.toolshed/plugins`.
pub fn user_plugin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TOOLSHED_PLUGINS").filter(|dir| !dir.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    Some(Path::new(&std::env::var_os("HOME").filter(|home| Path::new(home).is_absolute())?).join(".toolshed/plugins"))
}

/// Every directory a run looked in for plugins: the ones it used and, when no `--plugins` or
/// `$TOOLSHED_PLUGINS` named one, the defaults that do not exist.
pub fn searched(cli: &Cli, dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut searched = dirs.to_vec();
    if cli.plugins.is_empty() && std::env::var_os("TOOLSHED_PLUGINS").is_none() {
        searched.extend(default_plugin_dirs().into_iter().filter(|dir| !dirs.contains(dir)));
    }
    searched
}

/// The error of a run that has no plugin to work with: each directory looked in and what it held, and what to
/// run (libraries that did not load have had their errors reported already).
pub fn no_plugins(searched: &[PathBuf]) -> anyhow::Error {
    no_plugins_because("no plugins loaded", searched)
}

/// [`no_plugins`] with its own first words (`watch` needs a directory, not a plugin).
pub fn no_plugins_because(headline: &str, searched: &[PathBuf]) -> anyhow::Error {
    let mut text = format!("{headline}; looked in:");
    if searched.is_empty() {
        text.push_str("\n  (no directory: HOME is not set or not an absolute path)");
    }
    for dir in searched {
        let held = match std::fs::read_dir(dir) {
            Ok(entries) => match entries.filter_map(Result::ok).filter(|entry| is_library(&entry.path())).count() {
                0 => "no plugin libraries".to_owned(),
                1 => "1 library, which did not load".to_owned(),
                n => format!("{n} libraries, none of which loaded"),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist".to_owned(),
            Err(e) => format!("cannot read it: {e}"),
        };
        text.push_str(&format!("\n  {} ({held})", escape_line(&dir.display().to_string())));
    }
    text.push_str(
        "\nInstall the shipped plugins with `cargo xtask install` in a clone of Toolshed, or pass `--plugins DIR` \
         (or set TOOLSHED_PLUGINS) to name a directory of plugin libraries.",
    );
    anyhow::anyhow!(text)
}

/// Whether some directory holds a file the runtime would try to load.
pub fn any_library(dirs: &[PathBuf]) -> bool {
    dirs.iter().any(|dir| {
        std::fs::read_dir(dir)
            .is_ok_and(|entries| entries.filter_map(Result::ok).any(|entry| is_library(&entry.path())))
    })
}

/// What the runtime's discovery loads: a file (or a link to one) with the platform's library extension.
pub fn is_library(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == std::env::consts::DLL_EXTENSION) && path.is_file()
}
