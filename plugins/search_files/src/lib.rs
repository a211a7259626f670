//! Cline's `search_files` tool as a Toolshed plugin: a regex search across a directory tree, in the exact
//! text Cline gives the model (§3 of the reference), at ripgrep's speed.
//!
//! Ripgrep's own crates do the work in-process, with no `rg` process to start: `search` walks with the
//! `ignore` crate (ripgrep's default filters) and searches with `grep-searcher` and `grep-regex`, on the
//! calling thread for small searches and on ripgrep's parallel walker for big ones, always returning the
//! first results in path order; `format` renders Cline's text. The [`SearchFiles`] handler resolves the
//! path (every workspace root when there is no `@root:` hint in a multi-root task) and asks the host about
//! `.clineignore` for the files with matches, in batches (usually one question per search).
//!
//! Where this differs from Cline, on purpose:
//! - An invalid regex or `file_pattern` is a tool error naming the problem; Cline turns any ripgrep
//!   complaint into "Found 0 results.". So is a directory that does not exist. An unreadable file inside the
//!   tree is skipped (and logged), where ripgrep's warning would again empty Cline's whole result.
//! - Context lines belong to their own match: the line before a match is shown with it, not appended to the
//!   previous match, and the first file's leading context line is not dropped.
//! - Results come in sorted-walk order (by path, then line) on every run; the 300-result cap keeps the first
//!   300 in that order, and files `.clineignore` denies never count toward it. Cline's order depends on
//!   ripgrep's threads.
//! - `file_pattern` narrows the search and nothing else. Cline passes it (default `*`) as ripgrep's `--glob`,
//!   which overrides every ignore rule, so Cline in fact searches hidden files, `.git` and gitignored trees;
//!   here `.gitignore` is respected and hidden and binary files are skipped as ripgrep does by default.
//! - Paths in the results are relative to the workspace root the search path belongs to (Cline uses the
//!   primary root for a root found by a partial hint).
//! - In a multi-root task, a root whose results reached the cap keeps its block (Cline drops it, reading its
//!   header as zero results), roots where the path does not exist are skipped, and the count of workspaces
//!   is the count searched.
//! - A search path that `.clineignore` itself blocks is refused, as list_files and read_file refuse theirs.
//!   A file given as the path is searched alone, as ripgrep searches a file argument (Cline does the same).
//! - Roots of a multi-root search are searched one after another, each with every thread (Cline starts one
//!   ripgrep per root at once).

#![deny(missing_docs)]

mod format;
mod search;

use serde::Deserialize;
use std::path::{Component, Path, PathBuf};
use toolshed_plugin_api::result::clineignore_error;
use toolshed_plugin_api::sdk::lenient_string;
use toolshed_plugin_api::{
    capability, log_level, result, Failure, HostClient, Outcome, ParamSpec, Prepared, Risk, Tool, ToolCall,
    ToolDeclaration, ToolError, ToolInit, ToolSpec, WorkspaceRoot,
};

/// Cline's description of the tool, the same for every model family.
const DESCRIPTION: &str = "Request to perform a regex search across files in a specified directory, providing context-rich results. This tool searches for patterns or specific content across multiple files, displaying each match with encapsulating context.";
const PATH_DESCRIPTION: &str = "The path of the directory to search in (relative to the current working directory {{CWD}}){{MULTI_ROOT_HINT}}. This directory will be recursively searched.";
const REGEX_DESCRIPTION: &str = "The regular expression pattern to search for. Uses Rust regex syntax.";
const FILE_PATTERN_DESCRIPTION: &str =
    "Glob pattern to filter files (e.g., '*.ts' for TypeScript files). If not provided, it will search all files (*).";
/// How many skipped files the host's log hears about one by one.
const LOGGED_SKIPS: usize = 10;

/// The input of `search_files`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SearchFilesArgs {
    /// The directory to search, as the model wrote it.
    #[serde(default, deserialize_with = "lenient_string")]
    path: Option<String>,
    /// The regex, in Rust syntax.
    #[serde(default, deserialize_with = "lenient_string")]
    regex: Option<String>,
    /// A glob that narrows the files searched.
    #[serde(default, deserialize_with = "lenient_string")]
    file_pattern: Option<String>,
}

impl SearchFilesArgs {
    /// The path, unless it is missing or blank (Cline's missing-parameter rule).
    fn path(&self) -> Option<&str> {
        self.path.as_deref().filter(|path| !path.trim().is_empty())
    }

    /// The regex, unless missing or empty (Cline's `!regex`).
    fn regex(&self) -> Option<&str> {
        self.regex.as_deref().filter(|regex| !regex.is_empty())
    }

    /// The glob, unless missing or blank (Cline's `filePattern || "*"`).
    fn file_pattern(&self) -> Option<&str> {
        self.file_pattern.as_deref().map(str::trim).filter(|glob| !glob.is_empty())
    }
}

/// The `search_files` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct SearchFiles;

/// The checked input: what a search needs beyond the paths.
struct Checked<'a> {
    path: &'a str,
    regex: &'a str,
    matcher: grep_regex::RegexMatcher,
    file_pattern: Option<&'a str>,
}

/// One place to search.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    /// The absolute directory (or file) to search.
    absolute: PathBuf,
    /// The workspace root its results are shown relative to.
    root: PathBuf,
    /// That root's name.
    root_name: String,
    /// The path as shown to the user.
    display: String,
}

/// Where a call searches.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Targets {
    /// One path (single root, a hint, or an absolute path).
    One(Target),
    /// The same relative path in every root of a multi-root task (no hint given).
    EveryRoot(Vec<Target>),
}

impl Tool for SearchFiles {
    type Args = SearchFilesArgs;

    fn declaration() -> ToolDeclaration {
        let param = |name: &str, required: bool, description: &str, usage: &str| {
            ParamSpec::new(name, required, description).usage(usage)
        };
        // Cline's three variants (generic, native GPT-5, native next-gen) share every text.
        let spec = ToolSpec {
            id: "search_files".to_owned(),
            name: "search_files".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters: vec![
                param("path", true, PATH_DESCRIPTION, "Directory path here"),
                param("regex", true, REGEX_DESCRIPTION, "Your regex pattern here"),
                param("file_pattern", false, FILE_PATTERN_DESCRIPTION, "file pattern here (optional)"),
                ParamSpec::task_progress(),
            ],
            context_requirements: Vec::new(),
        };
        ToolDeclaration {
            name: "search_files".to_owned(),
            aliases: Vec::new(),
            capabilities: vec![capability::READ_ONLY.to_owned(), capability::BULK.to_owned()],
            // Cline adds ` in '{file_pattern}'` when a pattern is given; templates have no conditional part.
            display: Some("[{tool} for '{regex}'{?file_pattern: in '{file_pattern}'}]".to_owned()),
            specs: ["generic", "gpt-5-native", "native-next-gen"]
                .into_iter()
                .map(|family| (family.to_owned(), spec.clone()))
                .collect(),
            checks_parameters: true,
            param_aliases: Default::default(),
        }
    }

    fn new(_init: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(SearchFiles))
    }

    fn prepare(&self, call: &ToolCall<SearchFilesArgs>, host: &HostClient<'_>) -> Result<Prepared, Failure> {
        let checked = check(&call.input)?;
        let targets = targets(checked.path, &call.task, host)?;
        let places: Vec<&Target> = match &targets {
            Targets::One(target) => vec![target],
            Targets::EveryRoot(all) => all.iter().collect(),
        };
        let existing = existing(&targets)?;
        let paths: Vec<String> = places.iter().map(|t| t.absolute.to_string_lossy().into_owned()).collect();
        match host.paths_allowed(paths.clone()) {
            Ok(allowed) if allowed.iter().all(|ok| *ok) && allowed.len() == paths.len() => {}
            Ok(_) => return Ok(result::refuse(clineignore_error(checked.path))),
            Err(e) => return Ok(environment_error(format!("Error resolving search path: {e}"))),
        }
        let shown = match &targets {
            Targets::One(target) => target.display.clone(),
            Targets::EveryRoot(_) => format!("{} (in every workspace root)", checked.path.trim()),
        };
        let absolute = existing.iter().map(|t| t.absolute.to_string_lossy().into_owned()).collect();
        // Cline's approval card heading, followed by the path it shows beneath it.
        let message = format!("Cline wants to search this directory for {}: {shown}", checked.regex);
        Ok(result::approval("read", message, absolute, Risk::Low))
    }

    fn execute(&self, call: &ToolCall<SearchFilesArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let checked = check(&call.input)?;
        let targets = targets(checked.path, &call.task, host)?;
        let existing = existing(&targets)?;
        let mut parts = Vec::with_capacity(existing.len());
        for target in &existing {
            parts.push(search_one(target, &checked, call.approved, host)?);
        }
        Ok(match targets {
            Targets::One(_) => {
                result::text(parts.pop().map(|part| part.text).unwrap_or_else(|| "Found 0 results.".to_owned()))
            }
            Targets::EveryRoot(_) => result::text(format::across_roots(&parts, existing.len())),
        })
    }
}

/// Every file `search_files` would search under `root` (ripgrep's default filters, symbolic links not
/// followed), found by the same parallel walker on `threads` threads, in no particular order. The bench
/// compares this walk with `rg --files` and `fd`.
pub fn walk_files(root: &Path, threads: usize) -> Vec<PathBuf> {
    search::files(root, threads)
}

/// The parameter checks both phases make: required values, and the regex and glob compiled, so that a bad
/// one is refused before anyone is asked to approve the search.
fn check(input: &SearchFilesArgs) -> Result<Checked<'_>, ToolError> {
    let Some(path) = input.path() else {
        return Err(mistake(result::missing_parameter_text("path")));
    };
    let Some(regex) = input.regex() else {
        return Err(mistake(result::missing_parameter_text("regex")));
    };
    let matcher = search::matcher(regex)
        .map_err(|e| mistake(format!("The regex '{regex}' is not valid Rust regex syntax:\n{e}")))?;
    let file_pattern = input.file_pattern();
    if let Some(glob) = file_pattern {
        // Compiled here only to be checked; each search compiles it again against its own root.
        search::file_pattern(Path::new("/"), glob)
            .map_err(|e| mistake(format!("The file_pattern '{glob}' is not a valid glob: {e}")))?;
    }
    Ok(Checked { path, regex, matcher, file_pattern })
}

/// Resolves the search path through the host. In a multi-root task a relative path without an `@root:` hint
/// means that path in every root, as in Cline.
fn targets(raw: &str, task: &toolshed_plugin_api::TaskInfo, host: &HostClient<'_>) -> Result<Targets, ToolError> {
    let raw = raw.trim();
    let roots: Vec<(String, PathBuf)> = roots(task);
    let resolve = |path: &str| {
        host.resolve_path(path)
            .map_err(|e| ToolError { message: format!("Error resolving search path: {e}"), mistake: false })
    };
    if roots.len() >= 2 && !Path::new(raw).is_absolute() && !has_hint(raw) {
        let mut all = Vec::with_capacity(roots.len());
        for (name, root) in &roots {
            let resolved = resolve(&root.join(raw).to_string_lossy())?;
            all.push(Target {
                absolute: PathBuf::from(resolved.absolute),
                root: root.clone(),
                root_name: name.clone(),
                display: resolved.display,
            });
        }
        return Ok(Targets::EveryRoot(all));
    }
    let resolved = resolve(raw)?;
    let absolute = PathBuf::from(&resolved.absolute);
    // The root it lies in (the innermost, if roots nest), else the one it was resolved against.
    let (root_name, root) = roots
        .iter()
        .filter(|(_, root)| absolute.starts_with(root))
        .max_by_key(|(_, root)| root.as_os_str().len())
        .or_else(|| roots.iter().find(|(name, _)| *name == resolved.root))
        .or_else(|| roots.first())
        .cloned()
        .unwrap_or_else(|| (resolved.root.clone(), absolute.clone()));
    Ok(Targets::One(Target { absolute, root, root_name, display: resolved.display }))
}

/// The task's roots as absolute, normalised paths (the primary first), as the host resolves them.
fn roots(task: &toolshed_plugin_api::TaskInfo) -> Vec<(String, PathBuf)> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let mut roots: Vec<(String, PathBuf)> =
        task.roots.iter().map(|WorkspaceRoot { name, path }| (name.clone(), normalize(&cwd.join(path)))).collect();
    if let Some(primary) = roots.first_mut().filter(|_| !task.cwd.is_empty()) {
        primary.1 = normalize(Path::new(&task.cwd));
    }
    if roots.is_empty() && !task.cwd.is_empty() {
        let cwd = normalize(Path::new(&task.cwd));
        roots.push((cwd.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(), cwd));
    }
    roots
}

/// Cline's `parseWorkspaceInlinePath` test: `@name:rest` with a non-blank name.
fn has_hint(raw: &str) -> bool {
    raw.strip_prefix('@').and_then(|rest| rest.split_once(':')).is_some_and(|(hint, _)| !hint.trim().is_empty())
}

/// The targets that exist. A single target must; of every root's, at least one.
fn existing(targets: &Targets) -> Result<Vec<Target>, ToolError> {
    match targets {
        Targets::One(target) => match std::fs::metadata(&target.absolute) {
            Ok(_) => Ok(vec![target.clone()]),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(mistake(format!("Error searching files: Directory not found: {}", target.absolute.display())))
            }
            Err(e) => Err(mistake(format!("Error searching files: {}: {e}", target.absolute.display()))),
        },
        Targets::EveryRoot(all) => {
            let found: Vec<Target> = all.iter().filter(|t| t.absolute.exists()).cloned().collect();
            if found.is_empty() {
                let tried: Vec<String> = all.iter().map(|t| t.absolute.display().to_string()).collect();
                return Err(mistake(format!(
                    "Error searching files: Directory not found in any workspace root: {}",
                    tried.join(", ")
                )));
            }
            Ok(found)
        }
    }
}

/// Searches one target and renders its text.
fn search_one(
    target: &Target,
    checked: &Checked<'_>,
    approved: bool,
    host: &HostClient<'_>,
) -> Result<format::RootResults, ToolError> {
    // The walk starts from the target's real location, checked now: a link on the way to it (or one swapped
    // in since `prepare` looked) cannot take a search that needed nobody's approval out of the workspace.
    // Below it the walk follows no links, so what it reads lies below this checked directory.
    let walk_root = std::fs::canonicalize(&target.absolute).unwrap_or_else(|_| target.absolute.clone());
    if walk_root != target.absolute && !approved {
        let inside = host.resolve_path(&walk_root.to_string_lossy()).map(|r| r.inside_workspace).unwrap_or(false);
        if !inside {
            return Err(ToolError {
                message: format!(
                    "Error searching files: {} leads to {}, outside the workspace, which this call was not approved to search. Search it again to be asked for approval.",
                    target.absolute.display(),
                    walk_root.display()
                ),
                mistake: false,
            });
        }
    }
    let pattern = match checked.file_pattern {
        Some(glob) => Some(
            search::file_pattern(&walk_root, glob)
                .map_err(|e| mistake(format!("The file_pattern '{glob}' is not a valid glob: {e}")))?,
        ),
        None => None,
    };
    let threads = std::thread::available_parallelism().map(std::num::NonZero::get).unwrap_or(1);
    let query = search::Query {
        root: &walk_root,
        matcher: &checked.matcher,
        file_pattern: pattern.as_ref(),
        limit: format::MAX_RESULTS,
        threads,
    };
    let mut gate = |paths: &[&Path]| {
        host.paths_allowed(paths.iter().map(|p| p.to_string_lossy().into_owned()).collect()).map_err(|e| e.to_string())
    };
    let found = search::search(&query, &mut gate, &|| host.is_cancelled());
    for skipped in found.skipped.iter().take(LOGGED_SKIPS) {
        host.log(log_level::WARN, &format!("search_files skipped {skipped}"));
    }
    if found.skipped.len() > LOGGED_SKIPS {
        host.log(log_level::WARN, &format!("search_files skipped {} more", found.skipped.len() - LOGGED_SKIPS));
    }
    if let Some(error) = found.failed {
        return Err(ToolError { message: format!("Error searching files: {error}"), mistake: false });
    }
    if found.interrupted {
        return Err(ToolError {
            message: "Error searching files: the search was cancelled.".to_owned(),
            mistake: false,
        });
    }
    let groups: Vec<format::Group<'_>> = found
        .files
        .iter()
        .map(|file| {
            // Shown where the model asked, not where the walk really ran.
            let shown =
                file.path.strip_prefix(&walk_root).map_or_else(|_| file.path.clone(), |rel| target.absolute.join(rel));
            format::Group { path: relative(&target.root, &shown), hits: &file.hits }
        })
        .collect();
    Ok(format::RootResults {
        name: target.root_name.clone(),
        text: format::results(&groups, found.count),
        count: found.count,
    })
}

/// `path` relative to `base` with `/` separators, as Node's `path.relative` gives it (`..` when outside).
fn relative(base: &Path, path: &Path) -> String {
    let base: Vec<Component<'_>> = base.components().collect();
    let path_parts: Vec<Component<'_>> = path.components().collect();
    let common = base.iter().zip(&path_parts).take_while(|(a, b)| a == b).count();
    let ups = std::iter::repeat_n("..".to_owned(), base.len() - common);
    let downs = path_parts[common..].iter().map(|part| part.as_os_str().to_string_lossy().into_owned());
    ups.chain(downs).collect::<Vec<_>>().join("/")
}

/// Lexical normalisation (`.` and `..` removed), as the host's path resolution does.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn mistake(message: impl Into<String>) -> ToolError {
    ToolError { message: message.into(), mistake: true }
}

/// A refusal in `prepare` that is the environment's fault, not the model's.
fn environment_error(message: String) -> Prepared {
    Prepared::Error(ToolError { message, mistake: false })
}

/// The plugin's root module. It sits in its own module only because the statics abi_stable generates have
/// no docs, which `missing_docs` would reject; the exported symbol is the same wherever it is declared.
#[allow(missing_docs)]
mod export {
    use super::SearchFiles;
    use toolshed_plugin_api::export_plugin;

    export_plugin! { name: "search_files", version: env!("CARGO_PKG_VERSION"), tools: [SearchFiles] }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use toolshed_plugin_api::services::{CheckResponse, PathCheck, PathResolve, ResolvedPath};
    use toolshed_plugin_api::testing::FakeHost;
    use toolshed_plugin_api::{Block, TaskInfo};

    /// A host whose primary root is `root`, whose `.clineignore` denies paths containing `secret`, and which
    /// records every `path.check` request.
    fn mock_host(root: &Path) -> FakeHost {
        let root = root.to_owned();
        FakeHost::new()
            .on::<PathResolve>(move |request| {
                let absolute = normalize(&root.join(&request.path));
                let display = relative(&root, &absolute);
                Ok(ResolvedPath {
                    absolute: absolute.to_string_lossy().into_owned(),
                    display,
                    root: "w".to_owned(),
                    inside_workspace: absolute.starts_with(&root),
                })
            })
            .on::<PathCheck>(|request| {
                Ok(CheckResponse { allowed: request.paths.iter().map(|path| !path.contains("secret")).collect() })
            })
    }

    fn task(roots: &[(&str, &Path)]) -> TaskInfo {
        TaskInfo {
            cwd: roots[0].1.to_string_lossy().into_owned(),
            roots: roots
                .iter()
                .map(|(name, path)| WorkspaceRoot {
                    name: (*name).to_owned(),
                    path: path.to_string_lossy().into_owned(),
                })
                .collect(),
            ..TaskInfo::default()
        }
    }

    fn call_in(roots: &[(&str, &Path)], input: serde_json::Value) -> ToolCall<SearchFilesArgs> {
        ToolCall {
            tool: "search_files".to_owned(),
            id: "t1".to_owned(),
            input: serde_json::from_value(input).unwrap(),
            task: task(roots),
            approved: false,
        }
    }

    fn text(outcome: Outcome) -> String {
        match outcome {
            Outcome::Success { blocks, .. } => match blocks.as_slice() {
                [Block::Text { text }] => text.clone(),
                other => panic!("unexpected blocks {other:?}"),
            },
            other => panic!("unexpected outcome {other:?}"),
        }
    }

    fn error(outcome: Outcome) -> ToolError {
        match outcome {
            Outcome::Error(error) => error,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::Builder::new().prefix("search-files-").tempdir().unwrap();
        for (path, body) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, body).unwrap();
        }
        dir
    }

    /// Runs execute in a single-root task over `dir`.
    fn execute(dir: &Path, input: serde_json::Value) -> (Outcome, FakeHost) {
        let host = mock_host(dir);
        let outcome = host.execute(&SearchFiles, &call_in(&[("w", dir)], input));
        (outcome, host)
    }

    #[test]
    fn declaration_matches_cline() {
        let declaration = SearchFiles::declaration();
        assert_eq!(declaration.capabilities, ["read_only", "bulk"]);
        assert_eq!(declaration.display.as_deref(), Some("[{tool} for '{regex}'{?file_pattern: in '{file_pattern}'}]"));
        let families: Vec<&str> = declaration.specs.keys().map(String::as_str).collect();
        assert_eq!(families, ["generic", "gpt-5-native", "native-next-gen"]);
        let generic = &declaration.specs["generic"];
        let params: Vec<(&str, bool)> = generic.parameters.iter().map(|p| (p.name.as_str(), p.required)).collect();
        assert_eq!(params, [("path", true), ("regex", true), ("file_pattern", false), ("task_progress", false)]);
        assert!(generic.parameters[0]
            .description
            .ends_with("{{MULTI_ROOT_HINT}}. This directory will be recursively searched."));
    }

    #[test]
    fn arguments_are_read_leniently() {
        let args: SearchFilesArgs =
            serde_json::from_value(serde_json::json!({"path": 7, "regex": 42, "file_pattern": " "})).unwrap();
        assert_eq!((args.path(), args.regex(), args.file_pattern()), (Some("7"), Some("42"), None));
        let args: SearchFilesArgs = serde_json::from_value(serde_json::json!({"path": " ", "regex": ""})).unwrap();
        assert_eq!((args.path(), args.regex()), (None, None));
    }

    #[test]
    fn prepare_refuses_bad_input_before_asking() {
        let dir = workspace(&[("a.txt", "x\n"), ("secret/b.txt", "x\n")]);
        let host = mock_host(dir.path());
        let prepare = |input: serde_json::Value| host.prepare(&SearchFiles, &call_in(&[("w", dir.path())], input));
        let refusal = |prepared: Prepared| match prepared {
            Prepared::Error(error) => error,
            other => panic!("expected a refusal, got {other:?}"),
        };
        let bad_regex = refusal(prepare(serde_json::json!({"path": ".", "regex": "(foo"})));
        assert!(bad_regex.mistake);
        assert!(
            bad_regex.message.starts_with("The regex '(foo' is not valid Rust regex syntax:\n"),
            "{}",
            bad_regex.message
        );
        assert!(bad_regex.message.contains("unclosed group"), "{}", bad_regex.message);
        let newline = refusal(prepare(serde_json::json!({"path": ".", "regex": "a\nb"})));
        assert!(newline.message.contains("is not allowed in a regex"), "{}", newline.message);
        let bad_glob = refusal(prepare(serde_json::json!({"path": ".", "regex": "x", "file_pattern": "[a"})));
        assert!(bad_glob.message.starts_with("The file_pattern '[a' is not a valid glob: "), "{}", bad_glob.message);
        assert_eq!(refusal(prepare(serde_json::json!({"regex": "x"}))).message, result::missing_parameter_text("path"));
        assert_eq!(refusal(prepare(serde_json::json!({"path": "."}))).message, result::missing_parameter_text("regex"));
        let missing = refusal(prepare(serde_json::json!({"path": "nope", "regex": "x"})));
        assert_eq!(
            missing.message,
            format!("Error searching files: Directory not found: {}", dir.path().join("nope").display())
        );
        assert_eq!(
            refusal(prepare(serde_json::json!({"path": "secret", "regex": "x"}))).message,
            clineignore_error("secret")
        );
        // Compared field by field: the request may grow fields this test does not care about.
        let Prepared::Approval(request) = prepare(serde_json::json!({"path": "./", "regex": "x|y"})) else {
            panic!("expected an approval request");
        };
        assert_eq!(
            (request.kind.as_str(), request.message.as_str(), request.risk),
            ("read", "Cline wants to search this directory for x|y: ", Risk::Low)
        );
        assert_eq!(request.paths, [dir.path().to_string_lossy().into_owned()]);
    }

    #[test]
    fn execute_renders_clines_format_exactly() {
        let dir = workspace(&[
            ("src/a.rs", "fn main() {\n    // TODO: one\n}\n\n// TODO: two\n"),
            ("README.md", "TODO first line\nsecond\n"),
            ("src/b/c.rs", "nothing\n"),
        ]);
        let (outcome, host) = execute(dir.path(), serde_json::json!({"path": ".", "regex": "TODO"}));
        assert_eq!(
            text(outcome),
            "Found 3 results.\n\nREADME.md\n│----\n│TODO first line\n│second\n│----\n\nsrc/a.rs\n│----\n│fn main() {\n│    // TODO: one\n│}\n│----\n│\n│// TODO: two\n│----"
        );
        // The host is asked about `.clineignore` for the two files with matches only: in one question, or
        // two when a slow machine made the search leave its inline phase (one for each phase).
        let checks: Vec<Vec<String>> = host.requests::<PathCheck>().into_iter().map(|r| r.paths).collect();
        assert!(checks.len() <= 2, "{checks:?}");
        assert_eq!(checks.iter().map(Vec::len).sum::<usize>(), 2);
        // Paths stay relative to the workspace root when a subdirectory is searched.
        let (outcome, _) = execute(dir.path(), serde_json::json!({"path": "src", "regex": "two"}));
        assert_eq!(text(outcome), "Found 1 result.\n\nsrc/a.rs\n│----\n│\n│// TODO: two\n│----");
        let (outcome, _) = execute(dir.path(), serde_json::json!({"path": "src", "regex": "absent"}));
        assert_eq!(text(outcome), "Found 0 results.");
    }

    #[test]
    fn execute_caps_at_the_first_300_in_path_order() {
        let files: Vec<(String, String)> = (0..40)
            .map(|i| (format!("d{}/f{i:02}.txt", i % 4), (0..10).map(|l| format!("hit {i} {l}\n")).collect()))
            .collect();
        let borrowed: Vec<(&str, &str)> = files.iter().map(|(p, b)| (p.as_str(), b.as_str())).collect();
        let dir = workspace(&borrowed);
        let (outcome, _) = execute(dir.path(), serde_json::json!({"path": ".", "regex": "^hit"}));
        let text = text(outcome);
        assert!(text.starts_with(
            "Showing first 300 of 300+ results. Use a more specific search if necessary.\n\nd0/f00.txt\n│----\n"
        ));
        let shown: Vec<&str> = text.lines().filter(|l| l.starts_with("│hit")).collect();
        assert_eq!(shown.len(), 300);
        // d0 holds f00, f04, … f36 (100 results), then d1 and d2; d3 is past the cap.
        assert_eq!(shown[99], "│hit 36 9");
        assert_eq!(shown[100], "│hit 1 0");
        assert_eq!(shown[299], "│hit 38 9");
        assert!(!text.contains("d3/"));
    }

    #[test]
    fn execute_cuts_at_a_quarter_megabyte_with_the_note() {
        let line = format!("match {}\n", "x".repeat(2000));
        let dir = workspace(&[("big.txt", &line.repeat(200))]);
        let (outcome, _) = execute(dir.path(), serde_json::json!({"path": ".", "regex": "match"}));
        let text = text(outcome);
        assert!(text.starts_with("Found 200 results.\n\nbig.txt\n│----\n│match xx"));
        assert!(text.ends_with("│----\n\n[Results truncated due to exceeding the 0.25MB size limit. Please use a more specific search pattern.]"));
        assert!(text.len() < format::MAX_BYTES);
    }

    #[test]
    fn execute_applies_file_pattern_and_drops_clineignored_files() {
        let dir = workspace(&[
            ("a.ts", "needle\n"),
            ("b.rs", "needle\n"),
            ("secret.ts", "needle\n"),
            ("web/c.ts", "needle\n"),
        ]);
        let (outcome, _) =
            execute(dir.path(), serde_json::json!({"path": ".", "regex": "needle", "file_pattern": "*.ts"}));
        assert_eq!(text(outcome), "Found 2 results.\n\na.ts\n│----\n│needle\n│----\n\nweb/c.ts\n│----\n│needle\n│----");
    }

    #[test]
    fn a_file_as_path_is_searched_alone() {
        let dir = workspace(&[("src/a.rs", "one\ntwo\n"), ("src/b.rs", "two\n")]);
        let (outcome, _) =
            execute(dir.path(), serde_json::json!({"path": "src/a.rs", "regex": "two", "file_pattern": "*.md"}));
        assert_eq!(text(outcome), "Found 1 result.\n\nsrc/a.rs\n│----\n│one\n│two\n│----");
    }

    #[test]
    fn execute_reports_bad_input_as_errors() {
        let dir = workspace(&[("a.txt", "x\n")]);
        let (outcome, _) = execute(dir.path(), serde_json::json!({"path": ".", "regex": "["}));
        assert!(error(outcome).message.contains("unclosed character class"));
        let (outcome, _) = execute(dir.path(), serde_json::json!({"path": "gone", "regex": "x"}));
        assert!(error(outcome).message.starts_with("Error searching files: Directory not found: "));
    }

    #[test]
    fn every_root_is_searched_without_a_hint() {
        let a = workspace(&[("src/x.rs", "needle a\n")]);
        let b = workspace(&[("src/y.rs", "needle b\n"), ("lib/z.rs", "needle c\n")]);
        let c = workspace(&[("docs/readme.md", "needle d\n")]);
        let host = mock_host(a.path());
        let roots = [("a", a.path()), ("b", b.path()), ("c", c.path())];
        let run = |input: serde_json::Value| host.execute(&SearchFiles, &call_in(&roots, input));
        assert_eq!(
            text(run(serde_json::json!({"path": ".", "regex": "needle"}))),
            "Found 4 results across 3 workspaces.\n\n## Workspace: a\nsrc/x.rs\n│----\n│needle a\n│----\n\n## Workspace: b\nlib/z.rs\n│----\n│needle c\n│----\n\nsrc/y.rs\n│----\n│needle b\n│----\n\n## Workspace: c\ndocs/readme.md\n│----\n│needle d\n│----"
        );
        // `src` exists in two roots only: those two are searched.
        assert_eq!(
            text(run(serde_json::json!({"path": "src", "regex": "needle"}))),
            "Found 2 results across 2 workspaces.\n\n## Workspace: a\nsrc/x.rs\n│----\n│needle a\n│----\n\n## Workspace: b\nsrc/y.rs\n│----\n│needle b\n│----"
        );
        assert_eq!(text(run(serde_json::json!({"path": ".", "regex": "absent"}))), "Found 0 results.");
        assert!(error(run(serde_json::json!({"path": "nowhere", "regex": "x"})))
            .message
            .starts_with("Error searching files: Directory not found in any workspace root: "));
        // An absolute path is one search, in the single-root format, relative to its own root.
        assert_eq!(
            text(run(serde_json::json!({"path": b.path().join("lib").to_string_lossy(), "regex": "needle"}))),
            "Found 1 result.\n\nlib/z.rs\n│----\n│needle c\n│----"
        );
    }

    #[test]
    fn relative_paths_as_node_gives_them() {
        assert_eq!(relative(Path::new("/w/a"), Path::new("/w/a/src/x.rs")), "src/x.rs");
        assert_eq!(relative(Path::new("/w/a"), Path::new("/w/b/y.rs")), "../b/y.rs");
        assert_eq!(relative(Path::new("/w/a"), Path::new("/w/a")), "");
        assert!(has_hint("@front:src"));
        assert!(!has_hint("@:src"));
        assert!(!has_hint("src/@x:y"));
    }
}
