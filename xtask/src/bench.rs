//! `cargo xtask bench`: builds the release workspace (plugins, fixtures, the `toolshed` binary and the bench),
//! prepares what rows 2, 3 and 11 compare on (the vendored corpus and current `rg` and `fd`) and row 12's pinned
//! server-filesystem (the test peers, installed as the tests install them), then runs `toolshed-bench`, which
//! prints the performance table and writes `target/bench/latest.json`.

use crate::{build, cmd, root};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The reference tools, installed with `cargo install --locked` (Debian's older builds are 1.3–2× slower and
/// would flatter us). Only the bench installs them; tests never do.
const REFERENCES: &[(&str, &str)] = &[("ripgrep", "rg"), ("fd-find", "fd")];

/// Builds everything the bench loads, then runs it.
pub fn run() -> Result<()> {
    // `cargo build --workspace --release` inside: the `toolshed` binary the peak-memory row runs is built too.
    let built = build::plugins(true)?;
    let target = root().join("target");
    let corpus = corpus(&target)?;
    let tools = references(&target)?;
    let peers = crate::peers::install()?.node;
    let toolshed = target.join("release").join(format!("toolshed{}", std::env::consts::EXE_SUFFIX));
    let out = target.join("bench");
    let [plugins, fixtures, toolshed, out, corpus, tools, peers] =
        [&built.plugins, &built.fixtures, &toolshed, &out, &corpus, &tools, &peers]
            .map(|path| path.to_string_lossy().into_owned());
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
            "--corpus",
            &corpus,
            "--tools",
            &tools,
            "--peers",
            &peers,
        ],
        &[],
    )
}

/// `target/bench-corpus`: `cargo vendor` of this workspace's own lockfile, the same tree on every machine. It
/// is vendored again when the lockfile changes (a copy of the lockfile it was made from sits beside it).
fn corpus(target: &Path) -> Result<PathBuf> {
    let dir = target.join("bench-corpus");
    let stamp = target.join("bench-corpus.lock");
    let lock = std::fs::read(root().join("Cargo.lock")).context("reading Cargo.lock")?;
    if dir.is_dir() && std::fs::read(&stamp).ok().as_deref() == Some(lock.as_slice()) {
        return Ok(dir);
    }
    let dir_arg = dir.to_string_lossy().into_owned();
    cmd("cargo", &["vendor", "--locked", "--versioned-dirs", "--quiet", &dir_arg], &[])?;
    std::fs::write(&stamp, lock).with_context(|| format!("writing {}", stamp.display()))?;
    Ok(dir)
}

/// `target/bench-tools/bin`, with current `rg` and `fd` installed there when missing.
fn references(target: &Path) -> Result<PathBuf> {
    let install_root = target.join("bench-tools");
    let bin = install_root.join("bin");
    let root_arg = install_root.to_string_lossy().into_owned();
    for (package, binary) in REFERENCES {
        let program = bin.join(format!("{binary}{}", std::env::consts::EXE_SUFFIX));
        if !program.is_file() {
            cmd("cargo", &["install", "--locked", "--root", &root_arg, package], &[])?;
        }
    }
    Ok(bin)
}
