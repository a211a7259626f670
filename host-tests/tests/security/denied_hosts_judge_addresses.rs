//! Class 6: denied_hosts and the address policy judge resolved addresses in every canonical form.
//!
//! web_fetch's direct backend against real HTTP servers on loopback addresses: a denied address is refused
//! however the URL spells it (names that resolve to it, IPv4-mapped, -compatible, NAT64 and 6to4 IPv6 forms,
//! the decimal, hex, octal and short IPv4 forms URL parsers normalise), directly and after a redirect; a
//! denied name denies the addresses it resolves to; and the address policy sees through the same forms.

use crate::util::*;
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use toolshed::{Config, Runtime};

/// A real HTTP/1.1 server: `/to/<url>` redirects to `<url>`, anything else answers `page <path>`. It records
/// the paths it was asked for.
struct Server {
    addr: SocketAddr,
    paths: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(bind: &str) -> Server {
        let listener = TcpListener::bind(bind).unwrap();
        let addr = listener.local_addr().unwrap();
        let paths = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&paths);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let seen = Arc::clone(&seen);
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
                    let mut header = String::new();
                    while reader.read_line(&mut header).unwrap_or(0) > 0 && !header.trim().is_empty() {
                        header.clear();
                    }
                    seen.lock().unwrap().push(path.clone());
                    let head = match path.strip_prefix("/to/") {
                        Some(location) => {
                            format!("HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n")
                        }
                        None => format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n",
                            path.len() + 5
                        ),
                    };
                    let body = if path.starts_with("/to/") { String::new() } else { format!("page {path}") };
                    let _ = stream.write_all(format!("{head}Connection: close\r\n\r\n{body}").as_bytes());
                });
            }
        });
        Server { addr, paths }
    }

    fn port(&self) -> u16 {
        self.addr.port()
    }

    fn paths(&self) -> Vec<String> {
        self.paths.lock().unwrap().clone()
    }
}

/// A runtime with web_fetch alone, on the direct backend with `extra` in `[web]`.
fn web_runtime(extra: &str) -> Runtime {
    static LOADING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = LOADING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let config = Config::from_toml_str(&format!("[web]\nbackend = \"direct\"\nenabled = true\n{extra}")).unwrap();
    let runtime =
        Runtime::builder().plugin_file(plugins().join(lib("web_fetch"))).config(config).yes(true).build().unwrap();
    assert!(runtime.load_errors().is_empty(), "{:?}", runtime.load_errors());
    runtime
}

/// Fetches `url` and returns web_fetch's text.
fn fetch(runtime: &Runtime, url: &str) -> String {
    let ws = workspace();
    let task = task_in(runtime, ws.path());
    text(&call(&task, "web_fetch", json!({"url": url, "prompt": "p"})))
}

/// Every way a URL can name 127.0.0.1 (with the server's port).
fn spellings_of_loopback(port: u16) -> Vec<String> {
    [
        "localhost",
        "LOCALHOST.",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[::127.0.0.1]",
        "[::ffff:0:7f00:1]",
        "[64:ff9b::7f00:1]",
        "[64:ff9b::127.0.0.1]",
        "[2002:7f00:1::1]",
        "2130706433",
        "0x7f000001",
        "0x7f.1",
        "127.1",
        "127.0.1",
        "017700000001",
        "0177.0.0.1",
        "127.0.0.1",
    ]
    .iter()
    .map(|host| format!("http://{host}:{port}/secret"))
    .collect()
}

fn assert_denied(result: &str, url: &str) {
    assert!(
        result.starts_with("Error fetching web content: ") && result.contains("is in [web] denied_hosts"),
        "{url}: {result}"
    );
}

#[test]
fn a_denied_address_is_refused_in_every_spelling() {
    let secret = Server::start("127.0.0.1:0");
    // Private addresses are allowed, so the deny list alone stands between the model and the server.
    let runtime = web_runtime("allow_private_addresses = true\ndenied_hosts = [\"127.0.0.1\"]\n");
    for url in spellings_of_loopback(secret.port()) {
        assert_denied(&fetch(&runtime, &url), &url);
    }
    assert_eq!(secret.paths(), Vec::<String>::new(), "a denied address was reached");
    let localhost = fetch(&runtime, &format!("http://localhost:{}/", secret.port()));
    assert!(
        localhost.contains("localhost (resolves to 127.0.0.1) is in [web] denied_hosts as 127.0.0.1"),
        "{localhost}"
    );
    let mapped = fetch(&runtime, &format!("http://[::ffff:127.0.0.1]:{}/", secret.port()));
    assert!(mapped.contains("::ffff:127.0.0.1 (reaches 127.0.0.1) is in [web] denied_hosts"), "{mapped}");

    // The same entry in other spellings, and as a network, denies the same address.
    for entry in ["::ffff:127.0.0.1", "[::ffff:7f00:1]", "2130706433", "127.1", "127.0.0.0/8", "::ffff:127.0.0.0/104"] {
        let runtime = web_runtime(&format!("allow_private_addresses = true\ndenied_hosts = [\"{entry}\"]\n"));
        for url in [format!("http://127.0.0.1:{}/x", secret.port()), format!("http://localhost:{}/x", secret.port())] {
            assert_denied(&fetch(&runtime, &url), &format!("{entry}: {url}"));
        }
    }
    assert_eq!(secret.paths(), Vec::<String>::new(), "a denied address was reached");

    // An entry for another address leaves this one reachable.
    let other = web_runtime("allow_private_addresses = true\ndenied_hosts = [\"127.0.0.2\", \"10.0.0.0/8\"]\n");
    let page = fetch(&other, &format!("http://127.0.0.1:{}/open", secret.port()));
    assert!(page.ends_with("page /open"), "{page}");
}

#[test]
fn a_denied_name_denies_the_addresses_it_resolves_to() {
    let secret = Server::start("127.0.0.1:0");
    let runtime = web_runtime("allow_private_addresses = true\ndenied_hosts = [\"localhost\"]\n");
    for url in spellings_of_loopback(secret.port()) {
        let result = fetch(&runtime, &url);
        assert!(
            result.starts_with("Error fetching web content: ") && result.contains("denied_hosts"),
            "{url}: {result}"
        );
    }
    let direct = fetch(&runtime, &format!("http://127.0.0.1:{}/", secret.port()));
    assert!(direct.contains("127.0.0.1 is an address of localhost, which is in [web] denied_hosts"), "{direct}");
    assert_eq!(secret.paths(), Vec::<String>::new(), "an address of a denied name was reached");
}

#[test]
fn redirects_to_a_denied_address_are_refused_in_every_spelling() {
    // The first hop is on 127.0.0.2, which nothing denies; the secret server listens on 127.0.0.1.
    let hop = Server::start("127.0.0.2:0");
    let secret = Server::start("127.0.0.1:0");
    for denied in ["127.0.0.1", "localhost"] {
        let runtime = web_runtime(&format!("allow_private_addresses = true\ndenied_hosts = [\"{denied}\"]\n"));
        let open = fetch(&runtime, &format!("http://127.0.0.2:{}/open", hop.port()));
        assert!(open.ends_with("page /open"), "{open}");
        for target in spellings_of_loopback(secret.port()) {
            let url = format!("http://127.0.0.2:{}/to/{target}", hop.port());
            let result = fetch(&runtime, &url);
            assert!(
                result.starts_with("Error fetching web content: ") && result.contains("denied_hosts"),
                "{denied}: {url}: {result}"
            );
        }
    }
    assert_eq!(secret.paths(), Vec::<String>::new(), "a redirect reached a denied address");
}

#[test]
fn the_address_policy_sees_ipv4_inside_ipv6() {
    let runtime = web_runtime("");
    for (host, reason) in [
        ("[::127.0.0.1]", "loopback"),
        ("[::ffff:0:7f00:1]", "loopback"),
        ("[::ffff:10.0.0.1]", "private"),
        ("[::10.0.0.1]", "private"),
        ("[64:ff9b::a9fe:a9fe]", "link-local"),
        ("[64:ff9b:1::a00:1]", "private (local NAT64)"),
        ("[2002:c0a8:101::1]", "private"),
        // Teredo: the client address 127.0.0.1, obfuscated.
        ("[2001:0:4136:e378:8000:63bf:80ff:fffe]", "loopback"),
        ("[fe80::5efe:a00:1]", "link-local"),
        ("[2001:db8::1]", "multicast or reserved"),
        ("2130706433", "loopback"),
        ("0xa.1", "private"),
        ("0251.0376.0251.0376", "link-local"),
    ] {
        let result = fetch(&runtime, &format!("http://{host}/"));
        assert!(
            result.starts_with("Error fetching web content: ") && result.contains(&format!("is a {reason} address")),
            "{host}: {result}"
        );
    }
}
