//! browser_action under attack: a hostile page (and a hostile model) against the `file://` gate, the launch
//! URL check, the host's memory and time, and the Chromium process tree. Each test asserts the safe
//! behaviour; the secret outside the workspace paints the page pure green and logs `SECRET-LEAK`, so a leak
//! shows in the PNG screenshot or the console logs the model would read.

use crate::browser::{act, browser_task, model_text, parts, pixels};
use crate::util::{shipped, workspace};
use serde_json::json;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolshed::{
    Answer, ApprovalPrompt, Approver, BoxFuture, Config, Reply, ResultStatus, Runtime, TaskHandle, ToolResult,
};

/// What the secret page logs when it runs.
const LEAK: &str = "SECRET-LEAK";

// ---------------------------------------------------------------------------------------------------------
// The harness (after browser.rs, whose helpers are private).

/// One canned HTTP answer.
#[derive(Clone)]
struct Response {
    status: &'static str,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn html(body: &str) -> Response {
    Response {
        status: "200 OK",
        headers: vec![("Content-Type".into(), "text/html".into())],
        body: body.as_bytes().to_vec(),
    }
}

type Routes = Arc<Mutex<HashMap<String, Response>>>;

/// A tiny HTTP server on 127.0.0.1 for the test's life, answering from a table the test may change.
struct Server {
    port: u16,
    routes: Routes,
}

impl Server {
    fn start(routes: Vec<(&str, Response)>) -> Server {
        let routes: Routes =
            Arc::new(Mutex::new(routes.into_iter().map(|(path, response)| (path.to_owned(), response)).collect()));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let served = Arc::clone(&routes);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let routes = Arc::clone(&served);
                std::thread::spawn(move || serve(stream, &routes));
            }
        });
        Server { port, routes }
    }

    fn set(&self, path: &str, response: Response) {
        self.routes.lock().unwrap().insert(path.to_owned(), response);
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

fn serve(mut stream: TcpStream, routes: &Routes) {
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buffer[..n]),
        }
    }
    let head = String::from_utf8_lossy(&request);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let path = path.split('?').next().unwrap_or("/").to_owned();
    if path == "/never" {
        let _ = stream.read(&mut buffer);
        return;
    }
    let response = routes.lock().unwrap().get(&path).cloned().unwrap_or(Response {
        status: "404 Not Found",
        headers: vec![("Content-Type".into(), "text/plain".into())],
        body: b"not found".to_vec(),
    });
    let mut head = format!("HTTP/1.1 {}\r\n", response.status);
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", response.body.len()));
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&response.body);
}

fn chromium() -> String {
    let chromium = std::env::var("TOOLSHED_TEST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    assert!(Path::new(&chromium).is_file(), "{chromium} not found: the browser tests need Chromium");
    chromium
}

/// The `[browser]` section: the test's own keys win over the short defaults.
fn browser_config(profiles: &Path, extra: &str) -> Config {
    let defaults = [
        "navigation_timeout_ms = 3000",
        "stable_timeout_ms = 600",
        "stable_interval_ms = 50",
        "log_quiet_ms = 100",
        "log_wait_ms = 800",
        "network_probe_ms = 100",
        "scroll_delay_ms = 50",
        "screenshot_format = \"png\"",
    ];
    let keys: Vec<&str> = defaults
        .into_iter()
        .filter(|line| line.split_once(" = ").is_none_or(|(key, _)| !extra.contains(key)))
        .collect();
    let config = format!(
        "[browser]\nexecutable = \"{}\"\nprofile_dir = \"{}\"\n{}\n{extra}\n",
        chromium(),
        profiles.display(),
        keys.join("\n")
    );
    Config::from_toml_str(&config).unwrap()
}

/// A runtime approving every ask, its browsers' profiles under `profiles`.
fn runtime(profiles: &Path, extra: &str) -> Runtime {
    shipped().config(browser_config(profiles, extra)).yes(true).build().unwrap()
}

fn launch(task: &TaskHandle, url: &str) -> ToolResult {
    act(task, json!({"action": "launch", "url": url}))
}

fn profiles() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("browser-attack-profiles-").tempdir().unwrap()
}

/// A process's command line, NULs as spaces.
fn cmdline(pid: i32) -> Option<String> {
    std::fs::read(format!("/proc/{pid}/cmdline")).ok().map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
}

/// The pids of live processes whose command line names a path under `profiles`: this test's Chromium.
fn chromium_pids(profiles: &Path) -> Vec<i32> {
    let needle = profiles.to_string_lossy().into_owned();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        if cmdline(pid).is_some_and(|line| line.contains(&needle)) && !gone(pid) {
            pids.push(pid);
        }
    }
    pids
}

/// The browser (main) processes among them: no `--type=` (renderers, zygotes and helpers have one).
fn browser_mains(profiles: &Path) -> Vec<i32> {
    chromium_pids(profiles).into_iter().filter(|&pid| cmdline(pid).is_some_and(|l| !l.contains("--type="))).collect()
}

/// (state, ppid) of a process, if it exists.
fn stat(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = stat.rsplit(')').next()?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Whether `pid` is gone or a zombie.
fn gone(pid: i32) -> bool {
    stat(pid).is_none_or(|(state, _)| state == 'Z')
}

/// Whether `pid` is gone for good: no process, or a zombie someone else will reap (not one left to us).
fn reaped(pid: i32) -> bool {
    let me = std::process::id() as i32;
    match stat(pid) {
        None => true,
        Some(('Z', ppid)) => ppid != me,
        Some(_) => false,
    }
}

/// Waits (one generous bound) until every pid is gone and no zombie of them is left to this process.
fn assert_all_gone(pids: &[i32], what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !pids.iter().all(|&pid| reaped(pid)) {
        let left: Vec<_> = pids.iter().filter(|&&pid| !reaped(pid)).map(|&pid| (pid, stat(pid))).collect();
        assert!(Instant::now() < deadline, "{what}: Chromium processes left (pid, state, ppid): {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How many pixels of the screenshot are the secret's pure green.
fn green_pixels(png_bytes: &[u8]) -> usize {
    let (_, _, data, channels) = pixels(png_bytes);
    data.chunks(channels).filter(|p| p[0] < 40 && p[1] > 215 && p[2] < 40).count()
}

/// The result shows nothing of the secret: not in its text, not in its (PNG) screenshot.
#[track_caller]
fn assert_no_leak(result: &ToolResult, what: &str) {
    let (text, image) = parts(result);
    assert!(!text.contains(LEAK), "{what}: the secret reached the logs:\n{text}");
    if let Some((media_type, bytes)) = image {
        assert_eq!(media_type, "image/png", "{what}");
        let green = green_pixels(&bytes);
        assert!(green < 50, "{what}: the secret was rendered ({green} green pixels):\n{text}");
    }
}

/// A tiny solid green PNG.
fn green_png() -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, 64, 64);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().unwrap();
        let data: Vec<u8> = std::iter::repeat_n([0u8, 255, 0], 64 * 64).flatten().collect();
        writer.write_image_data(&data).unwrap();
    }
    out
}

/// A directory outside the workspace holding the secrets, in every form a page could pull in.
struct Secrets {
    dir: tempfile::TempDir,
}

impl Secrets {
    fn new() -> Secrets {
        let dir = tempfile::Builder::new().prefix("outside-").tempdir().unwrap();
        let page = format!(
            "<html><body style=\"margin:0;background:#00ff00;width:100vw;height:100vh\"><script>console.log('{LEAK}');
try {{ parent.postMessage('{LEAK}', '*') }} catch (e) {{}} try {{ top.console.log('{LEAK}') }} catch (e) {{}}</script>
<div style=\"background:#00ff00;width:2000px;height:2000px\">{LEAK}</div></body></html>"
        );
        std::fs::write(dir.path().join("secret.html"), page).unwrap();
        std::fs::write(dir.path().join("secret.png"), green_png()).unwrap();
        std::fs::write(dir.path().join("secret.css"), "html, body, div { background: #00ff00 !important; }").unwrap();
        std::fs::write(
            dir.path().join("secret.js"),
            format!("console.log('{LEAK}'); document.documentElement.style.background = '#00ff00';"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("secret.svg"),
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"2000\" height=\"2000\"><rect width=\"2000\" height=\"2000\" fill=\"#00ff00\"/></svg>",
        )
        .unwrap();
        std::fs::write(dir.path().join("secret.txt"), format!("{LEAK}\n")).unwrap();
        // Not a real font: only whether its request is let through matters.
        std::fs::write(dir.path().join("secret.woff2"), b"wOF2 not really").unwrap();
        Secrets { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn url(&self, name: &str) -> String {
        format!("file://{}", self.path(name).display())
    }
}

fn file_url(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// An approver that approves every ask and keeps what it was asked.
#[derive(Clone, Default)]
struct Recorder {
    prompts: Arc<Mutex<Vec<ApprovalPrompt>>>,
}

impl Approver for Recorder {
    fn ask(&self, prompt: ApprovalPrompt) -> BoxFuture<Reply> {
        self.prompts.lock().unwrap().push(prompt);
        Box::pin(async { Reply { answer: Answer::Approve, feedback: None } })
    }
}

// ---------------------------------------------------------------------------------------------------------
// 1. The file:// gate.

/// The oracle itself: the same secret inside the workspace is rendered and logged, so its absence elsewhere
/// means the gate held, not that the page failed to show anything.
#[test]
fn the_leak_detector_sees_a_secret_inside_the_workspace() {
    let _turn = crate::util::browser_turn();
    let (dir, secrets, profiles) = (workspace(), Secrets::new(), profiles());
    std::fs::copy(secrets.path("secret.html"), dir.path().join("mine.html")).unwrap();
    std::fs::write(
        dir.path().join("index.html"),
        "<body style=margin:0><iframe src=mine.html style='border:0;width:900px;height:600px'></iframe></body>",
    )
    .unwrap();
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    let shown = launch(&task, &file_url(&dir.path().join("index.html")));
    let (text, image) = parts(&shown);
    assert!(text.contains(LEAK), "{text}");
    assert!(green_pixels(&image.unwrap().1) > 100_000);
    act(&task, json!({"action": "close"}));
}

/// Subresources of every kind: images, styles, imports, scripts, objects, embeds, frames, media, fonts,
/// SVG images and `<use>`, preload/prefetch, fetch and XHR.
#[test]
fn subresources_outside_the_workspace_are_not_loaded() {
    let _turn = crate::util::browser_turn();
    let (dir, secrets, profiles) = (workspace(), Secrets::new(), profiles());
    let u = |name: &str| secrets.url(name);
    let page = format!(
        r#"<html><head>
<link rel="stylesheet" href="{css}">
<style>@import url("{css}"); @font-face {{ font-family: S; src: url("{font}"); }}
 .bg {{ background-image: url("{png}"); }} .svgbg {{ background: url("{svg}"); }}
 body {{ font-family: S; margin: 0; }} .cell {{ width: 900px; height: 60px; border: 0; display: block; }}</style>
<link rel="preload" href="{png}" as="image"><link rel="prefetch" href="{html}">
<script src="{js}"></script>
</head><body>
<img class="cell" src="{png}" onload="console.log('{leak} img')">
<div class="cell bg"></div><div class="cell svgbg"></div>
<object class="cell" data="{html}" type="text/html"></object>
<object class="cell" data="{txt}" type="text/plain"></object>
<embed class="cell" src="{html}" type="text/html">
<iframe class="cell" src="{svg}"></iframe>
<video class="cell" src="{png}" poster="{png}"></video>
<svg width="900" height="60"><image href="{png}" width="900" height="60"/><use href="{svg}#r"/></svg>
<input type="image" src="{png}" class="cell">
<script>
fetch('{html}').then(r => r.text()).then(t => console.log('{leak} fetch ' + t)).catch(e => console.log('fetch failed'));
try {{ const x = new XMLHttpRequest(); x.open('GET', '{txt}', false); x.send(); console.log('{leak} xhr ' + x.responseText) }}
catch (e) {{ console.log('xhr failed') }}
document.fonts.load('12px S').then(f => console.log(f.length ? '{leak} font' : 'font not loaded'));
</script>
</body></html>"#,
        css = u("secret.css"),
        font = u("secret.woff2"),
        png = u("secret.png"),
        svg = u("secret.svg"),
        html = u("secret.html"),
        js = u("secret.js"),
        txt = u("secret.txt"),
        leak = LEAK,
    );
    std::fs::write(dir.path().join("index.html"), page).unwrap();
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    let shown = launch(&task, &file_url(&dir.path().join("index.html")));
    assert_eq!(shown.status, ResultStatus::Success, "{}", model_text(&shown));
    assert_no_leak(&shown, "subresources");
    let text = parts(&shown).0;
    for name in ["secret.css", "secret.png", "secret.js", "secret.html"] {
        assert!(text.contains(&format!("[Error] Blocked {}", u(name))), "{name} not blocked by the gate:\n{text}");
    }
    act(&task, json!({"action": "close"}));
}

/// A link inside the workspace to a file or directory outside it leads outside: blocked, whether the page
/// frames it, shows it as an image, or is launched at the workspace directory and follows the link.
#[test]
fn symbolic_links_out_of_the_workspace_are_blocked() {
    let _turn = crate::util::browser_turn();
    let (dir, secrets, profiles) = (workspace(), Secrets::new(), profiles());
    std::os::unix::fs::symlink(secrets.path("secret.html"), dir.path().join("link.html")).unwrap();
    std::os::unix::fs::symlink(secrets.dir.path(), dir.path().join("linkdir")).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let page = r#"<body style="margin:0">
<iframe src="link.html" style="border:0;width:900px;height:200px;display:block"></iframe>
<iframe src="linkdir/secret.html" style="border:0;width:900px;height:200px;display:block"></iframe>
<img src="linkdir/secret.png" style="width:900px;height:100px;display:block">
<iframe src="linkdir/" style="border:0;width:900px;height:100px;display:block"></iframe>
<iframe src="sub%2F..%2Flinkdir%2Fsecret.html" style="border:0;width:900px;height:100px;display:block"></iframe>
</body>"#;
    std::fs::write(dir.path().join("index.html"), page).unwrap();
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    let shown = launch(&task, &file_url(&dir.path().join("index.html")));
    assert_eq!(shown.status, ResultStatus::Success, "{}", model_text(&shown));
    assert_no_leak(&shown, "symlinks");
    let text = parts(&shown).0;
    assert!(text.contains("link.html: files outside the workspace"), "{text}");
    assert!(text.contains("linkdir/secret.html: files outside the workspace"), "{text}");
    act(&task, json!({"action": "close"}));
}

/// The page itself navigates (its main frame) outside the workspace, in every way a page can, and with
/// every spelling of the URL.
#[test]
fn main_frame_navigations_out_of_the_workspace_are_blocked() {
    let _turn = crate::util::browser_turn();
    let (dir, secrets, profiles) = (workspace(), Secrets::new(), profiles());
    let secret = secrets.url("secret.html");
    let ws = dir.path().display().to_string();
    // The secret's path from the workspace directory, for `..` spellings.
    let depth = dir.path().components().count() - 1;
    let up = "../".repeat(depth);
    let relative = format!("{up}{}", secrets.path("secret.html").display().to_string().trim_start_matches('/'));
    let encoded_up = "%2e%2e/".repeat(depth);
    let encoded = format!(
        "file://{ws}/{encoded_up}{}",
        secrets.path("secret.html").display().to_string().trim_start_matches('/')
    );
    let without_scheme = secret.trim_start_matches("file://").to_owned();
    let vectors: Vec<(&str, String)> = vec![
        ("location.href", format!("<script>location.href = '{secret}'</script>")),
        ("location.replace, uppercase scheme", format!("<script>location.replace('FILE://{without_scheme}')</script>")),
        ("localhost host", format!("<script>location.href = 'file://localhost{without_scheme}'</script>")),
        ("another host", format!("<script>location.href = 'file://evil.example{without_scheme}'</script>")),
        ("relative ..", format!("<script>location.href = '{relative}'</script>")),
        ("encoded ..", format!("<script>location.href = '{encoded}'</script>")),
        ("meta refresh", format!("<meta http-equiv=refresh content=\"0; url={secret}\">")),
        ("form", format!("<form id=f action=\"{secret}\"></form><script>f.submit()</script>")),
        ("the root listing", "<script>location.href = 'file:///'</script>".to_owned()),
        ("the workspace's parent listing", "<script>location.href = '..'</script>".to_owned()),
        ("view-source", format!("<script>location.href = 'view-source:{secret}'</script>")),
        ("filesystem:", "<script>location.href = 'filesystem:file:///temporary/x'</script>".to_owned()),
        ("history.pushState", format!("<script>try {{ history.pushState(null, '', '{secret}') }} catch (e) {{ console.log('pushState refused') }}</script>")),
    ];
    let runtime = runtime(
        profiles.path(),
        "navigation_timeout_ms = 1500\nstable_timeout_ms = 300\nlog_wait_ms = 400\nlog_quiet_ms = 50\ncommand_timeout_ms = 3000",
    );
    let task = browser_task(&runtime, dir.path());
    for (i, (what, body)) in vectors.iter().enumerate() {
        let name = format!("nav{i}.html");
        std::fs::write(dir.path().join(&name), format!("<html><body style=margin:0>{body}</body></html>")).unwrap();
        let shown = launch(&task, &file_url(&dir.path().join(&name)));
        assert_no_leak(&shown, what);
    }
    act(&task, json!({"action": "close"}));
}

/// Clicking a link (the model's own action) to a file outside, or a link opening a new window.
#[test]
fn clicked_links_and_popups_do_not_reach_outside() {
    let _turn = crate::util::browser_turn();
    let (dir, secrets, profiles) = (workspace(), Secrets::new(), profiles());
    let secret = secrets.url("secret.html");
    let page = format!(
        r#"<body style="margin:0">
<a href="{secret}" style="position:absolute;left:0;top:0;width:400px;height:200px;display:block;background:#eee">same window</a>
<a href="{secret}" target="_blank" style="position:absolute;left:450px;top:0;width:400px;height:200px;display:block;background:#ddd">new window</a>
<script>const w = window.open('{secret}'); console.log('window.open gave ' + (w === null ? 'null' : 'a window'));
if (w) setTimeout(() => {{ try {{ console.log('popup says ' + w.document.body.innerText) }} catch (e) {{ console.log('popup unreadable') }} }}, 300);
</script></body>"#
    );
    std::fs::write(dir.path().join("index.html"), page).unwrap();
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    let shown = launch(&task, &file_url(&dir.path().join("index.html")));
    assert_no_leak(&shown, "window.open");
    // Without a user gesture the popup blocker refuses it.
    assert!(parts(&shown).0.contains("window.open gave null"), "{}", parts(&shown).0);
    // A click is a gesture: the new window opens (Chromium's --block-new-web-contents does not hold in its
    // new headless mode). It is not gated, but nobody sees it: the session's page stays the one shown.
    let popup = act(&task, json!({"action": "click", "coordinate": "650,100"}));
    assert_eq!(popup.status, ResultStatus::Success, "{}", model_text(&popup));
    assert_no_leak(&popup, "target=_blank");
    // Then the session's page is in the background, where it draws no frames: its screenshot used to wait
    // for chromiumoxide's 30 s and fail. It is brought to the front first now.
    let started = Instant::now();
    let same = act(&task, json!({"action": "click", "coordinate": "200,100"}));
    assert_eq!(same.status, ResultStatus::Success, "{}", model_text(&same));
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_no_leak(&same, "a link clicked");
    assert!(parts(&same).0.contains("[Error] Blocked"), "{}", parts(&same).0);
    act(&task, json!({"action": "close"}));
}

/// Frames the page's own process may not host (a sandboxed frame, a data: frame, a blob: frame, an
/// srcdoc frame) try the secret from inside.
#[test]
fn nested_and_isolated_frames_are_gated_too() {
    let _turn = crate::util::browser_turn();
    let (dir, secrets, profiles) = (workspace(), Secrets::new(), profiles());
    let secret = secrets.url("secret.html");
    let png = secrets.url("secret.png");
    let inner = format!(
        "<body style=margin:0><iframe src=\"{secret}\" style=\"border:0;width:900px;height:100px\"></iframe><img src=\"{png}\" style=\"width:900px;height:20px\"></body>"
    );
    std::fs::write(dir.path().join("inner.html"), &inner).unwrap();
    let escaped = inner.replace('"', "&quot;");
    let page = format!(
        r#"<body style="margin:0">
<iframe sandbox="allow-scripts" src="inner.html" style="border:0;width:900px;height:130px;display:block"></iframe>
<iframe sandbox src="inner.html" style="border:0;width:900px;height:130px;display:block"></iframe>
<iframe srcdoc="{escaped}" style="border:0;width:900px;height:130px;display:block"></iframe>
<iframe src="data:text/html,{data}" style="border:0;width:900px;height:100px;display:block"></iframe>
<iframe id=b style="border:0;width:900px;height:100px;display:block"></iframe>
<script>b.src = URL.createObjectURL(new Blob([{blob}], {{type: 'text/html'}}));</script>
</body>"#,
        data = inner.replace('#', "%23").replace('"', "'"),
        blob = serde_json::to_string(&inner).unwrap(),
    );
    std::fs::write(dir.path().join("index.html"), page).unwrap();
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    let shown = launch(&task, &file_url(&dir.path().join("index.html")));
    assert_eq!(shown.status, ResultStatus::Success, "{}", model_text(&shown));
    assert_no_leak(&shown, "nested frames");
    act(&task, json!({"action": "close"}));
}

/// An http page cannot reach file:// at all: not by a redirect, a frame or a link.
#[test]
fn http_pages_cannot_reach_files() {
    let _turn = crate::util::browser_turn();
    let (secrets, dir, profiles) = (Secrets::new(), workspace(), profiles());
    let secret = secrets.url("secret.html");
    let server = Server::start(vec![
        (
            "/redirect",
            Response {
                status: "302 Found",
                headers: vec![("Location".into(), secret.clone())],
                body: Vec::new(),
            },
        ),
        (
            "/frame",
            html(&format!(
                "<body style=margin:0><iframe src=\"{secret}\" style=\"border:0;width:900px;height:600px\"></iframe><img src=\"{}\"></body>",
                secrets.url("secret.png")
            )),
        ),
        ("/go", html(&format!("<script>location.href = '{secret}'</script>"))),
    ]);
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    for path in ["/redirect", "/frame", "/go"] {
        let shown = launch(&task, &server.url(path));
        assert_no_leak(&shown, path);
    }
    act(&task, json!({"action": "close"}));
}

/// The gate answers every request, even after answering one failed (a request the page cancelled while it
/// was held): a later file of the workspace still loads.
#[test]
fn the_gate_survives_requests_the_page_cancels() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    std::fs::write(dir.path().join("ok.html"), "<script>parent.postMessage('ok loaded', '*')</script>").unwrap();
    std::fs::write(dir.path().join("x.html"), "x").unwrap();
    let page = r#"<body style="margin:0"><script>
addEventListener('message', e => console.log('message: ' + e.data));
for (let i = 0; i < 40; i++) { const f = document.createElement('iframe'); f.src = 'x.html?' + i; document.body.appendChild(f); setTimeout(() => f.remove(), i % 3); }
for (let i = 0; i < 40; i++) { const m = new Image(); m.src = 'x.html?img' + i; setTimeout(() => { m.src = '' }, i % 3); }
</script><button style="position:absolute;left:0;top:0;width:900px;height:600px"
 onclick="const f = document.createElement('iframe'); f.src = 'ok.html'; document.body.appendChild(f)">load</button></body>"#;
    std::fs::write(dir.path().join("index.html"), page).unwrap();
    let runtime = runtime(
        profiles.path(),
        "log_wait_ms = 2000
log_quiet_ms = 500",
    );
    let task = browser_task(&runtime, dir.path());
    let shown = launch(&task, &file_url(&dir.path().join("index.html")));
    assert_eq!(shown.status, ResultStatus::Success, "{}", model_text(&shown));
    let clicked = act(&task, json!({"action": "click", "coordinate": "450,300"}));
    let text = parts(&clicked).0;
    assert!(text.contains("message: ok loaded"), "{text}");
    act(&task, json!({"action": "close"}));
}

/// `.clineignore` holds inside the workspace as outside it: a file in an ignored directory is not shown,
/// framed or followed. (The names in an ignored directory's listing are shown, as Cline's list_files shows
/// them with a lock: only contents are blocked.)
#[test]
fn clineignored_files_are_blocked_however_the_page_reaches_them() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    std::fs::write(dir.path().join(".clineignore"), "secret/\n*.env\n").unwrap();
    std::fs::create_dir(dir.path().join("secret")).unwrap();
    let page = format!("<body style=margin:0;background:#00ff00><script>console.log('{LEAK}')</script></body>");
    std::fs::write(dir.path().join("secret/page.html"), &page).unwrap();
    std::fs::write(dir.path().join("prod.env"), &page).unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret/page.html"), dir.path().join("alias.html")).unwrap();
    let index = r#"<body style="margin:0">
<iframe src="secret/page.html" style="border:0;width:900px;height:150px;display:block"></iframe>
<iframe src="prod.env" style="border:0;width:900px;height:150px;display:block"></iframe>
<iframe src="alias.html" style="border:0;width:900px;height:150px;display:block"></iframe>
<iframe src="SECRET/page.html" style="border:0;width:900px;height:150px;display:block"></iframe>
</body>"#;
    std::fs::write(dir.path().join("index.html"), index).unwrap();
    std::fs::write(dir.path().join("go.html"), "<script>location.href = 'secret/page.html'</script>").unwrap();
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    let shown = launch(&task, &file_url(&dir.path().join("index.html")));
    assert_eq!(shown.status, ResultStatus::Success, "{}", model_text(&shown));
    assert_no_leak(&shown, "ignored files in frames");
    let text = parts(&shown).0;
    for name in ["secret/page.html", "prod.env", "alias.html"] {
        assert!(text.contains(&format!("{name}: files outside the workspace")), "{name}:\n{text}");
    }
    let followed = launch(&task, &file_url(&dir.path().join("go.html")));
    assert_no_leak(&followed, "an ignored file navigated to");
    // Launching at one is refused before any browser starts, through a link too.
    for target in ["secret/page.html", "alias.html", "prod.env"] {
        let refused = model_text(&launch(&task, &file_url(&dir.path().join(target))));
        assert!(refused.contains("is blocked by the .clineignore file settings"), "{target}: {refused}");
    }
    act(&task, json!({"action": "close"}));
}

/// A page cannot write files: a download link clicked, a download started by script, an attachment
/// navigated to; nothing lands in the workspace, the host's directory or ~/Downloads.
#[test]
fn downloads_are_refused() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    let name = format!("pwned-{}", std::process::id());
    let server = Server::start(vec![
        (
            "/",
            html(&format!(
                r#"<body style="margin:0"><a id=a href="data:text/plain,pwned" download="{name}-a.txt"
 style="display:block;width:900px;height:300px">download</a>
<script>const l = document.createElement('a'); l.href = URL.createObjectURL(new Blob(['pwned'])); l.download = '{name}-b.txt'; l.click();</script></body>"#
            )),
        ),
        (
            "/attachment",
            Response {
                status: "200 OK",
                headers: vec![
                    ("Content-Type".into(), "application/octet-stream".into()),
                    ("Content-Disposition".into(), format!("attachment; filename=\"{name}-c.txt\"")),
                ],
                body: b"pwned".to_vec(),
            },
        ),
    ]);
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    launch(&task, &server.url("/"));
    act(&task, json!({"action": "click", "coordinate": "450,150"}));
    launch(&task, &server.url("/attachment"));
    std::thread::sleep(Duration::from_millis(500));
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    let places = [dir.path().to_path_buf(), std::env::current_dir().unwrap(), home.join("Downloads"), home.clone()];
    let mut found = Vec::new();
    for place in &places {
        for entry in std::fs::read_dir(place).into_iter().flatten().flatten() {
            if entry.file_name().to_string_lossy().starts_with(&name) {
                found.push(entry.path());
            }
        }
    }
    // And nowhere in the live profile either.
    let mut stack = vec![profiles.path().to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else if entry.file_name().to_string_lossy().starts_with(&name) {
                found.push(path);
            }
        }
    }
    act(&task, json!({"action": "close"}));
    for path in &found {
        let _ = std::fs::remove_file(path);
    }
    assert!(found.is_empty(), "the page wrote files: {found:?}");
}

/// The DevTools endpoint listens on loopback only, and a page cannot drive its own browser through it, even
/// knowing its address (Chromium refuses WebSocket clients that send an Origin).
#[test]
fn the_devtools_endpoint_is_loopback_only_and_closed_to_pages() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    let server = Server::start(vec![(
        "/",
        html(
            r#"<body style="margin:0"><button style="width:900px;height:600px" onclick="
fetch('/ws').then(r => r.text()).then(url => {
  const ws = new WebSocket(url);
  ws.onopen = () => { console.log('devtools open'); ws.send(JSON.stringify({id: 1, method: 'Target.getTargets'})) };
  ws.onmessage = e => console.log('devtools said ' + e.data.slice(0, 80));
  ws.onerror = () => console.log('devtools refused');
});
">go</button></body>"#,
        ),
    )]);
    let runtime = runtime(profiles.path(), "log_wait_ms = 2000\nlog_quiet_ms = 700");
    let task = browser_task(&runtime, dir.path());
    launch(&task, &server.url("/"));
    // The browser's address, as its profile records it.
    let profile = std::fs::read_dir(profiles.path()).unwrap().flatten().next().unwrap().path();
    let active = std::fs::read_to_string(profile.join("DevToolsActivePort")).unwrap();
    let mut lines = active.lines();
    let port: u16 = lines.next().unwrap().parse().unwrap();
    let path = lines.next().unwrap();
    server.set(
        "/ws",
        Response {
            status: "200 OK",
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: format!("ws://127.0.0.1:{port}{path}").into_bytes(),
        },
    );
    // Listening on 127.0.0.1 only (/proc/net/tcp: local address 0100007F, state 0A).
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap()
        + &std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
    let listening: Vec<&str> = tcp
        .lines()
        .filter(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            fields.len() > 3 && fields[3] == "0A" && fields[1].ends_with(&format!(":{port:04X}"))
        })
        .collect();
    assert!(!listening.is_empty(), "port {port} not found listening");
    for line in &listening {
        let local = line.split_whitespace().nth(1).unwrap();
        assert!(local.starts_with("0100007F:"), "DevTools listens beyond loopback: {line}");
    }
    let clicked = act(&task, json!({"action": "click", "coordinate": "450,300"}));
    let text = parts(&clicked).0;
    assert!(text.contains("devtools refused"), "{text}");
    assert!(!text.contains("devtools open") && !text.contains("devtools said"), "{text}");
    act(&task, json!({"action": "close"}));
}

/// The call's own timeout ([timeouts] call_ms) ends an action that would run for minutes (typing a huge
/// text), and the browser with it.
#[test]
fn a_call_timeout_mid_action_closes_the_browser() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    let server = Server::start(vec![("/", html("<body><input autofocus></body>"))]);
    let runtime = runtime(profiles.path(), "[timeouts]\ncall_ms = 3000");
    let task = browser_task(&runtime, dir.path());
    launch(&task, &server.url("/"));
    let pids = chromium_pids(profiles.path());
    let started = Instant::now();
    let typed = act(&task, json!({"action": "type", "text": "a".repeat(200_000)}));
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    assert_eq!(typed.status, ResultStatus::Error, "{}", model_text(&typed));
    assert_all_gone(&pids, "after the call timed out");
    let after = model_text(&act(&task, json!({"action": "scroll_down"})));
    assert!(after.contains("Browser is not launched."), "{after}");
}

/// Launched at the workspace directory itself (Chromium's listing), the model clicks "[parent directory]":
/// the listing of the directory above is not opened.
#[test]
fn the_workspace_listing_does_not_lead_up() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    std::fs::write(dir.path().join("a.html"), "a").unwrap();
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    let listing = launch(&task, &format!("{}/", file_url(dir.path())));
    assert_eq!(listing.status, ResultStatus::Success, "{}", model_text(&listing));
    // "[parent directory]" is at (88, 88) of Chromium's listing page.
    let up = act(&task, json!({"action": "click", "coordinate": "88,88"}));
    let parent = dir.path().parent().unwrap().display().to_string();
    let text = parts(&up).0;
    assert!(text.contains(&format!("[Error] Blocked file://{parent}/")), "{text}");
    act(&task, json!({"action": "close"}));
}

// ---------------------------------------------------------------------------------------------------------
// 2. The launch URL.

#[test]
fn launch_refuses_other_schemes_before_starting_a_browser() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    for url in [
        "javascript:alert(1)",
        "data:text/html,<h1>x</h1>",
        "about:blank",
        "chrome://version",
        "chrome://settings",
        "devtools://devtools/bundled/inspector.html",
        "view-source:file:///etc/passwd",
        "filesystem:file:///temporary/x",
        "blob:file:///0000",
        "chrome-extension://abc/x.html",
        "ws://127.0.0.1:1/",
        "ftp://127.0.0.1/",
        "localhost:3000",
        "/etc/passwd",
        "http://127.0.0.1/\u{7}x",
        "http://127.0.0.1/a\tb",
    ] {
        let refused = launch(&task, url);
        assert_eq!(refused.status, ResultStatus::Error, "{url}: {}", model_text(&refused));
        assert!(model_text(&refused).contains("Cannot"), "{url}: {}", model_text(&refused));
    }
    assert!(chromium_pids(profiles.path()).is_empty(), "a refused launch started a browser");
}

/// What the approval shows and what the host opens must be the same file: a URL the plugin does not read as
/// a file URL (so the prompt names no path) must not open a file either.
#[test]
fn the_approved_path_is_the_opened_path() {
    let _turn = crate::util::browser_turn();
    let (dir, secrets, profiles) = (workspace(), Secrets::new(), profiles());
    let recorder = Recorder::default();
    let runtime = shipped().config(browser_config(profiles.path(), "")).approver(recorder.clone()).build().unwrap();
    let task = browser_task(&runtime, dir.path());
    let secret = secrets.url("secret.html");
    let path = secrets.path("secret.html").display().to_string();
    let without_scheme = secret.trim_start_matches("file:").to_owned();
    for url in [
        format!("\u{a0}{secret}"),
        format!("\u{2003}{secret}\u{3000}"),
        format!("fi\tle:{without_scheme}"),
        format!("file\n:{without_scheme}"),
        format!("FILE:{without_scheme}"),
        format!("file://localhost{}", without_scheme.trim_start_matches("//")),
        format!(" \t{secret}\r\n"),
    ] {
        recorder.prompts.lock().unwrap().clear();
        let result = launch(&task, &url);
        let prompts = recorder.prompts.lock().unwrap().clone();
        let named = prompts.iter().any(|p| p.paths.iter().any(|p| p == &path));
        let opened = parts(&result).0.contains(LEAK);
        assert!(
            named || !opened,
            "{url:?} opened {path} but the approval named no path: {prompts:?}\n{}",
            model_text(&result)
        );
        // Refused outright, the plugin's reading and the host's agreeing: no path, no file.
        if !named {
            assert_eq!(result.status, ResultStatus::Error, "{url:?}: {}", model_text(&result));
        }
    }
    act(&task, json!({"action": "close"}));
}

/// The URL is shown to a person in the approval prompt: escaped, on one line, however long.
#[test]
fn the_launch_prompt_is_escaped_and_huge_urls_do_not_break_anything() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    let server = Server::start(vec![("/", html("<body>ok</body>"))]);
    let recorder = Recorder::default();
    let runtime = shipped().config(browser_config(profiles.path(), "")).approver(recorder.clone()).build().unwrap();
    let task = browser_task(&runtime, dir.path());
    let nasty = format!("{}?\u{1b}[2J\u{1b}]0;owned\u{7}\nApprove? [y]\r\u{202e}txt.exe\u{0}", server.url("/"));
    let shown = launch(&task, &nasty);
    let prompts = recorder.prompts.lock().unwrap().clone();
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    let message = &prompts[0].message;
    for bad in ['\u{1b}', '\n', '\r', '\u{7}', '\u{202e}', '\u{0}'] {
        assert!(!message.contains(bad), "{bad:?} shown raw: {message:?}");
    }
    assert!(message.contains("Cline wants to use a browser and launch"), "{message}");
    // Whatever the page made of it, the call ended with an answer.
    assert!(matches!(shown.status, ResultStatus::Success | ResultStatus::Error), "{}", model_text(&shown));

    // A 1 MB URL (Chromium's limit is 2 MB) and a 3 MB one: an answer each, in bounded time.
    for size in [1 << 20, 3 << 20] {
        let long = format!("{}?{}", server.url("/"), "a".repeat(size));
        let started = Instant::now();
        let result = launch(&task, &long);
        assert!(started.elapsed() < Duration::from_secs(20), "{size}: {:?}", started.elapsed());
        assert!(matches!(result.status, ResultStatus::Success | ResultStatus::Error), "{size}");
        assert!(model_text(&result).len() < 64 * 1024 + 8192, "{size}: the URL came back into the result");
    }
    act(&task, json!({"action": "close"}));
    assert_all_gone(&chromium_pids(profiles.path()), "after close");
}

// ---------------------------------------------------------------------------------------------------------
// 3. Resources.

#[test]
fn a_console_flood_is_capped() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    let server = Server::start(vec![
        (
            "/burst",
            html("<script>for (let i = 0; i < 5000; i++) console.log('flood line ' + i + ' ' + 'x'.repeat(1000))</script>"),
        ),
        ("/forever", html("<script>setInterval(() => { for (let i = 0; i < 100; i++) console.log('more ' + 'y'.repeat(500)) }, 1)</script>")),
    ]);
    let runtime = runtime(profiles.path(), "log_wait_ms = 1500");
    let task = browser_task(&runtime, dir.path());
    for path in ["/burst", "/forever"] {
        let started = Instant::now();
        let shown = launch(&task, &server.url(path));
        let elapsed = started.elapsed();
        assert_eq!(shown.status, ResultStatus::Success, "{path}: {}", model_text(&shown));
        let text = parts(&shown).0;
        assert!(text.len() < 64 * 1024 + 2048, "{path}: {} bytes of logs", text.len());
        assert!(
            text.contains("more console lines not shown: over 65536 bytes]"),
            "{path}: {}",
            &text[text.len() - 300..]
        );
        assert!(elapsed < Duration::from_secs(30), "{path}: {elapsed:?}");
    }
    // The flood goes on between actions: the next action's logs are capped too, and it ends.
    let scrolled = act(&task, json!({"action": "scroll_down"}));
    assert!(parts(&scrolled).0.len() < 64 * 1024 + 2048);
    act(&task, json!({"action": "close"}));
}

/// One console message of 64 MiB: none of it reaches the model, and the session goes on.
///
/// OPEN (hardening): chromiumoxide reads DevTools messages without a size limit (its WebSocket config sets
/// none), so the host holds such a message while it parses it: about 4.5 times its size at the peak (590 MB
/// for 120 MiB, measured). Chromium itself drops messages somewhere between 120 and 256 MiB, which bounds
/// it; nothing of it is kept.
#[test]
fn one_huge_console_message() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    let server = Server::start(vec![(
        "/",
        html("<script>console.log('z'.repeat(64 * 1024 * 1024)); console.log('after')</script>"),
    )]);
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    let shown = launch(&task, &server.url("/"));
    assert_eq!(shown.status, ResultStatus::Success, "{}", model_text(&shown));
    let text = parts(&shown).0;
    assert!(text.len() < 64 * 1024 + 2048, "{} bytes", text.len());
    assert!(!text.contains("zzzzzzzz"), "part of the huge line reached the model");
    let scrolled = act(&task, json!({"action": "scroll_down"}));
    assert_eq!(scrolled.status, ResultStatus::Success, "{}", model_text(&scrolled));
    act(&task, json!({"action": "close"}));
}

/// A page that never yields its main thread: the action ends with an error within the command timeout,
/// the browser is closed and gone. (The screenshot used to wait chromiumoxide's fixed 30 s whatever
/// `command_timeout_ms` said: 32 s here.)
#[test]
fn an_endless_script_ends_the_action_and_the_browser() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    let server = Server::start(vec![
        ("/", html("<body>ok</body>")),
        ("/spin", html("<body style=background:#00f><p>spinning</p><script>setTimeout(() => { while (true) {} }, 50)</script></body>")),
        ("/spin-now", html("<script>while (true) {}</script>")),
        ("/reload", html("<body>again<script>location.reload()</script></body>")),
    ]);
    let runtime = runtime(profiles.path(), "command_timeout_ms = 2000\nnavigation_timeout_ms = 1500");
    let task = browser_task(&runtime, dir.path());
    for path in ["/spin-now", "/spin"] {
        let started = Instant::now();
        let shown = launch(&task, &server.url(path));
        let elapsed = started.elapsed();
        // The navigation wait (1.5 s), the console wait, then two commands of at most 2 s each.
        assert!(elapsed < Duration::from_secs(12), "{path}: {elapsed:?}");
        assert_eq!(shown.status, ResultStatus::Error, "{path}: {}", model_text(&shown));
        assert!(
            model_text(&shown)
                .contains("Error executing browser_action: Failed to take screenshot: Request timed out."),
            "{}",
            model_text(&shown)
        );
        let pids = chromium_pids(profiles.path());
        assert_all_gone(&pids, "after the endless script");
        let after = model_text(&act(&task, json!({"action": "scroll_down"})));
        assert!(after.contains("Browser is not launched."), "{after}");
    }
    // A page that reloads itself for ever: a screenshot may or may not be had between two loads (none can
    // be for the whole command timeout); either way the action ends in bounded time.
    let started = Instant::now();
    let reloading = launch(&task, &server.url("/reload"));
    assert!(started.elapsed() < Duration::from_secs(12), "{:?}", started.elapsed());
    assert!(matches!(reloading.status, ResultStatus::Success | ResultStatus::Error), "{}", model_text(&reloading));
    act(&task, json!({"action": "close"}));
    assert!(chromium_pids(profiles.path()).is_empty());
}

/// A renderer that runs out of memory (its heap capped by the user's own `args`): an answer, no hang.
#[test]
fn a_page_that_exhausts_its_memory() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    let server = Server::start(vec![(
        "/",
        html("<script>const a = []; while (true) a.push(new Array(100000).fill({x: 1}).map((v, i) => ({i})))</script>"),
    )]);
    let runtime = runtime(
        profiles.path(),
        "args = [\"--js-flags=--max-old-space-size=64\"]\ncommand_timeout_ms = 3000\nnavigation_timeout_ms = 3000",
    );
    let task = browser_task(&runtime, dir.path());
    let started = Instant::now();
    let shown = launch(&task, &server.url("/"));
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    // The renderer crashed: no screenshot, an error, and the session is closed.
    assert_eq!(shown.status, ResultStatus::Error, "{}", model_text(&shown));
    assert!(model_text(&shown).contains("Failed to take screenshot"), "{}", model_text(&shown));
    let after = model_text(&act(&task, json!({"action": "scroll_down"})));
    assert!(after.contains("Browser is not launched."), "{after}");
    assert_all_gone(&chromium_pids(profiles.path()), "after close");
}

/// Dialogs in a loop, a `beforeunload` that begs, and a page that closes itself.
#[test]
fn dialog_loops_beforeunload_and_window_close() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    let server = Server::start(vec![
        ("/", html("<body>home</body>")),
        ("/alerts", html("<script>let i = 0; while (true) { alert('alert ' + i++); if (i % 3 == 0) confirm('c'); if (i % 5 == 0) prompt('p') }</script>")),
        (
            "/stay",
            html(r#"<body style="margin:0"><a href="/" style="display:block;width:900px;height:300px">leave</a>
<script>addEventListener('beforeunload', e => { e.preventDefault(); e.returnValue = 'stay'; return 'stay' })</script></body>"#),
        ),
        ("/close", html("<body>closing<script>setTimeout(() => window.close(), 10); console.log('closing')</script></body>")),
    ]);
    let runtime = runtime(profiles.path(), "command_timeout_ms = 2000\nnavigation_timeout_ms = 1500");
    let task = browser_task(&runtime, dir.path());
    // Each dialog is dismissed as it opens, and the next opens at once: the page never settles, so the
    // action ends on its bounds (an error when the screenshot cannot be had), its logs capped.
    let started = Instant::now();
    let alerts = launch(&task, &server.url("/alerts"));
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    assert!(model_text(&alerts).len() < 64 * 1024 + 4096);

    // A begging beforeunload does not hold a navigation the model clicked.
    let stay = launch(&task, &server.url("/stay"));
    assert_eq!(stay.status, ResultStatus::Success, "{}", model_text(&stay));
    let left = act(&task, json!({"action": "click", "coordinate": "100,100"}));
    assert_eq!(left.status, ResultStatus::Success, "{}", model_text(&left));
    assert!(parts(&left).0.contains("[dialog] beforeunload"), "{}", parts(&left).0);

    // window.close() is refused by Chromium (the page has history): the session goes on.
    let closing = launch(&task, &server.url("/close"));
    assert_eq!(closing.status, ResultStatus::Success, "{}", model_text(&closing));
    let after = act(&task, json!({"action": "scroll_down"}));
    assert_eq!(after.status, ResultStatus::Success, "{}", model_text(&after));
    act(&task, json!({"action": "close"}));
    assert_all_gone(&chromium_pids(profiles.path()), "after close");
}

/// A DOM that grows without end: the HTML-stability wait gives up in bounded time.
#[test]
fn an_ever_growing_dom_is_waited_for_a_bounded_time() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    let server = Server::start(vec![(
        "/",
        html("<body><script>const chunk = 'g'.repeat(1 << 20); setInterval(() => { const p = document.createElement('p'); p.textContent = chunk; document.body.appendChild(p) }, 20)</script></body>"),
    )]);
    let runtime =
        runtime(profiles.path(), "stable_timeout_ms = 1000\nstable_interval_ms = 10\ncommand_timeout_ms = 3000");
    let task = browser_task(&runtime, dir.path());
    let started = Instant::now();
    let shown = launch(&task, &server.url("/"));
    let elapsed = started.elapsed();
    // The page loads at once; then at most the stable wait (1 s), the console wait (0.8 s) and a screenshot
    // (3 s). Counting checks instead, each reading megabytes of HTML, took 17 s.
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}: {}", model_text(&shown));
    act(&task, json!({"action": "close"}));
}

// ---------------------------------------------------------------------------------------------------------
// 4. Processes.

#[test]
fn launches_in_a_row_never_leave_more_than_one_browser() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    let server = Server::start(vec![("/", html("<body>ok</body>"))]);
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    let mut all = Vec::new();
    for _ in 0..5 {
        let shown = launch(&task, &server.url("/"));
        assert_eq!(shown.status, ResultStatus::Success, "{}", model_text(&shown));
        let mains = browser_mains(profiles.path());
        assert_eq!(mains.len(), 1, "browsers running: {mains:?}");
        all.extend(chromium_pids(profiles.path()));
    }
    act(&task, json!({"action": "close"}));
    assert_all_gone(&all, "after close");
    // Every profile directory went with its browser.
    let left: Vec<_> = std::fs::read_dir(profiles.path()).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "profiles left: {left:?}");
}

/// Browsers open in many tasks at once, then the host drops its runtime and its task handles: none is left.
///
/// OPEN: `Runtime::drop` does not close the browsers (it kills the commands' processes only), so while the
/// host still holds a task handle after dropping its runtime, that task's Chromium runs on; it goes when
/// the last handle does. Asserted here: nothing is left once both are gone.
#[test]
fn dropping_the_runtime_with_browsers_open_in_many_tasks_leaves_none() {
    let _turn = crate::util::browser_turn();
    let (profiles, server) = (profiles(), Server::start(vec![("/", html("<body>ok</body>"))]));
    let dirs: Vec<_> = (0..3).map(|_| workspace()).collect();
    let runtime = runtime(profiles.path(), "");
    let tasks: Vec<TaskHandle> = dirs.iter().map(|dir| browser_task(&runtime, dir.path())).collect();
    let url = server.url("/");
    std::thread::scope(|scope| {
        for task in &tasks {
            let url = url.clone();
            scope.spawn(move || {
                let shown = launch(task, &url);
                assert_eq!(shown.status, ResultStatus::Success, "{}", model_text(&shown));
            });
        }
    });
    assert_eq!(browser_mains(profiles.path()).len(), 3);
    let pids = chromium_pids(profiles.path());
    drop(runtime);
    drop(tasks);
    assert_all_gone(&pids, "after the runtime and its task handles were dropped");
}

#[test]
fn a_browser_killed_under_the_session() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    let server = Server::start(vec![("/", html("<body>ok</body>"))]);
    let runtime = runtime(profiles.path(), "command_timeout_ms = 3000");
    let task = browser_task(&runtime, dir.path());
    launch(&task, &server.url("/"));
    let pids = chromium_pids(profiles.path());
    let mains = browser_mains(profiles.path());
    assert_eq!(mains.len(), 1);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(mains[0]), nix::sys::signal::Signal::SIGKILL).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    let after = act(&task, json!({"action": "scroll_down"}));
    assert_eq!(after.status, ResultStatus::Error, "{}", model_text(&after));
    assert!(model_text(&after).contains("Error executing browser_action: "), "{}", model_text(&after));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_all_gone(&pids, "after the killed browser's session failed");
    let again = model_text(&act(&task, json!({"action": "scroll_down"})));
    assert!(again.contains("Browser is not launched."), "{again}");
    // A new launch works.
    let relaunched = launch(&task, &server.url("/"));
    assert_eq!(relaunched.status, ResultStatus::Success, "{}", model_text(&relaunched));
    act(&task, json!({"action": "close"}));
    assert!(chromium_pids(profiles.path()).is_empty());
    // Both profile directories went with their browsers.
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_dir(profiles.path()).unwrap().next().is_some() {
        assert!(Instant::now() < deadline, "a profile directory was left");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The runtime dropped while a launch is in flight: the call ends at once, and the browser is gone by the
/// time the action's own navigation wait is over.
///
/// OPEN (as above): the browser is not killed at the drop itself but when the in-flight action lets go of
/// the runtime's last reference, up to `navigation_timeout_ms` (7 s by default) later.
#[test]
fn the_runtime_dropped_during_an_action() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    let server = Server::start(vec![("/hang", html("<body><img src=/never></body>"))]);
    let runtime = runtime(profiles.path(), "navigation_timeout_ms = 3000");
    let task = browser_task(&runtime, dir.path());
    let url = server.url("/hang");
    let worker = std::thread::spawn(move || launch(&task, &url).status);
    let deadline = Instant::now() + Duration::from_secs(20);
    while chromium_pids(profiles.path()).is_empty() {
        assert!(Instant::now() < deadline, "Chromium never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let pids = chromium_pids(profiles.path());
    let dropped = Instant::now();
    drop(runtime);
    let status = worker.join().unwrap();
    assert!(dropped.elapsed() < Duration::from_secs(2), "the call in flight took {:?} to end", dropped.elapsed());
    assert_eq!(status, ResultStatus::Error);
    assert_all_gone(&pids, "after the runtime was dropped mid-action");
}

// ---------------------------------------------------------------------------------------------------------
// 5. Concurrency.

#[test]
fn concurrent_actions_and_launch_close_races_on_one_task() {
    let _turn = crate::util::browser_turn();
    let (dir, profiles) = (workspace(), profiles());
    let server = Server::start(vec![("/", html("<body style=height:5000px>ok</body>"))]);
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    launch(&task, &server.url("/"));
    std::thread::scope(|scope| {
        let a = scope.spawn(|| act(&task, json!({"action": "scroll_down"})));
        let b = scope.spawn(|| act(&task, json!({"action": "click", "coordinate": "10,10"})));
        for result in [a.join().unwrap(), b.join().unwrap()] {
            assert_eq!(result.status, ResultStatus::Success, "{}", model_text(&result));
        }
    });
    let url = server.url("/");
    for round in 0..2 {
        std::thread::scope(|scope| {
            let a = scope.spawn(|| launch(&task, &url));
            let b = scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(50 * round));
                act(&task, json!({"action": "close"}))
            });
            let c = scope.spawn(|| launch(&task, &url));
            let _ = (a.join().unwrap(), b.join().unwrap(), c.join().unwrap());
        });
        let mains = browser_mains(profiles.path());
        assert!(mains.len() <= 1, "round {round}: browsers running: {mains:?}");
    }
    // Four launches at once, a close among them: whichever launch lost its entry while Chromium started says
    // so and leaves no browser; at most one is left, and it is the task's.
    std::thread::scope(|scope| {
        let launches = [(); 4].map(|()| scope.spawn(|| launch(&task, &url)));
        let close = scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            act(&task, json!({"action": "close"}))
        });
        assert_eq!(close.join().unwrap().status, ResultStatus::Success);
        for result in launches.into_iter().map(|l| l.join().unwrap()) {
            if result.status != ResultStatus::Success {
                let text = model_text(&result);
                assert!(text.contains("The browser was closed while this action ran"), "{text}");
            }
        }
    });
    let mains = browser_mains(profiles.path());
    assert!(mains.len() <= 1, "four launches: browsers running: {mains:?}");
    // An action sent beside a launch finds no browser yet (or the launched one): it does not close the
    // launch's, which stays open for the next action.
    act(&task, json!({"action": "close"}));
    std::thread::scope(|scope| {
        let launched = scope.spawn(|| launch(&task, &url));
        let click = scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            act(&task, json!({"action": "click", "coordinate": "10,10"}))
        });
        let click = click.join().unwrap();
        if click.status != ResultStatus::Success {
            assert!(model_text(&click).contains("Browser is not launched"), "{}", model_text(&click));
        }
        let launched = launched.join().unwrap();
        assert_eq!(launched.status, ResultStatus::Success, "{}", model_text(&launched));
    });
    let after = act(&task, json!({"action": "scroll_down"}));
    assert_eq!(after.status, ResultStatus::Success, "{}", model_text(&after));
    act(&task, json!({"action": "close"}));
    assert_all_gone(&chromium_pids(profiles.path()), "after the races and a close");
}

// ---------------------------------------------------------------------------------------------------------
// 6. Config.

#[test]
fn an_untrusted_workspace_cannot_choose_the_browser() {
    let _turn = crate::util::browser_turn();
    let (ws, home) = (workspace(), workspace());
    std::fs::create_dir_all(ws.path().join(".toolshed")).unwrap();
    std::fs::write(
        ws.path().join(".toolshed/config.toml"),
        "[browser]\nexecutable = \"/bin/sh\"\nargs = [\"-c\", \"touch /tmp/pwned\"]\nremote_url = \"http://evil.example:9222\"\nprofile_dir = \"/\"\nviewport_width = 4096\nviewport_height = 16\nscreenshot_format = \"png\"\ncommand_timeout_ms = 10\nnavigation_timeout_ms = 999999999\n",
    )
    .unwrap();
    let loaded = toolshed::ConfigLoader::new()
        .user_file(Some(home.path().join("config.toml")))
        .env(Vec::new())
        .workspace(Some(ws.path().to_path_buf()))
        .load()
        .unwrap();
    let browser = &loaded.config.browser;
    assert!(!loaded.workspace_trusted);
    assert_eq!(browser.executable, None);
    assert!(browser.args.is_empty());
    assert_eq!(browser.remote_url, None);
    assert_eq!(browser.profile_dir, None);
    assert_eq!((browser.viewport_width, browser.viewport_height), (900, 600));
    assert_eq!(browser.command_timeout_ms, 10, "a shorter wait is taken");
    assert_eq!(browser.navigation_timeout_ms, 7_000, "a longer one is not");
    let warnings = loaded.warnings.join("\n");
    for key in [
        "browser.executable",
        "browser.args",
        "browser.remote_url",
        "browser.profile_dir",
        "browser.viewport_width",
        "browser.navigation_timeout_ms",
    ] {
        assert!(warnings.contains(key), "{key} not warned about:\n{warnings}");
    }
}
