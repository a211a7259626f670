//! The host's HTTP client behind the `http.request` and `web.settings` services: one shared `reqwest` client
//! per purpose, built once from `[web]`, run on a small tokio runtime the host owns.
//!
//! Two clients share the configuration (proxy, extra CA, redirect limit):
//!
//! - the **API client** talks to the user's configured `api_base_url` (the Cline API). That endpoint is the
//!   user's choice, so the address policy does not apply; the bearer token is added here, by the host, and
//!   only to requests under that base URL, so a plugin never sees it and it reaches nothing else.
//! - the **direct client** fetches what the model asked for. Private, loopback, link-local, unique-local,
//!   CGNAT and unspecified addresses are refused unless `allow_private_addresses` is set or the host is in
//!   `allowed_hosts`: IP literals are checked before the request and on every redirect, and names are
//!   checked by the client's own DNS resolver, which hands the connector only the addresses it checked, so
//!   nothing changes between the check and the connect (no DNS-rebinding window).
//!
//! Services are called from plugin worker threads, never from a tokio thread, so a request is spawned on the
//! host's runtime and the worker waits for it or the call's cancellation, whichever comes first: a cancelled or
//! timed-out call stops its request (the future is aborted, the connection closed).

#[cfg(feature = "web")]
use crate::task::Cancels;
#[cfg(feature = "web")]
use reqwest::Url;
#[cfg(feature = "web")]
use std::sync::{Arc, OnceLock};
#[cfg(feature = "web")]
use std::time::Duration;
use toolshed_plugin_api::services::WebSettings;
#[cfg(feature = "web")]
use toolshed_plugin_api::services::{HttpErrorKind, HttpFailure, HttpReply, HttpRequest, HttpResponse};
#[cfg(feature = "web")]
use toolshed_plugin_api::{ServiceError, ServiceErrorKind};

/// Cline's `CLINE_ACCOUNT_AUTH_ERROR_MESSAGE`: what a request to the API says without a token.
#[cfg(feature = "web")]
pub(crate) const NO_TOKEN_MESSAGE: &str = "Unauthorized: Please sign in to Cline before trying again.";

#[cfg(feature = "web")]
mod connect;
#[cfg(feature = "web")]
mod policy;

#[cfg(feature = "web")]
use connect::{CheckedResolver, PeerCheck};
#[cfg(feature = "web")]
use policy::{url_host, AddressPolicy, Refusal, Target};

// Without the feature: `http.request` answers that this build has no HTTP client.
#[cfg(not(feature = "web"))]
mod disabled;

/// What the HTTP service is configured with.
// Without `web` only `web` is read: the rest configures the client such a build lacks.
#[cfg_attr(not(feature = "web"), allow(dead_code))]
#[derive(Debug, Clone)]
pub(crate) struct HttpSettings {
    pub web: WebSettings,
    pub token: Option<String>,
    pub allowed_hosts: Vec<String>,
    pub denied_hosts: Vec<String>,
    pub allow_private_addresses: bool,
    pub max_redirects: u32,
    pub max_response_bytes: u64,
    pub proxy: Option<String>,
    pub ca_file: Option<std::path::PathBuf>,
}

impl HttpSettings {
    /// The settings of a `[web]` section and a token.
    pub fn new(config: &crate::config::WebConfig, token: Option<String>) -> Self {
        let token = token.filter(|t| !t.trim().is_empty());
        Self {
            web: WebSettings {
                provider: config.provider.clone(),
                enabled: config.enabled,
                feature_flag: config.feature_flag,
                backend: config.backend.clone(),
                api_base_url: config.api_base_url.trim_end_matches('/').to_owned(),
                fetch_timeout_ms: config.fetch_timeout_ms,
                has_token: token.is_some(),
            },
            token,
            allowed_hosts: config.allowed_hosts.clone(),
            denied_hosts: config.denied_hosts.clone(),
            allow_private_addresses: config.allow_private_addresses,
            max_redirects: config.max_redirects,
            max_response_bytes: config.max_response_bytes,
            proxy: config.proxy.clone(),
            ca_file: config.ca_file.clone(),
        }
    }
}

/// The clients and the runtime they run on, built at the first request.
#[cfg(feature = "web")]
struct Engine {
    runtime: tokio::runtime::Runtime,
    api: reqwest::Client,
    direct: reqwest::Client,
    policy: Arc<AddressPolicy>,
}

/// The `http.request` service: settings, and the engine built on first use.
pub(crate) struct HttpService {
    settings: HttpSettings,
    #[cfg(feature = "web")]
    engine: OnceLock<Result<Engine, String>>,
}

#[cfg(feature = "web")]
impl Drop for HttpService {
    fn drop(&mut self) {
        // The service may be dropped on an async thread (the actor system's), where dropping a runtime
        // that waits for its tasks would panic; requests still running are aborted instead.
        if let Some(Ok(engine)) = self.engine.take() {
            engine.runtime.shutdown_background();
        }
    }
}

impl HttpService {
    /// A service with these settings; nothing is built until the first request.
    pub fn new(settings: HttpSettings) -> Self {
        Self {
            settings,
            #[cfg(feature = "web")]
            engine: OnceLock::new(),
        }
    }

    /// What `web.settings` answers.
    pub fn web_settings(&self) -> WebSettings {
        self.settings.web.clone()
    }

    #[cfg(feature = "web")]
    fn engine(&self) -> Result<&Engine, ServiceError> {
        self.engine
            .get_or_init(|| build_engine(&self.settings))
            .as_ref()
            .map_err(|message| ServiceError::new(ServiceErrorKind::Failed, message.clone()))
    }

    /// Runs one request, waiting on the calling (worker) thread for its reply or the call's cancellation.
    #[cfg(feature = "web")]
    pub fn request(&self, request: HttpRequest, cancels: &Cancels<'_>) -> Result<HttpReply, ServiceError> {
        let failed = |kind, message: String| Ok(HttpReply::Failed(HttpFailure { kind, message }));
        let url = match Url::parse(&request.url) {
            Ok(url) => url,
            Err(e) => return failed(HttpErrorKind::InvalidUrl, format!("{} is not a valid URL: {e}", request.url)),
        };
        let method = reqwest::Method::from_bytes(request.method.to_ascii_uppercase().as_bytes()).map_err(|_| {
            ServiceError::new(ServiceErrorKind::InvalidRequest, format!("invalid method {:?}", request.method))
        })?;
        let engine = self.engine()?;
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &request.headers {
            let invalid =
                || ServiceError::new(ServiceErrorKind::InvalidRequest, format!("invalid header {name}: {value:?}"));
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid())?;
            let value = reqwest::header::HeaderValue::from_str(value).map_err(|_| invalid())?;
            headers.append(name, value);
        }
        let client = if request.cline_api {
            if !under_base(&url, &self.settings.web.api_base_url) {
                return failed(
                    HttpErrorKind::InvalidUrl,
                    format!("{url} is not under the configured [web] api_base_url"),
                );
            }
            let Some(token) = &self.settings.token else {
                return failed(HttpErrorKind::NoToken, NO_TOKEN_MESSAGE.to_owned());
            };
            let bearer = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                ServiceError::new(ServiceErrorKind::Failed, "TOOLSHED_WEB_TOKEN is not a valid header value")
            })?;
            headers.insert(reqwest::header::AUTHORIZATION, bearer);
            &engine.api
        } else {
            if let Err(refusal) = engine.policy.check_url(&url) {
                return failed(refusal.kind, refusal.message);
            }
            &engine.direct
        };
        let check = (!request.cline_api).then(|| (Arc::clone(&engine.policy), url.clone()));
        let mut builder = client.request(method, url).headers(headers);
        if let Some(body) = request.body {
            builder = builder.body(body);
        }
        let timeout = Duration::from_millis(request.timeout_ms.unwrap_or(self.settings.web.fetch_timeout_ms));
        let max_bytes = self.settings.max_response_bytes;
        let work = async move {
            let checked_send = async move {
                // The deny list's names resolved now, before anything is sent to an address in the URL.
                if let Some((policy, url)) = check
                    && let Err(refusal) = policy.check_target(&url).await
                {
                    return HttpReply::Failed(HttpFailure { kind: refusal.kind, message: refusal.message });
                }
                send(builder, max_bytes).await
            };
            match tokio::time::timeout(timeout, checked_send).await {
                Ok(reply) => reply,
                Err(_) => HttpReply::Failed(HttpFailure {
                    kind: HttpErrorKind::Timeout,
                    message: format!("timeout of {}ms exceeded", timeout.as_millis()),
                }),
            }
        };
        let (tx, rx) = crossbeam_channel::bounded(1);
        let task = engine.runtime.spawn(async move {
            let _ = tx.send(work.await);
        });
        match cancels.recv(&rx, None) {
            Ok(Some(reply)) => Ok(reply),
            Ok(None) => {
                task.abort();
                Err(ServiceError::new(ServiceErrorKind::Cancelled, "the call was cancelled or timed out"))
            }
            Err(_) => Err(ServiceError::new(ServiceErrorKind::Failed, "the HTTP request was dropped")),
        }
    }
}

/// Whether `url` lies under the base URL: same scheme, host and port, and the base's path as a prefix.
#[cfg(feature = "web")]
fn under_base(url: &Url, base: &str) -> bool {
    let Ok(base) = Url::parse(base) else {
        return false;
    };
    let base_path = base.path().trim_end_matches('/');
    url.scheme() == base.scheme()
        && url.host_str() == base.host_str()
        && url.port_or_known_default() == base.port_or_known_default()
        && url.path().strip_prefix(base_path).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Sends a request and reads its body up to the cap.
#[cfg(feature = "web")]
async fn send(builder: reqwest::RequestBuilder, max_bytes: u64) -> HttpReply {
    let failed = |kind, message: String| HttpReply::Failed(HttpFailure { kind, message });
    let mut response = match builder.send().await {
        Ok(response) => response,
        Err(error) => {
            let (kind, message) = describe(&error);
            return failed(kind, message);
        }
    };
    let too_large = || {
        failed(
            HttpErrorKind::TooLarge,
            format!("the response is larger than {max_bytes} bytes ([web] max_response_bytes)"),
        )
    };
    if response.content_length().is_some_and(|len| len > max_bytes) {
        return too_large();
    }
    let status = response.status().as_u16();
    let final_url = response.url().to_string();
    let headers = response
        .headers()
        .iter()
        .map(|(name, value)| (name.as_str().to_owned(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
        .collect();
    let mut body: Vec<u8> = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() as u64 + chunk.len() as u64 > max_bytes {
                    return too_large();
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(error) => {
                let (kind, message) = describe(&error);
                return failed(kind, message);
            }
        }
    }
    let body = String::from_utf8(body).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    HttpReply::Response(HttpResponse { status, headers, body, final_url })
}

/// The kind and message of a reqwest error: the policy's own refusal when it is in the chain.
#[cfg(feature = "web")]
fn describe(error: &reqwest::Error) -> (HttpErrorKind, String) {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    let mut innermost = None;
    while let Some(current) = source {
        if let Some(refusal) = current.downcast_ref::<Refusal>() {
            return (refusal.kind, refusal.message.clone());
        }
        innermost = Some(current);
        source = current.source();
    }
    let detail = innermost.map(std::string::ToString::to_string).filter(|d| *d != error.to_string());
    let message = match detail {
        Some(detail) => format!("{error}: {detail}"),
        None => error.to_string(),
    };
    let kind = if error.is_timeout() {
        HttpErrorKind::Timeout
    } else if error.is_redirect() {
        HttpErrorKind::TooManyRedirects
    } else if error.is_connect() {
        HttpErrorKind::Connect
    } else {
        HttpErrorKind::Failed
    };
    (kind, message)
}

#[cfg(feature = "web")]
fn build_engine(settings: &HttpSettings) -> Result<Engine, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("toolshed-http")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the HTTP runtime: {e}"))?;
    let proxy = match &settings.proxy {
        Some(url) => Some(reqwest::Proxy::all(url).map_err(|e| format!("[web] proxy {url:?}: {e}"))?),
        None => None,
    };
    let proxy_host = settings.proxy.as_deref().and_then(|p| Url::parse(p).ok()).and_then(|u| url_host(&u));
    let certificates = match &settings.ca_file {
        Some(path) => {
            let pem = std::fs::read(path).map_err(|e| format!("cannot read [web] ca_file {}: {e}", path.display()))?;
            reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| format!("[web] ca_file {} holds no usable PEM certificate: {e}", path.display()))?
        }
        None => Vec::new(),
    };
    let policy = Arc::new(AddressPolicy::new(
        &settings.allowed_hosts,
        &settings.denied_hosts,
        settings.allow_private_addresses,
        proxy_host,
    ));
    let max_redirects = settings.max_redirects as usize;
    let base = || {
        // No proxy from the environment: the configuration says where requests go.
        let mut builder =
            reqwest::Client::builder().no_proxy().user_agent(concat!("toolshed/", env!("CARGO_PKG_VERSION")));
        if let Some(proxy) = &proxy {
            builder = builder.proxy(proxy.clone());
        }
        for certificate in &certificates {
            builder = builder.add_root_certificate(certificate.clone());
        }
        builder
    };
    let api = base()
        .redirect(reqwest::redirect::Policy::limited(max_redirects))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let redirect_policy = Arc::clone(&policy);
    let mut direct = base();
    // Through a proxy every connection reaches the proxy, the user's choice; it resolves the names itself.
    if proxy.is_none() {
        direct = direct.connector_layer(PeerCheck(Arc::clone(&policy)));
    }
    let direct = direct
        .dns_resolver(Arc::new(CheckedResolver(Arc::clone(&policy))))
        .redirect(reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() > max_redirects {
                let message = format!("more than {max_redirects} redirects ([web] max_redirects)");
                return attempt.error(Refusal::new(HttpErrorKind::TooManyRedirects, message));
            }
            // A redirect to an address is checked against the denied names' addresses here, before its
            // connection is made; names go through the resolver.
            let checked = redirect_policy.check_url(attempt.url()).and_then(|host| match host {
                Target::Ip(ip) => redirect_policy.check_denied_blocking(&host, &[ip]),
                Target::Name(_) => Ok(()),
            });
            match checked {
                Ok(()) => attempt.follow(),
                Err(refusal) => attempt.error(refusal),
            }
        }))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    Ok(Engine { runtime, api, direct, policy })
}

#[cfg(all(test, feature = "web"))]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn api_urls_must_lie_under_the_base() {
        let base = "http://127.0.0.1:9000/cline";
        let url = |u: &str| Url::parse(u).unwrap();
        assert!(under_base(&url("http://127.0.0.1:9000/cline/api/v1/search/webfetch"), base));
        assert!(under_base(&url("http://127.0.0.1:9000/cline"), base));
        assert!(!under_base(&url("http://127.0.0.1:9000/clinex/api"), base));
        assert!(!under_base(&url("http://127.0.0.1:9001/cline/api"), base));
        assert!(!under_base(&url("https://127.0.0.1:9000/cline/api"), base));
        assert!(!under_base(&url("http://evil.example/cline/api"), base));
        assert!(under_base(&url("https://api.cline.bot/api/v1/search/websearch"), "https://api.cline.bot"));
    }
}
