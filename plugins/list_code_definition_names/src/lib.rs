//! Cline's `list_code_definition_names` tool as a Toolshed plugin: the definitions (classes, functions, methods,
//! …) in the source files at the top level of a directory, found with tree-sitter, in Cline's outline format.
//!
//! [`outline::source_files`] picks the files as Cline does (the first 200 entries, the source files among them,
//! at most 50), the host's `path.check` drops the ones `.clineignore` blocks, and [`outline::outline`] parses
//! each file and renders its captures; files are parsed in parallel on scoped threads, one parser each, and the
//! blocks are joined in file order.
//!
//! Every file is read through the host's confirmed open ([`HostClient::read_confirmed`]): a link that leads
//! outside the workspace is skipped with a note unless the call was approved to read outside it, and so is a
//! file larger than [`MAX_FILE_BYTES`] (Cline reads and parses files of any size; a cloned repository's 1 GB
//! `.py` would take more than that in memory and minutes of parsing).
//!
//! Where this differs from Cline, on purpose: the directory's entries are taken in name order rather than the
//! filesystem's, so the files kept at the limits are the same everywhere; Kotlin is outlined (Cline's Kotlin
//! query does not compile); a directory named like a source file is skipped instead of failing the call; and
//! files over the size cap, or whose links lead where the call may not read, are skipped with a note; a
//! printed line is cut after `max_line_chars` characters (500) with a note of its length, and the answer
//! stops at `max_output_bytes` (400 KB) with a note naming the key, where Cline printed a minified file's one
//! line once per definition in it.
//!
//! ```
//! use toolshed_plugin_api::Tool;
//!
//! let declaration = list_code_definition_names::ListCodeDefinitionNames::declaration();
//! assert_eq!(declaration.name, "list_code_definition_names");
//! ```
#![deny(missing_docs)]

mod languages;
mod outline;

use outline::SourceFile;
use serde::Deserialize;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use toolshed_plugin_api::sdk::{lenient_string, ReadError};
use toolshed_plugin_api::{
    capability, result, Failure, HostClient, Outcome, ParamSpec, Prepared, Risk, Tool, ToolCall, ToolDeclaration,
    ToolInit, ToolSpec,
};

pub use languages::{Grammar, Queries};
pub use outline::{outline, OutlineLimits};

/// Cline's description, the same for every model family.
const DESCRIPTION: &str = "Request to list definition names (classes, functions, methods, etc.) used in source code files at the top level of the specified directory. This tool provides insights into the codebase structure and important constructs, encapsulating high-level concepts and relationships that are crucial for understanding the overall architecture.";
const PATH_DESCRIPTION: &str = "The path of a directory (not a file) relative to the current working directory {{CWD}}{{MULTI_ROOT_HINT}}. Lists definitions across all source files in that directory. To inspect a single file, use read_file instead.";

/// Cline's texts for the two paths that are not directories.
const NOT_A_DIRECTORY: &str = "The provided path is a file, not a directory. To view this file use read_file instead, or pass the parent directory to list_code_definition_names.";
const NO_DIRECTORY: &str = "This directory does not exist or you do not have permission to access it.";
const NOTHING_FOUND: &str = "No source code definitions found.";

/// The largest file outlined, unless the plugin's config sets `max_file_bytes`. Hand-written source files
/// are far smaller; larger ones are generated or minified code, whose outline is empty or a wall of text,
/// and tree-sitter's tree takes several times the file's size in memory (50 files are parsed per call).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The plugin's configuration (`[plugins.config.list_code_definition_names]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The largest file outlined, in bytes.
    #[serde(default = "default_max_file_bytes")]
    max_file_bytes: u64,
    /// The most characters of a definition's line printed.
    #[serde(default = "default_max_line_chars")]
    max_line_chars: usize,
    /// The most bytes of outline the call returns, all files together.
    #[serde(default = "default_max_output_bytes")]
    max_output_bytes: usize,
    /// The most time one file's parse and query may take, in milliseconds, before it is skipped with a note.
    #[serde(default = "default_max_file_ms")]
    max_file_ms: u64,
}

fn default_max_file_ms() -> u64 {
    MAX_FILE_MS
}

/// One file's time budget. tree-sitter's query is quadratic on some hostile shapes (an error node holding
/// a million `(` tokens); a budget per file keeps one such file from taking the whole call's timeout.
const MAX_FILE_MS: u64 = 5_000;

fn default_max_line_chars() -> usize {
    OutlineLimits::default().max_line_chars
}

fn default_max_output_bytes() -> usize {
    OutlineLimits::default().max_bytes
}

fn default_max_file_bytes() -> u64 {
    MAX_FILE_BYTES
}

/// The input of `list_code_definition_names`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ListCodeDefinitionNamesArgs {
    /// The directory, as the model wrote it.
    #[serde(default, deserialize_with = "lenient_string")]
    path: Option<String>,
}

impl ListCodeDefinitionNamesArgs {
    /// The path, unless it is missing or blank.
    fn path(&self) -> Option<&str> {
        self.path.as_deref().filter(|path| !path.trim().is_empty())
    }
}

/// The `list_code_definition_names` tool: it holds the compiled queries, shared by its calls.
pub struct ListCodeDefinitionNames {
    queries: Queries,
    /// Files larger than this are skipped with a note.
    max_file_bytes: u64,
    /// How much each outline, and the whole answer, may print.
    limits: OutlineLimits,
    /// One file's time budget.
    max_file: std::time::Duration,
}

impl Tool for ListCodeDefinitionNames {
    type Args = ListCodeDefinitionNamesArgs;

    fn declaration() -> ToolDeclaration {
        let spec = |usage: bool| ToolSpec {
            id: "list_code_definition_names".to_owned(),
            name: "list_code_definition_names".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters: vec![
                ParamSpec::new("path", true, PATH_DESCRIPTION).usage(usage.then_some("Directory path here")),
                ParamSpec::task_progress(),
            ],
            context_requirements: Vec::new(),
        };
        ToolDeclaration {
            name: "list_code_definition_names".to_owned(),
            aliases: Vec::new(),
            capabilities: vec![capability::READ_ONLY.to_owned(), capability::BULK.to_owned()],
            display: Some("[{tool} for '{path}']".to_owned()),
            // Cline's variants: the XML-prompt one with a usage example, and the native ones without.
            specs: [
                ("generic".to_owned(), spec(true)),
                ("gpt-5-native".to_owned(), spec(false)),
                ("native-next-gen".to_owned(), spec(false)),
            ]
            .into_iter()
            .collect(),
            checks_parameters: true,
            param_aliases: Default::default(),
        }
    }

    fn new(init: &ToolInit<'_>) -> Result<Option<Self>, String> {
        let config: Config = serde_json::from_str(if init.config.trim().is_empty() { "{}" } else { init.config })
            .map_err(|e| format!("invalid list_code_definition_names config: {e}"))?;
        let limits = OutlineLimits { max_line_chars: config.max_line_chars, max_bytes: config.max_output_bytes };
        Ok(Some(ListCodeDefinitionNames {
            queries: Queries::default(),
            max_file_bytes: config.max_file_bytes,
            limits,
            max_file: std::time::Duration::from_millis(config.max_file_ms),
        }))
    }

    fn prepare(
        &self,
        call: &ToolCall<ListCodeDefinitionNamesArgs>,
        host: &HostClient<'_>,
    ) -> Result<Prepared, Failure> {
        // `execute` answers a missing path with Cline's missing-parameter text.
        let Some(path) = call.input.path() else {
            return Ok(Prepared::Proceed);
        };
        // Cline makes no `.clineignore` check on the directory itself; the files inside it are filtered.
        Ok(match host.resolve_path(path) {
            Ok(resolved) => result::approval(
                "read",
                format!(
                    "Cline wants to view source code definition names used in this directory: {}",
                    resolved.display
                ),
                vec![resolved.absolute],
                Risk::Low,
            ),
            Err(e) => result::refuse(format!("Error listing code definitions: {}", e.message)),
        })
    }

    fn execute(&self, call: &ToolCall<ListCodeDefinitionNamesArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let Some(path) = call.input.path() else {
            return Ok(result::missing_parameter("path"));
        };
        let resolved = match host.resolve_path(path) {
            Ok(resolved) => resolved,
            Err(e) => return Ok(result::mistake(format!("Error listing code definitions: {}", e.message))),
        };
        let dir = Path::new(&resolved.absolute);
        if !dir.is_dir() {
            return Ok(result::mistake(if dir.exists() { NOT_A_DIRECTORY } else { NO_DIRECTORY }));
        }
        // The approval named this directory. For one inside the workspace that was nothing outside it (a
        // read there needs nobody), so a file linking out is refused even when every call is approved.
        let reads = Reads {
            approved_outside: call.approved && !resolved.inside_workspace,
            max_file_bytes: self.max_file_bytes,
            limits: self.limits,
            max_file: self.max_file,
        };
        Ok(match list_definitions(dir, host, &self.queries, &reads) {
            Ok(text) => result::text(text),
            Err(message) => result::mistake(format!("Error listing code definitions: {message}")),
        })
    }
}

/// How a call may read its files.
struct Reads {
    /// The call was approved to read outside the workspace.
    approved_outside: bool,
    /// Larger files are skipped with a note.
    max_file_bytes: u64,
    /// What the outlines may print.
    limits: OutlineLimits,
    /// One file's time budget.
    max_file: std::time::Duration,
}

/// What became of one file.
#[derive(Debug, Clone)]
enum FileOutline {
    /// Its outline.
    Outline(String),
    /// Nothing captured.
    Empty,
    /// Not read: why, for the model.
    Skipped(String),
}

/// The whole answer for a directory: each outlined file's block in file order, or Cline's "nothing found".
fn list_definitions(dir: &Path, host: &HostClient<'_>, queries: &Queries, reads: &Reads) -> Result<String, String> {
    let files = outline::source_files(dir).map_err(|e| e.to_string())?;
    let files = if files.is_empty() {
        files
    } else {
        let allowed = host
            .paths_allowed(files.iter().map(|file| file.path.to_string_lossy().into_owned()).collect())
            .map_err(|e| e.message)?;
        files.into_iter().zip(allowed).filter_map(|(file, allowed)| allowed.then_some(file)).collect()
    };
    let read = |file: &SourceFile| -> Result<Result<Vec<u8>, String>, String> {
        let path = file.path.to_string_lossy();
        match host.read_confirmed(&path, reads.approved_outside, reads.max_file_bytes) {
            Ok(bytes) => Ok(Ok(bytes)),
            // Cline's `readFile` throws, and the call fails with it.
            Err(ReadError::Io(e)) => Err(format!("{path}: {e}")),
            Err(e @ ReadError::TooLarge { .. }) => Ok(Err(format!(
                "{} Use search_files, or read_file with a line range, to look inside it.",
                e.describe(&file.relative)
            ))),
            Err(e) => Ok(Err(e.describe(&file.relative))),
        }
    };
    let outlines = outline_all(&files, queries, (reads.limits, reads.max_file), &read, &|| host.is_cancelled())?;
    let mut text = String::new();
    for (file, outline) in files.iter().zip(outlines) {
        // Each outline is bounded; so is the answer they make together.
        if text.len() >= reads.limits.max_bytes {
            text.push_str(&outline::cut_note(reads.limits.max_bytes));
            text.push('\n');
            break;
        }
        match outline {
            FileOutline::Outline(outline) => {
                text.push_str(&file.relative);
                text.push('\n');
                text.push_str(&outline);
                text.push('\n');
            }
            FileOutline::Skipped(why) => {
                text.push_str(&file.relative);
                text.push_str(&format!("\n(skipped: {why})\n"));
            }
            FileOutline::Empty => {}
        }
    }
    Ok(if text.is_empty() { NOTHING_FOUND.to_owned() } else { text })
}

/// One file's fate, or the error that ends the call.
type FileAnswer = Result<FileOutline, String>;

/// A file's bytes; the inner error is a note for a skipped file, the outer one ends the call.
type ReadFn<'a> = dyn Fn(&SourceFile) -> Result<Result<Vec<u8>, String>, String> + Sync + 'a;

/// Outlines every file, in parallel on at most as many scoped threads as there are cores, and returns the
/// outlines in the files' order. The first error (an unreadable file, a cancelled call) is the answer, as an
/// exception is in Cline.
fn outline_all(
    files: &[SourceFile],
    queries: &Queries,
    (limits, max_file): (OutlineLimits, std::time::Duration),
    read: &ReadFn<'_>,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<Vec<FileOutline>, String> {
    let outline_one = |file: &SourceFile| -> FileAnswer {
        if cancelled() {
            return Err(outline::CANCELLED.to_owned());
        }
        let bytes = match read(file)? {
            Ok(bytes) => bytes,
            Err(why) => return Ok(FileOutline::Skipped(why)),
        };
        let started = std::time::Instant::now();
        let over = || started.elapsed() > max_file;
        let stop = || cancelled() || over();
        match outline::outline_until(&String::from_utf8_lossy(&bytes), file.grammar, queries, limits, &stop) {
            Ok(Some(outline)) => Ok(FileOutline::Outline(outline)),
            Ok(None) => Ok(FileOutline::Empty),
            Err(e) if e == outline::CANCELLED && !cancelled() && over() => Ok(FileOutline::Skipped(format!(
                "outlining it took longer than {} ms ([plugins.config.list_code_definition_names] max_file_ms)",
                max_file.as_millis()
            ))),
            Err(e) => Err(e),
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, usize::from).min(files.len());
    if threads <= 1 {
        return files.iter().map(outline_one).collect();
    }
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<FileAnswer>>> = Mutex::new(vec![None; files.len()]);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(file) = files.get(index) else {
                    break;
                };
                let answer = outline_one(file);
                if let Ok(mut results) = results.lock() {
                    results[index] = Some(answer);
                }
            });
        }
    });
    let results = results.into_inner().map_err(|_| "a parser thread failed".to_owned())?;
    results.into_iter().map(|answer| answer.unwrap_or_else(|| Err("a parser thread failed".to_owned()))).collect()
}

/// The plugin's root module, in its own module because the statics abi_stable generates carry no docs.
#[allow(missing_docs)]
mod export {
    use super::ListCodeDefinitionNames;
    use toolshed_plugin_api::export_plugin;

    export_plugin! { name: "list_code_definition_names", version: env!("CARGO_PKG_VERSION"), tools: [ListCodeDefinitionNames] }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod budget_tests {
    use super::*;

    #[test]
    fn a_file_over_its_time_budget_is_skipped_with_a_note_and_the_others_outlined() {
        // An error node of `(` tokens: tree-sitter's query over it is quadratic.
        let hostile = format!("function a() {{}}\n{}", "(".repeat(400_000));
        let files = [
            SourceFile { path: "hostile.js".into(), relative: "hostile.js".to_owned(), grammar: Grammar::JavaScript },
            SourceFile { path: "plain.js".into(), relative: "plain.js".to_owned(), grammar: Grammar::JavaScript },
        ];
        let read = |file: &SourceFile| -> Result<Result<Vec<u8>, String>, String> {
            Ok(Ok(if file.relative == "hostile.js" { hostile.clone() } else { "function b() {}\n".to_owned() }
                .into_bytes()))
        };
        // Generous for the plain file (on a loaded machine a few milliseconds can stretch far), and still a
        // small part of what the hostile one would take; its queries are compiled before the clock runs.
        let budget = std::time::Duration::from_millis(1_000);
        let queries = Queries::default();
        let limits = (OutlineLimits::default(), budget);
        outline_all(&files[1..], &queries, limits, &read, &|| false).unwrap();
        let outlines = outline_all(&files, &queries, limits, &read, &|| false).unwrap();
        match &outlines[0] {
            FileOutline::Skipped(why) => {
                assert!(why.contains("[plugins.config.list_code_definition_names] max_file_ms"), "{why}")
            }
            other => panic!("expected a skipped file, got {other:?}"),
        }
        assert!(matches!(&outlines[1], FileOutline::Outline(text) if text.contains("function b")), "{outlines:?}");
    }
}
