//! Signals: the ones ignored so writes fail instead of killing the process, and the ones that stop it,
//! taken by one thread that stops every process this one started before exiting.

use nix::sys::signal::{SigHandler, SigSet, Signal};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Ignores SIGPIPE and SIGXFSZ and blocks the stop signals; called first, before any thread starts.
pub fn set_up() {
    // A write to a pipe whose reader is gone must fail with EPIPE, never kill the process: a hook that does
    // not read its input, an MCP server or child that exits early is that peer's failure, and under `serve`
    // the process answers other clients. (Rust's runtime ignores SIGPIPE already; a host may not, so say so.)
    // Our own output ends quietly when its reader goes (`toolshed tools | head`): see `out!`.
    // SAFETY: nothing else is running yet, and ignoring needs no handler code.
    let _ = unsafe { nix::sys::signal::signal(Signal::SIGPIPE, SigHandler::SigIgn) };
    // A write past the file-size limit (RLIMIT_FSIZE) must fail with EFBIG, which an edit turns into a clear
    // error with the file put back, rather than kill the process halfway through writing a file in place.
    // SAFETY: as above; ignoring needs no handler code.
    let _ = unsafe { nix::sys::signal::signal(Signal::SIGXFSZ, SigHandler::SigIgn) };
    // Blocked before any thread starts, so every thread inherits the mask and one thread takes the signals
    // (every child starts with an empty mask and default dispositions: `toolshed::children`).
    if let Err(e) = stop_signals().thread_block() {
        err!("toolshed: cannot block SIGINT and SIGTERM: {e}");
    }
}

/// The signals that stop every subcommand: Ctrl-C, `kill`, and a closed terminal.
fn stop_signals() -> SigSet {
    let mut signals = SigSet::empty();
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        signals.add(signal);
    }
    signals
}

/// Set once a stop signal was taken: the signal thread is stopping the processes and will end this one.
static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Set once the signal thread runs: only then does a pending stop signal mean someone will end the process.
static WATCHING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Waits for the signal thread to end the process when a stop signal has arrived, taken or still pending.
/// Without this, a subcommand whose work ended because the signal killed it (a command's `sleep`) could return
/// and exit 0 before the signal thread had stopped everything and exited as the signal would.
pub fn wait_if_stopping() {
    // SAFETY: sigpending fills the set of signals pending for this thread or the process, and sigismember
    // only reads it once it has.
    let stop_pending = unsafe {
        let mut pending = std::mem::zeroed::<nix::libc::sigset_t>();
        nix::libc::sigpending(&mut pending) == 0
            && stop_signals().iter().any(|signal| nix::libc::sigismember(&pending, signal as i32) == 1)
    };
    if WATCHING.load(Ordering::SeqCst) && (STOPPING.load(Ordering::SeqCst) || stop_pending) {
        loop {
            std::thread::park();
        }
    }
}

/// `[timeouts] kill_grace_ms` once the config is read; its default until then.
static KILL_GRACE_MS: AtomicU64 = AtomicU64::new(2_000);

/// Sets the grace [`stop_on_signal`] gives the processes it stops, from the configuration.
pub fn set_kill_grace_ms(grace: u64) {
    KILL_GRACE_MS.store(grace, Ordering::Relaxed);
}

/// On SIGINT, SIGTERM or SIGHUP: stop every process this one started (commands and what they left behind,
/// MCP servers, hooks) — SIGTERM, then SIGKILL after `grace` — and exit as that signal would (128 + its
/// number). The default action would leave them all running with parent 1.
pub fn stop_on_signal() {
    let spawned = std::thread::Builder::new().name("signals".to_owned()).spawn(move || {
        if let Ok(signal) = stop_signals().wait() {
            STOPPING.store(true, Ordering::SeqCst);
            let grace = KILL_GRACE_MS.load(Ordering::Relaxed);
            toolshed::kill_descendants(Duration::from_millis(grace));
            std::process::exit(128 + signal as i32);
        }
    });
    match spawned {
        Ok(_) => WATCHING.store(true, Ordering::SeqCst),
        Err(e) => err!("toolshed: cannot watch for signals: {e}"),
    }
}
