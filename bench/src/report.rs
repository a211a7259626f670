//! What a figure needs beside it to mean anything later: the revision measured, the machine, and the versions
//! of the reference tools; and the `latest.json` record that holds them with every row.

use crate::stats::{Row, TABLE_HEADER};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// Where and on what a run happened.
pub struct RunInfo {
    pub revision: String,
    /// Whether the work tree had uncommitted changes: the figures then belong to more than `revision`.
    pub dirty: bool,
    pub date: String,
    pub cpus: usize,
    pub arch: String,
    pub cpu_model: String,
    /// `wc`, `tail`, GNU `time` and `rustc`, as each reports its version (first line).
    pub tools: Vec<(&'static str, String)>,
}

impl RunInfo {
    /// Collects the context from the system; anything unavailable reads "unknown".
    pub fn collect(root: &Path) -> Self {
        let git = |args: &[&str]| first_line(Command::new("git").args(args).current_dir(root));
        let revision = git(&["rev-parse", "HEAD"]);
        let dirty = Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(root)
            .output()
            .map(|out| !out.stdout.is_empty())
            .unwrap_or(false);
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .find(|line| line.starts_with("model name"))
                    .and_then(|line| line.split_once(':'))
                    .map(|(_, model)| model.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".to_owned());
        Self {
            revision,
            dirty,
            date: first_line(Command::new("date").args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])),
            cpus: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            arch: first_line(Command::new("uname").arg("-m")),
            cpu_model,
            tools: vec![
                ("wc", first_line(Command::new("wc").arg("--version"))),
                ("tail", first_line(Command::new("tail").arg("--version"))),
                ("time", first_line(Command::new(crate::read_file::GNU_TIME).arg("--version"))),
                ("rustc", first_line(Command::new("rustc").arg("-V"))),
            ],
        }
    }

    /// One line naming the machine, for the README.
    pub fn machine(&self) -> String {
        format!("{} × {} ({})", self.cpus, self.cpu_model, self.arch)
    }
}

/// A program's `--version`, first line, or "unknown".
pub fn version(program: &Path) -> String {
    first_line(Command::new(program).arg("--version"))
}

/// A command's first line of output, or "unknown" when it cannot run.
fn first_line(command: &mut Command) -> String {
    command
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8_lossy(&out.stdout).lines().next().map(|line| line.trim().to_owned()))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The table as Markdown, ready for the README.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(TABLE_HEADER);
    for row in rows {
        out.push('\n');
        out.push_str(&row.markdown());
    }
    out
}

/// Writes `latest.json` into `dir`.
pub fn write_json(dir: &Path, info: &RunInfo, rows: &[Row]) -> Result<std::path::PathBuf> {
    let tools: serde_json::Map<String, Value> =
        info.tools.iter().map(|(name, version)| ((*name).to_owned(), Value::from(version.as_str()))).collect();
    let record = json!({
        "revision": info.revision,
        "dirty": info.dirty,
        "date": info.date,
        "machine": { "cpus": info.cpus, "arch": info.arch, "cpu_model": info.cpu_model },
        "tools": tools,
        "rows": rows.iter().map(Row::json).collect::<Vec<_>>(),
    });
    std::fs::create_dir_all(dir)?;
    let path = dir.join("latest.json");
    std::fs::write(&path, serde_json::to_string_pretty(&record)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}
