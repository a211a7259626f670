//! Embedding through the public API: multi-turn tasks driven by a scripted model (XML text mode and native
//! tool uses), message-level rules, hooks (host callbacks and real command scripts), parallel read-only
//! calls, loop detection, cancellation, several runtimes, and a host on a multi-thread tokio runtime.

use crate::util::{block_on, fixture, shipped, text, workspace};
use pretty_assertions::assert_eq;
use serde_json::json;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolshed::stream::XmlEvent;
use toolshed::{
    Answer, ApprovalPrompt, Approver, BoxFuture, Config, HookOutcome, Mode, Reply, ResultStatus, Runtime,
    RuntimeBuilder, TaskContext, TaskHandle, ToolUse,
};

/// Answers approval questions from a script, recording each question.
#[derive(Clone, Default)]
struct Scripted {
    answers: Arc<Mutex<VecDeque<Reply>>>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Scripted {
    fn new(answers: &[(Answer, Option<&str>)]) -> Self {
        let answers =
            answers.iter().map(|(answer, feedback)| Reply { answer: *answer, feedback: feedback.map(str::to_owned) });
        Self { answers: Arc::new(Mutex::new(answers.collect())), asked: Arc::default() }
    }
}

impl Approver for Scripted {
    fn ask(&self, prompt: ApprovalPrompt) -> BoxFuture<Reply> {
        self.asked.lock().unwrap().push(prompt.tool);
        let reply = self.answers.lock().unwrap().pop_front().unwrap_or(Reply { answer: Answer::Deny, feedback: None });
        Box::pin(async move { reply })
    }
}

fn with_fixtures() -> RuntimeBuilder {
    shipped().plugin_file(fixture("fixture_tools"))
}

fn read(id: &str, path: &str) -> ToolUse {
    ToolUse::new(id, "read_file", json!({"path": path}))
}

/// Feeds one scripted assistant message to the task in small chunks, as a streaming model would, and runs
/// its complete tool uses as one message.
fn run_xml_message(task: &TaskHandle, message: &str) -> (Vec<String>, toolshed::TurnResult, usize) {
    let mut parser = task.xml_parser();
    let (mut texts, mut uses, mut partials) = (Vec::new(), Vec::new(), 0);
    let chunks: Vec<String> = message.chars().collect::<Vec<_>>().chunks(7).map(|c| c.iter().collect()).collect();
    let mut events = Vec::new();
    for chunk in &chunks {
        events.extend(parser.push(chunk));
    }
    events.extend(parser.finish());
    for event in events {
        match event {
            XmlEvent::Text(text) => texts.push(text),
            XmlEvent::Partial(block) => {
                partials += 1;
                block_on(task.partial_use(&block));
            }
            XmlEvent::ToolUse(tool_use) => uses.push(tool_use),
        }
    }
    (texts, block_on(task.execute_message(uses)), partials)
}

#[test]
fn a_scripted_xml_model_over_several_turns() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    let runtime = shipped().yes(true).build().unwrap();
    let task = runtime.task(TaskContext::new(ws.path()).with_model_family("claude"));

    // Turn 1: text, then a write whose content holds tags, even `</content>` (the last one closes it).
    let (texts, turn, partials) = run_xml_message(
        &task,
        "I'll write the notes.\n<write_to_file>\n<path>notes.md</path>\n<content>\n<b>bold</b> </content> stays\n</content>\n</write_to_file>",
    );
    assert_eq!(texts, ["I'll write the notes."]);
    assert!(partials > 2, "the streamed block reached partial() {partials} times");
    assert_eq!(turn.results.len(), 1);
    assert_eq!(turn.results[0].status, ResultStatus::Success, "{}", turn.to_model_text());
    assert_eq!(std::fs::read_to_string(ws.path().join("notes.md")).unwrap(), "<b>bold</b> </content> stays");

    // Turn 2: two tools in one message without parallel calls: the second gets Cline's toolAlreadyUsed.
    let (_, turn, _) = run_xml_message(
        &task,
        "<read_file><path>a.txt</path></read_file>\n<read_file><path>notes.md</path></read_file>",
    );
    assert_eq!(turn.results[0].status, ResultStatus::Success);
    assert!(text(&turn.results[0]).contains("alpha"));
    assert_eq!(turn.results[1].status, ResultStatus::Skipped);
    assert_eq!(
        text(&turn.results[1]),
        "Tool [read_file] was not executed because a tool has already been used in this message. Only one tool may be used per message. You must assess the first tool's result before proceeding to use the next tool."
    );
    // Text mode shows a skipped tool's text without a result header.
    assert!(turn.to_model_text().ends_with("before proceeding to use the next tool."));

    // Turn 3 in plan mode: writes are refused; back in act mode they work.
    task.set_mode(Mode::Plan);
    assert_eq!(task.mode(), Mode::Plan);
    let (_, turn, _) = run_xml_message(&task, "<write_to_file><path>b.md</path><content>x</content></write_to_file>");
    assert!(
        text(&turn.results[0]).contains("Tool 'write_to_file' is not available in PLAN MODE."),
        "{}",
        text(&turn.results[0])
    );
    assert!(!ws.path().join("b.md").exists());
    task.set_mode(Mode::Act);
    let (_, turn, _) = run_xml_message(&task, "<write_to_file><path>b.md</path><content>x</content></write_to_file>");
    assert_eq!(turn.results[0].status, ResultStatus::Success, "{}", turn.to_model_text());
}

#[test]
fn a_denied_tool_skips_the_rest_of_the_message_and_feedback_reaches_the_model() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    let approver = Scripted::new(&[(Answer::Deny, Some("not that file")), (Answer::Approve, Some("fine, go"))]);
    let runtime = with_fixtures().approver(approver.clone()).build().unwrap();
    let task = runtime.task(TaskContext::new(ws.path()).with_parallel_tool_calls(true));

    let turn = block_on(task.execute_message(vec![
        ToolUse::new("w1", "pretend_write", json!({})),
        read("r1", "a.txt"),
        ToolUse::new("w2", "pretend_write", json!({})),
    ]));
    assert_eq!(turn.results[0].status, ResultStatus::Denied);
    assert_eq!(text(&turn.results[0]), "The user denied this operation.");
    assert_eq!(turn.results[0].feedback.as_deref(), Some("not that file"));
    assert!(turn.results[0].to_model_text().starts_with(
        "The user provided the following feedback:\n<feedback>\nnot that file\n</feedback>\n[pretend_write] Result:\nThe user denied this operation."
    ));
    assert_eq!(text(&turn.results[1]), "Skipping tool due to user rejecting a previous tool. [read_file for 'a.txt']");
    assert_eq!(text(&turn.results[2]), "Skipping tool due to user rejecting a previous tool. [pretend_write]");
    assert_eq!(turn.results.iter().map(|r| r.tool_use_id.as_str()).collect::<Vec<_>>(), ["w1", "r1", "w2"]);
    assert_eq!(approver.asked.lock().unwrap().len(), 1, "skipped tools are never asked about");

    // The next message: approved with feedback, which the native shapes carry too.
    let turn = block_on(task.execute_message(vec![ToolUse::new("w3", "pretend_write", json!({}))]));
    assert_eq!(turn.results[0].status, ResultStatus::Success);
    let anthropic = turn.to_anthropic();
    assert_eq!(anthropic[0]["type"], "tool_result");
    assert_eq!(anthropic[0]["tool_use_id"], "w3");
    assert_eq!(
        anthropic[0]["content"][0]["text"],
        "The user provided the following feedback:\n<feedback>\nfine, go\n</feedback>"
    );
    assert_eq!(anthropic[0]["content"][1]["text"], "written (pretend)");
    let openai = turn.to_openai();
    assert_eq!(openai[0]["role"], "tool");
    assert_eq!(openai[0]["tool_call_id"], "w3");
}

#[test]
fn a_pre_tool_use_callback_denies_a_call() {
    let ws = workspace();
    std::fs::write(ws.path().join("secret.txt"), "s3cret\n").unwrap();
    let runtime = shipped()
        .pre_tool_use(|input| async move {
            if input.tool_input["path"] == "secret.txt" {
                HookOutcome::deny("secrets stay secret")
            } else {
                HookOutcome::pass()
            }
        })
        .build()
        .unwrap();
    let task = runtime.task(TaskContext::new(ws.path()));
    let result = block_on(task.execute(read("1", "secret.txt")));
    assert_eq!(result.status, ResultStatus::Denied);
    assert_eq!(text(&result), "The user denied this operation.");
    assert_eq!(
        result.context_before,
        ["<hook_context source=\"PreToolUse\" type=\"general\">\nsecrets stay secret\n</hook_context>"]
    );
    assert!(!result.to_model_text().contains("s3cret"));
    std::fs::write(ws.path().join("open.txt"), "open\n").unwrap();
    assert_eq!(block_on(task.execute(read("2", "open.txt"))).status, ResultStatus::Success);
}

#[test]
fn command_hooks_speak_the_claude_code_protocol() {
    let ws = workspace();
    let hooks = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(ws.path().join("b.txt"), "beta\n").unwrap();
    let seen = hooks.path().join("seen.json");
    // Blocks reads of b.txt with exit 2 and a reason on stderr; records what it was told.
    let block = hooks.path().join("block.sh");
    std::fs::write(
        &block,
        format!(
            "input=$(cat)\nprintf '%s' \"$input\" > '{}'\ncase \"$input\" in *b.txt*) echo 'b.txt is off limits' >&2; exit 2;; esac\nexit 0\n",
            seen.display()
        ),
    )
    .unwrap();
    // Replies JSON with context before and after every call.
    let pre_context = hooks.path().join("pre.sh");
    std::fs::write(&pre_context, "cat > /dev/null\necho '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"allow\", \"additionalContext\": \"RULES: read slowly\"}}'\n").unwrap();
    let post_context = hooks.path().join("post.sh");
    std::fs::write(&post_context, "input=$(cat)\ncase \"$input\" in *'\"tool_response\"'*alpha*) echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\", \"additionalContext\": \"saw alpha\"}}';; esac\n").unwrap();
    let config = Config::from_toml_str(&format!(
        "[hooks]\ntimeout_ms = 20000\npre_tool_use = [{{ matcher = \"read_file|list_files\", command = \"sh '{}'\" }}, {{ command = \"sh '{}'\" }}]\npost_tool_use = [{{ matcher = \"read_.*\", command = \"sh '{}'\" }}]\n",
        block.display(),
        pre_context.display(),
        post_context.display()
    ))
    .unwrap();
    let runtime = shipped().config(config).build().unwrap();
    let task = runtime.task(TaskContext::new(ws.path()).with_id("task-hooks"));

    let denied = block_on(task.execute(read("toolu_b", "b.txt")));
    assert_eq!(denied.status, ResultStatus::Denied);
    assert_eq!(text(&denied), "The user denied this operation.");
    assert!(denied.context_before.iter().any(|c| c.contains("b.txt is off limits")), "{:?}", denied.context_before);
    let told: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(told["hook_event_name"], "PreToolUse");
    assert_eq!(told["tool_name"], "read_file");
    assert_eq!(told["tool_input"], json!({"path": "b.txt"}));
    assert_eq!(told["tool_use_id"], "toolu_b");
    assert_eq!(told["session_id"], "task-hooks");
    assert_eq!(told["cwd"], ws.path().to_string_lossy().as_ref());

    let allowed = block_on(task.execute(read("toolu_a", "a.txt")));
    assert_eq!(allowed.status, ResultStatus::Success);
    assert_eq!(
        allowed.context_before,
        ["<hook_context source=\"PreToolUse\" type=\"rules\">\nread slowly\n</hook_context>"]
    );
    assert_eq!(
        allowed.context_after,
        ["<hook_context source=\"PostToolUse\" type=\"general\">\nsaw alpha\n</hook_context>"]
    );
    let shown = allowed.to_model_text();
    let (before, after) = (shown.find("read slowly").unwrap(), shown.find("saw alpha").unwrap());
    let result_at = shown.find("[read_file for 'a.txt'] Result:").unwrap();
    assert!(before < result_at && result_at < after, "{shown}");
}

#[test]
fn parallel_read_only_calls_overlap_and_mutating_ones_run_alone() {
    let ws = workspace();
    // Each read-only call waits in its PreToolUse hook until both are there: they can only pass together.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let events = Arc::new(Mutex::new(Vec::<String>::new()));
    let (pre_events, post_events) = (Arc::clone(&events), Arc::clone(&events));
    let runtime = with_fixtures()
        .yes(true)
        .pre_tool_use(move |input| {
            let (barrier, events) = (Arc::clone(&barrier), Arc::clone(&pre_events));
            async move {
                events.lock().unwrap().push(format!("pre {}", input.tool_use_id));
                if input.tool_name == "sleep" {
                    // One generous bound: without overlap the first call would wait here alone.
                    if tokio::time::timeout(Duration::from_secs(30), barrier.wait()).await.is_err() {
                        return HookOutcome::deny("the other read-only call never ran alongside");
                    }
                }
                HookOutcome::pass()
            }
        })
        .post_tool_use(move |input| {
            let events = Arc::clone(&post_events);
            async move {
                events.lock().unwrap().push(format!("post {}", input.tool_use_id));
                HookOutcome::pass()
            }
        })
        .build()
        .unwrap();
    let task = runtime.task(TaskContext::new(ws.path()).with_parallel_tool_calls(true));
    let turn = block_on(task.execute_message(vec![
        ToolUse::new("s1", "sleep", json!({"ms": 30})),
        ToolUse::new("s2", "sleep", json!({"ms": 1})),
        ToolUse::new("w1", "pretend_write", json!({})),
        ToolUse::new("w2", "pretend_write", json!({})),
    ]));
    let texts: Vec<String> = turn.results.iter().map(text).collect();
    assert!(texts[0].starts_with("slept 30 ms"), "{texts:?}");
    assert!(texts[1].starts_with("slept 1 ms"), "{texts:?}");
    assert_eq!(&texts[2..], ["written (pretend)", "written (pretend)"]);
    let events = events.lock().unwrap().clone();
    let at = |e: &str| events.iter().position(|x| x == e).unwrap();
    // Both sleeps entered before either finished; the writes ran one at a time, after them, in order.
    assert!(at("pre s2") < at("post s1") && at("pre s1") < at("post s2"), "{events:?}");
    assert_eq!(events[4..], ["pre w1", "post w1", "pre w2", "post w2"], "{events:?}");
}

#[test]
fn loop_detection_warns_then_reaches_the_mistake_limit() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    let runtime = shipped().build().unwrap();
    let task = runtime.task(TaskContext::new(ws.path()).with_model_family("claude").with_max_consecutive_mistakes(3));
    let mut turns = Vec::new();
    for i in 0..5 {
        let progress = format!("- [ ] step {i}");
        turns.push(block_on(task.execute_message(vec![ToolUse::new(
            format!("t{i}"),
            "read_file",
            json!({"path": "a.txt", "task_progress": progress}),
        )])));
    }
    let warning = "Tool [read_file] has been called 3 times consecutively with identical arguments. This is not making progress. Please use a different tool or different arguments instead of repeating the same call.";
    assert!(turns[1].results[0].context_after.is_empty());
    assert_eq!(turns[2].results[0].context_after, [warning]);
    assert!(turns[2].to_model_text().ends_with(warning));
    assert!(turns[3].results[0].context_after.is_empty());
    assert_eq!(turns[3].mistake_limit, None);
    let limit = turns[4].mistake_limit.clone().expect("the 5th identical call reaches the limit");
    assert_eq!(limit.count, 3);
    assert!(limit.message.starts_with("This may indicate a failure in his thought process"));
    assert_eq!(limit.yolo_failure, None);
    assert_eq!(
        task.resume_after_mistakes(Some("read b.txt instead")).as_deref(),
        Some("You seem to be having trouble proceeding. The user has provided the following feedback to help guide you:\n<feedback>\nread b.txt instead\n</feedback>")
    );
    assert_eq!(task.consecutive_mistakes(), 0);
}

#[test]
fn cancelling_a_task_mid_call() {
    let ws = workspace();
    let config = Config::from_toml_str("[timeouts]\ncancel_grace_ms = 20\n").unwrap();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let started_tx = Mutex::new(started_tx);
    let runtime = with_fixtures()
        .config(config)
        .pre_tool_use(move |_| {
            let _ = started_tx.lock().unwrap().send(());
            async { HookOutcome::pass() }
        })
        .build()
        .unwrap();
    let task = runtime.task(TaskContext::new(ws.path()));
    let running = {
        let task = task.clone();
        std::thread::spawn(move || block_on(task.execute(ToolUse::new("s", "sleep", json!({"ms": 3000})))))
    };
    started_rx.recv_timeout(Duration::from_secs(30)).unwrap();
    task.cancel();
    let result = running.join().unwrap();
    assert_eq!(result.status, ResultStatus::Error);
    assert!(text(&result).contains("Error executing sleep: the task was cancelled."), "{}", text(&result));
    assert!(task.is_cancelled());
    // Nothing more runs in a cancelled task.
    let after = block_on(task.execute(ToolUse::new("s2", "sleep", json!({"ms": 1}))));
    assert!(text(&after).contains("the task was cancelled"));
}

#[test]
fn two_runtimes_in_one_process() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    let strict = Config::from_toml_str("[approval]\ntools = { read_file = \"deny\" }\n").unwrap();
    let open = shipped().build().unwrap();
    let closed = shipped().config(strict).build().unwrap();
    let (a, b) = (open.task(TaskContext::new(ws.path())), closed.task(TaskContext::new(ws.path())));
    assert_eq!(block_on(a.execute(read("1", "a.txt"))).status, ResultStatus::Success);
    assert_eq!(block_on(b.execute(read("1", "a.txt"))).status, ResultStatus::Denied);
    drop(closed);
    assert_eq!(block_on(a.execute(read("2", "a.txt"))).status, ResultStatus::Success);
}

#[test]
fn a_host_on_a_multi_thread_tokio_runtime() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Runtime>();
    send_sync::<TaskHandle>();
    let ws = workspace();
    for i in 0..8 {
        std::fs::write(ws.path().join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    let runtime = shipped().build().unwrap();
    let host = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let results = host.block_on(async {
        let mut joins = Vec::new();
        for i in 0..8 {
            let task = runtime.task(TaskContext::new(ws.path()));
            joins.push(tokio::spawn(async move { task.execute(read(&format!("t{i}"), &format!("f{i}.txt"))).await }));
        }
        let mut out = Vec::new();
        for join in joins {
            out.push(join.await.unwrap());
        }
        out
    });
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result.status, ResultStatus::Success);
        assert!(text(result).contains(&format!("file {i}")), "{}", text(result));
    }
}

#[test]
fn a_tool_declaring_that_prepare_proceeds_runs_without_it_and_hooks_still_see_the_call() {
    let ws = workspace();
    // Without hooks: straight to execute (the fixture's prepare would refuse).
    let runtime = with_fixtures().yes(true).build().unwrap();
    let task = runtime.task(TaskContext::new(ws.path()));
    let result = block_on(task.execute(ToolUse::new("s1", "skips_prepare", json!({}))));
    assert_eq!(result.status, ResultStatus::Success, "{}", result.to_model_text());
    assert_eq!(text(&result), "executed, approved = false");

    // A PreToolUse hook still sees the call between the skipped prepare and execute, and can deny it.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let told = Arc::clone(&seen);
    let runtime = with_fixtures()
        .yes(true)
        .pre_tool_use(move |input| {
            told.lock().unwrap().push(input.tool_use_id.clone());
            async move {
                if input.tool_use_id == "deny" {
                    HookOutcome::deny("not this one")
                } else {
                    HookOutcome::pass()
                }
            }
        })
        .build()
        .unwrap();
    let task = runtime.task(TaskContext::new(ws.path()));
    let denied = block_on(task.execute(ToolUse::new("deny", "skips_prepare", json!({}))));
    assert_eq!(denied.status, ResultStatus::Denied);
    let passed = block_on(task.execute(ToolUse::new("pass", "skips_prepare", json!({}))));
    assert_eq!(text(&passed), "executed, approved = false");
    assert_eq!(*seen.lock().unwrap(), ["deny", "pass"]);
}
