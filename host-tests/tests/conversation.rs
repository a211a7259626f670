//! The conversational tools through the public API with a scripted host: questions, completion, plan/act,
//! the focus chain, the host-owned actions, and skills.

use crate::util::{block_on, call, shipped, text, workspace};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use toolshed::{
    Block, BoxFuture, Config, HostAction, Interaction, Mode, Question, ResultStatus, TaskContext, TaskHandle,
    ToolResult, ToolUse, UiEvent, UserReply,
};

/// A host whose user gives scripted answers, in order, and which records every question and action.
#[derive(Clone, Default)]
struct Scripted {
    answers: Arc<Mutex<VecDeque<Option<UserReply>>>>,
    questions: Arc<Mutex<Vec<Question>>>,
    actions: Arc<Mutex<Vec<String>>>,
    /// Whether the host carries out new tasks, condensing, summaries, bug reports and explanations.
    actions_supported: bool,
}

impl Scripted {
    fn answering(answers: Vec<Option<UserReply>>) -> Self {
        Self { answers: Arc::new(Mutex::new(answers.into())), ..Self::default() }
    }

    fn with_actions(mut self) -> Self {
        self.actions_supported = true;
        self
    }

    fn next(&self) -> Option<UserReply> {
        self.answers.lock().unwrap().pop_front().flatten()
    }

    fn act(&self, what: String) -> BoxFuture<HostAction> {
        self.actions.lock().unwrap().push(what);
        let answer = if self.actions_supported {
            HostAction::Answered(self.next().unwrap_or_default())
        } else {
            HostAction::Unsupported
        };
        Box::pin(async move { answer })
    }
}

impl Interaction for Scripted {
    fn ask(&self, question: Question) -> BoxFuture<Option<UserReply>> {
        self.questions.lock().unwrap().push(question);
        let answer = self.next();
        Box::pin(async move { answer })
    }

    fn new_task(&self, _task_id: &str, context: &str) -> BoxFuture<HostAction> {
        self.act(format!("new_task: {context}"))
    }

    fn condense(&self, _task_id: &str, summary: &str) -> BoxFuture<HostAction> {
        self.act(format!("condense: {summary}"))
    }

    fn summarize(&self, _task_id: &str, summary: &str) -> BoxFuture<HostAction> {
        self.act(format!("summarize: {summary}"))
    }

    fn report_bug(&self, _task_id: &str, report: &toolshed::BugReport) -> BoxFuture<HostAction> {
        self.act(format!("report_bug: {}", report.title))
    }

    fn explain(&self, _task_id: &str, request: &toolshed::ExplainRequest) -> BoxFuture<HostAction> {
        self.act(format!("explain: {}..{:?}", request.from_ref, request.to_ref))
    }
}

fn config(toml: &str) -> Config {
    Config::from_toml_str(toml).unwrap()
}

fn error_text(message: &str) -> String {
    format!("The tool execution failed with the following error:\n<error>\n{message}\n</error>")
}

fn texts(result: &ToolResult) -> Vec<String> {
    result
        .blocks
        .iter()
        .map(|b| match b {
            Block::Text { text } => text.clone(),
            Block::Image { media_type, .. } => format!("[image {media_type}]"),
        })
        .collect()
}

fn run(task: &TaskHandle, tool: &str, input: serde_json::Value) -> ToolResult {
    block_on(task.execute(ToolUse::new("c1", tool, input)))
}

#[test]
fn ask_followup_question_answers_refusals_and_yolo() {
    let ws = workspace();
    let host = Scripted::answering(vec![Some(UserReply::text("Blue"))]);
    let runtime = shipped().interaction(host.clone()).build().unwrap();
    let task = runtime.task(TaskContext::new(ws.path()));

    let result = call(
        &task,
        "ask_followup_question",
        serde_json::json!({"question": "Which colour?", "options": "[\"Blue\", \"Red\"]"}),
    );
    assert_eq!(result.status, ResultStatus::Success);
    assert_eq!(text(&result), "<answer>\nBlue\n</answer>");
    assert_eq!(result.description, "[ask_followup_question for 'Which colour?']");
    let asked = host.questions.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!((asked[0].kind.as_str(), asked[0].text.as_str()), ("followup", "Which colour?"));
    assert_eq!(asked[0].options, vec!["Blue", "Red"]);

    // Bad options are refused before the user is asked.
    let result = call(&task, "ask_followup_question", serde_json::json!({"question": "Q?", "options": "[\"only\"]"}));
    assert_eq!(result.status, ResultStatus::Error);
    assert_eq!(
        text(&result),
        error_text("Invalid value for parameter 'options': it has 1 options. Provide a JSON array of 2-5 strings, e.g. [\"Option 1\", \"Option 2\"], or leave options out.")
    );
    let result = call(&task, "ask_followup_question", serde_json::json!({"options": "[\"a\", \"b\"]"}));
    assert!(text(&result).contains("Missing value for required parameter 'question'."), "{}", text(&result));
    assert_eq!(host.questions.lock().unwrap().len(), 1);

    // Nobody answers (the script ran out): a clear error, not an empty answer.
    let result = call(&task, "ask_followup_question", serde_json::json!({"question": "Still there?"}));
    assert_eq!(result.status, ResultStatus::Error);
    assert!(text(&result).contains("No user is available to answer this question."), "{}", text(&result));

    // YOLO mode: nobody is asked, the model is told to find out itself.
    let yolo = shipped().config(config("[approval]\nyolo = true\n")).interaction(host.clone()).build().unwrap();
    let task = yolo.task(TaskContext::new(ws.path()));
    let result = call(&task, "ask_followup_question", serde_json::json!({"question": "Which file?"}));
    assert_eq!(
        text(&result),
        "[YOLO MODE: User input is not available in non-interactive mode. You must use available tools (read_file, list_files, search_files, etc.) to gather the information you need instead of asking the user. Proceed with using tools to find the answer to your question: \"Which file?\"]"
    );
    assert_eq!(host.questions.lock().unwrap().len(), 2);
}

#[test]
fn attempt_completion_completes_or_returns_feedback() {
    let ws = workspace();
    let events: Arc<Mutex<Vec<UiEvent>>> = Arc::default();
    let sink = Arc::clone(&events);
    let host = Scripted::answering(vec![Some(UserReply::text("Add a test too")), Some(UserReply::accepted())]);
    let runtime = shipped()
        .yes(true)
        .interaction(host)
        .on_event(move |event| sink.lock().unwrap().push(event.clone()))
        .build()
        .unwrap();
    let task = runtime.task(TaskContext::new(ws.path()));

    // Feedback, with the demo command run through execute_command's pipeline.
    let result =
        call(&task, "attempt_completion", serde_json::json!({"result": "Built it", "command": "echo demo-output"}));
    assert_eq!(result.status, ResultStatus::Success);
    let blocks = texts(&result);
    assert_eq!(blocks[0], "[attempt_completion] Result: Done");
    assert!(blocks[1].contains("demo-output"), "{blocks:?}");
    assert_eq!(
        blocks[2..],
        [
            "The user has provided feedback on the results. Consider their input to continue the task, and then attempt completion again.".to_owned(),
            "<feedback>\nAdd a test too\n</feedback>".to_owned(),
        ]
    );
    assert!(!task.is_completed());

    // Accepted: the task is complete, and the host hears so.
    let result = call(&task, "attempt_completion", serde_json::json!({"result": "Built it, with a test"}));
    assert_eq!(text(&result), "[attempt_completion] Result: Done");
    assert!(task.is_completed());
    let events = events.lock().unwrap();
    let kinds: Vec<(&str, &str)> = events.iter().map(|e| (e.kind.as_str(), e.text.as_str())).collect();
    assert!(kinds.contains(&("completion_result", "Built it, with a test")), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&("task_completed", "Built it, with a test")));

    // Cline's `!result`: an empty result is missing (blank text is a value natively; XML trims it to empty).
    let result = call(&task, "attempt_completion", serde_json::json!({"result": ""}));
    assert!(text(&result).contains("Missing value for required parameter 'result'."));
}

/// Cline's executor copies a string `response` into a missing or empty `result` before anything else
/// (`canonicalizeAttemptCompletionParams`); a result that is there wins.
#[test]
fn attempt_completion_takes_a_response_as_its_result() {
    let ws = workspace();
    let events: Arc<Mutex<Vec<UiEvent>>> = Arc::default();
    let sink = Arc::clone(&events);
    let host = Scripted::answering(vec![Some(UserReply::accepted()); 4]);
    let runtime = shipped()
        .yes(true)
        .interaction(host)
        .on_event(move |event| sink.lock().unwrap().push(event.clone()))
        .build()
        .unwrap();
    for (input, shown) in [
        (serde_json::json!({"response": "Built it"}), "Built it"),
        (serde_json::json!({"result": "", "response": "From response"}), "From response"),
        (serde_json::json!({"result": "Mine", "response": "Not this"}), "Mine"),
        // A native call's number is a string to Cline (`"5"`), so it is copied too.
        (serde_json::json!({"response": 5}), "5"),
    ] {
        let task = runtime.task(TaskContext::new(ws.path()));
        let result = call(&task, "attempt_completion", input.clone());
        assert_eq!(text(&result), "[attempt_completion] Result: Done", "{input}");
        assert!(task.is_completed(), "{input}");
        let events = events.lock().unwrap();
        assert_eq!(events.last().map(|e| (e.kind.as_str(), e.text.as_str())), Some(("task_completed", shown)));
    }
    let missing = toolshed_plugin_api::result::missing_parameter_text("result");
    for input in [serde_json::json!({"response": ""}), serde_json::json!({"response": null}), serde_json::json!({})] {
        let task = runtime.task(TaskContext::new(ws.path()));
        let result = call(&task, "attempt_completion", input.clone());
        assert!(text(&result).contains(&missing), "{input}: {}", text(&result));
        assert!(!task.is_completed());
    }
}

#[test]
fn the_double_check_round_trip() {
    let ws = workspace();
    let host = Scripted::answering(vec![Some(UserReply::accepted())]);
    let runtime = shipped()
        .config(config("[tasks]\ndouble_check_completion = true\n"))
        .interaction(host.clone())
        .build()
        .unwrap();
    let task = runtime.task(TaskContext::new(ws.path()));
    task.set_initial_task("Write hello.txt");

    let first = call(&task, "attempt_completion", serde_json::json!({"result": "Done"}));
    assert_eq!(first.status, ResultStatus::Error);
    assert_eq!(task.consecutive_mistakes(), 0, "the double check is not the model's mistake");
    let body = text(&first);
    assert!(body.starts_with("The tool execution failed with the following error:\n<error>\nBefore completing, re-verify your work against the original task requirements. Check that:\n1. All requested changes have been made\n"), "{body}");
    assert!(body.contains("declaring completion\n\n<initial_task>\nWrite hello.txt\n</initial_task>\n\nIf everything checks out, call attempt_completion again with your final result."), "{body}");
    assert!(host.questions.lock().unwrap().is_empty(), "nobody is asked before the re-check");

    let second = call(&task, "attempt_completion", serde_json::json!({"result": "Done, re-checked"}));
    assert_eq!(text(&second), "[attempt_completion] Result: Done");
    assert!(task.is_completed());
    // The next pair is double-checked again.
    let third = call(&task, "attempt_completion", serde_json::json!({"result": "Again"}));
    assert!(text(&third).contains("Before completing, re-verify"));
}

#[test]
fn plan_and_act_switching() {
    let ws = workspace();
    let host = Scripted::answering(vec![
        Some(UserReply::text("Looks good, but use Rust")),
        Some(UserReply { text: Some("go".into()), switch_to_act: true, ..UserReply::default() }),
    ]);
    let runtime = shipped().interaction(host.clone()).build().unwrap();
    let task = runtime.task(TaskContext::new(ws.path()).with_mode(Mode::Plan));

    let result = call(&task, "act_mode_respond", serde_json::json!({"response": "Working"}));
    assert_eq!(
        text(&result),
        error_text("The act_mode_respond tool is only available in ACT MODE. You are currently in PLAN MODE. Please use the appropriate tool for your current mode.")
    );
    let result =
        call(&task, "plan_mode_respond", serde_json::json!({"response": "Plan: …", "needs_more_exploration": "true"}));
    assert_eq!(text(&result), "[You have indicated that you need more exploration. Proceed with calling tools to continue the planning process.]");

    let result = call(&task, "plan_mode_respond", serde_json::json!({"response": "Plan A"}));
    assert_eq!(text(&result), "<user_message>\nLooks good, but use Rust\n</user_message>");
    assert_eq!(task.mode(), Mode::Plan);

    let result = call(&task, "plan_mode_respond", serde_json::json!({"response": "Plan B"}));
    assert_eq!(
        text(&result),
        "[The user has switched to ACT MODE, so you may now proceed with the task.]\n\nThe user also provided the following message when switching to ACT MODE:\n<user_message>\ngo\n</user_message>"
    );
    assert_eq!(task.mode(), Mode::Act);
    let kinds: Vec<String> = host.questions.lock().unwrap().iter().map(|q| q.kind.clone()).collect();
    assert_eq!(kinds, ["plan_mode_respond", "plan_mode_respond"]);

    let result = call(&task, "plan_mode_respond", serde_json::json!({"response": "More plan"}));
    assert_eq!(
        text(&result),
        error_text("The plan_mode_respond tool is only available in PLAN MODE. You are currently in ACT MODE. Please use the appropriate tool for your current mode.")
    );
    let result = call(&task, "act_mode_respond", serde_json::json!({"response": "Starting"}));
    assert_eq!(text(&result), "[Message displayed. Now proceed with your next tool call - it must be a different tool (read_file, replace_in_file, execute_command, etc.), not act_mode_respond again.]");
    let result = call(&task, "act_mode_respond", serde_json::json!({"response": "Still starting"}));
    assert_eq!(text(&result), "[BLOCKED] You cannot call act_mode_respond consecutively. Your next action MUST be a different tool that performs actual work: read_file, replace_in_file, write_to_file, execute_command, list_files, search_files, etc. Stop explaining and start doing.");

    // YOLO mode in PLAN: the switch to ACT happens by itself, nobody is asked.
    let yolo = shipped().config(config("[approval]\nyolo = true\n")).interaction(host.clone()).build().unwrap();
    let task = yolo.task(TaskContext::new(ws.path()).with_mode(Mode::Plan));
    let result = call(&task, "plan_mode_respond", serde_json::json!({"response": "Plan"}));
    assert_eq!(text(&result), "[The user has switched to ACT MODE, so you may now proceed with the task.]");
    assert_eq!(task.mode(), Mode::Act);
    let result = call(&task, "plan_mode_respond", serde_json::json!({"response": "Plan again"}));
    assert_eq!(text(&result), "[Go ahead and execute.]");
    assert_eq!(host.questions.lock().unwrap().len(), 2);
}

#[test]
fn task_progress_is_stored_and_reminded() {
    let ws = workspace();
    for name in ["a", "b", "c", "d", "e"] {
        std::fs::write(ws.path().join(format!("{name}.txt")), "alpha\n").unwrap();
    }
    let runtime = shipped().config(config("[tasks]\nfocus_chain = true\nremind_interval = 2\n")).build().unwrap();
    let task = runtime.task(TaskContext::new(ws.path()));
    // Each call reads another file: identical calls in a row would draw Cline's loop warning.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let read = |progress: Option<&str>| {
        let file = ["a", "b", "c", "d", "e"][next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 5];
        let mut input = serde_json::json!({"path": format!("{file}.txt")});
        if let Some(progress) = progress {
            input["task_progress"] = serde_json::Value::from(progress);
        }
        run(&task, "read_file", input)
    };

    // No list yet: Cline's recommendation follows the result.
    let first = read(None);
    assert_eq!(first.status, ResultStatus::Success);
    assert_eq!(first.context_after.len(), 1);
    assert!(first.context_after[0].starts_with("\n# task_progress RECOMMENDED\n"), "{:?}", first.context_after);

    // The checklist is taken out of the input (read_file never sees it) and stored.
    let second = read(Some("- [x] Read a.txt\n- [ ] Edit it"));
    assert_eq!(second.status, ResultStatus::Success, "{}", second.to_model_text());
    assert!(text(&second).contains("alpha"));
    assert_eq!(task.task_progress().as_deref(), Some("- [x] Read a.txt\n- [ ] Edit it"));
    assert!(second.context_after.is_empty());

    // One call without an update: quiet; the second reaches the interval.
    assert!(read(None).context_after.is_empty());
    let due = read(None);
    assert_eq!(due.context_after.len(), 1);
    let reminder = &due.context_after[0];
    assert!(reminder.contains(
        "# TODO LIST UPDATE REQUIRED - You MUST include the task_progress parameter in your NEXT tool call."
    ));
    assert!(reminder.contains("**Current Progress: 1/2 items completed (50%)**"));
    assert!(reminder.contains("- [x] Read a.txt\n- [ ] Edit it"));
    assert!(due.to_model_text().ends_with(reminder.as_str()));

    // The user edits the list: the next result says so.
    task.edit_task_progress("- [x] Read a.txt\n- [x] Edit it\n- [ ] Test it");
    let edited = read(Some("")); // an empty value changes nothing
    assert!(edited.context_after[0].contains("**CRITICAL INFORMATION:** The user has modified this todo list"));
    assert_eq!(task.task_progress().as_deref(), Some("- [x] Read a.txt\n- [x] Edit it\n- [ ] Test it"));

    // The focus_chain placeholder is not a tool to call.
    let result = run(&task, "focus_chain", serde_json::json!({}));
    assert_eq!(result.status, ResultStatus::Error);
    assert!(text(&result).contains("focus_chain is not a tool to call."));

    // With the focus chain off, results are untouched.
    let plain = shipped().build().unwrap().task(TaskContext::new(ws.path()));
    let result = block_on(plain.execute(ToolUse::new("c", "read_file", serde_json::json!({"path": "a.txt"}))));
    assert!(result.context_after.is_empty());
    assert_eq!(plain.task_progress(), None);
}

#[test]
fn host_actions_need_a_host_that_offers_them() {
    let ws = workspace();
    // No interaction at all, then one that supports none of the actions: the same clear error.
    for runtime in [shipped().build().unwrap(), shipped().interaction(Scripted::default()).build().unwrap()] {
        let task = runtime.task(TaskContext::new(ws.path()));
        for (tool, input, service) in [
            ("new_task", serde_json::json!({"context": "ctx"}), "task.new"),
            ("condense", serde_json::json!({"context": "ctx"}), "task.condense"),
            ("summarize_task", serde_json::json!({"context": "ctx"}), "task.summarize"),
            ("generate_explanation", serde_json::json!({"title": "t", "from_ref": "HEAD~1"}), "task.explain"),
        ] {
            let result = call(&task, tool, input);
            assert_eq!(result.status, ResultStatus::Error, "{tool}");
            assert_eq!(
                text(&result),
                error_text(&format!(
                    "This host does not support {tool}: it offers no '{service}' service. Continue the task without this tool."
                )),
            );
        }
    }
}

#[test]
fn host_actions_accepted_or_answered_with_feedback() {
    let ws = workspace();
    let host = Scripted::answering(vec![
        None,
        Some(UserReply::text("Keep the test plan")),
        None,
        Some(UserReply::text("Title is wrong")),
        None,
        Some(UserReply::text("Explained 2 files")),
    ])
    .with_actions();
    let runtime = shipped().interaction(host.clone()).build().unwrap();
    let task = runtime.task(TaskContext::new(ws.path()));

    let result = call(&task, "new_task", serde_json::json!({"context": "Continue with step 2"}));
    assert_eq!(result.description, "[new_task for creating a new task]");
    assert_eq!(text(&result), "The user has created a new task with the provided context.");
    let result = call(&task, "condense", serde_json::json!({"context": "Summary"}));
    assert_eq!(text(&result), "The user provided feedback on the condensed conversation summary:\n<feedback>\nKeep the test plan\n</feedback>");
    let result = call(&task, "summarize_task", serde_json::json!({"context": "1. Primary Request"}));
    assert!(text(&result).starts_with("\nThis session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n1. Primary Request.\n\nPlease continue"));
    let bug = serde_json::json!({"title": "Crash", "what_happened": "It crashed", "steps_to_reproduce": "Run it", "api_request_output": "none", "additional_context": "none"});
    let result = call(&task, "report_bug", bug.clone());
    assert_eq!(text(&result), "The user did not submit the bug, and provided feedback on the Github issue generated instead:\n<feedback>\nTitle is wrong\n</feedback>");
    let result = call(&task, "report_bug", bug);
    assert_eq!(text(&result), "The user accepted the creation of the Github issue.");
    let result = call(
        &task,
        "generate_explanation",
        serde_json::json!({"title": "Last commit", "from_ref": "HEAD~1", "to_ref": "HEAD"}),
    );
    assert_eq!(result.description, "[generate_explanation for 'Last commit']");
    assert_eq!(text(&result), "Explained 2 files");
    let mut missing = serde_json::json!({"title": "Crash"});
    missing["what_happened"] = serde_json::Value::from("x");
    let result = call(&task, "report_bug", missing);
    assert!(text(&result).contains("Missing value for required parameter 'steps_to_reproduce'."));

    let actions = host.actions.lock().unwrap().clone();
    assert_eq!(
        actions,
        [
            "new_task: Continue with step 2",
            "condense: Summary",
            "summarize: 1. Primary Request",
            "report_bug: Crash",
            "report_bug: Crash",
            "explain: HEAD~1..Some(\"HEAD\")",
        ]
    );
}

fn skill(dir: &Path, name: &str, description: &str, body: &str) {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    std::fs::write(
        dir.join(name).join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}\n"),
    )
    .unwrap();
}

#[test]
fn use_skill_lists_and_loads_and_ignores_untrusted_workspaces() {
    let ws = workspace();
    let user = tempfile::tempdir().unwrap();
    skill(user.path(), "pdf", "Work with PDFs", "# PDF\nUse pdftotext.");
    // A folder whose front matter names another skill is not a skill (Cline's rule).
    skill(user.path(), "misnamed", "x", "body");
    std::fs::write(user.path().join("misnamed/SKILL.md"), "---\nname: other\ndescription: x\n---\nbody\n").unwrap();
    skill(&ws.path().join(".cline/skills"), "deploy", "Deploy the app", "Run make deploy.");

    let dirs = format!("[skills]\ndirs = [{:?}]\n", user.path());
    let untrusted = shipped().config(config(&dirs)).build().unwrap();
    let task = untrusted.task(TaskContext::new(ws.path()));
    let result = call(&task, "use_skill", serde_json::json!({"skill_name": "pdf"}));
    assert_eq!(result.description, "[use_skill for \"pdf\"]");
    let pdf_dir = user.path().join("pdf");
    assert_eq!(
        text(&result),
        format!(
            "# Skill \"pdf\" is now active\n\n# PDF\nUse pdftotext.\n\n---\nIMPORTANT: The skill is now loaded. Do NOT call use_skill again for this task. Simply follow the instructions above to complete the user's request. You may access other files in the skill directory at: {}/",
            pdf_dir.display()
        )
    );
    let result = call(&task, "use_skill", serde_json::json!({"skill_name": "deploy"}));
    assert_eq!(text(&result), "Error: Skill \"deploy\" not found. Available skills: pdf");

    let trusted_config = format!("{dirs}[plugins]\ntrusted_workspaces = [{:?}]\n", ws.path());
    let trusted = shipped().config(config(&trusted_config)).build().unwrap();
    let task = trusted.task(TaskContext::new(ws.path()));
    let result = call(&task, "use_skill", serde_json::json!({"skill_name": "deploy"}));
    assert!(text(&result).starts_with("# Skill \"deploy\" is now active\n\nRun make deploy.\n"), "{}", text(&result));
    let result = call(&task, "use_skill", serde_json::json!({"skill_name": "nope"}));
    assert_eq!(text(&result), "Error: Skill \"nope\" not found. Available skills: pdf, deploy");

    let empty = tempfile::tempdir().unwrap();
    let none = shipped().config(config(&format!("[skills]\ndirs = [{:?}]\n", empty.path()))).build().unwrap();
    let result = call(&none.task(TaskContext::new(ws.path())), "use_skill", serde_json::json!({"skill_name": "pdf"}));
    assert_eq!(text(&result), "Error: No skills are available. Skills may be disabled or not configured.");
}
