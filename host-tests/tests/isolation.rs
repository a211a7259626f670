//! Out-of-process plugins (`[plugins] isolation = "process"`): a plugin that segfaults, aborts, exits, loops
//! or leaks a thread in its child process gives its call a tool error, the host lives, and the next call runs
//! in a restarted child; host services cross the socket and stay the host's; crashes back off and quarantine;
//! hot reload swaps children with calls in flight; and a soak of crashes leaves descriptors and RSS flat.

use crate::util::*;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use toolshed::{
    BoxFuture, Config, Interaction, PluginEvent, PluginEvents, Question, RegisterEvent, Runtime, TaskHandle, ToolUse,
    UserReply,
};

/// How long any one expected event may take: generous, since it only bounds a failure.
const PATIENCE: Duration = Duration::from_secs(60);

/// Config that runs third-party plugins out of process, with small delays (events are awaited, never timed):
/// `process` goes into `[plugins.process]`, `more` after everything.
fn isolated_config(process: &str) -> Config {
    isolated_with(process, "")
}

fn isolated_with(process: &str, more: &str) -> Config {
    let text = format!(
        "[plugins]\nisolation = \"process\"\n[plugins.process]\nrestart_backoff_ms = 1\nrestart_backoff_max_ms = 20\n\
         kill_grace_ms = 50\npoll_ms = 5\n{process}\n[timeouts]\nwatch_debounce_ms = 30\ncancel_grace_ms = 2000\n{more}"
    );
    Config::from_toml_str(&text).unwrap()
}

/// A directory holding a copy of the crash fixture (a copy: tests that remove or swap it own theirs).
fn plugin_dir(names: &[&str]) -> tempfile::TempDir {
    let dir = workspace();
    for name in names {
        std::fs::copy(fixture(name), dir.path().join(lib(name))).unwrap();
    }
    dir
}

fn runtime_over(dir: &Path, config: Config) -> Runtime {
    Runtime::builder().config(config).plugin_dir(dir).build().unwrap()
}

fn probe(task: &TaskHandle, how: &str) -> toolshed::ToolResult {
    call(task, "crash_probe", json!({ "how": how }))
}

/// The child's pid, from a `pid` probe that must succeed.
fn child_pid(task: &TaskHandle) -> u32 {
    let result = probe(task, "pid");
    assert!(!result.is_error(), "{result:?}");
    text(&result).trim_start_matches("pid ").parse().unwrap()
}

/// Whether the process still exists: a zombie counts, since the host has not reaped it (and so not yet
/// noticed its death) until its entry is gone.
fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "{what} did not happen within {PATIENCE:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_segfault_an_abort_and_an_exit_are_tool_errors_naming_the_plugin_and_the_next_call_runs_in_a_new_child() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let runtime = runtime_over(dir.path(), isolated_config(""));
    let task = task_in(&runtime, ws.path());
    let mut pid = child_pid(&task);
    assert_ne!(pid, std::process::id(), "the plugin runs in a child, not in the host");
    for (how, cause) in
        [("segv", "crashed (SIGSEGV)"), ("abort", "crashed (SIGABRT)"), ("exit", "exited with status 3")]
    {
        let result = probe(&task, how);
        assert!(result.is_error(), "{how}: {result:?}");
        let said = text(&result);
        assert!(said.contains("the plugin `fixture_crash`") && said.contains(cause), "{how}: {said}");
        assert!(said.contains("crash_probe"), "the error names the tool: {said}");
        wait_until("the crashed child is reaped", || !alive(pid));
        let next = child_pid(&task);
        assert_ne!(next, pid, "{how}: the next call runs in a restarted child");
        pid = next;
    }
    // Other tools of the host were never touched.
    let listed: Vec<String> = runtime.tools().into_iter().map(|t| t.name).collect();
    assert!(listed.contains(&"crash_probe".to_owned()), "{listed:?}");
}

#[test]
fn a_cpu_limit_per_child_ends_a_loop_with_an_error_naming_the_key() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let runtime = runtime_over(dir.path(), isolated_config("cpu_ms = 1000\n"));
    let task = task_in(&runtime, ws.path());
    let pid = child_pid(&task);
    let result = probe(&task, "loop");
    let said = text(&result);
    assert!(result.is_error(), "{said}");
    assert!(said.contains("used up its CPU time, [plugins.process] cpu_ms = 1000"), "{said}");
    assert_ne!(child_pid(&task), pid);
}

#[test]
fn a_child_that_closes_its_connection_mid_call_and_lingers_is_killed_and_the_call_fails() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let runtime = runtime_over(dir.path(), isolated_config(""));
    let task = task_in(&runtime, ws.path());
    let pid = child_pid(&task);
    let result = probe(&task, "close");
    assert!(result.is_error(), "{result:?}");
    assert!(text(&result).contains("the plugin `fixture_crash`"), "{}", text(&result));
    wait_until("the lingering child is killed", || !alive(pid));
    assert_ne!(child_pid(&task), pid);
}

#[test]
fn a_child_that_stops_reading_is_killed_after_stall_ms_instead_of_holding_the_host_thread_that_writes() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let runtime = runtime_over(dir.path(), isolated_config("stall_ms = 200\n"));
    let task = task_in(&runtime, ws.path());
    let pid = child_pid(&task);
    let stopped = {
        let task = task.clone();
        std::thread::spawn(move || probe(&task, "stop"))
    };
    wait_until("the child stops", || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('T')))
    });
    // 8 MiB cannot fit in the socket's buffer of a process that reads nothing.
    let big = "x".repeat(8 << 20);
    let result = call(&task, "crash_probe", json!({"how": "pid", "path": big}));
    assert!(result.is_error(), "{result:?}");
    assert!(text(&result).contains("stopped reading its messages for [plugins.process] stall_ms"), "{}", text(&result));
    let stopped = stopped.join().unwrap();
    assert!(stopped.is_error(), "{stopped:?}");
    wait_until("the stopped child is reaped", || !alive(pid));
    assert_ne!(child_pid(&task), pid);
}

#[test]
fn a_thread_left_behind_that_crashes_the_child_later_is_contained_and_the_next_call_works() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let runtime = runtime_over(dir.path(), isolated_config(""));
    let task = task_in(&runtime, ws.path());
    let left = probe(&task, "leak_abort");
    assert!(!left.is_error(), "the call itself answered: {left:?}");
    let pid: u32 = text(&left).trim_start_matches("pid ").parse().unwrap();
    wait_until("the leaked thread aborts its child", || !alive(pid));
    assert_ne!(child_pid(&task), pid);
}

#[test]
fn an_endless_loop_ends_at_the_call_timeout_with_its_child_killed_and_the_next_call_works() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let mut config = isolated_config("");
    config.timeouts.call_ms = 300;
    let runtime = runtime_over(dir.path(), config);
    let task = task_in(&runtime, ws.path());
    let pid = child_pid(&task);
    let result = probe(&task, "loop");
    assert!(result.is_error(), "{result:?}");
    wait_until("the looping child is killed", || !alive(pid));
    let next = child_pid(&task);
    assert_ne!(next, pid);
    // The worker that waited for the loop came back: nothing is left abandoned.
    wait_until("no abandoned call", || runtime.tools().into_iter().all(|t| t.abandoned == 0 && !t.quarantined));
}

/// Whether the process runs: a zombie (dead, waiting for its parent to reap it) does not count.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')))
}

#[test]
fn a_process_the_plugin_forked_cannot_hide_its_child_s_crash_by_holding_the_socket() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let runtime = runtime_over(dir.path(), isolated_config(""));
    let task = task_in(&runtime, ws.path());
    for how in ["fork_segv", "setsid_segv"] {
        let pid = child_pid(&task);
        let file = ws.path().join(format!("{how}.pid"));
        let result = call(&task, "crash_probe", json!({"how": how, "path": file.to_string_lossy()}));
        let said = text(&result);
        assert!(result.is_error() && said.contains("crashed (SIGSEGV)"), "{how}: {said}");
        let forked: u32 = std::fs::read_to_string(&file).unwrap().parse().unwrap();
        if how == "fork_segv" {
            // Still in the child's group: killed with it.
            wait_until("the forked process is killed with its group", || !running(forked));
        } else {
            // It left the group: out of reach of the group kill (documented), but not of the host's notice.
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(forked as i32), nix::sys::signal::SIGKILL);
        }
        assert_ne!(child_pid(&task), pid, "{how}: the next call runs in a new child");
    }
}

#[test]
fn a_plugin_that_never_stops_talking_is_still_cancelled_and_killed() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let mut config = isolated_config("");
    config.timeouts.call_ms = 300;
    let runtime = runtime_over(dir.path(), config);
    let task = task_in(&runtime, ws.path());
    let pid = child_pid(&task);
    let result = probe(&task, "flood");
    assert!(result.is_error(), "{result:?}");
    wait_until("the flooding child is killed", || !alive(pid));
    assert_ne!(child_pid(&task), pid);
    wait_until("no abandoned call", || runtime.tools().into_iter().all(|t| t.abandoned == 0 && !t.quarantined));
}

#[test]
fn a_child_outlives_the_thread_that_started_it() {
    // A child asks to die with its parent, which Linux takes to be the thread that started it: the runtime
    // (and so the first child) is built on a thread that then ends.
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let path = dir.path().to_owned();
    let runtime = std::thread::spawn(move || runtime_over(&path, isolated_config(""))).join().unwrap();
    let task = task_in(&runtime, ws.path());
    let pid = child_pid(&task);
    // Another call on another thread, which also ends, then a call from here: still the same child.
    let other = task.clone();
    let again = std::thread::spawn(move || child_pid(&other)).join().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(again, pid);
    assert_eq!(child_pid(&task), pid, "the child lived on after the thread that started it ended");
}

/// Runs `work` on a thread of its own and waits for its answer at most [`PATIENCE`]: a call that would hang
/// fails the test instead of holding it.
fn within_patience<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(PATIENCE).unwrap_or_else(|_| panic!("{what} did not come back within {PATIENCE:?}"))
}

#[test]
fn a_child_that_dies_while_a_handler_is_built_fails_the_build_with_its_signal_not_the_start_timeout() {
    // The factory segfaults in the child while the host waits for the handler. The start timeout is far past
    // the bound: the build must end with the child's death, and say how it died.
    let dir = plugin_dir(&["fixture_crash"]);
    let path = dir.path().to_owned();
    let config = isolated_with("start_timeout_ms = 600000\n", "[plugins.config.fixture_crash]\nbuild = \"segv\"\n");
    let runtime = within_patience("building the runtime", move || runtime_over(&path, config));
    let refused: Vec<String> = runtime
        .register_events()
        .iter()
        .filter_map(|e| match e {
            RegisterEvent::Refused { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].contains("the plugin `fixture_crash` crashed (SIGSEGV)"), "{refused:?}");
    assert!(!refused[0].contains("start_timeout_ms"), "{refused:?}");
}

#[test]
fn a_killed_child_that_left_its_process_group_is_still_killed_and_the_next_call_does_not_wait_for_it() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let mut config = isolated_config("");
    config.timeouts.call_ms = 300;
    let runtime = runtime_over(dir.path(), config);
    let task = task_in(&runtime, ws.path());
    let pid = child_pid(&task);
    // The child moves into the host's process group and ignores its cancellation: the kill after
    // kill_grace_ms must reach it all the same, and the worker that waited for it must come back.
    let result = probe(&task, "escape_group");
    assert!(result.is_error() && !text(&result).contains("setpgid failed"), "the call timed out: {result:?}");
    wait_until("the child that left its group is killed", || !alive(pid));
    wait_until("no abandoned call", || runtime.tools().into_iter().all(|t| t.abandoned == 0));
    let next = within_patience("the call after the kill", move || child_pid(&task));
    assert_ne!(next, pid, "the next call runs in a new child");
}

/// A user who answers a question (a file's path) once that file exists.
struct AnswersOnceTheFileExists;

impl Interaction for AnswersOnceTheFileExists {
    fn ask(&self, question: Question) -> BoxFuture<Option<UserReply>> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            wait_until("the file asked about is written", || Path::new(&question.text).exists());
            let _ = tx.send(UserReply::text("seen"));
        });
        Box::pin(async move { rx.await.ok() })
    }
}

#[test]
fn a_plugin_that_logs_heavily_while_a_host_service_is_slow_keeps_its_child_and_its_answer() {
    // ~1 MiB of logs from a thread of the plugin while its call waits for the user's answer, under a 64 KiB
    // message cap: the logs that do not fit are dropped, the plugin is not taken for a flood.
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let runtime = Runtime::builder()
        .config(isolated_config("max_message_bytes = 65536\n"))
        .plugin_dir(dir.path())
        .interaction(AnswersOnceTheFileExists)
        .build()
        .unwrap();
    let task = task_in(&runtime, ws.path());
    let pid = child_pid(&task);
    let logged = ws.path().join("logged");
    let result = call(&task, "crash_probe", json!({"how": "log_while_asking", "path": logged.to_string_lossy()}));
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(text(&result), format!("answered=true pid {pid}"), "answered in the same child");
    assert_eq!(child_pid(&task), pid);
}

#[test]
fn a_call_over_the_message_cap_is_refused_in_the_host_and_the_child_lives() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let runtime = runtime_over(dir.path(), isolated_config("max_message_bytes = 65536\n"));
    let task = task_in(&runtime, ws.path());
    let pid = child_pid(&task);
    let result = call(&task, "crash_probe", json!({"how": "pid", "path": "x".repeat(100_000)}));
    let said = text(&result);
    assert!(result.is_error() && said.contains("over [plugins.process] max_message_bytes = 65536"), "{said}");
    assert_eq!(child_pid(&task), pid, "nothing was sent: the child is not blamed");
}

#[test]
fn a_cancellation_reaches_the_plugin_across_the_socket_and_a_plugin_that_honours_it_keeps_its_child() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let mut config = isolated_config("");
    config.timeouts.call_ms = 200;
    let runtime = runtime_over(dir.path(), config);
    let task = task_in(&runtime, ws.path());
    let pid = child_pid(&task);
    let result = probe(&task, "cancel");
    assert!(result.is_error(), "the call timed out: {result:?}");
    assert_eq!(child_pid(&task), pid, "a plugin that stops when cancelled is not killed");
}

#[test]
fn host_services_cross_the_socket_under_the_host_s_rules_and_plugin_output_cannot_forge_frames() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    std::fs::write(ws.path().join(".clineignore"), "secret.txt\n").unwrap();
    let runtime = runtime_over(dir.path(), isolated_config(""));
    let task = task_in(&runtime, ws.path());
    let result = call(&task, "crash_probe", json!({"how": "service", "path": "secret.txt"}));
    let said = text(&result);
    let secret = ws.path().join("secret.txt");
    assert!(!result.is_error(), "{said}");
    assert!(said.starts_with(&format!("{} allowed=false kept=", secret.display())), "{said}");
    let result = call(&task, "crash_probe", json!({"how": "service", "path": "open.txt"}));
    assert!(text(&result).contains("allowed=true"), "{result:?}");
    let pid = child_pid(&task);
    let printed = probe(&task, "print");
    assert_eq!(text(&printed), format!("pid {pid}"), "stdout goes to the child's stderr, not into the frames");
}

#[test]
fn the_library_of_an_isolated_plugin_is_never_mapped_into_the_host() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let runtime = runtime_over(dir.path(), isolated_config(""));
    let task = task_in(&runtime, ws.path());
    let pid = child_pid(&task);
    let maps = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    assert!(maps(pid).contains("fixture_crash"), "the child maps the library");
    assert!(!maps(std::process::id()).contains("fixture_crash"), "the host never does");
}

#[test]
fn shipped_plugins_stay_in_process_and_per_plugin_settings_win() {
    // `isolation = "process"` is the default for libraries outside the shipped set only.
    let ws = workspace();
    let runtime = Runtime::builder().config(isolated_config("")).plugin_dir(plugins()).build().unwrap();
    let task = task_in(&runtime, ws.path());
    std::fs::write(ws.path().join("a.txt"), "one\n").unwrap();
    let result = call(&task, "read_file", json!({"path": "a.txt"}));
    assert!(!result.is_error(), "{result:?}");
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    assert!(maps.contains("read_file"), "read_file is mapped in the host");
    // Per plugin: the crash fixture in process even though the default says process.
    let dir = plugin_dir(&["fixture_crash"]);
    let config = isolated_with("", "[plugins.isolation_per_plugin]\nfixture_crash = \"in-process\"\n");
    let runtime = runtime_over(dir.path(), config);
    assert_eq!(child_pid(&task_in(&runtime, ws.path())), std::process::id());
}

#[test]
fn repeated_crashes_back_off_then_quarantine_the_plugin_with_an_event_until_its_library_changes() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let runtime = runtime_over(dir.path(), isolated_config("quarantine_after = 3\nquarantine_window_ms = 600000\n"));
    let mut events = runtime.events();
    runtime.watch().unwrap();
    let task = task_in(&runtime, ws.path());
    for _ in 0..3 {
        assert!(probe(&task, "abort").is_error());
    }
    let event = next_matching(&mut events, |e| matches!(e, PluginEvent::Quarantined { .. }));
    let PluginEvent::Quarantined { plugin, reason, .. } = &event else { unreachable!() };
    assert_eq!(plugin, "fixture_crash");
    assert!(reason.starts_with("3 crashes within") && reason.contains("SIGABRT"), "{reason}");
    assert!(event.to_string().starts_with("quarantined "), "{event}");
    let refused = probe(&task, "pid");
    assert!(refused.is_error() && text(&refused).contains("is quarantined after 3 crashes"), "{refused:?}");
    // A new library lifts it: the same bytes under a new build (another content hash) reload the file.
    let file = dir.path().join(lib("fixture_crash"));
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(b"\0rebuilt");
    std::fs::write(&file, bytes).unwrap();
    next_matching(&mut events, |e| matches!(e, PluginEvent::Reloaded { .. }));
    child_pid(&task);
}

fn next_matching(events: &mut PluginEvents, wanted: impl Fn(&PluginEvent) -> bool) -> PluginEvent {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = events.recv_timeout(left).expect("no such plugin event within the bound");
        if wanted(&event) {
            return event;
        }
    }
}

#[test]
fn a_leaked_thread_dies_with_its_child_when_the_library_is_removed_and_the_host_lives() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let runtime = runtime_over(dir.path(), isolated_config(""));
    let mut events = runtime.events();
    runtime.watch().unwrap();
    let task = task_in(&runtime, ws.path());
    let leaked = probe(&task, "leak");
    assert!(!leaked.is_error(), "{leaked:?}");
    let pid: u32 = text(&leaked).trim_start_matches("pid ").parse().unwrap();
    let threads = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().count();
    assert!(threads >= 2, "the leaked thread runs in the child ({threads} threads)");
    let file = dir.path().join(lib("fixture_crash"));
    std::fs::remove_file(&file).unwrap();
    next_matching(&mut events, |e| matches!(e, PluginEvent::Unloaded { .. }));
    wait_until("the child with the leaked thread is killed", || !alive(pid));
    // Back again: it loads and serves in a fresh child.
    std::fs::copy(fixture("fixture_crash"), &file).unwrap();
    next_matching(&mut events, |e| matches!(e, PluginEvent::Loaded { .. }));
    assert_ne!(child_pid(&task), pid);
}

#[test]
fn hot_reload_under_isolation_serves_new_calls_from_a_new_child_while_a_call_in_flight_finishes_on_the_old() {
    let dir = plugin_dir(&["fixture_reload"]);
    let ws = workspace();
    let config = isolated_with("", "[plugins.isolation_per_plugin]\nfixture_reload = \"process\"\n");
    let runtime = runtime_over(dir.path(), config);
    let mut events = runtime.events();
    runtime.watch().unwrap();
    let task = task_in(&runtime, ws.path());
    assert_eq!(text(&call(&task, "reload_probe", json!({}))), "variant A");
    let (mark, release) = (ws.path().join("started"), ws.path().join("release"));
    let slow = {
        let (task, mark, release) = (task.clone(), mark.clone(), release.clone());
        std::thread::spawn(move || {
            let input = json!({"mark": mark, "wait_for": release});
            text(&block_on(task.execute(ToolUse::new("slow", "reload_probe", input))))
        })
    };
    wait_until("the slow call runs", || mark.exists());
    let variant_b = fixtures().join("variants").join(lib("fixture_reload"));
    std::fs::write(dir.path().join(lib("fixture_reload")), std::fs::read(variant_b).unwrap()).unwrap();
    next_matching(&mut events, |e| matches!(e, PluginEvent::Reloaded { .. }));
    assert_eq!(text(&call(&task, "reload_probe", json!({}))), "variant B");
    std::fs::write(&release, "").unwrap();
    assert_eq!(slow.join().unwrap(), "variant A", "the call in flight finished on the old child");
}

#[test]
fn a_memory_limit_per_child_ends_an_allocation_that_passes_it_with_a_tool_error() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let runtime = runtime_over(dir.path(), isolated_config("memory_mb = 512\n"));
    let task = task_in(&runtime, ws.path());
    let result = probe(&task, "alloc");
    assert!(result.is_error(), "{result:?}");
    let said = text(&result);
    assert!(said.contains("the plugin `fixture_crash` ran out of memory, [plugins.process] memory_mb = 512"), "{said}");
    assert!(said.contains("memory allocation of 1073741824 bytes failed"), "{said}");
    child_pid(&task);
}

fn descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A soak: crashes of every kind every few calls, for `TOOLSHED_ISOLATION_SOAK_SECS` (default 20; the
/// issue's 5 minutes is `TOOLSHED_ISOLATION_SOAK_SECS=300`), with good calls between. It runs in a process of
/// its own (this test binary again, running only [`soak_body`]), so other tests' descriptors and memory do not
/// count: the host never crashes (the process would fail), and its descriptors and RSS are flat after the
/// warm-up.
#[test]
fn a_soak_of_crashes_leaves_the_host_running_with_descriptors_and_rss_flat() {
    let said = in_own_process("isolation::soak_body", "TOOLSHED_ISOLATION_SOAK_BODY", &[]);
    assert!(said.contains("soak: "), "{said}");
    let report = said.lines().find_map(|l| l.split_once("soak: ")).map(|(_, report)| report);
    eprintln!("soak: {}", report.unwrap_or_default());
}

#[test]
#[ignore = "run by a_soak_of_crashes_leaves_the_host_running_with_descriptors_and_rss_flat in a process of its own"]
fn soak_body() {
    if std::env::var_os("TOOLSHED_ISOLATION_SOAK_BODY").is_none() {
        return;
    }
    let seconds: u64 = std::env::var("TOOLSHED_ISOLATION_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let mut config = isolated_config("quarantine_after = 0\n");
    config.timeouts.call_ms = 500;
    let runtime = runtime_over(dir.path(), config);
    let task = task_in(&runtime, ws.path());
    let kinds = ["segv", "abort", "exit", "loop", "leak"];
    let round = |i: usize| {
        let kind = kinds[i % kinds.len()];
        let pid = child_pid(&task);
        let crashed = probe(&task, kind);
        assert!(crashed.is_error() || kind == "leak", "{kind}: {crashed:?}");
        if kind != "leak" {
            // The loop's call times out before its child is killed: a call sent in between would share its fate.
            wait_until("the child is reaped", || !alive(pid));
        }
        for _ in 0..5 {
            child_pid(&task);
        }
    };
    for i in 0..kinds.len() * 2 {
        round(i);
    }
    let (fds, rss) = (descriptors(), rss_kib());
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut rounds = 0;
    while Instant::now() < end {
        round(rounds);
        rounds += 1;
    }
    let (fds_after, rss_after) = (descriptors(), rss_kib());
    println!("soak: {rounds} crash rounds in {seconds} s; fds {fds} -> {fds_after}; RSS {rss} -> {rss_after} KiB");
    assert!(fds_after <= fds + 4, "descriptors grew: {fds} -> {fds_after}");
    assert!(rss_after <= rss + 16 * 1024, "RSS grew: {rss} -> {rss_after} KiB");
    assert!(rounds > 0);
}

#[test]
fn dropping_the_runtime_kills_the_plugin_s_child_while_a_task_handle_still_lives() {
    let dir = plugin_dir(&["fixture_crash"]);
    let ws = workspace();
    let runtime = runtime_over(dir.path(), isolated_config(""));
    let task = task_in(&runtime, ws.path());
    let pid = child_pid(&task);
    drop(runtime);
    // The handle keeps the routing snapshot, and with it the pooled tool's route, but not its handler.
    wait_until("the child dies with its runtime", || !alive(pid));
    let after = probe(&task, "pid");
    assert!(after.is_error() && text(&after).contains("the tool's actor has stopped"), "{after:?}");
}
