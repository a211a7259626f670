//! One browser session: starting Chromium, the DevTools connection, and Cline's actions on its page (the
//! navigation and settle waits of `BrowserSession.ts`, console capture, screenshots), with `file://` loads held
//! to the task's workspace rules.

use crate::config::BrowserConfig;
use crate::services::host::{cancelled, failed};
use crate::services::process::Tree;
use crate::task::{Cancels, TaskShared};
use chromiumoxide::cdp::browser_protocol::browser::{SetDownloadBehaviorBehavior, SetDownloadBehaviorParams};
use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
use chromiumoxide::cdp::browser_protocol::fetch::{
    ContinueRequestParams, EnableParams as FetchEnable, EventRequestPaused, FailRequestParams, RequestPattern,
};
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType, InsertTextParams,
    MouseButton,
};
use chromiumoxide::cdp::browser_protocol::network::{ErrorReason, EventRequestWillBeSent};
use chromiumoxide::cdp::browser_protocol::page::{
    BringToFrontParams, CaptureScreenshotFormat, CaptureScreenshotParams, DialogType, EventJavascriptDialogOpening,
    HandleJavaScriptDialogParams,
};
use chromiumoxide::cdp::js_protocol::runtime::{EventConsoleApiCalled, EventExceptionThrown, RemoteObject};
use chromiumoxide::handler::viewport::Viewport;
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::{Browser, Page};
use futures::StreamExt;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use toolshed_plugin_api::services::{
    BrowserActionKind, BrowserActionRequest, BrowserActionResponse, BrowserScreenshot,
};
use toolshed_plugin_api::ServiceError;

/// The flags every Chromium the runtime launches gets, before its user agent, window size, profile directory,
/// `--no-sandbox` as root and `[browser] args`: a locked-down headless browser (no first run, no background
/// networking, no sync, no crash reports) whose DevTools endpoint listens on loopback only.
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--disable-dev-shm-usage",
    "--metrics-recording-only",
    "--password-store=basic",
    "--use-mock-keychain",
    "--hide-scrollbars",
    "--mute-audio",
    // Popups would be pages nobody screenshots and whose loads the file gate does not see.
    "--block-new-web-contents",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
];

/// Cline's user agent for its local browser (a desktop Chrome, so pages serve their desktop layout).
pub const USER_AGENT: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/128.0.0.0 Safari/537.36";

/// Cline's scroll step, in CSS pixels.
const SCROLL_STEP: i64 = 600;

/// The most console output kept for one action: a page that logs in a loop cannot fill the host's memory.
const MAX_LOG_BYTES: usize = 64 * 1024;

/// What every action of a task's session needs to know.
pub(super) struct Context {
    pub config: BrowserConfig,
    /// The task, for its workspace rules (weak: a session must not keep its task alive).
    pub task: Weak<TaskShared>,
    /// Screenshots as PNG rather than WebP.
    pub png: bool,
}

/// Where the browser to connect to is.
pub(super) enum Endpoint {
    /// A Chromium this session started: its DevTools URL, its process tree and its profile directory.
    Local { ws: String, tree: Arc<Tree>, profile: Profile },
    /// The user's running Chrome (`[browser] remote_url`).
    Remote(String),
}

/// A checked launch URL.
pub(super) struct Target {
    url: String,
    /// The file a `file://` URL names, allowed by the approval even when it lies outside the workspace.
    file: Option<PathBuf>,
}

impl Target {
    /// Checks a launch URL: `http`, `https` or `file`; a file `.clineignore` blocks is refused (one outside the
    /// workspace was already put to the user by the approval, which names its path).
    pub fn check(url: &str, task: &TaskShared) -> Result<Target, String> {
        // Trimmed as the URL standard trims (C0 controls and space), not as `str::trim` does: a URL led by
        // another space (U+00A0, U+3000) is no URL, or the plugin, which reads a `file:` URL's path for the
        // approval as the standard does, would name no path for a file the host then opens. A tab or line
        // feed inside, which the parser drops silently, is refused for the same reason ("fi\tle:").
        let url = url.trim_matches(|c: char| c <= ' ');
        if url.chars().any(char::is_control) {
            return Err(format!("Cannot open {url:?}: a URL may not contain control characters"));
        }
        let parsed = url::Url::parse(url).map_err(|e| {
            format!("Cannot navigate to invalid URL {url:?} ({e}): give the protocol, e.g. http://localhost:3000 or file:///path/to/file.html")
        })?;
        match parsed.scheme() {
            "http" | "https" => Ok(Target { url: parsed.to_string(), file: None }),
            "file" => {
                let path = parsed
                    .to_file_path()
                    .map_err(|()| format!("Cannot open {url:?}: a file URL must name a local absolute path"))?;
                let shown = path.to_string_lossy().into_owned();
                if !task.workspace.allows_all(std::slice::from_ref(&shown)).first().copied().unwrap_or(false) {
                    return Err(toolshed_plugin_api::result::clineignore_error(&shown));
                }
                Ok(Target { url: parsed.to_string(), file: Some(path) })
            }
            other => {
                Err(format!("Cannot open {url:?}: the browser opens http://, https:// and file:// URLs, not {other}:"))
            }
        }
    }
}

/// The console output of the action in progress.
#[derive(Default)]
struct Logs {
    lines: Vec<String>,
    bytes: usize,
    dropped: usize,
    /// When the last line came (or the action started).
    last: Option<Instant>,
    /// Whether an action is collecting (between actions the page's output is not anybody's).
    collecting: bool,
}

impl Logs {
    fn push(&mut self, line: String) {
        if !self.collecting {
            return;
        }
        self.last = Some(Instant::now());
        if self.bytes + line.len() > MAX_LOG_BYTES {
            self.dropped += 1;
            return;
        }
        self.bytes += line.len();
        self.lines.push(line);
    }

    fn start(&mut self) {
        *self = Logs { collecting: true, last: Some(Instant::now()), ..Logs::default() };
    }

    fn finish(&mut self) -> String {
        self.collecting = false;
        let mut text = std::mem::take(&mut self.lines).join("\n");
        if self.dropped > 0 {
            text.push_str(&format!("\n[{} more console lines not shown: over {MAX_LOG_BYTES} bytes]", self.dropped));
        }
        text
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A task's open browser.
pub(super) struct Session {
    page: Page,
    browser: Browser,
    /// The tasks reading the connection and the page's events; aborted on close.
    tasks: Vec<tokio::task::JoinHandle<()>>,
    logs: Arc<Mutex<Logs>>,
    /// The file a `file://` launch was approved for.
    allowed_file: Arc<Mutex<Option<PathBuf>>>,
    mouse: Option<String>,
    remote: bool,
    /// Held until the session ends; dropped after the connection, so the process goes last, then its profile.
    tree: Option<Arc<Tree>>,
    profile: Option<Profile>,
}

/// A launched browser's own directories, removed when the session ends, however the browser ended.
pub(super) struct Profile {
    _dir: tempfile::TempDir,
    /// Its TMPDIR (see `start_chrome`).
    _scratch: tempfile::TempDir,
}

/// Starts Chromium headless on a fresh profile with the flags a locked-down machine needs, and reads its
/// DevTools address from its stderr, waiting at most `launch_timeout_ms` and no longer than the call.
pub(super) fn start_chrome(
    config: &BrowserConfig,
    env: &crate::child_process::clean::EnvRule,
    cancels: &Cancels<'_>,
) -> Result<(Tree, String, Profile), ServiceError> {
    let executable = find_executable(config).ok_or_else(|| {
        failed("Could not find Chrome or Chromium: set [browser] executable, or CHROME_PATH, or install chromium")
    })?;
    let mut profile = tempfile::Builder::new();
    profile.prefix("toolshed-browser-").permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
    // In the user's private scratch root unless the user named a place: never in a shared one as it is.
    let root = crate::scratch::root().map_err(failed)?;
    let profile = match &config.profile_dir {
        Some(dir) => profile.tempdir_in(dir),
        None => profile.tempdir_in(root),
    }
    .map_err(|e| failed(format!("cannot make the browser's profile directory: {e}")))?;
    // Chromium keeps its singleton socket (and, without /dev/shm, its shared memory) in a directory of its own
    // under TMPDIR, which a killed browser never removes: one leaked directory per launch. It gets a TMPDIR of
    // its own, removed with the session. Not inside the profile, nor below the scratch root (in the user's
    // cache): a socket's path is limited to 107 bytes, and a long path would stop Chromium from starting at
    // all. A new directory of random name, made (never found) with mode 0700, in the system's TMPDIR.
    let scratch = tempfile::Builder::new()
        .prefix("toolshed-chromium-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .map_err(|e| failed(format!("cannot make the browser's temporary directory: {e}")))?;
    let mut command = Command::new(&executable);
    command
        .env("TMPDIR", scratch.path())
        .args(CHROMIUM_FLAGS)
        .arg(format!("--user-agent={USER_AGENT}"))
        .arg(format!("--window-size={},{}", config.viewport_width, config.viewport_height))
        .arg(format!("--user-data-dir={}", profile.path().display()));
    // Chromium's own sandbox cannot start as root; there it runs without it, as every CI container does.
    if nix::unistd::geteuid().is_root() {
        command.arg("--no-sandbox");
    }
    command.args(&config.args).arg("about:blank");
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut tree = Tree::spawn(command, crate::child_process::clean::Inherit::User(env))
        .map_err(|e| failed(format!("cannot start the browser {}: {e}", executable.display())))?;
    let stderr = tree.child().stderr.take().ok_or_else(|| failed("the browser's stderr is not a pipe"))?;
    let (tx, rx) = crossbeam_channel::bounded(1);
    // One thread reads the browser's stderr for its whole life: the address first, then everything else is
    // read and dropped, so the browser never blocks on a full pipe. It ends when the browser does.
    let reader = std::thread::Builder::new().name("browser-stderr".to_owned()).spawn(move || {
        let mut tail = Vec::new();
        let mut sent = false;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if !sent {
                if let Some(ws) = line.trim().strip_prefix("DevTools listening on ") {
                    let _ = tx.send(Ok(ws.to_owned()));
                    sent = true;
                } else if tail.len() < 8 {
                    tail.push(line);
                }
            }
        }
        if !sent {
            let _ = tx.send(Err(tail.join("\n")));
        }
    });
    if reader.is_err() {
        return Err(failed("cannot start the thread that reads the browser's output"));
    }
    let deadline = Instant::now() + Duration::from_millis(config.launch_timeout_ms);
    match cancels.recv(&rx, Some(deadline)) {
        Ok(Some(Ok(ws))) => {
            tree.survey();
            Ok((tree, ws, Profile { _dir: profile, _scratch: scratch }))
        }
        Ok(Some(Err(said))) => Err(failed(format!(
            "the browser {} exited before it offered its DevTools endpoint{}",
            executable.display(),
            if said.is_empty() { String::new() } else { format!(": {said}") }
        ))),
        Ok(None) if cancels.is_cancelled() => Err(cancelled()),
        Ok(None) | Err(_) => Err(failed(format!(
            "the browser {} did not offer its DevTools endpoint within {} ms ([browser] launch_timeout_ms)",
            executable.display(),
            config.launch_timeout_ms
        ))),
    }
}

/// `[browser] executable`, else Cline's order on Linux: `CHROME_PATH`, then `google-chrome-stable`,
/// `google-chrome`, `chromium-browser` and `chromium` on `PATH`; else `/usr/bin/chromium`.
fn find_executable(config: &BrowserConfig) -> Option<PathBuf> {
    if let Some(path) = &config.executable {
        return Some(path.clone());
    }
    let is_file = |path: &std::path::Path| path.is_file();
    if let Some(path) = std::env::var_os("CHROME_PATH").map(PathBuf::from).filter(|p| is_file(p)) {
        return Some(path);
    }
    let dirs: Vec<PathBuf> = std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    for name in ["google-chrome-stable", "google-chrome", "chromium-browser", "chromium"] {
        if let Some(found) = dirs.iter().map(|dir| dir.join(name)).find(|p| is_file(p)) {
            return Some(found);
        }
    }
    Some(PathBuf::from("/usr/bin/chromium")).filter(|p| is_file(p))
}

impl Session {
    /// Connects, opens the page with the configured viewport and starts listening to it.
    pub async fn open(endpoint: Endpoint, context: &Context) -> Result<Session, String> {
        let config = &context.config;
        let viewport = Viewport {
            width: config.viewport_width,
            height: config.viewport_height,
            device_scale_factor: Some(1.0),
            ..Viewport::default()
        };
        let handler_config = HandlerConfig {
            // A certificate error is the page's problem to show, not ours to wave through.
            ignore_https_errors: false,
            viewport: Some(viewport),
            request_timeout: Duration::from_millis(config.command_timeout_ms.max(1)),
            ..HandlerConfig::default()
        };
        let (url, tree, profile, remote) = match endpoint {
            Endpoint::Local { ws, tree, profile } => (ws, Some(tree), Some(profile), false),
            Endpoint::Remote(url) => (url, None, None, true),
        };
        let connect = Browser::connect_with_config(url.clone(), handler_config);
        let (browser, mut handler) = match tokio::time::timeout(
            Duration::from_millis(config.launch_timeout_ms),
            connect,
        )
        .await
        {
            Ok(Ok(connected)) => connected,
            Ok(Err(e)) if remote => {
                return Err(format!(
                        "Failed to connect to remote browser at {url} ({e}). Make sure Chrome is running with remote debugging enabled (--remote-debugging-port=9222)."
                    ));
            }
            Ok(Err(e)) => return Err(format!("cannot connect to the browser's DevTools endpoint: {e}")),
            Err(_) => {
                return Err(format!(
                    "the browser's DevTools endpoint did not answer within {} ms ([browser] launch_timeout_ms)",
                    config.launch_timeout_ms
                ));
            }
        };
        let mut tasks = vec![tokio::spawn(async move {
            // The connection lives as long as this stream is read; an error means it is gone.
            while let Some(event) = handler.next().await {
                if event.is_err() {
                    break;
                }
            }
        })];
        let page = browser.new_page("about:blank").await.map_err(|e| format!("cannot open a page: {e}"))?;
        page.execute(SetDeviceMetricsOverrideParams::new(
            i64::from(config.viewport_width),
            i64::from(config.viewport_height),
            1.0,
            false,
        ))
        .await
        .map_err(|e| format!("cannot set the viewport: {e}"))?;
        let logs = Arc::new(Mutex::new(Logs::default()));
        let allowed_file = Arc::new(Mutex::new(None));
        let mut console = page
            .event_listener::<EventConsoleApiCalled>()
            .await
            .map_err(|e| format!("cannot follow the console: {e}"))?;
        let mut errors = page
            .event_listener::<EventExceptionThrown>()
            .await
            .map_err(|e| format!("cannot follow page errors: {e}"))?;
        let mut paused =
            page.event_listener::<EventRequestPaused>().await.map_err(|e| format!("cannot follow requests: {e}"))?;
        let mut dialogs = page
            .event_listener::<EventJavascriptDialogOpening>()
            .await
            .map_err(|e| format!("cannot follow the page's dialogs: {e}"))?;
        let console_logs = Arc::clone(&logs);
        tasks.push(tokio::spawn(async move {
            while let Some(event) = console.next().await {
                lock(&console_logs).push(console_line(&event));
            }
        }));
        let error_logs = Arc::clone(&logs);
        tasks.push(tokio::spawn(async move {
            while let Some(event) = errors.next().await {
                lock(&error_logs).push(format!("[Page Error] {}", exception_text(&event)));
            }
        }));
        // An `alert`, `confirm` or `prompt` would stop the page (and every screenshot) until someone answered
        // it; nobody is there to, so each is dismissed at once and shown to the model as a log line.
        let (dialog_page, dialog_logs) = (page.clone(), Arc::clone(&logs));
        tasks.push(tokio::spawn(async move {
            while let Some(event) = dialogs.next().await {
                lock(&dialog_logs).push(format!("[dialog] {}: {}", event.r#type.as_ref(), event.message));
                // Leaving is allowed (a navigation must not hang on `beforeunload`); everything else is cancelled.
                let accept = event.r#type == DialogType::Beforeunload;
                // A dialog gone before it was answered (its frame navigated or went away) fails the answer;
                // the next dialog must still be answered. The listener ends with the connection.
                let _ = dialog_page.execute(HandleJavaScriptDialogParams::new(accept)).await;
            }
        }));
        // Every file the page loads — the document, a frame, an image, a link followed — passes the workspace
        // rules as it is requested: a page in a cloned repository cannot show the model ~/.ssh in a frame.
        let (gate_page, gate_logs, gate_task, gate_file) =
            (page.clone(), Arc::clone(&logs), context.task.clone(), Arc::clone(&allowed_file));
        tasks.push(tokio::spawn(async move {
            while let Some(event) = paused.next().await {
                let allowed = file_allowed(&event.request.url, &gate_task, &gate_file);
                let id = event.request_id.clone();
                // An answer fails when the page cancelled the request while it was held (a frame removed, an
                // image's source changed): that must not end the gate, or every later file load of the page
                // would be held forever. The listener ends with the connection.
                let _ = if allowed {
                    gate_page.execute(ContinueRequestParams::new(id)).await.map(drop)
                } else {
                    lock(&gate_logs).push(format!(
                        "[Error] Blocked {}: files outside the workspace or blocked by .clineignore are not opened",
                        event.request.url
                    ));
                    gate_page.execute(FailRequestParams::new(id, ErrorReason::AccessDenied)).await.map(drop)
                };
            }
        }));
        let pattern = RequestPattern::builder().url_pattern("file://*").build();
        page.execute(FetchEnable::builder().pattern(pattern).build())
            .await
            .map_err(|e| format!("cannot guard the page's file loads: {e}"))?;
        page.enable_runtime().await.map_err(|e| format!("cannot follow the page's scripts: {e}"))?;
        if !remote {
            // A page must not write files where it likes (Chromium would save to ~/Downloads). The user's own
            // remote Chrome keeps its settings.
            browser
                .execute(SetDownloadBehaviorParams::new(SetDownloadBehaviorBehavior::Deny))
                .await
                .map_err(|e| format!("cannot turn the browser's downloads off: {e}"))?;
        }
        Ok(Session { page, browser, tasks, logs, allowed_file, mouse: None, remote, tree, profile })
    }

    /// Cline's `navigateToUrl`: the page loads (at most `navigation_timeout_ms`; a timeout is not an error),
    /// then its HTML settles.
    pub async fn navigate(&mut self, target: Target, context: &Context) -> Result<BrowserActionResponse, String> {
        *lock(&self.allowed_file) = target.file;
        let config = &context.config;
        let url = target.url;
        let page = self.page.clone();
        let action = async move {
            let navigation = Duration::from_millis(config.navigation_timeout_ms);
            match tokio::time::timeout(navigation, page.goto(url.as_str())).await {
                Err(_) => return Ok(()),
                Ok(result) => result.map_err(|e| e.to_string())?,
            };
            wait_stable(&page, config).await;
            Ok(())
        };
        self.act_with(action, context).await
    }

    /// One of click, type, scroll_down, scroll_up.
    pub async fn act(
        &mut self,
        request: &BrowserActionRequest,
        context: &Context,
    ) -> Result<BrowserActionResponse, String> {
        let config = &context.config;
        let page = self.page.clone();
        match request.action {
            BrowserActionKind::Click => {
                let coordinate = request.coordinate.clone().unwrap_or_default();
                let point = parse_coordinate(&coordinate);
                if point.is_some() {
                    self.mouse = Some(coordinate.clone());
                }
                let action = async move {
                    let (x, y) = point
                        .ok_or_else(|| format!("Invalid coordinate {coordinate:?}: expected x,y in CSS pixels"))?;
                    click(&page, x, y, config).await
                };
                self.act_with(action, context).await
            }
            BrowserActionKind::Type => {
                let text = request.text.clone().unwrap_or_default();
                self.act_with(async move { type_text(&page, &text, config).await }, context).await
            }
            BrowserActionKind::ScrollDown | BrowserActionKind::ScrollUp => {
                let top = if request.action == BrowserActionKind::ScrollDown { SCROLL_STEP } else { -SCROLL_STEP };
                let action = async move {
                    bounded(config, page.evaluate(format!("window.scrollBy({{ top: {top}, behavior: 'auto' }})")))
                        .await?;
                    tokio::time::sleep(Duration::from_millis(config.scroll_delay_ms)).await;
                    Ok(())
                };
                self.act_with(action, context).await
            }
            BrowserActionKind::Launch | BrowserActionKind::Close => {
                Err(format!("the {} action is the host's own", request.action.name()))
            }
        }
    }

    /// Cline's `doAction`: console output collected while `action` runs (its failure becomes an `[Error]`
    /// line, not a failure of the tool), a wait for the console to go quiet, then the screenshot.
    async fn act_with(
        &mut self,
        action: impl std::future::Future<Output = Result<(), String>>,
        context: &Context,
    ) -> Result<BrowserActionResponse, String> {
        let config = &context.config;
        lock(&self.logs).start();
        if let Err(error) = action.await {
            lock(&self.logs).push(format!("[Error] {error}"));
        }
        let quiet = Duration::from_millis(config.log_quiet_ms);
        let give_up = Instant::now() + Duration::from_millis(config.log_wait_ms);
        loop {
            let since = lock(&self.logs).last.map_or(quiet, |last| last.elapsed());
            let now = Instant::now();
            if since >= quiet || now >= give_up {
                break;
            }
            tokio::time::sleep((quiet - since).min(give_up - now).min(Duration::from_millis(100))).await;
        }
        let logs = lock(&self.logs).finish();
        let format = if context.png { CaptureScreenshotFormat::Png } else { CaptureScreenshotFormat::Webp };
        // A window the page opened (a `target=_blank` link clicked) is in front now, and a page in the
        // background draws no frames: its screenshot would wait forever. Puppeteer activates the page first.
        let _ = bounded(config, self.page.execute(BringToFrontParams::default())).await;
        let shot =
            bounded(config, self.page.execute(CaptureScreenshotParams::builder().format(format.clone()).build()))
                .await
                .map_err(|e| format!("Failed to take screenshot: {e}"))?;
        let data: String = shot.result.data.clone().into();
        if data.is_empty() {
            return Err("Failed to take screenshot.".to_owned());
        }
        let media_type = if context.png { "image/png" } else { "image/webp" };
        let current_url = bounded(config, self.page.url()).await.ok().flatten();
        Ok(BrowserActionResponse {
            screenshot: Some(BrowserScreenshot { media_type: media_type.to_owned(), data }),
            logs,
            current_url,
            current_mouse_position: self.mouse.clone(),
        })
    }

    /// Ends the session: a remote tab is closed (the user's Chrome keeps running); a local browser's tree was
    /// killed by the caller already and is reaped as the last holder lets go of it.
    pub async fn close(self) {
        let bound = Duration::from_millis(500);
        if self.remote {
            let _ = tokio::time::timeout(bound, self.page.clone().close()).await;
        }
        for task in &self.tasks {
            task.abort();
        }
        if let Some(tree) = &self.tree {
            tree.kill();
        }
        drop(self);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        // The browser goes before its profile directory is removed.
        if let Some(tree) = self.tree.take() {
            tree.kill();
        }
        drop(self.profile.take());
        let _ = &self.browser;
    }
}

/// Whether the page may load `url`: anything but a file, and a file inside the workspace that `.clineignore`
/// allows, or the one file the launch was approved for.
fn file_allowed(url: &str, task: &Weak<TaskShared>, approved: &Mutex<Option<PathBuf>>) -> bool {
    let Ok(parsed) = url::Url::parse(url) else { return false };
    if parsed.scheme() != "file" {
        return true;
    }
    let Ok(path) = parsed.to_file_path() else { return false };
    if lock(approved).as_deref() == Some(path.as_path()) {
        return true;
    }
    let Some(task) = task.upgrade() else { return false };
    let shown = path.to_string_lossy().into_owned();
    task.workspace.contains(&path) && task.workspace.allows_all(&[shown]).first().copied().unwrap_or(false)
}

/// The length of Puppeteer's `page.content()` (in UTF-16 units, as JavaScript counts), measured in the page:
/// a page of many megabytes is not copied to the host at every check.
const HTML_LENGTH: &str = "(() => { let html = ''; if (document.doctype) { html = new XMLSerializer().serializeToString(document.doctype); } if (document.documentElement) { html += document.documentElement.outerHTML; } return html.length; })()";

/// Cline's `waitTillHTMLStable`: the HTML's size compared every `stable_interval_ms`, done after three equal
/// readings in a row or `stable_timeout_ms`. The timeout is a deadline, not a number of checks: a page whose
/// HTML takes long to read (or grows without end) is not waited for longer, nor one whose workspace config
/// shortened the interval.
async fn wait_stable(page: &Page, config: &BrowserConfig) {
    let interval = Duration::from_millis(config.stable_interval_ms.max(1));
    let deadline = Instant::now() + Duration::from_millis(config.stable_timeout_ms);
    let command = Duration::from_millis(config.command_timeout_ms.max(1));
    let (mut last, mut stable) = (0u64, 0u32);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        let size = match tokio::time::timeout(left.min(command), page.evaluate(HTML_LENGTH)).await {
            Ok(Ok(result)) => result.into_value::<u64>().unwrap_or(0),
            _ => return,
        };
        stable = if last != 0 && size == last { stable + 1 } else { 0 };
        if stable >= 3 {
            return;
        }
        last = size;
        tokio::time::sleep(interval.min(deadline.saturating_duration_since(Instant::now()))).await;
    }
}

/// A DevTools command bounded by `[browser] command_timeout_ms` (chromiumoxide's own bound on a page's
/// commands is a fixed 30 s, whatever its handler is configured with).
async fn bounded<T, E: std::fmt::Display>(
    config: &BrowserConfig,
    command: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, String> {
    match tokio::time::timeout(Duration::from_millis(config.command_timeout_ms.max(1)), command).await {
        Ok(result) => result.map_err(|e| e.to_string()),
        Err(_) => Err("Request timed out.".to_owned()),
    }
}

/// Cline's click: the mouse moved there and pressed once; when the page starts a request within
/// `network_probe_ms`, a navigation is waited for and the HTML's settling.
async fn click(page: &Page, x: f64, y: f64, config: &BrowserConfig) -> Result<(), String> {
    let mut requests = page.event_listener::<EventRequestWillBeSent>().await.map_err(|e| e.to_string())?;
    let mouse = |kind: DispatchMouseEventType| {
        let mut params = DispatchMouseEventParams::new(kind.clone(), x, y);
        if kind != DispatchMouseEventType::MouseMoved {
            params.button = Some(MouseButton::Left);
            params.click_count = Some(1);
        }
        params
    };
    for kind in [
        DispatchMouseEventType::MouseMoved,
        DispatchMouseEventType::MousePressed,
        DispatchMouseEventType::MouseReleased,
    ] {
        bounded(config, page.execute(mouse(kind))).await?;
    }
    tokio::time::sleep(Duration::from_millis(config.network_probe_ms)).await;
    let busy = futures::FutureExt::now_or_never(requests.next()).flatten().is_some();
    if busy {
        let navigation = Duration::from_millis(config.navigation_timeout_ms);
        let _ = tokio::time::timeout(navigation, page.wait_for_navigation()).await;
        wait_stable(page, config).await;
    }
    Ok(())
}

/// Puppeteer's `keyboard.type`: a key press for each character of the US layout (Enter for a newline), the
/// rest inserted as text.
async fn type_text(page: &Page, text: &str, config: &BrowserConfig) -> Result<(), String> {
    for c in text.chars() {
        let mut buffer = [0u8; 4];
        let key = match c {
            '\n' | '\r' => "Enter",
            other => other.encode_utf8(&mut buffer),
        };
        match chromiumoxide::keys::get_key_definition(key) {
            Some(definition) => {
                let text = definition.text.or((definition.key.chars().count() == 1).then_some(definition.key));
                let event = |kind: DispatchKeyEventType| {
                    let mut params = DispatchKeyEventParams::new(kind);
                    params.key = Some(definition.key.to_owned());
                    params.code = Some(definition.code.to_owned());
                    params.windows_virtual_key_code = Some(definition.key_code);
                    params.native_virtual_key_code = Some(definition.key_code);
                    params
                };
                let mut down = event(if text.is_some() {
                    DispatchKeyEventType::KeyDown
                } else {
                    DispatchKeyEventType::RawKeyDown
                });
                down.text = text.map(str::to_owned);
                bounded(config, page.execute(down)).await?;
                bounded(config, page.execute(event(DispatchKeyEventType::KeyUp))).await?;
            }
            None => {
                bounded(config, page.execute(InsertTextParams::new(c.to_string()))).await?;
            }
        }
    }
    Ok(())
}

/// Cline's `coordinate.split(",").map(Number)`: two numbers, each as JavaScript's `Number` reads a string
/// (blank is 0); anything else is no point.
fn parse_coordinate(coordinate: &str) -> Option<(f64, f64)> {
    let mut parts = coordinate.split(',');
    let (x, y) = (js_number(parts.next()?)?, js_number(parts.next()?)?);
    Some((x, y))
}

fn js_number(text: &str) -> Option<f64> {
    let text = text.trim();
    if text.is_empty() {
        return Some(0.0);
    }
    let value = if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok().map(|v| v as f64)
    } else if text.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')) {
        text.parse::<f64>().ok()
    } else {
        None
    };
    value.filter(|v| v.is_finite())
}

/// A console message as Puppeteer's `ConsoleMessage` prints it in Cline: `log` as its text, other kinds as
/// `[kind] text` (`warning` is Puppeteer's `warn`).
fn console_line(event: &EventConsoleApiCalled) -> String {
    let text = event.args.iter().map(remote_text).collect::<Vec<_>>().join(" ");
    match event.r#type.as_ref() {
        "log" => text,
        "warning" => format!("[warn] {text}"),
        kind => format!("[{kind}] {text}"),
    }
}

/// One console argument as text: a string as it is, other values as JavaScript prints them.
fn remote_text(object: &RemoteObject) -> String {
    match &object.value {
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(value) if object.object_id.is_none() => value.to_string(),
        _ => object
            .unserializable_value
            .as_ref()
            .map(|v| v.inner().clone())
            .or_else(|| object.description.clone())
            .unwrap_or_else(|| format!("JSHandle@{}", object.r#type.as_ref())),
    }
}

/// An uncaught exception as `err.toString()` gives it: the first line of its description (`ReferenceError: x
/// is not defined`).
fn exception_text(event: &EventExceptionThrown) -> String {
    let details = &event.exception_details;
    details
        .exception
        .as_ref()
        .and_then(|e| e.description.as_deref())
        .and_then(|d| d.lines().next())
        .map(str::to_owned)
        .unwrap_or_else(|| details.text.clone())
}

#[cfg(test)]
mod tests {
    use super::{js_number, parse_coordinate};

    #[test]
    fn coordinates_read_as_cline_reads_them() {
        assert_eq!(parse_coordinate("450,300"), Some((450.0, 300.0)));
        assert_eq!(parse_coordinate(" 450 , 300.5 "), Some((450.0, 300.5)));
        assert_eq!(parse_coordinate("450,"), Some((450.0, 0.0)));
        assert_eq!(parse_coordinate("450"), None);
        assert_eq!(parse_coordinate("[450,300]"), None);
        assert_eq!(parse_coordinate("a,b"), None);
        assert_eq!(js_number("0x10"), Some(16.0));
        assert_eq!(js_number("1e2"), Some(100.0));
        assert_eq!(js_number("inf"), None);
        assert_eq!(js_number("NaN"), None);
    }
}
