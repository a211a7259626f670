//! The plugin against Cline's spec snapshots and a fake host's browser service.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use toolshed_plugin_api::services::{BrowserScreenshot, Say, SayRequest};
use toolshed_plugin_api::testing::FakeHost;
use toolshed_plugin_api::{ServiceError, ToolError};

/// One of Cline's snapshots (host-tests/data/cline-snapshots, verbatim from v4.0.10).
fn snapshot(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../host-tests/data/cline-snapshots").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The viewport of Cline's test context, filled in as the runtime fills it.
fn fill(text: &str) -> String {
    text.replace("{{BROWSER_VIEWPORT_WIDTH}}", "1280").replace("{{BROWSER_VIEWPORT_HEIGHT}}", "720")
}

/// Cline's PromptBuilder section of a spec (every parameter shown: none has dependencies).
fn xml_section(spec: &ToolSpec) -> String {
    let mut lines =
        vec![format!("## {}", spec.name), format!("Description: {}", spec.description), "Parameters:".into()];
    for p in &spec.parameters {
        let required = if p.required { "required" } else { "optional" };
        lines.push(format!("- {}: ({required}) {}", p.name, p.description));
    }
    lines.push("Usage:".into());
    lines.push(format!("<{}>", spec.name));
    for p in &spec.parameters {
        lines.push(format!("<{0}>{1}</{0}>", p.name, p.usage.as_deref().unwrap_or_default()));
    }
    lines.push(format!("</{}>", spec.name));
    fill(&lines.join("\n"))
}

#[test]
fn the_declaration_is_clines() {
    let declaration = BrowserAction::declaration();
    assert_eq!(declaration.name, "browser_action");
    assert_eq!(declaration.display.as_deref(), Some("[{tool} for '{action}']"));
    assert_eq!(declaration.capabilities, vec![capability::NETWORK.to_owned()]);
    assert!(declaration.checks_parameters);
    let families: Vec<_> = declaration.specs.keys().map(String::as_str).collect();
    assert_eq!(families, ["generic", "native-next-gen"]);
    for spec in declaration.specs.values() {
        assert_eq!(spec.context_requirements, ["browser"]);
        let params: Vec<_> = spec.parameters.iter().map(|p| (p.name.as_str(), p.required, p.kind.as_str())).collect();
        assert_eq!(
            params,
            [
                ("action", true, "string"),
                ("url", false, "string"),
                ("coordinate", false, "string"),
                ("text", false, "string")
            ]
        );
    }
}

#[test]
fn the_xml_section_is_clines_byte_for_byte() {
    let prompt = snapshot("anthropic_claude_sonnet_4-basic.snap");
    let start = prompt.find("## browser_action\n").expect("a browser_action section");
    let end = start + prompt[start..].find("</browser_action>").expect("its end") + "</browser_action>".len();
    assert_eq!(xml_section(&BrowserAction::declaration().specs["generic"]), prompt[start..end]);
}

#[test]
fn the_native_specs_are_clines() {
    let declaration = BrowserAction::declaration();
    // native-next-gen has its own spec; gpt-5-native (and every other family) falls back to the generic one.
    for (snap, family) in [("cline_native_next_gen", "native-next-gen"), ("openai_gpt_5_native", "generic")] {
        let tools: Value = serde_json::from_str(&snapshot(&format!("{snap}.tools.snap"))).unwrap();
        let tool = tools
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| &tool["function"])
            .find(|function| function["name"] == NAME)
            .expect("browser_action in the snapshot");
        let spec = &declaration.specs[family];
        assert_eq!(tool["description"], fill(&spec.description), "{snap}");
        assert_eq!(tool["parameters"]["required"], json!(["action"]), "{snap}");
        let properties = tool["parameters"]["properties"].as_object().unwrap();
        let names: Vec<_> = properties.keys().map(String::as_str).collect();
        let mut ours: Vec<_> = spec.parameters.iter().map(|p| p.name.as_str()).collect();
        ours.sort_unstable();
        let mut names = names;
        names.sort_unstable();
        assert_eq!(names, ours, "{snap}");
        for p in &spec.parameters {
            assert_eq!(properties[&p.name], json!({"type": "string", "description": fill(&p.description)}), "{snap}");
        }
    }
}

/// What the fake browser answered and was asked.
type Requests = Arc<Mutex<Vec<BrowserActionRequest>>>;

/// A workspace host at `/ws` whose browser answers `answer`.
fn host_with(
    answer: impl Fn(&BrowserActionRequest) -> Result<BrowserActionResponse, ServiceError> + Send + Sync + 'static,
) -> (FakeHost, Requests) {
    let requests: Requests = Arc::default();
    let seen = Arc::clone(&requests);
    let host = FakeHost::workspace(Path::new("/ws")).on::<BrowserActionService>(move |request| {
        let answer = answer(&request);
        seen.lock().unwrap().push(request);
        answer
    });
    (host, requests)
}

/// A browser that answers every action with a screenshot and `logs`.
fn browser(logs: &'static str) -> (FakeHost, Requests) {
    host_with(move |request| {
        Ok(match request.action {
            BrowserActionKind::Close => BrowserActionResponse::default(),
            _ => BrowserActionResponse {
                screenshot: Some(BrowserScreenshot { media_type: "image/webp".into(), data: "AAAA".into() }),
                logs: logs.to_owned(),
                current_url: Some("http://localhost:3000/".into()),
                current_mouse_position: request.coordinate.clone(),
            },
        })
    })
}

fn call(input: Value) -> ToolCall<BrowserActionArgs> {
    serde_json::from_value(json!({ "tool": "browser_action", "input": input })).expect("a call")
}

fn close() -> BrowserActionRequest {
    request(BrowserActionKind::Close)
}

fn says(host: &FakeHost) -> Vec<(String, String, bool)> {
    host.take_requests::<Say>().into_iter().map(|SayRequest { kind, text, partial }| (kind, text, partial)).collect()
}

#[test]
fn arguments_are_read_as_strings() {
    let input = call(json!({"action": "click", "coordinate": [450, 300], "text": null})).input;
    assert_eq!(
        input,
        BrowserActionArgs { action: Some("click".into()), coordinate: Some("[450,300]".into()), ..Default::default() }
    );
}

#[test]
fn missing_parameters_in_clines_order_close_the_browser() {
    let cases = [
        (json!({}), "action"),
        (json!({"action": ""}), "action"),
        (json!({"action": "hover", "url": "http://x"}), "action"),
        (json!({"action": "Launch", "url": "http://x"}), "action"),
        (json!({"action": "launch"}), "url"),
        (json!({"action": "launch", "url": ""}), "url"),
        (json!({"action": "launch", "coordinate": "1,2", "text": "t"}), "url"),
        (json!({"action": "click", "url": "http://x"}), "coordinate"),
        (json!({"action": "type"}), "text"),
        (json!({"action": "type", "text": ""}), "text"),
    ];
    for (input, missing) in cases {
        let (host, requests) = browser("");
        let call = call(input.clone());
        // Nothing to ask, no side effect: execute reports it.
        assert_eq!(host.prepare(&BrowserAction, &call), Prepared::Proceed, "{input}");
        assert!(requests.lock().unwrap().is_empty());
        assert_eq!(host.execute(&BrowserAction, &call), result::missing_parameter(missing), "{input}");
        assert_eq!(*requests.lock().unwrap(), [close()], "{input}");
    }
    // Without a browser service the mistake is the same.
    let host = FakeHost::new();
    assert_eq!(host.execute(&BrowserAction, &call(json!({"action": "launch"}))), result::missing_parameter("url"));
    assert_eq!(
        result::missing_parameter("url"),
        Outcome::Error(ToolError {
            message: format!(
                "Missing value for required parameter 'url'. Please retry with complete response.\n\n{}",
                result::TOOL_USE_REMINDER
            ),
            mistake: true,
        })
    );
}

#[test]
fn only_launch_asks() {
    let (host, requests) = browser("");
    let prepared = |input: Value| host.prepare(&BrowserAction, &call(input));
    assert_eq!(
        prepared(json!({"action": "launch", "url": "http://localhost:3000"})),
        result::approval(
            "browser",
            "Cline wants to use a browser and launch http://localhost:3000",
            vec![],
            Risk::High
        )
    );
    for input in [
        json!({"action": "click", "coordinate": "450,300"}),
        json!({"action": "type", "text": "hi"}),
        json!({"action": "scroll_down"}),
        json!({"action": "scroll_up"}),
        json!({"action": "close"}),
    ] {
        assert_eq!(prepared(input.clone()), Prepared::Proceed, "{input}");
    }
    assert!(requests.lock().unwrap().is_empty(), "prepare never drives the browser");
}

#[test]
fn a_file_url_names_its_file() {
    let (host, _) = browser("");
    let prepared = |url: &str| host.prepare(&BrowserAction, &call(json!({"action": "launch", "url": url})));
    let asks = |url: &str, path: &str| {
        result::approval(
            "browser",
            format!("Cline wants to use a browser and launch {url}"),
            vec![path.into()],
            Risk::High,
        )
    };
    for (url, path) in [
        ("file:///ws/site/index.html", "/ws/site/index.html"),
        ("file:///etc/passwd", "/etc/passwd"),
        ("FILE://localhost/ws/a%20b.html?x=1#top", "/ws/a b.html"),
        ("file:///ws/%2e%2e/etc/passwd", "/etc/passwd"),
        ("file:///ws/site/..%2F..%2Fetc/passwd", "/etc/passwd"),
        ("file:/ws/./x.html", "/ws/x.html"),
        ("file:\\\\\\ws\\x.html", "/ws/x.html"),
    ] {
        assert_eq!(prepared(url), asks(url, path), "{url}");
    }
    host.block(["secret"]);
    assert_eq!(
        prepared("file:///ws/secret/page.html"),
        result::refuse(result::clineignore_error("/ws/secret/page.html"))
    );
    assert_eq!(file_url_path("https://example.com/file:///x"), None);
    assert_eq!(file_url_path("filex:///x"), None);
    assert_eq!(percent_decode("100%25 %zz %4"), "100% %zz %4");
    assert_eq!(percent_decode("%C3%A9"), "é");
}

#[test]
fn a_screenshot_action_answers_with_text_and_image() {
    let (host, requests) = browser("");
    let outcome = host.execute(&BrowserAction, &call(json!({"action": "launch", "url": "http://localhost:3000"})));
    let text = "The browser action has been executed. The console logs and screenshot have been captured for your analysis.\n\nConsole logs:\n(No new logs)\n\n(REMEMBER: if you need to proceed to using non-`browser_action` tools or launch a new browser, you MUST first close this browser. For example, if after analyzing the logs and screenshot you need to edit a file, you must first close the browser before you can use the write_to_file tool.)";
    assert_eq!(outcome, result::blocks(vec![Block::Text { text: text.into() }, result::image("image/webp", "AAAA")]));
    assert_eq!(
        *requests.lock().unwrap(),
        [BrowserActionRequest { url: Some("http://localhost:3000".into()), ..request(BrowserActionKind::Launch) }]
    );
    assert_eq!(
        says(&host),
        [
            ("browser_action_launch".into(), "http://localhost:3000".into(), false),
            ("browser_action_result".into(), String::new(), false),
            (
                "browser_action_result".into(),
                r#"{"screenshot":"data:image/webp;base64,AAAA","logs":"","currentUrl":"http://localhost:3000/"}"#
                    .into(),
                false
            ),
        ]
    );

    let (host, requests) = browser("[Page Error] ReferenceError: x is not defined\n[Error] boom");
    let outcome = host.execute(&BrowserAction, &call(json!({"action": "click", "coordinate": "450, 300", "text": 1})));
    let Outcome::Success { blocks, is_error: false } = outcome else { panic!("{outcome:?}") };
    let Block::Text { text } = &blocks[0] else { panic!("{blocks:?}") };
    assert!(
        text.contains("\n\nConsole logs:\n[Page Error] ReferenceError: x is not defined\n[Error] boom\n\n(REMEMBER")
    );
    assert_eq!(blocks[1], result::image("image/webp", "AAAA"));
    assert_eq!(
        *requests.lock().unwrap(),
        [BrowserActionRequest { coordinate: Some("450, 300".into()), ..request(BrowserActionKind::Click) }]
    );
    let said = says(&host);
    assert_eq!(
        said[0],
        ("browser_action".into(), r#"{"action":"click","coordinate":"450, 300","text":"1"}"#.into(), false)
    );
    assert!(said[1].1.ends_with(r#""currentUrl":"http://localhost:3000/","currentMousePosition":"450, 300"}"#));

    for (action, input) in [
        (BrowserActionKind::Type, json!({"action": "type", "text": "hello"})),
        (BrowserActionKind::ScrollDown, json!({"action": "scroll_down", "url": "ignored"})),
        (BrowserActionKind::ScrollUp, json!({"action": "scroll_up"})),
    ] {
        let (host, requests) = browser("");
        assert!(matches!(host.execute(&BrowserAction, &call(input.clone())), Outcome::Success { .. }), "{input}");
        let sent = requests.lock().unwrap()[0].clone();
        assert_eq!(sent.action, action);
        assert_eq!((sent.url, sent.coordinate), (None, None));
        assert_eq!(sent.text.is_some(), action == BrowserActionKind::Type);
    }
}

#[test]
fn a_response_without_a_screenshot_is_text_alone() {
    let (host, _) = host_with(|_| Ok(BrowserActionResponse::default()));
    let outcome = host.execute(&BrowserAction, &call(json!({"action": "scroll_down"})));
    assert_eq!(outcome, result::text(executed_text("")));
}

#[test]
fn close_answers_clines_text() {
    let (host, requests) = browser("");
    let outcome = host.execute(&BrowserAction, &call(json!({"action": "close"})));
    assert_eq!(outcome, result::text("The browser has been closed. You may now proceed to using other tools."));
    assert_eq!(*requests.lock().unwrap(), [close()]);
    assert_eq!(says(&host), [("browser_action".into(), r#"{"action":"close"}"#.into(), false)]);
}

#[test]
fn service_errors_are_clines_errors() {
    let (host, _) = host_with(|_| {
        Err(ServiceError::new(
            ServiceErrorKind::Failed,
            "Browser is not launched. This may occur if the browser was automatically closed by a non-`browser_action` tool.",
        ))
    });
    assert_eq!(
        host.execute(&BrowserAction, &call(json!({"action": "click", "coordinate": "1,1"}))),
        result::error(
            "Error executing browser_action: Browser is not launched. This may occur if the browser was automatically closed by a non-`browser_action` tool."
        )
    );
    let host = FakeHost::workspace(Path::new("/ws"));
    assert_eq!(
        host.execute(&BrowserAction, &call(json!({"action": "launch", "url": "http://x"}))),
        result::error("Error executing browser_action: this host offers no browser (the `browser.action` service)")
    );
}

#[test]
fn partial_blocks_stream_the_url_or_the_action() {
    let (host, _) = browser("");
    let partial = |input: Value| {
        let block: PartialBlock = serde_json::from_value(json!({"tool": "browser_action", "input": input})).unwrap();
        BrowserAction.partial(&block, &host.client());
    };
    partial(json!({"action": "lau"}));
    partial(json!({"action": "launch", "url": "http://loc"}));
    partial(json!({"action": "launch"}));
    partial(json!({"action": "type", "text": "hel"}));
    assert_eq!(
        says(&host),
        [
            ("browser_action_launch".into(), "http://loc".into(), true),
            ("browser_action_launch".into(), String::new(), true),
            ("browser_action".into(), r#"{"action":"type","text":"hel"}"#.into(), true),
        ]
    );
}
