//! Cline's `web_search` tool as a Toolshed plugin: a search through the Cline API
//! (`POST {api_base_url}/api/v1/search/websearch`), optionally restricted to or excluding domains.
//!
//! The request goes through the host's `http.request` service, which owns the client and adds the bearer
//! token. Texts are Cline's, including the axios-style failure messages the model sees.
//!
//! ```
//! use toolshed_plugin_api::Tool;
//!
//! let declaration = web_search::WebSearch::declaration();
//! assert_eq!(declaration.name, "web_search");
//! assert_eq!(declaration.specs["generic"].parameters.len(), 3);
//! ```
#![deny(missing_docs)]

// The gates, the Cline API request and the error texts, shared with web_fetch (plugin-libs/web), under the
// name the call sites use.
use toolshed_web as web_common;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolshed_plugin_api::sdk::lenient_string;
use toolshed_plugin_api::services::WebSettings;
use toolshed_plugin_api::{
    export_plugin, result, HostClient, Outcome, ParamSpec, PartialBlock, Prepared, Risk, Tool, ToolCall,
    ToolDeclaration, ToolInit,
};
use web_common::{field, param, post_cline_api, present, read_error, tool_message, Failure, WebTool};

/// The tool's name and the prefix of its error texts, Cline's.
const TOOL: WebTool = WebTool { name: "web_search", error_prefix: "Error performing web search" };

/// The generic description, Cline's.
const DESCRIPTION: &str = "Performs a web search and returns relevant results
- Takes a search query as input and returns search results with titles and URLs
- Optionally filter results by allowed or blocked domains
- Use this tool when you need to search the web for information
- IMPORTANT: If an MCP-provided web search tool is available, prefer using that tool instead of this one, as it may have fewer restrictions.
- The query must be at least 2 characters
- You may provide either allowed_domains OR blocked_domains, but NOT both
- Domains should be provided as a JSON array of strings
- This tool is read-only and does not modify any files";

/// The description for native tool calling, Cline's.
const NATIVE_DESCRIPTION: &str = "Performs a web search and returns relevant results with titles and URLs. IMPORTANT: If an MCP-provided web search tool is available, prefer using that tool instead of this one, as it may have fewer restrictions.";

/// Cline's refusal of both domain lists at once.
const BOTH_LISTS: &str = "Cannot specify both allowed_domains and blocked_domains";

/// The input: `query`, and at most one of `allowed_domains` / `blocked_domains` (JSON arrays of strings,
/// possibly cut off while streaming).
#[derive(Debug, Deserialize)]
pub struct WebSearchArgs {
    #[serde(default, deserialize_with = "lenient_string")]
    query: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    allowed_domains: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    blocked_domains: Option<String>,
}

/// The handler.
pub struct WebSearch;

/// The parameters; the native specs give no usage.
fn parameters(native: bool) -> Vec<ParamSpec> {
    let usage = |text| (!native).then_some(text);
    vec![
        param("query", true, "The search query to use", usage("latest developments in AI")),
        param(
            "allowed_domains",
            false,
            "JSON array of domains to restrict results to",
            usage(r#"["example.com", "github.com"]"#),
        ),
        param(
            "blocked_domains",
            false,
            "JSON array of domains to exclude from results",
            usage(r#"["ads.com", "spam.com"]"#),
        ),
    ]
}

/// The domain lists of a call.
fn domains(args: &WebSearchArgs) -> (Vec<String>, Vec<String>) {
    let parse = |raw: &Option<String>| parse_partial_array(raw.as_deref().filter(|r| !r.is_empty()).unwrap_or("[]"));
    (parse(&args.allowed_domains), parse(&args.blocked_domains))
}

impl Tool for WebSearch {
    type Args = WebSearchArgs;

    fn declaration() -> ToolDeclaration {
        TOOL.declaration("[{tool} for '{query}']", DESCRIPTION, NATIVE_DESCRIPTION, parameters)
    }

    fn new(_init: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(WebSearch))
    }

    fn prepare(
        &self,
        call: &ToolCall<WebSearchArgs>,
        host: &HostClient<'_>,
    ) -> Result<Prepared, toolshed_plugin_api::Failure> {
        // The gates come first, as in Cline.
        if let Err(error) = TOOL.gate(host, WebSettings::cline_api_open) {
            return Ok(Prepared::Error(error));
        }
        let Some(query) = present(&call.input.query) else {
            return Ok(result::refuse(result::missing_parameter_text("query")));
        };
        let (allowed, blocked) = domains(&call.input);
        if !allowed.is_empty() && !blocked.is_empty() {
            return Ok(result::refuse(BOTH_LISTS));
        }
        Ok(result::approval("network", format!("Cline wants to search for: {query}"), Vec::new(), Risk::High))
    }

    fn execute(
        &self,
        call: &ToolCall<WebSearchArgs>,
        host: &HostClient<'_>,
    ) -> Result<Outcome, toolshed_plugin_api::Failure> {
        let settings = TOOL.gate(host, WebSettings::cline_api_open)?;
        let Some(query) = present(&call.input.query) else {
            return Ok(result::missing_parameter("query"));
        };
        let (allowed, blocked) = domains(&call.input);
        if !allowed.is_empty() && !blocked.is_empty() {
            return Ok(result::mistake(BOTH_LISTS));
        }
        host.say("tool", &search_message(query), false);
        Ok(TOOL.outcome(search(query, allowed, blocked, &call.task.task_id, &settings, host)))
    }

    fn partial(&self, block: &PartialBlock, host: &HostClient<'_>) {
        let query = block.input.get("query").and_then(Value::as_str).unwrap_or("");
        host.say("tool", &search_message(query), true);
    }
}

mod export {
    use super::{export_plugin, WebSearch};

    export_plugin! { name: "web_search", version: env!("CARGO_PKG_VERSION"), tools: [WebSearch] }
}

/// Cline's `webSearch` tool message for the UI.
fn search_message(query: &str) -> String {
    tool_message("webSearch", query, format!("Searching for: {query}"))
}

/// Cline's `parsePartialArrayString`: a complete JSON array (every item as a string), or the complete items
/// of one cut off while streaming (`["a", "b`); anything else is empty.
fn parse_partial_array(text: &str) -> Vec<String> {
    if let Ok(parsed) = serde_json::from_str::<Value>(text) {
        return match parsed {
            Value::Array(items) => items.iter().map(item_string).collect(),
            _ => Vec::new(),
        };
    }
    let Some(content) = text.trim().strip_prefix("[\"") else {
        return Vec::new();
    };
    let content = content.strip_suffix("\"]").unwrap_or(content);
    content.split("\", \"").map(str::trim).filter(|item| !item.is_empty()).map(str::to_owned).collect()
}

/// Cline's `coerceArrayItemToString`: strings as they are, an object's `label`/`value`/`text`, else JSON.
fn item_string(item: &Value) -> String {
    match item {
        Value::String(text) => text.clone(),
        Value::Object(object) => ["label", "value", "text"]
            .iter()
            .find_map(|key| object.get(*key).filter(|v| !v.is_null()))
            .and_then(|preferred| preferred.as_str().filter(|s| !s.trim().is_empty()).map(str::to_owned))
            .unwrap_or_else(|| item.to_string()),
        other => js_string(other),
    }
}

/// `String(value)` in JavaScript, for a JSON value.
fn js_string(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|item| if item.is_null() { String::new() } else { js_string(item) })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".to_owned(),
    }
}

/// The body Cline posts: the lists only when they have items.
#[derive(Serialize)]
struct SearchBody<'a> {
    query: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    allowed_domains: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    blocked_domains: Vec<String>,
}

/// Runs the search.
fn search(
    query: &str,
    allowed_domains: Vec<String>,
    blocked_domains: Vec<String>,
    task_id: &str,
    settings: &WebSettings,
    host: &HostClient<'_>,
) -> Result<String, Failure> {
    let body = SearchBody { query, allowed_domains, blocked_domains };
    let response = post_cline_api("websearch", &body, task_id, settings, host)?;
    format_results(&response.body).map_err(Failure::Message)
}

/// Cline's result text from the response body, or the JavaScript error its code would throw.
fn format_results(body: &str) -> Result<String, String> {
    let results = match field(body, "data") {
        Some(Value::Object(mut object)) => object.remove("results"),
        Some(Value::Null) => return Err(read_error("null", "results")),
        None => return Err(read_error("undefined", "results")),
        // Other values have no `results` either: `data.results || []` is empty.
        Some(_) => None,
    };
    let results = match results {
        None | Some(Value::Null | Value::Bool(false)) => Vec::new(),
        Some(Value::String(s)) if s.is_empty() => Vec::new(),
        Some(Value::Number(n)) if n.as_f64() == Some(0.0) => Vec::new(),
        Some(Value::Array(items)) => items,
        Some(Value::String(_)) => return Err("results.forEach is not a function".to_owned()),
        // An object or a number has no length.
        Some(_) => return Ok("Search completed (undefined results found)".to_owned()),
    };
    let mut text = format!("Search completed ({} results found)", results.len());
    if !results.is_empty() {
        text.push_str(":\n\n");
        for (index, result) in results.iter().enumerate() {
            let get = |key: &str| match result.get(key) {
                Some(value) => js_string(value),
                None if result.is_null() => String::new(),
                None => "undefined".to_owned(),
            };
            if result.is_null() {
                return Err(read_error("null", "title"));
            }
            text.push_str(&format!("{}. {}\n   {}\n\n", index + 1, get("title"), get("url")));
        }
    }
    Ok(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn declaration_matches_cline() {
        let declaration = WebSearch::declaration();
        let params =
            web_common::check_declaration(&declaration, "[{tool} for '{query}']", DESCRIPTION, NATIVE_DESCRIPTION);
        assert_eq!(
            params,
            [("query", true), ("allowed_domains", false), ("blocked_domains", false), ("task_progress", false)]
        );
    }

    #[test]
    fn partial_arrays_are_tolerated() {
        let strings = |items: &[&str]| items.iter().map(std::string::ToString::to_string).collect::<Vec<_>>();
        assert_eq!(parse_partial_array(r#"["a.com", "b.com"]"#), strings(&["a.com", "b.com"]));
        assert_eq!(parse_partial_array(r#"["a.com", "b.c"#), strings(&["a.com", "b.c"]));
        assert_eq!(parse_partial_array(r#"  ["a.com"#), strings(&["a.com"]));
        assert_eq!(parse_partial_array(r#"[""#), strings(&[]));
        assert_eq!(parse_partial_array("["), strings(&[]));
        assert_eq!(parse_partial_array("a.com"), strings(&[]));
        assert_eq!(parse_partial_array(r#""a.com""#), strings(&[]));
        assert_eq!(parse_partial_array("[]"), strings(&[]));
        assert_eq!(
            parse_partial_array(r#"[1, {"label":"x.com"}, {"k":2}, null]"#),
            strings(&["1", "x.com", r#"{"k":2}"#, "null"])
        );
    }

    #[test]
    fn the_body_sends_lists_only_when_not_empty() {
        let body = |allowed: &[&str], blocked: &[&str]| {
            serde_json::to_string(&SearchBody {
                query: "q",
                allowed_domains: allowed.iter().map(std::string::ToString::to_string).collect(),
                blocked_domains: blocked.iter().map(std::string::ToString::to_string).collect(),
            })
            .unwrap()
        };
        assert_eq!(body(&[], &[]), r#"{"query":"q"}"#);
        assert_eq!(body(&["a.com"], &[]), r#"{"query":"q","allowed_domains":["a.com"]}"#);
        assert_eq!(body(&[], &["b.com"]), r#"{"query":"q","blocked_domains":["b.com"]}"#);
    }

    #[test]
    fn results_format_like_cline() {
        let body = r#"{"data":{"results":[{"title":"One","url":"https://1.example"},{"url":"https://2.example"}]}}"#;
        assert_eq!(
            format_results(body).unwrap(),
            "Search completed (2 results found):\n\n1. One\n   https://1.example\n\n2. undefined\n   https://2.example\n\n"
        );
        assert_eq!(format_results(r#"{"data":{"results":[]}}"#).unwrap(), "Search completed (0 results found)");
        assert_eq!(format_results(r#"{"data":{}}"#).unwrap(), "Search completed (0 results found)");
        assert_eq!(format_results("<html>").unwrap_err(), "Cannot read properties of undefined (reading 'results')");
        assert_eq!(
            format_results(r#"{"data":null}"#).unwrap_err(),
            "Cannot read properties of null (reading 'results')"
        );
    }
}
