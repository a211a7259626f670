//! Cline's `list_files` tool as a Toolshed plugin: the entries of a directory, top level or recursive,
//! in the exact text Cline gives the model.
//!
//! The work is three plain steps that unit tests exercise directly: [`walk`] collects the entries (the
//! `ignore` crate reads directories and `.gitignore` files), [`format`] sorts and renders them, and
//! [`collate`] orders names as JavaScript's `localeCompare` does. The [`ListFiles`] handler only asks the
//! host to resolve the path and to check `.clineignore`.
//!
//! Where this differs from Cline, on purpose:
//! - `.gitignore` files get real gitignore semantics through the `ignore` crate: a nested file's patterns
//!   apply to its own directory only, `!negations` and anchored patterns work. Cline turns every pattern of
//!   every file into a global glob and drops negations. As in Cline, only the `.gitignore` files of the
//!   listed directory and below are read, and never those inside an excluded directory.
//! - Symbolic links are listed (a link to a directory with a trailing `/`) but never entered, so a link
//!   cycle cannot fill the listing. Cline's globby follows them.
//! - The children of a directory are taken in a fixed order (files, then directories, by name), so the
//!   entries kept at the 200 limit are the same on every run; Cline takes the filesystem's order.
//! - A path whose canonical form is the filesystem root or the home directory is refused too, not only
//!   the literal path.

#![deny(missing_docs)]

mod collate;
mod format;
mod walk;

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use toolshed_plugin_api::sdk::{lenient_bool, lenient_string};
use toolshed_plugin_api::{
    capability, log_level, result, Failure, HostClient, Outcome, ParamSpec, Prepared, Risk, Tool, ToolCall,
    ToolDeclaration, ToolError, ToolInit, ToolSpec,
};

/// Cline's cap on the number of entries listed.
const LIMIT: usize = 200;
/// Cline's timeout for a recursive listing, when the task names none.
const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// Cline's description of the tool, the same for every model family.
const DESCRIPTION: &str = "Request to list files and directories within the specified directory. If recursive is true, it will list all files and directories recursively. If recursive is false or not provided, it will only list the top-level contents. Do not use this tool to confirm the existence of files you may have created, as the user will let you know if the files were created successfully or not.";
const PATH_DESCRIPTION: &str = "The path of the directory to list contents for (relative to the current working directory {{CWD}}){{MULTI_ROOT_HINT}}";
const NATIVE_PATH_DESCRIPTION: &str = "The path of the directory to list contents for.";
const RECURSIVE_DESCRIPTION: &str =
    "Whether to list files recursively. Use true for recursive listing, false or omit for top-level only.";

/// The input of `list_files`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ListFilesArgs {
    /// The directory to list, as the model wrote it.
    #[serde(default, deserialize_with = "lenient_string")]
    path: Option<String>,
    /// Recursive only for JSON `true` or a string equal to `"true"` ignoring case, as Cline reads it.
    #[serde(default, deserialize_with = "lenient_bool")]
    recursive: bool,
}

impl ListFilesArgs {
    /// The path, unless it is missing or blank (Cline's missing-parameter rule).
    fn path(&self) -> Option<&str> {
        self.path.as_deref().filter(|path| !path.trim().is_empty())
    }
}

/// The `list_files` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListFiles;

impl Tool for ListFiles {
    type Args = ListFilesArgs;

    fn declaration() -> ToolDeclaration {
        let spec = |family_path_description: &str, usage: bool| ToolSpec {
            id: "list_files".to_owned(),
            name: "list_files".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters: vec![
                ParamSpec::new("path", true, family_path_description).usage(usage.then_some("Directory path here")),
                ParamSpec::new("recursive", false, RECURSIVE_DESCRIPTION)
                    .kind("boolean")
                    .usage(usage.then_some("true or false (optional)")),
                ParamSpec::task_progress(),
            ],
            context_requirements: Vec::new(),
        };
        ToolDeclaration {
            name: "list_files".to_owned(),
            aliases: Vec::new(),
            capabilities: vec![capability::READ_ONLY.to_owned(), capability::BULK.to_owned()],
            display: Some("[{tool} for '{path}']".to_owned()),
            // Cline's variants: the XML-prompt one, and a shorter one for its native tool-calling families.
            specs: [
                ("generic".to_owned(), spec(PATH_DESCRIPTION, true)),
                ("gpt-5-native".to_owned(), spec(NATIVE_PATH_DESCRIPTION, false)),
                ("native-next-gen".to_owned(), spec(NATIVE_PATH_DESCRIPTION, false)),
            ]
            .into_iter()
            .collect(),
            checks_parameters: true,
            param_aliases: Default::default(),
        }
    }

    fn new(_init: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(ListFiles))
    }

    fn prepare(&self, call: &ToolCall<ListFilesArgs>, host: &HostClient<'_>) -> Result<Prepared, Failure> {
        let Some(path) = call.input.path() else {
            return Ok(result::refuse(missing_path()));
        };
        match host.path_allowed(path) {
            Ok(true) => {}
            Ok(false) => return Ok(result::refuse(result::clineignore_error(path))),
            Err(e) => return Ok(prepare_error(format!("Error listing files: {e}"))),
        }
        let resolved = match host.resolve_path(path) {
            Ok(resolved) => resolved,
            Err(e) => return Ok(prepare_error(format!("Error listing files: {e}"))),
        };
        // Cline's approval card heading, followed by the path it shows beneath it.
        let heading = if call.input.recursive {
            "Cline wants to recursively view all files in this directory:"
        } else {
            "Cline wants to view the top level files in this directory:"
        };
        Ok(result::approval("read", format!("{heading} {}", resolved.display), vec![resolved.absolute], Risk::Low))
    }

    fn execute(&self, call: &ToolCall<ListFilesArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let Some(path) = call.input.path() else {
            return Ok(result::missing_parameter("path"));
        };
        let root = match host.resolve_path(path) {
            Ok(resolved) => PathBuf::from(resolved.absolute),
            Err(e) => return Ok(result::error(format!("Error listing files: {e}"))),
        };
        let timeout_ms = call.task.timeouts_ms.get("list_files").copied().unwrap_or(DEFAULT_TIMEOUT_MS);
        // A timeout too large to add to now means no deadline.
        let deadline = Instant::now().checked_add(Duration::from_millis(timeout_ms));
        let should_stop = || host.is_cancelled() || deadline.is_some_and(|deadline| Instant::now() >= deadline);
        let home = std::env::home_dir();
        let listing = walk::list(&root, call.input.recursive, LIMIT, home.as_deref(), &should_stop);
        if listing.interrupted && !host.is_cancelled() {
            host.log(log_level::WARN, "list_files timed out, returning partial results");
        }
        Ok(match render(&root, &listing, host) {
            Ok(text) => result::text(text),
            Err(e) => result::error(format!("Error listing files: {e}")),
        })
    }
}

/// Sorts the listing and renders it, asking the host about `.clineignore` for all entries in one call.
fn render(
    root: &Path,
    listing: &walk::Listing,
    host: &HostClient<'_>,
) -> Result<String, toolshed_plugin_api::ServiceError> {
    let lines = format::sorted_lines(root, &listing.entries);
    let allowed = if lines.is_empty() {
        Vec::new()
    } else {
        host.paths_allowed(lines.iter().map(|line| line.absolute.clone()).collect())?
    };
    Ok(format::render(&lines, &allowed, listing.hit_limit))
}

fn missing_path() -> String {
    result::missing_parameter_text("path")
}

/// A refusal in `prepare` that is the environment's fault, not the model's.
fn prepare_error(message: String) -> Prepared {
    Prepared::Error(ToolError { message, mistake: false })
}

/// The plugin's root module. It sits in its own module only because the statics abi_stable generates have
/// no docs, which `missing_docs` would reject; the exported symbol is the same wherever it is declared.
#[allow(missing_docs)]
mod export {
    use super::ListFiles;
    use toolshed_plugin_api::export_plugin;

    export_plugin! { name: "list_files", version: env!("CARGO_PKG_VERSION"), tools: [ListFiles] }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::collections::BTreeMap;
    use toolshed_plugin_api::services::{CheckResponse, PathCheck, PathResolve, ResolvedPath};
    use toolshed_plugin_api::testing::FakeHost;
    use toolshed_plugin_api::{ApprovalRequest, Block, TaskInfo};

    /// A host whose workspace is `root`, whose `.clineignore` denies paths ending in `secret`, and which
    /// records every `path.check` request.
    fn mock_host(root: &Path) -> FakeHost {
        let root = root.to_owned();
        FakeHost::new()
            .on::<PathResolve>(move |request| {
                let absolute = root.join(&request.path);
                Ok(ResolvedPath {
                    absolute: absolute.to_string_lossy().into_owned(),
                    display: request.path,
                    root: "w".to_owned(),
                    inside_workspace: true,
                })
            })
            .on::<PathCheck>(|request| {
                Ok(CheckResponse { allowed: request.paths.iter().map(|path| !path.ends_with("secret")).collect() })
            })
    }

    fn call(input: serde_json::Value) -> ToolCall<ListFilesArgs> {
        ToolCall {
            tool: "list_files".to_owned(),
            id: "t1".to_owned(),
            input: serde_json::from_value(input).unwrap(),
            task: TaskInfo::default(),
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

    fn workspace(paths: &[&str]) -> tempfile::TempDir {
        // tempfile's default prefix is `.tmp`, a hidden name, which would switch hidden directories on.
        let dir = tempfile::Builder::new().prefix("list-files-").tempdir().unwrap();
        for path in paths {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, "").unwrap();
        }
        dir
    }

    #[test]
    fn recursive_flag_is_read_leniently() {
        let recursive =
            |value: serde_json::Value| call(serde_json::json!({"path": ".", "recursive": value})).input.recursive;
        assert!(recursive(serde_json::json!(true)));
        assert!(recursive(serde_json::json!("TRUE")));
        assert!(recursive(serde_json::json!(" true ")));
        assert!(!recursive(serde_json::json!("yes")));
        assert!(!recursive(serde_json::json!(1)));
        assert!(!recursive(serde_json::Value::Null));
        assert!(!call(serde_json::json!({"path": "."})).input.recursive);
        // Non-string paths arrive stringified, as Cline's native calls do.
        assert_eq!(call(serde_json::json!({"path": 7})).input.path(), Some("7"));
        assert_eq!(call(serde_json::json!({"path": "  "})).input.path(), None);
    }

    #[test]
    fn declaration_matches_cline() {
        let declaration = ListFiles::declaration();
        assert_eq!(declaration.capabilities, ["read_only", "bulk"]);
        assert_eq!(declaration.display.as_deref(), Some("[{tool} for '{path}']"));
        let generic = &declaration.specs["generic"];
        let params: Vec<(&str, bool, &str)> =
            generic.parameters.iter().map(|p| (p.name.as_str(), p.required, p.kind.as_str())).collect();
        assert_eq!(
            params,
            [("path", true, "string"), ("recursive", false, "boolean"), ("task_progress", false, "string")]
        );
        assert!(generic.description.starts_with("Request to list files and directories"));
        let families: Vec<&str> = declaration.specs.keys().map(String::as_str).collect();
        assert_eq!(families, ["generic", "gpt-5-native", "native-next-gen"]);
    }

    #[test]
    fn prepare_asks_to_read_the_resolved_directory() {
        let dir = workspace(&["src/a.rs"]);
        let host = mock_host(dir.path());
        let prepared = host.prepare(&ListFiles, &call(serde_json::json!({"path": "src", "recursive": "true"})));
        assert_eq!(
            prepared,
            Prepared::Approval(ApprovalRequest {
                kind: "read".to_owned(),
                message: "Cline wants to recursively view all files in this directory: src".to_owned(),
                paths: vec![dir.path().join("src").to_string_lossy().into_owned()],
                risk: Risk::Low,
                denied_message: None,
            })
        );
    }

    #[test]
    fn prepare_refuses_a_clineignored_directory_and_a_missing_path() {
        let dir = workspace(&[]);
        let host = mock_host(dir.path());
        let prepared = host.prepare(&ListFiles, &call(serde_json::json!({"path": "top/secret"})));
        assert_eq!(
            prepared,
            result::refuse(
                "Access to top/secret is blocked by the .clineignore file settings. You must try to continue in the task without using this file, or ask the user to update the .clineignore file."
            )
        );
        let prepared = host.prepare(&ListFiles, &call(serde_json::json!({})));
        assert_eq!(prepared, result::refuse(result::missing_parameter_text("path")));
    }

    #[test]
    fn execute_lists_sorts_and_locks_with_one_check() {
        let dir = workspace(&["b.txt", "a/secret", "a/x.txt", "secret/key", "node_modules/m.js"]);
        let host = mock_host(dir.path());
        let out = host.execute(&ListFiles, &call(serde_json::json!({"path": ".", "recursive": true})));
        assert_eq!(text(out), "b.txt\na/\n🔒 a/secret\na/x.txt\n🔒 secret/\nsecret/key");
        assert_eq!(host.requests::<PathCheck>().len(), 1);
        let out = host.execute(&ListFiles, &call(serde_json::json!({"path": "."})));
        assert_eq!(text(out), "b.txt\na/\nnode_modules/\n🔒 secret/");
    }

    #[test]
    fn execute_reports_no_files_for_files_and_missing_paths() {
        let dir = workspace(&["b.txt"]);
        let host = mock_host(dir.path());
        for path in ["b.txt", "missing"] {
            let out = host.execute(&ListFiles, &call(serde_json::json!({"path": path})));
            assert_eq!(text(out), "No files found.");
        }
        // Nothing was listed, so the host was not asked about `.clineignore`.
        assert!(host.requests::<PathCheck>().is_empty());
    }

    #[test]
    fn execute_truncates_at_two_hundred_entries() {
        let names: Vec<String> = (1..=205).map(|i| format!("f{i}.txt")).collect();
        let dir = workspace(&names.iter().map(String::as_str).collect::<Vec<_>>());
        let host = mock_host(dir.path());
        for recursive in [false, true] {
            let out = host.execute(&ListFiles, &call(serde_json::json!({"path": ".", "recursive": recursive})));
            let expected: Vec<String> = (1..=200).map(|i| format!("f{i}.txt")).collect();
            assert_eq!(text(out), format!("{}{}", expected.join("\n"), format::TRUNCATION_NOTE));
        }
    }

    #[test]
    fn execute_stops_when_cancelled_without_the_truncation_note() {
        let dir = workspace(&["a/b/c.txt", "x.txt"]);
        let host = mock_host(dir.path());
        host.set_cancelled(true);
        let out = host.execute(&ListFiles, &call(serde_json::json!({"path": ".", "recursive": true})));
        assert_eq!(text(out), "No files found.");
        // A zero timeout stops the walk the same way.
        host.set_cancelled(false);
        let mut timed = call(serde_json::json!({"path": ".", "recursive": true}));
        timed.task.timeouts_ms = BTreeMap::from([("list_files".to_owned(), 0)]);
        let out = host.execute(&ListFiles, &timed);
        assert_eq!(text(out), "No files found.");
    }
}
