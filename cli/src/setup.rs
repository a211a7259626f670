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

    let mut dirs = cli.plugins.clone();
    if dirs.is_empty() {
        dirs.extend(default_plugin_dir());
    }
    dirs.extend(config.plugins.dirs.iter().cloned());
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

/// `$TOOLSHED_PLUGINS`, else `~/.toolshed/plugins` if it exists.
fn default_plugin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TOOLSHED_PLUGINS") {
        return Some(PathBuf::from(dir));
    }
    let default = Path::new(&std::env::var_os("HOME")?).join(".toolshed/plugins");
    default.is_dir().then_some(default)
}
