//! Cline's `browser_action` tool as a Toolshed plugin: `launch` a browser at a URL, `click` at a point,
//! `type` text, `scroll_down`/`scroll_up` by one step and `close` it, each action but `close` answered with a
//! screenshot of the viewport and the page's new console logs.
//!
//! The browser is the host's: every action goes through the `browser.action` service
//! ([`BrowserActionService`]), which keeps one session per task. This plugin checks the parameters in Cline's
//! order with Cline's texts, asks approval for `launch` only (Cline's `browser_action_launch` ask), and words
//! the result as Cline's `BrowserToolHandler` does.
//!
//! ```
//! use toolshed_plugin_api::Tool;
//!
//! let declaration = browser_action::BrowserAction::declaration();
//! assert_eq!(declaration.name, "browser_action");
//! assert_eq!(declaration.specs["generic"].parameters.len(), 4); // action, url, coordinate, text
//! ```
#![deny(missing_docs)]

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolshed_plugin_api::sdk::lenient_string;
use toolshed_plugin_api::services::{
    BrowserActionKind, BrowserActionRequest, BrowserActionResponse, BrowserActionService,
};
use toolshed_plugin_api::{
    capability, export_plugin, result, Block, Failure, HostClient, Outcome, ParamSpec, PartialBlock, Prepared, Risk,
    ServiceErrorKind, Tool, ToolCall, ToolDeclaration, ToolInit, ToolSpec,
};

/// The tool's name.
const NAME: &str = "browser_action";

/// The description, the same in both of Cline's specs; the runtime fills in the viewport.
const DESCRIPTION: &str = "Request to interact with a Puppeteer-controlled browser. Every action, except `close`, will be responded to with a screenshot of the browser's current state, along with any new console logs. You may only perform one browser action per message, and wait for the user's response including a screenshot and logs to determine the next action.
- The sequence of actions **must always start with** launching the browser at a URL, and **must always end with** closing the browser. If you need to visit a new URL that is not possible to navigate to from the current webpage, you must first close the browser, then launch again at the new URL.
- While the browser is active, only the `browser_action` tool can be used. No other tools should be called during this time. You may proceed to use other tools only after closing the browser. For example if you run into an error and need to fix a file, you must close the browser, then use other tools to make the necessary changes, then re-launch the browser to verify the result.
- The browser window has a resolution of **{{BROWSER_VIEWPORT_WIDTH}}x{{BROWSER_VIEWPORT_HEIGHT}}** pixels. When performing any click actions, ensure the coordinates are within this resolution range.
- Before clicking on any elements such as icons, links, or buttons, you must consult the provided screenshot of the page to determine the coordinates of the element. The click should be targeted at the **center of the element**, not on its edges.";

/// Cline's `action` instruction, which ends with an example that differs between its specs. Its lines end
/// with a space and are indented with tabs, the last with a tab and four spaces: Cline's bytes.
macro_rules! action_instruction {
    ($example:literal) => {
        concat!(
            "The action to perform. The available actions are: \n",
            "\t* launch: Launch a new Puppeteer-controlled browser instance at the specified URL. This **must always be the first action**. \n",
            "\t\t- Use with the `url` parameter to provide the URL. \n",
            "\t\t- Ensure the URL is valid and includes the appropriate protocol (e.g. http://localhost:3000/page, file:///path/to/file.html, etc.) \n",
            "\t* click: Click at a specific x,y coordinate. \n",
            "\t\t- Use with the `coordinate` parameter to specify the location. \n",
            "\t\t- Always click in the center of an element (icon, button, link, etc.) based on coordinates derived from a screenshot. \n",
            "\t* type: Type a string of text on the keyboard. You might use this after clicking on a text field to input text. \n",
            "\t\t- Use with the `text` parameter to provide the string to type. \n",
            "\t* scroll_down: Scroll down the page by one page height. \n",
            "\t* scroll_up: Scroll up the page by one page height. \n",
            "\t* close: Close the Puppeteer-controlled browser instance. This **must always be the final browser action**. \n",
            "\t    - Example: ",
            $example
        )
    };
}

/// The generic spec's parameters: (name, required, instruction, usage).
const GENERIC_PARAMETERS: [(&str, bool, &str, &str); 4] = [
    (
        "action",
        true,
        action_instruction!("`<action>close</action>`"),
        "Action to perform (e.g., launch, click, type, scroll_down, scroll_up, close)",
    ),
    (
        "url",
        false,
        "Use this for providing the URL for the `launch` action. \n\t* Example: <url>https://example.com</url>",
        "URL to launch the browser at (optional)",
    ),
    (
        "coordinate",
        false,
        "The X and Y coordinates for the `click` action. Coordinates should be within the **{{BROWSER_VIEWPORT_WIDTH}}x{{BROWSER_VIEWPORT_HEIGHT}}** resolution. \n\t* Example: <coordinate>450,300</coordinate>",
        "x,y coordinates (optional)",
    ),
    (
        "text",
        false,
        "Use this for providing the text for the `type` action. \n\t* Example: <text>Hello, world!</text>",
        "Text to type (optional)",
    ),
];

/// The native-next-gen spec's parameters (no usage): (name, required, instruction).
const NATIVE_PARAMETERS: [(&str, bool, &str); 4] = [
    ("action", true, action_instruction!("'scroll_up'")),
    ("url", false, "Use this for providing the URL for the `launch` action."),
    (
        "coordinate",
        false,
        "x,y coordinates - The X and Y coordinates for the `click` action. Coordinates should be within the **{{BROWSER_VIEWPORT_WIDTH}}x{{BROWSER_VIEWPORT_HEIGHT}}** resolution. Example: '450,300'",
    ),
    ("text", false, "Use this for providing the text for the `type` action. Example: 'Hello, world!'"),
];

/// The result text of every action but `close` (Cline's, around the logs).
fn executed_text(logs: &str) -> String {
    let logs = if logs.is_empty() { "(No new logs)" } else { logs };
    format!(
        "The browser action has been executed. The console logs and screenshot have been captured for your analysis.\n\nConsole logs:\n{logs}\n\n(REMEMBER: if you need to proceed to using non-`browser_action` tools or launch a new browser, you MUST first close this browser. For example, if after analyzing the logs and screenshot you need to edit a file, you must first close the browser before you can use the write_to_file tool.)"
    )
}

/// The result text of `close`, Cline's.
const CLOSED: &str = "The browser has been closed. You may now proceed to using other tools.";

/// The start of every error text of a failed action, Cline's (`Error ${action}: ${error.message}`).
const ERROR_PREFIX: &str = "Error executing browser_action";

/// The input: every parameter a string, as Cline reads them (a native call's other JSON values as their
/// JSON text: `[450,300]` is the coordinate `"[450,300]"`).
#[derive(Debug, Default, Deserialize, PartialEq)]
pub struct BrowserActionArgs {
    #[serde(default, deserialize_with = "lenient_string")]
    action: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    url: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    coordinate: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    text: Option<String>,
}

/// The handler.
pub struct BrowserAction;

/// A call whose parameters passed Cline's checks.
struct Checked<'a> {
    action: BrowserActionKind,
    /// `launch`'s URL.
    url: Option<&'a str>,
    /// `click`'s coordinate.
    coordinate: Option<&'a str>,
    /// `type`'s text.
    text: Option<&'a str>,
}

/// A parameter as Cline's `!value` reads it: absent, null and empty are missing.
fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.is_empty())
}

/// Cline's checks, in its order: an action that is missing or none of the six is a missing `action`; then
/// `launch` needs `url`, `click` needs `coordinate`, `type` needs (non-empty) `text`. `Err` names the missing
/// parameter.
fn check(args: &BrowserActionArgs) -> Result<Checked<'_>, &'static str> {
    let action = given(&args.action).and_then(BrowserActionKind::parse).ok_or("action")?;
    let mut checked = Checked { action, url: None, coordinate: None, text: None };
    match action {
        BrowserActionKind::Launch => checked.url = Some(given(&args.url).ok_or("url")?),
        BrowserActionKind::Click => checked.coordinate = Some(given(&args.coordinate).ok_or("coordinate")?),
        BrowserActionKind::Type => checked.text = Some(given(&args.text).ok_or("text")?),
        BrowserActionKind::ScrollDown | BrowserActionKind::ScrollUp | BrowserActionKind::Close => {}
    }
    Ok(checked)
}

/// One spec.
fn spec(parameters: Vec<ParamSpec>) -> ToolSpec {
    ToolSpec {
        id: NAME.to_owned(),
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        // No task_progress: Cline's browser_action specs do not take it.
        parameters,
        // Cline's `contextRequirements: (context) => context.supportsBrowserUse === true`.
        context_requirements: vec!["browser".to_owned()],
    }
}

impl Tool for BrowserAction {
    type Args = BrowserActionArgs;

    fn declaration() -> ToolDeclaration {
        let generic = GENERIC_PARAMETERS
            .iter()
            .map(|&(name, required, instruction, usage)| ParamSpec::new(name, required, instruction).usage(usage))
            .collect();
        let native = NATIVE_PARAMETERS
            .iter()
            .map(|&(name, required, instruction)| ParamSpec::new(name, required, instruction))
            .collect();
        ToolDeclaration {
            name: NAME.to_owned(),
            aliases: Vec::new(),
            capabilities: vec![capability::NETWORK.to_owned()],
            display: Some("[{tool} for '{action}']".to_owned()),
            // Cline has these two; every other family falls back to the generic one, as in Cline.
            specs: [("generic".to_owned(), spec(generic)), ("native-next-gen".to_owned(), spec(native))]
                .into_iter()
                .collect(),
            // The handler checks its parameters in Cline's order: an unknown action reads as a missing one.
            checks_parameters: true,
            param_aliases: Default::default(),
        }
    }

    fn new(_init: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(BrowserAction))
    }

    /// Only `launch` asks, as Cline's `browser_action_launch`; a `file://` URL names its file, so a file
    /// outside the workspace asks as any path outside it does, and one `.clineignore` blocks is refused.
    ///
    /// A call missing a parameter proceeds without asking: Cline closes the browser when it reports one, and
    /// `prepare` must not act (nor could a refusal here reach `execute`, which the runtime skips then), so
    /// `execute` repeats the checks, closes the browser and returns the mistake. Cline asks nothing before
    /// those checks either.
    fn prepare(&self, call: &ToolCall<BrowserActionArgs>, host: &HostClient<'_>) -> Result<Prepared, Failure> {
        let Ok(Checked { action: BrowserActionKind::Launch, url: Some(url), .. }) = check(&call.input) else {
            return Ok(Prepared::Proceed);
        };
        let mut paths = Vec::new();
        if let Some(path) = file_url_path(url) {
            match host.path_allowed(&path) {
                Ok(true) => {}
                Ok(false) => return Ok(result::refuse(result::clineignore_error(&path))),
                Err(e) => return Ok(result::refuse(e.message)),
            }
            // The host's absolute form (links and roots as the policy sees them); the URL's own path when the
            // host cannot resolve paths.
            paths.push(host.resolve_path(&path).map_or(path, |resolved| resolved.absolute));
        }
        Ok(result::approval("browser", format!("Cline wants to use a browser and launch {url}"), paths, Risk::High))
    }

    fn execute(&self, call: &ToolCall<BrowserActionArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let checked = match check(&call.input) {
            Ok(checked) => checked,
            Err(missing) => {
                // Cline closes the browser on every missing parameter; nothing open is no error.
                let _ = host.call::<BrowserActionService>(&request(BrowserActionKind::Close));
                return Ok(result::missing_parameter(missing));
            }
        };
        let action = checked.action;
        match (action, checked.url) {
            (BrowserActionKind::Launch, Some(url)) => {
                host.say("browser_action_launch", url, false);
                // The "Browser Session Started" spinner.
                host.say("browser_action_result", "", false);
            }
            _ => host.say(NAME, &action_message(action, &call.input.coordinate, &call.input.text), false),
        }
        let request = BrowserActionRequest {
            url: checked.url.map(str::to_owned),
            coordinate: checked.coordinate.map(str::to_owned),
            text: checked.text.map(str::to_owned),
            ..request(action)
        };
        let response = host.call::<BrowserActionService>(&request).map_err(|e| {
            if e.kind == ServiceErrorKind::UnknownService {
                Failure::error(format!("{ERROR_PREFIX}: this host offers no browser (the `browser.action` service)"))
            } else {
                Failure::error(format!("{ERROR_PREFIX}: {}", e.message))
            }
        })?;
        if action == BrowserActionKind::Close {
            return Ok(result::text(CLOSED));
        }
        host.say("browser_action_result", &result_message(&response), false);
        let text = executed_text(&response.logs);
        Ok(match response.screenshot {
            Some(screenshot) => {
                result::blocks(vec![Block::Text { text }, result::image(screenshot.media_type, screenshot.data)])
            }
            // Cline's `toolResult` without an image is the text alone.
            None => result::text(text),
        })
    }

    /// Cline's streaming messages: the URL of a `launch` (its ask), or the action of another; nothing until
    /// the action is one of the six.
    fn partial(&self, block: &PartialBlock, host: &HostClient<'_>) {
        let get = |key: &str| block.input.get(key).and_then(Value::as_str).map(str::to_owned);
        let Some(action) = get("action").as_deref().and_then(BrowserActionKind::parse) else {
            return;
        };
        if action == BrowserActionKind::Launch {
            host.say("browser_action_launch", &get("url").unwrap_or_default(), true);
        } else {
            host.say(NAME, &action_message(action, &get("coordinate"), &get("text")), true);
        }
    }
}

mod export {
    use super::{export_plugin, BrowserAction};

    export_plugin! { name: "browser_action", version: env!("CARGO_PKG_VERSION"), tools: [BrowserAction] }
}

/// A request for `action` with no parameters.
fn request(action: BrowserActionKind) -> BrowserActionRequest {
    BrowserActionRequest { action, url: None, coordinate: None, text: None }
}

/// Cline's `ClineSayBrowserAction` for the UI: `{action, coordinate, text}`, the absent ones left out as
/// `JSON.stringify` leaves out `undefined`.
fn action_message(action: BrowserActionKind, coordinate: &Option<String>, text: &Option<String>) -> String {
    #[derive(Serialize)]
    struct Message<'a> {
        action: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        coordinate: &'a Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        text: &'a Option<String>,
    }
    serde_json::to_string(&Message { action: action.name(), coordinate, text }).unwrap_or_default()
}

/// Cline's `BrowserActionResult` for the UI, in its key order: the screenshot as a data URL, the logs, the
/// page's URL and the mouse position.
fn result_message(response: &BrowserActionResponse) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Message<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        screenshot: Option<String>,
        logs: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        current_url: &'a Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        current_mouse_position: &'a Option<String>,
    }
    let screenshot = response.screenshot.as_ref().map(|s| format!("data:{};base64,{}", s.media_type, s.data));
    let message = Message {
        screenshot,
        logs: &response.logs,
        current_url: &response.current_url,
        current_mouse_position: &response.current_mouse_position,
    };
    serde_json::to_string(&message).unwrap_or_default()
}

/// The local path a `file:` URL names, percent-decoded, with `.` and `..` resolved as a URL parser resolves
/// them; `None` for any other URL. The host (`localhost`, or another name) is dropped, as is any query or
/// fragment; backslashes count as slashes, as in every special URL.
fn file_url_path(url: &str) -> Option<String> {
    let url = url.trim_matches(|c: char| c <= ' ');
    let scheme = url.get(..5).filter(|scheme| scheme.eq_ignore_ascii_case("file:"))?;
    let rest = url[scheme.len()..].replace('\\', "/");
    let rest: String = rest.chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect();
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let path = match rest.strip_prefix("//") {
        Some(authority_and_path) => authority_and_path.find('/').map_or("", |i| &authority_and_path[i..]),
        None => rest,
    };
    let decoded = percent_decode(path);
    // Decoded before the dot segments are resolved, so an encoded `..` (or `/`) cannot hide one.
    let mut segments: Vec<&str> = Vec::new();
    for segment in decoded.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    Some(format!("/{}", segments.join("/")))
}

/// `%XX` sequences as the bytes they stand for (UTF-8, invalid sequences replaced); a `%` not followed by
/// two hex digits stays.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(high), Some(low)) =
                (bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex))
        {
            // Two hex digits are at most 255.
            out.push(u8::try_from(high * 16 + low).unwrap_or(b'%'));
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests;
