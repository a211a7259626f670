//! `toolshed serve`: the loaded tools as an MCP server, over stdio or streamable HTTP, one task per session.

use crate::args::ServeArgs;
use crate::setup::Setup;
use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use toolshed::serve::{ElicitingApprover, Progress, ServeOptions};
use toolshed::Runtime;

/// Serves until the client goes (stdio) or the process is stopped (HTTP); asks go to the client.
/// `client_roots`: no `--cwd` was given, so a client's roots are its session's workspace.
pub fn run(setup: Setup, args: ServeArgs, client_roots: bool, searched: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let Setup { mut config, dirs, context } = setup;
    let token = token(&args, config.commands.sandbox)?;
    if let Some(profile) = args.profile {
        config.serve.profile = profile;
    }
    // browser_action answers with screenshots: a client that asks for it reads images.
    let images = args.browser || context.supports_images;
    let context = context.with_profile(config.serve.profile).with_browser(args.browser).with_images(images);
    let limits = config.serve.clone();
    for tool in &args.allow {
        config.approval.tools.insert(tool.clone(), toolshed::config::Rule::Allow);
    }
    // Streamed command output goes to the MCP call that asked for progress.
    let progress = Progress::new();
    let runtime = Runtime::builder()
        .config(config)
        .plugin_dirs(dirs)
        .yes(args.yes)
        .approver(ElicitingApprover)
        .on_event(progress.sink())
        .build()?;
    super::loaded(&runtime, searched)?;
    let runtime = Arc::new(runtime);
    let options =
        ServeOptions { http: args.http, token, public: args.public, limits, client_roots, progress: Some(progress) };
    // One stdio connection is one client's calls, answered in turn: a single thread carries them with no
    // hand-over between workers (the tools' own work runs on the actors' and pools' threads either way). HTTP
    // serves many sessions at once.
    let executor = match options.http {
        None => tokio::runtime::Builder::new_current_thread().enable_all().build()?,
        Some(_) => tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?,
    };
    executor.block_on(toolshed::serve::run(Arc::clone(&runtime), context, options))?;
    Ok(ExitCode::SUCCESS)
}

/// The bearer token: from `--token-file` (owned by this user, readable by nobody else), else from
/// `TOOLSHED_SERVE_TOKEN`. Never from the command line, which every process on the machine can read.
fn token(args: &ServeArgs, sandbox: toolshed::config::SandboxMode) -> anyhow::Result<Option<String>> {
    use std::os::unix::fs::MetadataExt;
    if args.token.is_some() {
        anyhow::bail!(
            "--token puts the token where every process on this machine can read it (/proc/PID/cmdline); write \
             it to a file only you can read (chmod 600) and pass --token-file PATH, or set TOOLSHED_SERVE_TOKEN"
        );
    }
    let Some(path) = &args.token_file else {
        return Ok(std::env::var("TOOLSHED_SERVE_TOKEN").ok().filter(|t| !t.is_empty()));
    };
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| anyhow::anyhow!("cannot read the token file {shown}: {e}"))?;
    let meta = file.metadata()?;
    if meta.uid() != nix::unistd::geteuid().as_raw() || meta.mode() & 0o077 != 0 || !meta.is_file() {
        anyhow::bail!(
            "the token file {shown} must be a file owned by you and readable by nobody else (chmod 600 {shown}); \
             it is owned by uid {} with mode {:o}",
            meta.uid(),
            meta.mode() & 0o7777
        );
    }
    let mut text = String::new();
    std::io::Read::take(file, 64 * 1024)
        .read_to_string(&mut text)
        .map_err(|e| anyhow::anyhow!("cannot read the token file {shown}: {e}"))?;
    // Its path is in this process's command line, which anyone may read: a sandboxed command must not be
    // able to read the file too, or it could call the host's tools outside the sandbox. The sandbox hides
    // it, except beneath a place `workspace-write` grants in full (Landlock cannot take a file out of a
    // grant): there it is refused.
    if sandbox == toolshed::config::SandboxMode::WorkspaceWrite {
        let resolved = std::fs::canonicalize(path)?;
        let writable = [Some(PathBuf::from("/tmp")), Some(std::env::temp_dir()), std::env::current_dir().ok()];
        if let Some(place) = writable
            .into_iter()
            .flatten()
            .find(|place| std::fs::canonicalize(place).is_ok_and(|place| resolved.starts_with(place)))
        {
            anyhow::bail!(
                "the token file {shown} is beneath {}, which commands in the workspace-write sandbox may read \
                 and write; keep it elsewhere (in your home directory, say)",
                place.display()
            );
        }
    }
    toolshed::children::hide_from_sandbox(path)
        .map_err(|e| anyhow::anyhow!("cannot keep the token file {shown} from sandboxed commands: {e}"))?;
    let token = text.trim().to_owned();
    if token.is_empty() {
        anyhow::bail!("the token file {shown} is empty");
    }
    Ok(Some(token))
}
