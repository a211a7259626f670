//! Row 9, issue 9's bench row: `execute_command` with a trivial command through the whole runtime (executor,
//! policy, tool actor, plugin, and the host's `process` service: a shell in its own process group, output
//! through a pipe and a reader thread, the wait), against `std::process::Command::output` of the same command
//! in the same shell, in the same run.
//!
//! Both sides start the same shell, so the ratio is what a command pays for being a tool call. The calls are
//! sequential in one task, approved up front (`yes`) so the policy asks nobody. Ours are timed on the
//! runtime's thread, so the figure leaves out a host's cross-thread wake-up (tens of µs, row 1d), which is
//! small beside a shell's start but not this row's subject.
//!
//! Row 9c (issue 28) sets the same call in the kernel sandbox against itself without it, in the same run.

use crate::stats::{Figure, Row, Target, Unit};
use anyhow::{bail, ensure, Context, Result};
use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::time::Instant;
use toolshed::config::{Config, SandboxMode};
use toolshed::{Block, ResultStatus, Runtime, TaskContext, TaskHandle, ToolUse};

/// Untimed rounds, then interleaved timed rounds of sequential calls.
const WARMUP: usize = 2;
const ROUNDS: usize = 11;
/// Commands per side and round: each starts a shell (about a millisecond), so a round stays short.
const CALLS: usize = 10;
/// What the tool says before the output of a command that exited with 0.
const SUCCESS: &str = "Command executed successfully (exit code 0).";

/// The commands measured, each with its row id.
const COMMANDS: &[(&str, &str)] = &[("9a", "true"), ("9b", "echo hi")];

/// Runs row 9 with the shipped plugins, in an empty workspace under `work`.
pub fn rows(plugins: &Path, work: &Path) -> Result<Vec<Row>> {
    let workspace = work.join("command");
    std::fs::create_dir_all(&workspace)?;
    // The shell the `process` service starts: the user's `$SHELL`, else bash. The reference uses the same.
    let shell = std::env::var("SHELL").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| "/bin/bash".to_owned());
    let runtime = Runtime::builder().plugin_dir(plugins).yes(true).build()?;
    if let Some(error) = runtime.load_errors().first() {
        bail!("{error}");
    }
    let task = runtime.task(TaskContext::new(&workspace));
    let driver = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let ours = |command: &'static str, calls: usize, expected: Option<String>| {
        timed_calls(&driver, &runtime, &task, command, calls, expected)
    };
    let reference = |command: &str| -> Result<(f64, String)> {
        let start = Instant::now();
        let out = Command::new(&shell)
            .args(["-c", command])
            .current_dir(&workspace)
            .output()
            .with_context(|| format!("running {shell} -c {command:?}"))?;
        let elapsed = start.elapsed().as_nanos() as f64;
        ensure!(out.status.success(), "{shell} -c {command:?} failed with {}", out.status);
        Ok((elapsed, String::from_utf8(out.stdout)?))
    };

    let mut rows = Vec::new();
    for &(id, command) in COMMANDS {
        // The check: the tool reports success and the same output as the reference, before anything is timed.
        let (_, reference_out) = reference(command)?;
        let (_, mut texts) = ours(command, 1, None)?;
        let text = texts.pop().context("no result")?;
        let Some(rest) = text.strip_prefix(SUCCESS) else {
            bail!("execute_command `{command}` answered {text:?}");
        };
        let output = rest.strip_prefix("\nOutput:\n").unwrap_or(rest);
        ensure!(
            output.trim_end() == reference_out.trim_end(),
            "`{command}`: execute_command's output {output:?} is not the reference's {reference_out:?}"
        );

        let (mut ours_ns, mut reference_ns) = (Vec::new(), Vec::new());
        for round in 0..WARMUP + ROUNDS {
            // Alternate which side goes first.
            for ours_side in if round % 2 == 0 { [true, false] } else { [false, true] } {
                let samples = if ours_side {
                    let (samples, odd) = ours(command, CALLS, Some(text.clone()))?;
                    if let Some(first) = odd.first() {
                        bail!("execute_command `{command}` answered {first:?} after {text:?}");
                    }
                    samples
                } else {
                    (0..CALLS)
                        .map(|_| {
                            let (elapsed, out) = reference(command)?;
                            ensure!(out == reference_out, "`{command}` printed {out:?}, then {reference_out:?}");
                            Ok(elapsed)
                        })
                        .collect::<Result<Vec<f64>>>()?
                };
                if round >= WARMUP {
                    if ours_side { &mut ours_ns } else { &mut reference_ns }.extend(samples);
                }
            }
        }
        rows.push(Row {
            id: id.to_owned(),
            what: format!("execute_command `{command}`, sequential in one task, approved"),
            unit: Unit::Nanos,
            ours: Figure::with_p99(&mut ours_ns),
            reference_name: format!("`Command::new(\"{shell}\").args([\"-c\", \"{command}\"]).output()`"),
            reference: Figure::with_p99(&mut reference_ns),
            target: Target::Report,
            higher_is_better: false,
            note: Some("a host would hope for under ~2×".to_owned()),
        });
    }
    rows.push(sandbox_row(plugins, &workspace, &driver)?);
    Ok(rows)
}

/// `calls` commands in sequence on `runtime`'s thread in `task`; each one's duration in ns and the texts that
/// differ from `expected` (all of them when it is `None`).
fn timed_calls(
    driver: &tokio::runtime::Runtime,
    runtime: &Runtime,
    task: &TaskHandle,
    command: &'static str,
    calls: usize,
    expected: Option<String>,
) -> Result<(Vec<f64>, Vec<String>)> {
    let task = task.clone();
    let timed = driver.block_on(runtime.run_on_runtime(move || async move {
        let mut samples = Vec::with_capacity(calls);
        let mut odd = Vec::new();
        for _ in 0..calls {
            let input = json!({ "command": command, "requires_approval": "false" });
            let start = Instant::now();
            let result = task.execute(ToolUse::new("bench", "execute_command", input)).await;
            samples.push(start.elapsed().as_nanos() as f64);
            let text = match (result.status, result.blocks.as_slice()) {
                (ResultStatus::Success, [Block::Text { text }]) => text.clone(),
                _ => result.to_model_text(),
            };
            if expected.as_ref() != Some(&text) {
                odd.push(text);
            }
        }
        (samples, odd)
    }));
    timed.context("the runtime stopped")
}

/// Row 9c: what the kernel sandbox adds to a command: `true` under `sandbox = "workspace-write"` and
/// `network = false` (a Landlock ruleset built and a seccomp program compiled per command, both applied in
/// the child) against `true` in a runtime without the sandbox, interleaved in the same run.
fn sandbox_row(plugins: &Path, workspace: &Path, driver: &tokio::runtime::Runtime) -> Result<Row> {
    let mut config = Config::default();
    config.commands.sandbox = SandboxMode::WorkspaceWrite;
    config.commands.network = false;
    let sandboxed = Runtime::builder().plugin_dir(plugins).yes(true).config(config).build()?;
    let plain = Runtime::builder().plugin_dir(plugins).yes(true).build()?;
    let sides =
        [(&sandboxed, sandboxed.task(TaskContext::new(workspace))), (&plain, plain.task(TaskContext::new(workspace)))];
    let expected = Some(SUCCESS.to_owned());
    let mut figures: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..WARMUP + ROUNDS {
        // Alternate which side goes first.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for side in order {
            let (runtime, task) = &sides[side];
            let (samples, odd) = timed_calls(driver, runtime, task, "true", CALLS, expected.clone())?;
            if let Some(first) = odd.first() {
                bail!("execute_command `true` answered {first:?} (sandboxed: {})", side == 0);
            }
            if round >= WARMUP {
                figures[side].extend(samples);
            }
        }
    }
    let [mut ours, mut reference] = figures;
    Ok(Row {
        id: "9c".to_owned(),
        what: "execute_command `true` in the kernel sandbox (workspace-write, network = false)".to_owned(),
        unit: Unit::Nanos,
        ours: Figure::with_p99(&mut ours),
        reference_name: "execute_command `true` without the sandbox, same run".to_owned(),
        reference: Figure::with_p99(&mut reference),
        target: Target::Report,
        higher_is_better: false,
        note: Some("the sandbox's cost per command: a Landlock ruleset and a seccomp program".to_owned()),
    })
}
