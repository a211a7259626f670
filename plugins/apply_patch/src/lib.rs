//! Cline's `apply_patch` tool as a Toolshed plugin: V4A patches that add, delete, move and update files, with
//! the fuzzy context matching of Cline's `PatchParser`, applied to every file together or to none.
//!
//! Names, parameter, result text and error texts are Cline's. Where Cline loses work we keep the format and
//! fix the behaviour: a chunk whose context is not found fails the whole patch with an error naming the file
//! and the chunk, and nothing changes (Cline skips the chunk and reports success); CRLF files stay CRLF
//! (Cline rewrites them with LF); every file is written through a temporary file and a rename, keeping its
//! permissions and byte-order mark; paths are checked against the workspace and `.clineignore` after
//! symbolic links are resolved. The details of the format and matching are in [`parse`](crate) and
//! [`apply`](crate).
//!
//! ```
//! use toolshed_plugin_api::Tool;
//!
//! let declaration = apply_patch::ApplyPatch::declaration();
//! assert_eq!(declaration.name, "apply_patch");
//! assert_eq!(declaration.specs["gpt-5-native"].parameters[0].name, "input");
//! ```
#![deny(missing_docs)]

mod apply;
/// Entry points for the fuzz targets in `fuzz-targets/` (issue 16); not a supported API.
#[doc(hidden)]
pub mod fuzzing;
mod parse;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod upstream;

// The edit crate shared with write_to_file (plugin-libs/edit), under the name the call sites use.
use toolshed_edit as edit_io;

use apply::{ChunkError, Limits};
use edit_io::{Change, Target, TargetError, TextFile, Transaction};
use parse::Action;
use serde::Deserialize;
use std::hash::{DefaultHasher, Hasher};
use toolshed_plugin_api::sdk::lenient_string;
use toolshed_plugin_api::{
    capability, log_level, result, Failure, HostClient, Outcome, ParamSpec, PartialBlock, Prepared, Risk, Tool,
    ToolCall, ToolDeclaration, ToolError, ToolInit, ToolSpec,
};

/// Cline's description (apps/vscode/src/core/prompts/system-prompt/tools/apply_patch.ts).
pub const DESCRIPTION: &str = "This is a custom utility that makes it more convenient to add, remove, move, or edit code in a single file. `apply_patch` effectively allows you to execute a diff/patch against a file, but the format of the diff specification is unique to this task, so pay careful attention to these instructions. To use the `apply_patch` command, you should pass a message of the following structure as \"input\":\n\n%%bash\napply_patch <<\"EOF\"\n*** Begin Patch\n[YOUR_PATCH]\n*** End Patch\nEOF\n\nWhere [YOUR_PATCH] is the actual content of your patch, specified in the following V4A diff format.\n\n*** [ACTION] File: [path/to/file] -> ACTION can be one of Add, Update, or Delete. \n\nIn a Add File section, every line of the new file (including blank/empty lines) MUST start with a `+` prefix. Do not include any unprefixed lines inside an Add section\nIn a Update/Delete section, repeat the following for each snippet of code that needs to be changed:\n[context_before] -> See below for further instructions on context.\n- [old_code] -> Precede the old code with a minus sign.\n+ [new_code] -> Precede the new, replacement code with a plus sign.\n[context_after] -> See below for further instructions on context.\n\nFor instructions on [context_before] and [context_after]:\n- By default, show 3 lines of code immediately above and 3 lines immediately below each change. If a change is within 3 lines of a previous change, do NOT duplicate the first change’s [context_after] lines in the second change’s [context_before] lines.\n- If 3 lines of context is insufficient to uniquely identify the snippet of code within the file, use the @@ operator to indicate the class or function to which the snippet belongs. For instance, we might have:\n@@ class BaseClass\n[3 lines of pre-context]\n- [old_code]\n+ [new_code]\n[3 lines of post-context]\n\n- If a code block is repeated so many times in a class or function such that even a single @@ statement and 3 lines of context cannot uniquely identify the snippet of code, you can use multiple `@@` statements to jump to the right context. For instance:\n\n@@ class BaseClass\n@@ \tdef method():\n[3 lines of pre-context]\n- [old_code]\n+ [new_code]\n[3 lines of post-context]\n\nNote, then, that we do not use line numbers in this diff format, as the context is enough to uniquely identify code. An example of a message that you might pass as \"input\" to this function, in order to apply a patch, is shown below.\n\n%%bash\napply_patch <<\"EOF\"\n*** Begin Patch\n*** Update File: pygorithm/searching/binary_search.py\n@@ class BaseClass\n@@     def search():\n-          pass\n+          raise NotImplementedError()\n\n@@ class Subclass\n@@     def search():\n-          pass\n+          raise NotImplementedError()\n\n*** End Patch\nEOF";

/// The description of `input`.
const INPUT_DESCRIPTION: &str = "The apply_patch command that you wish to execute.";

/// The model's input.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ApplyPatchArgs {
    /// The V4A patch text, possibly wrapped in the `apply_patch <<"EOF"` command.
    #[serde(deserialize_with = "lenient_string")]
    pub input: Option<String>,
}

/// The `apply_patch` tool. It holds only its limits: approvals and streamed progress live in the task's state.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApplyPatch {
    limits: Limits,
}

/// `[plugins.config.apply_patch]`.
#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Config {
    max_similarity_cells: u64,
}

impl Default for Config {
    fn default() -> Self {
        Self { max_similarity_cells: Limits::default().max_similarity_cells }
    }
}

/// What one action will do, checked and computed.
struct Planned {
    action: Action,
    /// The file the action reads, updates or deletes (for a move, the source).
    source: Target,
    /// Where a move goes.
    destination: Option<Target>,
    /// The new text (none for a deletion), without byte-order mark.
    text: Option<String>,
    /// The bytes to write.
    bytes: Option<Vec<u8>>,
}

/// Everything a patch will do.
struct Plan {
    files: Vec<Planned>,
    fuzz: u32,
    /// A hash of every file's bytes before the patch, to notice a change after approval.
    before: u64,
}

const APPROVAL_KEY: &str = "apply_patch:approved";
const STREAM_KEY: &str = "apply_patch:stream";

/// Cline surfaces its patch errors as handler exceptions.
fn failure(message: &str) -> String {
    format!("Error executing apply_patch: {message}")
}

fn locate(host: &HostClient<'_>, path: &str, call: &ToolCall<ApplyPatchArgs>) -> Result<Target, String> {
    edit_io::locate(host, path, &call.task).map_err(|error| match error {
        TargetError::Ignored => {
            host.say("clineignore_error", path, false);
            format!("Access denied: {path}")
        }
        other => format!("{path}: {}", other.reason()),
    })
}

fn read_text(target: &Target, path: &str, hasher: &mut DefaultHasher) -> Result<TextFile, String> {
    if !target.exists {
        return Err(format!("File not found: {path}"));
    }
    let bytes = edit_io::read(&target.real)?;
    hasher.write(&bytes);
    TextFile::decode(&bytes).map_err(|reason| format!("{path}: {reason}"))
}

impl ApplyPatch {
    /// Parses the patch and computes every file's new content, reading each file once.
    fn plan(&self, call: &ToolCall<ApplyPatchArgs>, host: &HostClient<'_>) -> Result<Plan, ToolError> {
        let mistake = |message: String| ToolError { message, mistake: true };
        let Some(input) = call.input.input.as_deref().filter(|i| !i.trim().is_empty()) else {
            return Err(mistake(missing_parameter("input")));
        };
        let actions = parse::parse(input).map_err(|e| mistake(failure(&e)))?;
        if actions.is_empty() {
            return Err(mistake(failure("The patch contains no file operations, so no files were changed.")));
        }
        let mut hasher = DefaultHasher::new();
        let mut fuzz = 0;
        let mut files = Vec::new();
        let cancelled = || host.is_cancelled();
        let mut budget = self.limits.max_similarity_cells;
        for action in actions {
            let source = locate(host, action.path(), call).map_err(|e| mistake(failure(&e)))?;
            let planned = match &action {
                Action::Add { content, .. } => {
                    // An added file that exists is overwritten (as Cline and codex do), keeping its mark.
                    let file = match source.exists {
                        true => read_text(&source, action.path(), &mut hasher)
                            .unwrap_or(TextFile { bom: None, text: String::new() }),
                        false => TextFile { bom: None, text: String::new() },
                    };
                    Planned {
                        bytes: Some(file.encode(content)),
                        text: Some(content.clone()),
                        destination: None,
                        source,
                        action,
                    }
                }
                Action::Delete { path } => {
                    if !source.exists {
                        return Err(mistake(failure(&format!("File not found: {path}"))));
                    }
                    Planned { bytes: None, text: None, destination: None, source, action }
                }
                Action::Update { path, move_to, chunks } => {
                    let file = read_text(&source, path, &mut hasher).map_err(|e| mistake(failure(&e)))?;
                    let (text, chunk_fuzz) = apply::apply(&file.text, chunks, &cancelled, &mut budget).map_err(|error| {
                        mistake(failure(&match error {
                            ChunkError::Context { chunk, lines } => format!(
                                "{path}: chunk {chunk} of {} did not match: these lines were not found in the file:\n{}\nNo file was changed. Read the file again and retry with its exact lines as context.",
                                chunks.len(),
                                lines.join("\n")
                            ),
                            ChunkError::Anchor { chunk, anchor } => format!(
                                "{path}: chunk {chunk} of {} did not match: its @@ line '{anchor}' was not found in the file.\nNo file was changed. Read the file again and retry.",
                                chunks.len()
                            ),
                            ChunkError::Exhausted { chunk, lines, limit } => format!(
                                "{path}: chunk {chunk} of {} did not match exactly, and the search for similar lines stopped after {limit} comparisons (the limit is [plugins.config.apply_patch] max_similarity_cells = {limit}). These lines were looked for:\n{}\nNo file was changed. Read the file again and retry with its exact lines as context.",
                                chunks.len(),
                                lines.join("\n")
                            ),
                            ChunkError::Overlap { chunk } => format!(
                                "{path}: chunk {chunk} of {} changes lines that an earlier chunk removed.\nNo file was changed. Read the file again and retry with one chunk for those lines.",
                                chunks.len()
                            ),
                        }))
                    })?;
                    fuzz += chunk_fuzz;
                    let destination = match move_to {
                        Some(to) => Some(locate(host, to, call).map_err(|e| mistake(failure(&e)))?),
                        None => None,
                    };
                    Planned { bytes: Some(file.encode(&text)), text: Some(text), destination, source, action }
                }
            };
            files.push(planned);
        }
        Ok(Plan { files, fuzz, before: hasher.finish() })
    }
}

use toolshed_plugin_api::result::missing_parameter_text as missing_parameter;

/// Cline's UI card kind for an action.
fn card_kind(action: &Action) -> &'static str {
    match action {
        Action::Add { .. } => "newFileCreated",
        Action::Delete { .. } => "fileDeleted",
        Action::Update { move_to: Some(_), .. } => "newFileCreated",
        Action::Update { move_to: None, .. } => "editedExistingFile",
    }
}

fn card(kind: &str, path: &str, content: &str) -> String {
    serde_json::json!({ "tool": kind, "path": path, "content": content }).to_string()
}

fn digest(text: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    hasher.write(text.as_bytes());
    hasher.finish()
}

/// The file headers among the complete lines of a streaming patch: `(card kind, path, end of the line)`.
fn headers(text: &str, final_pass: bool) -> Vec<(&'static str, String, usize)> {
    let mut found = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        offset += line.len();
        // While streaming, a last line without its break may still grow.
        if !line.ends_with('\n') && !final_pass {
            break;
        }
        let trimmed = line.trim();
        let kinds = [
            ("*** Add File: ", "newFileCreated"),
            ("*** Update File: ", "editedExistingFile"),
            ("*** Delete File: ", "fileDeleted"),
        ];
        if let Some((kind, path)) = kinds.iter().find_map(|(m, k)| trimmed.strip_prefix(m).map(|p| (*k, p.trim()))) {
            found.push((kind, path.to_owned(), offset));
        }
    }
    found
}

/// Reports the file headers of a streaming patch not yet reported: one card per file, tied to complete lines
/// only, so any split of the same patch reports the same cards.
fn report_headers(host: &HostClient<'_>, text: &str, final_pass: bool) {
    let state = host.state_get(STREAM_KEY).ok().flatten();
    let (consumed, _, emitted) = state
        .and_then(|v| serde_json::from_value::<(usize, u64, usize)>(v).ok())
        .filter(|(consumed, hash, _)| text.get(..*consumed).is_some_and(|p| digest(p) == *hash))
        .unwrap_or_default();
    let complete = if final_pass { text } else { &text[..text.rfind('\n').map_or(0, |i| i + 1)] };
    let found = headers(complete, final_pass);
    for (kind, path, end) in found.iter().skip(emitted) {
        host.say("tool", &card(kind, path, &complete[..*end]), true);
    }
    let value = (!final_pass)
        .then(|| serde_json::json!([complete.len().max(consumed), digest(complete), found.len().max(emitted)]));
    let _ = host.state_set(STREAM_KEY, value);
}

impl Tool for ApplyPatch {
    type Args = ApplyPatchArgs;

    fn declaration() -> ToolDeclaration {
        let spec = ToolSpec {
            id: "apply_patch".to_owned(),
            name: "apply_patch".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters: vec![ParamSpec::new("input", true, INPUT_DESCRIPTION), ParamSpec::task_progress()],
            context_requirements: Vec::new(),
        };
        ToolDeclaration {
            name: "apply_patch".to_owned(),
            aliases: Vec::new(),
            capabilities: vec![capability::WRITES_FILES.to_owned(), capability::COMMITS_WRITES.to_owned()],
            display: Some("[{tool} for patch application]".to_owned()),
            // Cline offers the tool to the GPT-5 families only; `generic` is the fallback the runtime reads the
            // required parameters from, and prompt variants decide which families list the tool.
            specs: ["generic", "gpt-5", "gpt-5-native"].into_iter().map(|f| (f.to_owned(), spec.clone())).collect(),
        }
    }

    fn new(init: &ToolInit<'_>) -> Result<Option<Self>, String> {
        let config: Config = serde_json::from_str(if init.config.trim().is_empty() { "{}" } else { init.config })
            .map_err(|e| format!("invalid apply_patch config: {e}"))?;
        Ok(Some(ApplyPatch { limits: Limits { max_similarity_cells: config.max_similarity_cells } }))
    }

    fn prepare(&self, call: &ToolCall<ApplyPatchArgs>, host: &HostClient<'_>) -> Result<Prepared, Failure> {
        if let Some(input) = call.input.input.as_deref() {
            report_headers(host, input, true);
        }
        let plan = self.plan(call, host)?;
        let mut lines = Vec::new();
        let mut paths = Vec::new();
        for file in &plan.files {
            let shown = file.destination.as_ref().map_or(&file.source.display, |d| &d.display);
            host.say(
                "tool",
                &card(card_kind(&file.action), shown, call.input.input.as_deref().unwrap_or_default()),
                false,
            );
            lines.push(match (&file.action, &file.destination) {
                (Action::Add { .. }, _) => format!("create {}", file.source.display),
                (Action::Delete { .. }, _) => format!("delete {}", file.source.display),
                (Action::Update { .. }, Some(to)) => {
                    format!("edit {} and move it to {}", file.source.display, to.display)
                }
                (Action::Update { .. }, None) => format!("edit {}", file.source.display),
            });
            paths.extend(file.source.approval_paths());
            if let Some(to) = &file.destination {
                paths.extend(to.approval_paths());
            }
        }
        let _ = host.state_set(APPROVAL_KEY, Some(plan.before.to_string().into()));
        Ok(result::approval(
            "write",
            format!("Cline wants to apply a patch: {}", lines.join("; ")),
            paths,
            Risk::Medium,
        ))
    }

    fn execute(&self, call: &ToolCall<ApplyPatchArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let plan = self.plan(call, host)?;
        if let Ok(Some(approved)) = host.state_get(APPROVAL_KEY) {
            let _ = host.state_set(APPROVAL_KEY, None);
            if approved.as_str() != Some(plan.before.to_string().as_str()) {
                return Ok(result::mistake(failure(
                    "a file changed after the patch was approved, so no file was changed. Read the files again and retry.",
                )));
            }
        }
        let mut transaction = Transaction::new();
        for file in &plan.files {
            match (&file.bytes, &file.destination) {
                (Some(bytes), Some(to)) => {
                    transaction.push(Change::Write {
                        path: to.real.clone(),
                        bytes: bytes.clone(),
                        permissions_from: Some(file.source.real.clone()),
                    });
                    transaction.push(Change::Delete { path: file.source.real.clone() });
                }
                (Some(bytes), None) => transaction.push(Change::Write {
                    path: file.source.real.clone(),
                    bytes: bytes.clone(),
                    permissions_from: None,
                }),
                (None, _) => transaction.push(Change::Delete { path: file.source.real.clone() }),
            }
        }
        if let Err(e) = transaction.commit(&|| host.commit()) {
            return Ok(result::error(failure(&format!("{e}. No file was changed."))));
        }
        let mut forget = Vec::new();
        let mut response = vec!["Successfully applied patch to the following files:".to_owned()];
        for file in &plan.files {
            forget.extend(file.source.cache_paths());
            match (&file.action, &file.text) {
                (Action::Update { path, move_to: Some(to), .. }, Some(text)) => {
                    push_content(&mut response, to, text);
                    response.push(format!("\n{path}: [deleted]"));
                }
                (Action::Delete { path }, _) => response.push(format!("\n{path}: [deleted]")),
                (action, Some(text)) => push_content(&mut response, action.path(), text),
                (_, None) => {}
            }
            if let Some(to) = &file.destination {
                forget.extend(to.cache_paths());
            }
        }
        if plan.fuzz > 0 {
            response.push(format!("\nNote: Patch applied with fuzz factor {}", plan.fuzz));
        }
        if let Err(e) = host.forget_reads(forget) {
            host.log(log_level::WARN, &format!("read_cache.forget: {e}"));
        }
        Ok(result::text(response.join("\n")))
    }

    fn partial(&self, block: &PartialBlock, host: &HostClient<'_>) {
        if let Some(input) = block.input.get("input").and_then(|v| v.as_str()) {
            report_headers(host, input, false);
        }
    }
}

/// Cline's block for a written file: the tag, the saved content as `finalContent`, the closing tag.
fn push_content(response: &mut Vec<String>, path: &str, text: &str) {
    response.push(format!("\n<final_file_content path=\"{path}\">"));
    response.push(edit_io::final_content(text));
    response.push("</final_file_content>".to_owned());
}

/// The exported root module. It sits in a private module because the items `export_plugin!` generates carry no
/// docs; the loader finds them by symbol, not by path.
mod export {
    use super::ApplyPatch;
    use toolshed_plugin_api::export_plugin;

    export_plugin! { name: "apply_patch", version: env!("CARGO_PKG_VERSION"), tools: [ApplyPatch] }
}
