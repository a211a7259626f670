//! The validate stage: a tool use's input parsed and checked as Cline checks it before the tool sees it, and
//! the texts derived from it: the result header from the tool's display template and the loop-detection
//! signature.
//!
//! The order is Cline's executor's: the declared parameter aliases first (`canonicalizeAttemptCompletionParams`),
//! then the strict PLAN-mode refusal of file modifications, and only then the required parameters, which a
//! tool that checks its own ([`ToolMeta::checks_parameters`](crate::registry::coordinator::ToolMeta)) checks
//! itself: Cline has no generic check, each handler checks its parameters in its own order, some after a gate.

use crate::messages;
use crate::registry::coordinator::Route;
use crate::task::TaskShared;
use crate::types::{Mode, ResultStatus, ToolInput, ToolResult, ToolUse};
use serde_json::Value;
use toolshed_plugin_api::capability;

/// A tool use that passed the checks.
pub(super) struct Valid {
    pub input: Value,
    pub description: String,
    pub signature: u128,
}

/// A tool use that did not, with its loop-detection signature when the input was readable.
pub(super) struct Invalid {
    pub result: ToolResult,
    pub signature: Option<u128>,
    /// Whether the model made a mistake (a plan-mode refusal is not one).
    pub mistake: bool,
}

/// Parses and checks a tool use's input for its route.
pub(super) fn validate(route: &Route, task: &TaskShared, tool_use: &mut ToolUse) -> Result<Valid, Box<Invalid>> {
    // Taken, not cloned: an input can be a whole file's content.
    let input = match std::mem::replace(&mut tool_use.input, ToolInput::Json(Value::Null)) {
        ToolInput::Json(value) => value,
        ToolInput::Text(text) => match serde_json::from_str::<Value>(&text) {
            Ok(value) => value,
            Err(e) => {
                let text = format!(
                    "Invalid JSON input for {}: {e}. Please retry with the parameters as one JSON object.",
                    tool_use.name
                );
                let description = describe(route.meta.display.as_deref(), &tool_use.name, &Value::Null);
                return Err(Box::new(Invalid {
                    result: error(tool_use, description, &text),
                    signature: None,
                    mistake: true,
                }));
            }
        },
    };
    let mut input = input;
    apply_aliases(&route.meta.param_aliases, &mut input);
    let description = describe(route.meta.display.as_deref(), &tool_use.name, &input);
    let sig = signature_digest(&input);
    if !input.is_object() {
        let text = format!(
            "Invalid input for {}: expected a JSON object of parameters, got {}.",
            tool_use.name,
            json_kind(&input)
        );
        return Err(Box::new(Invalid {
            result: error(tool_use, description, &text),
            signature: Some(sig),
            mistake: true,
        }));
    }
    // Cline's executor refuses a file modification in PLAN mode before the handler looks at any parameter.
    if task.mode() == Mode::Plan && route.meta.capabilities.iter().any(|c| c == capability::WRITES_FILES) {
        let text = messages::plan_mode_refusal(&tool_use.name);
        return Err(Box::new(Invalid { result: error(tool_use, description, &text), signature: None, mistake: false }));
    }
    let unchecked: &[(String, bool)] = if route.meta.checks_parameters { &[] } else { &route.meta.required };
    if let Some((param, _)) =
        unchecked.iter().find(|(name, allow_empty)| is_missing(input.get(name.as_str()), *allow_empty))
    {
        let text = messages::missing_parameter(param);
        return Err(Box::new(Invalid {
            result: error(tool_use, description, &text),
            signature: Some(sig),
            mistake: true,
        }));
    }
    Ok(Valid { input, description, signature: sig })
}

/// Copies each alias's value into its parameter when the parameter is absent, null or empty (JavaScript's
/// `!block.params.result` on Cline's string parameters) and the alias has one, the alias staying, as Cline's
/// `canonicalizeAttemptCompletionParams` does before any handler runs. Cline's `typeof response === "string"`
/// holds for any value a call carries (a native call's values are stringified first); a null is absent here.
pub(crate) fn apply_aliases(aliases: &std::collections::BTreeMap<String, String>, input: &mut Value) {
    let Value::Object(map) = input else { return };
    for (alias, param) in aliases {
        let unset = match map.get(param) {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.is_empty(),
            Some(_) => false,
        };
        if let (true, Some(value)) = (unset, map.get(alias).filter(|v| !v.is_null())) {
            let value = value.clone();
            map.insert(param.clone(), value);
        }
    }
}

fn error(tool_use: &ToolUse, description: String, text: &str) -> ToolResult {
    ToolResult::plain(tool_use, description, ResultStatus::Error, messages::tool_error(text))
}

/// Renders a display template: `{tool}` is the name called, `{x}` input parameter `x` (`undefined` when
/// missing, as Cline renders it), `{a|b}` the first of `a` and `b` present (Cline's `path || absolutePath`),
/// and `{?x:text}` renders `text` only when `x` is present (search_files' ` in '{file_pattern}'`).
pub(crate) fn describe(template: Option<&str>, tool: &str, input: &Value) -> String {
    let Some(template) = template else {
        // Pieced together: `format!` costs several times as much on every call of an undescribed tool.
        let mut out = String::with_capacity(tool.len() + 2);
        out.push('[');
        out.push_str(tool);
        out.push(']');
        return out;
    };
    let mut out = String::with_capacity(template.len() + 16);
    render(template, tool, input, &mut out);
    out
}

fn present<'a>(input: &'a Value, keys: &str) -> Option<&'a Value> {
    keys.split('|').find_map(|k| input.get(k).filter(|v| !v.is_null()))
}

fn render(template: &str, tool: &str, input: &Value, out: &mut String) {
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        // The matching close brace, counting nested ones (a conditional's text holds placeholders).
        let mut depth = 0usize;
        let close = after.char_indices().find_map(|(i, c)| match c {
            '{' => {
                depth += 1;
                None
            }
            '}' if depth == 0 => Some(i),
            '}' => {
                depth -= 1;
                None
            }
            _ => None,
        });
        let Some(close) = close else {
            out.push('{');
            rest = after;
            continue;
        };
        let key = &after[..close];
        if key == "tool" {
            out.push_str(tool);
        } else if let Some(conditional) = key.strip_prefix('?') {
            let (keys, text) = conditional.split_once(':').unwrap_or((conditional, ""));
            if present(input, keys).is_some() {
                render(text, tool, input, out);
            }
        } else {
            match present(input, key) {
                Some(Value::String(s)) => out.push_str(s),
                Some(other) => out.push_str(&other.to_string()),
                None => out.push_str("undefined"),
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
}

/// Cline's "missing" test: absent, null, or a blank string (unless the parameter allows empty strings).
pub(crate) fn is_missing(value: Option<&Value>, allow_empty: bool) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => !allow_empty && s.trim().is_empty(),
        Some(_) => false,
    }
}

/// The loop-detection signature: the input with keys sorted at every level and `task_progress` left out.
pub(crate) fn signature(input: &Value) -> String {
    let mut out = Vec::new();
    canonical(input, true, &mut out);
    // serde_json writes UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// What loop detection compares: an xxh3-128 of [`signature`]'s text, streamed past a few hundred bytes, so no
/// call copies its input (a write's whole content) into a string to be compared once and dropped. A shorter
/// text (nearly every call's) is hashed in one pass from a buffer on the stack: the streaming state is over
/// half a kilobyte to set up and move, more than the hash of a short input costs.
pub(crate) fn signature_digest(input: &Value) -> u128 {
    /// Texts up to this long are hashed in one pass.
    const SHORT: usize = 256;
    /// Feeds what is written to the hash.
    struct Hashing {
        short: [u8; SHORT],
        len: usize,
        long: Option<Box<xxhash_rust::xxh3::Xxh3>>,
    }
    impl std::io::Write for Hashing {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            match &mut self.long {
                Some(long) => long.update(bytes),
                // Most writes are one byte of punctuation: stored without a call to copy it.
                None if bytes.len() == 1 && self.len < SHORT => {
                    self.short[self.len] = bytes[0];
                    self.len += 1;
                }
                None if self.len + bytes.len() <= SHORT => {
                    self.short[self.len..self.len + bytes.len()].copy_from_slice(bytes);
                    self.len += bytes.len();
                }
                None => {
                    let mut long = Box::new(xxhash_rust::xxh3::Xxh3::new());
                    long.update(&self.short[..self.len]);
                    long.update(bytes);
                    self.long = Some(long);
                }
            }
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut hashing = Hashing { short: [0; SHORT], len: 0, long: None };
    canonical(input, true, &mut hashing);
    match hashing.long {
        Some(long) => long.digest128(),
        None => xxhash_rust::xxh3::xxh3_128(&hashing.short[..hashing.len]),
    }
}

/// Writes `value` with its keys sorted, leaving out the top level's `task_progress` (`top`), without copying
/// the input first (it can be a whole file's content). Printed by hand in key order, whatever map type
/// serde_json was built with.
fn canonical(value: &Value, top: bool, out: &mut impl std::io::Write) {
    // Writing into a `Vec` or a hash fails only for values that cannot be JSON, which these are not.
    match value {
        Value::Object(map) => {
            let kept = |key: &&String| !(top && key.as_str() == "task_progress");
            let _ = out.write_all(b"{");
            // A map whose keys come sorted (one key, or written in order, as models mostly write them) is walked
            // as it is, with no list of keys to allocate; the keys keep the order they were written in here.
            if map.keys().is_sorted() {
                members(map.iter().filter(|(key, _)| kept(key)), out);
            } else {
                let mut keys: Vec<&String> = map.keys().filter(kept).collect();
                keys.sort_unstable();
                members(keys.into_iter().map(|key| (key, &map[key])), out);
            }
            let _ = out.write_all(b"}");
        }
        Value::Array(items) => {
            let _ = out.write_all(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    let _ = out.write_all(b",");
                }
                canonical(item, false, out);
            }
            let _ = out.write_all(b"]");
        }
        // A string (quoted and escaped), number, boolean or null as JSON.
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

/// An object's members, in the order given, for [`canonical`].
fn members<'a>(members: impl Iterator<Item = (&'a String, &'a Value)>, out: &mut impl std::io::Write) {
    for (i, (key, value)) in members.enumerate() {
        if i > 0 {
            let _ = out.write_all(b",");
        }
        let _ = serde_json::to_writer(&mut *out, key);
        let _ = out.write_all(b":");
        canonical(value, false, out);
    }
}

pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn descriptions_render_like_cline() {
        let t = Some("[{tool} for '{path}']");
        assert_eq!(describe(t, "read_file", &json!({"path": "src/a.rs"})), "[read_file for 'src/a.rs']");
        assert_eq!(describe(t, "read_file", &json!({})), "[read_file for 'undefined']");
        assert_eq!(describe(None, "x", &json!({})), "[x]");
        let search = Some("[{tool} for '{regex}'{?file_pattern: in '{file_pattern}'}]");
        assert_eq!(describe(search, "search_files", &json!({"regex": "a"})), "[search_files for 'a']");
        assert_eq!(
            describe(search, "search_files", &json!({"regex": "a", "file_pattern": "*.rs"})),
            "[search_files for 'a' in '*.rs']"
        );
        let either = Some("[{tool} for '{path|absolutePath}']");
        assert_eq!(describe(either, "write_to_file", &json!({"absolutePath": "/a"})), "[write_to_file for '/a']");
        assert_eq!(describe(Some("[{tool} {n}] {"), "x", &json!({"n": 3})), "[x 3] {");
    }

    #[test]
    fn aliases_fill_an_unset_parameter_as_cline_does() {
        let aliases = [("response".to_owned(), "result".to_owned())].into_iter().collect();
        let cases = [
            (json!({"response": "done"}), json!({"response": "done", "result": "done"})),
            (json!({"response": "done", "result": ""}), json!({"response": "done", "result": "done"})),
            (json!({"response": "done", "result": null}), json!({"response": "done", "result": "done"})),
            (json!({"response": "", "result": null}), json!({"response": "", "result": ""})),
            // A result that is there wins; any value but null is copied (Cline stringifies it first).
            (json!({"response": "done", "result": "mine"}), json!({"response": "done", "result": "mine"})),
            (json!({"response": 5}), json!({"response": 5, "result": 5})),
            (json!({"response": null}), json!({"response": null})),
            (json!("text"), json!("text")),
        ];
        for (mut input, expected) in cases {
            apply_aliases(&aliases, &mut input);
            assert_eq!(input, expected);
        }
    }

    #[test]
    fn the_signature_sorts_keys_at_every_level_and_leaves_out_only_the_top_task_progress() {
        let input = json!({
            "b": 1.5, "a": {"d": [1, "x\"y\u{7}", true], "c": null, "task_progress": "kept"},
            "task_progress": "- [ ] left out", "é": "ü",
        });
        assert_eq!(
            signature(&input),
            r#"{"a":{"c":null,"d":[1,"x\"y\u0007",true],"task_progress":"kept"},"b":1.5,"é":"ü"}"#
        );
        assert_eq!(signature(&json!("text")), r#""text""#);
        assert_eq!(signature(&json!({"task_progress": "x"})), "{}");
        // Keys already in order take the walk without a sorted list; the result is the same.
        assert_eq!(
            signature(&json!({"a": 1, "task_progress": "x", "z": {"task_progress": 2}})),
            r#"{"a":1,"z":{"task_progress":2}}"#
        );
    }

    #[test]
    fn the_digest_is_the_hash_of_the_signature_and_tells_inputs_apart() {
        let inputs = [
            json!({"path": "a.rs", "task_progress": "- [ ] x"}),
            json!({"task_progress": "- [x] y", "path": "a.rs"}),
            json!({"path": "b.rs"}),
            json!({"path": ["a.rs"]}),
            json!({"a": {"b": 1}, "c": [true, null]}),
            json!({"c": [true, null], "a": {"b": 1}}),
            // Either side of the one-pass buffer, and far past it (streamed).
            json!({"p": "x".repeat(247)}),
            json!({"p": "x".repeat(248)}),
            json!({"p": "x".repeat(249), "q": ["y", "y", "y"]}),
            json!({"p": "é".repeat(10_000)}),
        ];
        for input in &inputs {
            let text = signature(input);
            assert_eq!(signature_digest(input), xxhash_rust::xxh3::xxh3_128(text.as_bytes()), "{text}");
        }
        // Only the top level's task_progress and the order of keys do not count.
        assert_eq!(signature_digest(&inputs[0]), signature_digest(&inputs[1]));
        assert_ne!(signature_digest(&inputs[0]), signature_digest(&inputs[2]));
        assert_ne!(signature_digest(&inputs[0]), signature_digest(&inputs[3]));
        assert_eq!(signature_digest(&inputs[4]), signature_digest(&inputs[5]));
    }

    #[test]
    fn missing_means_absent_null_or_blank() {
        assert!(is_missing(None, false));
        assert!(is_missing(Some(&json!(null)), true));
        assert!(is_missing(Some(&json!("  \n")), false));
        assert!(!is_missing(Some(&json!("")), true));
        assert!(!is_missing(Some(&json!("a")), false));
        assert!(!is_missing(Some(&json!(0)), false));
    }
}
