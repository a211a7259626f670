//! The shipped set, library names and crash reports.

use super::spawn::describe;
use super::*;

#[test]
fn the_shipped_set_is_the_plugins_directory() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("Cargo.toml").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    assert_eq!(found, SHIPPED, "SHIPPED lists every library of plugins/ (by its lib name, which is its directory's)");
}

#[test]
fn a_library_is_named_by_its_file_without_prefix_and_extension() {
    assert_eq!(library_name(Path::new("/p/libfixture_crash.so")), "fixture_crash");
    assert_eq!(library_name(Path::new("/p/read_file.so")), "read_file");
}

#[test]
fn crash_reports_name_the_signal_the_status_and_the_memory_limit() {
    use std::os::unix::process::ExitStatusExt;
    let limits = ProcessLimits::default();
    let segv = describe("p", Some(std::process::ExitStatus::from_raw(11)), "", &limits);
    assert_eq!(segv, "the plugin `p` crashed (SIGSEGV); its process restarts for the next call");
    let exit = describe("p", Some(std::process::ExitStatus::from_raw(3 << 8)), "bye\n\n", &limits);
    assert_eq!(exit, "the plugin `p` exited with status 3: bye; its process restarts for the next call");
    let tail = "memory allocation of 5 bytes failed\nnote: run with `RUST_BACKTRACE=1` environment variable\n";
    let oom = describe("p", Some(std::process::ExitStatus::from_raw(6)), tail, &limits);
    assert!(
        oom.starts_with("the plugin `p` ran out of memory, [plugins.process] memory_mb = 4096: memory allocation"),
        "{oom}"
    );
    let hostile = describe("p\x1b[2J", None, "\x1b]0;evil\x07", &limits);
    assert!(!hostile.contains('\x1b') && !hostile.contains('\x07'), "{hostile}");
}
