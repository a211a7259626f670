//! `cargo xtask soak [--seconds N] [--tasks T] [--reload-ms MS] [--debug]`: builds the workspace (release by
//! default, like the bench; `--debug` reuses the debug build, which is quicker to make but much slower to
//! run), then runs `toolshed-soak` over the shipped plugins: concurrent tasks calling every tool while the
//! plugins hot-reload. It prints the report, writes `target/soak/latest.json`, and fails when the soak does.

use crate::{build, cmd, root};
use anyhow::{bail, Context, Result};

/// Builds and runs the soak.
pub fn run(args: &[String]) -> Result<()> {
    let mut debug = false;
    let mut forwarded: Vec<String> = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--debug" => debug = true,
            "--seconds" | "--tasks" | "--reload-ms" => {
                let value = rest.next().with_context(|| format!("{arg} needs a number"))?;
                value.parse::<u64>().with_context(|| format!("{arg} {value}: not a number"))?;
                forwarded.extend([arg.clone(), value.clone()]);
            }
            other => bail!("unknown soak option '{other}'; options: --seconds N, --tasks T, --reload-ms MS, --debug"),
        }
    }
    let built = build::plugins(!debug)?;
    let plugins = built.plugins.to_string_lossy().into_owned();
    let out = root().join("target/soak").to_string_lossy().into_owned();
    let mut run = vec!["run", "--quiet"];
    if !debug {
        run.push("--release");
    }
    run.extend(["--package", "toolshed-soak", "--", "--plugins", &plugins, "--out", &out]);
    run.extend(forwarded.iter().map(String::as_str));
    cmd("cargo", &run, &[])
}
