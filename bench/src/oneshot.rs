//! Row 11: `toolshed call search_files` against `rg`, both as whole processes on the vendored corpus (process
//! start, loading and the search all counted), the same regex over the same tree with row 2a's command line.
//! The call is a one-shot runtime: once the declaration index knows the plugin directory, it opens only
//! search_files' library. Before anything is timed the answers are checked to be the same (row 2a's check),
//! and the index is warmed by that first call.

use crate::search::{check_search, interleave, timed, CASES};
use crate::stats::{Row, Target, Unit};
use anyhow::{ensure, Context, Result};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Runs row 11 with the release `toolshed`, the shipped plugins, the corpus and `rg` from `tools`.
pub fn row(toolshed: &Path, plugins: &Path, corpus: &Path, tools: &Path, out: &Path) -> Result<Row> {
    let rg = tools.join("rg");
    ensure!(rg.is_file(), "{} not found: `cargo xtask bench` installs it", rg.display());
    let case = CASES.first().context("row 2a's case")?;
    // A user of its own: no config of the machine's user, and the index in the bench's directory.
    let home = out.join("oneshot-home");
    std::fs::create_dir_all(&home)?;
    let input = json!({ "path": ".", "regex": case.regex }).to_string();
    let call = || {
        let mut command = Command::new(toolshed);
        command
            .arg("--plugins")
            .arg(plugins)
            .arg("--cwd")
            .arg(corpus)
            .args(["call", "search_files", &input])
            .env("HOME", &home)
            .env_remove("XDG_CACHE_HOME")
            .env_remove("TOOLSHED_PLUGINS");
        command
    };
    let output = call().stderr(Stdio::inherit()).output().context("running toolshed call")?;
    ensure!(output.status.success(), "toolshed call search_files failed: {}", String::from_utf8_lossy(&output.stdout));
    let text = String::from_utf8(output.stdout)?;
    // `[search_files for '.'] Result:` then the text the model reads.
    let body = text.split_once('\n').map_or("", |(_, body)| body);
    check_search(body, &rg, corpus, case)?;
    ensure!(home.join(".cache/toolshed/index.json").is_file(), "toolshed call wrote no declaration index");

    let ours = || -> Result<(Duration, String)> { Ok((timed(&mut call(), &[0])?, String::new())) };
    let mut args = vec!["-n", "--context", "1", "-e", case.regex];
    let corpus_arg = corpus.to_string_lossy().into_owned();
    args.push(&corpus_arg);
    let reference = || timed(Command::new(&rg).args(&args), &[0, 1]);
    let (ours, theirs) = interleave(ours, reference)?;
    Ok(Row {
        id: "11a".to_owned(),
        what: "`toolshed call search_files`, a whole process".to_owned(),
        unit: Unit::Nanos,
        ours,
        reference_name: "`rg -n --context 1 -e REGEX CORPUS`".to_owned(),
        reference: theirs,
        target: Target::RatioAtMost(1.0),
        higher_is_better: false,
        note: Some(format!(
            "`{}` over the vendored corpus; process start included; the declaration index warm, so one library is opened",
            case.regex
        )),
    })
}
