//! `cargo xtask bench [--rows LIST]`: builds the release workspace (plugins, fixtures, the `toolshed` binary and
//! the bench), prepares what rows 2, 3 and 11 compare on (the vendored corpus and current `rg` and `fd`), row
//! 12's pinned server-filesystem (the test peers, installed as the tests install them) and row 13's Chromium
//! (Debian's package, installed when missing), then runs `toolshed-bench`, which prints the performance table
//! and writes `target/bench/latest.json`. `--rows 13` (a comma-separated list of the rows) runs only
//! those, prepares only what they need, and writes no `latest.json`.

use crate::{build, cmd, root};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The reference tools, installed with `cargo install --locked` (Debian's older builds are 1.3–2× slower and
/// would flatter us). Only the bench installs them; tests never do.
const REFERENCES: &[(&str, &str)] = &[("ripgrep", "rg"), ("fd-find", "fd")];

/// Builds everything the bench loads, then runs it (`args`: what follows `bench` on the command line).
pub fn run(args: &[String]) -> Result<()> {
    let rows = match args.iter().position(|a| a == "--rows") {
        Some(at) => {
            let list = args.get(at + 1).context("--rows needs a list of rows, such as `--rows 13` or `--rows 1,4`")?;
            let parse = |row: &str| row.trim().parse::<u32>().with_context(|| format!("bad row {row:?} in --rows"));
            Some((list.clone(), list.split(',').map(parse).collect::<Result<Vec<_>>>()?))
        }
        None => None,
    };
    let wanted = |row: u32| rows.as_ref().is_none_or(|(_, rows)| rows.contains(&row));
    // `cargo build --workspace --release` inside: the `toolshed` binary the peak-memory row runs is built too.
    let built = build::plugins(true)?;
    let target = root().join("target");
    let toolshed = target.join("release").join(format!("toolshed{}", std::env::consts::EXE_SUFFIX));
    let out = target.join("bench");
    let [plugins, fixtures, toolshed, out] =
        [&built.plugins, &built.fixtures, &toolshed, &out].map(|path| path.to_string_lossy().into_owned());
    let mut bench_args: Vec<String> =
        ["--plugins", &plugins, "--fixtures", &fixtures, "--toolshed", &toolshed, "--out", &out]
            .map(str::to_owned)
            .into();
    let mut pass = |flag: &str, path: &Path| bench_args.extend([flag.to_owned(), path.to_string_lossy().into_owned()]);
    if wanted(2) || wanted(3) || wanted(11) {
        pass("--corpus", &corpus(&target)?);
        pass("--tools", &references(&target)?);
    }
    if wanted(12) {
        pass("--peers", &crate::peers::install()?.node);
    }
    if wanted(13) {
        pass("--chromium", &crate::peers::chromium()?);
    }
    if let Some((list, _)) = &rows {
        bench_args.extend(["--rows".to_owned(), list.clone()]);
    }
    // The binary the workspace build made: `cargo run --package toolshed-bench` would build the runtime a second
    // time, with only the bench's features, and measure that build instead of the one the others use.
    let bench = target.join("release").join(format!("toolshed-bench{}", std::env::consts::EXE_SUFFIX));
    let bench_args: Vec<&str> = bench_args.iter().map(String::as_str).collect();
    cmd(&bench.to_string_lossy(), &bench_args, &[])
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
