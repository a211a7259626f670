//! What the web tools (web_fetch, web_search) share: their declarations' shape, the gates every call passes
//! (the host's web services, the `[web]` switches), the POST to the Cline API with Cline's axios-style failure
//! texts, and how a failure becomes the text the model sees. What differs is the tool's name and the prefix of
//! its error texts, given by a [`WebTool`].
//!
//! A library crate both plugins link: plugins are separate `cdylib`s that each export a root module, so one
//! cannot link another, and one crate keeps one implementation of the requests and error texts both tools
//! must word alike.

use serde::Serialize;
use serde_json::Value;
use toolshed_plugin_api::services::{HttpReply, HttpRequest, HttpResponse, WebSettings, WEB_TOOLS_DISABLED};
use toolshed_plugin_api::{
    capability, result, HostClient, Outcome, ParamSpec, ServiceError, ServiceErrorKind, ToolDeclaration, ToolError,
    ToolSpec,
};

/// What tells the web tools apart in the shared code.
pub struct WebTool {
    /// The tool's name, as declared and as named in the error for a host without web services.
    pub name: &'static str,
    /// The start of its error texts, without the `: ` that follows (`Error fetching web content`).
    pub error_prefix: &'static str,
}

/// Why a request produced no content.
#[derive(Debug, PartialEq)]
pub enum Failure {
    /// The message after the tool's error prefix.
    Message(String),
    /// The call was cancelled while waiting.
    Cancelled,
}

/// A string parameter of a web tool.
pub fn param(name: &str, required: bool, description: &str, usage: Option<&str>) -> ParamSpec {
    ParamSpec::new(name, required, description).usage(usage)
}

impl WebTool {
    /// The declaration: the network capability, the `display` line, and Cline's generic spec and native spec
    /// (the latter for both native families), whose parameters are `parameters(native)`.
    pub fn declaration(
        &self,
        display: &str,
        description: &str,
        native_description: &str,
        parameters: impl Fn(bool) -> Vec<ParamSpec>,
    ) -> ToolDeclaration {
        let tool_spec = |description: &str, native: bool| ToolSpec {
            id: self.name.to_owned(),
            name: self.name.to_owned(),
            description: description.to_owned(),
            parameters: parameters(native).into_iter().chain([ParamSpec::task_progress()]).collect(),
            // Cline offers its web tools only when they are turned on (`clineWebToolsEnabled`); the runtime
            // sets `web_tools` from `[web] enabled`.
            context_requirements: vec!["web_tools".to_owned()],
        };
        ToolDeclaration {
            name: self.name.to_owned(),
            aliases: Vec::new(),
            capabilities: vec![capability::NETWORK.to_owned()],
            display: Some(display.to_owned()),
            specs: [
                ("generic".to_owned(), tool_spec(description, false)),
                ("gpt-5-native".to_owned(), tool_spec(native_description, true)),
                ("native-next-gen".to_owned(), tool_spec(native_description, true)),
            ]
            .into_iter()
            .collect(),
        }
    }

    /// The settings once the gates are passed, or the tool error of the first closed one: a host without the
    /// web services, then the switch `open` reads. A closed gate is not the model's mistake.
    pub fn gate(&self, host: &HostClient<'_>, open: fn(&WebSettings) -> bool) -> Result<WebSettings, ToolError> {
        let settings = host.web_settings().map_err(|e| {
            let message = if e.kind == ServiceErrorKind::UnknownService {
                format!(
                    "This host offers no web services (web.settings, http.request), so {} cannot run here.",
                    self.name
                )
            } else {
                format!("{}: {e}", self.error_prefix)
            };
            ToolError { message, mistake: false }
        })?;
        if !open(&settings) {
            return Err(ToolError { message: WEB_TOOLS_DISABLED.to_owned(), mistake: false });
        }
        Ok(settings)
    }

    /// The outcome of a call: the text, or a failure as plain text after the error prefix, as Cline returns
    /// it (not wrapped as a tool error); only a cancelled call is a tool error.
    pub fn outcome(&self, text: Result<String, Failure>) -> Outcome {
        match text {
            Ok(text) => result::text(text),
            Err(Failure::Message(message)) => result::text(format!("{}: {message}", self.error_prefix)),
            Err(Failure::Cancelled) => Outcome::Error(ToolError {
                message: format!("{}: the call was cancelled", self.error_prefix),
                mistake: false,
            }),
        }
    }
}

/// A parameter that is present and not blank.
pub fn present(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.trim().is_empty())
}

/// Cline's tool message for the UI: `tool` is its kind (`webFetch`), `path` the URL or query.
pub fn tool_message(tool: &str, path: &str, content: String) -> String {
    serde_json::json!({
        "tool": tool,
        "path": path,
        "content": content,
        "operationIsLocatedInWorkspace": false,
    })
    .to_string()
}

/// The response of a request, or its failure as Cline words it: the host words its failures already
/// (`timeout of 15000ms exceeded`, the sign-in message, a refused address).
pub fn request_failed(reply: Result<HttpReply, ServiceError>) -> Result<HttpResponse, Failure> {
    match reply {
        Ok(HttpReply::Response(response)) => Ok(response),
        Ok(HttpReply::Failed(failure)) => Err(Failure::Message(failure.message)),
        Err(e) if e.kind == ServiceErrorKind::Cancelled => Err(Failure::Cancelled),
        Err(e) => Err(Failure::Message(e.message)),
    }
}

/// Cline's JSON POST to `{api_base_url}/api/v1/search/{endpoint}`: refused without a token, and a response
/// outside 2xx is axios's `Request failed with status code N`.
pub fn post_cline_api(
    endpoint: &str,
    body: &impl Serialize,
    task_id: &str,
    settings: &WebSettings,
    host: &HostClient<'_>,
) -> Result<HttpResponse, Failure> {
    if !settings.has_token {
        return Err(Failure::Message("Unauthorized: Please sign in to Cline before trying again.".to_owned()));
    }
    let body = serde_json::to_string(body).map_err(|e| Failure::Message(e.to_string()))?;
    let request = HttpRequest {
        method: "POST".to_owned(),
        url: format!("{}/api/v1/search/{endpoint}", settings.api_base_url),
        headers: vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("X-Task-ID".to_owned(), task_id.to_owned()),
        ],
        body: Some(body),
        timeout_ms: Some(settings.fetch_timeout_ms),
        cline_api: true,
    };
    ok_status(request_failed(host.http_request(&request))?)
}

/// The response if its status is 2xx, else axios's failure text.
pub fn ok_status(response: HttpResponse) -> Result<HttpResponse, Failure> {
    if !(200..300).contains(&response.status) {
        return Err(Failure::Message(format!("Request failed with status code {}", response.status)));
    }
    Ok(response)
}

/// `body.name` as JavaScript reads it from a parsed JSON body: `None` for undefined. A body that is not a
/// JSON object has none (axios leaves non-JSON a string).
pub fn field(body: &str, name: &str) -> Option<Value> {
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(mut object)) => object.remove(name),
        _ => None,
    }
}

/// The TypeError message JavaScript gives for reading a property of `undefined` or `null`.
pub fn read_error(of: &str, property: &str) -> String {
    format!("Cannot read properties of {of} (reading '{property}')")
}

/// For the plugins' tests (the `testing` feature): checks what both declarations share (capability, display,
/// families, descriptions) and returns the (name, required) pairs of the generic spec's parameters.
#[cfg(feature = "testing")]
pub fn check_declaration<'a>(
    declaration: &'a ToolDeclaration,
    display: &str,
    description: &str,
    native_description: &str,
) -> Vec<(&'a str, bool)> {
    assert_eq!(declaration.capabilities, vec![capability::NETWORK.to_owned()]);
    assert_eq!(declaration.display.as_deref(), Some(display));
    let families: Vec<_> = declaration.specs.keys().map(String::as_str).collect();
    assert_eq!(families, ["generic", "gpt-5-native", "native-next-gen"]);
    let generic = &declaration.specs["generic"];
    assert_eq!(generic.description, description);
    assert_eq!(declaration.specs["native-next-gen"].description, native_description);
    generic.parameters.iter().map(|p| (p.name.as_str(), p.required)).collect()
}
