//! The browser (issue 26): one headless Chromium session per task, driven through the DevTools protocol by the
//! host, for Cline's `browser_action`.

use super::Empty;
use serde::{Deserialize, Serialize};

services! {
    /// `browser.action`: one action on the calling task's browser session. `launch` closes a session still
    /// open, starts one (a fresh headless Chromium, or a tab in the configured remote Chrome) and navigates it;
    /// `click`, `type`, `scroll_down` and `scroll_up` act on the open page; every one of these answers with a
    /// viewport screenshot and the page's new console output. `close` ends the session (answered `{}` fields
    /// empty, also when none was open). Failures the model can act on (nothing launched, a URL the workspace
    /// rules refuse, Chromium not found) are service errors of kind `Failed` whose message is the text after
    /// Cline's `Error executing browser_action: `; the session is closed then, as Cline closes it.
    BrowserActionService(BROWSER_ACTION) = "browser.action": BrowserActionRequest => BrowserActionResponse;
    /// `browser.status`: whether the calling task has a browser open, and the configured viewport.
    BrowserStatusService(BROWSER_STATUS) = "browser.status": Empty => BrowserStatus;
}

/// One of Cline's browser actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BrowserActionKind {
    /// Start a browser at `url`.
    Launch,
    /// Click at `coordinate`.
    Click,
    /// Type `text` on the keyboard.
    Type,
    /// Scroll down by one step (600 px, as Cline).
    ScrollDown,
    /// Scroll up by one step.
    ScrollUp,
    /// Close the browser.
    Close,
}

impl BrowserActionKind {
    /// Every action, in Cline's order (`browserActions`).
    pub const ALL: [BrowserActionKind; 6] = [
        BrowserActionKind::Launch,
        BrowserActionKind::Click,
        BrowserActionKind::Type,
        BrowserActionKind::ScrollDown,
        BrowserActionKind::ScrollUp,
        BrowserActionKind::Close,
    ];

    /// The action's name as the model writes it.
    pub fn name(self) -> &'static str {
        match self {
            BrowserActionKind::Launch => "launch",
            BrowserActionKind::Click => "click",
            BrowserActionKind::Type => "type",
            BrowserActionKind::ScrollDown => "scroll_down",
            BrowserActionKind::ScrollUp => "scroll_up",
            BrowserActionKind::Close => "close",
        }
    }

    /// The action a name stands for, exactly as Cline compares (`browserActions.includes(action)`).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// Request of [`BrowserActionService`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BrowserActionRequest {
    /// What to do.
    pub action: BrowserActionKind,
    /// `launch`: the URL (`http`, `https` or `file`; a `file` URL under the workspace rules, as a read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `click`: the point in CSS pixels of the viewport as the model wrote it, `x,y`. The host reads it as
    /// Cline does (`coordinate.split(",").map(Number)`): a value that is no number is logged as an `[Error]`
    /// line beside the screenshot, not refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinate: Option<String>,
    /// `type`: the text typed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// Response of [`BrowserActionService`]: Cline's `BrowserActionResult`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BrowserActionResponse {
    /// The viewport after the action, base64 (none after `close`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<BrowserScreenshot>,
    /// The page's console output and errors during the action, one line each (`[error] …`, `[Page Error] …`,
    /// `[Error] …` for a failed navigation), joined with newlines; empty when there were none.
    #[serde(default)]
    pub logs: String,
    /// The page's URL after the action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_url: Option<String>,
    /// Where the mouse last clicked, `x,y`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_mouse_position: Option<String>,
}

/// A screenshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BrowserScreenshot {
    /// `image/webp` or `image/png`.
    pub media_type: String,
    /// The image, base64.
    pub data: String,
}

/// Response of [`BrowserStatusService`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BrowserStatus {
    /// Whether the task has a browser open.
    pub open: bool,
    /// The viewport width in CSS pixels.
    pub viewport_width: u32,
    /// The viewport height in CSS pixels.
    pub viewport_height: u32,
}
