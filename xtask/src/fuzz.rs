//! `cargo xtask fuzz [--seconds N] [TARGET]`: runs the libFuzzer targets of `fuzz/` for a bounded time each,
//! one at a time, and copies every crash, timeout or out-of-memory input they find into
//! `fuzz/regressions/<target>/`, where `cargo test` replays it from then on.
//!
//! cargo-fuzz is installed into `target/fuzz-tools` when missing. Its builds need nightly-only compiler
//! flags; on a stable toolchain `RUSTC_BOOTSTRAP=1` unlocks them. The targets are safe Rust, so they run
//! without a sanitizer (`--sanitizer none`), which is also much faster; debug assertions and overflow checks
//! stay on.

use crate::root;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The targets, in the order they run (the names of `fuzz/fuzz_targets/*.rs`).
const TARGETS: &[&str] = &[
    "tool_input",
    "replace_in_file",
    "apply_patch",
    "command_permissions",
    "command_permissions_exec",
    "clineignore",
    "path_hints",
    "partial_json",
    "xml_tool_use",
    "docx",
    "xlsx",
    "pdf_text",
    "ipynb",
    "html_to_markdown",
];

/// Seconds per target when `--seconds` is not given.
const DEFAULT_SECONDS: u64 = 60;

/// libFuzzer's bound for one input: far above any real input's cost, so only a hang trips it.
const INPUT_TIMEOUT_SECONDS: u64 = 20;

/// libFuzzer's memory bound (`-rss_limit_mb`): the document targets' limits keep an input far below it, so an
/// input that passes it is a memory bomb the limits missed.
const RSS_LIMIT_MB: u64 = 2048;

/// Runs the fuzzers.
pub fn run(args: &[String]) -> Result<()> {
    let mut seconds = DEFAULT_SECONDS;
    let mut selected = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--seconds" => {
                let value = rest.next().context("--seconds needs a number")?;
                seconds = value.parse().with_context(|| format!("--seconds {value}: not a number"))?;
            }
            name if TARGETS.contains(&name) => selected.push(name),
            other => bail!("unknown fuzz target or option '{other}'; targets: {}", TARGETS.join(", ")),
        }
    }
    if selected.is_empty() {
        selected = TARGETS.to_vec();
    }
    let cargo_fuzz = install()?;
    if selected.contains(&"command_permissions_exec") {
        crate::peers::strace()?;
    }
    let root = root();
    let target_dir = root.join("target/fuzz");
    // One build of every selected target, then the binaries run directly: `cargo fuzz run` would check the
    // build again before each target.
    let mut build = Command::new(&cargo_fuzz);
    build
        .current_dir(&root)
        .env("RUSTC_BOOTSTRAP", "1")
        .args(["build", "--fuzz-dir", "fuzz", "--sanitizer", "none", "--debug-assertions", "--target-dir"])
        .arg(&target_dir);
    if let [only] = selected.as_slice() {
        build.arg(only);
    }
    eprintln!("xtask: building the fuzz targets");
    if !build.status().context("cannot run cargo fuzz")?.success() {
        bail!("cargo fuzz build failed");
    }
    let binaries = target_dir.join(format!("{}/release", host_triple()?));
    let mut summary = Vec::new();
    for target in selected {
        let corpus = root.join("target/fuzz-corpus").join(target);
        let artifacts = root.join("target/fuzz-artifacts").join(target);
        std::fs::create_dir_all(&corpus)?;
        std::fs::create_dir_all(&artifacts)?;
        let seeds = root.join("fuzz/corpus").join(target);
        eprintln!("xtask: fuzzing {target} for {seconds} s");
        // The working corpus grows in target/ (it is large and machine-made); the committed seeds are read too.
        // libFuzzer's log goes to a file beside the artifacts, to follow a long run and to read its figures.
        let log_path = root.join("target/fuzz-artifacts").join(format!("{target}.log"));
        let log_file = std::fs::File::create(&log_path)?;
        let status = Command::new(binaries.join(target))
            .current_dir(&root)
            .arg(&corpus)
            .arg(&seeds)
            .arg(format!("-max_total_time={seconds}"))
            .arg(format!("-timeout={INPUT_TIMEOUT_SECONDS}"))
            .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
            .arg(format!("-artifact_prefix={}/", artifacts.display()))
            .arg("-print_final_stats=1")
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .status()
            .with_context(|| format!("cannot run the {target} fuzzer"))?;
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        let saved = save_regressions(&artifacts, &root.join("fuzz/regressions").join(target))?;
        let stat = |name: &str| {
            log.lines().rev().find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned())).unwrap_or_default()
        };
        let (runs, rate) = (stat("stat::number_of_executed_units:"), stat("stat::average_exec_per_sec:"));
        summary.push(format!("{target}: {runs} executions, {rate} per second, {saved} new regressions"));
        if !status.success() && saved == 0 {
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(30)..];
            bail!(
                "cargo fuzz failed for {target} without leaving an input (log: {}):\n{}",
                log_path.display(),
                tail.join("\n")
            );
        }
        if !status.success() {
            eprintln!("xtask: {target} found a failure; the input is in fuzz/regressions/{target}/");
        }
    }
    println!("{}", summary.join("\n"));
    Ok(())
}

/// The host's target triple (cargo-fuzz builds for it explicitly), from `rustc -vV`.
fn host_triple() -> Result<String> {
    let output = Command::new("rustc").arg("-vV").output().context("cannot run rustc")?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        .context("rustc -vV names no host")
}

/// The cargo-fuzz binary, installed into `target/fuzz-tools` on first use.
fn install() -> Result<PathBuf> {
    let tools = root().join("target/fuzz-tools");
    let binary = tools.join("bin/cargo-fuzz");
    if binary.exists() {
        return Ok(binary);
    }
    let tools_arg = tools.to_string_lossy().into_owned();
    crate::cmd("cargo", &["install", "cargo-fuzz", "--locked", "--root", &tools_arg], &[])?;
    Ok(binary)
}

/// Copies new `crash-*`, `timeout-*` and `oom-*` files from libFuzzer's artifact directory into the
/// committed regressions; returns how many were new.
fn save_regressions(artifacts: &Path, regressions: &Path) -> Result<usize> {
    let mut saved = 0;
    for entry in std::fs::read_dir(artifacts)? {
        let path = entry?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if !["crash-", "timeout-", "oom-", "slow-unit-"].iter().any(|p| name.starts_with(p)) {
            continue;
        }
        let destination = regressions.join(&name);
        if !destination.exists() {
            std::fs::create_dir_all(regressions)?;
            std::fs::copy(&path, &destination)?;
            saved += 1;
        }
    }
    Ok(saved)
}
