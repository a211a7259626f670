//! The pure core: one file's outline in Cline's format, and the directory's files to outline.

use crate::languages::{Grammar, Queries};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use tree_sitter::{
    ParseOptions, ParseState, Parser, QueryCursor, QueryCursorOptions, QueryCursorState, StreamingIterator as _,
};

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

/// What an outline may print. Cline prints each capture's whole first line, so one minified line holding
/// thousands of definitions was printed once per definition (a 89 KB `.js` outlined to 444 MB): the line is
/// cut, and the outline stops growing at a total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutlineLimits {
    /// The most characters of a line printed; the rest is replaced by a note of how long the line was.
    pub max_line_chars: usize,
    /// The most bytes of outline printed; after them one note line says the outline was cut.
    pub max_bytes: usize,
}

impl Default for OutlineLimits {
    fn default() -> Self {
        Self { max_line_chars: 500, max_bytes: 400 * 1024 }
    }
}

/// The note ending an outline cut at `max` bytes.
pub fn cut_note(max: usize) -> String {
    format!(
        "(outline truncated at {max} bytes: [plugins.config.list_code_definition_names] max_output_bytes; \
         use search_files or read_file to look further)"
    )
}

/// One file's outline: `|----\n`, the lines, `|----\n`; `None` when the query captured no printable line.
///
/// This is Cline's `parseFile`: the captures are sorted by start row (a stable sort, so captures on one row
/// keep tree-sitter's order); `|----` goes between two captures when the later one starts more than one row
/// after the earlier one ends; every capture whose name contains `name` prints the whole first line of its
/// node, untrimmed, after `│`, unless that line is empty. Lines are split on `\n` only, so a CRLF file's
/// lines keep their `\r`, as in Cline.
///
/// Where this differs from Cline, on purpose: a line longer than `limits.max_line_chars` characters is cut
/// there and ends in `… (line truncated: N characters)`, and once the outline holds `limits.max_bytes` the
/// captures left are dropped for a [`cut_note`] line.
pub fn outline(
    source: &str,
    grammar: Grammar,
    queries: &Queries,
    limits: OutlineLimits,
) -> Result<Option<String>, String> {
    outline_until(source, grammar, queries, limits, &|| false)
}

/// The error of an outline stopped by its call's cancellation (or the call's timeout).
pub const CANCELLED: &str = "the call was cancelled";

/// [`outline`], stopped with [`CANCELLED`] as soon as `stop` says so, checked from inside tree-sitter's parse
/// and query loops. A query on a hostile file can run for hours (an error node holding a million `(`
/// tokens: tree-sitter scans every later sibling for each one, which is quadratic), and a parser thread
/// that ignored its call's timeout would burn a core after the call was answered.
pub fn outline_until(
    source: &str,
    grammar: Grammar,
    queries: &Queries,
    limits: OutlineLimits,
    stop: &dyn Fn() -> bool,
) -> Result<Option<String>, String> {
    let query = queries.get(grammar)?;
    let mut parser = Parser::new();
    parser.set_language(&grammar.language()).map_err(|e| e.to_string())?;
    let bytes = source.as_bytes();
    let mut parse_progress = |_: &ParseState| if stop() { ControlFlow::Break(()) } else { ControlFlow::Continue(()) };
    let options = ParseOptions::new().progress_callback(&mut parse_progress);
    let tree = parser.parse_with_options(&mut |at, _| bytes.get(at..).unwrap_or_default(), None, Some(options));
    if stop() {
        return Err(CANCELLED.to_owned());
    }
    // Cline catches parse failures and outlines nothing for the file.
    let Some(tree) = tree else {
        return Ok(None);
    };
    let names = query.capture_names();
    let mut captures = Vec::new();
    let mut cursor = QueryCursor::new();
    let mut query_progress =
        |_: &QueryCursorState| if stop() { ControlFlow::Break(()) } else { ControlFlow::Continue(()) };
    let options = QueryCursorOptions::new().progress_callback(&mut query_progress);
    let mut matches = cursor.captures_with_options(query, tree.root_node(), bytes, options);
    while let Some((found, index)) = matches.next() {
        let Some(capture) = found.captures().get(*index) else {
            continue;
        };
        let printed = names.get(capture.index as usize).is_some_and(|name| name.contains("name"));
        captures.push((capture.node.start_position().row, capture.node.end_position().row, printed));
    }
    // A halted query ends like a finished one: only the flag tells them apart.
    if stop() {
        return Err(CANCELLED.to_owned());
    }
    captures.sort_by_key(|&(start, _, _)| start);
    let lines: Vec<&str> = source.split('\n').collect();
    let mut out = String::new();
    let mut last_line: Option<usize> = None;
    for (start, end, printed) in captures {
        if out.len() >= limits.max_bytes {
            out.push('│');
            out.push_str(&cut_note(limits.max_bytes));
            out.push('\n');
            break;
        }
        if last_line.is_some_and(|last| start > last + 1) {
            out.push_str("|----\n");
        }
        if printed && let Some(line) = lines.get(start).filter(|line| !line.is_empty()) {
            out.push('│');
            push_line(&mut out, line, limits.max_line_chars);
            out.push('\n');
        }
        last_line = Some(end);
    }
    Ok((!out.is_empty()).then(|| format!("|----\n{out}|----\n")))
}

/// Appends `line`, cut after `max_chars` characters with a note of its length (a `\r` ending is kept).
fn push_line(out: &mut String, line: &str, max_chars: usize) {
    match line.char_indices().nth(max_chars) {
        None => out.push_str(line),
        Some((end, _)) => {
            out.push_str(&line[..end]);
            let total = max_chars + line[end..].chars().count();
            out.push_str(&format!("… (line truncated: {total} characters)"));
            if line.ends_with('\r') {
                out.push('\r');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn cline_verified_example() {
        let ts = "export class App {\n\n  constructor() {}\n\n  run(): void {\n  }\n}\n\nfunction helper() {\n}\n";
        assert_eq!(
            outline(ts, Grammar::TypeScript, &Queries::default(), OutlineLimits::default()).ok().flatten().as_deref(),
            Some("|----\n│export class App {\n|----\n│  constructor() {}\n|----\n│  run(): void {\n|----\n│function helper() {\n|----\n")
        );
        let py = "class Foo:\n    def bar(self):\n        pass\n\n    def baz(self):\n        pass\n";
        assert_eq!(
            outline(py, Grammar::Python, &Queries::default(), OutlineLimits::default()).ok().flatten().as_deref(),
            Some("|----\n│class Foo:\n│    def bar(self):\n|----\n│    def baz(self):\n|----\n")
        );
    }

    #[test]
    fn nothing_captured() {
        let limits = OutlineLimits::default();
        assert_eq!(outline("x = 1\n", Grammar::Python, &Queries::default(), limits), Ok(None));
        assert_eq!(outline("", Grammar::Rust, &Queries::default(), limits), Ok(None));
    }

    /// One minified line of `count` definitions in `grammar`'s syntax.
    fn minified(grammar: Grammar, count: usize) -> String {
        let one = |n: usize| match grammar {
            Grammar::JavaScript | Grammar::TypeScript | Grammar::Tsx => format!("function f{n}(a){{return a}}"),
            Grammar::Python => format!("class C{n}: pass;"),
            Grammar::Rust => format!("fn f{n}(a:u8)->u8{{a}}"),
            Grammar::Go => format!("func F{n}(a int)int{{return a}};"),
            Grammar::C | Grammar::Cpp => format!("int f{n}(int a){{return a;}}"),
            Grammar::CSharp | Grammar::Java => format!("class C{n}{{int f(int a){{return a;}}}}"),
            Grammar::Ruby => format!("def f{n}(a);a;end;"),
            Grammar::Php => format!("function f{n}($a){{return $a;}}"),
            Grammar::Swift => format!("func f{n}(a:Int)->Int{{return a}};"),
            Grammar::Kotlin => format!("fun f{n}(a:Int):Int{{return a}};"),
        };
        let body: String = (0..count).map(one).collect();
        match grammar {
            Grammar::Go => format!("package p;{body}\n"),
            Grammar::Php => format!("<?php {body}\n"),
            _ => format!("{body}\n"),
        }
    }

    #[test]
    fn minified_lines_are_cut_in_every_grammar() {
        let queries = Queries::default();
        let limits = OutlineLimits { max_line_chars: 40, max_bytes: 10_000 };
        for grammar in crate::languages::ALL {
            // 5,000 definitions on one line printed 444 MB for an 89 KB file.
            let source = minified(grammar, 5000);
            let text = outline(&source, grammar, &queries, limits).unwrap().unwrap_or_default();
            assert!(text.len() < 10_000 + 1000, "{grammar:?}: {}", text.len());
            let printed: Vec<&str> = text.lines().filter(|line| line.starts_with('│')).collect();
            assert!(!printed.is_empty(), "{grammar:?}: {text}");
            for line in &printed[..printed.len() - 1] {
                assert!(line.chars().count() <= 1 + 40 + 40, "{grammar:?}: {line}");
                assert!(line.ends_with(&format!("… (line truncated: {} characters)", source.len() - 1)), "{line}");
            }
            assert_eq!(printed.last().copied(), Some(format!("│{}", cut_note(10_000)).as_str()), "{grammar:?}");
        }
    }

    /// `(` × 5000 in JavaScript: one error node of anonymous tokens, the quadratic case of tree-sitter's query
    /// (a megabyte of them ran for hours).
    fn open_parens() -> String {
        "(".repeat(5000)
    }

    #[test]
    fn a_cancelled_call_stops_inside_the_parse_and_inside_the_query() {
        let (queries, limits) = (Queries::default(), OutlineLimits::default());
        let source = open_parens();
        let asked = std::cell::Cell::new(0usize);
        let never = || {
            asked.set(asked.get() + 1);
            false
        };
        // How often tree-sitter asks in all, and while parsing alone, when nothing stops it.
        assert!(outline_until(&source, Grammar::JavaScript, &queries, limits, &never).is_ok());
        let total = asked.get();
        asked.set(0);
        let mut parser = Parser::new();
        parser.set_language(&Grammar::JavaScript.language()).unwrap();
        let mut progress = |_: &ParseState| if never() { ControlFlow::Break(()) } else { ControlFlow::Continue(()) };
        let bytes = source.as_bytes();
        let options = ParseOptions::new().progress_callback(&mut progress);
        assert!(parser
            .parse_with_options(&mut |at, _| bytes.get(at..).unwrap_or_default(), None, Some(options))
            .is_some());
        let parse_asks = asked.get();
        // The query asks too, past the parse's questions and the check after it.
        assert!(total > parse_asks + 2, "parse {parse_asks}, in all {total}");
        // Stopped at once, in the parse, and in the query: each ends the outline within a question or two.
        for stop_after in [0, parse_asks / 2, parse_asks + 2] {
            asked.set(0);
            let stop = || {
                asked.set(asked.get() + 1);
                asked.get() > stop_after
            };
            assert_eq!(
                outline_until(&source, Grammar::JavaScript, &queries, limits, &stop),
                Err(CANCELLED.to_owned()),
                "stopped after {stop_after} questions"
            );
            assert!(asked.get() <= stop_after + 3, "{} questions", asked.get());
        }
    }

    #[test]
    fn lines_within_the_limit_are_whole() {
        let mut out = String::new();
        push_line(&mut out, "ééé", 3);
        assert_eq!(out, "ééé");
        push_line(&mut out, "\nabcd\r", 3);
        assert_eq!(out, "ééé\nab… (line truncated: 6 characters)\r");
    }
}
