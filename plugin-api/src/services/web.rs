//! The web: the user's `[web]` settings and requests on the host's one HTTP client.

use super::Empty;
use serde::{Deserialize, Serialize};

services! {
    /// `web.settings`: what the web tools need to know from the user's `[web]` configuration: the gates, the
    /// backend, the API base URL, the request timeout, and whether a token is set (never the token itself: the
    /// host adds it to requests for the API, so it reaches nothing else).
    WebSettingsService(WEB_SETTINGS) = "web.settings": Empty => WebSettings;
}

services! {
    /// `http.request`: one HTTP request on the host's shared client. A request with `cline_api` set must target
    /// the configured API base URL and gets the bearer token; every other request is a direct fetch under the
    /// host's address policy (private, loopback and link-local addresses refused unless allowed, checked after
    /// DNS resolution and again on every redirect). Plugins never open their own clients.
    HttpRequestService(HTTP_REQUEST) = "http.request": HttpRequest => HttpReply;
}

/// Response of [`WebSettingsService`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSettings {
    /// The provider; `"cline"` enables the Cline API contract.
    #[serde(default)]
    pub provider: Option<String>,
    /// The user's setting that turns the web tools on.
    #[serde(default)]
    pub enabled: bool,
    /// The feature flag that must also be on for the Cline API tools.
    #[serde(default)]
    pub feature_flag: bool,
    /// `"cline"` (through the Cline API) or `"direct"` (web_fetch fetches the URL itself).
    #[serde(default)]
    pub backend: String,
    /// The base URL of the Cline API, without a trailing slash.
    #[serde(default)]
    pub api_base_url: String,
    /// The timeout of one web tool request, in milliseconds.
    #[serde(default)]
    pub fetch_timeout_ms: u64,
    /// Whether the host holds a bearer token for the API (`TOOLSHED_WEB_TOKEN`).
    #[serde(default)]
    pub has_token: bool,
}

/// Cline's answer when a web tool's gates are closed (a tool error, not a mistake of the model).
pub const WEB_TOOLS_DISABLED: &str = "Cline web tools are currently disabled.";

impl WebSettings {
    /// Whether the web tools talk to a direct fetch rather than the Cline API.
    pub fn direct(&self) -> bool {
        self.backend == "direct"
    }

    /// Cline's three gates for the API tools: the provider is `cline`, the user's setting is on, and the
    /// feature flag is on.
    pub fn cline_api_open(&self) -> bool {
        self.provider.as_deref() == Some("cline") && self.enabled && self.feature_flag
    }

    /// The gates of a tool that can fetch directly (web_fetch): with the direct backend, the user's setting
    /// alone (the provider and the flag belong to the Cline account); otherwise the three of the API.
    pub fn fetch_open(&self) -> bool {
        if self.direct() {
            self.enabled
        } else {
            self.cline_api_open()
        }
    }
}

/// Request of [`HttpRequestService`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpRequest {
    /// The method (`GET`, `POST`, …).
    #[serde(default = "default_method")]
    pub method: String,
    /// The absolute `http://` or `https://` URL.
    pub url: String,
    /// Request headers in order, as name/value pairs.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The request body.
    #[serde(default)]
    pub body: Option<String>,
    /// The whole request's timeout, body included; the host's `[web] fetch_timeout_ms` when absent.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// A request to the configured Cline API: the URL must lie under `api_base_url`, and the host adds
    /// `Authorization: Bearer {token}`.
    #[serde(default)]
    pub cline_api: bool,
}

fn default_method() -> String {
    "GET".to_owned()
}

/// A response of [`HttpRequestService`], whatever its status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Response headers in order, names lower-cased.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The body as text (invalid UTF-8 replaced).
    #[serde(default)]
    pub body: String,
    /// The URL that answered, after redirects.
    #[serde(default)]
    pub final_url: String,
}

impl HttpResponse {
    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Why an HTTP request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HttpErrorKind {
    /// The request did not finish within its timeout.
    Timeout,
    /// The host (or an address it resolves to, or a redirect target) is refused by the address policy.
    RefusedAddress,
    /// The response body is larger than `[web] max_response_bytes`.
    TooLarge,
    /// More redirects than `[web] max_redirects`.
    TooManyRedirects,
    /// The URL is not an absolute http(s) URL, or (with `cline_api`) not under the API base URL.
    InvalidUrl,
    /// `cline_api` was asked and the host has no token.
    NoToken,
    /// The connection could not be made (refused, DNS failure, TLS).
    Connect,
    /// Anything else.
    Failed,
}

/// The failure half of [`HttpReply`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpFailure {
    /// The kind of failure.
    pub kind: HttpErrorKind,
    /// What happened, for a human or the model.
    pub message: String,
}

/// The answer of [`HttpRequestService`]: a response (any status) or a typed failure. Cancellation and malformed
/// requests are service errors instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum HttpReply {
    /// The server answered.
    Response(HttpResponse),
    /// No answer.
    Failed(HttpFailure),
}
