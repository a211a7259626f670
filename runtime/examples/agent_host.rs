//! A minimal agent host: a scripted model speaking Cline's XML tool-use format, streamed chunk by chunk
//! into the runtime (partial blocks to `partial_use`, complete ones run as one message with Cline's
//! message-level rules), and a terminal approval prompt.
//!
//! ```sh
//! cargo run -p toolshed --example agent_host -- --plugins target/plugins-debug            # asks on the terminal
//! cargo run -p toolshed --example agent_host -- --plugins target/plugins-debug --yes      # approves everything
//! cargo run -p toolshed --example agent_host -- --plugins target/plugins-debug --answers y,n
//! OPENAI_API_KEY=… cargo run -p toolshed --example agent_host -- --plugins target/plugins-debug \
//!     --openai https://api.openai.com/v1 --model gpt-4o --prompt "Summarise the README"
//! ```
//!
//! With `--openai URL` the model is a real OpenAI-compatible endpoint instead of the script: the
//! [`toolshed::OpenAiDriver`] streams each turn with native tool calls, and the same driver runs the
//! subagents use_subagents starts.
//!
//! With neither a terminal nor `--yes`/`--answers`, asks are denied. It checks its own results (with
//! `--yes`) and exits non-zero when one is wrong; `cargo xtask test` runs it.

use anyhow::{bail, Context, Result};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use toolshed::stream::XmlEvent;
use toolshed::{Answer, ApprovalPrompt, Approver, BoxFuture, Reply, Runtime, TaskContext, TerminalApprover};

/// The model's side of the conversation: one assistant message per turn. A real host calls its model here
/// with the system prompt's XML tools section (`task.tools(Provider::Xml)`) and the previous results.
const SCRIPT: &[&str] = &[
    "I'll start by writing the page.\n<write_to_file>\n<path>index.html</path>\n<content>\n<html><body><p>Hello</p></body></html>\n</content>\n</write_to_file>",
    "Now let me check it.\n<read_file>\n<path>index.html</path>\n</read_file>",
    "And list the workspace.\n<list_files>\n<path>.</path>\n</list_files>",
];

/// Answers from `--answers y,n,a`.
struct ScriptedAnswers(Mutex<VecDeque<Answer>>);

impl Approver for ScriptedAnswers {
    fn ask(&self, prompt: ApprovalPrompt) -> BoxFuture<Reply> {
        let answer = self.0.lock().ok().and_then(|mut a| a.pop_front()).unwrap_or(Answer::Deny);
        eprintln!("agent_host: {} -> {answer:?}", prompt.message);
        Box::pin(async move { Reply { answer, feedback: None } })
    }
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut plugins = std::env::var_os("TOOLSHED_PLUGINS").map(PathBuf::from);
    let (mut yes, mut answers) = (false, None);
    let (mut openai, mut model, mut prompt) = (None, "gpt-4o".to_owned(), None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--plugins" => plugins = Some(PathBuf::from(args.next().context("--plugins needs a directory")?)),
            "--yes" => yes = true,
            "--openai" => {
                openai = Some(args.next().context("--openai needs a base URL such as https://api.openai.com/v1")?)
            }
            "--model" => model = args.next().context("--model needs a model name")?,
            "--prompt" => prompt = Some(args.next().context("--prompt needs the task's text")?),
            "--answers" => {
                let list = args.next().context("--answers needs a list such as y,n")?;
                let parsed: Result<VecDeque<Answer>> = list
                    .split(',')
                    .map(|a| match a.trim() {
                        "y" => Ok(Answer::Approve),
                        "n" => Ok(Answer::Deny),
                        "a" => Ok(Answer::AlwaysAllow),
                        other => bail!("unknown answer {other:?}: use y, n or a"),
                    })
                    .collect();
                answers = Some(parsed?);
            }
            other => bail!("unknown argument {other:?}"),
        }
    }
    let plugins = plugins.unwrap_or_else(|| PathBuf::from("target/plugins-debug"));
    let workspace = tempfile::Builder::new().prefix("agent-host-").tempdir()?;

    let mut builder = Runtime::builder().plugin_dir(&plugins).yes(yes);
    if let Some(answers) = answers {
        builder = builder.approver(ScriptedAnswers(Mutex::new(answers)));
    } else if let Some(terminal) = TerminalApprover::detect() {
        builder = builder.approver(terminal);
    }
    let driver = match &openai {
        Some(url) => Some(
            toolshed::OpenAiDriver::new(url.clone(), model)?
                .api_key(std::env::var("OPENAI_API_KEY").ok().filter(|k| !k.is_empty())),
        ),
        None => None,
    };
    if let Some(driver) = &driver {
        builder = builder.agent_driver(driver.clone());
    }
    let runtime = builder.build()?;
    if runtime.tools().is_empty() {
        bail!("no tools loaded from {}: run `cargo xtask plugins` first", plugins.display());
    }
    let task = runtime.task(TaskContext::new(workspace.path()).with_model_family("claude"));
    let transcript = Arc::new(Mutex::new(Vec::<String>::new()));

    let host = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    if let Some(driver) = driver {
        let prompt = prompt.unwrap_or_else(|| "List the files of the workspace, then finish.".to_owned());
        return host.block_on(converse(&runtime, &task, &driver, prompt));
    }
    host.block_on(async {
        for (turn, message) in SCRIPT.iter().enumerate() {
            println!("── turn {turn}: the model streams its message");
            let mut parser = task.xml_parser();
            let mut uses = Vec::new();
            // A model streams a few characters at a time.
            let chars: Vec<char> = message.chars().collect();
            let mut events = Vec::new();
            for chunk in chars.chunks(16) {
                events.extend(parser.push(&chunk.iter().collect::<String>()));
            }
            events.extend(parser.finish());
            for event in events {
                match event {
                    XmlEvent::Text(text) => println!("assistant: {text}"),
                    XmlEvent::Partial(block) => task.partial_use(&block).await,
                    XmlEvent::ToolUse(tool_use) => uses.push(tool_use),
                }
            }
            let turn = task.execute_message(uses).await;
            let text = turn.to_model_text();
            println!("{text}");
            transcript.lock().map_err(|_| anyhow::anyhow!("poisoned"))?.push(text);
            if let Some(limit) = &turn.mistake_limit {
                println!("the model made {} mistakes in a row: {}", limit.count, limit.message);
                break;
            }
        }
        anyhow::Ok(())
    })?;

    if yes {
        // With every ask approved, the session must have done its work.
        let written = std::fs::read_to_string(workspace.path().join("index.html"))?;
        if written.trim_end() != "<html><body><p>Hello</p></body></html>" {
            bail!("index.html holds {written:?}");
        }
        let transcript = transcript.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        if !transcript[1].contains("1 | <html><body><p>Hello</p></body></html>") {
            bail!("read_file did not show the page: {}", transcript[1]);
        }
        if !transcript[2].contains("index.html") {
            bail!("list_files did not list the page: {}", transcript[2]);
        }
        println!("agent_host: all checks passed");
    }
    Ok(())
}

/// The conversation with a real model: each turn streams through the driver with the task's tools as native
/// tools; the tool calls run as one message; it ends when the model calls attempt_completion or stops
/// calling tools (or after 20 turns).
async fn converse(
    runtime: &Runtime,
    task: &toolshed::TaskHandle,
    driver: &toolshed::OpenAiDriver,
    prompt: String,
) -> Result<()> {
    use toolshed::{AgentDriver, AgentMessage, AgentRequest, PromptVariant, ToolUse};
    let names: Vec<String> = runtime.tools().into_iter().map(|t| t.name).collect();
    let mut context = task.spec_context();
    context.native_tool_calls = true;
    let tools = runtime.specs().enabled(&PromptVariant::new("generic", names), &context);
    let mut messages = vec![AgentMessage::User { text: vec![prompt] }];
    for _ in 0..20 {
        let request = AgentRequest {
            model: None,
            system_prompt: "You are a coding agent. Use the tools to do the task, then call attempt_completion."
                .to_owned(),
            messages: messages.clone(),
            tools: tools.clone(),
        };
        let reply = driver.next_message(request).await.map_err(|e| anyhow::anyhow!(e))?;
        if !reply.text.is_empty() {
            println!("assistant: {}", reply.text);
        }
        if reply.tool_calls.is_empty() {
            return Ok(());
        }
        messages.push(AgentMessage::Assistant { text: reply.text.clone(), tool_calls: reply.tool_calls.clone() });
        let uses = reply.tool_calls.iter().map(|c| ToolUse::from_text(&c.id, &c.name, &c.arguments)).collect();
        let turn = task.execute_message(uses).await;
        println!("{}", turn.to_model_text());
        let done = reply.tool_calls.iter().any(|c| c.name == "attempt_completion");
        messages.push(AgentMessage::ToolResults { results: turn.results });
        if done {
            return Ok(());
        }
    }
    Ok(())
}
