//! Class 5: serve --http survives accept errors, idle connections and large bodies.
//!
//! A real `toolshed serve --http` with a lowered descriptor limit (set in the child before it starts), and
//! raw HTTP/1.1 over `TcpStream`s: the flood is a few hundred connections that never say anything.

use crate::util::{plugins, toolshed_bin, workspace};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOKEN: &str = "fl00d-t0ken";

/// The one generous bound: every connection the server should close is closed within it.
const BOUND: Duration = Duration::from_secs(60);

/// The server, killed when the test ends however it ends, and what it printed on stderr.
struct Server {
    child: Child,
    authority: String,
    stderr: Arc<Mutex<String>>,
    _home: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(descriptors: Option<u64>, env: &[(&str, &str)]) -> Server {
        let home = workspace();
        let mut command = Command::new(toolshed_bin());
        command
            .arg("--plugins")
            .arg(plugins())
            .arg("--cwd")
            .arg(home.path())
            .args(["serve", "--http", "127.0.0.1:0"])
            .env("HOME", home.path())
            .env_remove("TOOLSHED_PLUGINS")
            .env("TOOLSHED_SERVE_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (key, value) in env {
            command.env(key, value);
        }
        if let Some(limit) = descriptors {
            // SAFETY: setrlimit is async-signal-safe and the closure allocates nothing.
            unsafe {
                command.pre_exec(move || {
                    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, limit, limit)
                        .map_err(std::io::Error::from)
                });
            }
        }
        let mut child = command.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let authority = crate::util::served_authority(&mut lines);
        // Keep reading, or the server would block on a full pipe when it logs.
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut text = sink.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        });
        Server { child, authority, stderr, _home: home }
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(&self.authority).unwrap();
        stream.set_read_timeout(Some(BOUND)).unwrap();
        stream
    }

    /// One request on a fresh connection; the response's status line and body.
    fn request(&self, headers: &str, body: &[u8]) -> (String, String) {
        let mut stream = self.connect();
        send(&mut stream, &self.authority, headers, body, true);
        let mut response = Vec::new();
        let _ = stream.read_to_end(&mut response);
        split(&response)
    }

    fn initialize(&self) -> (String, String) {
        self.request(&format!("Authorization: Bearer {TOKEN}\r\n"), INITIALIZE.as_bytes())
    }
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}"#;

fn send(stream: &mut TcpStream, authority: &str, headers: &str, body: &[u8], close: bool) {
    write_post(stream, authority, headers, body, close).unwrap();
}

fn write_post(stream: &mut TcpStream, authority: &str, headers: &str, body: &[u8], close: bool) -> std::io::Result<()> {
    let connection = if close { "Connection: close\r\n" } else { "" };
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{headers}{connection}Content-Length: {}\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body)?;
    stream.flush()
}

fn split(response: &[u8]) -> (String, String) {
    let text = String::from_utf8_lossy(response).into_owned();
    let status = text.lines().next().unwrap_or_default().to_owned();
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

/// Whether the server closed the connection (end of file or a reset) within the bound.
fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 64];
    loop {
        match stream.read(&mut byte) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return false
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn out_of_descriptors_the_server_backs_off_closes_idle_connections_and_keeps_answering() {
    // Far fewer descriptors than the flood, and a cap above them: accept must fail with EMFILE.
    let mut server = Server::start(
        Some(96),
        &[
            ("TOOLSHED_SERVE_MAX_CONNECTIONS", "1000"),
            ("TOOLSHED_SERVE_AUTH_TIMEOUT_MS", "300"),
            ("TOOLSHED_SERVE_ACCEPT_BACKOFF_MS", "20"),
        ],
    );
    assert!(server.initialize().0.starts_with("HTTP/1.1 200"));
    let mut flood: Vec<TcpStream> = (0..300).map(|_| server.connect()).collect();
    // Every idle connection is closed by the server, those it could not accept at first included: the
    // kernel queued them, and the server got to them once the timeouts freed descriptors.
    let deadline = Instant::now() + BOUND;
    for (n, stream) in flood.iter_mut().enumerate() {
        assert!(closed_by_server(stream), "idle connection {n} still open");
        assert!(Instant::now() < deadline);
    }
    assert!(server.alive(), "the server died under the flood");
    let log = server.stderr.lock().unwrap().clone();
    assert!(log.contains("cannot accept a connection"), "no accept error was logged: {log}");
    let (status, body) = server.initialize();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}\n{body}");
    assert!(body.contains("toolshed"), "{body}");
    assert!(server.request("", b"{}").0.starts_with("HTTP/1.1 401"));
}

#[test]
fn connections_over_the_cap_get_503_and_the_cap_frees_as_they_go() {
    let server =
        Server::start(None, &[("TOOLSHED_SERVE_MAX_CONNECTIONS", "4"), ("TOOLSHED_SERVE_AUTH_TIMEOUT_MS", "600000")]);
    let idle: Vec<TcpStream> = (0..4).map(|_| server.connect()).collect();
    // The server accepts in order, so the fifth is over the cap once the four are held; it is answered and
    // closed at once, even before it says anything.
    let mut over = server.connect();
    let mut response = Vec::new();
    let _ = over.read_to_end(&mut response);
    let (status, body) = split(&response);
    assert!(status.starts_with("HTTP/1.1 503"), "{status}");
    assert!(body.contains("max_connections"), "{body}");
    drop(idle);
    let deadline = Instant::now() + BOUND;
    loop {
        // Until the server has seen the four go, a connection is still over the cap: answered 503 and closed
        // before its request is read, so writing the request may meet a reset instead of the answer.
        let mut stream = server.connect();
        let headers = format!("Authorization: Bearer {TOKEN}\r\n");
        let sent = write_post(&mut stream, &server.authority, &headers, INITIALIZE.as_bytes(), true);
        let mut response = Vec::new();
        let _ = stream.read_to_end(&mut response);
        let (status, body) = split(&response);
        if status.starts_with("HTTP/1.1 200") {
            break;
        }
        let over = status.starts_with("HTTP/1.1 503") || sent.is_err() || status.is_empty();
        assert!(over && Instant::now() < deadline, "{status}\n{body}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn unauthenticated_connections_are_closed_and_authenticated_ones_kept() {
    let server = Server::start(None, &[("TOOLSHED_SERVE_AUTH_TIMEOUT_MS", "300")]);
    // Silent, half a request line, a request with a wrong token (answered 401, then kept alive by HTTP/1.1):
    // none of them authenticated, so all are closed.
    let mut silent = server.connect();
    let mut partial = server.connect();
    partial.write_all(b"POST /mcp HTTP/1.1\r\nHost: x\r\n").unwrap();
    let mut wrong = server.connect();
    send(&mut wrong, &server.authority, "Authorization: Bearer nope\r\n", b"{}", false);
    // A body that never arrives, behind a valid token: the token counts as soon as the headers are read.
    let mut authenticated = server.connect();
    send(
        &mut authenticated,
        &server.authority,
        &format!("Authorization: Bearer {TOKEN}\r\n"),
        INITIALIZE.as_bytes(),
        false,
    );
    for (name, stream) in [("silent", &mut silent), ("partial", &mut partial), ("wrong token", &mut wrong)] {
        assert!(closed_by_server(stream), "{name} connection still open");
    }
    // The authenticated connection outlived the timeout above and still serves requests.
    authenticated.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let mut first = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&first).contains("serverInfo") {
        match authenticated.read(&mut chunk) {
            Ok(0) => panic!("the authenticated connection was closed: {}", String::from_utf8_lossy(&first)),
            Ok(n) => first.extend_from_slice(&chunk[..n]),
            Err(e) => panic!("no answer on the authenticated connection ({e}): {}", String::from_utf8_lossy(&first)),
        }
    }
    assert!(String::from_utf8_lossy(&first).starts_with("HTTP/1.1 200"));
}

#[test]
fn oversize_bodies_get_413_whether_declared_or_streamed() {
    let server = Server::start(None, &[("TOOLSHED_SERVE_MAX_BODY_BYTES", "4096")]);
    let big = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#, "x".repeat(10_000));
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    // Declared by Content-Length: refused before the token is even looked at.
    let (status, body) = server.request(&auth, big.as_bytes());
    assert!(status.starts_with("HTTP/1.1 413"), "{status}");
    assert!(body.contains("4096 bytes"), "{body}");
    assert!(server.request("", big.as_bytes()).0.starts_with("HTTP/1.1 413"));
    // Chunked, with no length up front: refused once reading passes the limit.
    let mut stream = server.connect();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{auth}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        server.authority
    )
    .unwrap();
    for piece in big.as_bytes().chunks(1000) {
        if write!(stream, "{:x}\r\n", piece.len())
            .and_then(|()| stream.write_all(piece))
            .and_then(|()| stream.write_all(b"\r\n"))
            .is_err()
        {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    assert!(split(&response).0.starts_with("HTTP/1.1 413"), "{}", String::from_utf8_lossy(&response));
    // A body within the limit is served as before.
    assert!(server.initialize().0.starts_with("HTTP/1.1 200"));
}
