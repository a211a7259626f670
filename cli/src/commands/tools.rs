//! `toolshed tools`: the loaded tools, as a table or JSON.

use crate::setup::Setup;
use std::path::PathBuf;
use std::process::ExitCode;
use toolshed::Runtime;

/// Lists the tools: a header and one aligned row each (name, plugin, version, aliases, capabilities), or
/// pretty JSON for scripts. No tool loaded is an error naming the directories `searched`.
pub fn run(setup: Setup, json: bool, searched: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let runtime = Runtime::builder().config(setup.config).plugin_dirs(setup.dirs).build()?;
    super::loaded(&runtime, searched)?;
    let tools = runtime.tools();
    if json {
        out!("{}", serde_json::to_string_pretty(&tools)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let listed = |names: &[String]| if names.is_empty() { "-".to_owned() } else { names.join(",") };
    let rows: Vec<Vec<String>> = tools
        .iter()
        .map(|tool| {
            vec![
                tool.name.clone(),
                tool.plugin.clone(),
                tool.version.clone(),
                listed(&tool.aliases),
                listed(&tool.capabilities),
            ]
        })
        .collect();
    crate::table::print(&["TOOL", "PLUGIN", "VERSION", "ALIASES", "CAPABILITIES"], &rows)?;
    Ok(ExitCode::SUCCESS)
}
