//! `toolshed watch`: the plugin directories hot-reloaded, one line per event, until a signal or the end of
//! standard input stops it in order.

use crate::setup::Setup;
use anyhow::Context as _;
use nix::sys::signal::{SigSet, Signal};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use toolshed::shown::escape_line;
use toolshed::{PluginEvent, RegisterEvent, Runtime};

/// Start-up loads as `loaded` lines, a `watching` line once the watcher runs, then every event as it
/// happens, and `stopped (why)` at the end.
pub fn run(setup: Setup) -> anyhow::Result<ExitCode> {
    let Setup { config, dirs, .. } = setup;
    // Blocked before any thread starts, so every thread inherits the mask and one thread takes the signals:
    // the runtime then stops in order (its watcher, its actors) instead of dying mid-load.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    signals.thread_block().context("blocking SIGINT and SIGTERM")?;
    let (stop, mut stopped) = tokio::sync::mpsc::unbounded_channel::<&'static str>();
    let on_signal = stop.clone();
    std::thread::spawn(move || {
        if let Ok(signal) = signals.wait() {
            let _ = on_signal.send(signal.as_str());
        }
    });
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = stop.send("end of input");
    });

    let runtime = Runtime::builder().config(config).plugin_dirs(dirs.clone()).build()?;
    let mut events = runtime.events();
    runtime.watch()?;
    let mut out = std::io::stdout().lock();
    let mut loaded: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
    for event in runtime.register_events() {
        match event {
            RegisterEvent::Registered { names, file } => {
                loaded.entry(file.clone()).or_default().extend(names.iter().cloned())
            }
            RegisterEvent::Refused { reason, .. } => writeln!(out, "failed {}", escape_line(reason))?,
            RegisterEvent::Declined { .. } => {}
        }
    }
    for error in runtime.load_errors() {
        writeln!(out, "failed {}", escape_line(&error.to_string()))?;
    }
    for (file, mut tools) in loaded {
        tools.sort();
        writeln!(out, "loaded {} tools={}", escape_line(&file.display().to_string()), escape_line(&tools.join(",")))?;
    }
    let watched: Vec<String> = dirs.iter().map(|d| escape_line(&d.display().to_string()).into_owned()).collect();
    writeln!(out, "watching {}", watched.join(" "))?;
    out.flush()?;
    let executor = tokio::runtime::Builder::new_current_thread().build()?;
    let why = executor.block_on(async {
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Some(event) => {
                        let stats = runtime.reload_stats();
                        writeln!(out, "{event}")?;
                        if matches!(event, PluginEvent::Reloaded { .. }) {
                            writeln!(
                                out,
                                "reload-stats reloads={} old_copies={} old_bytes={} unloaded={} mapped={}",
                                stats.reloads, stats.old_copies, stats.old_bytes, stats.unloaded, stats.process_copies
                            )?;
                        }
                        out.flush()?;
                    }
                    None => return anyhow::Ok("the runtime stopped"),
                },
                why = stopped.recv() => return anyhow::Ok(why.unwrap_or("stopped")),
            }
        }
    })?;
    writeln!(out, "stopped ({why})")?;
    Ok(ExitCode::SUCCESS)
}
