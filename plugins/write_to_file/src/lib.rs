//! Cline's file-writing tools as one Toolshed plugin: `write_to_file` with its aliases `replace_in_file` and
//! `new_rule`, served by one stateless handler that branches on the name it was called under.
//!
//! - `write_to_file` writes a whole file, after Cline's preprocessing (code fences stripped; for models other
//!   than Claude, HTML entities unescaped), creating parent directories.
//! - `replace_in_file` applies SEARCH/REPLACE blocks with Cline's parser and matching tiers; a failure
//!   returns Cline's `diffError` text with the file's original content.
//! - `new_rule` is `write_to_file` restricted to `.clinerules/` at the top of the workspace.
//!
//! Names, parameters, result texts and error texts are Cline's. Where Cline can lose work we keep the format
//! and fix the behaviour: every write goes to a temporary file in the same directory and is renamed into
//! place, keeping the file's permissions, encoding (legacy ones included), byte-order mark and CRLF line
//! endings; a failed edit leaves the
//! file byte for byte as it was; the path is checked against the workspace and `.clineignore` after symbolic
//! links are resolved; read-only files are refused; a diff that would drop or garble an edit is an error;
//! an empty `content` writes an empty file (Cline prints `undefined`). Streamed tool uses report progress to
//! the UI through `say`, with their state in the task's state (see [`stream`](crate)).
//!
//! ```
//! use toolshed_plugin_api::Tool;
//!
//! let declaration = write_to_file::WriteToFile::declaration();
//! let names: Vec<_> = declaration.aliases.iter().map(|a| a.name.as_str()).collect();
//! assert_eq!((declaration.name.as_str(), names), ("write_to_file", vec!["replace_in_file", "new_rule"]));
//! ```
#![deny(missing_docs)]

mod content;
mod diff;
/// Entry points for the fuzz targets in `fuzz-targets/` (issue 16); not a supported API.
#[doc(hidden)]
pub mod fuzzing;
mod messages;
#[cfg(test)]
mod props;
mod spec;
mod stream;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod upstream;

// The edit crate shared with apply_patch (plugin-libs/edit), under the name the call sites use.
use toolshed_edit as edit_io;

use edit_io::{Change, LineEndings, Target, TargetError, TextFile, Transaction};
use serde::Deserialize;
use std::hash::{DefaultHasher, Hasher};
use std::path::Component;
use toolshed_plugin_api::sdk::lenient_string;
use toolshed_plugin_api::{
    log_level, result, Failure, HostClient, Outcome, PartialBlock, Prepared, Risk, TaskInfo, Tool, ToolCall,
    ToolDeclaration, ToolError, ToolInit,
};

/// The model's input, for all three names. Values that are not strings arrive stringified, as in Cline.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct WriteToFileArgs {
    /// The file, relative to the workspace, absolute, or `@root:path`.
    #[serde(deserialize_with = "lenient_string")]
    pub path: Option<String>,
    /// The file, as Cline's native-tool-calling families name it.
    #[serde(rename = "absolutePath", deserialize_with = "lenient_string")]
    pub absolute_path: Option<String>,
    /// The whole new content (`write_to_file`, `new_rule`).
    #[serde(deserialize_with = "lenient_string")]
    pub content: Option<String>,
    /// SEARCH/REPLACE blocks (`replace_in_file`).
    #[serde(deserialize_with = "lenient_string")]
    pub diff: Option<String>,
}

impl WriteToFileArgs {
    /// `path || absolutePath`, unless both are missing or blank.
    fn requested_path(&self) -> Option<&str> {
        [&self.path, &self.absolute_path].into_iter().flatten().map(|p| p.trim()).find(|p| !p.is_empty())
    }
}

/// Which of the three names a call came in under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    Write,
    Replace,
    NewRule,
}

impl Name {
    fn of(tool: &str) -> Option<Name> {
        match tool {
            "write_to_file" => Some(Name::Write),
            "replace_in_file" => Some(Name::Replace),
            "new_rule" => Some(Name::NewRule),
            _ => None,
        }
    }

    /// The verb of Cline's failure texts: "Failed to edit" or "Failed to write to".
    fn verb(self) -> &'static str {
        match self {
            Name::Replace => "edit",
            Name::Write | Name::NewRule => "write to",
        }
    }
}

/// The one handler behind `write_to_file`, `replace_in_file` and `new_rule`. It holds nothing: streamed
/// progress, approvals and failure counts live in the task's state on the host.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteToFile;

/// A checked, computed write, ready to be approved and committed.
struct Plan {
    name: Name,
    /// The path as the model wrote it, with forward slashes: Cline's `relPath` in every text.
    rel_path: String,
    target: Target,
    /// A hash of the file's bytes before the write (`None`: no file), to notice a change after approval.
    before: Option<u64>,
    /// The bytes to write.
    bytes: Vec<u8>,
    /// Their text without the byte-order mark, for the result.
    written: String,
}

/// A failure before anything was written.
struct Refusal {
    message: String,
    mistake: bool,
}

impl Refusal {
    fn mistake(message: String) -> Self {
        Refusal { message, mistake: true }
    }

    fn error(message: String) -> Self {
        Refusal { message, mistake: false }
    }

    fn into_tool_error(self) -> ToolError {
        ToolError { message: self.message, mistake: self.mistake }
    }
}

/// The approval record of a file that did not exist yet.
const NO_FILE: &str = "none";

fn hash(bytes: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    hasher.write(bytes);
    hasher.finish()
}

fn approval_key(tool: &str, target: &Target) -> String {
    format!("write_to_file:approved:{tool}:{}", target.real.display())
}

/// The card kind Cline's UI shows for a write.
fn card_kind(exists: bool) -> &'static str {
    if exists {
        "editedExistingFile"
    } else {
        "newFileCreated"
    }
}

/// Whether `new_rule` may write there: a file inside `.clinerules/` at the top of the primary root.
fn is_rule_path(target: &Target) -> bool {
    let mut components = target.root_relative.components();
    target.in_primary_root
        && components.next() == Some(Component::Normal(".clinerules".as_ref()))
        && components.next().is_some()
}

/// The diff as it is parsed: CRLF line breaks as LF, and Cline's model fixes for models other than Claude.
fn prepared_diff(diff: &str, path: &str, task: &TaskInfo) -> String {
    let diff = diff.replace("\r\n", "\n");
    if content::needs_model_fixes(&task.model_family) {
        content::model_fixes(&diff, path)
    } else {
        diff
    }
}

/// The file's text as the diff sees it: without its byte-order mark, and with LF line breaks when every
/// break is CRLF (restored on write).
fn working_text(file: &TextFile) -> (String, LineEndings) {
    match LineEndings::of(&file.text) {
        LineEndings::Crlf => (file.text.replace("\r\n", "\n"), LineEndings::Crlf),
        other => (file.text.clone(), other),
    }
}

/// Reads the target as text, or an empty text when it does not exist yet.
fn read_text(target: &Target, name: Name, rel_path: &str) -> Result<(TextFile, Option<u64>), Refusal> {
    if !target.exists {
        return Ok((TextFile::utf8(String::new()), None));
    }
    let bytes =
        edit_io::read(&target.real).map_err(|e| Refusal::error(messages::cannot_write(name.verb(), rel_path, &e)))?;
    let before = Some(hash(&bytes));
    let file = TextFile::decode(&bytes).map_err(|reason| {
        Refusal::mistake(messages::cannot_write(name.verb(), rel_path, &format!("{} {reason}.", target.real.display())))
    })?;
    Ok((file, before))
}

/// The file's new text: the located edits applied to its working text, its line breaks restored. (Shared with
/// the fuzz entry point, so the fuzzer checks the code the tool runs.)
fn edited_text(working: &str, style: LineEndings, edits: &[diff::Edit]) -> String {
    let updated = diff::apply(working, edits);
    match style {
        // The exact inverse of `working_text`: every `\n` was a `\r\n`. (`LineEndings::apply` first folds
        // `\r\n` to `\n`, which turned a `\r\r\n` anywhere in the file into `\r\n`: a byte lost outside the
        // edit, found writing the replace_in_file fuzz target: fuzz/regressions/replace_in_file.)
        LineEndings::Crlf => updated.replace('\n', "\r\n"),
        LineEndings::Lf | LineEndings::Mixed => updated,
    }
}

impl WriteToFile {
    /// Checks the call and computes what to write. With `report` (in `prepare`), it also tells the UI, counts
    /// a missing `content`, and finishes the streamed progress.
    fn plan(&self, call: &ToolCall<WriteToFileArgs>, host: &HostClient<'_>, report: bool) -> Result<Plan, Refusal> {
        let Some(name) = Name::of(&call.tool) else {
            return Err(Refusal::error(format!(
                "The write_to_file plugin does not serve a tool named '{}'.",
                call.tool
            )));
        };
        let input = &call.input;
        let Some(raw) = input.requested_path() else {
            return Err(Refusal::mistake(messages::missing_parameter("path")));
        };
        let rel_path = messages::posix(raw);
        match name {
            Name::Replace if input.diff.as_deref().is_none_or(str::is_empty) => {
                return Err(Refusal::mistake(messages::missing_diff(&rel_path)));
            }
            Name::Write if input.content.is_none() => {
                // Cline counts with the task's consecutive mistakes, this one included.
                let failures = host.task_settings(&call.task).map_or(0, |s| s.consecutive_mistakes).saturating_add(1);
                if report {
                    let next = if failures >= 2 {
                        "This has happened multiple times — Cline will try a different approach."
                    } else {
                        "Retrying..."
                    };
                    host.say(
                        "error",
                        &format!("Cline tried to use write_to_file for '{rel_path}' without value for required parameter 'content'. {next}"),
                        false,
                    );
                }
                return Err(Refusal::mistake(messages::missing_content(&rel_path, failures)));
            }
            Name::NewRule if input.content.as_deref().is_none_or(str::is_empty) => {
                return Err(Refusal::mistake(messages::missing_parameter("content")));
            }
            Name::Write | Name::Replace | Name::NewRule => {}
        }

        let target = match edit_io::locate(host, raw, &call.task) {
            Ok(target) => target,
            Err(TargetError::Ignored) => {
                if report {
                    host.say("clineignore_error", raw, false);
                }
                return Err(Refusal::mistake(messages::clineignore(raw)));
            }
            Err(error @ TargetError::Failed(_)) => {
                return Err(Refusal::error(messages::cannot_write(name.verb(), &rel_path, &error.reason())))
            }
            Err(error) => {
                return Err(Refusal::mistake(messages::cannot_write(name.verb(), &rel_path, &error.reason())))
            }
        };
        if name == Name::NewRule && !is_rule_path(&target) {
            return Err(Refusal::mistake(messages::not_a_rule_path(&rel_path)));
        }
        let key = stream::key(&call.tool, raw);

        let (file, before) = read_text(&target, name, &rel_path).or_else(|refusal| match name {
            // A whole-file write does not need the old text; an undecodable file is simply replaced.
            Name::Write | Name::NewRule if target.exists => {
                let bytes = edit_io::read(&target.real)
                    .map_err(|e| Refusal::error(messages::cannot_write(name.verb(), &rel_path, &e)))?;
                Ok((TextFile::utf8(String::new()), Some(hash(&bytes))))
            }
            _ => Err(refusal),
        })?;

        let written = match name {
            Name::Write | Name::NewRule => {
                let raw_content = input.content.as_deref().unwrap_or_default();
                let mut text = content::strip_fences(raw_content);
                if content::needs_model_fixes(&call.task.model_family) {
                    text = content::model_fixes(&text, raw);
                }
                // Cline drops a byte-order mark at the start of the content; the file's own mark is kept below.
                let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
                let written = match LineEndings::of(&file.text) {
                    style @ (LineEndings::Lf | LineEndings::Crlf) if target.exists => style.apply(text),
                    _ => text.to_owned(),
                };
                if report {
                    stream::content_final(host, &key, card_kind(target.exists), &target.display, raw_content, &written);
                }
                written
            }
            Name::Replace => {
                let diff = prepared_diff(input.diff.as_deref().unwrap_or_default(), raw, &call.task);
                let (working, style) = working_text(&file);
                let parsed = if report {
                    stream::diff_final(host, &key, &target.display, &diff, &working)
                } else {
                    diff::parse(&diff, &working, true)
                };
                let edits = parsed
                    .map_err(|error| Refusal::mistake(messages::diff_error(&error.message, &rel_path, &file.text)))?;
                edited_text(&working, style, &edits)
            }
        };
        // The file's own encoding (a new file, or one that was not text, is written in UTF-8).
        let bytes = file.encode(&written).map_err(|reason| {
            Refusal::mistake(messages::cannot_write(name.verb(), &rel_path, &format!("{reason}.")))
        })?;
        Ok(Plan { name, rel_path, target, before, bytes, written })
    }
}

impl Tool for WriteToFile {
    type Args = WriteToFileArgs;

    fn declaration() -> ToolDeclaration {
        spec::declaration()
    }

    fn new(_init: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(WriteToFile))
    }

    fn prepare(&self, call: &ToolCall<WriteToFileArgs>, host: &HostClient<'_>) -> Result<Prepared, Failure> {
        let plan = match self.plan(call, host, true) {
            Ok(plan) => plan,
            Err(refusal) => return Ok(Prepared::Error(refusal.into_tool_error())),
        };
        let key = approval_key(&call.tool, &plan.target);
        let before = plan.before.map_or_else(|| NO_FILE.to_owned(), |h| h.to_string());
        let _ = host.state_set(&key, Some(before.into()));
        // Cline's approval notification: "Cline wants to edit a.rs" or "Cline wants to create a.rs".
        let verb = if plan.target.exists { "edit" } else { "create" };
        Ok(result::approval(
            "write",
            format!("Cline wants to {verb} {}", plan.target.display),
            plan.target.approval_paths(),
            Risk::Medium,
        ))
    }

    fn execute(&self, call: &ToolCall<WriteToFileArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let plan = match self.plan(call, host, false) {
            Ok(plan) => plan,
            Err(refusal) => return Ok(Outcome::Error(refusal.into_tool_error())),
        };
        let key = approval_key(&call.tool, &plan.target);
        // What the user approved was computed from the file as it was then; refuse if it has changed since.
        if let Ok(Some(approved)) = host.state_get(&key) {
            let _ = host.state_set(&key, None);
            let approved_before = match approved.as_str() {
                Some(NO_FILE) => Some(None),
                Some(h) => h.parse::<u64>().ok().map(Some),
                None => None,
            };
            if approved_before != Some(plan.before) {
                return Ok(result::mistake(messages::changed_since_approval(&plan.rel_path)));
            }
        }
        let mut transaction = Transaction::new();
        transaction.push(Change::Write { path: plan.target.real.clone(), bytes: plan.bytes, permissions_from: None });
        if let Err(e) = transaction.commit(&|| host.commit()) {
            return Ok(result::error(messages::cannot_write(plan.name.verb(), &plan.rel_path, &format!("{e}."))));
        }
        if let Err(e) = host.forget_reads(plan.target.cache_paths()) {
            host.log(log_level::WARN, &format!("read_cache.forget: {e}"));
        }
        Ok(result::text(messages::saved(&plan.rel_path, &messages::final_content(&plan.written))))
    }

    fn partial(&self, block: &PartialBlock, host: &HostClient<'_>) {
        let Some(name) = Name::of(&block.tool) else { return };
        let Ok(input) = serde_json::from_value::<WriteToFileArgs>(block.input.clone()) else { return };
        let Some(raw) = input.requested_path() else { return };
        // Cline waits for the parameter that follows the path, so the path is complete by then.
        let text = match name {
            Name::Replace => input.diff.as_deref().filter(|d| !d.is_empty()),
            Name::Write | Name::NewRule => input.content.as_deref(),
        };
        let Some(text) = text else { return };
        // No progress for a path the call could not write.
        let Ok(target) = edit_io::locate(host, raw, &block.task) else { return };
        if name == Name::NewRule && !is_rule_path(&target) {
            return;
        }
        let key = stream::key(&block.tool, raw);
        match name {
            Name::Replace => {
                let diff = prepared_diff(stream::complete_lines(text), raw, &block.task);
                let original = || match read_text(&target, name, raw) {
                    Ok((file, _)) => Some(working_text(&file).0),
                    Err(_) => None,
                };
                stream::diff_partial(host, &key, &target.display, &diff, original);
            }
            Name::Write | Name::NewRule => {
                stream::content_partial(host, &key, card_kind(target.exists), &target.display, text)
            }
        }
    }
}

/// The exported root module. It sits in a private module because the items `export_plugin!` generates carry no
/// docs; the loader finds them by symbol, not by path.
mod export {
    use super::WriteToFile;
    use toolshed_plugin_api::export_plugin;

    export_plugin! { name: "write_to_file", version: env!("CARGO_PKG_VERSION"), tools: [WriteToFile] }
}
