//! Row 7, memory: the peak resident set of the `toolshed` CLI with every shipped plugin loaded, against the
//! same binary with an empty plugin directory, so the difference is what the plugins cost (their mappings,
//! shadow copies, tool actors and worker pools) and not the binary, its allocator or its async runtime.
//!
//! `toolshed tools` loads every plugin, registers its tools, prints them and exits: its peak is the runtime at
//! rest with its plugins in. GNU time runs it, as in row 4 (`read_file::peak_memory` says why the probe must be
//! a small process). Each plugin is also measured alone, so a plugin that grows shows by name. The row's other
//! half, 7b, the peak after 50 hot reloads, is in `reload.rs`.

use crate::read_file::peak_memory;
use crate::stats::{Figure, Row, Target, Unit};
use anyhow::{ensure, Context, Result};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Untimed rounds, then interleaved measured rounds: a peak varies by a few pages from run to run.
const WARMUP: usize = 1;
const ROUNDS: usize = 5;

/// One plugin directory the CLI is run with, and its name in the table.
struct Setup {
    name: String,
    dir: PathBuf,
}

/// Runs row 7 with the release CLI `toolshed` on the shipped plugins in `plugins`, with its files under `work`.
pub fn rows(plugins: &Path, toolshed: &Path, work: &Path) -> Result<Vec<Row>> {
    let dir = work.join("memory");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty)?;
    let mut libraries: Vec<PathBuf> = std::fs::read_dir(plugins)
        .with_context(|| format!("reading {}", plugins.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == std::env::consts::DLL_EXTENSION))
        .collect();
    libraries.sort();
    ensure!(!libraries.is_empty(), "no plugin libraries in {}", plugins.display());

    // Every plugin alone in a directory of its own (a copy: the loader's shadow copy is made from it anyway).
    let mut setups = vec![Setup { name: "all".to_owned(), dir: plugins.to_path_buf() }];
    setups.push(Setup { name: "empty".to_owned(), dir: empty });
    for library in &libraries {
        let stem = library.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let name = stem.strip_prefix(std::env::consts::DLL_PREFIX).unwrap_or(&stem).to_owned();
        let alone = dir.join(format!("only-{name}"));
        std::fs::create_dir_all(&alone)?;
        let file_name = library.file_name().context("a library without a file name")?;
        std::fs::copy(library, alone.join(file_name)).with_context(|| format!("copying {}", library.display()))?;
        setups.push(Setup { name, dir: alone });
    }

    // The check before anything is measured: every setup loads what it should and nothing else. The plugins
    // of the whole directory are the union of those loaded alone, each alone loads exactly one, and the empty
    // directory loads none.
    let loaded = |setup: &Setup| -> Result<BTreeSet<String>> {
        let (listing, _) = peak_memory(toolshed, &setup.dir, &dir, &["tools"])?;
        // `toolshed tools` prints a header, then one tool a line: its name, then the plugin that serves it.
        Ok(listing.lines().skip(1).filter_map(|line| line.split_whitespace().nth(1)).map(str::to_owned).collect())
    };
    let all = loaded(&setups[0])?;
    ensure!(loaded(&setups[1])?.is_empty(), "`toolshed tools` lists tools from an empty plugin directory");
    let mut union = BTreeSet::new();
    for setup in &setups[2..] {
        let alone = loaded(setup)?;
        ensure!(alone.len() == 1, "{} alone loads the plugins {alone:?}", setup.name);
        union.extend(alone);
    }
    ensure!(all == union, "the plugin directory loads {all:?}, its plugins one by one {union:?}");
    ensure!(all.len() == libraries.len(), "{} libraries load as {} plugins", libraries.len(), all.len());

    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); setups.len()];
    for round in 0..WARMUP + ROUNDS {
        // Alternate the order, so no setup always runs right after the same other one.
        let mut order: Vec<usize> = (0..setups.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for which in order {
            let (_, peak) = peak_memory(toolshed, &setups[which].dir, &dir, &["tools"])?;
            if round >= WARMUP {
                samples[which].push(peak);
            }
        }
    }
    let figures: Vec<Figure> = samples.iter_mut().map(|runs| Figure::median(runs)).collect();
    let (with_all, bare) = (figures[0], figures[1]);
    let per_plugin = (with_all.median - bare.median) / libraries.len() as f64;
    let alone: Vec<String> = setups[2..]
        .iter()
        .zip(&figures[2..])
        .map(|(setup, figure)| format!("{} +{}", setup.name, Unit::Megabytes.show(figure.median - bare.median)))
        .collect();
    Ok(vec![Row {
        id: "7a".to_owned(),
        what: format!("memory: peak RSS of `toolshed tools` with all {} shipped plugins loaded", libraries.len()),
        unit: Unit::Megabytes,
        ours: with_all,
        reference_name: "the same binary, empty plugin directory".to_owned(),
        reference: bare,
        target: Target::Report,
        higher_is_better: false,
        note: Some(format!(
            "+{} per plugin; each alone over the empty directory: {}; median of {ROUNDS} runs",
            Unit::Megabytes.show(per_plugin),
            alone.join(", ")
        )),
    }])
}
