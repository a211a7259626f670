//! rmcp's errors in the words the model reads: the TypeScript SDK's `MCP error {code}: {message}` once, and
//! no Rust type names. rmcp's `Display` nests (`Mcp error: -32602: …`), names its transport's Rust type
//! (`Transport [toolshed::services::mcp::transport::Checked<…>] error: …`) and prints whole messages with
//! `{:?}`; and a TypeScript server's error message already starts with `MCP error {code}: ` (its `McpError`
//! bakes the prefix into the message it sends), which a second prefix would double.

use rmcp::model::ErrorData;
use rmcp::service::ClientInitializeError;
use rmcp::ServiceError;

/// Data longer than this (as compact JSON) is left out of an error: it is for programs, not the model.
const MAX_DATA_CHARS: usize = 200;

/// A JSON-RPC error as the TypeScript SDK words it, `MCP error {code}: {message}`, the prefix once however
/// the server worded its message, with the error's data when it is short.
pub(super) fn mcp_error(error: &ErrorData) -> String {
    let code = error.code.0;
    let prefix = format!("MCP error {code}: ");
    let mut message = error.message.trim();
    while let Some(rest) = message.strip_prefix(&prefix) {
        message = rest.trim_start();
    }
    let mut text = format!("{prefix}{message}");
    if let Some(data) = &error.data {
        let data = serde_json::to_string(data).unwrap_or_default();
        if !data.is_empty() && data != "null" && data.chars().count() <= MAX_DATA_CHARS {
            text.push_str(&format!(" ({data})"));
        }
    }
    text
}

/// A failed request in words (the transport's own reason, when it closed the connection, is worded by the
/// hub before this is asked).
pub(super) fn service_error(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(data) => mcp_error(data),
        ServiceError::TransportClosed => "MCP error -32000: Connection closed".to_owned(),
        ServiceError::TransportSend(e) => format!("MCP error -32000: Connection failed: {}", sources(e.error.as_ref())),
        ServiceError::Timeout { .. } => "MCP error -32001: Request timed out".to_owned(),
        ServiceError::Cancelled { reason } => match reason {
            Some(reason) => format!("the request was cancelled: {reason}"),
            None => "the request was cancelled".to_owned(),
        },
        ServiceError::UnexpectedResponse => "the server answered with a response of another request's kind".to_owned(),
        ServiceError::SubscriptionLagged { .. } => {
            "the server sent notifications faster than they were read".to_owned()
        }
        ServiceError::InputRequiredRoundsExceeded { max_rounds } => {
            format!("the server kept asking for input beyond {max_rounds} rounds")
        }
        // rmcp's enum is non-exhaustive: a variant it adds later gets its own words, minus type names.
        other => toolshed_plugin_api::sdk::without_type_names(&other.to_string()),
    }
}

/// Why `initialize` failed, in words.
pub(super) fn initialize_error(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::JsonRpcError(data) => mcp_error(data),
        ClientInitializeError::ExpectedInitResponse(_) | ClientInitializeError::ExpectedInitResult(_) => {
            "the server answered initialize with something other than its initialize result".to_owned()
        }
        ClientInitializeError::ConnectionClosed(when) => format!("the connection closed ({when})"),
        ClientInitializeError::TransportError { error, context } => {
            format!("the connection failed when {context}: {}", sources(error.error.as_ref()))
        }
        ClientInitializeError::NoCompatibleProtocolVersion { server_supported, .. } => {
            let versions: Vec<&str> = server_supported.iter().map(rmcp::model::ProtocolVersion::as_str).collect();
            format!("the server speaks no protocol version this client does (it offers {})", versions.join(", "))
        }
        ClientInitializeError::Cancelled => "initialize was cancelled".to_owned(),
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => initialize_error(fallback),
        other => toolshed_plugin_api::sdk::without_type_names(&other.to_string()),
    }
}

/// An error and its sources, `outer: inner`, each level once (wrappers often repeat their source).
fn sources(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let next = e.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = e.source();
    }
    toolshed_plugin_api::sdk::without_type_names(&text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use rmcp::model::ErrorCode;
    use serde_json::json;

    #[test]
    fn the_prefix_appears_once_and_short_data_is_kept() {
        let error = |message: &str, data| ErrorData::new(ErrorCode::INVALID_PARAMS, message.to_owned(), data);
        assert_eq!(
            mcp_error(&error("MCP error -32602: Resource demo://nope not found", None)),
            "MCP error -32602: Resource demo://nope not found"
        );
        assert_eq!(mcp_error(&error("Invalid params", None)), "MCP error -32602: Invalid params");
        assert_eq!(
            mcp_error(&error("MCP error -32602: MCP error -32602: twice", Some(json!({"field": "a"})))),
            "MCP error -32602: twice ({\"field\":\"a\"})"
        );
        // Another code's prefix is the server's own text, kept.
        assert_eq!(mcp_error(&error("MCP error -32000: inner", None)), "MCP error -32602: MCP error -32000: inner");
        let long = json!({"trace": "x".repeat(500)});
        assert_eq!(mcp_error(&error("bad", Some(long))), "MCP error -32602: bad");
        let wrapped = ServiceError::McpError(error("MCP error -32602: bad", None));
        assert_eq!(service_error(&wrapped), "MCP error -32602: bad");
    }

    #[test]
    fn transport_errors_name_no_rust_type() {
        let io = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "Broken pipe");
        let error = rmcp::transport::DynamicTransportError::from_parts(
            "toolshed::services::mcp::transport::Checked<Lines>",
            std::any::TypeId::of::<u8>(),
            Box::new(io),
        );
        let text = service_error(&ServiceError::TransportSend(error));
        assert_eq!(text, "MCP error -32000: Connection failed: Broken pipe");
    }
}
