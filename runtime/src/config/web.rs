//! `[web]`: the web tools' settings, and the forms its `allowed_hosts` / `denied_hosts` entries take. The
//! entries are parsed here, where the configuration is checked; the HTTP client matches URLs against them.

use std::net::IpAddr;
use std::path::PathBuf;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};
#[cfg(feature = "web")]
use url::{Host, Url};

/// `[web]`: the web tools and the Cline API they talk to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebConfig {
    /// The provider; `"cline"` enables the Cline API contract.
    pub provider: Option<String>,
    /// The user's setting that turns the web tools on.
    pub enabled: bool,
    /// The feature flag that must also be on for the web tools.
    pub feature_flag: bool,
    /// The base URL of the Cline API.
    pub api_base_url: String,
    /// `"cline"` (through the Cline API) or `"direct"`.
    pub backend: String,
    /// The timeout of one web tool request (Cline's 15 s), in milliseconds.
    pub fetch_timeout_ms: u64,
    /// Hosts a direct fetch may reach even at private, loopback or link-local addresses: `name`,
    /// `name:port`, an IP address, or `*.domain` for its subdomains.
    pub allowed_hosts: Vec<String>,
    /// Hosts a direct fetch never reaches, in the same forms.
    pub denied_hosts: Vec<String>,
    /// Lets direct fetches reach private, loopback and link-local addresses.
    pub allow_private_addresses: bool,
    /// The most redirects one request follows; each target is checked again.
    pub max_redirects: u32,
    /// The largest response body the host reads, in bytes.
    pub max_response_bytes: u64,
    /// A proxy for every web request (`http://` or `https://` URL); none reads no proxy variables.
    pub proxy: Option<String>,
    /// A PEM file of extra certificate authorities to trust.
    pub ca_file: Option<PathBuf>,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            provider: None,
            enabled: false,
            feature_flag: false,
            api_base_url: "https://api.cline.bot".to_owned(),
            backend: "cline".to_owned(),
            fetch_timeout_ms: 15_000,
            allowed_hosts: Vec::new(),
            denied_hosts: Vec::new(),
            allow_private_addresses: false,
            max_redirects: 5,
            max_response_bytes: 10 * 1024 * 1024,
            proxy: None,
            ca_file: None,
        }
    }
}

/// One `allowed_hosts` / `denied_hosts` entry: a host name, `*.domain` for the domain's subdomains, an IP
/// address in any spelling a URL may use, or a network in CIDR form.
/// Only the web stack (the `web` feature) matches hosts against them; the config checks entries without it.
#[cfg(feature = "web")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostRule {
    /// A host name, or with `subdomains` every name under the domain.
    Name { host: String, subdomains: bool },
    /// One address.
    Addr(IpAddr),
    /// A network.
    Net(IpNet),
}

#[cfg(feature = "web")]
impl HostRule {
    /// Parses an entry; every string is some entry (the config check, [`host_entry_problem`], refuses the
    /// forms that cannot match).
    pub(crate) fn parse(entry: &str) -> Self {
        let entry = entry.trim().to_ascii_lowercase();
        let bare = entry.trim_start_matches('[').trim_end_matches('.');
        let bare = bare.split_once(']').map_or(bare, |(ip, _)| ip);
        if let Some(domain) = bare.strip_prefix("*.") {
            return Self::Name { host: domain.to_owned(), subdomains: true };
        }
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Self::Addr(ip);
        }
        if let Ok(net) = bare.parse::<IpNet>() {
            // A network of IPv4-mapped addresses is that IPv4 network.
            if let IpNet::V6(v6) = net
                && let (Some(v4), Some(len)) = (v6.network().to_ipv4_mapped(), v6.prefix_len().checked_sub(96))
                && let Ok(v4) = ipnet::Ipv4Net::new(v4, len)
            {
                return Self::Net(IpNet::V4(v4.trunc()));
            }
            return Self::Net(net.trunc());
        }
        // Other spellings of an address (`2130706433`, `0x7f.1`, `127.1`) as the URL parser reads them, which
        // is what a URL's host becomes; a name as it does too (IDNA).
        let url = Url::parse(&format!("http://{bare}/")).ok();
        match url.as_ref().and_then(Url::host) {
            Some(Host::Ipv4(v4)) => Self::Addr(IpAddr::V4(v4)),
            Some(Host::Ipv6(v6)) => Self::Addr(IpAddr::V6(v6)),
            Some(Host::Domain(name)) => Self::Name { host: name.trim_end_matches('.').to_owned(), subdomains: false },
            None => Self::Name { host: bare.to_owned(), subdomains: false },
        }
    }
}

/// Whether a `[web]` host entry has the form the rules take (no port, no scheme): the config check.
pub(crate) fn host_entry_problem(entry: &str) -> Option<String> {
    let bare = entry.trim();
    let unbracketed = bare.trim_start_matches('[').trim_end_matches(']');
    let is_ip = unbracketed.parse::<IpAddr>().is_ok() || unbracketed.parse::<IpNet>().is_ok();
    if bare.is_empty() || (!is_ip && (bare.contains('/') || bare.contains(':'))) {
        return Some(format!(
            "{entry:?} is not a host; give a host name, an IP address, a network (10.0.0.0/8) or *.domain, without scheme or port"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_entries_are_checked() {
        for good in ["example.com", "*.example.com", "127.0.0.1", "::1", "[::1]"] {
            assert_eq!(host_entry_problem(good), None, "{good}");
        }
        for good in ["10.0.0.0/8", "fd00::/8", "2130706433"] {
            assert_eq!(host_entry_problem(good), None, "{good}");
        }
        for bad in ["127.0.0.1:8080", "example.com:443", "https://example.com", "", "[::1]:80", "example.com/24"] {
            assert!(host_entry_problem(bad).is_some(), "{bad}");
        }
    }
}
