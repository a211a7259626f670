//! browser_action on a real headless Chromium (Debian's, which `cargo xtask test` installs) against pages served
//! on 127.0.0.1: screenshots, clicks, typing, scrolling, Cline's texts, the workspace rules for `file://`, and
//! that no Chromium process outlives its session (found by pid, through the profile directory on its command
//! line).

use crate::util::{block_on, shipped, workspace};
use base64::Engine as _;
use serde_json::json;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};
use toolshed::{Block, Config, ResultStatus, Runtime, TaskContext, TaskHandle, ToolResult, ToolUse};

/// Cline's text before the console logs of every action with a screenshot.
const EXECUTED: &str =
    "The browser action has been executed. The console logs and screenshot have been captured for your analysis.";

/// The pages the tests browse. `/hang` holds an image request forever, so its load never finishes.
fn page(path: &str) -> Option<String> {
    let html = match path {
        "/" => r#"<html><body style="margin:0;background:#fff">
<button id="b" style="position:absolute;left:100px;top:100px;width:200px;height:100px"
 onclick="document.body.style.background='#ff0000'; console.log('button clicked'); console.warn('careful')">Go</button>
</body></html>"#
            .to_owned(),
        "/input" => r#"<html><body><input id="i" autofocus style="width:400px"
 oninput="console.log('value=' + this.value)"></body></html>"#
            .to_owned(),
        "/long" => r#"<html><body style="margin:0;height:5000px"
 onscroll=""><script>addEventListener('scroll', () => console.log('scrollY=' + Math.round(scrollY)));</script>
<p>top</p></body></html>"#
            .to_owned(),
        "/hang" => r#"<html><body><p>loading forever</p><img src="/never"></body></html>"#.to_owned(),
        "/error" => r#"<html><body><script>undefinedFunction();</script></body></html>"#.to_owned(),
        "/dialog" => r#"<html><body><script>alert('hello from the page'); console.log('confirmed=' + confirm('sure?'));
window.open('/'); console.log('after the dialogs')</script></body></html>"#
            .to_owned(),
        _ => return None,
    };
    Some(html)
}

/// A tiny HTTP server on 127.0.0.1 for the test's life: one thread per connection; `/never` never answers.
struct Server {
    port: u16,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || serve(stream));
            }
        });
        Server { port }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

fn serve(mut stream: TcpStream) {
    let mut request = Vec::new();
    let mut buffer = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buffer[..n]),
        }
    }
    let head = String::from_utf8_lossy(&request);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    if path == "/never" {
        // Hold the request open until the browser goes away.
        let _ = stream.read(&mut buffer);
        return;
    }
    let (status, body) = match page(&path) {
        Some(body) => ("200 OK", body),
        None => ("404 Not Found", "not found".to_owned()),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// A runtime whose browsers keep their profiles under `profiles` (so the test finds its own Chromium by pid),
/// with short waits, approving every ask.
fn runtime(profiles: &Path, extra: &str) -> Runtime {
    let chromium = std::env::var("TOOLSHED_TEST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    assert!(
        Path::new(&chromium).is_file(),
        "{chromium} not found: the browser tests need Chromium; `cargo xtask test` installs Debian's chromium"
    );
    let defaults = [
        "navigation_timeout_ms = 5000",
        "stable_timeout_ms = 1000",
        "stable_interval_ms = 50",
        "log_quiet_ms = 100",
        "log_wait_ms = 1000",
        "network_probe_ms = 100",
        "scroll_delay_ms = 100",
    ];
    // The test's own keys win over these.
    let keys: Vec<&str> = defaults
        .into_iter()
        .filter(|line| line.split_once(" = ").is_none_or(|(key, _)| !extra.contains(key)))
        .collect();
    let config = format!(
        "[browser]\nexecutable = \"{chromium}\"\nprofile_dir = \"{}\"\n{}\n{extra}\n",
        profiles.display(),
        keys.join("\n")
    );
    shipped().config(Config::from_toml_str(&config).unwrap()).yes(true).build().unwrap()
}

pub(crate) fn browser_task(runtime: &Runtime, dir: &Path) -> TaskHandle {
    runtime.task(TaskContext::new(dir).with_images(true).with_browser(true))
}

pub(crate) fn act(task: &TaskHandle, input: serde_json::Value) -> ToolResult {
    block_on(task.execute(ToolUse::new("b1", "browser_action", input)))
}

/// The result's text blocks joined, and its image (media type, bytes).
pub(crate) fn parts(result: &ToolResult) -> (String, Option<(String, Vec<u8>)>) {
    let mut text = String::new();
    let mut image = None;
    for block in &result.blocks {
        match block {
            Block::Text { text: t } => text.push_str(t),
            Block::Image { media_type, data } => {
                image = Some((media_type.clone(), base64::engine::general_purpose::STANDARD.decode(data).unwrap()));
            }
        }
    }
    (text, image)
}

/// The model-facing text of a result (with its header, as the model reads it).
pub(crate) fn model_text(result: &ToolResult) -> String {
    result.to_model_text()
}

/// The pids of live processes whose command line names a path under `profiles`: this test's Chromium.
fn chromium_pids(profiles: &Path) -> Vec<i32> {
    let needle = profiles.to_string_lossy().into_owned();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        if String::from_utf8_lossy(&cmdline).contains(&needle) {
            pids.push(pid);
        }
    }
    pids
}

/// Whether `pid` is gone (or a zombie nobody will reap: its parent is not us).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Waits (one generous bound) until every pid is gone.
fn assert_all_gone(pids: &[i32], what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !pids.iter().all(|&pid| gone(pid)) {
        assert!(Instant::now() < deadline, "{what}: Chromium processes left: {pids:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn profiles() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("browser-profiles-").tempdir().unwrap()
}

/// A decoded PNG screenshot: width, height and RGB(A) pixels.
pub(crate) fn pixels(png_bytes: &[u8]) -> (u32, u32, Vec<u8>, usize) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buffer).unwrap();
    let channels = info.color_type.samples();
    buffer.truncate(info.buffer_size());
    (info.width, info.height, buffer, channels)
}

fn pixel(decoded: &(u32, u32, Vec<u8>, usize), x: u32, y: u32) -> [u8; 3] {
    let (width, _, data, channels) = decoded;
    let at = ((y * width + x) as usize) * channels;
    [data[at], data[at + 1], data[at + 2]]
}

#[test]
fn launch_answers_with_a_900x600_screenshot_and_close_leaves_no_process() {
    let _turn = crate::util::browser_turn();
    let (server, dir, profiles) = (Server::start(), workspace(), profiles());
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    let launched = act(&task, json!({"action": "launch", "url": server.url("/")}));
    assert_eq!(launched.status, ResultStatus::Success, "{}", model_text(&launched));
    let (text, image) = parts(&launched);
    assert!(text.starts_with(EXECUTED), "{text}");
    assert!(text.contains("Console logs:\n(No new logs)"), "{text}");
    assert!(text.contains("you MUST first close this browser"), "{text}");
    let (media_type, bytes) = image.expect("a screenshot");
    assert_eq!(media_type, "image/webp");
    let size = imagesize::blob_size(&bytes).unwrap();
    assert_eq!((size.width, size.height), (900, 600));
    let pids = chromium_pids(profiles.path());
    assert!(!pids.is_empty(), "no Chromium found under {}", profiles.path().display());
    // Chromium's singleton socket lives in a temporary directory of its own, under a TMPDIR the session owns:
    // otherwise every killed browser leaves one behind in the machine's /tmp.
    let profile = std::fs::read_dir(profiles.path()).unwrap().flatten().next().expect("a profile").path();
    let socket = std::fs::read_link(profile.join("SingletonSocket")).expect("Chromium's singleton socket link");
    let scratch = socket.ancestors().nth(2).expect("the browser's TMPDIR").to_path_buf();
    let named = scratch.file_name().unwrap().to_string_lossy().into_owned();
    assert!(named.starts_with("toolshed-chromium-"), "{} is not the session's own TMPDIR", socket.display());

    let closed = act(&task, json!({"action": "close"}));
    assert_eq!(
        model_text(&closed),
        "[browser_action for 'close'] Result:\nThe browser has been closed. You may now proceed to using other tools."
    );
    assert_all_gone(&pids, "after close");
    let left: Vec<_> = std::fs::read_dir(profiles.path()).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "the profile outlived its browser: {left:?}");
    assert!(!scratch.exists(), "the browser's TMPDIR {} outlived it", scratch.display());
}

#[test]
fn a_profile_directory_with_a_long_path_still_launches() {
    let _turn = crate::util::browser_turn();
    let (server, dir, profiles) = (Server::start(), workspace(), profiles());
    // Past the 107 bytes a socket's path may hold once Chromium's own names are added: nothing Chromium needs a
    // socket for may live under it.
    let long = profiles.path().join("a".repeat(60)).join("b".repeat(60));
    std::fs::create_dir_all(&long).unwrap();
    let runtime = runtime(&long, "");
    let task = browser_task(&runtime, dir.path());
    let launched = act(&task, json!({"action": "launch", "url": server.url("/")}));
    assert_eq!(launched.status, ResultStatus::Success, "{}", model_text(&launched));
    let pids = chromium_pids(&long);
    act(&task, json!({"action": "close"}));
    assert_all_gone(&pids, "after close");
}

#[test]
fn a_click_changes_the_page_seen_in_the_next_screenshot_and_the_console() {
    let _turn = crate::util::browser_turn();
    let (server, dir, profiles) = (Server::start(), workspace(), profiles());
    let runtime = runtime(profiles.path(), "screenshot_format = \"png\"");
    let task = browser_task(&runtime, dir.path());
    let before = parts(&act(&task, json!({"action": "launch", "url": server.url("/")}))).1.unwrap();
    assert_eq!(before.0, "image/png");
    let before = pixels(&before.1);
    assert_eq!((before.0, before.1), (900, 600));
    assert_eq!(pixel(&before, 20, 20), [255, 255, 255], "the page starts white");

    let clicked = act(&task, json!({"action": "click", "coordinate": "200,150"}));
    let (text, image) = parts(&clicked);
    assert!(text.contains("Console logs:\nbutton clicked\n[warn] careful\n"), "{text}");
    let after = pixels(&image.unwrap().1);
    assert_eq!(pixel(&after, 20, 20), [255, 0, 0], "the click turned the page red");

    // A click somewhere harmless logs nothing new.
    let quiet = parts(&act(&task, json!({"action": "click", "coordinate": "800,500"}))).0;
    assert!(quiet.contains("Console logs:\n(No new logs)"), "{quiet}");
    let pids = chromium_pids(profiles.path());
    drop(task);
    assert_all_gone(&pids, "after the task ended");
}

#[test]
fn typing_goes_into_the_focused_input() {
    let _turn = crate::util::browser_turn();
    let (server, dir, profiles) = (Server::start(), workspace(), profiles());
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    act(&task, json!({"action": "launch", "url": server.url("/input")}));
    act(&task, json!({"action": "click", "coordinate": "100,15"}));
    let typed = parts(&act(&task, json!({"action": "type", "text": "hé!"}))).0;
    // One input event per character; é is inserted as text, not a key of the US layout.
    assert!(typed.contains("value=h\nvalue=hé\nvalue=hé!"), "{typed}");
    act(&task, json!({"action": "close"}));
}

#[test]
fn scrolling_moves_the_page_by_600_pixels_each_way() {
    let _turn = crate::util::browser_turn();
    let (server, dir, profiles) = (Server::start(), workspace(), profiles());
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    act(&task, json!({"action": "launch", "url": server.url("/long")}));
    let down = parts(&act(&task, json!({"action": "scroll_down"}))).0;
    assert!(down.contains("scrollY=600"), "{down}");
    let down = parts(&act(&task, json!({"action": "scroll_down"}))).0;
    assert!(down.contains("scrollY=1200"), "{down}");
    let up = parts(&act(&task, json!({"action": "scroll_up"}))).0;
    assert!(up.contains("scrollY=600"), "{up}");
    act(&task, json!({"action": "close"}));
}

#[test]
fn a_page_that_never_finishes_loading_is_shown_after_the_navigation_timeout() {
    let _turn = crate::util::browser_turn();
    let (server, dir, profiles) = (Server::start(), workspace(), profiles());
    // Cline's goto gives up after its timeout and shows the page as it is, without an error line.
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    let hung = act(&task, json!({"action": "launch", "url": server.url("/hang")}));
    assert_eq!(hung.status, ResultStatus::Success, "{}", model_text(&hung));
    let (text, image) = parts(&hung);
    assert!(text.starts_with(EXECUTED) && text.contains("(No new logs)"), "{text}");
    assert!(image.is_some());
    // The session is still usable.
    let scrolled = act(&task, json!({"action": "scroll_down"}));
    assert_eq!(scrolled.status, ResultStatus::Success, "{}", model_text(&scrolled));
    act(&task, json!({"action": "close"}));
}

#[test]
fn page_errors_and_failed_navigations_are_log_lines() {
    let _turn = crate::util::browser_turn();
    let (server, dir, profiles) = (Server::start(), workspace(), profiles());
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    let errored = parts(&act(&task, json!({"action": "launch", "url": server.url("/error")}))).0;
    assert!(errored.contains("[Page Error] ReferenceError: undefinedFunction is not defined"), "{errored}");
    // Nothing listens on port 9 of 127.0.0.1: the navigation fails, the tool does not.
    let refused = act(&task, json!({"action": "launch", "url": "http://127.0.0.1:9/"}));
    assert_eq!(refused.status, ResultStatus::Success, "{}", model_text(&refused));
    assert!(parts(&refused).0.contains("[Error] "), "{}", parts(&refused).0);
    act(&task, json!({"action": "close"}));
}

/// A dialog would block the page until someone answered it: each is dismissed and shown as a log line.
#[test]
fn dialogs_are_dismissed_and_logged() {
    let _turn = crate::util::browser_turn();
    let (server, dir, profiles) = (Server::start(), workspace(), profiles());
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    let shown = act(&task, json!({"action": "launch", "url": server.url("/dialog")}));
    assert_eq!(shown.status, ResultStatus::Success, "{}", model_text(&shown));
    let text = parts(&shown).0;
    assert!(
        text.contains(
            "[dialog] alert: hello from the page\n[dialog] confirm: sure?\nconfirmed=false\nafter the dialogs"
        ),
        "{text}"
    );
    act(&task, json!({"action": "close"}));
}

#[test]
fn actions_before_launch_and_missing_parameters_get_clines_texts() {
    let _turn = crate::util::browser_turn();
    let (server, dir, profiles) = (Server::start(), workspace(), profiles());
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    let early = act(&task, json!({"action": "click", "coordinate": "1,1"}));
    assert_eq!(
        model_text(&early),
        "[browser_action for 'click'] Result:\nThe tool execution failed with the following error:\n<error>\nError executing browser_action: Browser is not launched. This may occur if the browser was automatically closed by a non-`browser_action` tool.\n</error>"
    );
    let no_url = model_text(&act(&task, json!({"action": "launch"})));
    assert!(
        no_url.contains("Missing value for required parameter 'url'. Please retry with complete response."),
        "{no_url}"
    );
    let unknown = model_text(&act(&task, json!({"action": "hover"})));
    assert!(unknown.contains("Missing value for required parameter 'action'."), "{unknown}");

    act(&task, json!({"action": "launch", "url": server.url("/")}));
    let pids = chromium_pids(profiles.path());
    assert!(!pids.is_empty());
    let no_coordinate = act(&task, json!({"action": "click"}));
    assert_eq!(no_coordinate.status, ResultStatus::Error);
    assert!(
        model_text(&no_coordinate).contains("Missing value for required parameter 'coordinate'."),
        "{}",
        model_text(&no_coordinate)
    );
    // Cline closes the browser on a missing parameter.
    assert_all_gone(&pids, "after a click without a coordinate");
    let after = model_text(&act(&task, json!({"action": "scroll_down"})));
    assert!(after.contains("Browser is not launched."), "{after}");
    // A coordinate that is no number is an error line beside the screenshot, as in Cline.
    act(&task, json!({"action": "launch", "url": server.url("/")}));
    let odd = parts(&act(&task, json!({"action": "click", "coordinate": "[450,300]"}))).0;
    assert!(odd.contains("[Error] Invalid coordinate"), "{odd}");
    act(&task, json!({"action": "close"}));
}

#[test]
fn another_tool_closes_the_browser_first() {
    let _turn = crate::util::browser_turn();
    let (server, dir, profiles) = (Server::start(), workspace(), profiles());
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    act(&task, json!({"action": "launch", "url": server.url("/")}));
    let pids = chromium_pids(profiles.path());
    assert!(!pids.is_empty());
    let read = block_on(task.execute(ToolUse::new("r1", "read_file", json!({"path": "a.txt"}))));
    assert_eq!(read.status, ResultStatus::Success);
    assert_all_gone(&pids, "after read_file");
    let click = model_text(&act(&task, json!({"action": "click", "coordinate": "1,1"})));
    assert!(click.contains("Browser is not launched."), "{click}");
}

#[test]
fn cancelling_mid_action_ends_the_call_and_the_browser() {
    let _turn = crate::util::browser_turn();
    let (server, dir, profiles) = (Server::start(), workspace(), profiles());
    // The navigation would wait a minute for a page that never loads.
    let runtime = runtime(profiles.path(), "navigation_timeout_ms = 60000");
    let task = browser_task(&runtime, dir.path());
    let canceller = task.clone();
    let watched = profiles.path().to_path_buf();
    let seen = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let pids = chromium_pids(&watched);
            if !pids.is_empty() {
                // Give the navigation a moment to be under way, then cancel.
                std::thread::sleep(Duration::from_millis(300));
                let pids = chromium_pids(&watched);
                canceller.cancel();
                return pids;
            }
            assert!(Instant::now() < deadline, "Chromium never started");
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let result = act(&task, json!({"action": "launch", "url": server.url("/hang")}));
    let pids = seen.join().unwrap();
    assert_eq!(result.status, ResultStatus::Error, "{}", model_text(&result));
    assert!(model_text(&result).contains("cancelled"), "{}", model_text(&result));
    assert_all_gone(&pids, "after cancellation");
}

/// A workspace page may load files of the workspace, never one outside it or one `.clineignore` blocks, even
/// when the page asks for it in a frame.
#[test]
fn file_urls_stay_inside_the_workspace_rules() {
    let _turn = crate::util::browser_turn();
    let (dir, outside, profiles) = (workspace(), workspace(), profiles());
    let secret = outside.path().join("secret.html");
    std::fs::write(&secret, "<script>parent.postMessage('leaked', '*')</script>SECRET").unwrap();
    std::fs::write(dir.path().join(".clineignore"), "private.html\n").unwrap();
    std::fs::write(dir.path().join("private.html"), "private").unwrap();
    std::fs::write(dir.path().join("inner.html"), "<script>parent.postMessage('inner loaded', '*')</script>").unwrap();
    let index = format!(
        r#"<html><body><script>addEventListener('message', e => console.log('message: ' + e.data));</script>
<iframe src="inner.html"></iframe><iframe src="file://{}"></iframe><iframe src="private.html"></iframe></body></html>"#,
        secret.display()
    );
    std::fs::write(dir.path().join("index.html"), index).unwrap();
    let runtime = runtime(profiles.path(), "");
    let task = browser_task(&runtime, dir.path());
    let url = format!("file://{}", dir.path().join("index.html").display());
    let shown = parts(&act(&task, json!({"action": "launch", "url": url}))).0;
    assert!(shown.contains("message: inner loaded"), "{shown}");
    assert!(!shown.contains("leaked"), "{shown}");
    assert!(shown.contains(&format!("[Error] Blocked file://{}", secret.display())), "{shown}");
    assert!(shown.contains("private.html: files outside the workspace"), "{shown}");

    // Launching at an ignored file is refused before any browser starts.
    let ignored = format!("file://{}", dir.path().join("private.html").display());
    let refused = model_text(&act(&task, json!({"action": "launch", "url": ignored})));
    assert!(refused.contains("is blocked by the .clineignore file settings"), "{refused}");
    // Schemes other than http, https and file are refused.
    let other = model_text(&act(&task, json!({"action": "launch", "url": "chrome://settings"})));
    assert!(other.contains("not chrome:"), "{other}");
    act(&task, json!({"action": "close"}));
    assert!(chromium_pids(profiles.path()).iter().all(|&pid| gone(pid)));
}

/// Launch asks, as Cline's `browser_action_launch`; the other actions do not.
#[test]
fn launch_asks_for_approval_and_is_denied_without_anyone_to_ask() {
    let _turn = crate::util::browser_turn();
    let (server, dir, profiles) = (Server::start(), workspace(), profiles());
    let config = format!("[browser]\nprofile_dir = \"{}\"\n", profiles.path().display());
    let runtime = shipped().config(Config::from_toml_str(&config).unwrap()).build().unwrap();
    let task = browser_task(&runtime, dir.path());
    let denied = act(&task, json!({"action": "launch", "url": server.url("/")}));
    assert_eq!(denied.status, ResultStatus::Denied, "{}", model_text(&denied));
    assert!(chromium_pids(profiles.path()).is_empty(), "nothing started");
    let closed = act(&task, json!({"action": "close"}));
    assert_eq!(closed.status, ResultStatus::Success, "{}", model_text(&closed));
}

/// The spec is offered only to a task whose model can use a browser, with the configured viewport.
#[test]
fn the_spec_is_offered_only_with_the_browser_flag() {
    let _turn = crate::util::browser_turn();
    let dir = workspace();
    let config = "[browser]\nviewport_width = 1024\nviewport_height = 768\n";
    let runtime = shipped().config(Config::from_toml_str(config).unwrap()).build().unwrap();
    let xml = |task: &TaskHandle| task.schema(toolshed::Provider::Xml).to_string();
    let with = xml(&runtime.task(TaskContext::new(dir.path()).with_browser(true)));
    assert!(with.contains("## browser_action"), "{with}");
    assert!(with.contains("**1024x768**"), "{with}");
    let without = xml(&runtime.task(TaskContext::new(dir.path())));
    assert!(!without.contains("## browser_action"));
}

/// An MCP client drives the browser through `toolshed serve --browser`: the tool is listed, and a launch
/// answers with text and a WebP image item; without `--browser` it is not listed.
#[test]
fn serve_offers_the_browser_to_an_mcp_client_with_the_flag() {
    let _turn = crate::util::browser_turn();
    const CLIENT: &str = r#"
import asyncio, json, os, sys
from mcp import ClientSession
from mcp.client.stdio import stdio_client, StdioServerParameters

async def main():
    params = StdioServerParameters(command=sys.argv[1], args=json.loads(sys.argv[2]),
                                   env={"HOME": sys.argv[3], "PATH": os.environ.get("PATH", "")})
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            tools = sorted(t.name for t in (await session.list_tools()).tools)
            out = {"tools": tools}
            if "browser_action" in tools:
                r = await session.call_tool("browser_action", {"action": "launch", "url": sys.argv[4]})
                out["launch"] = [{"type": c.type, "mime": getattr(c, "mimeType", None) or getattr(c, "mime_type", None),
                                  "text": getattr(c, "text", None)} for c in r.content]
                r = await session.call_tool("browser_action", {"action": "close"})
                out["close"] = "".join(c.text for c in r.content if c.type == "text")
            print(json.dumps(out), flush=True)

asyncio.run(main())
"#;
    let (server, ws, home, profiles) = (Server::start(), workspace(), workspace(), profiles());
    let script = ws.path().join("client.py");
    std::fs::write(&script, CLIENT).unwrap();
    crate::util::write_user_config(
        home.path(),
        &format!(
            "[browser]\nprofile_dir = \"{}\"\nstable_timeout_ms = 500\nstable_interval_ms = 50\nlog_quiet_ms = 100\n",
            profiles.path().display()
        ),
    );
    let run = |flags: &[&str]| {
        let mut args = vec![
            "--plugins".to_owned(),
            crate::util::plugins().display().to_string(),
            "--cwd".to_owned(),
            ws.path().display().to_string(),
            "serve".to_owned(),
            "--yes".to_owned(),
        ];
        args.extend(flags.iter().map(|f| (*f).to_owned()));
        let output = std::process::Command::new(crate::serve::python())
            .arg(&script)
            .arg(crate::util::toolshed_bin())
            .arg(serde_json::to_string(&args).unwrap())
            .arg(home.path())
            .arg(server.url("/"))
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&output.stdout).into_owned();
        let line =
            out.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| {
                panic!("client printed no result: {out}\n{}", String::from_utf8_lossy(&output.stderr))
            });
        serde_json::from_str::<serde_json::Value>(line).unwrap()
    };
    let with = run(&["--browser"]);
    let tools = with["tools"].to_string();
    assert!(tools.contains("\"browser_action\""), "{with}");
    let launch = with["launch"].as_array().unwrap();
    assert_eq!(launch[0]["type"], "text", "{with}");
    assert!(launch[0]["text"].as_str().unwrap().starts_with(EXECUTED), "{with}");
    assert_eq!(launch[1]["type"], "image", "{with}");
    assert_eq!(launch[1]["mime"], "image/webp", "{with}");
    assert!(with["close"].as_str().unwrap().contains("The browser has been closed."), "{with}");
    let without = run(&[]);
    assert!(!without["tools"].to_string().contains("browser_action"), "{without}");
    // The served session's Chromium went with it.
    assert!(chromium_pids(profiles.path()).iter().all(|&pid| gone(pid)));
}
