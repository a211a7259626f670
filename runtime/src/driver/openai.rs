//! An [`AgentDriver`] for OpenAI-compatible chat-completions endpoints: `POST {base_url}/chat/completions`
//! with the model, the messages, the tools in OpenAI's format (the spec converter) and `stream: true`; the
//! server-sent events are read as they arrive, text deltas appended and tool-call argument fragments joined
//! per call index, until `data: [DONE]`. Everything the endpoint sends is capped: each line and event
//! (`sse.rs`), the whole answer (`[subagents] max_response_bytes`), and each tool call's arguments.
//!
//! It has its own `reqwest` client (rustls, like the host's `http.request` client): that service answers
//! whole bodies to plugin threads, and a driver needs the stream on the runtime's own thread.

use super::sse::{Overflow, SseLines, MAX_LINE_BYTES};
use super::{AgentDriver, AgentMessage, AgentReply, AgentRequest, AgentToolCall, AgentUsage, DriverError};
use crate::spec::{Provider, ToolSchemas};
use crate::types::BoxFuture;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// The longest one tool call's arguments may grow, its fragments joined.
const MAX_ARGUMENT_BYTES: usize = MAX_LINE_BYTES;

/// How much of an error answer's body is read for its message.
const MAX_ERROR_BODY_BYTES: usize = 4096;

/// A driver for an OpenAI-compatible chat-completions endpoint.
#[derive(Clone)]
pub struct OpenAiDriver {
    client: reqwest::Client,
    base_url: String,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
    context_window: u64,
    max_response_bytes: u64,
}

impl std::fmt::Debug for OpenAiDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("OpenAiDriver")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl OpenAiDriver {
    /// A driver for `base_url` (such as `https://api.openai.com/v1`) asking for `model`, without a key, with a
    /// two-minute request timeout.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Result<Self, DriverError> {
        let client = reqwest::Client::builder()
            .build()
            .map_err(|e| DriverError(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            client,
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(120),
            context_window: 0,
            max_response_bytes: crate::config::SubagentsConfig::default().max_response_bytes,
        })
    }

    /// A driver from `[subagents]`: `base_url`, `model` (default `gpt-4o`), the key from the variable named
    /// by `api_key_env`, `request_timeout_ms`, `context_window` and `max_response_bytes`. `None` without a
    /// `base_url`.
    pub fn from_config(config: &crate::config::SubagentsConfig) -> Result<Option<Self>, DriverError> {
        let Some(base_url) = &config.base_url else {
            return Ok(None);
        };
        let model = config.model.clone().unwrap_or_else(|| "gpt-4o".to_owned());
        let key = std::env::var(&config.api_key_env).ok().filter(|k| !k.trim().is_empty());
        Ok(Some(
            Self::new(base_url.clone(), model)?
                .api_key(key)
                .timeout(Duration::from_millis(config.request_timeout_ms))
                .context_window(config.context_window)
                .max_response_bytes(config.max_response_bytes),
        ))
    }

    /// The bearer key sent in `Authorization`.
    pub fn api_key(mut self, key: Option<String>) -> Self {
        self.api_key = key;
        self
    }

    /// The longest one request (its whole stream) may take.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The model's context window, reported with every reply's usage.
    pub fn context_window(mut self, tokens: u64) -> Self {
        self.context_window = tokens;
        self
    }

    /// The most one answer may stream, every event together (16 MiB by default); a longer one fails the
    /// request.
    pub fn max_response_bytes(mut self, bytes: u64) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// The request body for `request`.
    pub fn body(&self, request: &AgentRequest) -> Value {
        let mut messages = vec![json!({"role": "system", "content": request.system_prompt})];
        for message in &request.messages {
            match message {
                AgentMessage::User { text } => {
                    let parts: Vec<Value> = text.iter().map(|t| json!({"type": "text", "text": t})).collect();
                    messages.push(json!({"role": "user", "content": parts}));
                }
                AgentMessage::Assistant { text, tool_calls } => {
                    let mut entry = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::from(text.as_str()) }});
                    if !tool_calls.is_empty() {
                        entry["tool_calls"] = tool_calls
                            .iter()
                            .map(|call| {
                                json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}})
                            })
                            .collect();
                    }
                    messages.push(entry);
                }
                AgentMessage::ToolResults { results } => {
                    // Every tool message first: a user message (images) may not sit between them.
                    let (mut tools, mut users) = (Vec::new(), Vec::new());
                    for message in results.iter().flat_map(super::super::types::ToolResult::to_openai) {
                        if message["role"] == "tool" {
                            tools.push(message);
                        } else {
                            users.push(message);
                        }
                    }
                    messages.extend(tools);
                    messages.extend(users);
                }
            }
        }
        let model = request.model.clone().unwrap_or_else(|| self.model.clone());
        let mut body = json!({
            "model": model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if let ToolSchemas::Json(tools) = Provider::OpenAi.render(&request.tools)
            && tools.as_array().is_some_and(|t| !t.is_empty())
        {
            body["tools"] = tools;
        }
        body
    }

    async fn complete(&self, request: AgentRequest) -> Result<AgentReply, DriverError> {
        let url = format!("{}/chat/completions", self.base_url);
        let body = serde_json::to_string(&self.body(&request))
            .map_err(|e| DriverError(format!("cannot write the model request: {e}")))?;
        let mut builder = self.client.post(&url).header(reqwest::header::CONTENT_TYPE, "application/json").body(body);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        let mut response =
            builder.send().await.map_err(|e| DriverError(format!("The model request to {url} failed: {e}")))?;
        if !response.status().is_success() {
            let status = response.status();
            // Only the start of the body: an error page may never end.
            let mut body = Vec::new();
            while body.len() < MAX_ERROR_BODY_BYTES {
                match response.chunk().await {
                    Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                    Ok(None) | Err(_) => break,
                }
            }
            let body: String = String::from_utf8_lossy(&body).chars().take(500).collect();
            return Err(DriverError(format!("The model endpoint answered {status}: {body}")));
        }
        let mut stream = SseReply::default();
        let mut lines = SseLines::new(self.max_response_bytes);
        let overflow = |e: Overflow| DriverError(e.message());
        loop {
            let chunk = response.chunk().await.map_err(|e| DriverError(format!("The model stream broke off: {e}")))?;
            let Some(chunk) = chunk else { break };
            lines.push(&chunk).map_err(overflow)?;
            while let Some(line) = lines.next_line().map_err(overflow)? {
                if stream.line(&String::from_utf8_lossy(line))? {
                    return Ok(stream.finish(self.context_window));
                }
            }
        }
        if !lines.rest().is_empty() {
            stream.line(&String::from_utf8_lossy(lines.rest()))?;
        }
        Ok(stream.finish(self.context_window))
    }
}

impl AgentDriver for OpenAiDriver {
    fn next_message(&self, request: AgentRequest) -> BoxFuture<Result<AgentReply, DriverError>> {
        let driver = self.clone();
        Box::pin(async move {
            match tokio::time::timeout(driver.timeout, driver.complete(request)).await {
                Ok(reply) => reply,
                Err(_) => Err(DriverError(format!(
                    "The model did not answer within {} ms ([subagents] request_timeout_ms).",
                    driver.timeout.as_millis()
                ))),
            }
        })
    }
}

/// A streamed reply being assembled from its events.
#[derive(Debug, Default)]
struct SseReply {
    text: String,
    /// Tool calls by their stream index: id, name, argument text.
    calls: BTreeMap<u64, (String, String, String)>,
    usage: Option<(u64, u64)>,
}

impl SseReply {
    /// Takes one line of the event stream; `true` at `data: [DONE]`.
    fn line(&mut self, line: &str) -> Result<bool, DriverError> {
        let line = line.trim_end_matches(['\r', '\n']);
        let Some(data) = line.strip_prefix("data:") else {
            // Comments, `event:` and `id:` lines and the blank lines between events carry nothing here.
            return Ok(false);
        };
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let event: Value = serde_json::from_str(data)
            .map_err(|e| DriverError(format!("The model stream sent an unreadable event ({e}): {data}")))?;
        if let Some(error) = event.get("error") {
            let message = error.get("message").and_then(Value::as_str).map_or_else(|| error.to_string(), str::to_owned);
            return Err(DriverError(format!("The model endpoint reported an error: {message}")));
        }
        if let Some(usage) = event.get("usage").filter(|u| u.is_object()) {
            let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Some((count("prompt_tokens"), count("completion_tokens")));
        }
        for choice in event.get("choices").and_then(Value::as_array).into_iter().flatten() {
            let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) else { continue };
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                self.text.push_str(text);
            }
            for (position, call) in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten().enumerate()
            {
                let index = call.get("index").and_then(Value::as_u64).unwrap_or(position as u64);
                let entry = self.calls.entry(index).or_default();
                if let Some(id) = call.get("id").and_then(Value::as_str) {
                    entry.0.push_str(id);
                }
                let function = call.get("function");
                if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str) {
                    entry.1.push_str(name);
                }
                match function.and_then(|f| f.get("arguments")) {
                    Some(Value::String(fragment)) => entry.2.push_str(fragment),
                    // Some servers send the arguments as an object in one piece.
                    Some(object @ Value::Object(_)) => entry.2.push_str(&object.to_string()),
                    _ => {}
                }
                if entry.2.len() > MAX_ARGUMENT_BYTES {
                    let name: String =
                        if entry.1.is_empty() { "a tool".to_owned() } else { entry.1.chars().take(64).collect() };
                    return Err(DriverError(format!(
                        "The model's arguments for tool call {index} ({name}) went past {MAX_ARGUMENT_BYTES} bytes."
                    )));
                }
            }
        }
        Ok(false)
    }

    fn finish(self, context_window: u64) -> AgentReply {
        let tool_calls = self
            .calls
            .into_iter()
            .map(|(index, (id, name, arguments))| AgentToolCall {
                id: if id.is_empty() { format!("call_{index}") } else { id },
                name,
                arguments,
            })
            .collect();
        AgentReply {
            text: self.text,
            tool_calls,
            usage: self.usage.map(|(input_tokens, output_tokens)| AgentUsage {
                input_tokens,
                output_tokens,
                context_window,
            }),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn streamed_tool_call_fragments_are_joined_per_index() {
        let mut reply = SseReply::default();
        let lines = [
            r#"data: {"choices":[{"delta":{"role":"assistant","content":"Look"}}]}"#,
            "",
            r#"data: {"choices":[{"delta":{"content":"ing."}}]}"#,
            r#"data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}"#,
            r#"data: {"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"list_files","arguments":"{}"}}]}}]}"#,
            r#"data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\": \"a.rs\"}"}}]}}]}"#,
            r#"data: {"choices":[],"usage":{"prompt_tokens":120,"completion_tokens":30}}"#,
        ];
        for line in lines {
            assert!(!reply.line(line).unwrap());
        }
        assert!(reply.line("data: [DONE]\r\n").unwrap());
        let reply = reply.finish(1000);
        assert_eq!(reply.text, "Looking.");
        assert_eq!(
            reply.tool_calls,
            [
                AgentToolCall {
                    id: "call_a".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path": "a.rs"}"#.into()
                },
                AgentToolCall { id: "call_b".into(), name: "list_files".into(), arguments: "{}".into() },
            ]
        );
        assert_eq!(reply.usage, Some(AgentUsage { input_tokens: 120, output_tokens: 30, context_window: 1000 }));
    }

    #[test]
    fn unreadable_events_and_stream_errors_fail_the_request() {
        let mut reply = SseReply::default();
        assert!(reply.line("data: {not json").unwrap_err().0.contains("unreadable event"));
        let error = reply.line(r#"data: {"error":{"message":"rate limited"}}"#).unwrap_err();
        assert_eq!(error.0, "The model endpoint reported an error: rate limited");
    }
}
