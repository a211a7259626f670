//! Class 3: text shown to a person (approval prompts, say events, questions, watch lines) cannot redraw the
//! terminal: control characters, ESC, CR and bidirectional or invisible characters arrive visibly escaped.

use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};

use serde_json::json;
use toolshed::{
    Answer, ApprovalPrompt, Approver, BoxFuture, Interaction, Question, Reply, TaskContext, UiEvent, UserReply,
};

use crate::util::*;

/// Payloads that redraw or reorder what a person reads.
const SPOOFS: &[&str] = &[
    "\u{1b}[2K\r",        // erase the line, back to its start
    "\u{1b}[1A\u{1b}[2K", // up one line, erase it
    "\u{9b}2K\r",         // the same with the one-byte C1 CSI
    "\u{1b}]0;x\u{7}",    // an OSC title sequence ended by BEL
    "\u{8}\u{8}\u{8}",    // backspaces over what was shown
    "\u{202e}",           // right-to-left override
    "\u{2066}\u{2069}",   // bidi isolates
    "\u{200b}\u{feff}",   // zero-width space, byte-order mark
    "\u{e0041}\u{e0042}", // tag characters
    "\u{2028}",           // line separator
];

/// No character a terminal or renderer would act on.
fn assert_inert(shown: &str, what: &str) {
    let bad = shown.chars().find(|&c| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200b}' | '\u{feff}' | '\u{2028}')
            || ('\u{e0000}'..='\u{e007f}').contains(&c)
    });
    assert_eq!(bad, None, "{what}: {shown:?}");
}

struct Recorder(Mutex<mpsc::Sender<ApprovalPrompt>>);

impl Approver for Recorder {
    fn ask(&self, prompt: ApprovalPrompt) -> BoxFuture<Reply> {
        let _ = self.0.lock().unwrap().send(prompt);
        Box::pin(async { Reply { answer: Answer::Deny, feedback: None } })
    }
}

#[test]
fn approval_prompts_show_commands_and_paths_escaped() {
    let (tx, rx) = mpsc::channel();
    let runtime = shipped().approver(Recorder(Mutex::new(tx))).build().unwrap();
    let ws = workspace();
    let task = runtime.task(TaskContext::new(ws.path()));
    for spoof in SPOOFS {
        let command = format!("touch pwned;{spoof}Cline wants to execute this command: ls -la");
        let result = call(&task, "execute_command", json!({"command": command, "requires_approval": true}));
        assert_eq!(result.status, toolshed::ResultStatus::Denied, "{}", text(&result));
        let prompt = rx.recv().unwrap();
        assert_inert(&prompt.message, "command prompt");
        assert!(prompt.message.contains("touch pwned;"), "the whole command is shown: {:?}", prompt.message);

        let path = format!("notes{spoof}.txt");
        let result = call(&task, "write_to_file", json!({"path": path, "content": "x"}));
        assert_eq!(result.status, toolshed::ResultStatus::Denied, "{}", text(&result));
        let prompt = rx.recv().unwrap();
        assert_inert(&prompt.message, "write prompt");
        prompt.paths.iter().for_each(|p| assert_inert(p, "write prompt path"));
    }
    assert!(!ws.path().join("pwned").exists());
}

#[test]
fn say_events_and_questions_arrive_escaped() {
    #[derive(Clone, Default)]
    struct Host(Arc<Mutex<Vec<Question>>>);
    impl Interaction for Host {
        fn ask(&self, question: Question) -> BoxFuture<Option<UserReply>> {
            self.0.lock().unwrap().push(question);
            Box::pin(async { None })
        }
    }
    let events: Arc<Mutex<Vec<UiEvent>>> = Arc::default();
    let sink = Arc::clone(&events);
    let host = Host::default();
    let runtime = shipped()
        .yes(true)
        .interaction(host.clone())
        .on_event(move |event| sink.lock().unwrap().push(event.clone()))
        .build()
        .unwrap();
    let ws = workspace();
    let task = runtime.task(TaskContext::new(ws.path()));
    // Command output streamed as say events: a program's own escape sequences.
    let result = call(
        &task,
        "execute_command",
        json!({"command": "printf 'ok\\033[2K\\rfake\\302\\233x\\342\\200\\256y\\n'", "requires_approval": false}),
    );
    assert!(text(&result).contains("ok"), "{}", text(&result));
    let events = events.lock().unwrap().clone();
    assert!(events.iter().any(|e| e.text.contains("fake")), "the output was said: {events:?}");
    for event in &events {
        assert_inert(&event.text, &format!("say event {}", event.kind));
    }

    for spoof in SPOOFS {
        let question = format!("Proceed?{spoof}");
        let options = serde_json::to_string(&[format!("yes{spoof}"), "no".to_owned()]).unwrap();
        call(&task, "ask_followup_question", json!({"question": question, "options": options}));
    }
    let questions = host.0.lock().unwrap().clone();
    assert_eq!(questions.len(), SPOOFS.len());
    for question in &questions {
        assert_inert(&question.text, "question");
        question.options.iter().for_each(|o| assert_inert(o, "option"));
    }
}

#[test]
fn the_terminal_prompt_is_escaped() {
    // A real terminal: `script` runs `toolshed call` on a pseudo-terminal, so the terminal approver asks.
    let home = workspace();
    let ws = workspace();
    let plugins = plugins();
    let input = json!({"command": "touch pwned;\u{1b}[2K\rls -la\u{202e}", "requires_approval": true}).to_string();
    let line = [
        toolshed_bin().to_str().unwrap(),
        "--plugins",
        plugins.to_str().unwrap(),
        "--cwd",
        ws.path().to_str().unwrap(),
        "call",
        "execute_command",
        &input,
    ]
    .iter()
    .map(|arg| format!("'{}'", arg.replace('\'', "'\\''")))
    .collect::<Vec<_>>()
    .join(" ");
    let mut child = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("HOME", home.path())
        .env_remove("TOOLSHED_PLUGINS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script(1) from util-linux");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"n\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("[y]es / [n]o / [a]lways"), "the terminal approver asked: {shown:?}");
    let prompt = shown.lines().find(|l| l.contains("[y]es")).unwrap();
    assert!(prompt.contains("\\u{1b}[2K\\rls -la\\u{202e}"), "{prompt:?}");
    assert!(!shown.contains('\u{1b}') && !shown.contains('\u{202e}'), "{shown:?}");
    assert!(!ws.path().join("pwned").exists());
}

#[test]
fn watch_lines_escape_file_names_and_reasons() {
    let home = workspace();
    let dir = workspace();
    // A library whose file name carries an escape sequence, and a broken one whose name does too.
    std::fs::copy(fixture("fixture_tools"), dir.path().join("libfixture\u{1b}[2K\rok.so")).unwrap();
    std::fs::write(dir.path().join("libbroken\u{202e}os.so"), b"not a library").unwrap();
    let out = Command::new(toolshed_bin())
        .args(["--plugins", dir.path().to_str().unwrap(), "watch"])
        .env("HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("loaded ") && shown.contains("failed "), "{shown}");
    assert!(shown.contains("libfixture\\u{1b}[2K\\rok.so"), "{shown}");
    assert!(shown.contains("libbroken\\u{202e}os.so"), "{shown}");
    for line in shown.lines() {
        assert_inert(line, "watch line");
    }
    assert_inert(&String::from_utf8_lossy(&out.stderr), "watch stderr");
}
