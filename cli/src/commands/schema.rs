//! `toolshed schema`: the loaded tools' schemas for one provider and model family, and the connected MCP
//! servers' tools for the providers that call natively.

use crate::args::SchemaArgs;
use crate::setup::Setup;
use std::path::PathBuf;
use std::process::ExitCode;
use toolshed::{Mode, Provider, Runtime, SpecContext};

/// Prints the schemas as the provider's `tools` JSON, or the system prompt's XML tool-use section.
pub fn run(setup: Setup, args: SchemaArgs, searched: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let SchemaArgs { provider, family, profile, mode, focus_chain, web_tools, browser, viewport } = args;
    let Setup { config, dirs, context } = setup;
    let runtime = Runtime::builder().config(config).plugin_dirs(dirs).build()?;
    super::loaded(&runtime, searched)?;
    // The MCP servers still starting get the same bounded wait `serve` gives them before it lists.
    if runtime.mcp_servers().is_some() {
        tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(runtime.mcp_listable());
    }
    let mut spec_context = SpecContext {
        cwd: context.roots.first().map(|(_, dir)| dir.to_string_lossy().into_owned()).unwrap_or_default(),
        multi_root: context.roots.len() > 1,
        // A provider's `tools` JSON is for native tool calling; the XML section is for models without it.
        native_tool_calls: provider != Provider::Xml,
        profile,
        mode: if mode == "plan" { Mode::Plan } else { Mode::Act },
        supports_browser: browser,
        browser_viewport: viewport,
        ..SpecContext::default()
    };
    for (on, flag) in [(focus_chain, "focus_chain"), (web_tools, "web_tools")] {
        if on {
            spec_context.flags.insert(flag.to_owned());
        }
    }
    out!("{}", runtime.schema(provider, &family, &spec_context))?;
    Ok(ExitCode::SUCCESS)
}
