//! `toolshed serve`: the loaded tools as an MCP server, over stdio or streamable HTTP.

use crate::args::ServeArgs;
use crate::setup::Setup;
use std::process::ExitCode;
use std::sync::Arc;
use toolshed::serve::{ElicitingApprover, ServeOptions};
use toolshed::Runtime;

/// Serves until the client goes (stdio) or the process is stopped (HTTP); asks go to the client.
pub fn run(setup: Setup, args: ServeArgs) -> anyhow::Result<ExitCode> {
    let Setup { mut config, dirs, context } = setup;
    if let Some(profile) = args.profile {
        config.serve.profile = profile;
    }
    let context = context.with_profile(config.serve.profile);
    let limits = config.serve.clone();
    for tool in &args.allow {
        config.approval.tools.insert(tool.clone(), toolshed::config::Rule::Allow);
    }
    let runtime =
        Runtime::builder().config(config).plugin_dirs(dirs).yes(args.yes).approver(ElicitingApprover).build()?;
    super::report_load_errors(&runtime);
    let runtime = Arc::new(runtime);
    let task = runtime.task(context);
    let options = ServeOptions { http: args.http, token: args.token, public: args.public, limits };
    let executor = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    executor.block_on(toolshed::serve::run(Arc::clone(&runtime), task, options))?;
    Ok(ExitCode::SUCCESS)
}
