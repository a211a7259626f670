//! The direct client's address policy: which addresses are not public (every IPv4 address an IPv6 one
//! carries judged too), how a URL's host matches the `[web]` host entries, and the checks of a URL, of the
//! addresses a name resolves to and of the deny list, each refusal saying which key to change.

use reqwest::Url;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use toolshed_plugin_api::services::HttpErrorKind;
use url::Host;

use crate::config::HostRule;

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
pub(super) enum Target {
    Name(String),
    Ip(IpAddr),
}

impl Target {
    pub(super) fn of(url: &Url) -> Option<Target> {
        Some(match url.host()? {
            Host::Ipv4(v4) => Target::Ip(IpAddr::V4(v4)),
            Host::Ipv6(v6) => Target::Ip(IpAddr::V6(v6)),
            Host::Domain(name) => Target::Name(name.trim_end_matches('.').to_ascii_lowercase()),
        })
    }

    pub(super) fn name(name: &str) -> Target {
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
    pub(super) kind: HttpErrorKind,
    pub(super) message: String,
}

impl Refusal {
    pub(super) fn new(kind: HttpErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }
}

/// The lower-cased host of a URL, IPv6 without brackets.
pub(super) fn url_host(url: &Url) -> Option<String> {
    let host = url.host_str()?;
    Some(host.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_ascii_lowercase())
}

impl AddressPolicy {
    pub(super) fn new(allowed: &[String], denied: &[String], allow_private: bool, proxy_host: Option<String>) -> Self {
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
    pub(super) fn check_url(&self, url: &Url) -> Result<Target, Refusal> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refusal::new(HttpErrorKind::InvalidUrl, format!("{url} is not an http:// or https:// URL")));
        }
        let Some(host) = Target::of(url) else {
            return Err(Refusal::new(HttpErrorKind::InvalidUrl, format!("{url} has no host")));
        };
        if let Some(rule) = self.denied.iter().find(|rule| rule.matches(&host)) {
            return Err(denied(&host, None, rule));
        }
        if let Target::Ip(ip) = host
            && let Some(reason) = non_public(ip)
            && !self.exempt(&host)
        {
            return Err(refused_address(&host.to_string(), ip, reason));
        }
        Ok(host)
    }

    /// [`check_url`](Self::check_url), then, for an address, the addresses of the denied names as they
    /// resolve now: what is checked before the first byte of a request leaves.
    pub(super) async fn check_target(&self, url: &Url) -> Result<(), Refusal> {
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
    pub(super) async fn check_denied(&self, host: &Target, addrs: &[IpAddr]) -> Result<(), Refusal> {
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
    pub(super) fn check_denied_blocking(&self, host: &Target, addrs: &[IpAddr]) -> Result<(), Refusal> {
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
    pub(super) fn filter(&self, host: &str, addrs: Vec<SocketAddr>) -> Result<Vec<SocketAddr>, Refusal> {
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
}
