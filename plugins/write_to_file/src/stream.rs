//! Progress for the user's UI while a tool use streams in, kept where a stateless handler can keep it: the
//! task's state on the host, under the tool name and path (a streamed block carries no tool-use id).
//!
//! Events are tied to milestones of the text, never to how it was cut into pieces: only complete lines count,
//! a diff's milestone is a SEARCH/REPLACE block whose REPLACE marker has arrived, and a content's milestones
//! are its 1st, 2nd, 4th, 8th, … complete line. Each call emits the milestones reached since the last one, and
//! the final pass (in `prepare`) emits whatever is left and then the complete card. So any split of the same
//! text, streamed and then completed, produces the same events in the same order as no streaming at all.

use crate::diff::{self, DiffError, Edit};
use serde::{Deserialize, Serialize};
use std::hash::{DefaultHasher, Hasher};
use toolshed_plugin_api::HostClient;

/// How far a streamed text has been reported, as stored in the task's state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Progress {
    /// Bytes of complete lines seen.
    consumed: usize,
    /// Their hash, to tell a continuation of the same text from a new one on the same path.
    digest: u64,
    /// Milestones emitted.
    emitted: usize,
    /// The diff already failed: nothing more to report until the final pass.
    failed: bool,
}

/// The task-state key of a streamed call.
pub fn key(tool: &str, path: &str) -> String {
    format!("write_to_file:stream:{tool}:{}", path.trim())
}

fn digest(text: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    hasher.write(text.as_bytes());
    hasher.finish()
}

/// The text up to and including its last line break.
pub fn complete_lines(text: &str) -> &str {
    &text[..text.rfind('\n').map_or(0, |i| i + 1)]
}

/// The stored progress if it describes a prefix of `text`, else a fresh start.
fn load(host: &HostClient<'_>, key: &str, text: &str) -> Option<Progress> {
    let stored = host.state_get(key).ok()?;
    let progress = stored.and_then(|value| serde_json::from_value::<Progress>(value).ok()).unwrap_or_default();
    let continues = text.get(..progress.consumed).is_some_and(|prefix| digest(prefix) == progress.digest);
    Some(if continues { progress } else { Progress::default() })
}

fn save(host: &HostClient<'_>, key: &str, progress: Option<Progress>) {
    let _ = host.state_set(key, progress.and_then(|p| serde_json::to_value(p).ok()));
}

/// Cline's tool card: `{tool, path, content, startLineNumbers?}` as its UI reads it.
pub fn card(kind: &str, path: &str, content: &str, start_lines: Option<Vec<usize>>) -> String {
    let mut card = serde_json::json!({ "tool": kind, "path": path, "content": content });
    if let Some(lines) = start_lines {
        card["startLineNumbers"] = serde_json::json!(lines);
    }
    card.to_string()
}

/// The card of diff milestone `index`: the diff up to that block and where each block so far starts.
fn block_card(path: &str, diff: &str, original: &str, edits: &[Edit], index: usize) -> String {
    let lines = edits[..=index].iter().map(|e| diff::line_of(original, e.start)).collect();
    card("editedExistingFile", path, &diff[..edits[index].diff_end], Some(lines))
}

/// A streamed `diff`: reports the blocks completed since the last call. `original` loads the file's text; it
/// is only called when a marker line arrived.
pub fn diff_partial(
    host: &HostClient<'_>,
    key: &str,
    path: &str,
    diff: &str,
    original: impl FnOnce() -> Option<String>,
) {
    let complete = complete_lines(diff);
    let Some(mut progress) = load(host, key, complete) else { return };
    if progress.consumed == complete.len() {
        return;
    }
    let marker_arrived = complete[progress.consumed..].split('\n').any(diff::is_any_marker);
    progress.consumed = complete.len();
    progress.digest = digest(complete);
    if marker_arrived
        && !progress.failed
        && let Some(original) = original()
    {
        let edits = match diff::parse(complete, &original, false) {
            Ok(edits) => edits,
            Err(DiffError { completed, .. }) => {
                progress.failed = true;
                completed
            }
        };
        for index in progress.emitted..edits.len() {
            host.say("tool", &block_card(path, complete, &original, &edits, index), true);
        }
        progress.emitted = progress.emitted.max(edits.len());
    }
    save(host, key, Some(progress));
}

/// The complete `diff`, in `prepare`: reports the blocks not yet reported, then the complete card or the
/// error, and forgets the stream. Returns the parse.
pub fn diff_final(
    host: &HostClient<'_>,
    key: &str,
    path: &str,
    diff: &str,
    original: &str,
) -> Result<Vec<Edit>, DiffError> {
    let emitted = load(host, key, diff).unwrap_or_default().emitted;
    let parsed = diff::parse(diff, original, true);
    let edits = match &parsed {
        Ok(edits) => edits,
        Err(error) => &error.completed,
    };
    for index in emitted..edits.len() {
        host.say("tool", &block_card(path, diff, original, edits, index), true);
    }
    match &parsed {
        Ok(edits) => {
            let lines = edits.iter().map(|e| diff::line_of(original, e.start)).collect();
            host.say("tool", &card("editedExistingFile", path, diff, Some(lines)), false);
        }
        Err(_) => host.say("diff_error", path, false),
    }
    save(host, key, None);
    parsed
}

/// Where the `n`-th line (1-based) of `text` ends, line break included, if it is complete.
fn end_of_line(text: &str, n: usize) -> Option<usize> {
    text.match_indices('\n').nth(n.checked_sub(1)?).map(|(i, _)| i + 1)
}

/// Emits the content milestones from `from` on that `text` has reached; returns the count reached.
fn content_milestones(host: &HostClient<'_>, kind: &str, path: &str, text: &str, from: usize) -> usize {
    let mut milestone = from;
    while let Some(end) = 1usize.checked_shl(milestone as u32).and_then(|n| end_of_line(text, n)) {
        host.say("tool", &card(kind, path, &text[..end], None), true);
        milestone += 1;
    }
    milestone
}

/// A streamed `content`: reports the line milestones reached since the last call.
pub fn content_partial(host: &HostClient<'_>, key: &str, kind: &str, path: &str, content: &str) {
    let complete = complete_lines(content);
    let Some(mut progress) = load(host, key, complete) else { return };
    if progress.consumed == complete.len() {
        return;
    }
    progress.consumed = complete.len();
    progress.digest = digest(complete);
    progress.emitted = content_milestones(host, kind, path, complete, progress.emitted);
    save(host, key, Some(progress));
}

/// The complete `content`, in `prepare`: the milestones not yet reported, then the complete card with the
/// text that will be written; forgets the stream.
pub fn content_final(host: &HostClient<'_>, key: &str, kind: &str, path: &str, content: &str, written: &str) {
    let emitted = load(host, key, content).unwrap_or_default().emitted;
    content_milestones(host, kind, path, complete_lines(content), emitted);
    host.say("tool", &card(kind, path, written, None), false);
    save(host, key, None);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ends() {
        assert_eq!(end_of_line("a\nb\nc", 1), Some(2));
        assert_eq!(end_of_line("a\nb\nc", 2), Some(4));
        assert_eq!(end_of_line("a\nb\nc", 3), None);
        assert_eq!(end_of_line("a\n", 0), None);
        assert_eq!(complete_lines("a\nb"), "a\n");
        assert_eq!(complete_lines("ab"), "");
    }
}
