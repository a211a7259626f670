//! Row 4, `read_file` on a 50 MiB text file, against the processes a person would run for the same answer.
//!
//! The footer needs the file's line count, so `wc -l` is the floor for any window; a window deep in the file
//! is also compared with `tail -n +N | head -n 1000`. The references are processes (their start, ~1 ms, is
//! part of their figure), ours runs in-process through the whole pipeline with no process to start. Peak
//! memory is measured on the `toolshed` CLI, one process per read, so the figure is the whole runtime's.

use crate::stats::{Figure, Row, Target, Unit};
use anyhow::{bail, ensure, Context, Result};
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use toolshed::{Block, ResultStatus, Runtime, TaskContext, ToolUse};

/// The file's size: the 50 MB.
const FILE_BYTES: u64 = 50 * 1024 * 1024;
/// The deep window's first line, and its length (read_file's default window).
const DEEP_START: u64 = 800_000;
const WINDOW: usize = 1000;
/// The file's name inside the bench directory, which is the task's workspace.
const FILE_NAME: &str = "big.txt";
/// Untimed rounds that fill the page cache, then interleaved timed rounds.
const WARMUP: usize = 2;
const ROUNDS: usize = 11;
/// Peak-memory runs of the CLI; the largest peak is reported.
const MEMORY_RUNS: usize = 3;
/// GNU time, the peak-memory probe.
pub const GNU_TIME: &str = "/usr/bin/time";

/// Runs row 4 with the shipped plugins in `plugins`, the release CLI `toolshed`, and files under `work`.
pub fn rows(plugins: &Path, toolshed: &Path, work: &Path) -> Result<Vec<Row>> {
    let file = work.join(FILE_NAME);
    let lines = generate(&file)?;
    let runtime = Runtime::builder().plugin_dir(plugins).build()?;
    if let Some(error) = runtime.load_errors().first() {
        bail!("{error}");
    }
    let driver = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    // Each read in a fresh task, so none carries the dedup notice of a repeated read and all do the same work.
    let read = |start: Option<u64>| -> Result<(Duration, String)> {
        let task = runtime.task(TaskContext::new(work));
        let input = match start {
            Some(line) => json!({ "path": FILE_NAME, "start_line": line }),
            None => json!({ "path": FILE_NAME }),
        };
        // Timed on the actor thread, so the figure leaves out the host's wake-up (as the references leave
        // out the shell's).
        let timed = driver.block_on(runtime.run_on_runtime(move || async move {
            let start = Instant::now();
            let result = task.execute(ToolUse::new("bench", "read_file", input)).await;
            (start.elapsed(), result)
        }));
        let (elapsed, result) = timed.context("the runtime stopped")?;
        match (result.status, result.blocks.as_slice()) {
            (ResultStatus::Success, [Block::Text { text }]) => Ok((elapsed, text.clone())),
            _ => bail!("read_file failed: {}", result.to_model_text()),
        }
    };
    let wc = || process(Command::new("wc").arg("-l").arg(&file));
    // The path arrives as `$1`, so no quoting of it is needed.
    let tail_head = || {
        process(
            Command::new("sh")
                .arg("-c")
                .arg(format!("tail -n +{DEEP_START} \"$1\" | head -n {WINDOW}"))
                .arg("sh")
                .arg(&file),
        )
    };

    // Every pair gives the same answer before anything is timed.
    let (_, wc_out) = wc()?;
    let counted: u64 = wc_out.split_whitespace().next().unwrap_or_default().parse().context("`wc -l` output")?;
    ensure!(counted == lines, "`wc -l` counts {counted} lines, {lines} were written");
    let (_, head_out) = process(Command::new("head").arg("-n").arg(WINDOW.to_string()).arg(&file))?;
    check_window(&read(None)?.1, 1, &head_out, counted)?;
    let (_, tail_out) = tail_head()?;
    check_window(&read(Some(DEEP_START))?.1, DEEP_START, &tail_out, counted)?;

    let mut samples: [Vec<f64>; 4] = Default::default();
    for round in 0..WARMUP + ROUNDS {
        // Alternate the order, so no measurement always runs right after the same other one.
        let order = if round % 2 == 0 { [0, 1, 2, 3] } else { [3, 2, 1, 0] };
        for which in order {
            let elapsed = match which {
                0 => read(None)?.0,
                1 => wc()?.0,
                2 => read(Some(DEEP_START))?.0,
                _ => tail_head()?.0,
            };
            if round >= WARMUP {
                samples[which].push(elapsed.as_nanos() as f64);
            }
        }
    }
    let [mut first, mut wc_times, mut deep, mut tail_times] = samples;
    let wc_figure = Figure::with_p99(&mut wc_times);
    let deep_figure = Figure::with_p99(&mut deep);
    let row = |id: &str, what: String, ours: Figure, name: &str, reference: Figure, limit: f64| Row {
        id: id.to_owned(),
        what,
        unit: Unit::Nanos,
        ours,
        reference_name: name.to_owned(),
        reference,
        target: Target::RatioAtMost(limit),
        higher_is_better: false,
        note: Some("the file settled 2 s before the reads, so read_file keeps its line index".to_owned()),
    };
    let mut rows = vec![
        row(
            "4a",
            "read_file: first window, in-process (no process to start)".to_owned(),
            Figure::with_p99(&mut first),
            "`wc -l FILE`",
            wc_figure,
            1.0,
        ),
        row(
            "4b",
            format!("read_file: {WINDOW} lines at line {DEEP_START}, in-process (no process to start)"),
            deep_figure,
            "`wc -l FILE`",
            wc_figure,
            1.0,
        ),
        row(
            "4c",
            format!("read_file: {WINDOW} lines at line {DEEP_START}, in-process (no process to start)"),
            deep_figure,
            &format!("`tail -n +{DEEP_START} FILE | head -n {WINDOW}`"),
            Figure::with_p99(&mut tail_times),
            0.5,
        ),
    ];

    let input = json!({ "path": FILE_NAME, "start_line": DEEP_START }).to_string();
    // The first call of a fresh home finds no declaration index (or one written for other builds of the
    // plugins) and loads every library to build it: a one-time cost, reported in the note. The measured runs
    // are the ordinary case, a call with the index warm, which opens only the library declaring read_file.
    let cold = peak_memory(toolshed, plugins, work, &["call", "read_file", &input])?.1;
    let (mut peak, mut baseline) = (0.0, 0.0f64);
    for _ in 0..MEMORY_RUNS {
        let (stdout, read_peak) = peak_memory(toolshed, plugins, work, &["call", "read_file", &input])?;
        // The CLI prints the model's text: the result header line, then the window and its footer.
        let window = stdout.split_once('\n').map(|(_, rest)| rest).unwrap_or_default();
        check_window(window.trim_end_matches('\n'), DEEP_START, &tail_out, counted)?;
        peak = read_peak.max(peak);
        baseline = peak_memory(toolshed, plugins, work, &["tools"])?.1.max(baseline);
    }
    let file_mib = FILE_BYTES as f64 / (1024.0 * 1024.0);
    rows.push(Row {
        id: "4d".to_owned(),
        what: format!("read_file: peak RSS of `toolshed call read_file` ({WINDOW} lines at line {DEEP_START})"),
        unit: Unit::Megabytes,
        ours: Figure { median: peak, p99: None, samples: MEMORY_RUNS },
        reference_name: "the file's size".to_owned(),
        reference: Figure { median: file_mib, p99: None, samples: 1 },
        target: Target::RatioAtMost(0.5),
        higher_is_better: false,
        note: Some(format!(
            "the whole process, plugins included, declaration index warm, largest of {MEMORY_RUNS} runs; the first \
             call, which builds the index by loading every library: {}; `toolshed tools`, which reads nothing: {}",
            Unit::Megabytes.show(cold),
            Unit::Megabytes.show(baseline)
        )),
    });
    Ok(rows)
}

/// Writes the ~60-byte-line text file unless it is already there at its size; returns its line count.
fn generate(file: &Path) -> Result<u64> {
    let line = |n: u64| format!("{n:08} the quick brown fox jumps over the lazy dog {:06}\n", n * 7919 % 1_000_000);
    let line_len = line(0).len() as u64;
    let lines = FILE_BYTES / line_len;
    let bytes = lines * line_len;
    if std::fs::metadata(file).map(|m| m.len()).ok() == Some(bytes) {
        settle(file)?;
        return Ok(lines);
    }
    let mut out =
        std::io::BufWriter::new(std::fs::File::create(file).with_context(|| format!("creating {}", file.display()))?);
    for n in 0..lines {
        out.write_all(line(n).as_bytes())?;
    }
    out.flush()?;
    // Written back now, so the writeback of 50 MiB does not run under the timed reads.
    out.get_ref().sync_all()?;
    drop(out);
    settle(file)?;
    Ok(lines)
}

/// Waits until `file` was last changed more than 2 s ago. read_file keeps a line index only for a file that
/// settled that long before the read (git's "racy clean" rule: a later write could go unseen within the
/// clock's granularity), which every large file an agent reads but nobody is writing has. Without the wait
/// the rows measured the cold path in a run that had just written the file and the indexed one in any later
/// run: now every run measures the same case.
fn settle(file: &Path) -> Result<()> {
    const SETTLED: Duration = Duration::from_millis(2_100);
    let changed = std::fs::metadata(file)?.modified()?;
    if let Some(left) = SETTLED.checked_sub(changed.elapsed().unwrap_or_default()) {
        std::thread::sleep(left);
    }
    Ok(())
}

/// Runs a process to its end, failing unless it succeeds; returns its wall time and its standard output.
fn process(command: &mut Command) -> Result<(Duration, String)> {
    let start = Instant::now();
    let Output { status, stdout, stderr } = command.output().with_context(|| format!("running {command:?}"))?;
    let elapsed = start.elapsed();
    ensure!(status.success(), "{command:?} failed with {status}: {}", String::from_utf8_lossy(&stderr));
    Ok((elapsed, String::from_utf8(stdout)?))
}

/// Checks a read_file window: its lines, without their `N | ` labels, are the reference's output, and its
/// footer counts the file's lines as `wc -l` does.
fn check_window(text: &str, start: u64, reference: &str, total: u64) -> Result<()> {
    let end = start + WINDOW as u64 - 1;
    let footer =
        format!("\n\n(Showing lines {start}-{end} of {total} total. Use start_line={} to continue reading.)", end + 1);
    let Some(body) = text.strip_suffix(&footer) else {
        bail!("the window at line {start} does not end with {footer:?}");
    };
    let mut count = 0;
    for ((number, ours), expected) in (start..).zip(body.lines()).zip(reference.lines()) {
        let label = format!("{number} | ");
        ensure!(
            ours.strip_prefix(&label) == Some(expected),
            "line {number}: read_file shows {ours:?}, the reference {expected:?}"
        );
        count += 1;
    }
    ensure!(
        count == WINDOW && body.lines().count() == WINDOW && reference.lines().count() == WINDOW,
        "the window at line {start} differs in length from the reference"
    );
    Ok(())
}

/// Runs the CLI under GNU time and returns its output and peak resident set in MiB.
///
/// A child's peak RSS starts at its parent's: `posix_spawn` and `vfork` share the parent's memory until `exec`,
/// and the kernel carries that peak across it. So the probe must be a small process: GNU time (about 1 MiB)
/// forks the CLI itself. Measured from this process, or from Python (about 14 MiB), the figure would be the
/// parent's whenever that is larger than the CLI's.
pub fn peak_memory(toolshed: &Path, plugins: &Path, work: &Path, command: &[&str]) -> Result<(String, f64)> {
    // An empty home: the user's own configuration must not change what is measured.
    let home = work.join("home");
    std::fs::create_dir_all(&home)?;
    let out = Command::new(GNU_TIME)
        .args(["-f", "%x %M"])
        .arg(toolshed)
        .arg("--plugins")
        .arg(plugins)
        .arg("--cwd")
        .arg(work)
        .args(command)
        .env("HOME", &home)
        .output()
        .with_context(|| format!("running {GNU_TIME} (GNU time) to measure the CLI's peak memory"))?;
    let report = String::from_utf8_lossy(&out.stderr);
    // GNU time's report is the last line; the CLI's own diagnostics, if any, come before it.
    let Some((code, peak_kib)) = report.lines().last().and_then(|line| line.split_once(' ')) else {
        bail!("no report from {GNU_TIME}: {report}");
    };
    // Row 7's empty-directory baseline ends in the CLI's "no plugins loaded" error (exit 2), after it built its
    // runtime: the same process with nothing loaded.
    let no_plugins = code == "2" && report.contains("toolshed: no plugins loaded");
    ensure!(code == "0" || no_plugins, "`toolshed {}` exited with {code}: {report}", command.join(" "));
    Ok((String::from_utf8(out.stdout)?, peak_kib.parse::<f64>().context("peak RSS")? / 1024.0))
}
