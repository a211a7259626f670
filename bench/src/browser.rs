//! Row 13, issue 26's bench row: one `browser_action` session through the whole runtime (executor, policy,
//! tool actor, plugin, and the host's `browser.action` service driving a headless Chromium over the DevTools
//! protocol): `launch` at a small page served on 127.0.0.1, one `click` on its button, `close`; against a bare
//! chromiumoxide session doing the same in the same run: the same Chromium started with the runtime's flags
//! (`start_chrome` in runtime/src/services/browser/session.rs) in a process group of its own, connected, a
//! page at the same viewport, the page loaded, a WebP screenshot, the click (mouse moved, pressed, released),
//! a screenshot, then the group killed and reaped and the profile removed, as the runtime's `close` does.
//!
//! Cline waits after each action until the page's console has been quiet for 500 ms (at most 3 s), after a
//! navigation until the page's HTML has been the same size three times 500 ms apart (at most 5 s), and after a
//! click 100 ms for requests that would mean a navigation. Those waits are timers, not work, and would make
//! the row measure them; the bench turns the runtime's down as far as its keys go (`[browser]`, below), which
//! leaves one read of the page's HTML and a 1 ms pause after the load and a zero-length pause after the click;
//! the reference does exactly those. Each side's click must show in its results (the page's `console.log`,
//! and for the reference the page's changed text) before anything is timed. Sessions alternate sides, after
//! an untimed one each.

use crate::stats::{Figure, Row, Target, Unit};
use anyhow::{bail, ensure, Context, Result};
use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
use chromiumoxide::cdp::js_protocol::runtime::EventConsoleApiCalled;
use chromiumoxide::layout::Point;
use chromiumoxide::page::ScreenshotParams;
use chromiumoxide::Browser;
use futures::StreamExt as _;
use serde_json::json;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolshed::{Block, Config, ResultStatus, Runtime, TaskContext, ToolUse};

/// Untimed sessions per side, then timed ones, alternating which side goes first.
const WARMUP: usize = 1;
const ROUNDS: usize = 9;
/// Cline's viewport (`browserSettings.viewport`), both sides.
const VIEWPORT: (i64, i64) = (900, 600);
/// The middle of the page's button, in CSS pixels of the viewport.
const BUTTON: (f64, f64) = (200.0, 100.0);
/// What the button's click handler logs, and the text it sets.
const CLICK_LOG: &str = "bench button clicked";
const CLICKED: &str = "Clicked";
/// What the bench's Chromium gets beyond the runtime's own flags (`toolshed::CHROMIUM_FLAGS`), which the
/// reference takes as they are: the runtime's user agent and default viewport, and `--no-sandbox` (the runtime's
/// as root; the bench runs as root in CI). Then `--user-data-dir` and `about:blank`.
fn reference_flags() -> Vec<String> {
    let mut flags: Vec<String> = toolshed::CHROMIUM_FLAGS.iter().map(|flag| (*flag).to_owned()).collect();
    flags.extend([
        format!("--user-agent={}", toolshed::CHROMIUM_USER_AGENT),
        "--window-size=900,600".to_owned(),
        "--no-sandbox".to_owned(),
    ]);
    flags
}
/// The runtime's settle waits as the bench sets them (`[browser]`): the reference pauses as long.
const STABLE_INTERVAL_MS: u64 = 1;
const NETWORK_PROBE_MS: u64 = 0;

/// The page: a status line and a button whose click changes it and logs to the console.
const PAGE: &str = "<!doctype html><html><head><title>Bench page</title></head><body style=\"margin:0\">\
<p id=\"status\">Not clicked</p>\
<button id=\"go\" style=\"position:absolute;left:50px;top:50px;width:300px;height:100px\" \
onclick=\"document.getElementById('status').textContent='Clicked';console.log('bench button clicked')\">Click me</button>\
</body></html>";

/// Runs row 13 with the shipped plugins and Chromium at `chromium`, its files under `work/browser`.
pub fn rows(plugins: &Path, chromium: &Path, work: &Path) -> Result<Vec<Row>> {
    let dir = work.join("browser");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    let workspace = dir.join("workspace");
    std::fs::create_dir_all(&workspace)?;
    let url = format!("http://{}/", serve_page()?);

    // The runtime's Chromium is the reference's; its post-action waits are off (see the module's comment).
    let config = Config::from_toml_str(&format!(
        "[browser]\nexecutable = {:?}\nviewport_width = {}\nviewport_height = {}\nscreenshot_format = \"webp\"\n\
         stable_timeout_ms = 0\nstable_interval_ms = {STABLE_INTERVAL_MS}\nlog_quiet_ms = 0\nlog_wait_ms = 0\n\
         network_probe_ms = {NETWORK_PROBE_MS}\n",
        chromium.to_string_lossy(),
        VIEWPORT.0,
        VIEWPORT.1,
    ))?;
    let runtime = Runtime::builder().plugin_dir(plugins).config(config).yes(true).build()?;
    if let Some(error) = runtime.load_errors().first() {
        bail!("{error}");
    }
    let task = runtime.task(TaskContext::new(&workspace).with_images(true).with_browser(true));
    let driver = tokio::runtime::Builder::new_current_thread().enable_all().build()?;

    // One session through the runtime, on its own thread: (whole session, click alone) in ns, and the texts
    // of the three results.
    let ours = |url: &str| -> Result<(f64, f64, [String; 3])> {
        let task = task.clone();
        let url = url.to_owned();
        let session = driver.block_on(runtime.run_on_runtime(move || async move {
            let call = |action: serde_json::Value| task.execute(ToolUse::new("bench", "browser_action", action));
            let start = Instant::now();
            let launch = call(json!({ "action": "launch", "url": url })).await;
            let clicked = Instant::now();
            let click = call(json!({ "action": "click", "coordinate": format!("{},{}", BUTTON.0, BUTTON.1) })).await;
            let click_ns = clicked.elapsed().as_nanos() as f64;
            let close = call(json!({ "action": "close" })).await;
            let total_ns = start.elapsed().as_nanos() as f64;
            (total_ns, click_ns, [launch, click, close])
        }));
        let (total, click, results) = session.context("the runtime stopped")?;
        let mut texts = Vec::with_capacity(3);
        for (action, result) in ["launch", "click", "close"].iter().zip(results) {
            let text = result.to_model_text();
            ensure!(result.status == ResultStatus::Success, "browser_action {action} answered {text:?}");
            if *action != "close" {
                let image = result.blocks.iter().find_map(|block| match block {
                    Block::Image { media_type, data } => Some((media_type.clone(), data.len())),
                    Block::Text { .. } => None,
                });
                ensure!(
                    image.as_ref().is_some_and(|(_, len)| *len > 0),
                    "browser_action {action} has no screenshot: {text:?}"
                );
            }
            texts.push(text);
        }
        let texts: [String; 3] = texts.try_into().map_err(|_| anyhow::anyhow!("three results"))?;
        Ok((total, click, texts))
    };

    let reference_driver = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut sessions = 0usize;
    let mut reference = |check: bool| -> Result<Session> {
        sessions += 1;
        let profile = dir.join(format!("profile-{sessions}"));
        reference_driver.block_on(reference_session(chromium, &profile, &url, check))
    };

    // The check: both sides' clicks reach the page, before anything is timed.
    let checked = reference(true)?;
    ensure!(
        checked.logs.iter().any(|line| line.contains(CLICK_LOG)),
        "the reference's click logged {:?}, not {CLICK_LOG:?}",
        checked.logs
    );
    ensure!(checked.status.as_deref() == Some(CLICKED), "the reference's click left the page at {:?}", checked.status);
    let (_, _, texts) = ours(&url)?;
    ensure!(texts[1].contains(CLICK_LOG), "browser_action click shows no {CLICK_LOG:?}: {:?}", texts[1]);

    let (mut ours_total, mut ours_click, mut reference_total, mut reference_click) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..WARMUP + ROUNDS {
        for ours_side in if round % 2 == 0 { [true, false] } else { [false, true] } {
            let (total, click) = if ours_side {
                let (total, click, texts) = ours(&url)?;
                ensure!(texts[1].contains(CLICK_LOG), "browser_action click lost its log: {:?}", texts[1]);
                (total, click)
            } else {
                let session = reference(false)?;
                ensure!(
                    session.logs.iter().any(|line| line.contains(CLICK_LOG)),
                    "the reference's click lost its log: {:?}",
                    session.logs
                );
                (session.total_ns, session.click_ns)
            };
            if round >= WARMUP {
                let (totals, clicks) = if ours_side {
                    (&mut ours_total, &mut ours_click)
                } else {
                    (&mut reference_total, &mut reference_click)
                };
                totals.push(total);
                clicks.push(click);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);

    let version = crate::report::version(chromium);
    let note = format!(
        "{version}, {}×{} viewport, WebP screenshots. Cline's waits down to their floor on both sides: \
         `[browser]` log_quiet_ms = 0 (Cline: 500 ms of console quiet after each action), stable_timeout_ms = 0 \
         and stable_interval_ms = {STABLE_INTERVAL_MS} (Cline: the HTML's size unchanged 3× at 500 ms, ≤ 5 s), \
         network_probe_ms = {NETWORK_PROBE_MS} (100 ms after a click); so ours reads the HTML once and pauses \
         {STABLE_INTERVAL_MS} ms after the load, and the reference does the same; neither waits otherwise \
         (the load event, then commands' answers)",
        VIEWPORT.0, VIEWPORT.1
    );
    Ok(vec![
        Row {
            id: "13a".to_owned(),
            what: "browser_action: launch at a page on 127.0.0.1 plus one click, then close, one session".to_owned(),
            unit: Unit::Nanos,
            ours: Figure::median(&mut ours_total),
            reference_name: "bare chromiumoxide session: spawn, connect, goto, screenshot, click, screenshot, \
                             close, kill and reap"
                .to_owned(),
            reference: Figure::median(&mut reference_total),
            target: Target::Report,
            higher_is_better: false,
            note: Some(note),
        },
        Row {
            id: "13b".to_owned(),
            what: "browser_action: the click alone, in the open session of 13a".to_owned(),
            unit: Unit::Nanos,
            ours: Figure::median(&mut ours_click),
            reference_name: "chromiumoxide `click` + WebP screenshot".to_owned(),
            reference: Figure::median(&mut reference_click),
            target: Target::Report,
            higher_is_better: false,
            note: Some("ours includes the console logs and the screenshot's base64".to_owned()),
        },
    ])
}

/// What one reference session measured and saw.
struct Session {
    total_ns: f64,
    click_ns: f64,
    /// The console's messages, each one's arguments joined by spaces.
    logs: Vec<String>,
    /// The status line's text after the click, when `check` asked for it (read untimed).
    status: Option<String>,
}

/// A bare chromiumoxide session on the page at `url`, with a fresh profile at `profile`, removed at the end.
async fn reference_session(chromium: &Path, profile: &Path, url: &str, check: bool) -> Result<Session> {
    use std::os::unix::process::CommandExt as _;
    // Chromium keeps its singleton socket in a directory of its own under TMPDIR, which a killed browser never
    // removes: the session's own, removed with it, as the runtime gives each of its sessions.
    let scratch = tempfile::Builder::new().prefix("bench-chromium-").tempdir()?;
    let start = Instant::now();
    let mut child = Command::new(chromium)
        .args(reference_flags())
        .arg(format!("--user-data-dir={}", profile.display()))
        .env("TMPDIR", scratch.path())
        .arg("about:blank")
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", chromium.display()))?;
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    // SIGKILL to the whole group, then every process of it reaped: the root, and the helpers (zygote,
    // renderer) that the runtime's subreaper inherits as the root dies.
    let kill = |child: &mut std::process::Child| {
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = child.wait();
        while nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(-group.as_raw()), None).is_ok() {}
    };
    let stderr = child.stderr.take().context("chromium's stderr")?;
    let mut lines = BufReader::new(stderr).lines();
    let ws = loop {
        match lines.next() {
            Some(Ok(line)) => {
                if let Some(url) = line.trim().strip_prefix("DevTools listening on ") {
                    break url.to_owned();
                }
            }
            _ => {
                kill(&mut child);
                bail!("{} exited without a DevTools address", chromium.display());
            }
        }
    };
    // The rest of stderr is drained, so Chromium never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));

    let result = drive(&ws, url, check).await;
    kill(&mut child);
    let _ = std::fs::remove_dir_all(profile);
    let total_ns = start.elapsed().as_nanos() as f64;
    let (click_ns, logs, status) = result?;
    Ok(Session { total_ns, click_ns, logs, status })
}

/// The DevTools part of a reference session: connect, page, viewport, load (and the runtime's one HTML read
/// and pause), screenshot, click (and the runtime's pause), screenshot. Returns the click's time (with its
/// screenshot), the console's messages and, when `check`, the status line.
async fn drive(ws: &str, url: &str, check: bool) -> Result<(f64, Vec<String>, Option<String>)> {
    let (browser, mut handler) = Browser::connect(ws).await.context("connecting to Chromium")?;
    let handler = tokio::spawn(async move { while handler.next().await.is_some() {} });
    let page = browser.new_page("about:blank").await?;
    page.execute(SetDeviceMetricsOverrideParams::new(VIEWPORT.0, VIEWPORT.1, 1.0, false)).await?;
    let logs = Arc::new(Mutex::new(Vec::new()));
    let mut console = page.event_listener::<EventConsoleApiCalled>().await?;
    let sink = Arc::clone(&logs);
    let listener = tokio::spawn(async move {
        while let Some(event) = console.next().await {
            let line: Vec<String> = event
                .args
                .iter()
                .map(|arg| match &arg.value {
                    Some(serde_json::Value::String(text)) => text.clone(),
                    Some(value) => value.to_string(),
                    None => arg.description.clone().unwrap_or_default(),
                })
                .collect();
            if let Ok(mut logs) = sink.lock() {
                logs.push(line.join(" "));
            }
        }
    });
    page.goto(url).await?;
    page.content().await?;
    tokio::time::sleep(Duration::from_millis(STABLE_INTERVAL_MS)).await;
    let webp = || ScreenshotParams::builder().format(CaptureScreenshotFormat::Webp).build();
    let shot = page.screenshot(webp()).await?;
    ensure!(!shot.is_empty(), "an empty screenshot");
    let clicked = Instant::now();
    page.click(Point::new(BUTTON.0, BUTTON.1)).await?;
    tokio::time::sleep(Duration::from_millis(NETWORK_PROBE_MS)).await;
    let shot = page.screenshot(webp()).await?;
    let click_ns = clicked.elapsed().as_nanos() as f64;
    ensure!(!shot.is_empty(), "an empty screenshot");
    let status = if check {
        let value = page.evaluate("document.getElementById('status').textContent").await?;
        Some(value.into_value::<String>()?)
    } else {
        None
    };
    listener.abort();
    handler.abort();
    let logs = logs.lock().map(|logs| logs.clone()).unwrap_or_default();
    Ok((click_ns, logs, status))
}

/// Serves [`PAGE`] on 127.0.0.1 (a thread per connection, one answer each: Chromium also opens connections it
/// never sends on), and 404 for anything else (the favicon).
fn serve_page() -> Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let Ok(clone) = stream.try_clone() else { return };
                let mut reader = BufReader::new(clone);
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                        break;
                    }
                }
                let (status, body) = if path == "/" { ("200 OK", PAGE) } else { ("404 Not Found", "") };
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    Ok(addr)
}
