//! The tidy checks on small synthetic crates written to temp dirs.

use super::{layers, sizes, Problem};
use std::path::Path;

/// The layers of every layering test: `low` (with `low::inner` listed on its own) below `mid` below `high`.
const LAYERS: &str = r#"
[[layer]]
name = "low"
modules = ["low"]

[[layer]]
name = "mid"
modules = ["mid", "low::raised"]

[[layer]]
name = "high"
modules = ["high", "high::*"]
"#;

/// Writes `files` (path, text) under a fresh temp dir with `layers.toml`, and runs the layering check on
/// its `src/lib.rs`, returning each problem as `file:line: message` with the file relative to the dir.
fn layering(files: &[(&str, &str)]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "layers.toml", LAYERS);
    for (path, text) in files {
        write(dir.path(), path, text);
    }
    let problems = layers::check(&dir.path().join("src/lib.rs"), &dir.path().join("layers.toml")).unwrap();
    // Most trees leave some of LAYERS' entries unused; `stale_entries_fail` checks that message.
    relative(dir.path(), problems).into_iter().filter(|p| !p.contains("names no module")).collect()
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn relative(root: &Path, problems: Vec<Problem>) -> Vec<String> {
    problems
        .into_iter()
        .map(|p| format!("{}:{}: {}", p.file.strip_prefix(root).unwrap().display(), p.line, p.message))
        .collect()
}

const LIB: &str = "//! Root.\nmod high;\nmod low;\nmod mid;\npub use high::Runner;\n";
const HIGH: &str = "//! High.\npub struct Runner;\n";
const MID: &str = "//! Mid.\npub fn mid() {}\n";

fn crate_with_low(low: &str) -> Vec<String> {
    layering(&[("src/lib.rs", LIB), ("src/high.rs", HIGH), ("src/mid.rs", MID), ("src/low.rs", low)])
}

#[test]
fn downward_references_pass() {
    let high =
        "//! High.\nuse crate::low::thing;\nuse crate::mid;\npub struct Runner;\nfn f() { mid::mid(); thing() }\n";
    let problems = layering(&[
        ("src/lib.rs", LIB),
        ("src/high.rs", high),
        ("src/mid.rs", "//! Mid.\nuse super::low;\npub fn mid() { low::thing() }\n"),
        ("src/low.rs", "//! Low.\npub fn thing() {}\n"),
    ]);
    assert_eq!(problems, Vec::<String>::new());
}

#[test]
fn an_upward_use_fails_with_file_line_and_layers() {
    let problems = crate_with_low("//! Low.\n\nuse crate::high::Runner;\n");
    assert_eq!(problems, ["src/low.rs:3: module low (layer 1) imports crate::high (layer 3, above it)"]);
}

#[test]
fn an_upward_path_in_an_expression_or_a_type_fails() {
    let low = "//! Low.\nfn f() {\n    let _ = crate::mid::mid();\n}\nstruct S(Vec<crate::high::Runner>);\n";
    let problems = crate_with_low(low);
    assert_eq!(
        problems,
        [
            "src/low.rs:3: module low (layer 1) imports crate::mid (layer 2, above it)",
            "src/low.rs:5: module low (layer 1) imports crate::high (layer 3, above it)",
        ]
    );
}

#[test]
fn nested_use_groups_are_followed() {
    let problems = crate_with_low("//! Low.\nuse crate::{low as _, high::{self, Runner}};\n");
    // `high::{self, Runner}` is two references to one module on one line: reported once.
    assert_eq!(problems, ["src/low.rs:2: module low (layer 1) imports crate::high (layer 3, above it)"]);
}

#[test]
fn super_paths_resolve_to_crate_paths() {
    let problems = layering(&[
        ("src/lib.rs", "//! Root.\nmod high;\nmod low;\nmod mid;\n"),
        ("src/high.rs", HIGH),
        ("src/mid.rs", MID),
        ("src/low.rs", "//! Low.\nmod raised;\nmod inner;\n"),
        // low::inner is in low's layer; super::super reaches the root's `high`.
        ("src/low/inner.rs", "//! Inner.\nfn f() { super::super::high::Runner; }\n"),
        // low::raised sits in mid's layer, so it may use mid, but not high.
        ("src/low/raised.rs", "//! Raised.\nuse crate::mid::mid;\nuse super::super::high;\n"),
    ]);
    assert_eq!(
        problems,
        [
            "src/low/inner.rs:2: module low::inner (layer 1) imports crate::high (layer 3, above it)",
            "src/low/raised.rs:3: module low::raised (layer 2) imports crate::high (layer 3, above it)",
        ]
    );
}

#[test]
fn a_reexport_of_the_root_counts_as_its_module() {
    let problems = crate_with_low("//! Low.\nuse crate::Runner;\n");
    assert_eq!(problems, ["src/low.rs:2: module low (layer 1) imports crate::high (layer 3, above it)"]);
}

#[test]
fn paths_in_macros_count() {
    let problems = crate_with_low("//! Low.\nfn f() {\n    println!(\"{:?}\", crate::mid::mid());\n}\n");
    assert_eq!(problems, ["src/low.rs:3: module low (layer 1) imports crate::mid (layer 2, above it)"]);
}

#[test]
fn comments_and_strings_do_not_count() {
    let low = "//! Low: see crate::high::Runner.\n// use crate::high::Runner;\n/* crate::high */\n\
               /// [`crate::high::Runner`]\nfn f() -> &'static str { \"crate::high::Runner\" }\n";
    assert_eq!(crate_with_low(low), Vec::<String>::new());
}

#[test]
fn test_only_references_do_not_count() {
    let low = "//! Low.\n#[cfg(test)]\nuse crate::high::Runner;\n#[cfg(test)]\nmod tests {\n    use crate::high;\n}\n\
               #[cfg(all(test, unix))]\nfn helper() { crate::mid::mid() }\n#[cfg(test)]\nmod more;\n";
    let problems = layering(&[
        ("src/lib.rs", LIB),
        ("src/high.rs", HIGH),
        ("src/mid.rs", MID),
        ("src/low.rs", low),
        // A test-only file: neither checked nor required in the layer file.
        ("src/low/more.rs", "//! More.\nuse crate::high::Runner;\n"),
    ]);
    assert_eq!(problems, Vec::<String>::new());
}

#[test]
fn a_module_missing_from_the_layer_file_fails() {
    let problems = layering(&[
        ("src/lib.rs", "//! Root.\nmod high;\nmod low;\nmod mid;\n\nmod stray;\n"),
        ("src/high.rs", HIGH),
        ("src/mid.rs", MID),
        ("src/low.rs", "//! Low.\n"),
        ("src/stray.rs", "//! Stray.\nuse crate::high::Runner;\n"),
    ]);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("src/lib.rs:6: module stray is in no layer of "), "{problems:?}");
}

#[test]
fn path_attributes_and_mod_rs_are_followed() {
    let problems = layering(&[
        ("src/lib.rs", "//! Root.\nmod high;\n#[path = \"elsewhere/low_impl.rs\"]\nmod low;\nmod mid;\n"),
        ("src/high/mod.rs", "//! High.\npub struct Runner;\nmod part;\n"),
        ("src/high/part.rs", "//! Part.\n"),
        ("src/mid.rs", MID),
        ("src/elsewhere/low_impl.rs", "//! Low.\nmod raised;\n"),
        // A `#[path]` file keeps its children beside it.
        ("src/elsewhere/raised.rs", "//! Raised.\nuse crate::high::part;\n"),
    ]);
    assert_eq!(
        problems,
        ["src/elsewhere/raised.rs:2: module low::raised (layer 2) imports crate::high::part (layer 3, above it)"]
    );
}

#[test]
fn the_most_specific_entry_wins() {
    let layers = layers::Layers::parse(LAYERS).unwrap();
    let path = |p: &str| p.split("::").map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(layers.layer_of(&path("low")), Some(0));
    assert_eq!(layers.layer_of(&path("low::inner::deep")), Some(0));
    assert_eq!(layers.layer_of(&path("low::raised::deep")), Some(1));
    assert_eq!(layers.layer_of(&path("high::x")), Some(2));
    assert_eq!(layers.layer_of(&path("other")), None);
    assert!(layers::Layers::parse("[[layer]]\nname = \"a\"\nmodules = [\"a\", \"a\"]\n").is_err());
    assert!(layers::Layers::parse("[[layer]]\nname = \"a\"\nmodules = [\"a::*::b\"]\n").is_err());
}

/// Writes `files` under a fresh temp dir and runs the size check (limit 800) on the `.rs` files.
fn size(files: &[(&str, String)]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        write(dir.path(), path, text);
    }
    let paths: Vec<_> = files.iter().map(|(path, _)| dir.path().join(path)).collect();
    relative(dir.path(), sizes(&paths, 800).unwrap())
}

fn lines(n: usize) -> String {
    (0..n).map(|i| format!("const C{i}: u8 = 0;\n")).collect()
}

#[test]
fn a_file_of_801_lines_fails_and_800_pass() {
    let problems = size(&[("src/big.rs", lines(801)), ("src/fits.rs", lines(800))]);
    assert_eq!(problems, ["src/big.rs:1: 801 lines of non-test code (at most 800); split it by concept"]);
}

#[test]
fn test_code_does_not_count() {
    let with_tests = format!(
        "{}#[cfg(test)]\nmod tests {{\n{}}}\nstruct S;\nimpl S {{\n    #[cfg(test)]\n    fn t() {{\n{}    }}\n}}\n",
        lines(790),
        lines(500),
        lines(100)
    );
    let problems = size(&[
        ("src/lib.rs", format!("//! Root.\n#[cfg(test)]\n#[path = \"lib_tests.rs\"]\nmod tests;\n{with_tests}")),
        // Compiled only for tests: not counted however long.
        ("src/lib_tests.rs", lines(2000)),
        ("src/whole.rs", format!("#![cfg(test)]\n{}", lines(900))),
    ]);
    assert_eq!(problems, Vec::<String>::new());
}

#[test]
fn stale_entries_fail() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "layers.toml", LAYERS);
    write(dir.path(), "src/lib.rs", "//! Root.\nmod high;\nmod low;\nmod mid;\n");
    for (path, text) in [("src/high.rs", HIGH), ("src/mid.rs", MID), ("src/low.rs", "//! Low.\n")] {
        write(dir.path(), path, text);
    }
    let problems = layers::check(&dir.path().join("src/lib.rs"), &dir.path().join("layers.toml")).unwrap();
    assert_eq!(
        relative(dir.path(), problems),
        [
            "layers.toml:8: \"low::raised\" names no module of the crate; remove it or fix its path",
            "layers.toml:12: \"high::*\" names no module of the crate; remove it or fix its path",
        ]
    );
}
