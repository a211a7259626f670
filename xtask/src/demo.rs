//! `cargo xtask demo`: builds what it needs and runs the scripted agent session (`runtime/examples/demo.rs`).
//! Its MCP steps run against the pinned server-everything when `cargo xtask test` installed it, else against
//! the demo's own stdio MCP server; `cargo xtask test` runs both.

use crate::{build, cmd};
use anyhow::Result;
use std::path::Path;

/// Builds the plugins, then runs the demo against them.
pub fn run(release: bool) -> Result<()> {
    // browser_action's steps drive Debian's Chromium, installed when missing.
    crate::peers::chromium()?;
    let built = build::plugins(release)?;
    run_with(&built.plugins, release, &[])
}

/// Runs the demo against already built plugins, with extra demo arguments (`--builtin-mcp`: the demo's own
/// MCP server even when server-everything is installed).
pub fn run_with(plugins: &Path, release: bool, extra: &[&str]) -> Result<()> {
    let plugins = plugins.to_string_lossy().into_owned();
    let mut args = vec!["run", "--quiet", "--package", "toolshed", "--example", "demo"];
    if release {
        args.push("--release");
    }
    args.extend(["--", "--plugins", &plugins]);
    args.extend(extra);
    cmd("cargo", &args, &[])
}
