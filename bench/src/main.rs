//! `toolshed-bench`, run by `cargo xtask bench`: the performance budget of the design measured as ratios
//! against references run side by side in the same process (interleaved, after warm-up, medians over many
//! runs), each pair checked to give the same answer before it is timed. Prints a Markdown table and writes
//! `<out>/latest.json` with the git revision, the machine and the reference tools' versions.
//!
//! Usage: `toolshed-bench --plugins DIR --fixtures DIR --toolshed BIN --out DIR [--corpus DIR --tools DIR]
//! [--peers DIR] [--chromium BIN] [--rows LIST]`

mod browser;
mod command;
mod concurrency;
mod curve;
mod dispatch;
mod documents;
mod load;
mod memory;
mod oneshot;
mod read_file;
mod reload;
mod report;
mod search;
mod serve;
mod stats;

use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "usage: toolshed-bench --plugins DIR --fixtures DIR --toolshed BIN --out DIR [--corpus DIR --tools DIR] [--peers DIR] [--chromium BIN] [--rows 1,4,5]

  --plugins DIR    the shipped plugins (target/plugins)
  --fixtures DIR   the fixture plugins, for libfixture_tools (target/fixtures)
  --toolshed BIN   the release `toolshed` binary, for the peak-memory row
  --out DIR        where the bench's files and latest.json go (target/bench)
  --corpus DIR     the vendored corpus rows 2 and 3 search and walk (target/bench-corpus)
  --tools DIR      where current `rg` and `fd` are installed, for rows 2, 3 and 11 (target/bench-tools/bin)
  --peers DIR      the npm prefix holding the pinned server-filesystem, for row 12 (target/test-peers/node)
  --chromium BIN   the headless Chromium browser_action drives, for row 13 (/usr/bin/chromium)
  --rows LIST      only these rows of the issue (for profiling one); latest.json is then not written";

/// The command line.
struct Args {
    plugins: PathBuf,
    fixtures: PathBuf,
    toolshed: PathBuf,
    out: PathBuf,
    /// The corpus and the reference tools of rows 2 and 3; those rows are skipped without them.
    corpus: Option<PathBuf>,
    tools: Option<PathBuf>,
    /// The npm prefix of the pinned MCP servers, for row 12; skipped without it.
    peers: Option<PathBuf>,
    /// The Chromium row 13 runs on both sides; skipped without it.
    chromium: Option<PathBuf>,
    /// The row numbers to run; all when absent.
    rows: Option<Vec<u32>>,
}

fn parse(args: &[String]) -> Result<Args> {
    let value = |flag: &str| -> Result<PathBuf> {
        let at = args.iter().position(|a| a == flag).with_context(|| format!("{flag} is missing\n\n{USAGE}"))?;
        args.get(at + 1).map(PathBuf::from).with_context(|| format!("{flag} needs a value\n\n{USAGE}"))
    };
    let rows = match args.iter().position(|a| a == "--rows") {
        Some(at) => {
            let list = args.get(at + 1).with_context(|| format!("--rows needs a value\n\n{USAGE}"))?;
            let parse_row = |n: &str| n.trim().parse().with_context(|| format!("bad row {n:?}"));
            Some(list.split(',').map(parse_row).collect::<Result<_>>()?)
        }
        None => None,
    };
    Ok(Args {
        plugins: value("--plugins")?,
        fixtures: value("--fixtures")?,
        toolshed: value("--toolshed")?,
        out: value("--out")?,
        corpus: value("--corpus").ok(),
        tools: value("--tools").ok(),
        peers: value("--peers").ok(),
        chromium: value("--chromium").ok(),
        rows,
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    match parse(&args).and_then(|args| run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("toolshed-bench: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<()> {
    let started = Instant::now();
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let out = args.out.canonicalize()?;
    let fixture =
        args.fixtures.join(format!("{}fixture_tools{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX));
    if !fixture.is_file() {
        bail!("{} not found: build it with `cargo xtask plugins --release`", fixture.display());
    }
    // The dispatch rows' workspace: an empty directory, since the no-op tools touch no files.
    let workspace = out.join("workspace");
    std::fs::create_dir_all(&workspace)?;
    // Children (parser jobs, out-of-process plugins) run the release `toolshed` binary given.
    // Absolute: children are started from another directory.
    toolshed::isolate::set_executable(
        args.toolshed.canonicalize().with_context(|| format!("the toolshed binary {}", args.toolshed.display()))?,
    );
    let mut info = report::RunInfo::collect(&std::env::current_dir()?);
    if let Some(tools) = &args.tools {
        info.tools.push(("rg", report::version(&tools.join("rg"))));
        info.tools.push(("fd", report::version(&tools.join("fd"))));
    }
    if let Some(chromium) = &args.chromium {
        info.tools.push(("chromium", report::version(chromium)));
    }

    let wanted = |row: u32| args.rows.as_ref().is_none_or(|rows| rows.contains(&row));
    let mut rows = Vec::new();
    if wanted(1) {
        eprintln!("toolshed-bench: row 1, dispatch");
        rows.extend(dispatch::rows(&fixture, &workspace)?);
    }
    if wanted(2) || wanted(3) {
        match (&args.corpus, &args.tools) {
            (Some(corpus), Some(tools)) => {
                eprintln!("toolshed-bench: rows 2 and 3, search_files and walking on the vendored corpus");
                let corpus = corpus.canonicalize().with_context(|| format!("the corpus {}", corpus.display()))?;
                rows.extend(search::rows(&args.plugins, &corpus, tools)?);
            }
            _ => eprintln!("toolshed-bench: rows 2 and 3 skipped: they need --corpus and --tools"),
        }
    }
    if wanted(4) {
        eprintln!("toolshed-bench: row 4, read_file on a 50 MiB file");
        rows.extend(read_file::rows(&args.plugins, &args.toolshed, &out)?);
    }
    if wanted(5) {
        eprintln!("toolshed-bench: row 5, plugin load");
        rows.extend(load::rows(&args.plugins, &out)?);
        eprintln!("toolshed-bench: row 5r, hot reload");
        rows.push(reload::latency_row(&args.fixtures, &out)?);
    }
    if wanted(6) {
        eprintln!("toolshed-bench: row 6, concurrency");
        rows.extend(concurrency::rows(&args.plugins, &out)?);
    }
    if wanted(7) {
        eprintln!("toolshed-bench: row 7, memory");
        rows.extend(memory::rows(&args.plugins, &args.toolshed, &out)?);
        rows.push(reload::memory_row(&args.plugins, &args.toolshed, &out)?);
    }
    if wanted(9) {
        eprintln!("toolshed-bench: row 9, execute_command");
        rows.extend(command::rows(&args.plugins, &out)?);
    }
    if wanted(10) {
        eprintln!("toolshed-bench: row 10, read_file on small documents, isolated and not");
        rows.extend(documents::rows(&args.plugins, &args.toolshed, &out)?);
    }
    if wanted(11) {
        match (&args.corpus, &args.tools) {
            (Some(corpus), Some(tools)) => {
                eprintln!("toolshed-bench: row 11, `toolshed call search_files` against rg, whole processes");
                let corpus = corpus.canonicalize().with_context(|| format!("the corpus {}", corpus.display()))?;
                rows.extend(oneshot::rows(&args.toolshed, &args.plugins, &corpus, tools, &out)?);
            }
            _ => eprintln!("toolshed-bench: row 11 skipped: it needs --corpus and --tools"),
        }
    }
    if wanted(12) {
        match &args.peers {
            Some(peers) => {
                eprintln!("toolshed-bench: row 12, `toolshed serve` against server-filesystem over stdio");
                rows.extend(serve::rows(&args.toolshed, &args.plugins, peers, &out)?);
            }
            None => eprintln!("toolshed-bench: row 12 skipped: it needs --peers"),
        }
    }
    if wanted(13) {
        match &args.chromium {
            Some(chromium) => {
                eprintln!("toolshed-bench: row 13, browser_action against a bare chromiumoxide session");
                rows.extend(browser::rows(&args.plugins, chromium, &out)?);
            }
            None => eprintln!("toolshed-bench: row 13 skipped: it needs --chromium"),
        }
    }
    if wanted(14) {
        eprintln!("toolshed-bench: row 14, the cost curve from 1 to 10,000 tasks");
        rows.extend(curve::rows(&args.plugins, &fixture, &out)?);
    }

    println!(
        "Measured {} on {} at {}{}.\n",
        info.date,
        info.machine(),
        short(&info.revision),
        if info.dirty { " (with uncommitted changes)" } else { "" }
    );
    println!("{}", report::table(&rows));
    let failed = rows.iter().filter(|row| row.pass() == Some(false)).count();
    let summary = format!("{} rows, {failed} over budget, {:.0} s", rows.len(), started.elapsed().as_secs_f64());
    // A partial run must not replace the record of a whole one.
    if args.rows.is_some() {
        eprintln!("toolshed-bench: {summary}");
    } else {
        let json = report::write_json(&out, &info, &rows)?;
        eprintln!("toolshed-bench: {summary}; wrote {}", json.display());
    }
    Ok(())
}

/// A revision's usual short form.
fn short(revision: &str) -> &str {
    revision.get(..10).unwrap_or(revision)
}
