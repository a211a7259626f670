//! Targets for tool-use input: the JSON text the executor parses (OpenAI-style `arguments`), through the
//! executor's checks and into the shipped tools' argument types, and `execute_command`'s permission rules.

use crate::parts;
use execute_command::permissions::{denial_message, CommandPermissions};
use serde_json::Value;
use toolshed::fuzzing::{tool_input as check_input, InputVerdict};
use toolshed_plugin_api::{Tool, ToolDeclaration};

/// A tool as the executor sees it: its name, result-header template and required parameters (name, empty
/// allowed).
type ToolMeta = (String, Option<String>, Vec<(String, bool)>);

/// The result-header templates and required parameters of the tools linked here, plus templates that use
/// every placeholder form (`{a|b}`, `{?x:…}`, nested, unclosed).
fn tools() -> Vec<ToolMeta> {
    let declarations: [ToolDeclaration; 3] = [
        write_to_file::WriteToFile::declaration(),
        apply_patch::ApplyPatch::declaration(),
        execute_command::ExecuteCommand::declaration(),
    ];
    let mut tools = Vec::new();
    for declaration in declarations {
        let required: Vec<(String, bool)> = declaration
            .specs
            .get("generic")
            .map(|spec| {
                spec.parameters.iter().filter(|p| p.required).map(|p| (p.name.clone(), p.allow_empty)).collect()
            })
            .unwrap_or_default();
        tools.push((declaration.name.clone(), declaration.display.clone(), required.clone()));
        for alias in &declaration.aliases {
            tools.push((alias.name.clone(), declaration.display.clone(), required.clone()));
        }
    }
    for template in ["[{tool} for '{path|absolutePath}']{?regex: in '{regex}'}", "{?a:{?b:{c}}}{", "}{x{y}"] {
        tools.push(("synthetic".to_owned(), Some(template.to_owned()), vec![("path".to_owned(), false)]));
    }
    tools
}

/// Tool-input JSON: the executor's parse, object and missing-parameter checks, the result header, the
/// loop-detection signature, then the tools' argument types. Invariants: no panic; the signature is JSON
/// that parses back to the input without `task_progress`; printing the input and parsing it again gives the
/// same input; the verdict is the executor's order of checks.
pub fn tool_input(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let parsed = serde_json::from_str::<Value>(&text).ok();
    for (name, display, required) in tools() {
        let verdict = check_input(&name, display.as_deref(), &required, &text);
        match (&verdict, &parsed) {
            (InputVerdict::InvalidJson, None) => {}
            (InputVerdict::NotAnObject { .. }, Some(value)) => assert!(!value.is_object()),
            (InputVerdict::Missing { param, .. }, Some(value)) => {
                assert!(required.iter().any(|(p, _)| p == param), "{param} is not required");
                assert!(value.is_object());
            }
            (InputVerdict::Ready { signature, input, description }, Some(value)) => {
                assert_eq!(input, value);
                assert!(!description.is_empty());
                let mut without_progress = input.clone();
                if let Value::Object(map) = &mut without_progress {
                    map.remove("task_progress");
                }
                let reparsed: Value = serde_json::from_str(signature)
                    .unwrap_or_else(|e| panic!("the signature {signature:?} is not JSON: {e}"));
                assert!(same_json(&reparsed, &without_progress), "the signature does not round trip: {signature}");
            }
            (verdict, parsed) => panic!("verdict {verdict:?} for {parsed:?}"),
        }
    }
    let Some(value) = parsed else {
        return;
    };
    let printed = value.to_string();
    let reparsed: Value = serde_json::from_str(&printed).unwrap_or_else(|e| panic!("{printed:?} does not parse: {e}"));
    assert!(same_json(&reparsed, &value), "print/parse does not round trip: {reparsed} != {value}");
    // The plugins' own argument types (lenient strings, integers and booleans): errors are fine, panics not.
    if let Ok(args) = serde_json::from_value::<write_to_file::WriteToFileArgs>(value.clone())
        && let Some(Value::String(path)) = value.get("path")
    {
        assert_eq!(args.path.as_deref(), Some(path.as_str()));
    }
    let _ = serde_json::from_value::<apply_patch::ApplyPatchArgs>(value.clone());
    let _ = serde_json::from_value::<execute_command::ExecuteCommandArgs>(value);
}

/// JSON equality, except that floats may differ in their last bit: serde_json without its `float_roundtrip`
/// feature parses some 17-digit floats to a neighbour of the value printed (the fuzzer found
/// `4.4444444444444444e23`), so the executor's print → the plugin's parse can move such a float by one unit
/// in the last place. Everything else must round trip exactly.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y || (x - y).abs() <= x.abs().max(y.abs()) * 4.0 * f64::EPSILON,
            _ => false,
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// Rule sets whose verdicts are known for any command.
const FIXED_RULES: &[(&str, &[&str])] = &[
    // Everything is denied, one way or another (a command without segments, such as `(( x ))`, by being
    // unverifiable).
    (
        r#"{"deny": ["*"]}"#,
        &["denied", "segment_denied", "shell_operator_detected", "parse_error", "redirect_detected", "unverifiable"],
    ),
    // Everything is allowed that can be parsed, has no line break or backtick outside quotes, and is inert.
    (r#"{"allow": ["*"], "allowRedirects": true}"#, &["shell_operator_detected", "parse_error", "unverifiable"]),
    // No list: only the structural checks refuse.
    (r#"{"allow": [], "deny": []}"#, &["shell_operator_detected", "parse_error", "redirect_detected", "unverifiable"]),
];

/// `CLINE_COMMAND_PERMISSIONS` (the first part) and a command (the second): the setting parses or is an
/// error, the command is checked without panicking or hanging, and under fixed rule sets the verdicts are
/// the ones those rules allow.
pub fn command_permissions(data: &[u8]) {
    let parts = parts(data);
    let (setting, command) = match parts.as_slice() {
        [command] => ("", command.as_str()),
        [setting, command, ..] => (setting.as_str(), command.as_str()),
        [] => return,
    };
    if let Ok(rules) = CommandPermissions::from_json(setting)
        && let Err(denial) = rules.check(command)
    {
        assert!(!denial_message(command, &denial).is_empty());
    }
    let check = |json: &str| match CommandPermissions::from_json(json) {
        Ok(rules) => rules.check(command),
        Err(e) => panic!("fixed rules {json} do not parse: {e}"),
    };
    // An allow list that matches nothing denies every segment, so it allows exactly the commands without any
    // (blank, a comment, `! # …`): those run nothing, and a deny-everything rule must allow the same ones.
    let nothing_to_check = check(r#"{"allow": ["\u0000never"]}"#).is_ok();
    for (json, reasons) in FIXED_RULES {
        match check(json) {
            Ok(()) => assert!(!json.contains("deny\": [\"*") || nothing_to_check, "{json} allowed {command:?}"),
            Err(denial) => assert!(reasons.contains(&denial.reason), "{json}: {command:?} gave {denial:?}"),
        }
    }
}
