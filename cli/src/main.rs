//! The `toolshed` command: list the loaded tools and run tool calls through the full pipeline, print their
//! schemas, serve them over MCP, and watch the plugin directories. Everything it does goes through the
//! `toolshed` library's public API; this crate is only the command line around it.

#[macro_use]
mod output;
mod args;
mod commands;
mod isolated;
mod logging;
mod setup;
mod signals;
mod table;

use clap::Parser as _;
use std::process::ExitCode;
use toolshed::shown::escape;

/// Keeps this process's memory and initial environment (tokens, keys) from the commands it runs, which run as
/// the same user: not dumpable, it cannot be traced, and its `/proc/PID/environ` and `mem` are root's. (A
/// child's own flag is set again by its exec.)
fn protect_memory() {
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        err!("toolshed: cannot keep this process's memory from its commands: {e}");
    }
}

fn main() -> ExitCode {
    isolated::enter_if_asked();
    protect_memory();
    signals::set_up();
    let cli = args::Cli::parse();
    logging::init(cli.verbose);
    let outcome = commands::run(cli);
    signals::wait_if_stopping();
    match outcome {
        Ok(code) => code,
        // Whoever read our output has gone (`toolshed watch | head -3`): end quietly, as a filter does.
        Err(error) if error.downcast_ref::<std::io::Error>().is_some_and(output::is_closed) => ExitCode::SUCCESS,
        Err(error) => {
            err!("toolshed: {}", escape(&output::describe(&error)));
            ExitCode::from(2)
        }
    }
}
