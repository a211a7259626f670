//! The `toolshed` command: list the loaded tools and run tool calls through the full pipeline.

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use std::io::{IsTerminal as _, Read as _};
use std::path::PathBuf;
use std::process::ExitCode;
use toolshed::shown::{escape, escape_line};
use toolshed::{ConfigLoader, Provider, Runtime, SpecContext, TaskContext, TerminalApprover, ToolUse};

/// `println!` for our own output, whose reader may go away early (`toolshed tools | head -1`): a write to
/// the closed pipe is `EPIPE` (SIGPIPE is ignored), and the output simply ends there, quietly, where
/// `println!` would panic. Other write errors are returned.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        match writeln!(std::io::stdout().lock(), $($arg)*) {
            Err(e) if !is_closed(&e) => Err(e),
            _ => Ok(()),
        }
    }};
}

/// `eprintln!` that cannot panic: with standard error closed, there is nowhere left to say anything.
macro_rules! err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

#[derive(Parser, Debug)]
#[command(name = "toolshed", version, about = "Runs AI coding agents' tools from native plugins.")]
struct Cli {
    /// A plugin directory (repeatable); default $TOOLSHED_PLUGINS, else ~/.toolshed/plugins.
    #[arg(long = "plugins", global = true, value_name = "DIR")]
    plugins: Vec<PathBuf>,
    /// A configuration file, layered over the user's ~/.toolshed/config.toml.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The workspace (primary root); default the current directory.
    #[arg(long, global = true, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// A further workspace root for multi-root workspaces (repeatable).
    #[arg(long = "root", global = true, value_name = "NAME=DIR", value_parser = parse_root)]
    roots: Vec<(String, PathBuf)>,
    /// More output on stderr (-v debug, -vv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Lists the loaded tools: name, plugin, version, aliases, capabilities.
    Tools {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Runs one tool call and prints the result exactly as the model would see it.
    Call {
        /// The tool name.
        tool: String,
        /// The input as a JSON object, or `-` to read it from stdin; default `{}`.
        input: Option<String>,
        /// Approve every ask.
        #[arg(long, short = 'y')]
        yes: bool,
        /// The model reads images (read_file returns image blocks).
        #[arg(long)]
        images: bool,
    },
    /// Serves the loaded tools as an MCP server over stdio, or streamable HTTP with --http.
    Serve(ServeArgs),
    /// Prints the loaded tools' schemas, sorted by name: JSON for a provider's `tools` field, or the XML
    /// tool-use section of the system prompt.
    Schema {
        /// anthropic, openai, openai-responses, gemini or xml.
        #[arg(long)]
        provider: Provider,
        /// The model family whose specs to prefer (others fall back to generic).
        #[arg(long, default_value = toolshed::GENERIC)]
        family: String,
    },
    /// Loads the plugins, then watches the plugin directories and hot-reloads libraries added, changed or
    /// removed, printing one line per event, until Ctrl-C, SIGTERM or the end of standard input.
    Watch,
}

/// `toolshed serve`'s options (a struct of its own: the subcommand enum stays small).
#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// Serve streamable HTTP on PORT or HOST:PORT (loopback unless --public) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// The bearer token HTTP clients must send (required with --http).
    #[arg(long, env = "TOOLSHED_SERVE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Allow a non-loopback --http address.
    #[arg(long)]
    public: bool,
    /// Approve every ask (when the client cannot be asked through elicitation).
    #[arg(long, short = 'y')]
    yes: bool,
    /// Run this tool without asking (repeatable), as `[approval] tools = { TOOL = "allow" }`.
    #[arg(long = "allow", value_name = "TOOL")]
    allow: Vec<String>,
}

fn parse_root(text: &str) -> Result<(String, PathBuf), String> {
    let (name, dir) = text.split_once('=').ok_or("expected NAME=DIR")?;
    if name.is_empty() || dir.is_empty() {
        return Err("expected NAME=DIR".to_owned());
    }
    Ok((name.to_owned(), PathBuf::from(dir)))
}

fn main() -> ExitCode {
    // A child process running one plugin job (`toolshed::isolate`): nothing of the CLI runs there.
    if std::env::args_os().nth(1).is_some_and(|arg| arg == toolshed::isolate::CHILD_ARG) {
        toolshed::isolate::child_main();
    }
    if let Ok(exe) = std::env::current_exe() {
        toolshed::isolate::set_executable(exe);
    }
    // A write to a pipe whose reader is gone must fail with EPIPE, never kill the process: a hook that does
    // not read its input, an MCP server or child that exits early is that peer's failure, and under `serve`
    // the process answers other clients. (Rust's runtime ignores SIGPIPE already; a host may not, so say so.)
    // Our own output ends quietly when its reader goes (`toolshed tools | head`): see `out!`.
    // SAFETY: nothing else is running yet, and ignoring needs no handler code.
    let _ =
        unsafe { nix::sys::signal::signal(nix::sys::signal::Signal::SIGPIPE, nix::sys::signal::SigHandler::SigIgn) };
    // A write past the file-size limit (RLIMIT_FSIZE) must fail with EFBIG, which an edit turns into a clear
    // error with the file put back, rather than kill the process halfway through writing a file in place.
    // SAFETY: as above; ignoring needs no handler code.
    let _ =
        unsafe { nix::sys::signal::signal(nix::sys::signal::Signal::SIGXFSZ, nix::sys::signal::SigHandler::SigIgn) };
    // Blocked before any thread starts, so every thread inherits the mask and one thread takes the signals
    // (children get a clean mask from `std::process::Command`).
    if let Err(e) = stop_signals().thread_block() {
        err!("toolshed: cannot block SIGINT and SIGTERM: {e}");
    }
    let cli = Cli::parse();
    let filter = match cli.verbose {
        0 => "warn",
        1 => "debug",
        _ => "trace",
    };
    // Log lines carry text from hooks, plugins, MCP servers and paths; each is escaped as it is written
    // (tracing's own escaping leaves CR, LF and bidi characters), and so carries no colour codes either.
    tracing_subscriber::fmt()
        .with_writer(|| ShownStderr)
        // With standard error closed its own report of the failed write would panic in `eprintln!`.
        .log_internal_errors(false)
        .with_ansi(false)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("TOOLSHED_LOG").unwrap_or_else(|_| filter.into()))
        .with_target(false)
        .without_time()
        .init();
    match run(cli) {
        Ok(code) => code,
        // Whoever read our output has gone (`toolshed watch | head -3`): end quietly, as a filter does.
        Err(error) if error.downcast_ref::<std::io::Error>().is_some_and(is_closed) => ExitCode::SUCCESS,
        Err(error) => {
            err!("toolshed: {}", escape(&format!("{error:#}")));
            ExitCode::from(2)
        }
    }
}

/// Whether a write failed because its reader is gone.
fn is_closed(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::BrokenPipe
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let cwd = match &cli.cwd {
        Some(dir) => dir.canonicalize().with_context(|| format!("--cwd {}", dir.display()))?,
        None => std::env::current_dir().context("the current directory")?,
    };
    // Before anything is read, so a signal always ends the process (`watch` stops gracefully on its own).
    if !matches!(cli.command, Command::Watch) {
        stop_on_signal();
    }
    let loaded = ConfigLoader::new().config_file(cli.config.clone()).workspace(Some(cwd.clone())).load()?;
    for warning in &loaded.warnings {
        tracing::warn!("{}", escape_line(warning));
    }
    let config = loaded.config;
    KILL_GRACE_MS.store(config.timeouts.kill_grace_ms, std::sync::atomic::Ordering::Relaxed);

    let mut dirs = cli.plugins.clone();
    if dirs.is_empty() {
        match std::env::var_os("TOOLSHED_PLUGINS") {
            Some(dir) => dirs.push(PathBuf::from(dir)),
            None => {
                if let Some(home) = std::env::var_os("HOME") {
                    let default = PathBuf::from(home).join(".toolshed/plugins");
                    if default.is_dir() {
                        dirs.push(default);
                    }
                }
            }
        }
    }
    dirs.extend(config.plugins.dirs.iter().cloned());
    // Loading a library runs its code: a workspace's own plugins load only when the user trusts it.
    let workspace_plugins = cwd.join(".toolshed/plugins");
    if workspace_plugins.is_dir() {
        if loaded.workspace_trusted {
            dirs.push(workspace_plugins);
        } else {
            tracing::warn!(
                "not loading {}: the workspace is not trusted (add it to [plugins] trusted_workspaces in your user config)",
                workspace_plugins.display()
            );
        }
    }

    let mut context = TaskContext::new(cwd);
    for (name, dir) in &cli.roots {
        let dir = dir.canonicalize().with_context(|| format!("--root {name}={}", dir.display()))?;
        context = context.with_root(name.clone(), dir);
    }

    match cli.command {
        Command::Tools { json } => {
            let runtime = Runtime::builder().config(config).plugin_dirs(dirs).build()?;
            report_load_errors(&runtime);
            let tools = runtime.tools();
            if json {
                out!("{}", serde_json::to_string_pretty(&tools)?)?;
            } else {
                for tool in &tools {
                    let aliases = if tool.aliases.is_empty() { "-".to_owned() } else { tool.aliases.join(",") };
                    let caps = if tool.capabilities.is_empty() { "-".to_owned() } else { tool.capabilities.join(",") };
                    out!(
                        "{:<28} {:<20} {:<10} aliases={} capabilities={}",
                        escape_line(&tool.name),
                        escape_line(&tool.plugin),
                        escape_line(&tool.version),
                        escape_line(&aliases),
                        escape_line(&caps)
                    )?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve(args) => {
            let mut config = config;
            let limits = config.serve.clone();
            for tool in &args.allow {
                config.approval.tools.insert(tool.clone(), toolshed::config::Rule::Allow);
            }
            let runtime = Runtime::builder()
                .config(config)
                .plugin_dirs(dirs)
                .yes(args.yes)
                .approver(toolshed::serve::ElicitingApprover)
                .build()?;
            report_load_errors(&runtime);
            let runtime = std::sync::Arc::new(runtime);
            let task = runtime.task(context);
            let options =
                toolshed::serve::ServeOptions { http: args.http, token: args.token, public: args.public, limits };
            let executor = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
            executor.block_on(toolshed::serve::run(std::sync::Arc::clone(&runtime), task, options))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Watch => watch(config, dirs),
        Command::Schema { provider, family } => {
            let runtime = Runtime::builder().config(config).plugin_dirs(dirs).build()?;
            report_load_errors(&runtime);
            let spec_context = SpecContext {
                cwd: context.roots.first().map(|(_, dir)| dir.to_string_lossy().into_owned()).unwrap_or_default(),
                multi_root: context.roots.len() > 1,
                ..SpecContext::default()
            };
            out!("{}", runtime.schema(provider, &family, &spec_context))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Call { tool, input, yes, images } => {
            let input = match input.as_deref() {
                Some("-") => {
                    let mut text = String::new();
                    std::io::stdin().read_to_string(&mut text).context("reading the input from stdin")?;
                    text
                }
                Some(text) => text.to_owned(),
                None => "{}".to_owned(),
            };
            let mut builder = Runtime::builder().config(config).plugin_dirs(dirs).yes(yes);
            if let Some(approver) = TerminalApprover::detect() {
                builder = builder.approver(approver);
            }
            let runtime = builder.build()?;
            report_load_errors(&runtime);
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
    }
}

/// The signals that stop every subcommand: Ctrl-C, `kill`, and a closed terminal.
fn stop_signals() -> nix::sys::signal::SigSet {
    use nix::sys::signal::{SigSet, Signal};
    let mut signals = SigSet::empty();
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        signals.add(signal);
    }
    signals
}

/// `[timeouts] kill_grace_ms` once the config is read; its default until then.
static KILL_GRACE_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(2_000);

/// On SIGINT, SIGTERM or SIGHUP: stop every process this one started (commands and what they left behind,
/// MCP servers, hooks) — SIGTERM, then SIGKILL after `grace` — and exit as that signal would (128 + its
/// number). The default action would leave them all running with parent 1.
fn stop_on_signal() {
    let spawned = std::thread::Builder::new().name("signals".to_owned()).spawn(move || {
        if let Ok(signal) = stop_signals().wait() {
            let grace = KILL_GRACE_MS.load(std::sync::atomic::Ordering::Relaxed);
            toolshed::kill_descendants(std::time::Duration::from_millis(grace));
            std::process::exit(128 + signal as i32);
        }
    });
    if let Err(e) = spawned {
        err!("toolshed: cannot watch for signals: {e}");
    }
}

/// `toolshed watch`: start-up loads as `loaded` lines, a `watching` line once the watcher runs, then every
/// event as it happens.
fn watch(config: toolshed::Config, dirs: Vec<PathBuf>) -> anyhow::Result<ExitCode> {
    use nix::sys::signal::{SigSet, Signal};
    use std::io::Write as _;
    // Blocked before any thread starts, so every thread inherits the mask and one thread takes the signals:
    // the runtime then stops in order (its watcher, its actors) instead of dying mid-load.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    signals.thread_block().context("blocking SIGINT and SIGTERM")?;
    let (stop, mut stopped) = tokio::sync::mpsc::unbounded_channel::<&'static str>();
    let on_signal = stop.clone();
    std::thread::spawn(move || {
        if let Ok(signal) = signals.wait() {
            let _ = on_signal.send(signal.as_str());
        }
    });
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = stop.send("end of input");
    });

    let runtime = Runtime::builder().config(config).plugin_dirs(dirs.clone()).build()?;
    let mut events = runtime.events();
    runtime.watch()?;
    let mut out = std::io::stdout().lock();
    let mut loaded: std::collections::BTreeMap<PathBuf, Vec<String>> = std::collections::BTreeMap::new();
    for event in runtime.register_events() {
        match event {
            toolshed::RegisterEvent::Registered { names, file } => {
                loaded.entry(file.clone()).or_default().extend(names.iter().cloned())
            }
            toolshed::RegisterEvent::Refused { reason, .. } => writeln!(out, "failed {}", escape_line(reason))?,
            toolshed::RegisterEvent::Declined { .. } => {}
        }
    }
    for error in runtime.load_errors() {
        writeln!(out, "failed {}", escape_line(&error.to_string()))?;
    }
    for (file, mut tools) in loaded {
        tools.sort();
        writeln!(out, "loaded {} tools={}", escape_line(&file.display().to_string()), escape_line(&tools.join(",")))?;
    }
    let watched: Vec<String> = dirs.iter().map(|d| escape_line(&d.display().to_string()).into_owned()).collect();
    writeln!(out, "watching {}", watched.join(" "))?;
    out.flush()?;
    let executor = tokio::runtime::Builder::new_current_thread().build()?;
    let why = executor.block_on(async {
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Some(event) => {
                        let stats = runtime.reload_stats();
                        writeln!(out, "{event}")?;
                        if matches!(event, toolshed::PluginEvent::Reloaded { .. }) {
                            writeln!(
                                out,
                                "reload-stats reloads={} old_copies={} old_bytes={} unloaded={} mapped={}",
                                stats.reloads, stats.old_copies, stats.old_bytes, stats.unloaded, stats.process_copies
                            )?;
                        }
                        out.flush()?;
                    }
                    None => return anyhow::Ok("the runtime stopped"),
                },
                why = stopped.recv() => return anyhow::Ok(why.unwrap_or("stopped")),
            }
        }
    })?;
    writeln!(out, "stopped ({why})")?;
    Ok(ExitCode::SUCCESS)
}

/// Standard error for log lines: each written line goes through `shown::escape_line`, so a message cannot
/// forge a second line or redraw the terminal.
struct ShownStderr;

impl std::io::Write for ShownStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let (body, end) = match text.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (&*text, ""),
        };
        let mut err = std::io::stderr().lock();
        err.write_all(escape_line(body).as_bytes())?;
        err.write_all(end.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

fn report_load_errors(runtime: &Runtime) {
    for error in runtime.load_errors() {
        err!("toolshed: plugin not loaded: {}", escape_line(&error.to_string()));
    }
    for event in runtime.register_events() {
        if let toolshed::RegisterEvent::Refused { reason, .. } = event {
            err!("toolshed: tool not registered: {}", escape_line(reason));
        }
    }
}
