//! Replays every saved fuzz input — the seed corpora in `fuzz/corpus/<target>/` and the crashes found, in
//! `fuzz/regressions/<target>/` — through its target, on the stable toolchain. Each input runs on its own
//! thread with one generous bound, so a hang fails the test with the file's name instead of stalling it.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;
use toolshed_fuzz_targets::TARGETS;

/// Far above any input's real cost (milliseconds), for a shared machine under load.
const BOUND: Duration = Duration::from_secs(60);

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// The files of `dir`, sorted; none when it does not exist.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// Runs one input; `Err` names the file and says what went wrong.
fn replay(target: fn(&[u8]), file: &Path) -> Result<(), String> {
    let data = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let (done, finished) = mpsc::channel();
    std::thread::Builder::new()
        .name(file.display().to_string())
        .spawn(move || {
            let outcome = std::panic::catch_unwind(|| target(&data));
            let _ = done.send(outcome.is_ok());
        })
        .map_err(|e| format!("{}: cannot start a thread: {e}", file.display()))?;
    match finished.recv_timeout(BOUND) {
        Ok(true) => Ok(()),
        Ok(false) => Err(format!("{}: panicked (message above)", file.display())),
        Err(_) => Err(format!("{}: still running after {BOUND:?} (a hang)", file.display())),
    }
}

#[test]
fn every_saved_input_passes_its_target() {
    let root = fuzz_dir();
    let mut failures = Vec::new();
    let mut counts = Vec::new();
    for (name, target) in TARGETS {
        let corpus = inputs(&root.join("corpus").join(name));
        let regressions = inputs(&root.join("regressions").join(name));
        assert!(!corpus.is_empty(), "target {name} has no seed corpus in fuzz/corpus/{name}");
        for file in corpus.iter().chain(&regressions) {
            if let Err(failure) = replay(*target, file) {
                failures.push(failure);
            }
        }
        counts.push(format!("{name}: {} + {}", corpus.len(), regressions.len()));
    }
    eprintln!("replayed (corpus + regressions): {}", counts.join(", "));
    assert!(failures.is_empty(), "{} inputs failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn every_target_has_a_libfuzzer_entry() {
    for (name, _) in TARGETS {
        let entry = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        let text = std::fs::read_to_string(&entry).unwrap_or_default();
        assert!(text.contains(&format!("toolshed_fuzz_targets::{name}(data)")), "{} is missing", entry.display());
    }
}
