//! The checked HTTP client's reading of SSE events and failed bodies, on generated events.

use super::*;

/// A client for a connection's fault; rmcp's reqwest has no crypto provider of its own (the hub installs one).
fn client(fault: &Fault) -> CheckedHttp {
    let _ = rustls::crypto::ring::default_provider().install_default();
    CheckedHttp::new(fault.clone(), 1000).unwrap()
}

fn data(text: &str) -> Result<Sse, SseError> {
    Ok(Sse::default().data(text))
}

fn fault_of(item: Result<Sse, SseError>) -> String {
    match check_event(item, 1000) {
        Err(reason) => reason,
        Ok(item) => panic!("expected a fault, got {item:?}"),
    }
}

#[test]
fn events_rmcp_would_drop_are_faults_in_the_stdio_words() {
    let deep = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"deep":{}{}}}}}"#, "[".repeat(200), "]".repeat(200));
    assert_eq!(fault_of(data(&deep)), "sent JSON nested deeper than 128 levels");
    assert!(fault_of(data("garbage")).starts_with("sent a message that is not JSON"));
    assert!(
        fault_of(data(r#"{"jsonrpc":"2.0","id":1,"result":{"#)).starts_with("sent a message that is not valid JSON")
    );
    assert_eq!(fault_of(data(r#"{"hello":"world"}"#)), "sent JSON that is not a JSON-RPC message");
    assert_eq!(
        fault_of(data(r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#)),
        "sent a JSON-RPC batch, which MCP does not allow"
    );
    let bytes: Vec<u8> = b"ab".iter().copied().chain([0xff]).collect();
    let utf8 = std::str::from_utf8(&bytes).unwrap_err();
    assert_eq!(
        fault_of(Err(SseError::Utf8Parse(utf8))),
        "sent a message that is not valid UTF-8 (at byte 2 of an SSE line)"
    );
    assert!(fault_of(Err(SseError::InvalidLine)).starts_with("sent an event stream that is not valid SSE"));
    let too_large: Box<dyn std::error::Error + Send + Sync> =
        "SSE event exceeded the maximum size of 1000 bytes".into();
    assert_eq!(
        fault_of(Err(SseError::Body(too_large))),
        "sent a message longer than 1000 bytes (the limit is [mcp] max_message_bytes = 1000)"
    );
}

#[test]
fn messages_priming_events_control_events_and_connection_failures_pass() {
    let passes = |item: Result<Sse, SseError>| check_event(item, 1000).is_ok();
    assert!(passes(data(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#)));
    assert!(passes(data(r#"{"jsonrpc":"2.0","method":"notifications/unknown/to/rmcp","params":{"x":1}}"#)));
    assert!(passes(Ok(Sse::default().id("e1").data(""))));
    assert!(passes(Ok(Sse::default().event("endpoint").data("/elsewhere"))));
    let reset: Box<dyn std::error::Error + Send + Sync> = "connection reset".into();
    assert!(passes(Err(SseError::Body(reset))));
}

#[test]
fn a_stream_ends_after_its_first_bad_event_and_no_other_opens() {
    let fault = Fault::default();
    let client = client(&fault);
    let events = futures::stream::iter([data("garbage"), data(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#)]).boxed();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let seen: Vec<_> = runtime.block_on(client.checked(events, 1000).collect());
    assert_eq!(seen.len(), 1);
    assert!(seen[0].is_err());
    assert!(fault.get().unwrap().starts_with("sent a message that is not JSON"));
    assert!(client.closed().is_err());
}

#[test]
fn bodies_rmcp_could_not_decode_are_recorded_in_the_same_words() {
    let noted = |error: HttpError| {
        let fault = Fault::default();
        client(&fault).note(&error);
        fault.get()
    };
    let unreadable = |why: &str| HttpError::UnexpectedServerResponse(format!("{UNREADABLE_BODY}{why}").into());
    assert_eq!(
        noted(unreadable("recursion limit exceeded at line 1 column 130: {\"jsonrpc\"")).unwrap(),
        "sent JSON nested deeper than 128 levels"
    );
    assert!(noted(unreadable("invalid unicode code point at line 1 column 40: x"))
        .unwrap()
        .starts_with("sent a message that is not valid UTF-8 (invalid unicode code point"));
    assert!(noted(unreadable("expected value at line 1 column 1: garbage"))
        .unwrap()
        .starts_with("sent a response that is not a valid JSON-RPC message (expected value"));
    assert_eq!(
        noted(HttpError::ResponseBodyTooLarge { max_size: 1000 }).unwrap(),
        "sent a message longer than 1000 bytes (the limit is [mcp] max_message_bytes = 1000)"
    );
    // Failures that are not the server's words stay the transport's.
    assert_eq!(noted(HttpError::UnexpectedServerResponse("HTTP 500: oops".into())), None);
    assert_eq!(noted(HttpError::SessionExpired), None);
}
