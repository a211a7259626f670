//! `toolshed-soak`, run by `cargo xtask soak`: many concurrent tasks call every shipped tool with valid and
//! invalid inputs for a set time while the plugins hot-reload under them, on two runtimes embedded through the
//! public API (one approves every ask, one denies them). Every result is sorted into a kind and checked
//! against the kinds its case lists in advance (`cases.rs`); the process's memory and open descriptors are
//! sampled with the calls paused after a warm-up, at each quarter of the rest and at the end. Prints a report, writes
//! `<out>/latest.json`, and fails on any unexpected result, failed reload, changed shared file, or growth of
//! descriptors or memory beyond the bounds below.

mod cases;
mod host;
mod reload;
mod stats;

use anyhow::{bail, ensure, Context, Result};
use cases::{Case, Kind, Side};
use serde_json::{json, Value};
use stats::{mib, show, Histogram, Sample};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};
use toolshed::{Config, PluginEvent, Runtime, TaskContext, TaskHandle, ToolUse};

const USAGE: &str = "usage: toolshed-soak --plugins DIR --out DIR [--seconds N] [--tasks T] [--reload-ms MS]

  --plugins DIR    the shipped plugins (target/plugins); the soak watches a copy of them
  --out DIR        where latest.json goes (target/soak)
  --seconds N      how long the calls run (default 60)
  --tasks T        concurrent tasks (default 32); every fourth runs on the denying runtime
  --reload-ms MS   a plugin library lands in the watched copy this often (default 3000)";

/// Open descriptors may differ by this many between the sample after warm-up and the end (the watcher's and
/// the HTTP client's bookkeeping may settle differently); a leak of one per call or per reload is far more.
const FD_SLACK: i64 = 8;

/// The resident set may grow by this much after warm-up. Replaced library copies are unloaded once their
/// calls finish, so reloads may not add to it; a leak of a few hundred bytes per call, or of a copy per
/// reload, passes this within minutes at the soak's call and reload rates.
const RSS_SLACK: u64 = 32 * 1024 * 1024;

/// Library copies mapped at the end may exceed those after warm-up by this many: versions landed last whose
/// calls are still draining, or kept mapped a little longer by a thread-local destructor of a thread that
/// has not ended yet.
const COPIES_SLACK: u64 = 4;

/// How long the watchers get, once the calls and landings stop, to reload the versions landed last.
const RELOAD_SETTLE: Duration = Duration::from_secs(60);

/// Unexpected results printed in full; the rest are only counted.
const SHOWN: usize = 20;

/// The slowest calls kept for the report.
const SLOWEST: usize = 5;

struct Args {
    plugins: PathBuf,
    out: PathBuf,
    seconds: u64,
    tasks: usize,
    reload_every: Duration,
}

fn parse(args: &[String]) -> Result<Args> {
    let value = |flag: &str| -> Option<&String> { args.iter().position(|a| a == flag).and_then(|at| args.get(at + 1)) };
    let number = |flag: &str, default: u64| -> Result<u64> {
        value(flag).map_or(Ok(default), |v| v.parse().with_context(|| format!("{flag} {v}: not a number")))
    };
    let path = |flag: &str| -> Result<PathBuf> {
        value(flag).map(PathBuf::from).with_context(|| format!("{flag} is missing\n\n{USAGE}"))
    };
    let args = Args {
        plugins: path("--plugins")?,
        out: path("--out")?,
        seconds: number("--seconds", 60)?,
        tasks: number("--tasks", 32)? as usize,
        reload_every: Duration::from_millis(number("--reload-ms", 3000)?),
    };
    ensure!(args.seconds > 0 && args.tasks > 0, "--seconds and --tasks must be positive");
    Ok(args)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    match parse(&args).and_then(|args| run(&args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("toolshed-soak: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// What the calls found, shared by the tasks (all on one thread).
#[derive(Default)]
struct Tally {
    calls: u64,
    all: Histogram,
    per_tool: BTreeMap<&'static str, Histogram>,
    kinds: BTreeMap<(&'static str, Kind), u64>,
    unexpected: u64,
    shown: Vec<Value>,
    /// The slowest calls, slowest first.
    slowest: Vec<(Duration, &'static str, String)>,
}

/// Plugin events of one runtime.
#[derive(Default)]
struct Events {
    reloaded: u64,
    /// Reloads per library file name.
    per_file: BTreeMap<String, u64>,
    failed: Vec<String>,
    other: Vec<String>,
}

/// The files of the workspace nobody may change (the denying runtime's edits target some of them).
const SHARED_FILES: &[&str] = &[
    "docs/guide.md",
    "src/lib.rs",
    "src/util.py",
    "src/app.ts",
    "data/journal.log",
    "analysis.ipynb",
    "secrets/token.txt",
    ".clineignore",
    "logo.bin",
];

/// Lays out the workspace: sources for the outline and search tools, a long log, a notebook, a fenced-off
/// secret and a binary, and one directory per task for its writes.
fn populate(ws: &Path, tasks: usize) -> Result<()> {
    for dir in ["src", "docs", "data", "secrets", ".clinerules"] {
        std::fs::create_dir_all(ws.join(dir))?;
    }
    std::fs::write(ws.join(".clineignore"), "secrets/\n")?;
    std::fs::write(ws.join("secrets/token.txt"), "hunter2\n")?;
    std::fs::write(ws.join("logo.bin"), [0u8, 159, 146, 150, 0, 0])?;
    std::fs::write(ws.join("docs/guide.md"), "# Guide\n\n- one\n\nTODO: more.\n")?;
    std::fs::write(
        ws.join("src/lib.rs"),
        "//! A library.\n\npub struct Point { x: i32 }\n\n// TODO: more fields\npub fn origin() -> Point {\n    Point { x: 0 }\n}\n\nfn helper() {}\n",
    )?;
    std::fs::write(
        ws.join("src/util.py"),
        "class Loader:\n    def load(self):\n        return 1\n\ndef main():\n    pass\n",
    )?;
    std::fs::write(
        ws.join("src/app.ts"),
        "export interface App { name: string }\n\nexport function start(app: App): void {}\n",
    )?;
    let log: String = (1..=2000).map(|i| format!("entry {i}\n")).collect();
    std::fs::write(ws.join("data/journal.log"), log)?;
    std::fs::write(
        ws.join("analysis.ipynb"),
        r#"{"cells":[{"cell_type":"code","execution_count":1,"metadata":{},"outputs":[{"output_type":"stream","name":"stdout","text":["2\n"]}],"source":["print(1 + 1)"]}],"metadata":{},"nbformat":4,"nbformat_minor":5}"#,
    )?;
    for i in 0..tasks {
        std::fs::create_dir_all(ws.join(format!("tasks/t{i:02}")))?;
    }
    Ok(())
}

fn read_shared(ws: &Path) -> Result<Vec<Vec<u8>>> {
    SHARED_FILES.iter().map(|f| std::fs::read(ws.join(f)).with_context(|| format!("reading {f}"))).collect()
}

fn libraries(dir: &Path) -> Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(std::result::Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(std::env::consts::DLL_SUFFIX))
        .collect();
    names.sort();
    ensure!(!names.is_empty(), "no plugin libraries in {}", dir.display());
    Ok(names)
}

fn run(args: &Args) -> Result<bool> {
    let scratch = tempfile::Builder::new().prefix("toolshed-soak-").tempdir()?;
    let ws = scratch.path().join("ws");
    populate(&ws, args.tasks)?;
    std::fs::write(scratch.path().join("outside.txt"), "outside the workspace\n")?;
    let shared_before = read_shared(&ws)?;
    let skills = scratch.path().join("skills");
    std::fs::create_dir_all(skills.join("release-notes"))?;
    std::fs::write(
        skills.join("release-notes/SKILL.md"),
        "---\nname: release-notes\ndescription: Write release notes from the git log\n---\n\nList the commits since the last tag.\n",
    )?;
    // The runtimes watch a copy of the shipped plugins, where the reloader lands new versions.
    let (watched, staging) = (scratch.path().join("plugins"), scratch.path().join("staging"));
    std::fs::create_dir_all(&watched)?;
    std::fs::create_dir_all(&staging)?;
    let names = libraries(&args.plugins)?;
    for name in &names {
        std::fs::copy(args.plugins.join(name), watched.join(name)).with_context(|| format!("copying {name}"))?;
    }

    // An MCP settings file with no servers: the hub runs (and polls the file) under the load, and the MCP
    // tools get its answer for a server that is not connected.
    let mcp_settings = scratch.path().join("cline_mcp_settings.json");
    std::fs::write(&mcp_settings, r#"{"mcpServers": {}}"#)?;
    let site = host::serve_site()?.to_string();
    let config = format!(
        "[skills]\ndirs = [{skills:?}]\n\
         [web]\nprovider = \"cline\"\nenabled = true\nfeature_flag = true\nbackend = \"direct\"\n\
         api_base_url = \"http://{site}\"\nallowed_hosts = [\"127.0.0.1\"]\nfetch_timeout_ms = 5000\n\
         [mcp]\nsettings = {mcp_settings:?}\n\
         [commands]\npermissions = '{{\"allow\": [\"echo *\", \"true\", \"false\", \"ls *\", \"cat *\"], \"deny\": [\"rm *\"]}}'\n"
    );
    let approving = Rc::new(
        Runtime::builder()
            .plugin_dir(&watched)
            .config(Config::from_toml_str(&config)?)
            .yes(true)
            .interaction(host::AnsweringHost)
            .agent_driver(host::ScriptedModel)
            .web_token(Some("soak-token".to_owned()))
            .watch(true)
            .build()?,
    );
    let denying = Rc::new(
        Runtime::builder()
            .plugin_dir(&watched)
            .config(Config::from_toml_str(&config)?)
            .approver(host::DenyingUser)
            .web_token(Some("soak-token".to_owned()))
            .watch(true)
            .build()?,
    );
    for runtime in [&approving, &denying] {
        if let Some(error) = runtime.load_errors().first() {
            bail!("plugin not loaded: {error}");
        }
    }
    // Every loaded tool must have cases: a tool the soak never calls would pass unnoticed.
    let tools: Vec<String> = approving.tools().into_iter().map(|t| t.name).collect();
    let covered = cases::script(Side::Approving, "tasks/t00", &site);
    let covered: Vec<&str> = covered.groups.iter().chain([&covered.last]).flatten().map(|c| c.tool).collect();
    let missing: Vec<&String> = tools.iter().filter(|t| !covered.contains(&t.as_str())).collect();
    ensure!(missing.is_empty(), "loaded tools without soak cases (add them to soak/src/cases.rs): {missing:?}");

    let warm_up = Duration::from_secs((args.seconds / 6).clamp(1, 60));
    let total = Duration::from_secs(args.seconds);
    let quarter = |n: u32| warm_up + total.saturating_sub(warm_up) * n / 4;
    println!(
        "soak: {} s, {} tasks ({} approving, {} denying), {} tools from {} libraries, a reload every {} ms, warm-up {} s",
        args.seconds,
        args.tasks,
        args.tasks - args.tasks / 4,
        args.tasks / 4,
        tools.len(),
        names.len(),
        args.reload_every.as_millis(),
        warm_up.as_secs()
    );

    let executor = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let local = tokio::task::LocalSet::new();
    let tally = Rc::new(RefCell::new(Tally::default()));
    let events = [Rc::new(RefCell::new(Events::default())), Rc::new(RefCell::new(Events::default()))];
    let mut reloads = reload::Reloads::start(args.plugins.clone(), watched, staging, names, args.reload_every);
    let mapped = |runtime: &Runtime| {
        let stats = runtime.reload_stats();
        (stats.process_copies, stats.process_bytes)
    };
    let started = Instant::now();
    let start_sample = Sample::take("start", 0.0, 0, mapped(&approving))?;
    println!("{}", start_sample.line());

    let (samples, elapsed, reload_errors, settle) = local.block_on(&executor, async {
        for (runtime, events) in [&approving, &denying].into_iter().zip(&events) {
            let mut subscription = runtime.events();
            let events = Rc::clone(events);
            tokio::task::spawn_local(async move {
                while let Some(event) = subscription.recv().await {
                    let mut events = events.borrow_mut();
                    match event {
                        PluginEvent::Reloaded { ref file, .. } => {
                            events.reloaded += 1;
                            let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                            *events.per_file.entry(name).or_default() += 1;
                        }
                        PluginEvent::Failed { .. } => events.failed.push(event.to_string()),
                        other => events.other.push(other.to_string()),
                    }
                }
            });
        }
        // Calls hold the gate's read side; a sample takes the write side, so it sees the process between
        // calls, with no command or connection of a call in flight.
        let gate = Rc::new(tokio::sync::RwLock::new(()));
        let deadline = started + total;
        let mut workers = Vec::new();
        for i in 0..args.tasks {
            let side = if i % 4 == 3 { Side::Denying } else { Side::Approving };
            let runtime = Rc::clone(if side == Side::Denying { &denying } else { &approving });
            let script = cases::script(side, &format!("tasks/t{i:02}"), &site);
            let (ws, gate, tally) = (ws.clone(), Rc::clone(&gate), Rc::clone(&tally));
            workers.push(tokio::task::spawn_local(async move {
                let mut round = 0usize;
                while Instant::now() < deadline {
                    let task = runtime.task(TaskContext::new(&ws).with_id(format!("soak-{i}-{round}")));
                    let groups = script.groups.len();
                    for g in 0..groups {
                        if Instant::now() >= deadline {
                            break;
                        }
                        for case in &script.groups[(g + i + round) % groups] {
                            call(&task, case, &gate, &tally).await;
                        }
                    }
                    for case in &script.last {
                        call(&task, case, &gate, &tally).await;
                    }
                    round += 1;
                }
            }));
        }
        let mut samples = vec![start_sample];
        for (at, when) in [("warm", warm_up), ("q1", quarter(1)), ("mid", quarter(2)), ("q3", quarter(3))] {
            tokio::time::sleep_until((started + when).into()).await;
            let _paused = gate.write().await;
            let calls = tally.borrow().calls;
            match Sample::take(at, started.elapsed().as_secs_f64(), calls, mapped(&approving)) {
                Ok(sample) => {
                    println!("{}", sample.line());
                    samples.push(sample);
                }
                Err(error) => eprintln!("toolshed-soak: sampling {at}: {error:#}"),
            }
        }
        for worker in workers {
            let _ = worker.await;
        }
        let elapsed = started.elapsed();
        // Every landed version must be reloaded by both runtimes. Under full load a watcher may lag several
        // landings behind (each reload copies, hashes and maps a library, on a loaded machine): wait for it,
        // with a bound, and report how long it took.
        let errors = reloads.stop();
        let stopped = Instant::now();
        let written = reloads.written();
        let behind = || events.iter().any(|e| e.borrow().reloaded + (e.borrow().failed.len() as u64) < written);
        while behind() && stopped.elapsed() < RELOAD_SETTLE {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        (samples, elapsed, errors, stopped.elapsed())
    });
    let calls = tally.borrow().calls;
    let end = Sample::take("end", elapsed.as_secs_f64(), calls, mapped(&approving))?;
    println!("{}", end.line());
    let mut samples = samples;
    samples.push(end);
    let reload_stats = approving.reload_stats();
    let denying_stats = denying.reload_stats();
    drop(local);
    drop(approving);
    drop(denying);

    // The checks.
    let tally = tally.borrow();
    let mut problems = Vec::new();
    if tally.unexpected > 0 {
        problems.push(format!("{} unexpected results", tally.unexpected));
    }
    let written = reloads.written();
    for (name, events) in ["approving", "denying"].iter().zip(&events) {
        let events = events.borrow();
        for failed in &events.failed {
            problems.push(format!("{name} runtime: reload failed: {failed}"));
        }
        if events.reloaded != written {
            let landed = reloads.landed();
            let short: Vec<String> = landed
                .iter()
                .filter(|(file, n)| events.per_file.get(*file).copied().unwrap_or(0) != **n)
                .map(|(file, n)| format!("{file} {}/{n}", events.per_file.get(file).copied().unwrap_or(0)))
                .collect();
            problems.push(format!(
                "{name} runtime reloaded {} times for {written} versions landed (reloaded/landed: {})",
                events.reloaded,
                short.join(", ")
            ));
        }
        for other in &events.other {
            problems.push(format!("{name} runtime: unexpected plugin event: {other}"));
        }
    }
    for error in &reload_errors {
        problems.push(format!("reloader: {error}"));
    }
    if read_shared(&ws)? != shared_before {
        problems.push("a shared workspace file changed (only tasks/ and .clinerules/ may)".to_owned());
    }
    if (0..args.tasks).any(|i| ws.join(format!("tasks/t{i:02}/absent.md")).exists()) {
        problems.push("a failed replace_in_file created its file".to_owned());
    }
    if scratch.path().join("escape.txt").exists() {
        problems.push("a write escaped the workspace (escape.txt exists)".to_owned());
    }
    let warm = samples.iter().find(|s| s.at == "warm").cloned();
    let end = samples.last().cloned();
    let mut bounds = json!(null);
    if let (Some(warm), Some(end)) = (warm, end) {
        let fd_growth = end.fds as i64 - warm.fds as i64;
        let rss_growth = end.rss as i64 - warm.rss as i64;
        let copies_growth = end.mapped_copies as i64 - warm.mapped_copies as i64;
        if fd_growth > FD_SLACK {
            problems.push(format!("open descriptors grew by {fd_growth} after warm-up (allowed {FD_SLACK})"));
        }
        if rss_growth > RSS_SLACK as i64 {
            problems.push(format!(
                "RSS grew by {} after warm-up (allowed {})",
                mib(rss_growth.max(0) as u64),
                mib(RSS_SLACK)
            ));
        }
        if copies_growth > COPIES_SLACK as i64 {
            problems.push(format!(
                "{} library copies mapped at the end, {} after warm-up: replaced versions were not unloaded",
                end.mapped_copies, warm.mapped_copies
            ));
        }
        bounds = json!({
            "fd_growth": fd_growth,
            "fd_allowed": FD_SLACK,
            "rss_growth_bytes": rss_growth,
            "rss_allowed_bytes": RSS_SLACK,
            "mapped_copies_growth": copies_growth,
            "mapped_copies_allowed": COPIES_SLACK,
        });
    } else {
        problems.push("the warm-up sample is missing".to_owned());
    }

    // The report.
    let rate = tally.calls as f64 / elapsed.as_secs_f64();
    println!(
        "\ncalls: {} in {:.1} s ({rate:.0} calls/s); p50 {}, p99 {}, max {}",
        tally.calls,
        elapsed.as_secs_f64(),
        show(tally.all.quantile(0.5)),
        show(tally.all.quantile(0.99)),
        show(tally.all.quantile(1.0))
    );
    println!("\n{:<28} {:>7} {:>10} {:>10}  kinds", "tool", "calls", "p50", "p99");
    for (tool, histogram) in &tally.per_tool {
        let kinds: Vec<String> = tally
            .kinds
            .iter()
            .filter(|((t, _), _)| t == tool)
            .map(|((_, kind), n)| format!("{} {n}", kind.name()))
            .collect();
        println!(
            "{tool:<28} {:>7} {:>10} {:>10}  {}",
            histogram.total(),
            show(histogram.quantile(0.5)),
            show(histogram.quantile(0.99)),
            kinds.join(", ")
        );
    }
    let mut by_kind: BTreeMap<Kind, u64> = BTreeMap::new();
    for ((_, kind), n) in &tally.kinds {
        *by_kind.entry(*kind).or_default() += n;
    }
    let kinds_line: Vec<String> = by_kind.iter().map(|(kind, n)| format!("{} {n}", kind.name())).collect();
    println!("\nresults by kind: {}", kinds_line.join(", "));
    println!("slowest calls:");
    for (elapsed, tool, input) in &tally.slowest {
        println!("  {:>10}  {tool} {input}", show(*elapsed));
    }
    println!("unexpected: {}", tally.unexpected);
    let event_counts: Vec<u64> = events.iter().map(|e| e.borrow().reloaded).collect();
    println!(
        "reloads: {written} versions landed; reloaded {} times by the approving runtime and {} by the denying one; \
         the last caught up {:.1} s after the landings stopped; {} copies unloaded, {} old copies still held, \
         {} copies mapped at the end ({})",
        event_counts[0],
        event_counts[1],
        settle.as_secs_f64(),
        reload_stats.unloaded,
        reload_stats.old_copies + denying_stats.old_copies,
        reload_stats.process_copies,
        mib(reload_stats.process_bytes)
    );

    let report = json!({
        "seconds": args.seconds,
        "tasks": args.tasks,
        "reload_every_ms": args.reload_every.as_millis() as u64,
        "warm_up_seconds": warm_up.as_secs(),
        "elapsed_seconds": elapsed.as_secs_f64(),
        "unix_time": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        "plugins": args.plugins,
        "tools": tools,
        "calls": tally.calls,
        "calls_per_second": rate,
        "latency": tally.all.json(),
        "per_tool": tally.per_tool.iter().map(|(tool, h)| (tool.to_string(), h.json())).collect::<serde_json::Map<_, _>>(),
        "results_by_kind": by_kind.iter().map(|(k, n)| (k.name().to_owned(), json!(n))).collect::<serde_json::Map<_, _>>(),
        "results_by_tool_and_kind": tally.kinds.iter().map(|((t, k), n)| json!({"tool": t, "kind": k.name(), "count": n})).collect::<Vec<_>>(),
        "unexpected": tally.unexpected,
        "unexpected_examples": tally.shown,
        "slowest_calls": tally.slowest.iter().map(|(d, tool, input)| json!({"tool": tool, "input": input, "us": stats::micros(*d)})).collect::<Vec<_>>(),
        "reloads": {
            "landed": written,
            "reloaded_by_approving": event_counts[0],
            "reloaded_by_denying": event_counts[1],
            "caught_up_seconds_after_landings_stopped": settle.as_secs_f64(),
            "old_copies": reload_stats.old_copies + denying_stats.old_copies,
            "unloaded": reload_stats.unloaded,
            "process_library_copies": reload_stats.process_copies,
            "process_library_bytes": reload_stats.process_bytes,
        },
        "samples": samples.iter().map(Sample::json).collect::<Vec<_>>(),
        "bounds": bounds,
        "problems": problems,
        "passed": problems.is_empty(),
    });
    std::fs::create_dir_all(&args.out)?;
    let out = args.out.join("latest.json");
    std::fs::write(&out, serde_json::to_string_pretty(&report)?)?;
    println!("wrote {}", out.display());
    if problems.is_empty() {
        println!("soak passed");
        Ok(true)
    } else {
        for problem in &problems {
            eprintln!("toolshed-soak: FAIL: {problem}");
        }
        Ok(false)
    }
}

/// Runs one case and records how it ended.
async fn call(task: &TaskHandle, case: &Case, gate: &tokio::sync::RwLock<()>, tally: &RefCell<Tally>) {
    let _open = gate.read().await;
    if task.mode() != case.mode {
        task.set_mode(case.mode);
    }
    let id = format!("toolu_{}", tally.borrow().calls);
    let started = Instant::now();
    let result = task.execute(ToolUse::new(id, case.tool, case.input.clone())).await;
    let elapsed = started.elapsed();
    let kind = cases::classify(&result);
    let mut tally = tally.borrow_mut();
    tally.calls += 1;
    tally.all.record(elapsed);
    tally.per_tool.entry(case.tool).or_default().record(elapsed);
    *tally.kinds.entry((case.tool, kind)).or_default() += 1;
    if tally.slowest.len() < SLOWEST || tally.slowest.last().is_some_and(|(d, _, _)| *d < elapsed) {
        tally.slowest.push((elapsed, case.tool, case.input.to_string()));
        tally.slowest.sort_by_key(|entry| std::cmp::Reverse(entry.0));
        tally.slowest.truncate(SLOWEST);
    }
    if !case.expect.contains(&kind) {
        tally.unexpected += 1;
        let text = result.to_model_text();
        if tally.shown.len() < SHOWN {
            let expected: Vec<&str> = case.expect.iter().map(|k| k.name()).collect();
            eprintln!(
                "toolshed-soak: UNEXPECTED {} {} -> {} (expected {}):\n{}\n",
                case.tool,
                case.input,
                kind.name(),
                expected.join(" or "),
                text.chars().take(1500).collect::<String>()
            );
            tally.shown.push(json!({"tool": case.tool, "input": case.input, "kind": kind.name(), "expected": expected, "text": text}));
        }
    }
}
