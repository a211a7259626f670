//! Row 6, concurrency: `read_file` and `search_files` from 1, 2, 4 and 8 agent tasks in parallel, each against
//! the 1-task figure of the same run, and a small `read_file` while 4 tasks search the whole tree in a loop,
//! against the same read alone: a cheap call must not wait behind expensive ones.
//!
//! The workspace is generated (a few hundred source-like files under `<out>/concurrency`), so the row needs
//! no corpus and reads the same bytes on every machine. Every call goes through the public API from the
//! runtime's own thread (as rows 2 and 4 time theirs), each parallel caller a tokio task there with its own
//! `TaskHandle`, so the figures are the runtime's: its actors, its worker pools, and the machine's cores,
//! not a host's wake-ups. A read never repeats in a task (the dedup notice would change its text), so every
//! answer is checked against the one verified before anything was timed.

use crate::stats::{Figure, Row, Target, Unit};
use anyhow::{bail, ensure, Context, Result};
use serde_json::{json, Value};
use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolshed::{Block, ResultStatus, Runtime, TaskContext, TaskHandle, ToolResult, ToolUse};

/// The generated tree: directories, files in each, lines in each file.
const DIRS: usize = 20;
const FILES_PER_DIR: usize = 20;
const LINES: usize = 240;
/// Every this many files holds the search's needle (at line `NEEDLE_LINE`): few enough results that no
/// search reaches the 300-result cap, so each one reads the whole tree.
const NEEDLE_EVERY: usize = 4;
const NEEDLE_LINE: usize = 100;
const NEEDLE_REGEX: &str = r"TODO\(bench\)";
/// The small file of the waiting test, at the workspace's root.
const SMALL: &str = "small.rs";
const SMALL_LINES: usize = 30;
/// The parallel callers of each level.
const LEVELS: [usize; 4] = [1, 2, 4, 8];
/// Calls per round at every level, split evenly among its callers, so rounds of all levels do the same work.
const READS_PER_ROUND: usize = 96;
const SEARCHES_PER_ROUND: usize = 16;
/// Tasks searching in a loop while the small file is read (rows 6g and 6h), and the reads per round.
const SEARCHERS: [(&str, usize); 2] = [("6g", 4), ("6h", 8)];
const SMALL_READS: usize = 100;
/// How long the searchers run before the first small read, so it never lands before the load.
const LOAD_LEAD: Duration = Duration::from_millis(5);
/// Untimed rounds, then interleaved timed rounds.
const WARMUP: usize = 2;
const ROUNDS: usize = 11;

/// One tool call of a plan: its input, and which verified answer it must give.
type Plan = Vec<(Value, usize)>;

/// Runs row 6 with the shipped plugins, on a tree generated under `work`.
pub fn rows(plugins: &Path, work: &Path) -> Result<Vec<Row>> {
    let workspace = work.join("concurrency");
    let files = generate(&workspace)?;
    let runtime = Runtime::builder().plugin_dir(plugins).yes(true).build()?;
    if let Some(error) = runtime.load_errors().first() {
        bail!("{error}");
    }
    let driver = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let bench = Bench { runtime: &runtime, driver: &driver, workspace: &workspace };

    // The checks: every file reads as written, the search finds exactly the needles, and the small file reads
    // as written; these answers are what every timed call must give again.
    let mut reads = Vec::with_capacity(files.len());
    for (path, content) in &files {
        let text = bench.once("read_file", json!({ "path": path }))?;
        ensure!(text == rendered(content), "read_file {path} answered {text:?}, not the file as written");
        reads.push(text);
    }
    let search_input = json!({ "path": ".", "regex": NEEDLE_REGEX });
    let search = bench.once("search_files", search_input.clone())?;
    check_search(&search, &files)?;
    let small_content = small_source();
    let small = bench.once("read_file", json!({ "path": SMALL }))?;
    ensure!(small == rendered(&small_content), "read_file {SMALL} answered {small:?}, not the file as written");

    // The callers of a level split the same files between them: no read repeats in a task, and every level
    // reads the same bytes.
    let read_plans = |callers: usize| -> Vec<Plan> {
        let each = READS_PER_ROUND / callers;
        (0..callers)
            .map(|c| {
                (0..each).map(|i| (c * each + i) % files.len()).map(|f| (json!({ "path": files[f].0 }), f)).collect()
            })
            .collect()
    };
    let search_plans =
        |callers: usize| -> Vec<Plan> { vec![vec![(search_input.clone(), 0); SEARCHES_PER_ROUND / callers]; callers] };
    let reads = Arc::new(reads);
    let searches = Arc::new(vec![search.clone()]);
    let mut rows = Vec::new();
    // One search's median alone: what a small read queued behind a search would add to its time.
    let mut search_alone = 0.0;
    for (letter, tool, plans, expected, what) in [
        (b'a', "read_file", &read_plans as &dyn Fn(usize) -> Vec<Plan>, &reads, format!("{LINES}-line files")),
        (
            b'd',
            "search_files",
            &search_plans,
            &searches,
            format!("the whole tree ({} files, {} results)", files.len(), files.len() / NEEDLE_EVERY),
        ),
    ] {
        eprintln!("toolshed-bench: row 6, {tool} from {LEVELS:?} tasks");
        let mut rates = vec![Vec::new(); LEVELS.len()];
        let mut latencies = vec![Vec::new(); LEVELS.len()];
        for round in 0..WARMUP + ROUNDS {
            // Alternate the order, so no level always runs right after the same other one.
            let mut order: Vec<usize> = (0..LEVELS.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for level in order {
                let (wall, samples) = bench.parallel(tool, plans(LEVELS[level]), Arc::clone(expected))?;
                if round >= WARMUP {
                    rates[level].push(samples.len() as f64 / wall.as_secs_f64());
                    latencies[level].extend(samples);
                }
            }
        }
        let latency = |level: usize| {
            let figure = Figure::with_p99(&mut latencies[level].clone());
            let p99 = figure.p99.unwrap_or(figure.median);
            format!("{} (p99 {})", Unit::Nanos.show(figure.median), Unit::Nanos.show(p99))
        };
        let one = Figure::median(&mut rates[0].clone());
        if tool == "search_files" {
            search_alone = Figure::median(&mut latencies[0].clone()).median;
        }
        for level in 1..LEVELS.len() {
            rows.push(Row {
                id: format!("6{}", char::from(letter + level as u8 - 1)),
                what: format!("concurrency: {tool} on {what}, {} tasks in parallel, in all", LEVELS[level]),
                unit: Unit::PerSecond,
                ours: Figure::median(&mut rates[level]),
                reference_name: "1 task".to_owned(),
                reference: one,
                target: Target::Report,
                higher_is_better: true,
                note: Some(format!("per call {}; 1 task: {}", latency(level), latency(0))),
            });
        }
    }

    for (id, searchers) in SEARCHERS {
        rows.push(small_read_row(&bench, id, searchers, (&small, &search_input, &search), search_alone)?);
    }
    Ok(rows)
}

/// Row 6g or 6h: a small read's latency alone and while `searchers` tasks search the whole tree in a loop.
fn small_read_row(
    bench: &Bench<'_>,
    id: &str,
    searchers: usize,
    (small, search_input, search): (&str, &Value, &str),
    search_alone: f64,
) -> Result<Row> {
    eprintln!("toolshed-bench: row 6, a small read_file alone and during {searchers} searches");
    let (mut alone, mut loaded, mut during) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..WARMUP + ROUNDS {
        for under_load in if round % 2 == 0 { [false, true] } else { [true, false] } {
            let (samples, searched) =
                bench.small_reads(small, if under_load { searchers } else { 0 }, search_input, search)?;
            if round >= WARMUP {
                if under_load {
                    loaded.extend(samples);
                    during.push(searched as f64);
                } else {
                    alone.extend(samples);
                }
            }
        }
    }
    let searched = Figure::median(&mut during).median;
    Ok(Row {
        id: id.to_owned(),
        what: format!(
            "concurrency: a small read_file ({SMALL_LINES} lines) while {searchers} tasks search the whole tree in a \
             loop"
        ),
        unit: Unit::Nanos,
        ours: Figure::with_p99(&mut loaded),
        reference_name: "the same read, alone".to_owned(),
        reference: Figure::with_p99(&mut alone),
        target: Target::P99RatioAtMost(2.0),
        higher_is_better: false,
        note: Some(format!(
            "it must not wait behind them: its p99 at most twice its p99 alone; {searched:.0} searches finished \
             during each round's {SMALL_READS} reads, one alone takes {}",
            Unit::Nanos.show(search_alone)
        )),
    })
}

/// What every measurement needs: the runtime, a driver to wait for it on this thread, and the workspace.
struct Bench<'a> {
    runtime: &'a Runtime,
    driver: &'a tokio::runtime::Runtime,
    workspace: &'a Path,
}

impl Bench<'_> {
    /// A fresh task in the workspace: nothing read yet, so no answer carries a dedup notice.
    fn task(&self) -> TaskHandle {
        self.runtime.task(TaskContext::new(self.workspace))
    }

    /// One call in a fresh task; its text, failing unless it succeeded.
    fn once(&self, tool: &'static str, input: Value) -> Result<String> {
        let result = self.driver.block_on(self.task().execute(ToolUse::new("bench", tool, input)));
        match (result.status, result.blocks.as_slice()) {
            (ResultStatus::Success, [Block::Text { text }]) => Ok(text.clone()),
            _ => bail!("{tool} failed: {}", result.to_model_text()),
        }
    }

    /// Runs one caller per plan in parallel, each a task of its own on the runtime's thread making its calls
    /// in sequence; returns the wall time of them all and every call's duration in ns.
    fn parallel(
        &self,
        tool: &'static str,
        plans: Vec<Plan>,
        expected: Arc<Vec<String>>,
    ) -> Result<(Duration, Vec<f64>)> {
        let callers: Vec<(TaskHandle, Plan)> = plans.into_iter().map(|plan| (self.task(), plan)).collect();
        let calls: usize = callers.iter().map(|(_, plan)| plan.len()).sum();
        let timed = self.driver.block_on(self.runtime.run_on_runtime(move || async move {
            let start = Instant::now();
            let handles: Vec<_> = callers
                .into_iter()
                .map(|(task, plan)| {
                    let expected = Arc::clone(&expected);
                    tokio::task::spawn_local(async move {
                        let mut samples = Vec::with_capacity(plan.len());
                        let mut wrong = 0;
                        for (input, answer) in plan {
                            let call = Instant::now();
                            let result = task.execute(ToolUse::new("bench", tool, input)).await;
                            samples.push(call.elapsed().as_nanos() as f64);
                            wrong += usize::from(!answered(&result, &expected[answer]));
                        }
                        (samples, wrong)
                    })
                })
                .collect();
            let (samples, wrong) = gather(handles, calls).await;
            (start.elapsed(), samples, wrong)
        }));
        let (wall, samples, wrong) = timed.context("the runtime stopped")?;
        ensure!(wrong == 0 && samples.len() == calls, "{wrong} of {calls} parallel {tool} calls answered otherwise");
        Ok((wall, samples))
    }

    /// Reads the small file `SMALL_READS` times in sequence, each in a fresh task, while `searchers` tasks
    /// (none: alone) run the whole-tree search in a loop. Returns each read's duration in ns and the
    /// number of searches that finished meanwhile.
    fn small_reads(&self, small: &str, searchers: usize, search: &Value, answer: &str) -> Result<(Vec<f64>, usize)> {
        let readers: Vec<TaskHandle> = (0..SMALL_READS).map(|_| self.task()).collect();
        let searchers: Vec<TaskHandle> = (0..searchers).map(|_| self.task()).collect();
        let (small, search, answer) = (small.to_owned(), search.clone(), answer.to_owned());
        let timed = self.driver.block_on(self.runtime.run_on_runtime(move || async move {
            let stop = Rc::new(Cell::new(false));
            let answer = Rc::new(answer);
            let load: Vec<_> = searchers
                .into_iter()
                .map(|task| {
                    let (stop, search, answer) = (Rc::clone(&stop), search.clone(), Rc::clone(&answer));
                    tokio::task::spawn_local(async move {
                        let (mut done, mut wrong) = (0, 0);
                        while !stop.get() {
                            let result = task.execute(ToolUse::new("bench", "search_files", search.clone())).await;
                            // A search that ends after the reads is not counted as load during them.
                            done += usize::from(!stop.get());
                            wrong += usize::from(!answered(&result, &answer));
                        }
                        (done, wrong)
                    })
                })
                .collect();
            if !load.is_empty() {
                tokio::time::sleep(LOAD_LEAD).await;
            }
            let (mut samples, mut wrong) = (Vec::with_capacity(SMALL_READS), 0);
            for task in readers {
                let start = Instant::now();
                let result = task.execute(ToolUse::new("bench", "read_file", json!({ "path": SMALL }))).await;
                samples.push(start.elapsed().as_nanos() as f64);
                wrong += usize::from(!answered(&result, &small));
            }
            stop.set(true);
            let (mut searched, mut searches_wrong) = (0, 0);
            for handle in load {
                match handle.await {
                    Ok((done, bad)) => {
                        searched += done;
                        searches_wrong += bad;
                    }
                    Err(_) => searches_wrong += 1,
                }
            }
            (samples, wrong, searched, searches_wrong)
        }));
        let (samples, wrong, searched, searches_wrong) = timed.context("the runtime stopped")?;
        ensure!(wrong == 0, "{wrong} of {SMALL_READS} small reads answered otherwise");
        ensure!(searches_wrong == 0, "{searches_wrong} searches under load answered otherwise");
        Ok((samples, searched))
    }
}

/// Waits for callers that each return their calls' durations and how many answered otherwise; returns every
/// duration and the count of wrong answers, a caller that panicked counting as one.
pub(crate) async fn gather(
    callers: Vec<tokio::task::JoinHandle<(Vec<f64>, usize)>>,
    calls: usize,
) -> (Vec<f64>, usize) {
    let (mut samples, mut wrong) = (Vec::with_capacity(calls), 0);
    for caller in callers {
        match caller.await {
            Ok((durations, caller_wrong)) => {
                samples.extend(durations);
                wrong += caller_wrong;
            }
            Err(_) => wrong += 1,
        }
    }
    (samples, wrong)
}

/// Whether a call succeeded with exactly `expected`.
fn answered(result: &ToolResult, expected: &str) -> bool {
    result.status == ResultStatus::Success
        && matches!(result.blocks.as_slice(), [Block::Text { text }] if text == expected)
}

/// Checks the search's answer: every needle found, in path order, and nothing else.
fn check_search(text: &str, files: &[(String, String)]) -> Result<()> {
    let expected: Vec<&str> = files
        .iter()
        .enumerate()
        .filter(|(i, _)| i.is_multiple_of(NEEDLE_EVERY))
        .map(|(_, (path, _))| path.as_str())
        .collect();
    let header = format!("Found {} results.\n\n", expected.len());
    ensure!(text.starts_with(&header), "search_files answered {:?}…, not {header:?}", text.get(..80).unwrap_or(text));
    // Each file's group starts with its path on a line of its own; matches and context start with `│`.
    let found: Vec<&str> =
        text[header.len()..].lines().filter(|line| !line.is_empty() && !line.starts_with('│')).collect();
    ensure!(found == expected, "search_files found the needles in {found:?}, not in {expected:?}");
    Ok(())
}

/// A file's text as read_file shows it whole: every line numbered, then the line count.
pub(crate) fn rendered(content: &str) -> String {
    let lines: Vec<String> = content.lines().enumerate().map(|(n, line)| format!("{} | {line}", n + 1)).collect();
    format!("{}\n\n(File has {} lines total.)", lines.join("\n"), lines.len())
}

/// Writes the tree unless it is already there as generated; returns each file's relative path and content, in
/// path order (the order search_files reports).
fn generate(root: &Path) -> Result<Vec<(String, String)>> {
    let mut files = Vec::with_capacity(DIRS * FILES_PER_DIR);
    for d in 0..DIRS {
        for f in 0..FILES_PER_DIR {
            let path = format!("m{d:02}/f{f:02}.rs");
            let content = source(d, f, (d * FILES_PER_DIR + f).is_multiple_of(NEEDLE_EVERY));
            write_if_changed(&root.join(&path), &content)?;
            files.push((path, content));
        }
    }
    write_if_changed(&root.join(SMALL), &small_source())?;
    Ok(files)
}

/// Writes a file unless it already holds `content`, so reruns leave the page cache and writeback alone.
pub(crate) fn write_if_changed(path: &Path, content: &str) -> Result<()> {
    if std::fs::read(path).ok().as_deref() == Some(content.as_bytes()) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, content).with_context(|| format!("writing {}", path.display()))
}

/// A Rust-like source file of `LINES` lines: one struct and its methods, the needle in it when `needle`.
fn source(d: usize, f: usize, needle: bool) -> String {
    let mut lines = vec![
        format!("//! m{d:02}/f{f:02}.rs: generated for the concurrency bench."),
        "use std::collections::HashMap;".to_owned(),
        format!("/// Item {f} of module {d}."),
        format!("pub struct Item{d}x{f} {{"),
        "    values: HashMap<u64, u64>,".to_owned(),
        "}".to_owned(),
        format!("impl Item{d}x{f} {{"),
    ];
    let mut n = 0;
    while lines.len() < LINES - 1 {
        lines.push(match n % 6 {
            0 => format!("    pub fn step_{n}(&mut self, x: u64) -> u64 {{"),
            1 => format!("        let v = x.wrapping_mul({}).rotate_left({});", 2_654_435_761 + d * 97 + f, n % 61),
            2 => "        self.values.insert(x, v);".to_owned(),
            3 => format!("        v ^ {n}"),
            4 => "    }".to_owned(),
            _ => format!("    // step {n} ends here"),
        });
        n += 1;
    }
    lines.push("}".to_owned());
    if needle {
        lines[NEEDLE_LINE - 1] = format!("    // TODO(bench): check the constant of m{d:02}/f{f:02}");
    }
    lines.join("\n") + "\n"
}

/// The small file of the waiting test.
fn small_source() -> String {
    (1..=SMALL_LINES).map(|n| format!("pub const SMALL_{n}: u32 = {n};\n")).collect()
}
