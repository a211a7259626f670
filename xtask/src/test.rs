//! `cargo xtask test`: the whole suite. Builds the plugins and fixtures (including those built against a
//! foreign copy of the interface), runs every workspace test with their paths in the environment, then the demo.

use crate::{build, cmd, root};
use anyhow::Result;

/// Runs everything `.ci/run` relies on.
pub fn run() -> Result<()> {
    let built = build::plugins(false)?;
    // Plugins built against another interface version and layout: their own workspace and target dir, so
    // their copies of the interface never unify with ours.
    let foreign_target = root().join("target/fixtures-foreign");
    for workspace in ["version", "layout", "previous"] {
        let manifest = format!("host-tests/fixtures-foreign/{workspace}/Cargo.toml");
        cmd(
            "cargo",
            &["build", "--manifest-path", &manifest, "--workspace"],
            &[("CARGO_TARGET_DIR", &foreign_target)],
        )?;
    }
    let foreign = foreign_target.join("debug");
    cmd(
        "cargo",
        &["test", "--workspace", "--no-fail-fast"],
        &[
            ("TOOLSHED_TEST_PLUGINS", &built.plugins),
            ("TOOLSHED_TEST_FIXTURES", &built.fixtures),
            ("TOOLSHED_TEST_FOREIGN", &foreign),
        ],
    )?;
    crate::demo::run_with(&built.plugins, false)
}
