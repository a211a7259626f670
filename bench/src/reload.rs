//! Rows 5r and 7b, hot reload: the time from a rebuilt library landing in a watched directory to the new code
//! serving calls (the debounce included), against the floor any watcher with that debounce pays (the debounce
//! plus `lib_header_from_path` + `init_root_module` of the same file); and the resident memory of
//! `toolshed watch` after 50 reloads of every shipped plugin, against the same process before them.
//!
//! Every round lands a distinct file (the fixture's two builds alternate, each with a few unique bytes
//! appended, which an ELF loader ignores), so no load can reuse an earlier mapping, and calls keep running
//! through every swap: any failed call fails the bench.

use crate::stats::{Figure, Row, Target, Unit};
use abi_stable::library::lib_header_from_path;
use anyhow::{bail, ensure, Context, Result};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use toolshed::{Config, Runtime, TaskContext, ToolUse};
use toolshed_plugin_api::PluginModRef;

/// Reloads timed per side, after one untimed.
const ROUNDS: usize = 20;
/// The debounce both sides include.
const DEBOUNCE_MS: u64 = 50;
/// Reloads of every plugin in row 7b.
const RELOADS: usize = 50;

fn lib(name: &str) -> String {
    format!("{}{name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX)
}

/// Writes `bytes` plus a unique tail to `path`, synced, so the timed side never waits on writeback.
fn stage(path: &Path, bytes: &[u8], tail: &str) -> Result<()> {
    use std::io::Write;
    let mut file = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    file.write_all(bytes)?;
    file.write_all(format!("\0toolshed-bench {tail} {}", std::process::id()).as_bytes())?;
    file.sync_all()?;
    Ok(())
}

/// Row 5r, with the fixture's two builds from `fixtures` and its files under `work/reload`.
pub fn latency_row(fixtures: &Path, work: &Path) -> Result<Row> {
    let dir = work.join("reload");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    let (plugins, staging) = (dir.join("plugins"), dir.join("staging"));
    std::fs::create_dir_all(&plugins)?;
    std::fs::create_dir_all(&staging)?;
    let builds = [
        ("variant A", std::fs::read(fixtures.join(lib("fixture_reload")))?),
        ("variant B", std::fs::read(fixtures.join("variants").join(lib("fixture_reload")))?),
    ];
    let file = plugins.join(lib("fixture_reload"));
    stage(&file, &builds[0].1, "start")?;
    let config = Config::from_toml_str(&format!("[timeouts]\nwatch_debounce_ms = {DEBOUNCE_MS}\n"))?;
    let runtime = Runtime::builder().config(config).plugin_dir(&plugins).watch(true).build()?;
    let task = runtime.task(TaskContext::new(&dir));
    let executor = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut calls = 0usize;
    let mut serve_until = |expected: &str| -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let result = executor.block_on(task.execute(ToolUse::new("b", "reload_probe", serde_json::json!({}))));
            calls += 1;
            let text = result.to_model_text();
            if result.is_error() {
                bail!("a call during a swap failed: {text}");
            }
            if text.ends_with(expected) {
                return Ok(());
            }
            ensure!(Instant::now() < deadline, "{expected} never served");
        }
    };
    serve_until("variant A")?;

    let (mut ours, mut reference) = (Vec::with_capacity(ROUNDS), Vec::with_capacity(ROUNDS));
    for round in 0..=ROUNDS {
        for ours_side in if round % 2 == 0 { [true, false] } else { [false, true] } {
            let (expected, bytes) = &builds[(round + 1) % 2];
            let staged = staging.join(format!("{round}-{ours_side}.so"));
            stage(&staged, bytes, &format!("{round} {ours_side}"))?;
            let start = Instant::now();
            if ours_side {
                std::fs::rename(&staged, &file)?;
                serve_until(expected)?;
            } else {
                std::thread::sleep(Duration::from_millis(DEBOUNCE_MS));
                lib_header_from_path(&staged)?.init_root_module::<PluginModRef>()?;
            }
            let elapsed = start.elapsed().as_nanos() as f64;
            if round > 0 {
                if ours_side {
                    ours.push(elapsed)
                } else {
                    reference.push(elapsed)
                }
            }
        }
    }
    let stats = runtime.reload_stats();
    drop(runtime);
    std::fs::remove_dir_all(&dir)?;
    Ok(Row {
        id: "5r".to_owned(),
        what: format!("hot reload: a rebuilt library lands → the new code serves, {DEBOUNCE_MS} ms debounce included"),
        unit: Unit::Nanos,
        ours: Figure::with_p99(&mut ours),
        reference_name: format!("{DEBOUNCE_MS} ms + `lib_header_from_path` + `init_root_module`"),
        reference: Figure::with_p99(&mut reference),
        target: Target::RatioAtMost(1.5),
        higher_is_better: false,
        note: Some(format!(
            "{calls} calls through {} swaps, none failed; {} copies unloaded, {} old copies still held",
            stats.reloads, stats.unloaded, stats.old_copies
        )),
    })
}

/// A field of `/proc/PID/status` in bytes (`VmRSS`, `VmHWM`).
fn status_bytes(pid: u32, field: &str) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with(field)).with_context(|| format!("no {field}"))?;
    let kib: f64 = line.split_whitespace().nth(1).context("no value")?.parse()?;
    Ok(kib * 1024.0)
}

/// Row 7b with the release `toolshed` binary over copies of the shipped plugins in `plugins`.
pub fn memory_row(plugins: &Path, toolshed: &Path, work: &Path) -> Result<Row> {
    let dir = work.join("reload-memory");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    let (watched, staging) = (dir.join("plugins"), dir.join("staging"));
    std::fs::create_dir_all(&watched)?;
    std::fs::create_dir_all(&staging)?;
    let mut libraries: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    for entry in std::fs::read_dir(plugins)? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == std::env::consts::DLL_EXTENSION) {
            let name = path.file_name().context("a library without a name")?;
            libraries.push((watched.join(name), std::fs::read(&path)?));
        }
    }
    libraries.sort();
    ensure!(!libraries.is_empty(), "no plugin libraries in {}", plugins.display());
    for (file, bytes) in &libraries {
        std::fs::write(file, bytes)?;
    }
    let mut child = Command::new(toolshed)
        .args(["--plugins", &watched.to_string_lossy(), "watch"])
        .current_dir(&dir)
        .env("HOME", &dir)
        .env("TOOLSHED_TIMEOUTS_WATCH_DEBOUNCE_MS", "20")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", toolshed.display()))?;
    let mut lines = std::io::BufReader::new(child.stdout.take().context("no stdout")?).lines();
    let mut until = |prefix: &str| -> Result<String> {
        loop {
            match lines.next() {
                Some(line) => {
                    let line = line?;
                    if line.starts_with(prefix) {
                        return Ok(line);
                    }
                }
                None => bail!("toolshed watch ended before printing `{prefix}`"),
            }
        }
    };
    until("watching")?;
    let pid = child.id();
    let at_rest = status_bytes(pid, "VmRSS")?;
    for round in 0..RELOADS {
        for (i, (file, bytes)) in libraries.iter().enumerate() {
            let staged = staging.join(format!("{round}-{i}"));
            stage(&staged, bytes, &round.to_string())?;
            std::fs::rename(&staged, file)?;
            let line = until("reloaded")?;
            ensure!(line.contains(&*file.to_string_lossy()), "unexpected event: {line}");
        }
    }
    let peak = status_bytes(pid, "VmHWM")?;
    drop(child.stdin.take());
    until("stopped")?;
    child.wait()?;
    std::fs::remove_dir_all(&dir)?;
    let reloads = (RELOADS * libraries.len()) as f64;
    let per_reload = (peak - at_rest) / reloads;
    let mib = 1024.0 * 1024.0;
    Ok(Row {
        id: "7b".to_owned(),
        what: format!(
            "memory: peak RSS of `toolshed watch` after {RELOADS} hot reloads of each of {} plugins",
            libraries.len()
        ),
        unit: Unit::Megabytes,
        ours: Figure { median: peak / mib, p99: None, samples: 1 },
        reference_name: "the same process with its plugins loaded, before reloading".to_owned(),
        reference: Figure { median: at_rest / mib, p99: None, samples: 1 },
        target: Target::Report,
        higher_is_better: false,
        note: Some(format!(
            "+{} per reload; budget ≤ 1 MB per reload above a constant: {}",
            Unit::Megabytes.show(per_reload / mib),
            if per_reload <= 1e6 { "ok" } else { "FAIL" }
        )),
    })
}
