//! The subcommands: each builds its runtime from the [`Setup`](crate::setup::Setup) and reports on it.

mod call;
mod plugins;
mod schema;
mod serve;
mod tools;
mod watch;

use crate::args::{Cli, Command};
use std::process::ExitCode;
use toolshed::shown::escape_line;
use toolshed::Runtime;

/// Runs the subcommand `cli` names; the exit code is the command's answer, an error is a failure to run it.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // Before anything is read, so a signal always ends the process (`watch` stops gracefully on its own).
    if !matches!(cli.command, Command::Watch) {
        crate::signals::stop_on_signal();
    }
    // Managing the plugin directory needs neither a workspace nor a configuration.
    if let Command::Plugins(command) = &cli.command {
        return plugins::run(&cli.plugins, command);
    }
    let cwd = crate::setup::workspace(&cli)?;
    let setup = crate::setup::load(&cli, cwd)?;
    let searched = crate::setup::searched(&cli, &setup.dirs);
    // No plugin library anywhere: every command but `watch` would run with no tool at all, so it stops here and
    // says where it looked. `watch` needs a directory to watch and may wait there for the first plugin; `tools`
    // checks what loaded itself, after loading.
    match cli.command {
        Command::Watch if !setup.dirs.iter().any(|dir| dir.is_dir()) => {
            return Err(crate::setup::no_plugins_because("no plugin directory to watch", &searched));
        }
        Command::Call { .. } | Command::Serve(_) | Command::Schema { .. }
            if !crate::setup::any_library(&setup.dirs) =>
        {
            return Err(crate::setup::no_plugins(&searched));
        }
        Command::Watch | Command::Call { .. } | Command::Serve(_) | Command::Schema { .. } => {}
        Command::Tools { .. } | Command::Plugins(_) => {}
    }
    // Without `--cwd` or `--root`, serve takes each client's roots as its workspace.
    let client_roots = cli.cwd.is_none() && cli.roots.is_empty();
    match cli.command {
        Command::Tools { json } => tools::run(setup, json, &searched),
        Command::Serve(args) => serve::run(setup, args, client_roots, &searched),
        Command::Watch => watch::run(setup),
        Command::Schema(args) => schema::run(setup, args, &searched),
        Command::Call { tool, input, yes, images } => call::run(setup, tool, input, yes, images),
        Command::Plugins(command) => plugins::run(&cli.plugins, &command),
    }
}

/// Reports what did not load, and fails when no tool did: libraries were found, but none of them loaded
/// (`call` has its own answer, since it may load only the one library it needs).
fn loaded(runtime: &Runtime, searched: &[std::path::PathBuf]) -> anyhow::Result<()> {
    report_load_errors(runtime);
    if runtime.tools().is_empty() {
        return Err(crate::setup::no_plugins(searched));
    }
    Ok(())
}

/// Tells of the plugins that did not load and the tools that were not registered, one line each.
fn report_load_errors(runtime: &Runtime) {
    for error in runtime.load_errors() {
        err!("toolshed: plugin not loaded: {}", escape_line(&error.to_string()));
    }
    for event in runtime.register_events() {
        if let toolshed::RegisterEvent::Refused { reason, .. } = event {
            err!("toolshed: tool not registered: {}", escape_line(reason));
        }
    }
}
