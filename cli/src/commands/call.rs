//! `toolshed call`: one tool call through the whole pipeline, its result printed as the model sees it.

use crate::setup::Setup;
use anyhow::Context as _;
use std::io::{IsTerminal as _, Read as _};
use std::process::ExitCode;
use toolshed::shown::escape;
use toolshed::{Runtime, TerminalApprover, ToolUse};

/// Runs `tool` on `input` (JSON, `-` for stdin, default `{}`); exits 1 when the result is an error.
pub fn run(setup: Setup, tool: String, input: Option<String>, yes: bool, images: bool) -> anyhow::Result<ExitCode> {
    let Setup { config, dirs, context } = setup;
    let input = match input.as_deref() {
        Some("-") => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).context("reading the input from stdin")?;
            text
        }
        Some(text) => text.to_owned(),
        None => "{}".to_owned(),
    };
    // Only the library declaring the tool is opened (through the declaration index); others load when the
    // call reaches them.
    let mut builder = Runtime::builder().config(config).plugin_dirs(dirs).yes(yes).only_tools([tool.as_str()]);
    if let Some(approver) = TerminalApprover::detect() {
        builder = builder.approver(approver);
    }
    let runtime = builder.build()?;
    super::report_load_errors(&runtime);
    let task = runtime.task(context.with_images(images));
    let executor = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let result = executor.block_on(task.execute(ToolUse::from_text("cli", tool, input)));
    // Exactly what the model sees, for scripts; on a terminal, a file's escape sequences are shown, not run.
    let text = result.to_model_text();
    if std::io::stdout().is_terminal() {
        out!("{}", escape(&text))?;
    } else {
        out!("{text}")?;
    }
    if let Some(note) = &result.note {
        err!("toolshed: {}", escape(note));
    }
    Ok(if result.is_error() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
