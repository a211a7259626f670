//! The host around the runtimes: the user who answers (or denies), the model that drives subagents, and a
//! small HTTP server on 127.0.0.1 playing the Cline search API and a web page for the web tools.

use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use toolshed::{
    AgentDriver, AgentMessage, AgentReply, AgentRequest, AgentToolCall, Answer, ApprovalPrompt, Approver, BoxFuture,
    DriverError, HostAction, Interaction, Question, Reply, UserReply,
};

/// The user of the denying runtime: says no to every ask.
pub struct DenyingUser;

impl Approver for DenyingUser {
    fn ask(&self, _prompt: ApprovalPrompt) -> BoxFuture<Reply> {
        Box::pin(async { Reply { answer: Answer::Deny, feedback: None } })
    }
}

/// The user of the approving runtime's conversational tools: picks the first option, accepts everything
/// else, and carries out new_task, condense and report_bug (not summarize_task or generate_explanation).
pub struct AnsweringHost;

impl Interaction for AnsweringHost {
    fn ask(&self, question: Question) -> BoxFuture<Option<UserReply>> {
        let answer = match question.kind.as_str() {
            "followup" => UserReply::text(question.options.first().cloned().unwrap_or_default()),
            _ => UserReply::accepted(),
        };
        Box::pin(async move { Some(answer) })
    }

    fn new_task(&self, _task_id: &str, _context: &str) -> BoxFuture<HostAction> {
        Box::pin(async { HostAction::Answered(UserReply::accepted()) })
    }

    fn condense(&self, _task_id: &str, _summary: &str) -> BoxFuture<HostAction> {
        Box::pin(async { HostAction::Answered(UserReply::accepted()) })
    }

    fn report_bug(&self, _task_id: &str, _report: &toolshed::BugReport) -> BoxFuture<HostAction> {
        Box::pin(async { HostAction::Answered(UserReply::accepted()) })
    }
}

/// The model of use_subagents' runs: reads the guide, then reports it with attempt_completion.
pub struct ScriptedModel;

impl AgentDriver for ScriptedModel {
    fn next_message(&self, request: AgentRequest) -> BoxFuture<Result<AgentReply, DriverError>> {
        let read = request.messages.iter().any(|m| matches!(m, AgentMessage::ToolResults { .. }));
        let (id, name, arguments) = if read {
            ("call-2", "attempt_completion", json!({"result": "Relevant file paths\ndocs/guide.md"}))
        } else {
            ("call-1", "read_file", json!({"path": "docs/guide.md"}))
        };
        let call = AgentToolCall { id: id.to_owned(), name: name.to_owned(), arguments: arguments.to_string() };
        Box::pin(async move { Ok(AgentReply { text: String::new(), tool_calls: vec![call], usage: None }) })
    }
}

/// Starts the local site: `POST /api/v1/search/websearch` answers one search result, anything else a small
/// HTML page. One thread per connection (the soak's tasks fetch concurrently); every answer closes its
/// connection, so no descriptor outlives its call.
pub fn serve_site() -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream));
        }
    });
    Ok(addr)
}

fn answer(mut stream: TcpStream) {
    let Ok(clone) = stream.try_clone() else { return };
    let mut reader = BufReader::new(clone);
    let (mut line, mut length) = (String::new(), 0usize);
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length.min(1 << 20)];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let (content_type, text) = if path == "/api/v1/search/websearch" {
        (
            "application/json",
            r#"{"data":{"results":[{"title":"Toolshed on docs.rs","url":"https://docs.rs/toolshed"}]}}"#,
        )
    } else {
        ("text/html", "<html><head><title>Guide</title></head><body><h1>Soak</h1><p>Run <b>cargo xtask soak</b>.</p></body></html>")
    };
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}
