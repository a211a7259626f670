//! Row 12: `toolshed serve` against `@modelcontextprotocol/server-filesystem` (pinned, from the test peers),
//! both over stdio, driven by one client (rmcp's) through the same sequence of calls on the same generated
//! tree: reads, directory listings and searches, in calls per second, side by side.
//!
//! The two servers' tools are not the same work, and each row says so: server-filesystem's read_text_file
//! returns the file's text, ours adds line numbers (and Cline's notices); list_directory and list_files
//! both list one directory's entries; server-filesystem's search_files matches a glob against the paths of
//! the tree, ours runs a regex over the files' contents (ripgrep's engine) and prints matches with context.
//! Inputs rotate, so no call repeats the one before it (Cline's loop detection would answer a repeat).

use crate::stats::{Figure, Row, Target, Unit};
use anyhow::{ensure, Context, Result};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::ServiceExt as _;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Instant;

/// Untimed rounds, then timed rounds in alternating order, of `CALLS` sequential calls per server.
const WARMUP: usize = 2;
const ROUNDS: usize = 11;
const CALLS: usize = 50;
/// Source files in the tree, read in turn.
const FILES: usize = 40;

type Client = RunningService<RoleClient, ()>;

/// One kind of call on both servers: the tool and inputs of each, rotated per call.
struct Op {
    id: &'static str,
    what: &'static str,
    ours: (&'static str, Vec<Value>),
    theirs: (&'static str, Vec<Value>),
    note: &'static str,
}

/// Runs row 12 with the release `toolshed`, the shipped plugins and the npm peers' prefix `node`.
pub fn rows(toolshed: &Path, plugins: &Path, node: &Path, out: &Path) -> Result<Vec<Row>> {
    let entry = node.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    ensure!(entry.is_file(), "{} not found: `cargo xtask bench` installs the pinned npm peers", entry.display());
    let tree = out.join("serve-tree");
    make_tree(&tree)?;
    let tree = tree.canonicalize()?;
    let home = out.join("serve-home");
    std::fs::create_dir_all(&home)?;
    let abs = |rel: &str| tree.join(rel).to_string_lossy().into_owned();
    let files: Vec<String> = (0..FILES).map(|i| format!("src/m{i:02}.rs")).collect();
    let ops = [
        Op {
            id: "12a",
            what: "read",
            ours: ("read_file", files.iter().map(|f| json!({ "path": f })).collect()),
            theirs: ("read_text_file", files.iter().map(|f| json!({ "path": abs(f) })).collect()),
            note: "a 6 KB source file, in turn over 40; read_text_file returns the text, read_file numbers its lines",
        },
        Op {
            id: "12b",
            what: "list",
            ours: ("list_files", [".", "src", "docs"].map(|d| json!({ "path": d })).to_vec()),
            theirs: ("list_directory", [".", "src", "docs"].map(|d| json!({ "path": abs(d) })).to_vec()),
            note: "one directory's entries (2, 40, 10), not recursive, on both",
        },
        Op {
            id: "12c",
            what: "search",
            ours: ("search_files", ["item_1_", "item_2_", "item_3_"].map(|r| json!({ "path": ".", "regex": r })).to_vec()),
            theirs: (
                "search_files",
                ["**/m0*.rs", "**/m1*.rs", "**/*.md"].map(|p| json!({ "path": abs("."), "pattern": p })).to_vec(),
            ),
            note: "ours: a regex over the 50 files' contents, 120 matches with context; server-filesystem's: a glob over the tree's paths",
        },
    ];

    let driver = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    driver.block_on(async {
        let mut ours_cmd = tokio::process::Command::new(toolshed);
        ours_cmd.arg("--plugins").arg(plugins).arg("--cwd").arg(&tree).arg("serve").env("HOME", &home);
        let ours = connect(ours_cmd).await.context("starting toolshed serve")?;
        let mut theirs_cmd = tokio::process::Command::new("node");
        theirs_cmd.arg(&entry).arg(&tree).env("HOME", &home);
        let theirs = connect(theirs_cmd).await.context("starting server-filesystem")?;
        check(&ours, &theirs, &ops, &tree).await?;
        let mut rows = Vec::new();
        for op in &ops {
            let (mut ours_rates, mut theirs_rates) = (Vec::new(), Vec::new());
            for round in 0..WARMUP + ROUNDS {
                let order = if round % 2 == 0 { [true, false] } else { [false, true] };
                for ours_side in order {
                    let (client, (tool, inputs)) = if ours_side { (&ours, &op.ours) } else { (&theirs, &op.theirs) };
                    let rate = rate(client, tool, inputs).await?;
                    if round >= WARMUP {
                        if ours_side { &mut ours_rates } else { &mut theirs_rates }.push(rate);
                    }
                }
            }
            rows.push(Row {
                id: op.id.to_owned(),
                what: format!("`toolshed serve` over stdio: {} (`{}`)", op.what, op.ours.0),
                unit: Unit::PerSecond,
                ours: Figure::median(&mut ours_rates),
                reference_name: format!("server-filesystem `{}`", op.theirs.0),
                reference: Figure::median(&mut theirs_rates),
                // Ours at least 1.5× the reference's calls/s: its cost at most 1/1.5 of ours.
                target: Target::RatioAtMost(0.66),
                higher_is_better: true,
                note: Some(format!("{}; one rmcp client, {CALLS} sequential calls a round", op.note)),
            });
        }
        let _ = ours.cancel().await;
        let _ = theirs.cancel().await;
        Ok(rows)
    })
}

async fn connect(mut command: tokio::process::Command) -> Result<Client> {
    command.kill_on_drop(true);
    let (transport, _) =
        rmcp::transport::TokioChildProcess::builder(command).stderr(std::process::Stdio::null()).spawn()?;
    Ok(().serve(transport).await?)
}

/// One call; its text, failing on an error result.
async fn call(client: &Client, tool: &'static str, input: &Value) -> Result<String> {
    let arguments = input.as_object().cloned().unwrap_or_default();
    let result = client.call_tool(CallToolRequestParams::new(tool).with_arguments(arguments)).await?;
    let result = serde_json::to_value(result)?;
    let text = result["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    ensure!(result["isError"] != json!(true), "{tool} {input} failed: {text}");
    Ok(text)
}

/// `CALLS` sequential calls rotating over `inputs`: calls per second.
async fn rate(client: &Client, tool: &'static str, inputs: &[Value]) -> Result<f64> {
    let start = Instant::now();
    for i in 0..CALLS {
        call(client, tool, &inputs[i % inputs.len()]).await?;
    }
    Ok(CALLS as f64 / start.elapsed().as_secs_f64())
}

/// Checks, before anything is timed, that both servers answer each op about the same files.
async fn check(ours: &Client, theirs: &Client, ops: &[Op], tree: &Path) -> Result<()> {
    let first = std::fs::read_to_string(tree.join("src/m00.rs"))?;
    let read = &ops[0];
    let (a, b) =
        (call(ours, read.ours.0, &read.ours.1[0]).await?, call(theirs, read.theirs.0, &read.theirs.1[0]).await?);
    ensure!(b == first, "read_text_file did not return the file");
    let numbered: String = a.lines().skip_while(|l| !l.starts_with("1 | ")).take(3).collect::<Vec<_>>().join("\n");
    let expected: String =
        first.lines().take(3).enumerate().map(|(i, l)| format!("{} | {l}", i + 1)).collect::<Vec<_>>().join("\n");
    ensure!(numbered == expected, "read_file answered {a:?}");
    let list = &ops[1];
    let (a, b) =
        (call(ours, list.ours.0, &list.ours.1[1]).await?, call(theirs, list.theirs.0, &list.theirs.1[1]).await?);
    for i in 0..FILES {
        let name = format!("m{i:02}.rs");
        ensure!(a.contains(&name) && b.contains(&name), "the listings of src/ differ about {name}: {a:?} / {b:?}");
    }
    let search = &ops[2];
    let (a, b) = (
        call(ours, search.ours.0, &search.ours.1[0]).await?,
        call(theirs, search.theirs.0, &search.theirs.1[0]).await?,
    );
    ensure!(a.starts_with("Found 120 results."), "search_files answered {}", a.lines().next().unwrap_or_default());
    ensure!(b.lines().count() == 10, "server-filesystem's search_files answered {b:?}");
    Ok(())
}

/// The tree both servers serve: 40 Rust files of 120 lines (about 6 KB), 10 Markdown files, written once.
fn make_tree(tree: &Path) -> Result<()> {
    std::fs::create_dir_all(tree.join("src"))?;
    std::fs::create_dir_all(tree.join("docs"))?;
    for i in 0..FILES {
        let mut text = String::new();
        for j in 0..120 {
            // `item_1_` matches the 120 functions of m01 alone (m10–m19's are `item_10_`…).
            text.push_str(&format!("pub fn item_{i}_{j}(x: u32) -> u32 {{ x.wrapping_mul({j}) ^ {i} }}\n"));
        }
        std::fs::write(tree.join(format!("src/m{i:02}.rs")), text)?;
    }
    for i in 0..10 {
        std::fs::write(tree.join(format!("docs/d{i}.md")), format!("# Doc {i}\n\nSome text about item {i}.\n"))?;
    }
    Ok(())
}
