//! Why a job's child process died, in one line for the model: which limit it hit and the key that sets it.

use crate::config::IsolationConfig;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// Describes a child that died without answering, from its exit status and the tail of its stderr.
pub(super) fn describe(status: Option<ExitStatus>, stderr: &str, limits: &IsolationConfig) -> String {
    let signal = status.and_then(|status| status.signal());
    // Rust's runtime says what it is aborting for before it raises SIGABRT (or SIGSEGV on a guard page).
    if stderr.contains("has overflowed its stack") {
        return format!(
            "the parser overflowed its stack (the input nests too deeply): the limit is [isolation] stack_mb = {}",
            limits.stack_mb
        );
    }
    if stderr.contains("memory allocation of") || stderr.contains("capacity overflow") {
        return format!("the parser ran out of memory: the limit is [isolation] memory_mb = {}", limits.memory_mb);
    }
    match signal {
        Some(nix::libc::SIGXCPU) => {
            format!("the parser used more CPU time than [isolation] cpu_ms = {} allows", limits.cpu_ms)
        }
        // The hard CPU limit, a second past the soft one, or the kernel's out-of-memory killer (the host kills
        // only children that no longer answer, and says so itself).
        Some(nix::libc::SIGKILL) => format!(
            "the parser was killed (SIGKILL): it used more CPU time than [isolation] cpu_ms = {} allows, or the \
             system ran out of memory",
            limits.cpu_ms
        ),
        Some(signal) => {
            let name =
                nix::sys::signal::Signal::try_from(signal).map_or_else(|_| signal.to_string(), |s| s.to_string());
            let why = last_line(stderr);
            if why.is_empty() {
                format!("the parser crashed ({name})")
            } else {
                format!("the parser crashed ({name}): {why}")
            }
        }
        None => match status.and_then(|status| status.code()) {
            Some(code) => {
                let why = last_line(stderr);
                if why.is_empty() {
                    format!("the parser's child process exited with status {code}")
                } else {
                    format!("the parser's child process exited with status {code}: {why}")
                }
            }
            None => "the parser's child process ended without an answer".to_owned(),
        },
    }
}

/// The last non-empty line of a child's stderr, shortened, with control characters shown as escapes.
fn last_line(stderr: &str) -> String {
    let line = stderr.lines().rev().map(str::trim).find(|line| !line.is_empty()).unwrap_or("");
    let line: String = line.chars().take(300).collect();
    crate::shown::escape_line(&line).into_owned()
}
