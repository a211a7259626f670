//! Cline's own system-prompt snapshots (host-tests/data/cline-snapshots, verbatim from cline/cline v4.0.10,
//! made by `core/prompts/system-prompt/__tests__/integration.test.ts`) against what the shipped plugins give
//! through `Runtime::schema`, for every model family Cline has and every context its test builds.
//!
//! For the XML families the tools section of each prompt snapshot (`# Tools` up to `# Tool Use Examples`, the
//! next top-level section of `components/tool_use`) must equal Toolshed's XML byte for byte; for the native
//! families the `*.tools.snap` JSON must equal Toolshed's JSON for the same provider, parsed (arrays in order).
//! Toolshed prints JSON with sorted keys (`ToolSchemas`' `Display`: byte-stable output) while Cline prints
//! keys in insertion order, so the JSON is compared as values, not bytes.
//!
//! Failures are collected per tool and reported by owner, so the file/command tools, the agent-loop/MCP
//! tools and the variant lists fail separately: `CLINE_SNAP_FAMILY=gemini3` limits a run to one family, and
//! each failure names its family, context and tool with its first difference.
//!
//! The deliberate differences, each applied as a narrow transformation of the expected value below:
//! - `MCP_NATIVE_NAME`: Toolshed names a native MCP tool `{server}__mcp__{tool}` where Cline uses
//!   `{uid}0mcp0{tool}` (CLINE-TOOLS.md): `12345670mcp0test_tool` is expected as `test-server__mcp__test_tool`.
//! - `GEMINI_ENVELOPE`: Toolshed's Gemini schema is the request's `tools` value, `[{functionDeclarations:
//!   […]}]`; Cline's snapshot is the bare declarations, which its provider wraps later. The test unwraps ours.
//! - `HAND_WRITTEN_SECTIONS`: the hermes, glm and xs variants override TOOL_USE with a hand-written tools
//!   summary (`variants/*/overrides.ts`) that lists other tools than their `.tools(…)` and is no rendering of
//!   any spec; there is no PromptBuilder section to compare, so those families are checked for their variant
//!   data only (the tools they offer, in order, match their config.ts lists as rendered for the context).
//!
//! Cline's test mocks its MCP hub (one server `test-server`, uid 1234567, tool `test_tool`); here the native
//! MCP tool comes from the runtime's own conversion ([`SpecRegistry::set_mcp_servers`], what the runtime lists
//! a connected server's tools with) rather than a live server. The no-mcp context keeps the hub (with no
//! servers), so the MCP tools stay offered there, as in Cline.

use crate::util::shipped;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use toolshed::{
    Config, McpServerInfo, McpToolInfo, OpenAiDriver, PromptVariant, Provider, Runtime, SpecContext, SpecRegistry,
    ToolSchemas,
};

/// One of `modelTestCases`: the family, the snapshot name prefix (`{providerId}_{modelId}`), the provider id
/// (which decides the web tools and the native converter), and the tools snapshot of a native family.
struct Case {
    family: &'static str,
    prompt: &'static str,
    provider_id: &'static str,
    tools_snap: Option<&'static str>,
}

const CASES: [Case; 12] = [
    Case { family: "generic", prompt: "openai_gpt_3", provider_id: "openai", tools_snap: None },
    Case { family: "glm", prompt: "zai_glm_4_6", provider_id: "zai", tools_snap: None },
    Case { family: "hermes", prompt: "test_hermes_4", provider_id: "test", tools_snap: None },
    Case { family: "devstral", prompt: "cline_devstral", provider_id: "cline", tools_snap: None },
    Case { family: "next-gen", prompt: "anthropic_claude_sonnet_4", provider_id: "anthropic", tools_snap: None },
    Case { family: "xs", prompt: "lmstudio_qwen3_coder", provider_id: "lmstudio", tools_snap: None },
    Case {
        family: "native-next-gen",
        prompt: "cline_claude_4_5_sonnet",
        provider_id: "cline",
        tools_snap: Some("cline_native_next_gen"),
    },
    Case { family: "gpt-5", prompt: "openai_gpt_5", provider_id: "openai", tools_snap: None },
    Case {
        family: "gpt-5-native",
        prompt: "openai_gpt_5_codex",
        provider_id: "openai",
        tools_snap: Some("openai_gpt_5_native"),
    },
    Case {
        family: "gpt-5-1-native",
        prompt: "openai_gpt_5_1",
        provider_id: "openai",
        tools_snap: Some("openai_gpt_5_1_native"),
    },
    Case { family: "gemini3", prompt: "vertex_gemini_3", provider_id: "vertex", tools_snap: Some("vertex_gemini3") },
    Case {
        family: "trinity",
        prompt: "openrouter_arcee_ai_trinity_large_preview",
        provider_id: "openrouter",
        tools_snap: None,
    },
];

/// `contextVariations`.
const CONTEXTS: [&str; 4] = ["basic", "no-browser", "no-mcp", "no-focus-chain"];

/// HAND_WRITTEN_SECTIONS.
const HAND_WRITTEN: [&str; 3] = ["glm", "hermes", "xs"];

/// The tools part 1 (file and command tools) answers for; every other tool's text belongs to part 2.
const FILE_COMMAND_TOOLS: [&str; 12] = [
    "execute_command",
    "read_file",
    "write_to_file",
    "replace_in_file",
    "new_rule",
    "search_files",
    "list_files",
    "list_code_definition_names",
    "apply_patch",
    "web_fetch",
    "web_search",
    "use_skill",
];

/// Who fixes a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Owner {
    /// The variant lists, order and rendering.
    Framework,
    /// The file and command tools' spec texts.
    FileCommand,
    /// The agent-loop and MCP tools' spec texts.
    AgentLoop,
}

fn owner(tool: &str) -> Owner {
    if tool.is_empty() {
        Owner::Framework
    } else if FILE_COMMAND_TOOLS.contains(&tool) {
        Owner::FileCommand
    } else {
        Owner::AgentLoop
    }
}

#[derive(Debug)]
struct Failure {
    owner: Owner,
    at: String,
    tool: String,
    detail: String,
}

fn snapshot(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/cline-snapshots").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The shipped plugins with what Cline's test context enables that lives in configuration: subagents (a
/// driver that is never called: listing tools asks no model).
fn runtime() -> Runtime {
    let config = Config::from_toml_str("[subagents]\nenabled = true\n").expect("config");
    let driver = OpenAiDriver::new("http://127.0.0.1:9/v1".to_owned(), "unused").expect("driver");
    shipped().config(config).agent_driver(driver).build().expect("runtime")
}

/// Cline's `baseContext` with one variation, as a SpecContext.
fn spec_context(case: &Case, context: &str, native: bool) -> SpecContext {
    let mut spec = SpecContext::new("/test/project");
    spec.supports_browser = context != "no-browser";
    spec.browser_viewport = (1280, 720);
    spec.native_tool_calls = native;
    // `mcpHub` is set in every variation (no-mcp only empties its server list).
    spec.flags.insert("mcp".to_owned());
    if context != "no-focus-chain" {
        spec.flags.insert("focus_chain".to_owned());
    }
    // `web_fetch`/`web_search`: `providerId === "cline" && clineWebToolsEnabled`.
    if case.provider_id == "cline" {
        spec.flags.insert("web_tools".to_owned());
    }
    spec
}

/// `ClineToolSet.getNativeConverter(providerId, modelId)`.
fn converter(provider_id: &str, family: &str) -> Provider {
    match provider_id {
        "minimax" | "anthropic" | "bedrock" => Provider::Anthropic,
        "gemini" => Provider::Gemini,
        "vertex" if family.contains("gemini") => Provider::Gemini,
        "vertex" => Provider::Anthropic,
        _ => Provider::OpenAi,
    }
}

/// The tools section of a prompt snapshot: `# Tools` up to the blank line before `# Tool Use Examples`.
fn tools_section(prompt: &str) -> Option<&str> {
    let start = prompt.find("\n# Tools\n")? + 1;
    let end = start + prompt[start..].find("\n\n# Tool Use Examples")?;
    Some(&prompt[start..end])
}

/// The sections of an XML tools section by tool name (the `# Tools` header under "").
fn xml_tools(section: &str) -> Vec<(String, String)> {
    section
        .split("\n\n## ")
        .enumerate()
        .map(|(i, part)| {
            if i == 0 {
                (String::new(), part.to_owned())
            } else {
                let name = part.lines().next().unwrap_or_default().to_owned();
                (name, format!("## {part}"))
            }
        })
        .collect()
}

/// The first differing line of two texts, compactly.
fn text_diff(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let line = (0..e.len().max(a.len())).find(|&i| e.get(i) != a.get(i)).unwrap_or(0);
    let cut = |s: Option<&&str>| {
        let s = s.copied().unwrap_or("<none>");
        if s.len() > 240 {
            format!("{}…", &s[..s.char_indices().nth(240).map_or(s.len(), |(i, _)| i)])
        } else {
            s.to_owned()
        }
    };
    format!(
        "line {} of {}/{}:\n      cline:    {}\n      toolshed: {}",
        line + 1,
        e.len(),
        a.len(),
        cut(e.get(line)),
        cut(a.get(line))
    )
}

/// The paths where two JSON values differ, at most a few.
fn json_diff(path: &str, expected: &Value, actual: &Value, out: &mut Vec<String>) {
    if out.len() >= 6 || expected == actual {
        return;
    }
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            let keys: std::collections::BTreeSet<&String> = e.keys().chain(a.keys()).collect();
            for key in keys {
                json_diff(
                    &format!("{path}.{key}"),
                    e.get(key).unwrap_or(&Value::Null),
                    a.get(key).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (e, a)) in e.iter().zip(a).enumerate() {
                json_diff(&format!("{path}[{i}]"), e, a, out);
            }
        }
        _ => {
            let cut = |v: &Value| {
                let s = v.to_string();
                if s.len() > 240 {
                    format!("{}…", &s[..s.char_indices().nth(240).map_or(s.len(), |(i, _)| i)])
                } else {
                    s
                }
            };
            out.push(format!("{path}:\n      cline:    {}\n      toolshed: {}", cut(expected), cut(actual)));
        }
    }
}

/// A native tool's name in any provider's format.
fn tool_name(tool: &Value) -> String {
    tool.get("function").unwrap_or(tool).get("name").and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// The native tools Toolshed gives a family: the plugins' through `Runtime::schema`, then the mocked MCP
/// server's through the runtime's own MCP conversion.
fn native_tools(runtime: &Runtime, case: &Case, context: &SpecContext) -> Vec<Value> {
    let provider = converter(case.provider_id, case.family);
    let unwrap = |schemas: ToolSchemas| -> Vec<Value> {
        let ToolSchemas::Json(value) = schemas else { panic!("{provider} gave no JSON") };
        // GEMINI_ENVELOPE.
        let value = if provider == Provider::Gemini { value[0]["functionDeclarations"].clone() } else { value };
        value.as_array().cloned().unwrap_or_default()
    };
    let mut tools = unwrap(runtime.schema(provider, case.family, context));
    let mut registry = SpecRegistry::new();
    let schema = json!({"type": "object", "properties": {}});
    registry.set_mcp_servers(&[McpServerInfo::new(
        "test-server",
        vec![McpToolInfo::new("test_tool", "A test tool", Some(schema))],
    )]);
    let variant = PromptVariant::new(case.family, Vec::<String>::new()).native_tools(true);
    tools.extend(unwrap(provider.render(&registry.native(&variant, context).unwrap_or_default())));
    tools
}

/// Every comparison of the suite, as failures; `CLINE_SNAP_FAMILY` limits it to one family.
fn compare_all() -> (Vec<Failure>, usize) {
    let only = std::env::var("CLINE_SNAP_FAMILY").ok();
    let runtime = runtime();
    let mut failures = Vec::new();
    let mut compared = 0;
    for case in CASES.iter().filter(|case| only.as_deref().is_none_or(|family| family == case.family)) {
        match case.tools_snap {
            Some(tools_snap) => compared += compare_native(&runtime, case, tools_snap, &mut failures),
            None if HAND_WRITTEN.contains(&case.family) => {
                compared += check_hand_written(&runtime, case, &mut failures);
            }
            None => {
                for context in CONTEXTS {
                    compared += compare_xml(&runtime, case, context, &mut failures);
                }
            }
        }
        if case.tools_snap.is_some() {
            // A native family's prompts carry no XML tools section (Cline sends the tools natively).
            for context in CONTEXTS {
                let prompt = snapshot(&format!("{}-{context}.snap", case.prompt));
                assert!(tools_section(&prompt).is_none(), "{} {context}: an XML tools section", case.family);
            }
        }
    }
    (failures, compared)
}

/// The offered tools against Cline's: a tool missing or extra is its owner's failure (its spec's requirements
/// decide whether it is offered); the same tools in another order is the variant data's.
fn compare_lists(at: &str, expected: &[String], actual: &[String], failures: &mut Vec<Failure>) {
    let mut push = |owner, tool: &str, detail: String| {
        failures.push(Failure { owner, at: at.to_owned(), tool: tool.to_owned(), detail });
    };
    for name in expected.iter().filter(|name| !actual.contains(name)) {
        push(owner(name), name, "offered by Cline, not by Toolshed".to_owned());
    }
    for name in actual.iter().filter(|name| !expected.contains(name)) {
        push(owner(name), name, "offered by Toolshed, not by Cline".to_owned());
    }
    let common =
        |list: &[String], other: &[String]| list.iter().filter(|n| other.contains(n)).cloned().collect::<Vec<_>>();
    if common(expected, actual) != common(actual, expected) {
        push(Owner::Framework, "(tool order)", format!("cline:    {expected:?}\n      toolshed: {actual:?}"));
    }
}

fn compare_xml(runtime: &Runtime, case: &Case, context: &str, failures: &mut Vec<Failure>) -> usize {
    let at = format!("{} {context}", case.family);
    let prompt = snapshot(&format!("{}-{context}.snap", case.prompt));
    let expected = xml_tools(tools_section(&prompt).expect("a tools section"));
    let actual = runtime.schema(Provider::Xml, case.family, &spec_context(case, context, false)).to_string();
    let actual = xml_tools(&actual);
    let names = |tools: &[(String, String)]| tools.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    compare_lists(&at, &names(&expected), &names(&actual), failures);
    let actual: BTreeMap<String, String> = actual.into_iter().collect();
    for (name, text) in &expected {
        let tool = if name.is_empty() { "(header)" } else { name };
        match actual.get(name) {
            Some(mine) if mine == text => {}
            Some(mine) => failures.push(Failure {
                owner: if name.is_empty() { Owner::Framework } else { owner(name) },
                at: at.clone(),
                tool: tool.to_owned(),
                detail: text_diff(text, mine),
            }),
            None => {} // reported with the tool list
        }
    }
    1
}

fn compare_native(runtime: &Runtime, case: &Case, tools_snap: &str, failures: &mut Vec<Failure>) -> usize {
    let at = format!("{} native", case.family);
    let expected: Value = serde_json::from_str(&snapshot(&format!("{tools_snap}.tools.snap"))).expect("JSON");
    let expected: Vec<Value> = expected
        .as_array()
        .expect("an array")
        .iter()
        .cloned()
        .map(|mut tool| {
            // MCP_NATIVE_NAME.
            if tool_name(&tool) == "12345670mcp0test_tool" {
                let holder = if tool.get("function").is_some() { &mut tool["function"] } else { &mut tool };
                holder["name"] = json!("test-server__mcp__test_tool");
            }
            tool
        })
        .collect();
    let actual = native_tools(runtime, case, &spec_context(case, "basic", true));
    let names = |tools: &[Value]| tools.iter().map(tool_name).collect::<Vec<_>>();
    compare_lists(&at, &names(&expected), &names(&actual), failures);
    for tool in &expected {
        let name = tool_name(tool);
        if let Some(mine) = actual.iter().find(|mine| tool_name(mine) == name).filter(|mine| *mine != tool) {
            let mut diff = Vec::new();
            json_diff("", tool, mine, &mut diff);
            let owner = if name.contains("__mcp__") { Owner::AgentLoop } else { owner(&name) };
            failures.push(Failure { owner, at: at.clone(), tool: name, detail: diff.join("\n      ") });
        }
    }
    1
}

/// HAND_WRITTEN_SECTIONS: the family still offers its config.ts tools, in order, for each context.
fn check_hand_written(runtime: &Runtime, case: &Case, failures: &mut Vec<Failure>) -> usize {
    let variant = toolshed::cline_variant(case.family).expect("a Cline family");
    for context in CONTEXTS {
        let spec = spec_context(case, context, false);
        let offered: Vec<String> = xml_tools(&runtime.schema(Provider::Xml, case.family, &spec).to_string())
            .into_iter()
            .skip(1)
            .map(|(n, _)| n)
            .collect();
        // What Cline's PromptBuilder would offer: the listed ids whose requirements hold (focus_chain aside: a
        // placeholder the section never shows). Which hold comes from the every-tool listing of the same
        // context (requirements applied, no variant), not from what the variant offered, so a listed tool the
        // variant drops is a failure; that listing turns the web tools on whatever the context, so they count
        // only when the context has their flag.
        let mut every = spec.clone();
        every.every_tool = true;
        let meeting: Vec<String> = xml_tools(&runtime.schema(Provider::Xml, case.family, &every).to_string())
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let listed: Vec<String> = variant
            .tools
            .iter()
            .filter(|id| id.as_str() != "focus_chain")
            .filter(|id| meeting.contains(id))
            .filter(|id| spec.flags.contains("web_tools") || !matches!(id.as_str(), "web_fetch" | "web_search"))
            .cloned()
            .collect();
        if listed != offered {
            failures.push(Failure {
                owner: Owner::Framework,
                at: format!("{} {context}", case.family),
                tool: "(tool list)".to_owned(),
                detail: format!("config.ts order: {listed:?}\n      toolshed: {offered:?}"),
            });
        }
    }
    1
}

/// Runs the suite and fails with the failures of `owners`, naming the others' counts.
fn assert_owned_by(owners: &[Owner]) {
    let (failures, compared) = compare_all();
    let (mine, others): (Vec<&Failure>, Vec<&Failure>) = failures.iter().partition(|f| owners.contains(&f.owner));
    let mut by_owner: BTreeMap<Owner, usize> = BTreeMap::new();
    for failure in &others {
        *by_owner.entry(failure.owner).or_default() += 1;
    }
    if !others.is_empty() {
        eprintln!("{compared} comparisons; failures owned elsewhere (their own test reports them): {by_owner:?}");
    }
    if !mine.is_empty() {
        let mut tools: BTreeMap<&str, usize> = BTreeMap::new();
        for failure in &mine {
            *tools.entry(failure.tool.as_str()).or_default() += 1;
        }
        let report: Vec<String> =
            mine.iter().map(|f| format!("  {} · {} ({:?}): {}", f.at, f.tool, f.owner, f.detail)).collect();
        panic!(
            "{} of Cline's snapshot comparisons fail ({compared} compared), per tool {tools:?}:\n{}",
            mine.len(),
            report.join("\n")
        );
    }
}

#[test]
fn cline_snapshots_variant_tool_lists() {
    assert_owned_by(&[Owner::Framework]);
}

#[test]
fn cline_snapshots_file_and_command_tools() {
    assert_owned_by(&[Owner::FileCommand]);
}

#[test]
fn cline_snapshots_agent_loop_and_mcp_tools() {
    assert_owned_by(&[Owner::AgentLoop]);
}

/// The runtime sets what Cline reads from its settings from the configuration: `[tasks] focus_chain` shows
/// task_progress, `[web] enabled` offers the web tools; and `toolshed schema`'s flags build the same context.
#[test]
fn configuration_and_cli_flags_give_clines_contexts() {
    let plain = shipped().build().expect("runtime");
    let configured = shipped()
        .config(Config::from_toml_str("[tasks]\nfocus_chain = true\n[web]\nenabled = true\n").expect("config"))
        .build()
        .expect("runtime");
    let context = SpecContext::new("/test/project");
    let xml = |runtime: &Runtime, family: &str| runtime.schema(Provider::Xml, family, &context).to_string();
    assert!(!xml(&plain, "generic").contains("<task_progress>"));
    assert!(xml(&configured, "generic").contains("<task_progress>Checklist here (optional)</task_progress>"));
    assert!(!xml(&plain, "devstral").contains("## web_fetch"));
    assert!(xml(&configured, "devstral").contains("## web_fetch"));

    let ws = crate::util::workspace();
    let cwd = ws.path().canonicalize().expect("canonical");
    let plugins = crate::util::plugins();
    let schema = |extra: &[&str]| {
        let mut args = vec!["--plugins", plugins.to_str().expect("utf-8"), "--cwd", cwd.to_str().expect("utf-8")];
        args.extend(["schema", "--provider", "xml", "--family", "devstral"]);
        args.extend(extra);
        crate::util::toolshed(ws.path(), ws.path(), &args, &[])
    };
    let out = schema(&["--focus-chain", "--web-tools", "--mode", "plan", "--browser", "--viewport", "1280x720"]);
    assert!(out.status.success(), "{}", crate::util::stderr(&out));
    let mut flagged = SpecContext::new(cwd.to_string_lossy());
    flagged.mode = toolshed::Mode::Plan;
    flagged.supports_browser = true;
    flagged.browser_viewport = (1280, 720);
    flagged.flags.extend(["focus_chain".to_owned(), "web_tools".to_owned()]);
    assert_eq!(crate::util::stdout(&out).trim_end(), plain.schema(Provider::Xml, "devstral", &flagged).to_string());
    let bad = schema(&["--viewport", "wide"]);
    assert!(!bad.status.success() && crate::util::stderr(&bad).contains("expected WIDTHxHEIGHT"), "{bad:?}");
}
