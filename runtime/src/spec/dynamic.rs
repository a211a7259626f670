//! Specs generated from configuration rather than declared by a plugin: one tool per configured subagent and
//! one per MCP server tool, with names every provider accepts.

use super::{Spec, SpecParam};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use xxhash_rust::xxh3::xxh3_64;

/// Between the server and the tool name in an MCP tool's name: `{server}__mcp__{tool}`.
pub const MCP_TOOL_SEPARATOR: &str = "__mcp__";

/// The longest tool name providers accept.
const MAX_NAME: usize = 64;

/// The prefix of subagent tool names (Cline's).
const SUBAGENT_PREFIX: &str = "use_subagent_";

/// One MCP server as the MCP hub reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerInfo {
    /// The server's name: the `{server}` of its tools' names, and the prefix of their descriptions.
    pub name: String,
    /// A disabled server's tools are never offered.
    #[serde(default)]
    pub disabled: bool,
    /// Its tools.
    #[serde(default)]
    pub tools: Vec<McpToolInfo>,
}

/// One MCP tool, in the shape of MCP's `tools/list` (`inputSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolInfo {
    /// The tool's name on its server.
    pub name: String,
    /// Its description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its JSON Schema input (an object schema with `properties` and `required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
}

impl McpServerInfo {
    /// An enabled server.
    pub fn new(name: impl Into<String>, tools: Vec<McpToolInfo>) -> Self {
        Self { name: name.into(), disabled: false, tools }
    }
}

impl McpToolInfo {
    /// A tool.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Option<Value>) -> Self {
        Self { name: name.into(), description: Some(description.into()), input_schema }
    }
}

/// One configured subagent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentConfig {
    /// Its name, as the user wrote it.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
}

impl AgentConfig {
    /// An agent.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self { name: name.into(), description: description.into() }
    }
}

/// A tool name every provider accepts (`^[a-zA-Z0-9_-]{1,64}$`): the name itself when it qualifies; else its
/// other characters replaced by `_`, cut to 55 characters, and `_` plus 8 hex digits of the xxh3 hash of the
/// whole original name appended, so long names stay distinct and stable instead of being dropped.
pub fn provider_tool_name(name: &str) -> String {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !name.is_empty() && name.len() <= MAX_NAME && name.chars().all(allowed) {
        return name.to_owned();
    }
    // Every character maps to one ASCII byte, so any cut is at a character boundary.
    let sanitized: String = name.chars().map(|c| if allowed(c) { c } else { '_' }).collect();
    let hash = xxh3_64(name.as_bytes()) >> 32;
    format!("{}_{hash:08x}", &sanitized[..sanitized.len().min(MAX_NAME - 9)])
}

/// One spec per tool of every enabled server, with the (server, tool) each name calls.
pub(super) fn mcp_specs(servers: &[McpServerInfo]) -> Vec<(Spec, String, String)> {
    servers
        .iter()
        .filter(|server| !server.disabled)
        .flat_map(|server| server.tools.iter().map(move |tool| (server, tool)))
        .map(|(server, tool)| {
            let description = tool.description.as_deref().filter(|d| !d.is_empty()).unwrap_or(&tool.name);
            let spec = Spec {
                id: "use_mcp_tool".to_owned(),
                name: provider_tool_name(&format!("{}{MCP_TOOL_SEPARATOR}{}", server.name, tool.name)),
                description: format!("{}: {description}", server.name),
                parameters: tool.input_schema.as_ref().map(mcp_params).unwrap_or_default(),
                context_requirements: Vec::new(),
            };
            (spec, server.name.clone(), tool.name.clone())
        })
        .collect()
}

/// The parameters of an MCP input schema: one per property, its schema kept whole (`enum`, `format`,
/// nested `required`, … in `extra`); required when listed in the schema's `required`.
fn mcp_params(schema: &Value) -> Vec<SpecParam> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: BTreeSet<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    properties
        .iter()
        .map(|(name, property)| {
            let field = |key: &str| property.get(key).filter(|value| truthy(value)).cloned();
            SpecParam {
                name: name.clone(),
                required: required.contains(name.as_str()),
                description: property.get("description").and_then(Value::as_str).unwrap_or_default().to_owned(),
                usage: None,
                kind: field("type").unwrap_or_else(|| Value::from("string")),
                items: field("items"),
                properties: field("properties"),
                extra: property
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(key, _)| !matches!(key.as_str(), "type" | "description" | "items" | "properties"))
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect::<BTreeMap<_, _>>(),
                context_requirements: Vec::new(),
                dependencies: Vec::new(),
                description_note: None,
            }
        })
        .collect()
}

/// JavaScript truthiness, which Cline's converters test fields with.
pub(super) fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// Cline's `buildSubagentToolName`: `use_subagent_` and the agent's name lower-cased, each run of other
/// characters as one `_`, `_` at either end dropped (`agent` when nothing is left); a name over 64 characters
/// keeps the first characters of its body and ends in `_` and up to 6 base-36 digits of the name's hash.
fn subagent_tool_name(agent: &str) -> String {
    let mut sanitized = String::new();
    for c in agent.trim().to_lowercase().chars() {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' { c } else { '_' };
        if !(c == '_' && sanitized.ends_with('_')) {
            sanitized.push(c);
        }
    }
    let sanitized = match sanitized.trim_matches('_') {
        "" => "agent",
        trimmed => trimmed,
    };
    let base = format!("{SUBAGENT_PREFIX}{sanitized}");
    if base.len() <= MAX_NAME {
        return base;
    }
    let hash: String = base36(fnv1a_utf16(agent)).chars().take(6).collect();
    let body_len = (MAX_NAME - SUBAGENT_PREFIX.len() - hash.len() - 1).max(1);
    // The body is ASCII, so any cut is at a character boundary.
    let mut name = format!("{SUBAGENT_PREFIX}{}_{hash}", &sanitized[..body_len.min(sanitized.len())]);
    name.truncate(MAX_NAME);
    name
}

/// Cline's `hashString`: 32-bit FNV-1a over the UTF-16 code units of the text (JavaScript's `charCodeAt`).
/// Hand-rolled because the hash must be this exact variant, which the FNV crates (64-bit, bytes) are not.
fn fnv1a_utf16(text: &str) -> u32 {
    text.encode_utf16().fold(2_166_136_261_u32, |hash, unit| (hash ^ u32::from(unit)).wrapping_mul(16_777_619))
}

/// A number in base 36 with lower-case digits (JavaScript's `toString(36)`).
fn base36(mut n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut digits = Vec::new();
    loop {
        digits.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    digits.iter().rev().map(|&d| char::from(d)).collect()
}

/// Cline's dynamic subagent specs (`ClineToolSet.getDynamicSubagentToolSpecs`): one per agent, with the agent
/// each name runs. Names are Cline's (see [`subagent_tool_name`]), given in name order (trimmed and
/// lower-cased) with `_2`, `_3`, … on a clash, as Cline's `AgentConfigLoader` gives them; the specs come in
/// that order too, where Cline's follow the order its parallel file reads finish in.
pub(super) fn subagent_specs(agents: &[AgentConfig]) -> Vec<(Spec, String)> {
    let mut sorted: Vec<&AgentConfig> = agents.iter().collect();
    sorted.sort_by(|a, b| a.name.trim().to_lowercase().cmp(&b.name.trim().to_lowercase()).then(a.name.cmp(&b.name)));
    let mut used = BTreeSet::new();
    sorted
        .into_iter()
        .map(|agent| {
            let (name, description) = (agent.name.trim(), agent.description.trim());
            let base = subagent_tool_name(name);
            let mut candidate = base.clone();
            let mut n = 2;
            while used.contains(&candidate) {
                let suffix = format!("_{n}");
                candidate = format!("{}{suffix}", &base[..base.len().min(MAX_NAME - suffix.len())]);
                n += 1;
            }
            used.insert(candidate.clone());
            let spec = Spec::new("use_subagents", candidate, format!("Use the \"{name}\" subagent: {description}"))
                .requires("!subagent_run")
                .param(
                    SpecParam::new(
                        "prompt",
                        "string",
                        "Helpful instruction for the task that the subagent will perform.",
                    )
                    .required(),
                );
            (spec, name.to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn valid_names_up_to_64_characters_are_kept() {
        let name = "a".repeat(64);
        assert_eq!(provider_tool_name(&name), name);
        assert_eq!(provider_tool_name("github__mcp__create-issue"), "github__mcp__create-issue");
    }

    #[test]
    fn longer_names_get_a_stable_hash_suffix() {
        let long = format!("server__mcp__{}", "x".repeat(60));
        let short = provider_tool_name(&long);
        assert_eq!(short.len(), 64);
        assert_eq!(&short[..56], &format!("{}_", &long[..55]));
        assert!(short[56..].chars().all(|c| c.is_ascii_hexdigit()), "{short}");
        // Stable across calls and runs (xxh3 is seedless), and distinct for names sharing the prefix.
        assert_eq!(provider_tool_name(&long), short);
        assert_eq!(short, format!("{}_{:08x}", &long[..55], xxh3_64(long.as_bytes()) >> 32));
        assert_ne!(provider_tool_name(&format!("{long}y")), short);
    }

    #[test]
    fn names_with_other_characters_are_made_valid() {
        let name = provider_tool_name("my server__mcp__files.read");
        assert!(name.starts_with("my_server__mcp__files_read_"), "{name}");
        assert_eq!(name.len(), "my_server__mcp__files_read_".len() + 8);
        assert_ne!(provider_tool_name("a.b"), provider_tool_name("a_b"));
        assert_eq!(provider_tool_name("").len(), 9);
    }

    #[test]
    fn mcp_tools_keep_their_schema_and_skip_disabled_servers() {
        let schema = json!({
            "type": "object",
            "properties": {
                "owner": {"type": "string", "description": "The owner"},
                "state": {"type": "string", "enum": ["open", "closed"], "default": "open"},
                "labels": {"type": "array", "items": {"type": "string", "format": "uri"}},
                "since": {"type": ["string", "null"], "format": "date-time"}
            },
            "required": ["owner"]
        });
        let long_tool = "t".repeat(70);
        let servers = [
            McpServerInfo::new(
                "github",
                vec![
                    McpToolInfo::new("list_issues", "", Some(schema)),
                    McpToolInfo::new(long_tool.clone(), "Long.", None),
                ],
            ),
            McpServerInfo { disabled: true, ..McpServerInfo::new("off", vec![McpToolInfo::new("x", "X.", None)]) },
        ];
        let specs = mcp_specs(&servers);
        assert_eq!(specs.len(), 2);
        let (spec, server, tool) = &specs[0];
        assert_eq!((server.as_str(), tool.as_str()), ("github", "list_issues"));
        assert_eq!(spec.name, "github__mcp__list_issues");
        assert_eq!(spec.description, "github: list_issues");
        let params: Vec<(&str, bool)> = spec.parameters.iter().map(|p| (p.name.as_str(), p.required)).collect();
        assert_eq!(params, [("labels", false), ("owner", true), ("since", false), ("state", false)]);
        assert_eq!(spec.parameters[0].items, Some(json!({"type": "string", "format": "uri"})));
        assert_eq!(spec.parameters[2].kind, json!(["string", "null"]));
        assert_eq!(spec.parameters[2].extra, [("format".to_owned(), json!("date-time"))].into_iter().collect());
        assert_eq!(
            spec.parameters[3].extra,
            [("default".to_owned(), json!("open")), ("enum".to_owned(), json!(["open", "closed"]))]
                .into_iter()
                .collect()
        );
        let (long, _, tool) = &specs[1];
        assert_eq!(long.name, provider_tool_name(&format!("github__mcp__{long_tool}")));
        assert_eq!((long.name.len(), tool), (64, &long_tool));
        assert!(long.parameters.is_empty());
    }

    #[test]
    fn subagent_names_are_sanitized_and_deduplicated() {
        let agents = [
            AgentConfig::new("Code Reviewer", "Reviews."),
            AgentConfig::new("code-reviewer", "Also reviews."),
            AgentConfig::new("  ", "Nameless."),
            AgentConfig::new("R".repeat(80), "Long."),
        ];
        let names: Vec<String> = subagent_specs(&agents).into_iter().map(|(spec, _)| spec.name).collect();
        assert_eq!(names[0], "use_subagent_agent");
        assert_eq!(names[1], "use_subagent_code_reviewer");
        assert_eq!(names[2], "use_subagent_code_reviewer_2");
        assert_eq!(names[3], format!("use_subagent_{}_10js1x", "r".repeat(44)));
        assert_eq!(names[3].len(), 64);
    }

    #[test]
    fn long_subagent_names_end_in_clines_hash() {
        // Cline's `buildSubagentToolName` and `hashString` give these (run with Node).
        assert_eq!(base36(fnv1a_utf16("")), "ztntfp");
        assert_eq!(base36(0), "0");
        assert_eq!(base36(u32::MAX), "1z141z3");
        let long = "A very long agent name that goes on and on past the limit of sixty-four";
        assert_eq!(subagent_tool_name(long), "use_subagent_a_very_long_agent_name_that_goes_on_and_on_p_fepj0f");
        // Under the limit the name is only sanitized, with no hash.
        assert_eq!(subagent_tool_name(" Ünïcode Agent! "), "use_subagent_n_code_agent");
        assert_eq!(subagent_tool_name("__"), "use_subagent_agent");
    }
}
