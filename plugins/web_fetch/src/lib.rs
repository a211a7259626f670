//! Cline's `web_fetch` tool as a Toolshed plugin: a page's content analysed by the Cline API
//! (`POST {api_base_url}/api/v1/search/webfetch`), or, with `[web] backend = "direct"`, the page fetched by the
//! host and turned into Markdown, returned with the prompt for the model to apply.
//!
//! Every request goes through the host's `http.request` service: the host owns the client, the bearer token
//! (added only to requests under the API base URL) and the address policy of direct fetches. Texts are
//! Cline's, including the axios-style failure messages the model sees.
//!
//! ```
//! use toolshed_plugin_api::Tool;
//!
//! let declaration = web_fetch::WebFetch::declaration();
//! assert_eq!(declaration.name, "web_fetch");
//! assert_eq!(declaration.specs["generic"].parameters.len(), 2);
//! ```
#![deny(missing_docs)]

mod markdown;

pub use markdown::{html_to_markdown, pretty_json, MAX_DEPTH, MAX_JSON_DEPTH};

// The web crate shared with web_search (plugin-libs/web), under the name the call sites use.
use toolshed_web as web_common;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolshed_plugin_api::sdk::{lenient_string, IsolatedError};
use toolshed_plugin_api::services::{HttpRequest, WebSettings};
use toolshed_plugin_api::{
    export_plugin, result, HostClient, Outcome, ParamSpec, Prepared, Risk, Tool, ToolCall, ToolDeclaration, ToolError,
    ToolInit,
};
use web_common::{
    field, ok_status, param, post_cline_api, present, read_error, request_failed, tool_message, Failure, WebTool,
};

/// The tool's name and the prefix of its error texts, Cline's.
const TOOL: WebTool = WebTool { name: "web_fetch", error_prefix: "Error fetching web content" };

/// The generic description, Cline's.
const DESCRIPTION: &str = "Fetches content from a specified URL and analyzes it using your prompt
- Takes a URL and analysis prompt as input
- Fetches the URL content and processes based on your prompt
- Use this tool when you need to retrieve and analyze web content
- IMPORTANT: If an MCP-provided web fetch tool is available, prefer using that tool instead of this one, as it may have fewer restrictions.
- The URL must be a fully-formed valid URL
- The prompt must be at least 2 characters
- HTTP URLs will be automatically upgraded to HTTPS
- This tool is read-only and does not modify any files";

/// The description for native tool calling, Cline's.
const NATIVE_DESCRIPTION: &str = "Fetches and analyzes content from a specified URL. IMPORTANT: If an MCP-provided web fetch tool is available, prefer using that tool instead of this one, as it may have fewer restrictions.";

/// Direct fetches return at most this much content (Cline's 400 KB read cap).
const MAX_CONTENT_BYTES: usize = 400 * 1024;

/// The input: `url` and `prompt`, both required.
#[derive(Debug, Deserialize)]
pub struct WebFetchArgs {
    #[serde(default, deserialize_with = "lenient_string")]
    url: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    prompt: Option<String>,
}

/// The handler.
pub struct WebFetch;

/// The parameters, both required; the native specs word them otherwise and give no usage.
fn parameters(native: bool) -> Vec<ParamSpec> {
    if native {
        vec![
            param("url", true, "The URL to fetch content from", None),
            param("prompt", true, "Prompt for analyzing the webpage content", None),
        ]
    } else {
        vec![
            param("url", true, "The URL to fetch content from", Some("https://example.com/docs")),
            param(
                "prompt",
                true,
                "The prompt to use for analyzing the webpage content",
                Some("Summarize the main points and key takeaways"),
            ),
        ]
    }
}

impl Tool for WebFetch {
    type Args = WebFetchArgs;

    fn declaration() -> ToolDeclaration {
        TOOL.declaration("[{tool} for '{url}']", DESCRIPTION, NATIVE_DESCRIPTION, parameters)
    }

    fn new(_init: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(WebFetch))
    }

    fn prepare(
        &self,
        call: &ToolCall<WebFetchArgs>,
        host: &HostClient<'_>,
    ) -> Result<Prepared, toolshed_plugin_api::Failure> {
        // The gates come first, as in Cline.
        if let Err(error) = TOOL.gate(host, WebSettings::fetch_open) {
            return Ok(Prepared::Error(error));
        }
        let Some(url) = present(&call.input.url) else {
            return Ok(result::refuse(result::missing_parameter_text("url")));
        };
        if present(&call.input.prompt).is_none() {
            return Ok(result::refuse(result::missing_parameter_text("prompt")));
        }
        Ok(result::approval("network", format!("Cline wants to fetch content from {url}"), Vec::new(), Risk::High))
    }

    fn execute(
        &self,
        call: &ToolCall<WebFetchArgs>,
        host: &HostClient<'_>,
    ) -> Result<Outcome, toolshed_plugin_api::Failure> {
        let settings = TOOL.gate(host, WebSettings::fetch_open)?;
        let (Some(url), Some(prompt)) = (present(&call.input.url), present(&call.input.prompt)) else {
            let name = if present(&call.input.url).is_none() { "url" } else { "prompt" };
            return Ok(result::missing_parameter(name));
        };
        host.say("tool", &fetch_message(url), false);
        if settings.direct() {
            return Ok(self.fetch_direct(url, prompt, &settings, host));
        }
        Ok(TOOL.outcome(fetch_through_api(url, prompt, &call.task.task_id, &settings, host)))
    }

    fn job(&self, name: &str, input: Value, _host: &HostClient<'_>) -> Result<Value, String> {
        if name != HTML_JOB {
            return Err(format!("web_fetch has no job named `{name}`"));
        }
        html_job(&input)
    }

    fn partial(&self, block: &toolshed_plugin_api::PartialBlock, host: &HostClient<'_>) {
        let url = block.input.get("url").and_then(Value::as_str).unwrap_or("");
        host.say("tool", &fetch_message(url), true);
    }
}

mod export {
    use super::{export_plugin, WebFetch};

    export_plugin! { name: "web_fetch", version: env!("CARGO_PKG_VERSION"), tools: [WebFetch] }
}

/// Cline's `webFetch` tool message for the UI.
fn fetch_message(url: &str) -> String {
    tool_message("webFetch", url, format!("Fetching URL: {url}"))
}

/// The body Cline posts, in its key order.
#[derive(Serialize)]
struct FetchBody<'a> {
    #[serde(rename = "Url")]
    url: &'a str,
    #[serde(rename = "Prompt")]
    prompt: &'a str,
}

/// Cline's request to its API; the answer is `data.result`.
fn fetch_through_api(
    url: &str,
    prompt: &str,
    task_id: &str,
    settings: &WebSettings,
    host: &HostClient<'_>,
) -> Result<String, Failure> {
    let response = post_cline_api("webfetch", &FetchBody { url, prompt }, task_id, settings, host)?;
    let data = field(&response.body, "data");
    let result = match &data {
        Some(Value::Object(object)) => object.get("result"),
        Some(Value::Null) => return Err(Failure::Message(read_error("null", "result"))),
        // A body that is not a JSON object has no `data`: axios leaves it a string, Cline reads
        // `undefined.result`.
        _ => return Err(Failure::Message(read_error("undefined", "result"))),
    };
    Ok(match result {
        Some(Value::String(text)) => text.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    })
}

impl WebFetch {
    /// The direct backend: the page through the host's client, as Markdown (JSON pretty-printed), with the
    /// prompt for the model to apply. A conversion that failed in its child process (out of memory, stack or
    /// time) is a tool error in the host's words.
    fn fetch_direct(&self, url: &str, prompt: &str, settings: &WebSettings, host: &HostClient<'_>) -> Outcome {
        let request = HttpRequest {
            method: "GET".to_owned(),
            url: url.to_owned(),
            headers: vec![(
                "Accept".to_owned(),
                "text/html,application/xhtml+xml,application/json;q=0.9,text/*;q=0.8,*/*;q=0.5".to_owned(),
            )],
            body: None,
            timeout_ms: Some(settings.fetch_timeout_ms),
            cline_api: false,
        };
        let response = match request_failed(host.http_request(&request)).and_then(ok_status) {
            Ok(response) => response,
            Err(failure) => return TOOL.outcome(Err(failure)),
        };
        let content_type = response.header("content-type").unwrap_or("").to_ascii_lowercase();
        let converted = match convert(&content_type, &response.body, |html| self.html_in_child(html, host)) {
            Ok(converted) => converted,
            Err(message) => {
                return Outcome::Error(ToolError {
                    message: format!("{}: {message}", TOOL.error_prefix),
                    mistake: false,
                })
            }
        };
        let Some((content, truncated)) = converted else {
            return TOOL.outcome(Err(Failure::Message(format!(
                "{url} returned {content_type}, which is not text this tool can read"
            ))));
        };
        let mut text = format!("Prompt: {prompt}\n\nFetched Markdown for {}:\n\n{content}", response.final_url);
        if truncated {
            text.push_str("\n\n[Content truncated: only the first 400 KB are shown.]");
        }
        TOOL.outcome(Ok(text))
    }

    /// Converts HTML in the host's child process (`[isolation]`), where a parser's stack overflow, runaway
    /// allocation or endless loop ends the child, not the host; the child's failure is the call's, in the
    /// host's words naming the limit.
    fn html_in_child(&self, html: &str, host: &HostClient<'_>) -> Result<(String, bool), String> {
        let answer = host.isolated(self, HTML_JOB, serde_json::json!({ "html": html })).map_err(|e| match e {
            IsolatedError::Job(message) | IsolatedError::Failed(message) => message,
        })?;
        let markdown = answer.get("markdown").and_then(Value::as_str).unwrap_or("").to_owned();
        Ok((markdown, answer.get("truncated").and_then(Value::as_bool).unwrap_or(false)))
    }
}

/// The body as Markdown or text by its media type, cut to [`MAX_CONTENT_BYTES`], with whether it was cut;
/// `None` for media that is not text. `html` converts HTML (in a child process, in the plugin); its error
/// is the call's.
fn convert(
    content_type: &str,
    body: &str,
    html: impl FnOnce(&str) -> Result<(String, bool), String>,
) -> Result<Option<(String, bool)>, String> {
    let media = content_type.split(';').next().unwrap_or("").trim();
    let looks_html = {
        let start = body.trim_start().get(..15).unwrap_or("").to_ascii_lowercase();
        start.starts_with("<!doctype html") || start.starts_with("<html")
    };
    if media == "text/html" || media == "application/xhtml+xml" || (media.is_empty() && looks_html) {
        return html(body).map(Some);
    }
    let owned = |(text, cut): (&str, bool)| Ok(Some((text.to_owned(), cut)));
    if media == "application/json" || media.ends_with("+json") {
        return match markdown::pretty_json(body, MAX_CONTENT_BYTES) {
            Some(pretty) => owned(markdown::cap(&pretty, MAX_CONTENT_BYTES)),
            None => owned(markdown::cap(body, MAX_CONTENT_BYTES)),
        };
    }
    let textual = media.is_empty()
        || media.starts_with("text/")
        || media.ends_with("+xml")
        || matches!(media, "application/xml" | "application/javascript" | "application/x-yaml" | "application/yaml");
    if !textual {
        return Ok(None);
    }
    owned(markdown::cap(body, MAX_CONTENT_BYTES))
}

/// The name of the job that turns HTML into Markdown.
const HTML_JOB: &str = "html_to_markdown";

/// The job: `{"html"}` in, `{"markdown", "truncated"}` out, the Markdown already cut to
/// [`MAX_CONTENT_BYTES`] so the answer that crosses the pipe is small.
fn html_job(input: &Value) -> Result<Value, String> {
    let html = input.get("html").and_then(Value::as_str).ok_or("the job needs an html string")?;
    let (markdown, truncated) = markdown::html_to_markdown(html, MAX_CONTENT_BYTES);
    Ok(serde_json::json!({ "markdown": markdown, "truncated": truncated }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn declaration_matches_cline() {
        let declaration = WebFetch::declaration();
        let params =
            web_common::check_declaration(&declaration, "[{tool} for '{url}']", DESCRIPTION, NATIVE_DESCRIPTION);
        assert_eq!(params, [("url", true), ("prompt", true), ("task_progress", false)]);
    }

    #[test]
    fn the_api_body_keeps_clines_key_order() {
        let body = serde_json::to_string(&FetchBody { url: "https://a.example", prompt: "sum \"it\"" }).unwrap();
        assert_eq!(body, r#"{"Url":"https://a.example","Prompt":"sum \"it\""}"#);
    }

    /// `convert` with the HTML job run in-process, its text without the cut flag.
    fn converted(content_type: &str, body: &str) -> Option<String> {
        convert(content_type, body, |html| {
            html_job(&serde_json::json!({ "html": html })).map(|answer| {
                let markdown = answer["markdown"].as_str().unwrap().to_owned();
                (markdown, answer["truncated"].as_bool().unwrap())
            })
        })
        .unwrap()
        .map(|(text, _)| text)
    }

    #[test]
    fn media_types_decide_the_conversion() {
        let html = "<html><head><title>T</title><style>p {}</style></head><body><h1>Title</h1>\
                    <script>alert(1)</script><p>Some <b>bold</b> text.</p></body></html>";
        assert_eq!(converted("text/html; charset=utf-8", html).unwrap(), "# Title\n\nSome **bold** text.");
        assert_eq!(converted("", "<!DOCTYPE html><h2>X</h2>").unwrap(), "## X");
        assert_eq!(converted("application/json", "[1,2]").unwrap(), "[\n  1,\n  2\n]");
        assert_eq!(converted("text/plain", "plain").unwrap(), "plain");
        assert_eq!(converted("image/png", "\u{fffd}PNG"), None);
    }

    #[test]
    fn every_media_is_cut_to_the_content_cap() {
        let cut = |content_type: &str, body: &str| {
            let job = |html: &str| Ok(markdown::html_to_markdown(html, MAX_CONTENT_BYTES));
            let (text, truncated) = convert(content_type, body, job).unwrap().unwrap();
            // On a character boundary at most three bytes short of the cap.
            (text.len() <= MAX_CONTENT_BYTES && text.len() + 3 >= MAX_CONTENT_BYTES, truncated)
        };
        let big = "é".repeat(MAX_CONTENT_BYTES);
        assert_eq!(cut("text/plain", &big), (true, true));
        assert_eq!(cut("text/html", &format!("<p>{big}</p>")), (true, true));
        assert_eq!(cut("application/json", &format!("[\"{big}\"]")), (true, true));
        // Not JSON: the body as it came, cut all the same.
        assert_eq!(cut("application/json", &format!("[{big}")), (true, true));
        let job = |html: &str| Ok(markdown::html_to_markdown(html, MAX_CONTENT_BYTES));
        assert_eq!(convert("text/html", "<p>short</p>", job), Ok(Some(("short".to_owned(), false))));
    }

    #[test]
    fn javascript_reads_of_missing_fields() {
        assert_eq!(field(r#"{"data":{"result":"x"}}"#, "data"), Some(serde_json::json!({"result": "x"})));
        assert_eq!(field("not json", "data"), None);
        assert_eq!(field("\"a string\"", "data"), None);
        assert_eq!(read_error("undefined", "result"), "Cannot read properties of undefined (reading 'result')");
    }
}
