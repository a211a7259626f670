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
//! host's runtime and the worker waits for it, polling the call's cancellation: a cancelled or timed-out call
//! stops its request (the future is aborted, the connection closed).

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::Url;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use toolshed_plugin_api::services::{HttpErrorKind, HttpFailure, HttpReply, HttpRequest, HttpResponse, WebSettings};
use toolshed_plugin_api::{ServiceError, ServiceErrorKind};
use url::Host;

use crate::config::HostRule;

/// Cline's `CLINE_ACCOUNT_AUTH_ERROR_MESSAGE`: what a request to the API says without a token.
pub(crate) const NO_TOKEN_MESSAGE: &str = "Unauthorized: Please sign in to Cline before trying again.";

/// How often a waiting worker looks at its call's cancellation flag.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// The IPv4 addresses an IPv6 address carries, each a place a packet to it can end up: IPv4-mapped
/// (`::ffff:0:0/96`), IPv4-compatible (`::/96`), SIIT-translated (`::ffff:0:0:0/96`), NAT64 (`64:ff9b::/96`,
/// and the local-use `64:ff9b:1::/48` in each RFC 6052 layout), 6to4 (`2002::/16`), Teredo (`2001::/32`: the
/// server and the obfuscated client) and ISATAP interface identifiers (`::5efe:a.b.c.d`).
fn embedded_v4(ip: Ipv6Addr) -> Vec<Ipv4Addr> {
    let s = ip.segments();
    let join = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    let low = join(s[6], s[7]);
    let mut out = Vec::new();
    if s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0) {
        out.push(low);
    }
    if s[..4] == [0; 4] && s[4] == 0xffff && s[5] == 0 {
        out.push(low);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        out.push(low);
    }
    if s[..3] == [0x64, 0xff9b, 1] {
        let byte = |segment: u16, high: bool| u32::from(if high { segment >> 8 } else { segment & 0xff });
        let octets = |a: u32, b: u32, c: u32, d: u32| Ipv4Addr::from((a << 24) | (b << 16) | (c << 8) | d);
        // /48: bits 48..64 and 72..88; /56: 56..64 and 72..96; /64: 72..104; /96: the last 32 bits.
        out.push(octets(byte(s[3], true), byte(s[3], false), byte(s[4], false), byte(s[5], true)));
        out.push(octets(byte(s[3], false), byte(s[4], false), byte(s[5], true), byte(s[5], false)));
        out.push(octets(byte(s[4], false), byte(s[5], true), byte(s[5], false), byte(s[6], true)));
        out.push(low);
    }
    if s[0] == 0x2002 {
        out.push(join(s[1], s[2]));
    }
    if s[..2] == [0x2001, 0] {
        out.push(join(s[2], s[3]));
        out.push(join(!s[6], !s[7]));
    }
    if s[4] & 0xfdff == 0 && s[5] == 0x5efe {
        out.push(low);
    }
    out
}

/// Every form of an address to judge: the address itself and each IPv4 address it carries.
fn forms(ip: IpAddr) -> Vec<IpAddr> {
    match ip {
        IpAddr::V4(_) => vec![ip],
        IpAddr::V6(v6) => std::iter::once(ip).chain(embedded_v4(v6).into_iter().map(IpAddr::V4)).collect(),
    }
}

/// Why an address is not public, or `None` when it is. An IPv6 address is judged as itself and as every
/// IPv4 address it carries (see [`embedded_v4`]): `[::127.0.0.1]` is loopback, `[64:ff9b::a00:1]` private.
pub(crate) fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6).or_else(|| embedded_v4(v6).into_iter().find_map(non_public_v4)),
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if ip.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (CGNAT)")
    } else if ip.is_broadcast() || ip.is_multicast() || a >= 240 {
        Some("multicast or reserved")
    } else if matches!((a, b, c), (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113))
        || (a == 198 && (b & 0xfe) == 18)
    {
        // IETF protocol assignments, documentation and benchmarking ranges: never a public site.
        Some("multicast or reserved")
    } else {
        None
    }
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    if ip.is_unspecified() {
        Some("unspecified")
    } else if ip.is_loopback() {
        Some("loopback")
    } else if segments[0] & 0xfe00 == 0xfc00 {
        Some("unique-local")
    } else if segments[0] & 0xffc0 == 0xfe80 || segments[0] & 0xffc0 == 0xfec0 {
        Some("link-local")
    } else if segments[..3] == [0x64, 0xff9b, 1] {
        // Local-use NAT64 reaches whatever the local translator serves.
        Some("private (local NAT64)")
    } else if ip.is_multicast() || segments[..4] == [0x100, 0, 0, 0] || segments[..2] == [0x2001, 0xdb8] {
        Some("multicast or reserved")
    } else {
        None
    }
}

/// Matching URLs against the `[web]` host entries, which the configuration parses (see
/// [`crate::config::HostRule`]); the addresses an entry reaches are judged here, with the address policy.
impl HostRule {
    /// Whether the host a URL names is this entry: the same name, a subdomain, or an address reaching the
    /// same place.
    fn matches(&self, host: &Target) -> bool {
        match (self, host) {
            (Self::Name { host: rule, subdomains }, Target::Name(name)) => {
                if *subdomains {
                    name.strip_suffix(rule.as_str()).is_some_and(|rest| rest.ends_with('.'))
                } else {
                    name == rule
                }
            }
            (Self::Addr(_) | Self::Net(_), Target::Ip(ip)) => self.matches_ip(*ip),
            (Self::Name { .. }, Target::Ip(_)) | (Self::Addr(_) | Self::Net(_), Target::Name(_)) => false,
        }
    }

    /// Whether an address is this entry's, in any of its forms.
    fn matches_ip(&self, ip: IpAddr) -> bool {
        match self {
            Self::Addr(rule) => {
                let rule = forms(*rule);
                forms(ip).iter().any(|form| rule.contains(form))
            }
            Self::Net(net) => forms(ip).iter().any(|form| net.contains(form)),
            Self::Name { .. } => false,
        }
    }
}

/// A URL's host: a name (lower-cased, no final dot) or an address, as the URL parser normalised it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Name(String),
    Ip(IpAddr),
}

impl Target {
    fn of(url: &Url) -> Option<Target> {
        Some(match url.host()? {
            Host::Ipv4(v4) => Target::Ip(IpAddr::V4(v4)),
            Host::Ipv6(v6) => Target::Ip(IpAddr::V6(v6)),
            Host::Domain(name) => Target::Name(name.trim_end_matches('.').to_ascii_lowercase()),
        })
    }

    fn name(name: &str) -> Target {
        Target::Name(name.trim_end_matches('.').to_ascii_lowercase())
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Name(name) => f.write_str(name),
            Target::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// The host's address policy for direct fetches.
#[derive(Debug)]
pub(crate) struct AddressPolicy {
    allowed: Vec<HostRule>,
    denied: Vec<HostRule>,
    allow_private: bool,
    /// The proxy's own host, which the resolver must reach whatever its address.
    proxy_host: Option<String>,
}

/// A refusal by the address policy (carried through reqwest's error chain from the resolver, the connector
/// and the redirect policy).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct Refusal {
    kind: HttpErrorKind,
    message: String,
}

impl Refusal {
    fn new(kind: HttpErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }
}

/// The lower-cased host of a URL, IPv6 without brackets.
fn url_host(url: &Url) -> Option<String> {
    let host = url.host_str()?;
    Some(host.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_ascii_lowercase())
}

impl AddressPolicy {
    fn new(allowed: &[String], denied: &[String], allow_private: bool, proxy_host: Option<String>) -> Self {
        Self {
            allowed: allowed.iter().map(|e| HostRule::parse(e)).collect(),
            denied: denied.iter().map(|e| HostRule::parse(e)).collect(),
            allow_private,
            proxy_host,
        }
    }

    fn exempt(&self, host: &Target) -> bool {
        self.allow_private
            || self.allowed.iter().any(|rule| rule.matches(host))
            || self.proxy_host.as_deref().is_some_and(|proxy| HostRule::parse(proxy).matches(host))
    }

    /// Checks a URL before it is requested and before every redirect is followed: the scheme, the deny
    /// list against the host as written (a name, or every form of an address), and IP literals against the
    /// address policy (names are checked when they are resolved, and every connection once it is made).
    fn check_url(&self, url: &Url) -> Result<Target, Refusal> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refusal::new(HttpErrorKind::InvalidUrl, format!("{url} is not an http:// or https:// URL")));
        }
        let Some(host) = Target::of(url) else {
            return Err(Refusal::new(HttpErrorKind::InvalidUrl, format!("{url} has no host")));
        };
        if let Some(rule) = self.denied.iter().find(|rule| rule.matches(&host)) {
            return Err(denied(&host, None, rule));
        }
        if let Target::Ip(ip) = host {
            if let Some(reason) = non_public(ip) {
                if !self.exempt(&host) {
                    return Err(refused_address(&host.to_string(), ip, reason));
                }
            }
        }
        Ok(host)
    }

    /// [`check_url`](Self::check_url), then, for an address, the addresses of the denied names as they
    /// resolve now: what is checked before the first byte of a request leaves.
    async fn check_target(&self, url: &Url) -> Result<(), Refusal> {
        if let Target::Ip(ip) = self.check_url(url)? {
            self.check_denied(&Target::Ip(ip), &[ip]).await?;
        }
        Ok(())
    }

    /// The name entries of the deny list (not `*.domain`), whose addresses are denied too.
    fn denied_names(&self) -> impl Iterator<Item = &str> {
        self.denied.iter().filter_map(|rule| match rule {
            HostRule::Name { host, subdomains: false } => Some(host.as_str()),
            HostRule::Name { subdomains: true, .. } | HostRule::Addr(_) | HostRule::Net(_) => None,
        })
    }

    /// Refuses `addrs` (what `host` resolved to, or the address itself) when any of them is denied: by an
    /// address or network entry in any of its forms, or by a name entry resolving to it now. One denied
    /// address refuses the whole name: it is, at least in part, a name of the denied host.
    async fn check_denied(&self, host: &Target, addrs: &[IpAddr]) -> Result<(), Refusal> {
        let mut resolved = Vec::new();
        if self.denied_by_entry(host, addrs).is_ok() {
            for name in self.denied_names() {
                // A name that does not resolve now has no address to deny.
                if let Ok(found) = tokio::net::lookup_host((name, 0)).await {
                    resolved.push((name, found.map(|addr| addr.ip()).collect()));
                }
            }
        }
        self.judge_denied(host, addrs, &resolved)
    }

    /// [`check_denied`](Self::check_denied) for a synchronous caller (the redirect policy, which reqwest runs
    /// on the runtime's worker): the lookups block, so on a multi-threaded runtime the worker's other tasks
    /// move to another thread meanwhile.
    fn check_denied_blocking(&self, host: &Target, addrs: &[IpAddr]) -> Result<(), Refusal> {
        self.denied_by_entry(host, addrs)?;
        if self.denied_names().next().is_none() {
            return Ok(());
        }
        let resolve = || -> Vec<(&str, Vec<IpAddr>)> {
            use std::net::ToSocketAddrs;
            self.denied_names()
                .filter_map(|name| Some((name, (name, 0).to_socket_addrs().ok()?.map(|a| a.ip()).collect())))
                .collect()
        };
        let resolved = match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(resolve)
            }
            Ok(_) | Err(_) => resolve(),
        };
        self.judge_denied(host, addrs, &resolved)
    }

    /// The address and network entries' part of the deny check.
    fn denied_by_entry(&self, host: &Target, addrs: &[IpAddr]) -> Result<(), Refusal> {
        for ip in addrs {
            if let Some(rule) = self.denied.iter().find(|rule| rule.matches_ip(*ip)) {
                return Err(denied(host, Some(*ip), rule));
            }
        }
        Ok(())
    }

    /// The deny check, given the addresses each denied name resolves to now.
    fn judge_denied(&self, host: &Target, addrs: &[IpAddr], resolved: &[(&str, Vec<IpAddr>)]) -> Result<(), Refusal> {
        self.denied_by_entry(host, addrs)?;
        for (name, found) in resolved {
            let same = |ip: &IpAddr| found.iter().any(|r| HostRule::Addr(*r).matches_ip(*ip));
            if let Some(ip) = addrs.iter().find(|ip| same(ip)) {
                let through = if *host == Target::Ip(*ip) { String::new() } else { format!(" (resolves to {ip})") };
                return Err(Refusal::new(
                    HttpErrorKind::RefusedAddress,
                    format!("{host}{through} is an address of {name}, which is in [web] denied_hosts"),
                ));
            }
        }
        Ok(())
    }

    /// Keeps the public addresses of a resolved name (all of them for an exempt name); a name with none
    /// left is refused.
    fn filter(&self, host: &str, addrs: Vec<SocketAddr>) -> Result<Vec<SocketAddr>, Refusal> {
        if self.exempt(&Target::name(host)) {
            return Ok(addrs);
        }
        let mut first_refused = None;
        let public: Vec<SocketAddr> = addrs
            .into_iter()
            .filter(|addr| match non_public(addr.ip()) {
                Some(reason) => {
                    first_refused.get_or_insert((addr.ip(), reason));
                    false
                }
                None => true,
            })
            .collect();
        match (public.is_empty(), first_refused) {
            (true, Some((ip, reason))) => Err(refused_address(host, ip, reason)),
            _ => Ok(public),
        }
    }
}

/// The refusal of a denied host: the entry it matched, and how (the address it resolves to, the IPv4
/// address an IPv6 one reaches).
fn denied(host: &Target, resolved: Option<IpAddr>, rule: &HostRule) -> Refusal {
    let entry = match rule {
        HostRule::Name { host, subdomains: true } => format!("*.{host}"),
        HostRule::Name { host, subdomains: false } => host.clone(),
        HostRule::Addr(ip) => ip.to_string(),
        HostRule::Net(net) => net.to_string(),
    };
    let ip = resolved.or(match host {
        Target::Ip(ip) => Some(*ip),
        Target::Name(_) => None,
    });
    let how = match ip {
        Some(ip) if *host != Target::Ip(ip) => format!(" (resolves to {ip})"),
        Some(ip) if entry != ip.to_string() => {
            let reached = forms(ip).into_iter().skip(1).find(|form| rule.matches_ip(*form));
            reached.map(|form| format!(" (reaches {form})")).unwrap_or_default()
        }
        Some(_) | None => String::new(),
    };
    let entry = if entry == host.to_string() { String::new() } else { format!(" as {entry}") };
    Refusal::new(HttpErrorKind::RefusedAddress, format!("{host}{how} is in [web] denied_hosts{entry}"))
}

fn refused_address(host: &str, ip: IpAddr, reason: &str) -> Refusal {
    let resolved = if host == ip.to_string() { String::new() } else { format!(" (resolves to {ip})") };
    Refusal::new(
        HttpErrorKind::RefusedAddress,
        format!(
            "{host}{resolved} is a {reason} address, which web requests may not reach; allow it with [web] allowed_hosts or allow_private_addresses"
        ),
    )
}

/// The direct client's resolver: the system's lookup, then the deny list and the address policy on what it
/// returned; the connector gets only the addresses that passed.
struct CheckedResolver(Arc<AddressPolicy>);

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = Arc::clone(&self.0);
        Box::pin(async move {
            let host = name.as_str().trim_end_matches('.').to_ascii_lowercase();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let ips: Vec<IpAddr> = addrs.iter().map(SocketAddr::ip).collect();
            policy.check_denied(&Target::name(&host), &ips).await?;
            let addrs = policy.filter(&host, addrs)?;
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// A layer over the direct client's connector that judges the address each new connection actually
/// reached, before a byte of the request is written: the last word on every path to a host (an address in
/// the URL, a redirect, a name) that the checks before it judged by what it looked like.
#[derive(Clone)]
struct PeerCheck(Arc<AddressPolicy>);

impl<S> tower_layer::Layer<S> for PeerCheck {
    type Service = PeerChecked<S>;

    fn layer(&self, inner: S) -> PeerChecked<S> {
        PeerChecked { inner, policy: Arc::clone(&self.0) }
    }
}

/// The connector [`PeerCheck`] wraps.
#[derive(Clone)]
struct PeerChecked<S> {
    inner: S,
    policy: Arc<AddressPolicy>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<S, R> tower_service::Service<R> for PeerChecked<S>
where
    S: tower_service::Service<R, Error = BoxError>,
    S::Response: hyper_util::client::legacy::connect::Connection + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let connecting = self.inner.call(request);
        let policy = Arc::clone(&self.policy);
        Box::pin(async move {
            let connection = connecting.await?;
            let mut extras = http::Extensions::new();
            hyper_util::client::legacy::connect::Connection::connected(&connection).get_extras(&mut extras);
            if let Some(info) = extras.get::<hyper_util::client::legacy::connect::HttpInfo>() {
                let peer = info.remote_addr().ip();
                policy.check_denied(&Target::Ip(peer), &[peer]).await?;
            }
            Ok(connection)
        })
    }
}

/// What the HTTP service is configured with.
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
struct Engine {
    runtime: tokio::runtime::Runtime,
    api: reqwest::Client,
    direct: reqwest::Client,
    policy: Arc<AddressPolicy>,
}

/// The `http.request` service: settings, and the engine built on first use.
pub(crate) struct HttpService {
    settings: HttpSettings,
    engine: OnceLock<Result<Engine, String>>,
}

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
        Self { settings, engine: OnceLock::new() }
    }

    /// What `web.settings` answers.
    pub fn web_settings(&self) -> WebSettings {
        self.settings.web.clone()
    }

    fn engine(&self) -> Result<&Engine, ServiceError> {
        self.engine
            .get_or_init(|| build_engine(&self.settings))
            .as_ref()
            .map_err(|message| ServiceError::new(ServiceErrorKind::Failed, message.clone()))
    }

    /// Runs one request, waiting on the calling (worker) thread; `cancelled` is polled while it waits.
    pub fn request(&self, request: HttpRequest, cancelled: &dyn Fn() -> bool) -> Result<HttpReply, ServiceError> {
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
                if let Some((policy, url)) = check {
                    if let Err(refusal) = policy.check_target(&url).await {
                        return HttpReply::Failed(HttpFailure { kind: refusal.kind, message: refusal.message });
                    }
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
        let (tx, rx) = std::sync::mpsc::channel();
        let task = engine.runtime.spawn(async move {
            let _ = tx.send(work.await);
        });
        loop {
            match rx.recv_timeout(CANCEL_POLL) {
                Ok(reply) => return Ok(reply),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if cancelled() {
                        task.abort();
                        return Err(ServiceError::new(
                            ServiceErrorKind::Cancelled,
                            "the call was cancelled or timed out",
                        ));
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(ServiceError::new(ServiceErrorKind::Failed, "the HTTP request was dropped"));
                }
            }
        }
    }
}

/// Whether `url` lies under the base URL: same scheme, host and port, and the base's path as a prefix.
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
    let detail = innermost.map(|e| e.to_string()).filter(|d| *d != error.to_string());
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// A URL host as the policy sees it.
    fn host(text: &str) -> Target {
        let text = if text.contains(':') { format!("[{text}]") } else { text.to_owned() };
        Target::of(&Url::parse(&format!("http://{text}/")).unwrap()).unwrap()
    }

    #[test]
    fn classifies_addresses() {
        let cases = [
            ("127.0.0.1", Some("loopback")),
            ("127.0.0.2", Some("loopback")),
            ("10.1.2.3", Some("private")),
            ("172.16.0.1", Some("private")),
            ("172.31.255.255", Some("private")),
            ("192.168.1.1", Some("private")),
            ("169.254.169.254", Some("link-local")),
            ("0.0.0.0", Some("unspecified")),
            ("0.1.2.3", Some("unspecified")),
            ("100.64.0.1", Some("shared (CGNAT)")),
            ("100.127.255.255", Some("shared (CGNAT)")),
            ("224.0.0.1", Some("multicast or reserved")),
            ("255.255.255.255", Some("multicast or reserved")),
            ("::1", Some("loopback")),
            ("::", Some("unspecified")),
            ("fe80::1", Some("link-local")),
            ("fc00::1", Some("unique-local")),
            ("fd12:3456::1", Some("unique-local")),
            ("ff02::1", Some("multicast or reserved")),
            ("::ffff:127.0.0.1", Some("loopback")),
            ("::ffff:169.254.1.1", Some("link-local")),
            ("64:ff9b::a00:1", Some("private")),
            ("2002:c0a8:0101::1", Some("private")),
            // Public ones, including neighbours of the ranges above.
            ("8.8.8.8", None),
            ("100.63.255.255", None),
            ("100.128.0.0", None),
            ("172.32.0.1", None),
            ("169.253.1.1", None),
            ("1.1.1.1", None),
            ("2606:4700::1111", None),
            ("::ffff:8.8.8.8", None),
            ("64:ff9b::808:808", None),
            // IPv4 inside IPv6, every form (the security review: `::/96` and `::ffff:0:0/96` passed).
            ("::127.0.0.1", Some("loopback")),
            ("::a00:1", Some("private")),
            ("::ffff:0:7f00:1", Some("loopback")),
            ("64:ff9b:1::a00:1", Some("private (local NAT64)")),
            ("2002:7f00:1::", Some("loopback")),
            ("2001:0:4136:e378:8000:63bf:80ff:fffe", Some("loopback")),
            ("2001:0:0a00:0001::", Some("private")),
            ("2001:db8::1", Some("multicast or reserved")),
            ("100::1", Some("multicast or reserved")),
            ("192.0.2.1", Some("multicast or reserved")),
            ("198.19.255.1", Some("multicast or reserved")),
            ("::8.8.8.8", None),
            ("2001:4860:4860::8888", None),
            ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", None),
            ("198.20.0.1", None),
        ];
        for (text, expected) in cases {
            assert_eq!(non_public(ip(text)), expected, "{text}");
        }
    }

    #[test]
    fn host_rules_match_names_ips_and_subdomains() {
        let policy = AddressPolicy::new(
            &["127.0.0.1".to_owned(), "*.internal.example".to_owned(), "[::1]".to_owned(), "Intranet.".to_owned()],
            &["blocked.example".to_owned(), "*.ads.example".to_owned()],
            false,
            None,
        );
        assert!(policy.exempt(&host("127.0.0.1")));
        assert!(policy.exempt(&host("::1")));
        assert!(policy.exempt(&host("a.internal.example")));
        assert!(!policy.exempt(&host("internal.example")), "*.domain covers subdomains only");
        assert!(!policy.exempt(&host("xinternal.example")));
        assert!(policy.exempt(&host("intranet")));
        assert!(!policy.exempt(&host("127.0.0.2")));
        assert!(!policy.exempt(&host("localhost")));

        let url = |u: &str| Url::parse(u).unwrap();
        assert!(policy.check_url(&url("http://127.0.0.1:8080/x")).is_ok());
        assert!(policy.check_url(&url("http://[::1]/")).is_ok());
        assert!(policy.check_url(&url("https://example.com/")).is_ok());
        for refused in ["http://127.0.0.2/", "http://169.254.169.254/latest", "http://[fe80::1]/", "http://10.0.0.1/"] {
            let refusal = policy.check_url(&url(refused)).unwrap_err();
            assert_eq!(refusal.kind, HttpErrorKind::RefusedAddress, "{refused}");
            assert!(refusal.message.contains("allowed_hosts"), "{}", refusal.message);
        }
        for denied in ["https://blocked.example/", "https://x.ads.example/", "https://BLOCKED.example./"] {
            let refusal = policy.check_url(&url(denied)).unwrap_err();
            assert!(refusal.message.contains("denied_hosts"), "{denied}: {}", refusal.message);
        }
        assert_eq!(policy.check_url(&url("ftp://example.com/")).unwrap_err().kind, HttpErrorKind::InvalidUrl);
        assert_eq!(policy.check_url(&url("file:///etc/passwd")).unwrap_err().kind, HttpErrorKind::InvalidUrl);
    }

    #[test]
    fn denied_entries_match_every_form_of_an_address() {
        let url = |u: &str| Url::parse(u).unwrap();
        for entry in ["127.0.0.1", "[::ffff:127.0.0.1]", "2130706433", "0x7f.1", "127.0.0.0/8", "::ffff:7f00:0/104"] {
            let policy = AddressPolicy::new(&[], &[entry.to_owned()], true, None);
            for spelled in [
                "http://127.0.0.1/",
                "http://[::ffff:127.0.0.1]/",
                "http://[::127.0.0.1]/",
                "http://[::ffff:0:7f00:1]/",
                "http://[64:ff9b::7f00:1]/",
                "http://[2002:7f00:1::5]/",
                "http://2130706433/",
                "http://0x7f000001/",
                "http://017700000001/",
                "http://127.1/",
            ] {
                let refusal = policy.check_url(&url(spelled)).unwrap_err();
                assert_eq!(refusal.kind, HttpErrorKind::RefusedAddress, "{entry}: {spelled}");
                assert!(refusal.message.contains("is in [web] denied_hosts"), "{entry}: {spelled}: {refusal}");
            }
            assert!(policy.check_url(&url("http://127.0.0.2/")).is_ok() || entry.contains('/'), "{entry}");
        }
        let policy = AddressPolicy::new(&[], &["127.0.0.1".to_owned()], true, None);
        assert_eq!(
            policy.check_url(&url("http://[::ffff:7f00:1]/")).unwrap_err().message,
            "::ffff:127.0.0.1 (reaches 127.0.0.1) is in [web] denied_hosts as 127.0.0.1"
        );
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        // A resolved name is refused when any of its addresses is denied.
        let refusal = runtime
            .block_on(policy.check_denied(&Target::name("localhost"), &[ip("::1"), ip("127.0.0.1")]))
            .unwrap_err();
        assert_eq!(refusal.message, "localhost (resolves to 127.0.0.1) is in [web] denied_hosts as 127.0.0.1");
        // A denied name denies the addresses it resolves to now, asynchronously and from a redirect alike.
        let by_name = AddressPolicy::new(&[], &["localhost".to_owned()], true, None);
        let refusal = runtime.block_on(by_name.check_denied(&host("127.0.0.1"), &[ip("127.0.0.1")])).unwrap_err();
        assert_eq!(refusal.message, "127.0.0.1 is an address of localhost, which is in [web] denied_hosts");
        let mapped = ip("::ffff:127.0.0.1");
        assert!(by_name.check_denied_blocking(&Target::Ip(mapped), &[mapped]).is_err());
        assert!(runtime.block_on(by_name.check_denied(&host("10.9.9.9"), &[ip("10.9.9.9")])).is_ok());
    }

    #[test]
    fn the_connector_judges_the_address_a_connection_reached() {
        use std::io::Read;
        // A client with the connector check alone: whatever a URL looked like, the peer decides.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut bytes = Vec::new();
            let _ = stream.read_to_end(&mut bytes);
            bytes
        });
        let policy = Arc::new(AddressPolicy::new(&[], &["localhost".to_owned()], true, None));
        let client = reqwest::Client::builder().no_proxy().connector_layer(PeerCheck(policy)).build().unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let error = runtime.block_on(client.get(format!("http://127.0.0.1:{port}/secret")).send()).unwrap_err();
        let (kind, message) = describe(&error);
        assert_eq!(kind, HttpErrorKind::RefusedAddress, "{message}");
        assert_eq!(message, "127.0.0.1 is an address of localhost, which is in [web] denied_hosts");
        drop(client);
        drop(runtime);
        assert_eq!(received.join().unwrap(), b"", "the request was written to a denied peer");
    }

    #[test]
    fn resolved_addresses_are_filtered() {
        let policy = AddressPolicy::new(&["intranet".to_owned()], &[], false, Some("proxy.local".to_owned()));
        let sock = |text: &str| SocketAddr::new(ip(text), 0);
        let mixed = vec![sock("10.0.0.1"), sock("93.184.216.34")];
        assert_eq!(policy.filter("example.com", mixed.clone()).unwrap(), vec![sock("93.184.216.34")]);
        let refusal = policy.filter("localhost", vec![sock("127.0.0.1"), sock("::1")]).unwrap_err();
        assert_eq!(refusal.kind, HttpErrorKind::RefusedAddress);
        assert!(refusal.message.starts_with("localhost (resolves to 127.0.0.1) is a loopback address"), "{refusal}");
        assert_eq!(policy.filter("intranet", mixed.clone()).unwrap(), mixed);
        assert_eq!(policy.filter("proxy.local", vec![sock("127.0.0.1")]).unwrap(), vec![sock("127.0.0.1")]);
        let open = AddressPolicy::new(&[], &[], true, None);
        assert_eq!(open.filter("localhost", vec![sock("127.0.0.1")]).unwrap(), vec![sock("127.0.0.1")]);
    }

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
