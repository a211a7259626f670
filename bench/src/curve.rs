//! Row 14, the cost curve: 1, 10, 100, 1,000 and 10,000 agent tasks open on one runtime at once, each running
//! the same mix (read_file, search_files, list_files and the fixture's `noop`), with calls/s, p50 and p99 per
//! call at every level; then what an idle task costs: resident memory and heap per task, and descriptors,
//! which must not grow with the number of tasks.
//!
//! Fleets of rollouts and parallel subagents open thousands of tasks on one runtime, so how the cost grows
//! with their number matters as much as one call's latency. The workspace is tiny (a few files of about a
//! hundred lines), so the curve measures the runtime, not the disk. Every round does the same work at every
//! level (`MIXES` mixes, split evenly among the level's tasks), so the rates compare directly.
//!
//! The idle figures come first, before anything runs: tasks are opened in steps up to 10,000 and kept open,
//! and each step's resident set (`VmRSS`), heap in use (glibc's `mallinfo2`) and open descriptors are read
//! against the figures with none open. Growing only, the steps never reuse memory a dropped task freed, which
//! would hide what a task costs. The timed rounds then run on the first N of those tasks.

use crate::concurrency::{gather, rendered, write_if_changed};
use crate::dispatch::{is_ok, noop};
use crate::stats::{Figure, Row, Target, Unit};
use anyhow::{bail, ensure, Context, Result};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolshed::{Block, ResultStatus, Runtime, TaskContext, TaskHandle, ToolResult, ToolUse};

/// The levels of the curve: tasks open and running at once.
const LEVELS: [usize; 5] = [1, 10, 100, 1_000, 10_000];
/// Mixes per round at every level, split evenly among its tasks: the largest level runs one mix per task.
const MIXES: usize = 10_000;
/// Untimed rounds, then interleaved timed rounds.
const WARMUP: usize = 1;
const ROUNDS: usize = 5;
/// The workspace's files: their paths and line counts. Two hold the search's needle.
const FILES: [(&str, usize); 4] = [("src/lib.rs", 100), ("src/parse.rs", 110), ("src/walk.rs", 90), ("README.md", 80)];
const NEEDLE_REGEX: &str = r"TODO\(curve\)";
/// The budget of an idle task's resident memory, in KiB.
const IDLE_BUDGET_KIB: f64 = 64.0;
/// Throughput at the largest level is at least this share of the best level's.
const FLOOR: f64 = 0.8;

/// One call of the mix: the tool and its input.
struct Call {
    tool: &'static str,
    input: Value,
    answer: Answer,
}

/// What a call of the mix must answer.
enum Answer {
    /// A read: the file as rendered, after Cline's dedup notice from the task's second read of it on.
    Read(Arc<str>),
    /// Exactly this text (a search or listing verified before anything was timed).
    Exactly(Arc<str>),
    /// The fixture's no-op answer.
    Noop,
}

impl Answer {
    fn given_by(&self, result: &ToolResult) -> bool {
        let text = match (result.status, result.blocks.as_slice()) {
            (ResultStatus::Success, [Block::Text { text }]) => text.as_str(),
            _ => return false,
        };
        match self {
            Answer::Read(file) => {
                text == &**file
                    || text.strip_suffix(&**file).and_then(|notice| notice.strip_suffix('\n')).is_some_and(|notice| {
                        notice.starts_with("[File already read]") || notice.starts_with("[DUPLICATE READ]")
                    })
            }
            Answer::Exactly(expected) => text == &**expected,
            Answer::Noop => is_ok(result),
        }
    }
}

/// What the process holds at one moment: resident set and heap in use (bytes), descriptors and threads.
#[derive(Debug, Clone, Copy)]
struct Footprint {
    rss: f64,
    heap: f64,
    fds: usize,
    threads: usize,
}

impl Footprint {
    fn now() -> Result<Self> {
        let status = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
        let field = |name: &str| -> Result<f64> {
            let line = status.lines().find_map(|line| line.strip_prefix(name)).with_context(|| format!("no {name}"))?;
            let number = line.split_whitespace().next().unwrap_or_default();
            number.parse::<f64>().with_context(|| format!("{name} {line:?}"))
        };
        let fds = std::fs::read_dir("/proc/self/fd").context("reading /proc/self/fd")?.count();
        // SAFETY: mallinfo2 only reads the allocator's counters; glibc takes each arena's lock itself.
        let heap = unsafe { libc::mallinfo2() };
        Ok(Self {
            rss: field("VmRSS:")? * 1024.0,
            heap: heap.uordblks as f64,
            fds,
            threads: field("Threads:")? as usize,
        })
    }
}

/// The idle cost at one level: per task over the footprint with none open.
struct Idle {
    rss_per_task: f64,
    heap_per_task: f64,
    at: Footprint,
}

/// Runs row 14 with the shipped plugins and the fixture's `noop`, in a workspace generated under `work`.
pub fn rows(plugins: &Path, fixture: &Path, work: &Path) -> Result<Vec<Row>> {
    let workspace = work.join("curve");
    let contents = generate(&workspace)?;
    // Third-party tools ask by default; `yes` keeps the policy out of the measurement, as in row 1.
    let runtime = Runtime::builder().plugin_dir(plugins).plugin_file(fixture).yes(true).build()?;
    if let Some(error) = runtime.load_errors().first() {
        bail!("{error}");
    }
    let driver = tokio::runtime::Builder::new_current_thread().enable_all().build()?;

    // The checks, in a task of their own: every file reads as written, the search finds the needles, the
    // listing lists the tree, and `noop` answers; these are the answers every timed call must give again.
    let check = runtime.task(TaskContext::new(&workspace));
    let once = |tool: &'static str, input: Value| -> Result<String> {
        let result = driver.block_on(check.execute(ToolUse::new("bench", tool, input)));
        match (result.status, result.blocks.as_slice()) {
            (ResultStatus::Success, [Block::Text { text }]) => Ok(text.clone()),
            _ => bail!("{tool} failed: {}", result.to_model_text()),
        }
    };
    let mut reads = Vec::new();
    for ((path, _), content) in FILES.iter().zip(&contents) {
        let text = once("read_file", json!({ "path": path }))?;
        ensure!(text == rendered(content), "read_file {path} answered {text:?}, not the file as written");
        reads.push(Call { tool: "read_file", input: json!({ "path": path }), answer: Answer::Read(Arc::from(text)) });
    }
    let search_input = json!({ "path": ".", "regex": NEEDLE_REGEX });
    let search = once("search_files", search_input.clone())?;
    ensure!(search.starts_with("Found 2 results."), "search_files answered {search:?}, not the two needles");
    let list_input = json!({ "path": ".", "recursive": true });
    let listing = once("list_files", list_input.clone())?;
    for (path, _) in FILES {
        ensure!(listing.lines().any(|line| line == path), "list_files answered {listing:?}, without {path}");
    }
    ensure!(is_ok(&driver.block_on(check.execute(noop("noop")))), "`noop` did not answer \"ok\"");
    drop(check);
    // One read per mix, in turn, so a task's reads move through the files rather than repeating one.
    let plan = Arc::new(Plan {
        reads,
        others: vec![
            Call { tool: "search_files", input: search_input, answer: Answer::Exactly(Arc::from(search)) },
            Call { tool: "list_files", input: list_input, answer: Answer::Exactly(Arc::from(listing)) },
            Call { tool: "noop", input: json!({}), answer: Answer::Noop },
        ],
    });

    eprintln!("toolshed-bench: row 14, idle tasks: {LEVELS:?}");
    let (tasks, none, idle) = open_idle(&runtime, &workspace)?;

    eprintln!("toolshed-bench: row 14, the mix from {LEVELS:?} tasks");
    let mut rates = vec![Vec::new(); LEVELS.len()];
    let mut latencies = vec![Vec::new(); LEVELS.len()];
    let mut fds_after = vec![0; LEVELS.len()];
    for round in 0..WARMUP + ROUNDS {
        // Alternate the order, so no level always runs right after the same other one.
        let mut order: Vec<usize> = (0..LEVELS.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for level in order {
            let (wall, samples) = run_level(&runtime, &driver, &tasks[..LEVELS[level]], &plan)?;
            fds_after[level] = fds_after[level].max(Footprint::now()?.fds);
            if round >= WARMUP {
                rates[level].push(samples.len() as f64 / wall.as_secs_f64());
                latencies[level].extend(samples);
            }
        }
    }
    // What the tasks hold once they have worked (their read caches, say), and what is left once they end; less
    // the samples kept since, which are the bench's.
    let samples: usize = latencies.iter().chain(&rates).map(|v| v.capacity() * std::mem::size_of::<f64>()).sum();
    let used = Footprint::now()?;
    drop(tasks);
    let ended = Footprint::now()?;
    let per_task = |at: &Footprint| {
        let heap = at.heap - none.heap - samples as f64;
        Unit::Kibibytes.show(heap / LEVELS[LEVELS.len() - 1] as f64 / 1024.0)
    };
    eprintln!(
        "toolshed-bench: row 14, heap per task after the mix {}, left behind per ended task {}",
        per_task(&used),
        per_task(&ended)
    );

    let figures: Vec<Figure> = rates.iter_mut().map(|r| Figure::median(r)).collect();
    let best = (0..LEVELS.len()).max_by(|&a, &b| figures[a].median.total_cmp(&figures[b].median)).unwrap_or(0);
    let mut rows = Vec::new();
    for (level, &n) in LEVELS.iter().enumerate() {
        let latency = Figure::with_p99(&mut latencies[level]);
        let largest = level + 1 == LEVELS.len();
        rows.push(Row {
            id: format!("14{}", char::from(b'a' + level as u8)),
            what: format!("cost curve: {n} tasks at once, each a mix of read_file, search_files, list_files, noop"),
            unit: Unit::PerSecond,
            ours: figures[level],
            reference_name: format!("the best level ({} tasks)", LEVELS[best]),
            reference: figures[best],
            // Only the largest level has a floor: the curve must stay flat where fleets run.
            target: if largest { Target::RatioAtMost(1.0 / FLOOR) } else { Target::Report },
            higher_is_better: true,
            note: Some(format!(
                "per call p50 {} p99 {}; idle {} RSS and {} heap per task; {} descriptors idle, {} after the mix",
                Unit::Nanos.show(latency.median),
                Unit::Nanos.show(latency.p99.unwrap_or(latency.median)),
                Unit::Kibibytes.show(idle[level].rss_per_task / 1024.0),
                Unit::Kibibytes.show(idle[level].heap_per_task / 1024.0),
                idle[level].at.fds,
                fds_after[level],
            )),
        });
    }
    let (first, last) = (&idle[0], &idle[LEVELS.len() - 1]);
    let largest = LEVELS[LEVELS.len() - 1];
    let single = |value: f64| Figure { median: value, p99: None, samples: 1 };
    rows.push(Row {
        id: "14f".to_owned(),
        what: format!("cost curve: resident memory per idle task, {largest} tasks open"),
        unit: Unit::Kibibytes,
        ours: single(last.rss_per_task / 1024.0),
        reference_name: "the budget".to_owned(),
        reference: single(IDLE_BUDGET_KIB),
        target: Target::RatioAtMost(1.0),
        higher_is_better: false,
        note: Some(format!(
            "VmRSS with the tasks open minus with none, / {largest}; heap in use (mallinfo2) {} per task, {} once \
             each ran the mix, {} left behind once they ended",
            Unit::Kibibytes.show(last.heap_per_task / 1024.0),
            per_task(&used),
            per_task(&ended),
        )),
    });
    rows.push(Row {
        id: "14g".to_owned(),
        what: format!("cost curve: open descriptors with {largest} tasks open"),
        unit: Unit::Count,
        ours: single(last.at.fds as f64),
        reference_name: "with 1 task open".to_owned(),
        reference: single(first.at.fds as f64),
        target: Target::RatioAtMost(1.0),
        higher_is_better: false,
        note: Some(format!(
            "/proc/self/fd; threads {} with 1 task open, {} with {largest}; after the mix {} and {} descriptors",
            first.at.threads,
            last.at.threads,
            fds_after[0],
            fds_after[LEVELS.len() - 1]
        )),
    });
    Ok(rows)
}

/// The calls every mix makes, in order: the task's next read, then the others.
struct Plan {
    reads: Vec<Call>,
    others: Vec<Call>,
}

/// Opens tasks in steps up to the largest level, keeping every one, and reads the footprint at each step
/// against the footprint before the first; returns the tasks, that first footprint and each level's idle cost.
fn open_idle(runtime: &Runtime, workspace: &Path) -> Result<(Vec<TaskHandle>, Footprint, Vec<Idle>)> {
    let largest = LEVELS[LEVELS.len() - 1];
    let mut tasks = Vec::with_capacity(largest);
    let none = Footprint::now()?;
    let mut idle = Vec::with_capacity(LEVELS.len());
    for n in LEVELS {
        while tasks.len() < n {
            tasks.push(runtime.task(TaskContext::new(workspace)));
        }
        let at = Footprint::now()?;
        let cost =
            Idle { rss_per_task: (at.rss - none.rss) / n as f64, heap_per_task: (at.heap - none.heap) / n as f64, at };
        eprintln!(
            "toolshed-bench: row 14, {n} idle tasks: {} RSS and {} heap per task, {} descriptors, {} threads",
            Unit::Kibibytes.show(cost.rss_per_task / 1024.0),
            Unit::Kibibytes.show(cost.heap_per_task / 1024.0),
            at.fds,
            at.threads
        );
        idle.push(cost);
    }
    Ok((tasks, none, idle))
}

/// One round at one level: every task runs its share of the mixes in sequence, all tasks at once on the
/// runtime's thread; returns the wall time and every call's duration in ns.
fn run_level(
    runtime: &Runtime,
    driver: &tokio::runtime::Runtime,
    tasks: &[TaskHandle],
    plan: &Arc<Plan>,
) -> Result<(Duration, Vec<f64>)> {
    let mixes = MIXES / tasks.len();
    let calls = tasks.len() * mixes * (1 + plan.others.len());
    let callers: Vec<(usize, TaskHandle)> = tasks.iter().cloned().enumerate().collect();
    let plan = Arc::clone(plan);
    let timed = driver.block_on(runtime.run_on_runtime(move || async move {
        let start = Instant::now();
        let handles: Vec<_> = callers
            .into_iter()
            .map(|(index, task)| {
                let plan = Arc::clone(&plan);
                tokio::task::spawn_local(async move {
                    let mut samples = Vec::with_capacity(mixes * (1 + plan.others.len()));
                    let mut wrong = 0;
                    for mix in 0..mixes {
                        // Tasks start at different files, so the level's reads spread over the tree.
                        let read = &plan.reads[(index + mix) % plan.reads.len()];
                        for call in std::iter::once(read).chain(&plan.others) {
                            let started = Instant::now();
                            let result = task.execute(ToolUse::new("bench", call.tool, call.input.clone())).await;
                            samples.push(started.elapsed().as_nanos() as f64);
                            wrong += usize::from(!call.answer.given_by(&result));
                        }
                    }
                    (samples, wrong)
                })
            })
            .collect();
        let (samples, wrong) = gather(handles, calls).await;
        (start.elapsed(), samples, wrong)
    }));
    let (wall, samples, wrong) = timed.context("the runtime stopped")?;
    ensure!(
        wrong == 0 && samples.len() == calls,
        "{wrong} of {calls} calls from {} tasks answered otherwise",
        tasks.len()
    );
    Ok((wall, samples))
}

/// Writes the workspace unless it is already there as generated; returns each file's content, in `FILES`'
/// order. The needle is in the first two files.
fn generate(root: &Path) -> Result<Vec<String>> {
    let mut contents = Vec::with_capacity(FILES.len());
    for (index, (path, lines)) in FILES.iter().enumerate() {
        let mut text: Vec<String> = (1..=*lines)
            .map(|n| match n % 4 {
                0 => format!("pub fn step_{n}(x: u64) -> u64 {{ x.rotate_left({}) ^ {n} }}", n % 61),
                1 => format!("/// Step {n} of {path}: rotates and mixes its input."),
                2 => format!("pub const LIMIT_{n}: usize = {};", n * 7),
                _ => String::new(),
            })
            .collect();
        if index < 2 {
            text[*lines / 2] = format!("// TODO(curve): check {path}");
        }
        let content = text.join("\n") + "\n";
        write_if_changed(&root.join(path), &content)?;
        contents.push(content);
    }
    Ok(contents)
}
