//! `cargo xtask soak [--seconds N] [--tasks T] [--reload-ms MS] [--debug]`: builds the workspace (release by
//! default, like the bench; `--debug` reuses the debug build, which is quicker to make but much slower to
//! run), then runs `toolshed-soak` over the shipped plugins: concurrent tasks calling every tool while the
//! plugins hot-reload. It prints the report, writes `target/soak/latest.json`, and fails when the soak does.

use crate::{build, root};
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
    // `cargo build --workspace` inside builds the soak too. Its binary runs as built there: a `cargo run
    // --package` would resolve the dependencies' features for the soak alone and build reqwest, rmcp and
    // the runtime a second time.
    let built = build::plugins(!debug)?;
    let profile = if debug { "debug" } else { "release" };
    let soak = root().join("target").join(profile).join(format!("toolshed-soak{}", std::env::consts::EXE_SUFFIX));
    let out = root().join("target/soak");
    eprintln!(
        "xtask: $ {} --plugins {} --out {} {}",
        soak.display(),
        built.plugins.display(),
        out.display(),
        forwarded.join(" ")
    );
    let status = std::process::Command::new(&soak)
        .arg("--plugins")
        .arg(&built.plugins)
        .arg("--out")
        .arg(&out)
        .args(&forwarded)
        .current_dir(root())
        .status()
        .with_context(|| format!("running {}", soak.display()))?;
    if !status.success() {
        bail!("the soak failed ({status}); see the report above and target/soak/latest.json");
    }
    Ok(())
}
