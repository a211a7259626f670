//! The pure core: one file's outline in Cline's format, and the directory's files to outline.

use crate::languages::{Grammar, Queries};
use std::path::{Path, PathBuf};
use tree_sitter::{Parser, QueryCursor, StreamingIterator as _};

/// Cline lists the directory's top level with `listFiles(dir, false, 200)`: files and directories count alike.
pub const LISTING_LIMIT: usize = 200;
/// Cline outlines at most this many source files.
pub const MAX_FILES: usize = 50;

/// A source file to outline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// The absolute path.
    pub path: PathBuf,
    /// The path relative to the listed directory, with `/` separators, as the outline shows it.
    pub relative: String,
    /// The grammar its extension selects.
    pub grammar: Grammar,
}

/// The directory's top-level source files in Cline's selection: the first [`LISTING_LIMIT`] entries, of those the
/// regular files whose extension Cline parses, at most [`MAX_FILES`].
///
/// Cline takes the entries in the order the filesystem gives them; we sort them by name first, so the files
/// kept at either limit are the same on every run and every machine.
pub fn source_files(dir: &Path) -> std::io::Result<Vec<SourceFile>> {
    let mut entries = std::fs::read_dir(dir)?.map(|entry| entry.map(|e| e.path())).collect::<Result<Vec<_>, _>>()?;
    entries.sort();
    entries.truncate(LISTING_LIMIT);
    Ok(entries
        .into_iter()
        .filter_map(|path| {
            // `path.extname` has no extension for a dot file such as `.ts`; neither does `Path::extension`.
            let grammar = Grammar::for_extension(path.extension()?.to_str()?)?;
            // A directory named `x.rs` would make Cline's `readFile` fail; it is skipped instead.
            if !path.is_file() {
                return None;
            }
            let relative = path.strip_prefix(dir).unwrap_or(&path).to_string_lossy().replace('\\', "/");
            Some(SourceFile { path, relative, grammar })
        })
        .take(MAX_FILES)
        .collect())
}

/// One file's outline: `|----\n`, the lines, `|----\n`; `None` when the query captured no printable line.
///
/// This is Cline's `parseFile`: the captures are sorted by start row (a stable sort, so captures on one row
/// keep tree-sitter's order); `|----` goes between two captures when the later one starts more than one row
/// after the earlier one ends; every capture whose name contains `name` prints the whole first line of its
/// node, untrimmed, after `│`, unless that line is empty. Lines are split on `\n` only, so a CRLF file's
/// lines keep their `\r`, as in Cline.
pub fn outline(source: &str, grammar: Grammar, queries: &Queries) -> Result<Option<String>, String> {
    let query = queries.get(grammar)?;
    let mut parser = Parser::new();
    parser.set_language(&grammar.language()).map_err(|e| e.to_string())?;
    // Cline catches parse failures and outlines nothing for the file.
    let Some(tree) = parser.parse(source, None) else {
        return Ok(None);
    };
    let names = query.capture_names();
    let mut captures = Vec::new();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.captures(query, tree.root_node(), source.as_bytes());
    while let Some((found, index)) = matches.next() {
        let Some(capture) = found.captures().get(*index) else {
            continue;
        };
        let printed = names.get(capture.index as usize).is_some_and(|name| name.contains("name"));
        captures.push((capture.node.start_position().row, capture.node.end_position().row, printed));
    }
    captures.sort_by_key(|&(start, _, _)| start);
    let lines: Vec<&str> = source.split('\n').collect();
    let mut out = String::new();
    let mut last_line: Option<usize> = None;
    for (start, end, printed) in captures {
        if last_line.is_some_and(|last| start > last + 1) {
            out.push_str("|----\n");
        }
        if printed {
            if let Some(line) = lines.get(start).filter(|line| !line.is_empty()) {
                out.push('│');
                out.push_str(line);
                out.push('\n');
            }
        }
        last_line = Some(end);
    }
    Ok((!out.is_empty()).then(|| format!("|----\n{out}|----\n")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn cline_verified_example() {
        let ts = "export class App {\n\n  constructor() {}\n\n  run(): void {\n  }\n}\n\nfunction helper() {\n}\n";
        assert_eq!(
            outline(ts, Grammar::TypeScript, &Queries::default()).ok().flatten().as_deref(),
            Some("|----\n│export class App {\n|----\n│  constructor() {}\n|----\n│  run(): void {\n|----\n│function helper() {\n|----\n")
        );
        let py = "class Foo:\n    def bar(self):\n        pass\n\n    def baz(self):\n        pass\n";
        assert_eq!(
            outline(py, Grammar::Python, &Queries::default()).ok().flatten().as_deref(),
            Some("|----\n│class Foo:\n│    def bar(self):\n|----\n│    def baz(self):\n|----\n")
        );
    }

    #[test]
    fn nothing_captured() {
        assert_eq!(outline("x = 1\n", Grammar::Python, &Queries::default()), Ok(None));
        assert_eq!(outline("", Grammar::Rust, &Queries::default()), Ok(None));
    }
}
