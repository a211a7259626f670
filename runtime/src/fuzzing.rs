//! Narrow entry points into the runtime's private parsers of model output, for the fuzz targets in
//! `fuzz-targets/` (issue 16). Hidden from the documentation and not part of the supported API: each
//! function only forwards to the code the runtime itself runs, so a fuzzer exercises the real thing without
//! the internals becoming public.

use crate::pipeline as executor;
use crate::workspace::Workspace;
use serde_json::Value;
use std::path::{Path, PathBuf};
use toolshed_plugin_api::services::ResolvedPath;
use toolshed_plugin_api::WorkspaceRoot;

/// What the executor's input checks make of one tool use's input text, in the executor's order: the JSON
/// parse, the object check, then Cline's missing-parameter check.
#[derive(Debug, Clone, PartialEq)]
pub enum InputVerdict {
    /// Not JSON: the executor answers with a tool error.
    InvalidJson,
    /// JSON, but not an object (the kind the error names).
    NotAnObject {
        /// The result header.
        description: String,
        /// `a string`, `an array`, …
        kind: &'static str,
    },
    /// A required parameter is missing, null or blank.
    Missing {
        /// The result header.
        description: String,
        /// The first missing parameter.
        param: String,
    },
    /// The input reaches the tool.
    Ready {
        /// The result header.
        description: String,
        /// The loop-detection signature.
        signature: String,
        /// The parsed input.
        input: Value,
    },
}

/// Runs the executor's input handling (`ToolInput::Text`) for `tool` with the display template `display`
/// and the required parameters `required` (name, empty allowed).
pub fn tool_input(tool: &str, display: Option<&str>, required: &[(String, bool)], text: &str) -> InputVerdict {
    let Ok(input) = serde_json::from_str::<Value>(text) else {
        // The executor renders the header with a null input here.
        let _ = executor::describe(display, tool, &Value::Null);
        return InputVerdict::InvalidJson;
    };
    let description = executor::describe(display, tool, &input);
    let signature = executor::signature(&input);
    if !input.is_object() {
        return InputVerdict::NotAnObject { description, kind: executor::json_kind(&input) };
    }
    if let Some((param, _)) =
        required.iter().find(|(name, allow_empty)| executor::is_missing(input.get(name.as_str()), *allow_empty))
    {
        return InputVerdict::Missing { description, param: param.clone() };
    }
    InputVerdict::Ready { description, signature, input }
}

/// A task's workspace (roots, `@name:` hints, `.clineignore`), as the host's path services use it.
#[derive(Debug)]
pub struct FuzzWorkspace(Workspace);

impl FuzzWorkspace {
    /// A workspace over `roots`, the first the primary; each root's `.clineignore` is read from disk.
    pub fn new(roots: &[WorkspaceRoot]) -> Self {
        Self(Workspace::new(roots))
    }

    /// `path.resolve`: a model-given path, hint and all, to its absolute form.
    pub fn resolve(&self, raw: &str) -> ResolvedPath {
        self.0.resolve(raw)
    }

    /// `path.check`: whether `.clineignore` allows each model-given path.
    pub fn allows_all(&self, raws: &[String]) -> Vec<bool> {
        self.0.allows_all(raws)
    }

    /// `path.check_command`: the argument of a file-reading command that `.clineignore` blocks.
    pub fn check_command(&self, command: &str) -> Option<String> {
        self.0.check_command(command)
    }

    /// Whether an absolute path lies inside the workspace.
    pub fn contains(&self, absolute: &Path) -> bool {
        self.0.contains(absolute)
    }
}

/// The lexical normalisation every resolved path goes through.
pub fn normalize(path: &Path) -> PathBuf {
    crate::paths::normalize(path)
}
