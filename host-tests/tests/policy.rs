//! The approval policy end to end: asking, denying without a terminal, "always allow", rules, and trust.

use crate::util::*;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use toolshed::{Answer, ApprovalPrompt, Approver, BoxFuture, Config, Reply, ResultStatus, Runtime};

struct Scripted {
    asked: Arc<AtomicUsize>,
    answer: Answer,
    feedback: Option<String>,
}

impl Approver for Scripted {
    fn ask(&self, prompt: ApprovalPrompt) -> BoxFuture<Reply> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        assert_eq!(prompt.kind, "write");
        assert!(prompt.message.starts_with("pretend_write wants to write out.txt"), "{}", prompt.message);
        let reply = Reply { answer: self.answer, feedback: self.feedback.clone() };
        Box::pin(async move { reply })
    }
}

fn with_approver(answer: Answer, feedback: Option<&str>) -> (Runtime, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let approver = Scripted { asked: Arc::clone(&asked), answer, feedback: feedback.map(str::to_owned) };
    (Runtime::builder().plugin_file(fixture("fixture_tools")).approver(approver).build().unwrap(), asked)
}

#[test]
fn writes_ask_and_always_allow_stops_asking_for_the_session() {
    let (runtime, asked) = with_approver(Answer::AlwaysAllow, None);
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    for _ in 0..3 {
        assert_eq!(text(&call(&task, "pretend_write", json!({}))), "written (pretend)");
    }
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    // A new task is a new session: it asks again.
    let other = task_in(&runtime, ws.path());
    call(&other, "pretend_write", json!({}));
    assert_eq!(asked.load(Ordering::SeqCst), 2);
}

#[test]
fn a_denial_with_feedback_reaches_the_model_before_the_result() {
    let (runtime, asked) = with_approver(Answer::Deny, Some("write to notes.txt instead"));
    let ws = workspace();
    let result = call(&task_in(&runtime, ws.path()), "pretend_write", json!({}));
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert_eq!(result.status, ResultStatus::Denied);
    assert_eq!(
        result.to_model_text(),
        "The user provided the following feedback:\n<feedback>\nwrite to notes.txt instead\n</feedback>\n[pretend_write] Result:\nThe user denied this operation."
    );
}

#[test]
fn without_a_terminal_asks_are_denied_and_config_rules_rank_above_defaults() {
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    let runtime = Runtime::builder().plugin_file(fixture("fixture_tools")).plugin_dir(plugins()).build().unwrap();
    let task = task_in(&runtime, ws.path());
    let denied = call(&task, "pretend_write", json!({}));
    assert_eq!(denied.status, ResultStatus::Denied);
    assert_eq!(text(&denied), "The user denied this operation.");
    assert!(denied.note.as_deref().unwrap().contains("no terminal to ask"));
    // Read-only built-ins inside the workspace run; outside it they ask (and are denied here).
    assert_eq!(call(&task, "read_file", json!({"path": "a.txt"})).status, ResultStatus::Success);
    let outside = ws.path().parent().unwrap().join("outside.txt");
    assert_eq!(call(&task, "read_file", json!({"path": outside.to_str().unwrap()})).status, ResultStatus::Denied);

    let mut config = Config::default();
    config.approval.tools = [
        ("pretend_write".to_owned(), toolshed::config::Rule::Allow),
        ("read_file".to_owned(), toolshed::config::Rule::Deny),
    ]
    .into_iter()
    .collect();
    let runtime =
        Runtime::builder().plugin_file(fixture("fixture_tools")).plugin_dir(plugins()).config(config).build().unwrap();
    let task = task_in(&runtime, ws.path());
    assert_eq!(call(&task, "pretend_write", json!({})).status, ResultStatus::Success);
    assert_eq!(call(&task, "read_file", json!({"path": "a.txt"})).status, ResultStatus::Denied);
}

#[test]
fn an_untrusted_workspace_can_only_tighten_and_its_plugins_do_not_load() {
    let home = workspace();
    let ws = workspace();
    let cwd = ws.path().canonicalize().unwrap();
    std::fs::write(cwd.join("a.txt"), "a\n").unwrap();
    std::fs::create_dir_all(cwd.join(".toolshed/plugins")).unwrap();
    std::fs::copy(fixture("fixture_tools"), cwd.join(".toolshed/plugins").join(lib("fixture_tools"))).unwrap();
    std::fs::write(
        cwd.join(".toolshed/config.toml"),
        "[approval]\nyolo = true\ntools = { read_file = \"deny\", pretend_write = \"allow\" }\n",
    )
    .unwrap();
    let p = plugins();
    let args =
        |tool: &'static str| vec!["--plugins", p.to_str().unwrap(), "--cwd", cwd.to_str().unwrap(), "call", tool];

    let read = toolshed(home.path(), &cwd, &[args("read_file"), vec![r#"{"path":"a.txt"}"#]].concat(), &[]);
    assert_eq!(read.status.code(), Some(1));
    assert!(stdout(&read).contains("The user denied this operation."), "{}", stdout(&read));
    let warnings = stderr(&read);
    assert!(warnings.contains("approval.yolo") && warnings.contains("not trusted"), "{warnings}");
    assert!(warnings.contains("approval.tools.pretend_write"), "{warnings}");
    assert!(warnings.contains(".toolshed/plugins: the workspace is not trusted"), "{warnings}");
    let custom = toolshed(home.path(), &cwd, &args("noop"), &[]);
    assert!(stdout(&custom).contains("Tool 'noop' does not exist"), "{}", stdout(&custom));

    // Trusted in the user's config: the workspace's plugins load and its loosening keys apply.
    std::fs::create_dir_all(home.path().join(".toolshed")).unwrap();
    std::fs::write(
        home.path().join(".toolshed/config.toml"),
        format!("[plugins]\ntrusted_workspaces = [{:?}]\n", cwd.to_str().unwrap()),
    )
    .unwrap();
    let trusted = toolshed(home.path(), &cwd, &args("pretend_write"), &[]);
    assert_eq!(trusted.status.code(), Some(0), "{}{}", stdout(&trusted), stderr(&trusted));
    assert!(stdout(&trusted).contains("written (pretend)"));
}
