//! The fuzz targets of every parser that reads model output (issue 16) or hostile content (issue 22:
//! read_file's documents, web_fetch's HTML conversion), as plain functions of the fuzzer's bytes.
//! `fuzz/fuzz_targets/*.rs` wraps each in `libfuzzer_sys::fuzz_target!` for `cargo xtask fuzz`, and
//! `tests/replay.rs` runs every saved corpus and regression input through them under `cargo test`, on the
//! stable toolchain.
//!
//! Each target asserts the parser's invariants, so a violation is a crash the fuzzer keeps: no panic, no
//! hang (the fuzzer's and the replay test's time bounds), a failed edit leaves the content unchanged, an edit
//! that changes nothing leaves the bytes as they were, streaming agrees with the whole, and parse(print(x))
//! round trips where the format allows it.
//!
//! Input layouts: text targets split their input at `0xFF` bytes (never part of UTF-8) and read each part
//! as UTF-8, lossily. The edit targets take a flags byte, a little-endian `u16` length, that many bytes of
//! the original file (raw: byte-order marks, UTF-16 and invalid UTF-8 included), then the model's text. (The
//! example is compiled, not linked and run: a doctest binary gets no link settings from `build.rs`, and the
//! plugin rlibs it links each define the same root-module symbol; `tests/replay.rs` runs every target.)
//!
//! ```no_run
//! toolshed_fuzz_targets::replace_in_file(b"\x00\x04\x00a\nb\n------- SEARCH\nb\n=======\nB\n+++++++ REPLACE\n");
//! ```

mod documents;
mod edits;
mod exec;
mod input;
mod paths;
mod stream;
mod web;

pub use documents::{docx, ipynb, pdf_text, xlsx};
pub use edits::{apply_patch, replace_in_file};
pub use exec::command_permissions_exec;
pub use input::{command_permissions, tool_input};
pub use paths::{clineignore, path_hints};
pub use stream::{partial_json, xml_tool_use};
pub use web::html_to_markdown;

/// A target: the fuzzer's bytes in, a panic on a broken invariant.
pub type Target = fn(&[u8]);

/// Every target by name, for the replay test.
pub const TARGETS: &[(&str, Target)] = &[
    ("tool_input", tool_input),
    ("replace_in_file", replace_in_file),
    ("apply_patch", apply_patch),
    ("command_permissions", command_permissions),
    ("command_permissions_exec", command_permissions_exec),
    ("clineignore", clineignore),
    ("path_hints", path_hints),
    ("partial_json", partial_json),
    ("xml_tool_use", xml_tool_use),
    ("docx", docx),
    ("xlsx", xlsx),
    ("pdf_text", pdf_text),
    ("ipynb", ipynb),
    ("html_to_markdown", html_to_markdown),
];

/// The parts of a text input, split at `0xFF` bytes, each read as UTF-8 (invalid sequences replaced).
fn parts(data: &[u8]) -> Vec<String> {
    data.split(|&b| b == 0xFF).map(|part| String::from_utf8_lossy(part).into_owned()).collect()
}

/// The edit targets' layout: flags, the original file's bytes, the model's text.
fn edit_input(data: &[u8]) -> (u8, &[u8], String) {
    let flags = data.first().copied().unwrap_or(0);
    let len = match data.get(1..3) {
        Some(&[lo, hi]) => usize::from(u16::from_le_bytes([lo, hi])),
        _ => 0,
    };
    let rest = data.get(3..).unwrap_or_default();
    let (original, text) = rest.split_at(len.min(rest.len()));
    (flags, original, String::from_utf8_lossy(text).into_owned())
}

/// Up to `max` cut points of `text` just after its line breaks, evenly spread (the whole text last).
fn line_cuts(text: &str, max: usize) -> Vec<usize> {
    let ends: Vec<usize> = text.match_indices('\n').map(|(i, _)| i + 1).collect();
    let step = ends.len().div_ceil(max.max(1)).max(1);
    let mut cuts: Vec<usize> = ends.into_iter().step_by(step).collect();
    cuts.push(text.len());
    cuts
}
