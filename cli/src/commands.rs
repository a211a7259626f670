//! The subcommands: each builds its runtime from the [`Setup`](crate::setup::Setup) and reports on it.

mod call;
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
    let cwd = crate::setup::workspace(&cli)?;
    // Before anything is read, so a signal always ends the process (`watch` stops gracefully on its own).
    if !matches!(cli.command, Command::Watch) {
        crate::signals::stop_on_signal();
    }
    let setup = crate::setup::load(&cli, cwd)?;
    // Without `--cwd` or `--root`, serve takes each client's roots as its workspace.
    let client_roots = cli.cwd.is_none() && cli.roots.is_empty();
    match cli.command {
        Command::Tools { json } => tools::run(setup, json),
        Command::Serve(args) => serve::run(setup, args, client_roots),
        Command::Watch => watch::run(setup),
        Command::Schema { provider, family } => schema::run(setup, provider, &family),
        Command::Call { tool, input, yes, images } => call::run(setup, tool, input, yes, images),
    }
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
