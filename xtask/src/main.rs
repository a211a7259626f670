//! Project automation (`cargo xtask …`): build the plugins, run the whole test suite, run the demo, measure.

mod bench;
mod build;
mod demo;
mod fuzz;
mod install;
mod new_plugin;
mod peers;
mod soak;
mod test;
mod tidy;

use anyhow::{bail, Result};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <command>

commands:
  install [--prefix DIR] [--debug] [--no-build]
                        build in release and install the `toolshed` binary and the shipped plugins: into
                        ~/.cargo/bin (where `cargo install` puts binaries) and ~/.toolshed/plugins, or
                        into DIR/bin and DIR/lib/toolshed/plugins; every file replaced by a rename
  plugins [--release]   build every plugin and copy the libraries to target/plugins[-debug]/
  tidy                  check the house rules: the runtime's layering (runtime/layers.toml) and no file over
                        800 lines of non-test code
  test                  tidy, fmt and clippy, then build the plugins and fixtures, run every test and the demo
  demo [--release]      run a scripted agent session that exercises every shipped tool
  new-plugin NAME [--dir DIR] [--api-path DIR | --api-version VERSION]
                        create a tool plugin crate from the template (with a test) in DIR/NAME; outside
                        plugins/ it is a workspace of its own that builds against the given plugin API
  bench [--rows LIST]   build in release and measure the performance budget against references run side by
                        side; prints the table and writes target/bench/latest.json (with --rows, only those
                        rows of the issue, such as `--rows 13`, and no latest.json)
  fuzz [--seconds N] [TARGET]
                        run the libFuzzer targets of fuzz/ for N seconds each (default 60), one at a time;
                        new crashes are copied to fuzz/regressions/, which `cargo test` replays
  soak [--seconds N] [--tasks T] [--reload-ms MS] [--debug]
                        build in release (or debug) and run T concurrent tasks (default 32) calling every
                        shipped tool for N seconds (default 60) while plugins hot-reload; fails on any
                        unexpected result or growth of RSS or descriptors; writes target/soak/latest.json";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<()> {
    let release = args.iter().any(|a| a == "--release");
    match args.first().map(String::as_str) {
        Some("plugins") => build::plugins(release).map(|_| ()),
        Some("install") => install::run(&args[1..]),
        Some("tidy") => tidy::run(),
        Some("test") => test::run(),
        Some("demo") => demo::run(release),
        Some("new-plugin") => new_plugin::run(&args[1..]).map(|_| ()),
        Some("bench") => bench::run(&args[1..]),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("soak") => soak::run(&args[1..]),
        Some("-h" | "--help" | "help") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown command '{other}'\n\n{USAGE}"),
    }
}

/// The workspace root (xtask lives one level below it).
pub fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

/// Runs a command in the workspace root, failing with its command line when it fails.
pub fn cmd(program: &str, args: &[&str], envs: &[(&str, &std::path::Path)]) -> Result<()> {
    let mut command = std::process::Command::new(program);
    command.args(args).current_dir(root());
    for (key, value) in envs {
        command.env(key, value);
    }
    eprintln!("xtask: $ {program} {}", args.join(" "));
    let status = command.status()?;
    if !status.success() {
        bail!("`{program} {}` failed with {status}", args.join(" "));
    }
    Ok(())
}
