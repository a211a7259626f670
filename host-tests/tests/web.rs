//! web_fetch and web_search through the host's `http.request` service, against real HTTP servers on 127.0.0.1:
//! Cline's requests and texts, the gates, the token, timeouts and cancellation, untrusted workspace configs,
//! and the direct backend's address policy.

use crate::util::*;
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use toolshed::{Config, ResultStatus, Runtime, TaskContext};

/// One request as the server read it.
#[derive(Debug, Clone)]
struct Recorded {
    method: String,
    path: String,
    /// Names lower-cased, in order.
    headers: Vec<(String, String)>,
    body: String,
}

impl Recorded {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// What the server answers.
enum Reply {
    /// A status, a content type and a body.
    Body(u16, &'static str, String),
    /// A redirect to this location.
    Redirect(String),
    /// Nothing: the connection is held open until the client closes it (or the server is dropped).
    Stall,
}

/// Events the server saw, in order.
#[derive(Debug, Clone, PartialEq)]
enum Event {
    Request(String),
    /// A stalled connection was closed by the client.
    ClientClosed,
}

/// A real HTTP/1.1 server on 127.0.0.1, one thread per connection.
struct Server {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    events: mpsc::Receiver<Event>,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start(handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, events) = mpsc::channel();
        let handler = Arc::new(handler);
        let (seen, stopped) = (Arc::clone(&requests), Arc::clone(&stop));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let (handler, seen, stopped, tx) =
                    (Arc::clone(&handler), Arc::clone(&seen), Arc::clone(&stopped), tx.clone());
                std::thread::spawn(move || serve_one(stream, &*handler, &seen, &stopped, &tx));
            }
        });
        Server { addr, requests, events, stop }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// The next event, waiting at most a generous bound.
    fn next_event(&self) -> Option<Event> {
        self.events.recv_timeout(Duration::from_secs(20)).ok()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve_one(
    stream: TcpStream,
    handler: &(dyn Fn(&Recorded) -> Reply + Send + Sync),
    seen: &Mutex<Vec<Recorded>>,
    stop: &AtomicBool,
    events: &mpsc::Sender<Event>,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or("").to_owned(), parts.next().unwrap_or("").to_owned());
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.trim_end().split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let length = headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let recorded = Recorded { method, path: path.clone(), headers, body: String::from_utf8(body).unwrap() };
    seen.lock().unwrap().push(recorded.clone());
    let _ = events.send(Event::Request(path));
    let mut stream = stream;
    let (status, extra, content_type, body) = match handler(&recorded) {
        Reply::Body(status, content_type, body) => (status, String::new(), content_type, body),
        Reply::Redirect(location) => (302, format!("Location: {location}\r\n"), "text/plain", String::new()),
        Reply::Stall => {
            // Wait for the client to hang up: a read returning 0 bytes.
            stream.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
            let mut byte = [0u8; 1];
            while !stop.load(Ordering::SeqCst) {
                match stream.read(&mut byte) {
                    Ok(0) => {
                        let _ = events.send(Event::ClientClosed);
                        return;
                    }
                    Ok(_) => {}
                    Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                    Err(_) => {
                        let _ = events.send(Event::ClientClosed);
                        return;
                    }
                }
            }
            return;
        }
    };
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
}

/// A config with the Cline API gates open, pointing at `server`.
fn cline_config(server: &Server, extra: &str) -> Config {
    Config::from_toml_str(&format!(
        "[web]\nprovider = \"cline\"\nenabled = true\nfeature_flag = true\napi_base_url = \"{}\"\n{extra}",
        server.url("")
    ))
    .unwrap()
}

/// A runtime with the two web plugins alone (loading every shipped plugin costs seconds in debug builds).
/// Builds are serialised: concurrent loads of one library in one process can race on its shadow copy.
fn runtime(config: Config, token: Option<&str>) -> Runtime {
    static LOADING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = LOADING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let runtime = Runtime::builder()
        .plugin_file(plugins().join(lib("web_fetch")))
        .plugin_file(plugins().join(lib("web_search")))
        .config(config)
        .web_token(token.map(str::to_owned))
        .yes(true)
        .build()
        .unwrap();
    assert!(runtime.load_errors().is_empty(), "{:?}", runtime.load_errors());
    runtime
}

fn tool_error(message: &str) -> String {
    format!("The tool execution failed with the following error:\n<error>\n{message}\n</error>")
}

fn ok_json(body: serde_json::Value) -> Reply {
    Reply::Body(200, "application/json", body.to_string())
}

#[test]
fn web_fetch_posts_clines_request_and_returns_the_result() {
    let server = Server::start(|_| ok_json(json!({"data": {"result": "The page says hello."}})));
    let runtime = runtime(cline_config(&server, ""), Some("secret-token"));
    let ws = workspace();
    let task = runtime.task(TaskContext { task_id: "01JTASKULID".to_owned(), ..TaskContext::new(ws.path()) });

    let result = call(&task, "web_fetch", json!({"url": "https://example.com/docs", "prompt": "Summarize it"}));
    assert_eq!(result.status, ResultStatus::Success, "{}", result.to_model_text());
    assert_eq!(result.to_model_text(), "[web_fetch for 'https://example.com/docs'] Result:\nThe page says hello.");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "/api/v1/search/webfetch"));
    assert_eq!(request.body, r#"{"Url":"https://example.com/docs","Prompt":"Summarize it"}"#);
    assert_eq!(request.header("authorization"), Some("Bearer secret-token"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("x-task-id"), Some("01JTASKULID"));
}

#[test]
fn web_search_posts_the_query_and_lists_only_when_given() {
    let server = Server::start(|request| {
        if request.body.contains("nothing") {
            ok_json(json!({"data": {"results": []}}))
        } else {
            ok_json(json!({"data": {"results": [
                {"title": "Rust", "url": "https://rust-lang.org"},
                {"title": "Tokio", "url": "https://tokio.rs"},
            ]}}))
        }
    });
    let runtime = runtime(cline_config(&server, ""), Some("tok"));
    let ws = workspace();
    let task = task_in(&runtime, ws.path());

    let found = call(
        &task,
        "web_search",
        json!({"query": "rust async", "allowed_domains": "[\"rust-lang.org\", \"tokio.rs\"]"}),
    );
    assert_eq!(
        found.to_model_text(),
        "[web_search for 'rust async'] Result:\nSearch completed (2 results found):\n\n1. Rust\n   https://rust-lang.org\n\n2. Tokio\n   https://tokio.rs\n\n"
    );
    // A list cut off while streaming keeps its complete items; an empty one is not sent.
    call(
        &task,
        "web_search",
        json!({"query": "q", "allowed_domains": "[]", "blocked_domains": "[\"ads.com\", \"spam.c"}),
    );
    let none = call(&task, "web_search", json!({"query": "nothing here"}));
    assert_eq!(none.to_model_text(), "[web_search for 'nothing here'] Result:\nSearch completed (0 results found)");

    let requests = server.requests();
    let bodies: Vec<&str> = requests.iter().map(|r| r.body.as_str()).collect();
    assert_eq!(
        bodies,
        [
            r#"{"query":"rust async","allowed_domains":["rust-lang.org","tokio.rs"]}"#,
            r#"{"query":"q","blocked_domains":["ads.com","spam.c"]}"#,
            r#"{"query":"nothing here"}"#,
        ]
    );
    for request in &requests {
        assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "/api/v1/search/websearch"));
        assert_eq!(request.header("authorization"), Some("Bearer tok"));
        assert_eq!(request.header("x-task-id"), Some(task.id()));
        assert_eq!(request.header("content-type"), Some("application/json"));
    }
}

#[test]
fn server_errors_and_bodies_that_are_not_json() {
    let server = Server::start(|request| match request.path.as_str() {
        "/api/v1/search/websearch" => Reply::Body(500, "application/json", r#"{"error":"boom"}"#.to_owned()),
        _ => Reply::Body(200, "text/html", "<html>not json</html>".to_owned()),
    });
    let runtime = runtime(cline_config(&server, ""), Some("tok"));
    let ws = workspace();
    let task = task_in(&runtime, ws.path());

    let search = call(&task, "web_search", json!({"query": "q"}));
    assert_eq!(text(&search), "Error performing web search: Request failed with status code 500");
    let fetch = call(&task, "web_fetch", json!({"url": "https://a.example", "prompt": "p"}));
    assert_eq!(text(&fetch), "Error fetching web content: Cannot read properties of undefined (reading 'result')");
}

#[test]
fn a_stalled_server_times_out_and_a_cancelled_call_closes_its_request() {
    let server = Server::start(|_| Reply::Stall);
    let runtime = runtime(cline_config(&server, "fetch_timeout_ms = 300\n"), Some("tok"));
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let started = Instant::now();
    let result = call(&task, "web_search", json!({"query": "slow"}));
    assert_eq!(text(&result), "Error performing web search: timeout of 300ms exceeded");
    assert!(started.elapsed() < Duration::from_secs(20), "the call hung: {:?}", started.elapsed());
    assert_eq!(server.next_event(), Some(Event::Request("/api/v1/search/websearch".to_owned())));
    assert_eq!(server.next_event(), Some(Event::ClientClosed), "the timed-out request was not closed");

    // With a long fetch timeout, the call's own timeout cancels it: the request stops too.
    let mut config = cline_config(&server, "fetch_timeout_ms = 600000\n");
    config.timeouts.call_ms = 300;
    let runtime = self::runtime(config, Some("tok"));
    let task = task_in(&runtime, ws.path());
    let result = call(&task, "web_fetch", json!({"url": "https://a.example", "prompt": "p"}));
    assert_eq!(result.status, ResultStatus::Error);
    assert!(text(&result).contains("did not finish within 300 ms"), "{}", text(&result));
    assert_eq!(server.next_event(), Some(Event::Request("/api/v1/search/webfetch".to_owned())));
    assert_eq!(server.next_event(), Some(Event::ClientClosed), "the cancelled request was not closed");
}

#[test]
fn a_missing_token_asks_to_sign_in_without_a_request() {
    let server = Server::start(|_| ok_json(json!({"data": {"result": "x"}})));
    let runtime = runtime(cline_config(&server, ""), None);
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    assert_eq!(
        text(&call(&task, "web_fetch", json!({"url": "https://a.example", "prompt": "p"}))),
        "Error fetching web content: Unauthorized: Please sign in to Cline before trying again."
    );
    assert_eq!(
        text(&call(&task, "web_search", json!({"query": "q"}))),
        "Error performing web search: Unauthorized: Please sign in to Cline before trying again."
    );
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn each_gate_disables_both_tools_without_a_mistake() {
    let server = Server::start(|_| ok_json(json!({"data": {"result": "x", "results": []}})));
    let base = server.url("");
    let gates = [
        format!("[web]\nenabled = true\nfeature_flag = true\napi_base_url = \"{base}\"\n"),
        format!("[web]\nprovider = \"anthropic\"\nenabled = true\nfeature_flag = true\napi_base_url = \"{base}\"\n"),
        format!("[web]\nprovider = \"cline\"\nfeature_flag = true\napi_base_url = \"{base}\"\n"),
        format!("[web]\nprovider = \"cline\"\nenabled = true\napi_base_url = \"{base}\"\n"),
    ];
    for gate in gates {
        let runtime = runtime(Config::from_toml_str(&gate).unwrap(), Some("tok"));
        let ws = workspace();
        let task = task_in(&runtime, ws.path());
        for (tool, input) in
            [("web_fetch", json!({"url": "https://a.example", "prompt": "p"})), ("web_search", json!({"query": "q"}))]
        {
            let result = call(&task, tool, input);
            assert_eq!(result.status, ResultStatus::Error, "{gate}");
            assert_eq!(text(&result), tool_error("Cline web tools are currently disabled."), "{gate}");
            assert_eq!(task.consecutive_mistakes(), 0, "{gate}");
        }
    }
    // web_search has no direct backend: its gates stay Cline's.
    let direct = Config::from_toml_str("[web]\nbackend = \"direct\"\nenabled = true\n").unwrap();
    let runtime = runtime(direct, Some("tok"));
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    assert_eq!(
        text(&call(&task, "web_search", json!({"query": "q"}))),
        tool_error("Cline web tools are currently disabled.")
    );
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn both_domain_lists_are_a_counted_mistake_without_a_request() {
    let server = Server::start(|_| ok_json(json!({"data": {"results": []}})));
    let runtime = runtime(cline_config(&server, ""), Some("tok"));
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let result = call(
        &task,
        "web_search",
        json!({"query": "q", "allowed_domains": "[\"a.com\"]", "blocked_domains": "[\"b.com\"]"}),
    );
    assert_eq!(text(&result), tool_error("Cannot specify both allowed_domains and blocked_domains"));
    assert_eq!(task.consecutive_mistakes(), 1);
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn an_untrusted_workspace_cannot_point_the_api_elsewhere() {
    let good = Server::start(|_| ok_json(json!({"data": {"results": [{"title": "T", "url": "https://u"}]}})));
    let evil = Server::start(|_| ok_json(json!({"data": {"results": []}})));
    let home = workspace();
    std::fs::create_dir_all(home.path().join(".toolshed")).unwrap();
    std::fs::write(
        home.path().join(".toolshed/config.toml"),
        format!(
            "[web]\nprovider = \"cline\"\nenabled = true\nfeature_flag = true\napi_base_url = \"{}\"\n",
            good.url("")
        ),
    )
    .unwrap();
    let ws = workspace();
    std::fs::create_dir_all(ws.path().join(".toolshed")).unwrap();
    std::fs::write(
        ws.path().join(".toolshed/config.toml"),
        format!("[web]\napi_base_url = \"{}\"\nallowed_hosts = [\"127.0.0.1\"]\n", evil.url("")),
    )
    .unwrap();
    let plugins = tempfile::tempdir().unwrap();
    for name in ["web_fetch", "web_search"] {
        std::fs::copy(self::plugins().join(lib(name)), plugins.path().join(lib(name))).unwrap();
    }
    let output = toolshed(
        home.path(),
        ws.path(),
        &["--plugins", plugins.path().to_str().unwrap(), "call", "web_search", r#"{"query":"q"}"#, "--yes"],
        &[("TOOLSHED_WEB_TOKEN", "user-token")],
    );
    assert_eq!(
        stdout(&output),
        "[web_search for 'q'] Result:\nSearch completed (1 results found):\n\n1. T\n   https://u\n\n\n",
        "{}",
        stderr(&output)
    );
    assert!(stderr(&output).contains("ignored `web.api_base_url`"), "{}", stderr(&output));
    assert!(stderr(&output).contains("ignored `web.allowed_hosts`"), "{}", stderr(&output));
    assert_eq!(evil.requests().len(), 0);
    let requests = good.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("authorization"), Some("Bearer user-token"));
}

/// A config for the direct backend.
fn direct_config(extra: &str) -> Config {
    Config::from_toml_str(&format!("[web]\nbackend = \"direct\"\nenabled = true\n{extra}")).unwrap()
}

const PAGE: &str = "<!DOCTYPE html><html><head><title>Doc</title></head><body><h1>Hello</h1>\
    <p>Some <b>bold</b> text and <a href=\"https://example.com\">a link</a>.</p><ul><li>one</li><li>two</li></ul></body></html>";

#[test]
fn direct_fetch_turns_an_allowed_local_page_into_markdown() {
    let server = Server::start(|request| match request.path.as_str() {
        "/data" => Reply::Body(200, "application/json", r#"{"b":1,"a":[true,null]}"#.to_owned()),
        "/missing" => Reply::Body(404, "text/plain", "no".to_owned()),
        _ => Reply::Body(200, "text/html; charset=utf-8", PAGE.to_owned()),
    });
    let runtime = runtime(direct_config("allowed_hosts = [\"127.0.0.1\"]\n"), None);
    let ws = workspace();
    let task = task_in(&runtime, ws.path());

    let page = server.url("/page");
    let result = call(&task, "web_fetch", json!({"url": page, "prompt": "What does it say?"}));
    assert_eq!(
        text(&result),
        format!(
            "Prompt: What does it say?\n\nFetched Markdown for {page}:\n\n# Hello\n\nSome **bold** text and [a link](https://example.com).\n\n*   one\n*   two"
        )
    );
    let data = server.url("/data");
    assert_eq!(
        text(&call(&task, "web_fetch", json!({"url": data, "prompt": "p"}))),
        format!(
            "Prompt: p\n\nFetched Markdown for {data}:\n\n{{\n  \"b\": 1,\n  \"a\": [\n    true,\n    null\n  ]\n}}"
        )
    );
    assert_eq!(
        text(&call(&task, "web_fetch", json!({"url": server.url("/missing"), "prompt": "p"}))),
        "Error fetching web content: Request failed with status code 404"
    );
    let request = &server.requests()[0];
    assert_eq!((request.method.as_str(), request.path.as_str()), ("GET", "/page"));
    assert_eq!(request.header("authorization"), None, "a direct fetch never carries the API token");
}

#[test]
fn direct_fetch_refuses_loopback_by_default() {
    let server = Server::start(|_| Reply::Body(200, "text/html", PAGE.to_owned()));
    let runtime = runtime(direct_config(""), Some("tok"));
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let result = call(&task, "web_fetch", json!({"url": server.url("/page"), "prompt": "p"}));
    assert_eq!(
        text(&result),
        "Error fetching web content: 127.0.0.1 is a loopback address, which web requests may not reach; allow it with [web] allowed_hosts or allow_private_addresses"
    );
    let by_name =
        call(&task, "web_fetch", json!({"url": format!("http://localhost:{}/", server.addr.port()), "prompt": "p"}));
    assert!(text(&by_name).starts_with("Error fetching web content: localhost (resolves to "), "{}", text(&by_name));
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn redirects_to_loopback_addresses_that_are_not_allowed_are_refused() {
    let port = Arc::new(Mutex::new(0u16));
    let target = Arc::clone(&port);
    let server = Server::start(move |request| {
        let port = *target.lock().unwrap();
        match request.path.as_str() {
            "/to-ip" => Reply::Redirect(format!("http://127.0.0.2:{port}/secret")),
            "/to-name" => Reply::Redirect(format!("http://localhost:{port}/secret")),
            "/to-metadata" => Reply::Redirect("http://169.254.169.254/latest/meta-data".to_owned()),
            "/hop" => Reply::Redirect(format!("http://127.0.0.1:{port}/final")),
            _ => Reply::Body(200, "text/plain", "final page".to_owned()),
        }
    });
    *port.lock().unwrap() = server.addr.port();
    let runtime = runtime(direct_config("allowed_hosts = [\"127.0.0.1\"]\nmax_redirects = 3\n"), None);
    let ws = workspace();
    let task = task_in(&runtime, ws.path());

    // A redirect within the allowed host is followed.
    let hop = call(&task, "web_fetch", json!({"url": server.url("/hop"), "prompt": "p"}));
    assert_eq!(text(&hop), format!("Prompt: p\n\nFetched Markdown for {}:\n\nfinal page", server.url("/final")));

    for (path, refused) in [
        ("/to-ip", "127.0.0.2 is a loopback address"),
        ("/to-name", "localhost (resolves to "),
        ("/to-metadata", "169.254.169.254 is a link-local address"),
    ] {
        let result = call(&task, "web_fetch", json!({"url": server.url(path), "prompt": "p"}));
        assert!(
            text(&result).starts_with(&format!("Error fetching web content: {refused}")),
            "{path}: {}",
            text(&result)
        );
    }
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/hop", "/final", "/to-ip", "/to-name", "/to-metadata"], "no refused target was reached");
}
