//! `toolshed schema`: the loaded tools' schemas for one provider and model family.

use crate::setup::Setup;
use std::process::ExitCode;
use toolshed::{Provider, Runtime, SpecContext};

/// Prints the schemas as the provider's `tools` JSON, or the system prompt's XML tool-use section.
pub fn run(setup: Setup, provider: Provider, family: &str) -> anyhow::Result<ExitCode> {
    let Setup { config, dirs, context } = setup;
    let runtime = Runtime::builder().config(config).plugin_dirs(dirs).build()?;
    super::report_load_errors(&runtime);
    let spec_context = SpecContext {
        cwd: context.roots.first().map(|(_, dir)| dir.to_string_lossy().into_owned()).unwrap_or_default(),
        multi_root: context.roots.len() > 1,
        ..SpecContext::default()
    };
    out!("{}", runtime.schema(provider, family, &spec_context))?;
    Ok(ExitCode::SUCCESS)
}
