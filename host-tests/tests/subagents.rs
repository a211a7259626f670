//! Subagents end to end: use_subagents through the real plugin, the coordinator's child tasks, and the
//! OpenAI-compatible driver talking real HTTP with SSE streaming to a scripted chat-completions server on
//! 127.0.0.1. The server picks its script by a marker in the prompt and its step by the number of assistant
//! messages in the request, so every request is answered from the conversation it carries.

use crate::util::{read_json_request, shipped, text, workspace};
use serde_json::{json, Value};
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use toolshed::{Config, OpenAiDriver, Provider, ResultStatus, Runtime, TaskContext, TaskHandle, ToolResult, ToolUse};

/// The one generous bound every wait in these tests has.
const BOUND: Duration = Duration::from_secs(60);

/// What the scripted server has seen.
#[derive(Default)]
struct Seen {
    /// Every request body, in arrival order.
    bodies: Vec<Value>,
    /// First requests of the `parallel-` scripts that have arrived.
    parallel_arrived: usize,
    /// Whether the `hang` script's request arrived.
    hanging: bool,
}

#[derive(Clone, Default)]
pub(crate) struct Server {
    seen: Arc<(Mutex<Seen>, Condvar)>,
}

impl Server {
    pub(crate) fn start() -> (Self, SocketAddr) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = Server::default();
        let handle = server.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let handle = handle.clone();
                std::thread::spawn(move || handle.serve(stream));
            }
        });
        (server, addr)
    }

    fn bodies(&self) -> Vec<Value> {
        self.seen.0.lock().unwrap().bodies.clone()
    }

    /// Waits (within the bound) until `ready` holds for what the server has seen.
    fn wait_for(&self, ready: impl Fn(&Seen) -> bool) -> bool {
        let (lock, cond) = &*self.seen;
        let guard = lock.lock().unwrap();
        let (_guard, timeout) = cond.wait_timeout_while(guard, BOUND, |seen| !ready(seen)).unwrap();
        !timeout.timed_out()
    }

    fn serve(&self, stream: TcpStream) {
        let Some(body) = read_json_request(&stream) else { return };
        let prompt = body["messages"][1]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
        let step = body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "assistant").count();
        {
            let (lock, cond) = &*self.seen;
            let mut seen = lock.lock().unwrap();
            seen.bodies.push(body);
            if prompt.starts_with("parallel-") && step == 0 {
                seen.parallel_arrived += 1;
            }
            if prompt.starts_with("hang") {
                seen.hanging = true;
            }
            cond.notify_all();
        }
        let events = self.script(&prompt, step);
        let mut stream = stream;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
        if stream.write_all(head.as_bytes()).is_err() {
            return;
        }
        for event in events {
            // Each event in its own write, so the client reads the stream in pieces.
            if stream.write_all(format!("data: {event}\n\n").as_bytes()).is_err() || stream.flush().is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = stream.write_all(b"data: [DONE]\n\n");
    }

    /// The events answering step `step` of the script `prompt` names.
    fn script(&self, prompt: &str, step: usize) -> Vec<String> {
        let done = |result: &str| vec![call("call_done", "attempt_completion", &json!({"result": result}).to_string())];
        match (prompt.split_whitespace().next().unwrap_or_default(), step) {
            ("read-search", 0) => {
                // The arguments arrive in three fragments.
                vec![
                    say_text("I'll read the notes."),
                    call_fragment(0, Some(("call_r", "read_file")), "{\"pa"),
                    call_fragment(0, None, "th\": \"notes"),
                    call_fragment(0, None, ".txt\"}"),
                    usage(1200, 40),
                ]
            }
            ("read-search", 1) => {
                vec![call("call_s", "search_files", r#"{"path": ".", "regex": "needle"}"#), usage(2400, 30)]
            }
            ("read-search", _) => {
                let mut events = done("Relevant file paths\nnotes.txt");
                events.push(usage(3000, 20));
                events
            }
            (name, 0) if name.starts_with("parallel-") => {
                // Held until all three first requests have arrived: they overlap, or this times out.
                let overlapped = self.wait_for(|seen| seen.parallel_arrived >= 3);
                done(&format!("{name} overlapped={overlapped}"))
            }
            ("hang", _) => {
                // Never answers within the test; the run is cancelled meanwhile.
                std::thread::sleep(BOUND);
                done("too late")
            }
            ("chatty", _) => vec![say_text("Still thinking about it.")],
            ("nest", 0) => vec![call("call_n", "use_subagents", r#"{"prompt_1": "deeper"}"#)],
            ("nest", _) => done("refused as expected"),
            ("malformed", 0) => vec![
                call_fragment(0, Some(("call_m", "read_file")), "{\"path\": "),
                call_fragment(1, Some(("call_u", "delete_everything")), "{}"),
            ],
            ("malformed", _) => done("recovered"),
            ("garbage", _) => vec!["{this is not json".to_owned()],
            ("review", 0) => done("Relevant file paths\nsrc/lib.rs"),
            (other, step) => vec![say_text(&format!("unscripted {other} {step}"))],
        }
    }
}

fn say_text(content: &str) -> String {
    json!({"choices": [{"index": 0, "delta": {"content": content}}]}).to_string()
}

fn call_fragment(index: u64, head: Option<(&str, &str)>, arguments: &str) -> String {
    let mut call = json!({"index": index, "function": {"arguments": arguments}});
    if let Some((id, name)) = head {
        call["id"] = json!(id);
        call["type"] = json!("function");
        call["function"]["name"] = json!(name);
    }
    json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}).to_string()
}

fn call(id: &str, name: &str, arguments: &str) -> String {
    call_fragment(0, Some((id, name)), arguments)
}

fn usage(prompt: u64, completion: u64) -> String {
    json!({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}}).to_string()
}

pub(crate) fn config(extra: &str) -> Config {
    Config::from_toml_str(&format!(
        "[timeouts]\ncancel_grace_ms = 3000\n[subagents]\nmax_turns = 10\nrequest_timeout_ms = 60000\n{extra}"
    ))
    .unwrap()
}

fn runtime_with_driver(addr: SocketAddr, extra: &str) -> Runtime {
    let driver = OpenAiDriver::new(format!("http://{addr}/v1"), "scripted-model")
        .unwrap()
        .api_key(Some("sk-test".to_owned()))
        .context_window(200_000);
    shipped().config(config(extra)).agent_driver(driver).build().unwrap()
}

pub(crate) fn workspace_with_notes() -> tempfile::TempDir {
    let dir = workspace();
    std::fs::write(dir.path().join("notes.txt"), "hello\nthe needle is here\n").unwrap();
    dir
}

/// Runs one tool use on a runtime of its own, within the bound.
fn run(task: &TaskHandle, name: &str, input: Value) -> ToolResult {
    let task = task.clone();
    let name = name.to_owned();
    crate::util::block_on(async move {
        tokio::time::timeout(BOUND, task.execute(ToolUse::new("toolu_sub", name, input))).await.expect("the call hung")
    })
}

#[test]
fn a_subagent_reads_and_searches_files_then_completes() {
    let (server, addr) = Server::start();
    let runtime = runtime_with_driver(addr, "");
    let dir = workspace_with_notes();
    let task = runtime.task(TaskContext::new(dir.path()));
    let result = run(&task, "use_subagents", json!({"prompt_1": "  read-search find the needle  ", "prompt_2": " "}));
    assert_eq!(result.status, ResultStatus::Success, "{}", text(&result));
    assert_eq!(
        text(&result),
        "Subagent results:\nTotal: 1\nSucceeded: 1\nFailed: 0\nTool calls: 3\nPeak context usage: 3,020 / 200,000 (1.5%)\n\n\
         [1] COMPLETED - read-search find the needle\nRelevant file paths\nnotes.txt"
    );
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    let first = &bodies[0];
    assert_eq!(first["model"], "scripted-model");
    assert_eq!(first["stream"], true);
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(system.ends_with(toolshed::SUBAGENT_SYSTEM_SUFFIX), "{system}");
    assert!(first["messages"][1]["content"][1]["text"]
        .as_str()
        .unwrap()
        .starts_with("<environment_details>\n# Workspace Configuration\n"));
    // The restricted tool set, in OpenAI's format, and never a subagent tool.
    let tools: Vec<&str> =
        first["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    for expected in [
        "read_file",
        "list_files",
        "search_files",
        "list_code_definition_names",
        "execute_command",
        "attempt_completion",
    ] {
        assert!(tools.contains(&expected), "{expected} missing from {tools:?}");
    }
    assert!(!tools.iter().any(|t| t.starts_with("use_subagent") || *t == "write_to_file"), "{tools:?}");
    // The tool results went back as tool messages answering the calls.
    let second = bodies[1]["messages"].as_array().unwrap();
    let answer = second.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(answer["tool_call_id"], "call_r");
    assert!(answer["content"].as_str().unwrap().contains("2 | the needle is here"), "{answer}");
    let third = bodies[2]["messages"].as_array().unwrap();
    let found = third.iter().rev().find(|m| m["role"] == "tool").unwrap();
    assert!(found["content"].as_str().unwrap().contains("Found 1 result."), "{found}");
    assert!(bodies.iter().all(|b| b["messages"][0]["role"] == "system"));
}

#[test]
fn three_subagents_run_in_parallel() {
    let (server, addr) = Server::start();
    let runtime = runtime_with_driver(addr, "");
    let dir = workspace();
    let task = runtime.task(TaskContext::new(dir.path()));
    let prompts = json!({"prompt_1": "parallel-a", "prompt_2": "parallel-b", "prompt_3": "parallel-c"});
    let result = run(&task, "use_subagents", prompts);
    let summary = text(&result);
    assert!(summary.starts_with("Subagent results:\nTotal: 3\nSucceeded: 3\nFailed: 0\nTool calls: 3\n"), "{summary}");
    for name in ["a", "b", "c"] {
        assert!(summary.contains(&format!("- parallel-{name}\nparallel-{name} overlapped=true")), "{summary}");
    }
    // In prompt order.
    let at = |s: &str| summary.find(s).unwrap();
    assert!(at("[1] COMPLETED - parallel-a") < at("[2] COMPLETED - parallel-b"));
    assert!(at("[2] COMPLETED - parallel-b") < at("[3] COMPLETED - parallel-c"));
    assert_eq!(server.bodies().len(), 3);
}

#[test]
fn cancelling_the_parent_cancels_the_runs() {
    let (server, addr) = Server::start();
    let runtime = runtime_with_driver(addr, "");
    let dir = workspace();
    let task = runtime.task(TaskContext::new(dir.path()));
    let canceller = task.clone();
    let watcher = server;
    let cancel = std::thread::spawn(move || {
        let arrived = watcher.wait_for(|seen| seen.hanging);
        canceller.cancel();
        arrived
    });
    let result = run(&task, "use_subagents", json!({"prompt_1": "hang forever"}));
    assert!(cancel.join().unwrap(), "the hanging request never arrived");
    let shown = result.to_model_text();
    assert!(
        shown.contains("[1] FAILED - hang forever\nSubagent run cancelled.")
            || shown.contains("Error executing use_subagents: the task was cancelled."),
        "{shown}"
    );
    assert!(
        shown.contains("Subagent run cancelled."),
        "the plugin's own answer arrives within cancel_grace_ms: {shown}"
    );
}

#[test]
fn a_subagent_that_never_completes_fails_after_three_empty_turns() {
    let (server, addr) = Server::start();
    let runtime = runtime_with_driver(addr, "");
    let dir = workspace();
    let task = runtime.task(TaskContext::new(dir.path()));
    let result = run(&task, "use_subagents", json!({"prompt_1": "chatty", "prompt_2": "review quickly"}));
    let summary = text(&result);
    assert!(summary.contains("Succeeded: 1\nFailed: 1\n"), "{summary}");
    assert!(summary.contains("[1] FAILED - chatty\nSubagent did not call attempt_completion."), "{summary}");
    let chatty: Vec<Value> =
        server.bodies().into_iter().filter(|b| b["messages"][1]["content"][0]["text"] == "chatty").collect();
    // The first turn and three retries, each answered with Cline's no-tools nudge.
    assert_eq!(chatty.len(), 4);
    let last = chatty[3]["messages"].as_array().unwrap().last().unwrap().clone();
    assert!(last["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("[ERROR] You did not use a tool in your previous response!"));
}

#[test]
fn a_subagent_cannot_start_subagents() {
    let (server, addr) = Server::start();
    let runtime = runtime_with_driver(addr, "");
    let dir = workspace();
    let task = runtime.task(TaskContext::new(dir.path()));
    let result = run(&task, "use_subagents", json!({"prompt_1": "nest"}));
    assert!(text(&result).contains("[1] COMPLETED - nest\nrefused as expected"), "{}", text(&result));
    let bodies = server.bodies();
    let refusal = bodies[1]["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap().clone();
    assert_eq!(refusal["tool_call_id"], "call_n");
    assert_eq!(
        refusal["content"],
        "The tool execution failed with the following error:\n<error>\nTool 'use_subagents' is not available inside subagent runs.\n</error>"
    );
}

#[test]
fn bad_input_gets_clines_errors() {
    let (server, addr) = Server::start();
    let runtime = runtime_with_driver(addr, "");
    let dir = workspace();
    let task = runtime.task(TaskContext::new(dir.path()));
    let six: serde_json::Map<String, Value> =
        (1..=6).map(|n| (format!("prompt_{n}"), json!(format!("p{n}")))).collect();
    let result = run(&task, "use_subagents", Value::Object(six));
    assert_eq!(result.status, ResultStatus::Error);
    assert_eq!(
        text(&result),
        "The tool execution failed with the following error:\n<error>\nToo many subagent prompts provided (6). Maximum is 5.\n</error>"
    );
    let result = run(&task, "use_subagents", json!({}));
    assert_eq!(result.status, ResultStatus::Error);
    assert!(text(&result).contains("Missing value for required parameter 'prompt_1'."), "{}", text(&result));
    assert!(server.bodies().is_empty(), "nothing may run on bad input");

    // A malformed tool call and an unknown tool in one message: both answered as tool errors, the run goes on.
    let result = run(&task, "use_subagents", json!({"prompt_1": "malformed", "prompt_2": "garbage"}));
    let summary = text(&result);
    assert!(summary.contains("[1] COMPLETED - malformed\nrecovered"), "{summary}");
    assert!(summary.contains("Tool calls: 2\n"), "{summary}");
    assert!(summary.contains("[2] FAILED - garbage\nThe model stream sent an unreadable event"), "{summary}");
    let answered = server
        .bodies()
        .into_iter()
        .find(|b| b["messages"][1]["content"][0]["text"] == "malformed" && b["messages"].as_array().unwrap().len() > 3)
        .unwrap();
    let tools: Vec<Value> =
        answered["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").cloned().collect();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["tool_call_id"], "call_m");
    assert!(tools[0]["content"].as_str().unwrap().contains("Invalid JSON input for read_file"), "{}", tools[0]);
    assert_eq!(tools[1]["tool_call_id"], "call_u");
    assert!(tools[1]["content"]
        .as_str()
        .unwrap()
        .contains("Tool 'delete_everything' is not available inside subagent runs."));
}

#[test]
fn without_a_driver_subagents_are_disabled() {
    let runtime = shipped().config(config("")).build().unwrap();
    let dir = workspace();
    let task = runtime.task(TaskContext::new(dir.path()));
    assert!(!task.tools(Provider::OpenAi).to_string().contains("use_subagents"));
    let result = run(&task, "use_subagents", json!({"prompt_1": "anything"}));
    assert_eq!(result.status, ResultStatus::Error);
    assert_eq!(
        text(&result),
        "The tool execution failed with the following error:\n<error>\nSubagents are disabled. Enable them in Settings > Features to use this tool.\n</error>"
    );
}

#[test]
fn configured_agents_are_their_own_tools() {
    let (server, addr) = Server::start();
    let agents = workspace();
    std::fs::write(
        agents.path().join("reviewer.toml"),
        "name = \"Code Reviewer\"\ndescription = \"Reviews diffs.\"\nmodel = \"reviewer-model\"\ntools = [\"read_file\", \"use_subagents\"]\n",
    )
    .unwrap();
    let extra = format!("agents_dir = {:?}\n", agents.path().to_string_lossy());
    let runtime = runtime_with_driver(addr, &extra);
    let dir = workspace();
    let task = runtime.task(TaskContext::new(dir.path()));
    let schemas = task.tools(Provider::OpenAi).to_string();
    assert!(schemas.contains("\"use_subagent_code_reviewer\""), "{schemas}");
    assert!(schemas.contains("Use the \\\"Code Reviewer\\\" subagent: Reviews diffs."), "{schemas}");

    let missing = run(&task, "use_subagent_code_reviewer", json!({}));
    assert_eq!(missing.status, ResultStatus::Error);
    assert!(text(&missing).contains("Missing value for required parameter 'prompt'."));

    let result = run(&task, "use_subagent_code_reviewer", json!({"prompt": "review the diff"}));
    assert_eq!(result.name, "use_subagent_code_reviewer");
    assert_eq!(result.description, "[subagent: Code Reviewer]");
    assert!(
        text(&result).contains("[1] COMPLETED - review the diff\nRelevant file paths\nsrc/lib.rs"),
        "{}",
        text(&result)
    );
    let body = &server.bodies()[0];
    assert_eq!(body["model"], "reviewer-model");
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("# Agent Profile\nName: Code Reviewer\nDescription: Reviews diffs.\n\n"), "{system}");
    let tools: Vec<&str> =
        body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["read_file", "attempt_completion"]);
}
