//! One assistant message's tool uses under Cline's message-level rules (CLINE-TOOLS.md §0, Cline's
//! `ToolExecutor`): one tool per message unless the host enables parallel calls (then consecutive read-only
//! tools run concurrently and every other tool alone, in message order); after a rejection the remaining
//! tools are skipped with Cline's text; results come back in the message's order; and when the task's
//! consecutive mistakes reach the host's limit the turn says so, as Cline asks its user then.

use crate::messages;
use crate::runtime::TaskHandle;
use crate::types::{ResultStatus, ToolResult, ToolUse};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use toolshed_plugin_api::capability;

/// The results of one assistant message's tool uses.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    /// One result per tool use, in the message's order.
    pub results: Vec<ToolResult>,
    /// Set when the task's consecutive mistakes reached the host's limit: ask the user before the next
    /// request, then call [`TaskHandle::resume_after_mistakes`].
    pub mistake_limit: Option<MistakeLimit>,
}

/// The mistake limit was reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MistakeLimit {
    /// The consecutive mistakes counted.
    pub count: u32,
    /// What Cline tells the user (its guidance text for Claude models or for others).
    pub message: String,
    /// In YOLO mode nobody is asked: Cline fails the task with this text.
    pub yolo_failure: Option<String>,
}

impl TurnResult {
    /// The user message for a text-mode (XML) model: every result's text, in order, separated by a blank
    /// line.
    pub fn to_model_text(&self) -> String {
        self.results.iter().map(ToolResult::to_model_text).collect::<Vec<_>>().join("\n\n")
    }

    /// The content of the Anthropic user message answering the assistant message: one `tool_result` block
    /// per tool use.
    pub fn to_anthropic(&self) -> Vec<Value> {
        self.results.iter().map(ToolResult::to_anthropic).collect()
    }

    /// The OpenAI chat-completions messages answering the assistant message: a `tool` message per call,
    /// then the user messages carrying images, if any (they may not sit between tool messages).
    pub fn to_openai(&self) -> Vec<Value> {
        let (mut tools, mut users) = (Vec::new(), Vec::new());
        for result in &self.results {
            for message in result.to_openai() {
                if message["role"] == "tool" {
                    tools.push(message);
                } else {
                    users.push(message);
                }
            }
        }
        tools.extend(users);
        tools
    }
}

pub(crate) async fn execute_message(task: &TaskHandle, tool_uses: Vec<ToolUse>) -> TurnResult {
    let parallel = task.task_shared().parallel_tool_calls;
    let mut results: Vec<ToolResult> = Vec::with_capacity(tool_uses.len());
    let mut rejected = false;
    let mut used = false;
    let mut pending = tool_uses.into_iter().peekable();
    while let Some(tool_use) = pending.next() {
        if rejected {
            results.push(skipped(task, &tool_use, ResultStatus::Skipped, messages::SKIPPED_AFTER_REJECTION));
            continue;
        }
        if !parallel && used {
            let text = messages::tool_already_used(&tool_use.name);
            results.push(ToolResult::plain(&tool_use, String::new(), ResultStatus::Skipped, text));
            continue;
        }
        used = true;
        if !(parallel && read_only(task, &tool_use.name)) {
            let result = task.execute(tool_use).await;
            rejected = result.status == ResultStatus::Denied;
            results.push(result);
            continue;
        }
        // A run of read-only tools: concurrently, results in order.
        let mut batch = vec![tool_use];
        while let Some(next) = pending.next_if(|next| read_only(task, &next.name)) {
            batch.push(next);
        }
        let uses: Vec<ToolUse> = batch.clone();
        let done = join_all(batch.into_iter().map(|tool_use| task.execute(tool_use)).collect()).await;
        for (result, tool_use) in done.into_iter().zip(uses) {
            if rejected {
                // It ran alongside the rejected call; read-only, it changed nothing, and the model is told it
                // was skipped as Cline tells it for every tool after a rejection.
                results.push(skipped(task, &tool_use, ResultStatus::Skipped, messages::SKIPPED_AFTER_REJECTION));
                continue;
            }
            rejected = result.status == ResultStatus::Denied;
            results.push(result);
        }
    }
    let shared = task.task_shared();
    let count = shared.mistakes.load(Ordering::Relaxed);
    let mistake_limit = (count >= shared.max_mistakes).then(|| MistakeLimit {
        count,
        message: if shared.info.model_family.to_ascii_lowercase().contains("claude") {
            messages::MISTAKE_LIMIT_CLAUDE.to_owned()
        } else {
            messages::MISTAKE_LIMIT_OTHER.to_owned()
        },
        yolo_failure: shared.yolo.then(|| messages::yolo_too_many_mistakes(count)),
    });
    TurnResult { results, mistake_limit }
}

/// Cline's text for a tool the model cannot run because the user rejected an earlier one:
/// `{reason} {description}`.
fn skipped(task: &TaskHandle, tool_use: &ToolUse, status: ResultStatus, reason: &str) -> ToolResult {
    let description = task.describe(tool_use);
    let text = format!("{reason} {description}");
    let mut result = ToolResult::plain(tool_use, description, status, text);
    result.note = Some("skipped by a message-level rule".to_owned());
    result
}

/// A tool that was still streaming when an earlier tool of the message was rejected: Cline's
/// "interrupted" text for it.
pub fn interrupted(task: &TaskHandle, tool_use: &ToolUse) -> ToolResult {
    skipped(task, tool_use, ResultStatus::Skipped, messages::INTERRUPTED_AFTER_REJECTION)
}

fn read_only(task: &TaskHandle, name: &str) -> bool {
    task.route_capabilities(name).is_some_and(|(caps, _)| caps.iter().any(|c| c == capability::READ_ONLY))
}

/// Awaits every future, concurrently, on whatever executor polls it; outputs in input order.
async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx: &mut Context<'_>| {
        let mut all = true;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => all = false,
                }
            }
        }
        if all {
            Poll::Ready(outputs.iter_mut().filter_map(Option::take).collect())
        } else {
            Poll::Pending
        }
    })
    .await
}
