//! Row 5, plugin load: every shipped plugin loaded cold by `toolshed::load_plugin` (shadow copy, hash, open,
//! version check, declarations), against `lib_header_from_path` + `init_root_module` of the same library.
//!
//! "Cold" means a file the process has never mapped: every load gets its own copy with a few unique bytes
//! appended (an ELF library still loads with trailing bytes), so neither the dynamic loader nor our
//! content-named shadow copy can reuse an earlier mapping. The reference path (`lib_header_from_path`) never
//! unloads, so the number of loads stays modest.
//!
//! Rows 5i.NN load the same libraries made immutable (`chattr +i`), which the loader maps as they are, with no
//! shadow copy; they are left out, with a line saying so, where the attribute cannot be set (no
//! CAP_LINUX_IMMUTABLE, a file system without it).

use crate::stats::{Figure, Row, Target, Unit};
use abi_stable::library::lib_header_from_path;
use abi_stable::std_types::RResult;
use anyhow::{bail, ensure, Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;
use toolshed_plugin_api::{PluginDeclaration, PluginModRef};

/// Timed loads per side and plugin, after one untimed load of each.
const LOADS: usize = 20;

/// Runs rows 5.NN (writable libraries, loaded from a shadow copy) and 5i.NN (immutable ones, loaded in place)
/// over every library in `plugins`, with the files under `work/load`.
pub fn rows(plugins: &Path, work: &Path) -> Result<Vec<Row>> {
    let mut rows = rows_of(plugins, work, false)?;
    match rows_of(plugins, work, true) {
        Ok(in_place) => rows.extend(in_place),
        Err(e) => eprintln!("toolshed-bench: rows 5i left out: {e:#}"),
    }
    Ok(rows)
}

/// Sets (`+i`) or clears (`-i`) the immutable attribute of `files`.
fn chattr(flag: &str, files: &[PathBuf]) -> Result<()> {
    let status = std::process::Command::new("chattr").arg(flag).args(files).status().context("running chattr")?;
    ensure!(status.success(), "chattr {flag} failed ({status}): the immutable attribute cannot be set here");
    Ok(())
}

fn rows_of(plugins: &Path, work: &Path, immutable: bool) -> Result<Vec<Row>> {
    let dir = work.join("load");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir)?;
    let mut libraries: Vec<PathBuf> = std::fs::read_dir(plugins)
        .with_context(|| format!("reading {}", plugins.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == std::env::consts::DLL_EXTENSION))
        .collect();
    libraries.sort();
    ensure!(!libraries.is_empty(), "no plugin libraries in {}", plugins.display());

    let mut rows = Vec::new();
    for (index, library) in libraries.iter().enumerate() {
        let stem = library.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let bytes = std::fs::read(library).with_context(|| format!("reading {}", library.display()))?;
        let copies = |side: &str| -> Result<Vec<PathBuf>> {
            (0..=LOADS)
                .map(|i| {
                    // The phase is in the name too: the reference's loads of the first phase are never closed,
                    // and the dynamic loader would hand them back for a second file of the same name.
                    let phase = if immutable { "i" } else { "c" };
                    let path = dir.join(format!("{stem}-{side}-{phase}{i}.{}", std::env::consts::DLL_EXTENSION));
                    let mut copy = bytes.clone();
                    copy.extend_from_slice(format!("\0toolshed-bench {side} {i} {}", std::process::id()).as_bytes());
                    let mut file =
                        std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
                    file.write_all(&copy)?;
                    // Written back now: the loads must not run under the writeback of the copies, which
                    // throttles the one side that writes (our shadow copy).
                    file.sync_all()?;
                    Ok(path)
                })
                .collect()
        };
        let (ours, reference) = (copies("ours")?, copies("ref")?);
        if immutable {
            chattr("+i", &ours)?;
        }
        let result = load_rounds(&ours, &reference, library);
        if immutable {
            chattr("-i", &ours)?;
        }
        let (mut ours_ns, mut reference_ns) = result?;
        let (id, how) = if immutable { ("5i", "in place (immutable, no copy)") } else { ("5", "cold") };
        rows.push(Row {
            // 5.01, 5.02, …: one row per plugin, numbered, so any number of plugins keeps the ids apart from
            // each other and from 5r (hot reload).
            id: format!("{id}.{:02}", index + 1),
            what: format!("plugin load, {how}: {stem} ({} KiB)", bytes.len() / 1024),
            unit: Unit::Nanos,
            ours: Figure::with_p99(&mut ours_ns),
            reference_name: "`lib_header_from_path` + `init_root_module`".to_owned(),
            reference: Figure::with_p99(&mut reference_ns),
            target: Target::RatioAtMost(1.5),
            higher_is_better: false,
            note: None,
        });
    }
    // Tens of copies of every plugin; the mappings outlive the names.
    std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    Ok(rows)
}

/// The timed loads of one plugin, ours and the reference's, alternating; the first of each is the check that
/// both read the same plugin, and is not timed.
fn load_rounds(ours: &[PathBuf], reference: &[PathBuf], library: &Path) -> Result<(Vec<f64>, Vec<f64>)> {
    // The first load of each side is the check that both read the same plugin, and is not timed.
    let loaded = toolshed::load_plugin(&ours[0])?;
    let (name, declaration) = reference_load(&reference[0])?;
    ensure!(
        loaded.identity.name == name && loaded.declaration == declaration,
        "{}: load_plugin and the reference read different plugins",
        library.display()
    );

    let (mut ours_ns, mut reference_ns) = (Vec::with_capacity(LOADS), Vec::with_capacity(LOADS));
    // Our loads stay open until the plugin's rounds are over, as the reference's do: the row times loading,
    // and closing a library (dlclose, then returning the allocator's free pages) is not part of it.
    let mut open = Vec::with_capacity(LOADS);
    for i in 1..=LOADS {
        // Alternate which side loads first.
        for ours_side in if i % 2 == 0 { [true, false] } else { [false, true] } {
            let start = Instant::now();
            if ours_side {
                let plugin = toolshed::load_plugin(&ours[i])?;
                ours_ns.push(start.elapsed().as_nanos() as f64);
                open.push(plugin);
            } else {
                let header = lib_header_from_path(&reference[i])?;
                header.init_root_module::<PluginModRef>()?;
                reference_ns.push(start.elapsed().as_nanos() as f64);
            }
        }
    }
    drop(open);
    Ok((ours_ns, reference_ns))
}

/// The reference load, plus what the check compares: the plugin's name and its declarations.
fn reference_load(path: &Path) -> Result<(String, PluginDeclaration)> {
    let module = lib_header_from_path(path)?.init_root_module::<PluginModRef>()?;
    let declaration = match (module.declarations())() {
        RResult::ROk(json) => serde_json::from_str(json.as_str())?,
        RResult::RErr(message) => bail!("{}: declarations failed: {message}", path.display()),
    };
    Ok((module.name().as_str().to_owned(), declaration))
}
