//! The provider formats, derived from Cline's converters (`spec.ts`, `PromptBuilder.tool`): the same specs
//! as Anthropic tools, OpenAI chat-completions and Responses function tools, Gemini function declarations,
//! or the XML tool-use section of the system prompt.
//!
//! Each JSON format is the value of the request's `tools` field. Specs come in already resolved for a
//! context ([`super::Spec::for_context`]); converting is pure, and printing sorts object keys, so equal
//! specs always give equal bytes.

use super::dynamic::truthy;
use super::{Spec, SpecParam};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{json, Map, Value};
use std::fmt;
use std::str::FromStr;

/// Where the schemas go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Provider {
    /// Anthropic Messages: `{name, description, input_schema}`.
    Anthropic,
    /// OpenAI chat completions (and compatible APIs): `{type: "function", function: {…, strict: false}}`.
    OpenAi,
    /// OpenAI Responses: flat `{type: "function", name, description, parameters, strict: false}`.
    OpenAiResponses,
    /// Gemini: `[{functionDeclarations: […]}]` with upper-case types.
    Gemini,
    /// The XML tool-use section of the system prompt, for models without native tool calling.
    Xml,
}

/// A provider name [`Provider::from_str`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider '{0}': expected one of anthropic, openai, openai-responses, gemini, xml")]
pub struct UnknownProvider(pub String);

impl Provider {
    /// Every provider, in the order of its names.
    pub const ALL: [Provider; 5] =
        [Provider::Anthropic, Provider::OpenAi, Provider::OpenAiResponses, Provider::Gemini, Provider::Xml];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
            Provider::OpenAiResponses => "openai-responses",
            Provider::Gemini => "gemini",
            Provider::Xml => "xml",
        }
    }

    /// The specs in this provider's format, in their order.
    pub fn render(self, specs: &[Spec]) -> ToolSchemas {
        match self {
            Provider::Anthropic => ToolSchemas::Json(specs.iter().map(anthropic).collect()),
            Provider::OpenAi => ToolSchemas::Json(specs.iter().map(openai).collect()),
            Provider::OpenAiResponses => ToolSchemas::Json(specs.iter().map(openai_responses).collect()),
            Provider::Gemini => {
                let declarations: Vec<Value> = specs.iter().map(gemini).collect();
                ToolSchemas::Json(json!([{ "functionDeclarations": declarations }]))
            }
            Provider::Xml => ToolSchemas::Text(xml(specs)),
        }
    }
}

impl FromStr for Provider {
    type Err = UnknownProvider;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|provider| provider.name() == name)
            .ok_or_else(|| UnknownProvider(name.to_owned()))
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Converted specs: JSON for the native formats, text for the XML section. `Display` prints JSON pretty with
/// sorted keys.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolSchemas {
    /// The value of the request's `tools` field.
    Json(Value),
    /// The system prompt's tools section.
    Text(String),
}

impl fmt::Display for ToolSchemas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolSchemas::Json(value) => {
                f.write_str(&serde_json::to_string_pretty(&Sorted(value)).map_err(|_| fmt::Error)?)
            }
            ToolSchemas::Text(text) => f.write_str(text),
        }
    }
}

/// Serializes a value with object keys sorted, whatever map type serde_json was built with (its
/// `preserve_order` feature would otherwise print keys in insertion order).
struct Sorted<'a>(&'a Value);

impl Serialize for Sorted<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(object) => {
                let mut entries: Vec<(&String, &Value)> = object.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, &Sorted(value))?;
                }
                map.end()
            }
            Value::Array(items) => serializer.collect_seq(items.iter().map(Sorted)),
            other => other.serialize(serializer),
        }
    }
}

/// Parameter fields that are not JSON Schema keywords, or that the converters place themselves; Cline's list.
const RESERVED: [&str; 10] = [
    "name",
    "required",
    "instruction",
    "usage",
    "dependencies",
    "description",
    "contextRequirements",
    "type",
    "items",
    "properties",
];

/// A parameter's JSON Schema for Anthropic and OpenAI.
fn json_property(param: &SpecParam) -> Value {
    let mut schema = Map::new();
    schema.insert("type".to_owned(), param.kind.clone());
    schema.insert("description".to_owned(), Value::from(param.description.as_str()));
    if param.kind == "array"
        && let Some(items) = param.items.as_ref().filter(|items| truthy(items))
    {
        schema.insert("items".to_owned(), items.clone());
    }
    if param.kind == "object" {
        if let Some(properties) = param.properties.as_ref().filter(|properties| truthy(properties)) {
            schema.insert("properties".to_owned(), properties.clone());
        }
        // Cline drops an MCP object's own `required` list with its reserved names; it is kept here, or the
        // model would not know which nested fields it must fill.
        if let Some(required) = param.extra.get("required").filter(|required| required.is_array()) {
            schema.insert("required".to_owned(), required.clone());
        }
    }
    for (key, value) in &param.extra {
        if !RESERVED.contains(&key.as_str()) {
            schema.insert(key.clone(), value.clone());
        }
    }
    Value::Object(schema)
}

/// The parameters as `properties` and the `required` names in parameter order.
fn object_parts(spec: &Spec, property: fn(&SpecParam) -> Value) -> (Map<String, Value>, Vec<Value>) {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for param in &spec.parameters {
        if param.required {
            required.push(Value::from(param.name.as_str()));
        }
        properties.insert(param.name.clone(), property(param));
    }
    (properties, required)
}

fn anthropic(spec: &Spec) -> Value {
    let (properties, required) = object_parts(spec, json_property);
    json!({
        "name": spec.name,
        "description": spec.description,
        "input_schema": {"type": "object", "properties": properties, "required": required},
    })
}

/// OpenAI's `parameters`: closed objects, so the model cannot invent parameters.
fn openai_parameters(spec: &Spec) -> Value {
    let (properties, required) = object_parts(spec, json_property);
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

fn openai(spec: &Spec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "strict": false,
            "parameters": openai_parameters(spec),
        },
    })
}

fn openai_responses(spec: &Spec) -> Value {
    json!({
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "strict": false,
        "parameters": openai_parameters(spec),
    })
}

fn gemini(spec: &Spec) -> Value {
    let named: Vec<&SpecParam> = spec.parameters.iter().filter(|param| !param.name.is_empty()).collect();
    let mut properties = Map::new();
    for param in &named {
        properties.insert(param.name.clone(), gemini_property(param));
    }
    let required: Vec<&str> = named.iter().filter(|param| param.required).map(|param| param.name.as_str()).collect();
    json!({
        "name": spec.name,
        "description": spec.description,
        "parameters": {"type": "OBJECT", "properties": properties, "required": required},
    })
}

/// A parameter's Gemini schema: its type, enum, items and properties converted as a schema node, then the
/// description when there is one.
fn gemini_property(param: &SpecParam) -> Value {
    let mut node = Map::new();
    node.insert("type".to_owned(), param.kind.clone());
    if let Some(items) = &param.items {
        node.insert("items".to_owned(), items.clone());
    }
    if let Some(properties) = &param.properties {
        node.insert("properties".to_owned(), properties.clone());
    }
    for key in ["enum", "required"] {
        if let Some(value) = param.extra.get(key) {
            node.insert(key.to_owned(), value.clone());
        }
    }
    let mut schema = gemini_schema(&Value::Object(node));
    if !param.description.is_empty()
        && let Value::Object(schema) = &mut schema
    {
        schema.insert("description".to_owned(), Value::from(param.description.as_str()));
    }
    schema
}

/// A JSON Schema node as a Gemini schema: upper-case type (the first non-null one of a union; `integer`
/// becomes `NUMBER` and unknown types `OBJECT`, as Cline maps them), description, enum, items (always, for
/// arrays), properties and a non-empty `required`.
fn gemini_schema(node: &Value) -> Value {
    let kind = match node.get("type") {
        Some(Value::Array(types)) => types.iter().find(|kind| *kind != "null"),
        other => other,
    };
    let kind = match kind.filter(|kind| truthy(kind)) {
        None => "STRING",
        Some(kind) => match kind.as_str() {
            Some("string") => "STRING",
            Some("number" | "integer") => "NUMBER",
            Some("boolean") => "BOOLEAN",
            Some("array") => "ARRAY",
            Some("object") | Some(_) | None => "OBJECT",
        },
    };
    let mut schema = Map::new();
    schema.insert("type".to_owned(), Value::from(kind));
    for key in ["description", "enum"] {
        if let Some(value) = node.get(key).filter(|value| truthy(value)) {
            schema.insert(key.to_owned(), value.clone());
        }
    }
    if kind == "ARRAY" {
        schema.insert("items".to_owned(), gemini_schema(node.get("items").unwrap_or(&Value::Null)));
    }
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        let converted = properties.iter().filter(|(key, _)| *key != "$schema");
        schema.insert(
            "properties".to_owned(),
            Value::Object(converted.map(|(key, child)| (key.clone(), gemini_schema(child))).collect()),
        );
    }
    if let Some(required) = node.get("required").filter(|r| r.as_array().is_some_and(|r| !r.is_empty())) {
        schema.insert("required".to_owned(), required.clone());
    }
    Value::Object(schema)
}

/// Cline's tools section: `# Tools`, then per tool its title, description, parameters and a usage example,
/// blank-line separated. A parameter shows only when the tools it depends on are enabled too.
fn xml(specs: &[Spec]) -> String {
    let ids: Vec<&str> = specs.iter().map(|spec| spec.id.as_str()).collect();
    let mut sections = vec!["# Tools".to_owned()];
    // Cline skips placeholder tools, those with neither parameters nor a description.
    for spec in specs.iter().filter(|spec| !spec.parameters.is_empty() || !spec.description.is_empty()) {
        let name = if spec.name.is_empty() { &spec.id } else { &spec.name };
        let params: Vec<&SpecParam> = spec
            .parameters
            .iter()
            .filter(|param| param.dependencies.iter().all(|id| ids.contains(&id.as_str())))
            .collect();
        // Cline appends each shown parameter's `description` line to the tool's description.
        let mut section = format!("## {name}\nDescription: {}", spec.description);
        for note in params.iter().filter_map(|param| param.description_note.as_deref()).filter(|n| !n.is_empty()) {
            section.push('\n');
            section.push_str(note);
        }
        section.push('\n');
        if params.is_empty() {
            section.push_str("Parameters: None\n");
        } else {
            section.push_str("Parameters:\n");
            for param in &params {
                let required = if param.required { "required" } else { "optional" };
                section.push_str(&format!("- {}: ({required}) {}\n", param.name, param.description));
            }
        }
        section.push_str(&format!("Usage:\n<{name}>\n"));
        for param in &params {
            section.push_str(&format!("<{0}>{1}</{0}>\n", param.name, param.usage.as_deref().unwrap_or_default()));
        }
        section.push_str(&format!("</{name}>"));
        sections.push(section);
    }
    sections.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn sample() -> Vec<Spec> {
        vec![
            Spec::new("search_files", "search_files", "Searches.")
                .param(SpecParam::new("regex", "string", "The pattern.").required().usage("pattern"))
                .param(SpecParam {
                    extra: [("enum".to_owned(), json!(["a", "b"])), ("format".to_owned(), json!("x"))]
                        .into_iter()
                        .collect(),
                    ..SpecParam::new("mode", "string", "")
                })
                .param(SpecParam {
                    items: Some(json!({"type": "integer"})),
                    ..SpecParam::new("lines", "array", "Lines.")
                })
                .param(SpecParam::new("task_progress", "string", "Progress.").depends_on("focus_chain")),
            Spec::new("attempt_completion", "attempt_completion", "Done."),
        ]
    }

    #[test]
    fn provider_names_round_trip() {
        for provider in Provider::ALL {
            assert_eq!(provider.name().parse::<Provider>(), Ok(provider));
        }
        assert_eq!("claude".parse::<Provider>(), Err(UnknownProvider("claude".to_owned())));
    }

    #[test]
    fn output_is_byte_stable_with_sorted_keys() {
        for provider in Provider::ALL {
            let first = provider.render(&sample()).to_string();
            let second = provider.render(&sample()).to_string();
            assert_eq!(first, second, "{provider}");
        }
        let text = Provider::OpenAi.render(&sample()[1..]).to_string();
        assert_eq!(
            text,
            r#"[
  {
    "function": {
      "description": "Done.",
      "name": "attempt_completion",
      "parameters": {
        "additionalProperties": false,
        "properties": {},
        "required": [],
        "type": "object"
      },
      "strict": false
    },
    "type": "function"
  }
]"#
        );
    }

    #[test]
    fn json_formats_keep_enum_format_and_items() {
        let ToolSchemas::Json(tools) = Provider::Anthropic.render(&sample()) else { panic!("json") };
        assert_eq!(
            tools[0]["input_schema"],
            json!({
                "type": "object",
                "properties": {
                    "regex": {"type": "string", "description": "The pattern."},
                    "mode": {"type": "string", "description": "", "enum": ["a", "b"], "format": "x"},
                    "lines": {"type": "array", "description": "Lines.", "items": {"type": "integer"}},
                    "task_progress": {"type": "string", "description": "Progress."}
                },
                "required": ["regex"]
            })
        );
    }

    #[test]
    fn gemini_upper_cases_types_and_drops_empty_descriptions() {
        let ToolSchemas::Json(tools) = Provider::Gemini.render(&sample()) else { panic!("json") };
        assert_eq!(
            tools[0]["functionDeclarations"][0]["parameters"]["properties"],
            json!({
                "regex": {"type": "STRING", "description": "The pattern."},
                "mode": {"type": "STRING", "enum": ["a", "b"]},
                "lines": {"type": "ARRAY", "description": "Lines.", "items": {"type": "NUMBER"}},
                "task_progress": {"type": "STRING", "description": "Progress."}
            })
        );
    }

    #[test]
    fn gemini_converts_nested_mcp_schemas() {
        // Cline's own test case (spec.test.ts, "nested MCP schemas"), with the object's `required` list in
        // `extra` as the MCP conversion puts it.
        let definition = SpecParam {
            properties: Some(json!({
                "rules": {"type": "array", "items": {"type": "object", "properties": {"rule_no": {"type": "string", "description": "The rule number"}}, "required": ["rule_no"]}},
                "steps": {"type": "array", "items": {"type": "object", "properties": {"step_no": {"type": "string"}}, "required": ["step_no"]}}
            })),
            extra: [("required".to_owned(), json!(["rules", "steps"]))].into_iter().collect(),
            ..SpecParam::new("definition", "object", "The workflow definition")
        };
        let note =
            SpecParam { kind: json!(["string", "null"]), ..SpecParam::new("note", "string", "An optional note") };
        let spec = Spec::new("use_mcp_tool", "create_workflow", "Create a workflow").param(definition).param(note);
        let ToolSchemas::Json(tools) = Provider::Gemini.render(&[spec]) else { panic!("json") };
        let properties = &tools[0]["functionDeclarations"][0]["parameters"]["properties"];
        assert_eq!(
            properties["definition"],
            json!({
                "type": "OBJECT",
                "description": "The workflow definition",
                "properties": {
                    "rules": {"type": "ARRAY", "items": {"type": "OBJECT", "properties": {"rule_no": {"type": "STRING", "description": "The rule number"}}, "required": ["rule_no"]}},
                    "steps": {"type": "ARRAY", "items": {"type": "OBJECT", "properties": {"step_no": {"type": "STRING"}}, "required": ["step_no"]}}
                },
                "required": ["rules", "steps"]
            })
        );
        assert_eq!(properties["note"], json!({"type": "STRING", "description": "An optional note"}));
    }

    #[test]
    fn xml_lists_parameters_and_usage_and_honours_dependencies() {
        let text = Provider::Xml.render(&sample()).to_string();
        assert_eq!(
            text,
            "# Tools\n\n## search_files\nDescription: Searches.\nParameters:\n- regex: (required) The pattern.\n- mode: (optional) \n- lines: (optional) Lines.\nUsage:\n<search_files>\n<regex>pattern</regex>\n<mode></mode>\n<lines></lines>\n</search_files>\n\n## attempt_completion\nDescription: Done.\nParameters: None\nUsage:\n<attempt_completion>\n</attempt_completion>"
        );
        let mut with_focus = sample();
        with_focus.push(Spec::new("focus_chain", "focus_chain", "Tracks progress."));
        assert!(Provider::Xml.render(&with_focus).to_string().contains("- task_progress: (optional) Progress.\n"));
        assert_eq!(Provider::Xml.render(&[]).to_string(), "# Tools");
    }

    #[test]
    fn xml_appends_the_notes_of_shown_parameters_to_the_description() {
        let note = |name: &str| SpecParam {
            description_note: Some(format!("Note of {name}.")),
            ..SpecParam::new(name, "string", "P.").depends_on("focus_chain")
        };
        let done = Spec::new("attempt_completion", "attempt_completion", "Done.").param(note("task_progress"));
        let text = Provider::Xml.render(&[done.clone()]).to_string();
        assert!(text.contains("Description: Done.\nParameters: None\n"), "{text}");
        let focus = Spec::new("focus_chain", "focus_chain", "");
        let text = Provider::Xml.render(&[done.clone(), focus]).to_string();
        assert!(text.contains("Description: Done.\nNote of task_progress.\nParameters:\n- task_progress"), "{text}");
        // Native formats carry neither the note nor a dependency filter.
        let ToolSchemas::Json(tools) = Provider::Anthropic.render(&[done]) else { panic!("json") };
        assert_eq!(tools[0]["description"], "Done.");
        assert_eq!(tools[0]["input_schema"]["properties"]["task_progress"]["description"], "P.");
    }
}
