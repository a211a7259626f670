//! `cargo xtask bench`: builds the release workspace (plugins, fixtures, the `toolshed` binary and the bench),
//! then runs `toolshed-bench`, which prints the performance table and writes `target/bench/latest.json`.

use crate::{build, cmd, root};
use anyhow::Result;

/// Builds everything the bench loads, then runs it.
pub fn run() -> Result<()> {
    // `cargo build --workspace --release` inside: the `toolshed` binary the peak-memory row runs is built too.
    let built = build::plugins(true)?;
    let target = root().join("target");
    let toolshed = target.join("release").join(format!("toolshed{}", std::env::consts::EXE_SUFFIX));
    let out = target.join("bench");
    let [plugins, fixtures, toolshed, out] =
        [&built.plugins, &built.fixtures, &toolshed, &out].map(|path| path.to_string_lossy().into_owned());
    cmd(
        "cargo",
        &[
            "run",
            "--quiet",
            "--release",
            "--package",
            "toolshed-bench",
            "--",
            "--plugins",
            &plugins,
            "--fixtures",
            &fixtures,
            "--toolshed",
            &toolshed,
            "--out",
            &out,
        ],
        &[],
    )
}
