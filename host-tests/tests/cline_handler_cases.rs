//! Cline's own handler unit tests, ported as data (`host-tests/data/cline-handler-cases/*.toml`, one file per
//! Cline test file) and run through the real runtime and plugins. Each file's header says how its cases map
//! onto tool calls. A case is run and checked, or marked `skip` (counted, not run) or `difference` (Cline's
//! assertion is checked to fail, and Toolshed's result is checked instead); the counts are asserted so no case
//! drops silently.

use crate::util::*;
use pretty_assertions::assert_eq;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use toolshed::{Config, ResultStatus, Runtime};

/// The commit of cline/cline every data file must name (tag v4.0.10).
const CLINE_COMMIT: &str = "a62df28da4021cd560a7e732775e8bb38d783968";

/// What every case says about itself, whatever its tool.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    name: String,
    skip: Option<String>,
    difference: Option<String>,
    adapted: Option<String>,
}

/// One data file's cases: each case's [`Meta`], and its input when it is not skipped.
fn load<T: DeserializeOwned>(file: &str) -> Vec<(Meta, Option<T>)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/cline-handler-cases").join(file);
    let mut doc: toml::Table = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(doc.get("commit").and_then(|c| c.as_str()), Some(CLINE_COMMIT), "{file}: commit");
    assert!(doc.get("source").and_then(|s| s.as_str()).is_some_and(|s| s.starts_with("apps/vscode/src/")));
    let Some(toml::Value::Array(cases)) = doc.remove("case") else { panic!("{file}: no [[case]]") };
    assert!(doc.keys().all(|k| k == "source" || k == "commit"), "{file}: unknown keys in {doc:?}");
    cases
        .into_iter()
        .map(|case| {
            let toml::Value::Table(mut table) = case else { panic!("{file}: a case is not a table") };
            // The common keys are taken out, so each tool's input can deny unknown keys (a typo fails the test).
            let mut meta = toml::Table::new();
            for key in ["name", "skip", "difference", "adapted"] {
                if let Some(value) = table.remove(key) {
                    meta.insert(key.to_owned(), value);
                }
            }
            let meta: Meta = meta.try_into().unwrap_or_else(|e| panic!("{file}: {e}"));
            let input = match &meta.skip {
                Some(reason) => {
                    assert!(table.is_empty(), "{}: a skipped case holds only its name and reason", meta.name);
                    assert!(reason.len() > 20, "{}: say why it is skipped", meta.name);
                    None
                }
                None => Some(table.try_into().unwrap_or_else(|e| panic!("{}: {e}", meta.name))),
            };
            (meta, input)
        })
        .collect()
}

/// The cases to run (all but the skipped), each with its input.
fn runnable<T>(cases: &[(Meta, Option<T>)]) -> impl Iterator<Item = (&Meta, &T)> {
    cases.iter().filter_map(|(meta, input)| input.as_ref().map(|input| (meta, input)))
}

/// How a data file's cases divide; each test asserts its file's numbers, so no case drops silently.
#[derive(Debug, PartialEq, Eq)]
struct Counts {
    /// Every case (one per `it(...)`, or per assertion where the file says so).
    cases: usize,
    /// The cases run and checked: all but the skipped.
    run: usize,
    /// Run cases whose Cline assertions fail by a deliberate difference, with Toolshed's result checked.
    differences: usize,
    /// Run cases whose stub was replaced by a real input.
    adapted: usize,
}

fn counts<T>(cases: &[(Meta, Option<T>)]) -> Counts {
    let marked = |pick: fn(&Meta) -> &Option<String>| {
        cases
            .iter()
            .filter(|(meta, _)| {
                pick(meta).as_deref().inspect(|reason| assert!(reason.len() > 20, "{}: say why", meta.name)).is_some()
            })
            .count()
    };
    Counts {
        cases: cases.len(),
        run: runnable(cases).count(),
        differences: marked(|m| &m.difference),
        adapted: marked(|m| &m.adapted),
    }
}

/// Assertions on a result's text, as Cline's tests make them.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct TextExpect {
    equals: Option<String>,
    starts_with: Vec<String>,
    ends_with: Vec<String>,
    contains: Vec<String>,
    not_contains: Vec<String>,
}

impl TextExpect {
    /// The first assertion that fails on `text`, if any.
    fn failure(&self, text: &str) -> Option<String> {
        let failed = |what: &str, s: &str| Some(format!("{what} {s:?}"));
        if let Some(equals) = self.equals.as_deref().filter(|e| *e != text) {
            return failed("equals", equals);
        }
        if let Some(s) = self.starts_with.iter().find(|s| !text.starts_with(s.as_str())) {
            return failed("starts with", s);
        }
        if let Some(s) = self.ends_with.iter().find(|s| !text.ends_with(s.as_str())) {
            return failed("ends with", s);
        }
        if let Some(s) = self.contains.iter().find(|s| !text.contains(s.as_str())) {
            return failed("contains", s);
        }
        self.not_contains.iter().find(|s| text.contains(s.as_str())).and_then(|s| failed("does not contain", s))
    }
}

/// Cline's tests build long files with `Array.from({ length: count }, (_, i) => `${prefix}${i + 1}`).join("\n")`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Lines {
    prefix: String,
    count: usize,
    /// Pads each line with `.` to this many characters.
    #[serde(default)]
    width: usize,
}

/// A file's text: `content` whole, or generated from `lines`.
fn file_text(content: &Option<String>, lines: &Option<Lines>) -> String {
    match (content, lines) {
        (Some(content), None) => content.clone(),
        (None, Some(Lines { prefix, count, width })) => {
            (1..=*count).map(|i| format!("{:.<width$}", format!("{prefix}{i}"))).collect::<Vec<_>>().join("\n")
        }
        other => panic!("a file needs `content` or `lines`, not {other:?}"),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadCase {
    content: Option<String>,
    lines: Option<Lines>,
    start_line: Option<i64>,
    end_line: Option<i64>,
    expect: TextExpect,
    toolshed: Option<TextExpect>,
    intent: Option<ReadIntent>,
}

/// For a difference: the behaviour the Cline case protects, on Toolshed's own trigger.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadIntent {
    content: Option<String>,
    lines: Option<Lines>,
    expect: TextExpect,
}

/// read_file of `body` in a fresh workspace and task (so no dedup notice), with the window given.
fn read(runtime: &Runtime, body: &str, start_line: Option<i64>, end_line: Option<i64>) -> String {
    let ws = workspace();
    std::fs::write(ws.path().join("f.txt"), body).unwrap();
    let mut input = serde_json::json!({"path": "f.txt"});
    for (key, value) in [("start_line", start_line), ("end_line", end_line)] {
        if let Some(value) = value {
            input[key] = value.into();
        }
    }
    let result = call(&task_in(runtime, ws.path()), "read_file", input);
    assert_eq!(result.status, ResultStatus::Success, "{}", text(&result));
    text(&result)
}

#[test]
fn read_file_line_numbers() {
    let runtime = shipped().build().unwrap();
    let cases = load::<ReadCase>("ReadFileToolHandler.lineNumbers.toml");
    for (meta, case) in runnable(&cases) {
        let out = read(&runtime, &file_text(&case.content, &case.lines), case.start_line, case.end_line);
        let cline = case.expect.failure(&out);
        match (&meta.difference, &case.toolshed) {
            (None, None) => assert_eq!(cline, None, "{}\n{out}", meta.name),
            (Some(_), Some(toolshed)) => {
                assert!(cline.is_some(), "{}: marked a difference, but Cline's assertions hold\n{out}", meta.name);
                assert_eq!(toolshed.failure(&out), None, "{} (Toolshed's behaviour)\n{out}", meta.name);
            }
            other => panic!("{}: a difference needs `toolshed`, and only a difference has it: {other:?}", meta.name),
        }
        if let Some(intent) = &case.intent {
            assert!(meta.difference.is_some(), "{}: `intent` belongs to a difference", meta.name);
            let out = read(&runtime, &file_text(&intent.content, &intent.lines), None, None);
            assert_eq!(intent.expect.failure(&out), None, "{} (intent)\n{}", meta.name, &out[out.len() - 400..]);
        }
    }
    assert_eq!(counts(&cases), Counts { cases: 17, run: 15, differences: 1, adapted: 0 });
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PathCase {
    tool: String,
    #[serde(default)]
    files: BTreeMap<String, String>,
    #[serde(default)]
    dirs: Vec<String>,
    clineignore: Option<String>,
    call: Vec<PathCall>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PathCall {
    input: serde_json::Value,
    #[serde(default)]
    expect: PathExpect,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PathExpect {
    contains: Vec<String>,
    missing_param: Option<String>,
    mistakes: Option<u32>,
}

/// Writes `files` (making their directories) under `root`.
fn write_files(root: &Path, files: &BTreeMap<String, String>) {
    for (rel, body) in files {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
}

#[test]
fn path_tool_handlers_graceful_errors() {
    let runtime = shipped().yes(true).build().unwrap();
    let cases = load::<PathCase>("PathToolHandlers.gracefulErrors.toml");
    for (meta, case) in runnable(&cases) {
        let ws = workspace();
        write_files(ws.path(), &case.files);
        for dir in &case.dirs {
            std::fs::create_dir_all(ws.path().join(dir)).unwrap();
        }
        if let Some(rules) = &case.clineignore {
            std::fs::write(ws.path().join(".clineignore"), rules).unwrap();
        }
        let task = task_in(&runtime, ws.path());
        for (n, step) in case.call.iter().enumerate() {
            let result = call(&task, &case.tool, step.input.clone());
            let out = text(&result);
            let at = format!("{}, call {}: {}\n{out}", meta.name, n + 1, step.input);
            for s in &step.expect.contains {
                assert!(out.contains(s.as_str()), "{at}\nshould contain {s:?}");
            }
            if let Some(param) = &step.expect.missing_param {
                let error = format!(
                    "The tool execution failed with the following error:\n<error>\nMissing value for required parameter '{param}'. Please retry with complete response.\n\n# Reminder: Instructions for Tool Use\n"
                );
                assert!(out.starts_with(&error), "{at}\nshould be the missing-parameter error for {param:?}");
            }
            if let Some(mistakes) = step.expect.mistakes {
                assert_eq!(task.consecutive_mistakes(), mistakes, "{at}\nconsecutive mistakes");
            }
        }
    }
    assert_eq!(counts(&cases), Counts { cases: 26, run: 20, differences: 0, adapted: 14 });
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandCase {
    command: String,
    timeout: Option<String>,
    managed: bool,
    applies: Applies,
    cline_seconds: Option<u64>,
}

/// Which timeout Cline's `resolveCommandTimeoutSeconds` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Applies {
    None,
    Given,
    Default,
    Long,
}

#[test]
fn execute_command_timeout_policy() {
    let defaults = Config::default().commands;
    let runtime = |managed: bool| {
        let mut config = Config::default();
        // Small stand-ins for Cline's 30 s and 300 s, far enough apart to tell in the result text.
        config.commands.default_timeout_ms = 1_000;
        config.commands.long_timeout_ms = 2_000;
        config.approval.yolo = managed;
        std::sync::Arc::new(shipped().config(config).yes(true).build().unwrap())
    };
    let (managed, unmanaged) = (runtime(true), runtime(false));
    let cases = load::<CommandCase>("ExecuteCommandToolHandler.timeout.toml");
    // The cases run in parallel: each waits for its command (about 3 s) or its timeout.
    let runs: Vec<_> = runnable(&cases)
        .map(|(meta, case)| {
            // Cline's numbers are Toolshed's defaults.
            let seconds = match case.applies {
                Applies::None => None,
                Applies::Given => case.timeout.as_deref().map(|t| t.parse::<u64>().unwrap()),
                Applies::Default => Some(defaults.default_timeout_ms / 1000),
                Applies::Long => Some(defaults.long_timeout_ms / 1000),
            };
            assert_eq!(seconds, case.cline_seconds, "{}: Cline's number", meta.name);
            let program = case.command.split_whitespace().next().unwrap().to_owned();
            // The program is a shell function that sleeps, so nothing real runs and only a timeout ends it early.
            let command = format!("{program}() {{ sleep 3; echo stand-in {program}; }}; {}", case.command);
            let mut input = serde_json::json!({"command": command, "requires_approval": "false"});
            if let Some(timeout) = &case.timeout {
                input["timeout"] = timeout.as_str().into();
            }
            let runtime = std::sync::Arc::clone(if case.managed { &managed } else { &unmanaged });
            let expected = match case.applies {
                Applies::None | Applies::Given => {
                    format!("Command executed successfully (exit code 0).\nOutput:\nstand-in {program}")
                }
                Applies::Default => "Command execution timed out after 1 seconds. ".to_owned(),
                Applies::Long => "Command execution timed out after 2 seconds. ".to_owned(),
            };
            let name = meta.name.clone();
            std::thread::spawn(move || {
                let ws = workspace();
                let result = call(&task_in(&runtime, ws.path()), "execute_command", input);
                assert_eq!(text(&result), expected, "{name}");
            })
        })
        .collect();
    for run in runs {
        run.join().unwrap();
    }
    assert_eq!(counts(&cases), Counts { cases: 7, run: 7, differences: 0, adapted: 0 });
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListCase {
    files: BTreeMap<String, String>,
    path: String,
    recursive: bool,
    expect: ListExpect,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ListExpect {
    entries: Option<Vec<String>>,
    did_hit_limit: Option<bool>,
    has_entry: Vec<String>,
    no_entry_contains: Vec<String>,
    no_entry_ends_with: Vec<String>,
}

/// formatFilesList's note when listFiles hit its limit.
const TRUNCATED: &str =
    "\n\n(File list truncated. Use list_files on specific subdirectories if you need to explore further.)";

#[test]
fn list_files_service() {
    let runtime = shipped().yes(true).build().unwrap();
    let cases = load::<ListCase>("list-files.toml");
    for (meta, case) in runnable(&cases) {
        let ws = workspace();
        write_files(ws.path(), &case.files);
        let input = serde_json::json!({"path": case.path, "recursive": case.recursive.to_string()});
        let result = call(&task_in(&runtime, ws.path()), "list_files", input);
        assert_eq!(result.status, ResultStatus::Success, "{}", meta.name);
        let out = text(&result);
        // The text read back into listFiles' terms: its entries, and whether the limit was hit.
        let (body, hit) = out.strip_suffix(TRUNCATED).map_or((out.as_str(), false), |body| (body, true));
        let entries: Vec<String> = match body {
            "No files found." => Vec::new(),
            body => body.lines().map(|line| line.trim_start_matches("\u{1F512} ").to_owned()).collect(),
        };
        let at = format!("{}\n{out}", meta.name);
        let expect = &case.expect;
        if let Some(exact) = &expect.entries {
            assert_eq!(&entries, exact, "{at}");
        }
        if let Some(limit) = expect.did_hit_limit {
            assert_eq!(hit, limit, "{at}");
        }
        for entry in &expect.has_entry {
            assert!(entries.contains(entry), "{at}\nshould list {entry:?}");
        }
        for s in &expect.no_entry_contains {
            assert!(!entries.iter().any(|e| e.contains(s.as_str())), "{at}\nno entry should contain {s:?}");
        }
        for s in &expect.no_entry_ends_with {
            assert!(!entries.iter().any(|e| e.ends_with(s.as_str())), "{at}\nno entry should end with {s:?}");
        }
    }
    assert_eq!(counts(&cases), Counts { cases: 6, run: 6, differences: 0, adapted: 0 });
}
