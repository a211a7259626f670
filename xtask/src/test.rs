//! `cargo xtask test`: the whole suite. The house rules come first, where a failure shows in seconds: the
//! tidy checks (layering, file sizes), `cargo fmt --check`, clippy with warnings denied, then the library
//! without its optional features and with each alone (`cargo check`). Then it builds
//! the plugins and fixtures (including those built against a foreign copy of the interface), runs every
//! workspace test with their paths in the environment (the MCP peers' and Chromium's too, each installed when
//! missing; doc tests included: `cargo test --workspace` runs them, and the runtime's doc examples load the
//! built plugins from `TOOLSHED_TEST_PLUGINS`), then the demo (with server-everything, and with its own MCP
//! server) and the `agent_host` example.

use crate::{build, cmd, root};
use anyhow::Result;

/// Runs everything `.ci/run` relies on.
pub fn run() -> Result<()> {
    crate::tidy::run()?;
    cmd("cargo", &["fmt", "--all", "--check"], &[])?;
    cmd("cargo", &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"], &[])?;
    features()?;
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
    // The real MCP servers and client the MCP and serve tests talk to.
    let peers = crate::peers::install()?;
    // The headless Chromium the browser tests drive (Debian's package, installed when missing): never skipped.
    let chromium = crate::peers::chromium()?;
    cmd(
        "cargo",
        &["test", "--workspace", "--no-fail-fast"],
        &[
            ("TOOLSHED_TEST_PLUGINS", &built.plugins),
            ("TOOLSHED_TEST_FIXTURES", &built.fixtures),
            ("TOOLSHED_TEST_FOREIGN", &foreign),
            ("TOOLSHED_TEST_NODE_PEERS", &peers.node),
            ("TOOLSHED_TEST_PY", &peers.python),
            ("TOOLSHED_TEST_CHROMIUM", &chromium),
        ],
    )?;
    // The demo twice: against server-everything, and against its own MCP server (a clean clone's case).
    crate::demo::run_with(&built.plugins, false, &[])?;
    crate::demo::run_with(&built.plugins, false, &["--builtin-mcp"])?;
    // The embedding example: a scripted model in XML text mode, every ask approved.
    let plugins = built.plugins.to_string_lossy().into_owned();
    cmd(
        "cargo",
        &["run", "--quiet", "--package", "toolshed", "--example", "agent_host", "--", "--plugins", &plugins, "--yes"],
        &[],
    )
}

/// The library's optional parts (runtime/Cargo.toml `[features]`), each alone.
const FEATURES: [&str; 5] = ["mcp", "serve", "openai", "web", "browser"];

/// The library compiles without its optional parts and with each alone (the rest of the suite builds only the
/// default, every feature on), and the build without any passes clippy: the dead code and unused imports of
/// a build without a feature show only there. Checks, not builds: seconds each once the dependencies are.
fn features() -> Result<()> {
    cmd("cargo", &["check", "--package", "toolshed", "--no-default-features"], &[])?;
    for feature in FEATURES {
        cmd("cargo", &["check", "--package", "toolshed", "--no-default-features", "--features", feature], &[])?;
    }
    cmd(
        "cargo",
        &["clippy", "--package", "toolshed", "--no-default-features", "--all-targets", "--", "-D", "warnings"],
        &[],
    )
}
