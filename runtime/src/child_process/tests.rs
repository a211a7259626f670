//! The spawner thread: a failure to start it is not kept, the next call starts it.

use super::spawn;
use nix::libc;
use std::process::Command;
use std::time::Duration;

/// Set in the process of its own that runs [`spawner_retry_body`].
const BODY: &str = "TOOLSHED_SPAWNER_RETRY_BODY";

#[test]
fn a_spawner_thread_that_could_not_start_is_started_by_the_next_call() {
    // In a process of its own: the body lowers the process's address-space limit, which would fail other
    // tests' threads, and needs a process whose spawner thread has not started yet.
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process::tests::spawner_retry_body",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(BODY, "1")
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{said}");
    assert!(said.contains("1 passed"), "{said}");
}

#[test]
#[ignore = "run by a_spawner_thread_that_could_not_start_is_started_by_the_next_call in a process of its own"]
fn spawner_retry_body() {
    if std::env::var_os(BODY).is_none() {
        return;
    }
    let mut saved = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: fills a stack value.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut saved) }, 0);
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmSize:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    // Room for a few small allocations, none for a thread's stack (2 MiB): the spawner thread cannot start
    // (as when threads or memory are short for a moment).
    let tight = libc::rlimit { rlim_cur: (kib * 1024 + 512 * 1024) as libc::rlim_t, rlim_max: saved.rlim_max };
    // SAFETY: plain system calls on stack values; the limit is restored before anything else runs.
    let first = unsafe {
        assert_eq!(libc::setrlimit(libc::RLIMIT_AS, &tight), 0);
        let first = spawn(Command::new("true"), Duration::from_secs(60));
        assert_eq!(libc::setrlimit(libc::RLIMIT_AS, &saved), 0);
        first
    };
    let error = first.expect_err("the spawner thread cannot start under the limit");
    assert!(error.to_string().contains("the thread that starts child processes cannot start"), "{error}");
    let mut child = spawn(Command::new("true"), Duration::from_secs(60)).expect("the next call starts the thread");
    assert!(child.wait().unwrap().success());
}
