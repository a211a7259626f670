//! `toolshed tools`: the loaded tools, as a table or JSON.

use crate::setup::Setup;
use std::process::ExitCode;
use toolshed::shown::escape_line;
use toolshed::Runtime;

/// Lists the tools: one line each (name, plugin, version, aliases, capabilities), or pretty JSON.
pub fn run(setup: Setup, json: bool) -> anyhow::Result<ExitCode> {
    let runtime = Runtime::builder().config(setup.config).plugin_dirs(setup.dirs).build()?;
    super::report_load_errors(&runtime);
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
