//! Row 11: `toolshed call search_files` against `rg`, both as whole processes on the vendored corpus (process
//! start, loading and the search all counted), the same regex over the same tree with row 2a's command line.
//! The call is a one-shot runtime: once the declaration index knows the plugin directory, it opens only
//! search_files' library. Before anything is timed the answers are checked to be the same (row 2a's check),
//! and the index is warmed by that first call. Row 11b is the same call with no index to read, every library
//! opened, as every call did before the index.

use crate::search::{check_search, interleave, timed, CASES};
use crate::stats::{Row, Target, Unit};
use anyhow::{ensure, Context, Result};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Runs rows 11a (with the index) and 11b (without) with the release `toolshed`, the shipped plugins, the corpus and `rg` from `tools`.
pub fn rows(toolshed: &Path, plugins: &Path, corpus: &Path, tools: &Path, out: &Path) -> Result<Vec<Row>> {
    let rg = tools.join("rg");
    ensure!(rg.is_file(), "{} not found: `cargo xtask bench` installs it", rg.display());
    let case = CASES.first().context("row 2a's case")?;
    // A user of its own: no config of the machine's user, and the index in the bench's directory.
    let home = out.join("oneshot-home");
    std::fs::create_dir_all(&home)?;
    let input = json!({ "path": ".", "regex": case.regex }).to_string();
    // `cache` None: the index is where HOME puts it; Some: XDG_CACHE_HOME, `/dev/null` for none at all.
    let call_with = |cache: Option<&str>| {
        let mut command = Command::new(toolshed);
        command
            .arg("--plugins")
            .arg(plugins)
            .arg("--cwd")
            .arg(corpus)
            .args(["call", "search_files", &input])
            .env("HOME", &home)
            .env_remove("TOOLSHED_PLUGINS");
        match cache {
            Some(dir) => command.env("XDG_CACHE_HOME", dir),
            None => command.env_remove("XDG_CACHE_HOME"),
        };
        command
    };
    let call = || call_with(None);
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
    // The same call with no index to read or write: every library is opened, as before the index.
    let everything =
        || -> Result<(Duration, String)> { Ok((timed(&mut call_with(Some("/dev/null")), &[0])?, String::new())) };
    let (all, theirs_again) = interleave(everything, reference)?;
    let libraries = std::fs::read_dir(plugins)?
        .filter_map(Result::ok)
        .filter(|entry| entry.path().extension().is_some_and(|ext| ext == std::env::consts::DLL_EXTENSION))
        .count();
    let full = Row {
        id: "11b".to_owned(),
        what: "`toolshed call search_files`, a whole process, without the index".to_owned(),
        unit: Unit::Nanos,
        ours: all,
        reference_name: "`rg -n --context 1 -e REGEX CORPUS`".to_owned(),
        reference: theirs_again,
        target: Target::Report,
        higher_is_better: false,
        note: Some(format!(
            "as 11a, with no index to read (`XDG_CACHE_HOME=/dev/null`): all {libraries} libraries opened"
        )),
    };
    Ok(vec![Row {
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
    }, full])
}
