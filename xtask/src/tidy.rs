//! `cargo xtask tidy`: the house rules that a compiler does not check, as rust-analyzer's `xtask/src/tidy.rs`
//! keeps them. `cargo xtask test` runs it first.
//!
//! - **Layering**: `runtime/layers.toml` declares the runtime's layers once, bottom first; no module may
//!   refer to a module of a higher layer, and every module must be in a layer ([`layers`]).
//! - **Size**: no `.rs` file of the workspace's own crates has more than [`MAX_LINES`] lines of non-test
//!   code. Every line counts, blank and comment lines included (simple to state, simple to check), except
//!   the lines of `#[cfg(test)]` items; a file compiled only for tests (declared by a `#[cfg(test)] mod`)
//!   does not count at all, and neither do `tests/` directories.

mod layers;
mod modules;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;

use crate::root;
use anyhow::{bail, Result};
use modules::{children_dir, declarations, impl_item_attrs, is_test_only, item_attrs, parse, trait_item_attrs, Place};
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use syn::spanned::Spanned;
use syn::visit::Visit;

/// The most lines of non-test code one file may have.
pub const MAX_LINES: usize = 800;

/// The crates whose files the size rule covers, as directories under the root; `plugins` and
/// `plugin-libs` hold one crate per subdirectory. Directories that do not exist are skipped.
const CRATE_DIRS: [&str; 10] = [
    "runtime",
    "plugin-api",
    "plugins",
    "plugin-libs",
    "xtask",
    "bench",
    "soak",
    "fuzz-targets",
    "host-tests/src",
    "cli",
];

/// Directories never searched: integration tests, the foreign fixtures (their own workspaces, frozen), and
/// build output.
const SKIPPED_DIRS: [&str; 3] = ["tests", "fixtures-foreign", "target"];

/// One broken rule, at a place in a file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Problem {
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.strip_prefix(root()).unwrap_or(&self.file);
        write!(f, "{}:{}: {}", file.display(), self.line, self.message)
    }
}

/// Runs every check on the workspace, failing with every problem found.
pub fn run() -> Result<()> {
    let root = root();
    let runtime = root.join("runtime");
    let mut problems = layers::check(&runtime.join("src/lib.rs"), &runtime.join("layers.toml"))?;
    let layering = problems.len();
    let mut files = Vec::new();
    for dir in CRATE_DIRS {
        rust_files(&root.join(dir), &mut files)?;
    }
    problems.extend(sizes(&files, MAX_LINES)?);
    if problems.is_empty() {
        eprintln!("xtask: tidy: layering and sizes are fine ({} files)", files.len());
        return Ok(());
    }
    for problem in &problems {
        eprintln!("{problem}");
    }
    let legend = std::fs::read_to_string(runtime.join("layers.toml"))
        .ok()
        .and_then(|text| layers::Layers::parse(&text).ok())
        .map(|layers| format!(" (layers, bottom first: {})", layers.legend()))
        .unwrap_or_default();
    bail!(
        "tidy: {layering} layering problem(s){legend} and {} file(s) over {MAX_LINES} lines of non-test code; \
         move the code to the layer it belongs to, or split the file by concept",
        problems.len() - layering
    )
}

/// Every `.rs` file under `dir`, outside the skipped directories, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    entries.sort();
    for path in entries {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if path.is_dir() {
            if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name.as_str()) {
                rust_files(&path, out)?;
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The files among `files` over `limit` lines of non-test code.
pub fn sizes(files: &[PathBuf], limit: usize) -> Result<Vec<Problem>> {
    let mut parsed = Vec::new();
    for path in files {
        parsed.push((path.clone(), std::fs::read_to_string(path)?, parse(path)?));
    }
    let test_only = test_only_files(&parsed);
    let mut problems = Vec::new();
    for (path, text, syntax) in &parsed {
        if test_only.contains(path) || syntax.attrs.iter().any(is_test_only) {
            continue;
        }
        let count = non_test_lines(text, syntax);
        if count > limit {
            problems.push(Problem {
                file: path.clone(),
                line: 1,
                message: format!("{count} lines of non-test code (at most {limit}); split it by concept"),
            });
        }
    }
    Ok(problems)
}

/// The files declared by a `#[cfg(test)]` module (or inside one), and the files those declare in turn.
fn test_only_files(parsed: &[(PathBuf, String, syn::File)]) -> BTreeSet<PathBuf> {
    let mut test_only = BTreeSet::new();
    loop {
        let before = test_only.len();
        for (path, _, syntax) in parsed {
            let file_test_only = test_only.contains(path) || syntax.attrs.iter().any(is_test_only);
            let file_dir = path.parent().unwrap_or(Path::new("")).to_owned();
            let dir = children_dir(path, is_crate_root(path));
            let mut found = Vec::new();
            declarations(&syntax.items, &Place { file_dir: &file_dir, dir: &dir, top: true }, &mut found);
            for declaration in found.into_iter().filter(|d| file_test_only || d.test_only) {
                if let Some(file) = declaration.file.iter().flatten().find(|file| file.is_file()) {
                    test_only.insert(file.clone());
                }
            }
        }
        if test_only.len() == before {
            return test_only;
        }
    }
}

/// Whether a file is a crate root, whose child modules' files live beside it (as a `mod.rs`'s do).
fn is_crate_root(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let parent = path.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    matches!(name.as_str(), "lib.rs" | "main.rs" | "build.rs")
        || matches!(parent.as_str(), "bin" | "examples" | "benches")
}

/// The file's lines outside `#[cfg(test)]` items (an item's lines run from its first attribute to its end).
fn non_test_lines(text: &str, syntax: &syn::File) -> usize {
    let mut spans = TestSpans(Vec::new());
    spans.visit_file(syntax);
    let mut test_lines = BTreeSet::new();
    for (start, end) in spans.0 {
        test_lines.extend(start..=end);
    }
    text.lines().count().saturating_sub(test_lines.len())
}

/// Collects the line ranges of the `#[cfg(test)]` items of a file, at any depth.
struct TestSpans(Vec<(usize, usize)>);

impl TestSpans {
    fn take(&mut self, attrs: &[syn::Attribute], node: &dyn Spanned) -> bool {
        if attrs.iter().any(is_test_only) {
            let span = node.span();
            let start = attrs.iter().map(|a| a.span().start().line).chain([span.start().line]).min().unwrap_or(0);
            self.0.push((start, span.end().line));
            true
        } else {
            false
        }
    }
}

impl<'ast> Visit<'ast> for TestSpans {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !self.take(item_attrs(item), item) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        if !self.take(impl_item_attrs(item), item) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'ast syn::TraitItem) {
        if !self.take(trait_item_attrs(item), item) {
            syn::visit::visit_trait_item(self, item);
        }
    }
}
