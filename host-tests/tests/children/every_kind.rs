//! One child of every kind the runtime starts — a command, a hook, an MCP stdio server, Chromium, a parser
//! job, an out-of-process plugin, and the keeper that ends them all — caught while it runs and inspected from
//! `/proc`, from a host made as dirty as a host can be: stop signals blocked, SIGPIPE, SIGXFSZ, SIGUSR2 and
//! the C library's own SIGCANCEL ignored, a file, a pipe and a terminal open without close-on-exec, a
//! controlling terminal, and its tokens and the model's API key in its environment.
//!
//! The dirt is process-wide and never undone, so the test runs in a process of its own
//! ([`crate::util::in_own_process`]). A shell child is caught stopped by its own hand (`kill -STOP $$`, a
//! builtin: no fork, no redirection, nothing the shell changes about itself) at its first line, so what
//! `/proc` shows is what the runtime started it with; it is resumed once seen. Commands get dash as the
//! user's `$SHELL` for that reason: bash ignores SIGQUIT of its own accord. The runtime's own children
//! (parser jobs, plugin children) and the keeper are seen while they wait for work. Chromium is seen twice:
//! stopped in a wrapper script that then `exec`s it (the same process, as the runtime started it), and then
//! running, for what Chromium does not change about itself (its environment, session and terminal).

use crate::util::{block_on, browser_turn, call, fixture, in_own_process, plugins, task_in, text, workspace};
use serde_json::json;
use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;
use toolshed::{Config, ResultStatus, Runtime, TaskContext, ToolUse};

/// Set when the body runs in its process of its own.
const BODY: &str = "TOOLSHED_EVERY_KIND_BODY";

/// The host's secrets: the runtime's tokens and the model's API key (`[subagents] api_key_env`'s default).
const SECRETS: [(&str, &str); 3] = [
    ("TOOLSHED_SERVE_TOKEN", "every-kind-secret-serve"),
    ("TOOLSHED_WEB_TOKEN", "every-kind-secret-web"),
    ("OPENAI_API_KEY", "every-kind-secret-openai"),
];

/// A variable of the user's that is no secret: children that keep the user's environment keep it, which
/// shows their environment was read at all.
const PLAIN: (&str, &str) = ("EVERY_KIND_PLAIN", "every-kind-plain");

/// The variable the MCP server's settings give it.
const CONFIGURED: (&str, &str) = ("EVERY_KIND_CONFIGURED", "every-kind-configured");

/// The leaked descriptors: a file and a pipe's read end, well above what the runtime itself opens early.
const LEAKED_FILE_FD: i32 = 40;
const LEAKED_PIPE_FD: i32 = 41;

const SIGNALS_BLOCKED: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1];
const SIGNALS_IGNORED: [i32; 3] = [libc::SIGXFSZ, libc::SIGPIPE, libc::SIGUSR2];

/// The C library's own cancellation signal (the first real-time one), also ignored. glibc's `posix_spawn`
/// hands it to a child ignored whenever the parent has a handler for it, so a host started by such a parent
/// (`cargo test` is one) has it ignored without asking; and glibc's `sigaction` refuses to touch it, so a
/// child must be reset with the system call itself. Set here with that system call, so the test does not
/// depend on how it was started.
const SIGCANCEL: i32 = 32;

#[test]
fn every_kind_of_child_starts_clean_from_a_dirty_host() {
    // The body starts a Chromium: it takes its turn with the browser tests of this binary.
    let _turn = browser_turn();
    let mut env = SECRETS.to_vec();
    env.push(PLAIN);
    // Commands run in the user's `$SHELL`: dash, which changes nothing about its signals (bash ignores SIGQUIT
    // itself, which would hide whether the runtime handed it down).
    env.push(("SHELL", "/bin/sh"));
    let said = in_own_process("children::every_kind::every_kind_body", BODY, &env);
    // What each child showed, for the log (the first line follows libtest's own `test … ...`).
    for (_, seen) in said.lines().filter_map(|line| line.split_once("every kind: ")) {
        eprintln!("every kind: {seen}");
    }
}

#[test]
#[ignore = "run by every_kind_of_child_starts_clean_from_a_dirty_host in a process of its own"]
fn every_kind_body() {
    if std::env::var_os(BODY).is_none() {
        return;
    }
    let dir = workspace();
    let host = Host::make_dirty(dir.path());
    let chromium = std::env::var("TOOLSHED_TEST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    assert!(
        Path::new(&chromium).is_file(),
        "{chromium} not found: the browser child needs Chromium; `cargo xtask test` installs Debian's chromium"
    );
    let runtime = runtime(dir.path(), &chromium);

    // The MCP server and the keeper are already starting: the runtime connects to its servers as it is built.
    mcp_server(&host);
    keeper(&host);
    command(&host, &runtime, dir.path());
    hook(&host, &runtime, dir.path());
    parser_job(&host, &runtime, dir.path());
    plugin_child(&host, &runtime, dir.path());
    browser(&host, &runtime, dir.path());

    // The runtime's threads descend from the dirty one: the thread that starts children has the host's mask,
    // so what the children showed is the runtime's cleaning, not a clean thread.
    let spawner = thread_named("toolshed-spawner").expect("the runtime's spawner thread");
    let mask = sigset(&field(&std::fs::read_to_string(spawner.join("status")).unwrap(), "SigBlk"));
    assert!(SIGNALS_BLOCKED.iter().all(|s| mask & bit(*s) != 0), "the spawner's mask is {mask:#x}");
    drop(runtime);
    let problems = PROBLEMS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    assert!(problems.is_empty(), "children started unclean:\n{}", problems.join("\n"));
}

/// The dirty host: what a child must not get from it.
struct Host {
    pid: i32,
    /// The leaked descriptors' targets (`/proc/self/fd/N`), none of which a child may hold.
    leaked: Vec<String>,
    /// The host's controlling terminal (`tty_nr`).
    tty_nr: i64,
}

impl Host {
    /// Makes this process dirty: the calling thread (every runtime thread descends from it) blocks the stop
    /// signals, the process ignores three, holds a file, a pipe and a pseudo-terminal without close-on-exec,
    /// and leads a session whose controlling terminal is that pseudo-terminal.
    fn make_dirty(dir: &Path) -> Host {
        // SAFETY: signal and descriptor calls on stack values and descriptors this process owns; this process
        // runs only this test.
        let tty = unsafe {
            let mut set = std::mem::zeroed::<libc::sigset_t>();
            libc::sigemptyset(&mut set);
            for signal in SIGNALS_BLOCKED {
                libc::sigaddset(&mut set, signal);
            }
            assert_eq!(libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()), 0);
            for signal in SIGNALS_IGNORED {
                assert_ne!(libc::signal(signal, libc::SIG_IGN), libc::SIG_ERR, "ignoring {signal}");
            }
            // The kernel's `struct sigaction`: handler, flags, restorer, mask (8 bytes).
            let ignore: [libc::c_ulong; 4] = [libc::SIG_IGN as libc::c_ulong, 0, 0, 0];
            let set = libc::syscall(libc::SYS_rt_sigaction, SIGCANCEL, ignore.as_ptr(), std::ptr::null::<u8>(), 8);
            assert_eq!(set, 0, "ignoring {SIGCANCEL}: {}", std::io::Error::last_os_error());
            // A session of its own (allowed: the harness started this process in its own parent's group, so
            // it leads none), so the pseudo-terminal's slave, opened without O_NOCTTY, becomes its controlling
            // terminal.
            assert!(libc::setsid() > 0, "setsid: {}", std::io::Error::last_os_error());
            let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
            assert!(master >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
            assert!(libc::grantpt(master) == 0 && libc::unlockpt(master) == 0);
            let mut name = [0 as libc::c_char; 128];
            assert_eq!(libc::ptsname_r(master, name.as_mut_ptr(), name.len()), 0);
            let slave = libc::open(name.as_ptr(), libc::O_RDWR);
            assert!(slave >= 0, "opening the terminal: {}", std::io::Error::last_os_error());
            // Both stay open for the process's life (a closed master would hang the session up).
            (master, slave)
        };
        let file = std::fs::File::create(dir.join("host-secret-file")).unwrap();
        let mut pipe = [0; 2];
        // SAFETY: as above; the pipe is made without close-on-exec, and both copies are cleared of it.
        unsafe {
            assert_eq!(libc::pipe(pipe.as_mut_ptr()), 0);
            for (from, to) in [(file.as_raw_fd(), LEAKED_FILE_FD), (pipe[0], LEAKED_PIPE_FD)] {
                assert_eq!(libc::dup2(from, to), to);
                assert_eq!(libc::fcntl(to, libc::F_SETFD, 0), 0);
            }
        }
        // Never closed: the dirt stays for the process's life.
        std::mem::forget(file);
        let target = |fd: i32| std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap().display().to_string();
        let leaked = [LEAKED_FILE_FD, LEAKED_PIPE_FD, pipe[1], tty.0, tty.1].map(target).to_vec();
        let me = std::fs::read_to_string("/proc/self/stat").unwrap();
        let host = Host { pid: std::process::id() as i32, leaked, tty_nr: stat_fields(&me)[4].parse().unwrap() };
        // The dirt took: the test would prove nothing on a clean host.
        let thread = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        let (blocked, ignored) = (sigset(&field(&thread, "SigBlk")), sigset(&field(&thread, "SigIgn")));
        assert!(SIGNALS_BLOCKED.iter().all(|s| blocked & bit(*s) != 0), "blocked {blocked:#x}");
        assert!(SIGNALS_IGNORED.iter().chain([&SIGCANCEL]).all(|s| ignored & bit(*s) != 0), "ignored {ignored:#x}");
        assert_ne!(host.tty_nr, 0, "the host has a controlling terminal");
        for (name, value) in SECRETS {
            assert_eq!(std::env::var(name).as_deref(), Ok(value), "the host holds {name}");
        }
        host
    }
}

/// One runtime for every kind: the shipped plugins (execute_command, list_files, browser_action), the job
/// fixture in process, the crash fixture out of process, a hook on list_files, one MCP stdio server, and
/// Chromium behind a wrapper that stops before it becomes Chromium.
fn runtime(dir: &Path, chromium: &str) -> Runtime {
    let settings = dir.join("mcp.json");
    let server = json!({
        "command": "/bin/sh",
        "args": ["-c", ": every-kind-mcp; kill -STOP $$; exit 0"],
        "env": { CONFIGURED.0: CONFIGURED.1 },
    });
    std::fs::write(&settings, json!({ "mcpServers": { "every-kind": server } }).to_string()).unwrap();
    let wrapper = dir.join("chromium-wrapper");
    std::fs::write(&wrapper, format!("#!/bin/sh\n: every-kind-browser\nkill -STOP $$\nexec '{chromium}' \"$@\"\n"))
        .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let profiles = dir.join("profiles");
    std::fs::create_dir(&profiles).unwrap();
    // Long limits: each child waits, stopped or idle, while it is looked at.
    let config = format!(
        "[hooks]\ntimeout_ms = 600000\npre_tool_use = [{{ matcher = \"list_files\", command = ': every-kind-hook; \
         kill -STOP $$; exit 0' }}]\n\
         [mcp]\nsettings = {settings:?}\n\
         [browser]\nexecutable = {wrapper:?}\nprofile_dir = {profiles:?}\nlaunch_timeout_ms = 600000\n\
         navigation_timeout_ms = 5000\nstable_timeout_ms = 1000\nstable_interval_ms = 50\nlog_quiet_ms = 100\n\
         log_wait_ms = 1000\nnetwork_probe_ms = 100\n\
         [isolation]\ntimeout_ms = 600000\n\
         [plugins]\nisolation = \"process\"\n[plugins.isolation_per_plugin]\nfixture_tools = \"in-process\"\n\
         [timeouts]\ncancel_grace_ms = 20000\n"
    );
    Runtime::builder()
        .plugin_dir(plugins())
        .plugin_file(fixture("fixture_tools"))
        .plugin_file(fixture("fixture_crash"))
        .config(Config::from_toml_str(&config).unwrap())
        .yes(true)
        .build()
        .unwrap()
}

/// What `/proc` shows of a process.
struct Seen {
    what: &'static str,
    pid: i32,
    blocked: u64,
    ignored: u64,
    /// Each descriptor's target.
    fds: BTreeMap<i32, String>,
    environ: Vec<(String, String)>,
    session: i32,
    group: i32,
    tty_nr: i64,
}

fn see(what: &'static str, pid: i32) -> Seen {
    let status = |name| sigset(&super::status_field(pid as u32, name).unwrap_or_else(|| panic!("{what}: {name}")));
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields = stat_fields(&stat);
    let mut fds = BTreeMap::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().flatten() {
        let fd: i32 = entry.file_name().to_string_lossy().parse().unwrap();
        fds.insert(fd, std::fs::read_link(entry.path()).unwrap().display().to_string());
    }
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let environ = environ
        .split(|b| *b == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let entry = String::from_utf8_lossy(entry);
            let (name, value) = entry.split_once('=').unwrap_or((&entry, ""));
            (name.to_owned(), value.to_owned())
        })
        .collect();
    Seen {
        what,
        pid,
        blocked: status("SigBlk"),
        ignored: status("SigIgn"),
        fds,
        environ,
        group: fields[2].parse().unwrap(),
        session: fields[3].parse().unwrap(),
        tty_nr: fields[4].parse().unwrap(),
    }
}

/// What a descriptor must be.
#[derive(Debug, Clone, Copy)]
enum Fd {
    Null,
    Pipe,
    Socket,
    /// A path holding this.
    Named(&'static str),
}

impl Fd {
    fn matches(self, target: &str) -> bool {
        match self {
            Fd::Null => target == "/dev/null",
            Fd::Pipe => target.starts_with("pipe:["),
            Fd::Socket => target.starts_with("socket:["),
            Fd::Named(part) => target.contains(part),
        }
    }
}

impl Seen {
    fn env(&self, name: &str) -> Option<&str> {
        self.environ.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn names(&self) -> Vec<&str> {
        self.environ.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The checks every child passes: no blocked signal, none ignored but `ignored` (the keeper's own
    /// traps), no controlling terminal, none of the host's secrets or leaked descriptors, no descriptor on a
    /// file in a directory anyone may write.
    fn check_clean(&self, host: &Host, ignored: u64) {
        let what = self.what;
        check(self.blocked == 0, || format!("{what}: SigBlk {:#x}, not 0", self.blocked));
        check(self.ignored == ignored, || format!("{what}: SigIgn {:#x}, not {ignored:#x}", self.ignored));
        check(self.tty_nr == 0, || format!("{what}: a controlling terminal (the host's is {})", host.tty_nr));
        self.check_no_secret();
        for (fd, target) in &self.fds {
            check(!host.leaked.contains(target), || format!("{what}: fd {fd} is the host's leaked {target}"));
            let shared = Path::new(target)
                .parent()
                .and_then(|dir| std::fs::metadata(dir).ok())
                .is_some_and(|meta| target.starts_with('/') && meta.mode() & 0o002 != 0);
            check(!shared, || format!("{what}: fd {fd} is {target}, in a directory anyone may write"));
        }
    }

    /// None of the runtime's variables but its marker, none of the host's secrets by name or value.
    fn check_no_secret(&self) {
        let what = self.what;
        for (name, value) in &self.environ {
            let runtimes = name.starts_with("TOOLSHED_") && name != "TOOLSHED_PROCESS";
            check(!runtimes, || format!("{what}: the runtime's variable {name}"));
            check(SECRETS.iter().all(|(secret, _)| secret != name), || format!("{what}: the host's secret {name}"));
            check(!value.contains("every-kind-secret"), || format!("{what}: a secret's value in {name}"));
        }
    }

    fn check_fds(&self, expected: &[(i32, Fd)]) {
        let got: Vec<i32> = self.fds.keys().copied().collect();
        let want: Vec<i32> = expected.iter().map(|(fd, _)| *fd).collect();
        let matching = got == want && expected.iter().all(|(fd, kind)| kind.matches(&self.fds[fd]));
        check(matching, || format!("{}: descriptors {:?}, not {expected:?}", self.what, self.fds));
    }

    /// The user's environment less the secrets: what commands, hooks and the browser get.
    fn check_users_environment(&self) {
        let what = self.what;
        check(self.env(PLAIN.0) == Some(PLAIN.1), || format!("{what}: the user's {} is missing", PLAIN.0));
        check(self.env("TOOLSHED_PROCESS").is_some(), || format!("{what}: no marker"));
    }

    /// A session of its own: no terminal to reopen and a group of its own.
    fn check_own_session(&self, host: &Host) {
        let own = (self.session, self.group) == (self.pid, self.pid) && self.session != host.pid;
        check(own, || format!("{}: session {} group {}, not its own", self.what, self.session, self.group));
    }

    fn report(&self) {
        let fds: Vec<String> = self.fds.iter().map(|(fd, target)| format!("{fd}={target}")).collect();
        println!(
            "every kind: {} pid {}: SigBlk {:#x} SigIgn {:#x} fds [{}] env [{}] session {} group {} tty_nr {}",
            self.what,
            self.pid,
            self.blocked,
            self.ignored,
            fds.join(" "),
            self.names().join(" "),
            self.session,
            self.group,
            self.tty_nr
        );
    }
}

fn mcp_server(host: &Host) {
    let pid = find_child(host, "the MCP server", |cmdline| cmdline.contains("every-kind-mcp"));
    wait_stopped(pid, "the MCP server");
    let seen = see("MCP stdio server", pid);
    seen.report();
    resume(pid);
    seen.check_clean(host, 0);
    seen.check_fds(&[(0, Fd::Pipe), (1, Fd::Pipe), (2, Fd::Null)]);
    seen.check_own_session(host);
    // Only what the MCP SDK passes a server, its own configured variable, and the marker.
    let allowed = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", CONFIGURED.0, "TOOLSHED_PROCESS"];
    let names = seen.names();
    let only = names.iter().all(|n| allowed.contains(n))
        && seen.env(CONFIGURED.0) == Some(CONFIGURED.1)
        && seen.env("TOOLSHED_PROCESS").is_some()
        && seen.env("PATH").is_some();
    check(only, || format!("MCP stdio server: environment {names:?}"));
}

fn keeper(host: &Host) {
    let me = host.pid.to_string();
    let pid = find_child(host, "the keeper", |cmdline| {
        cmdline.contains("toolshed-keeper") && cmdline.split(' ').any(|arg| arg == me)
    });
    let seen = see("keeper", pid);
    seen.report();
    // Its own traps (it outlives a Ctrl-C to do its work), and none of the host's ignored signals.
    let traps = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT].iter().fold(0, |set, s| set | bit(*s));
    seen.check_clean(host, traps);
    seen.check_fds(&[(0, Fd::Pipe), (1, Fd::Null), (2, Fd::Null)]);
    seen.check_own_session(host);
    check(seen.names() == ["PATH"], || format!("keeper: environment {:?}", seen.names()));
}

fn command(host: &Host, runtime: &Runtime, dir: &Path) {
    let task = task_in(runtime, dir);
    let input = json!({"command": ": every-kind-command; kill -STOP $$; echo resumed", "requires_approval": false});
    let caller = std::thread::spawn(move || call(&task, "execute_command", input));
    let pid = find_child(host, "the command", |cmdline| cmdline.contains("every-kind-command"));
    wait_stopped(pid, "the command");
    let seen = see("command", pid);
    seen.report();
    resume(pid);
    let result = caller.join().unwrap();
    assert!(text(&result).contains("resumed"), "{}", text(&result));
    seen.check_clean(host, 0);
    seen.check_fds(&[(0, Fd::Null), (1, Fd::Pipe), (2, Fd::Pipe)]);
    seen.check_own_session(host);
    seen.check_users_environment();
}

fn hook(host: &Host, runtime: &Runtime, dir: &Path) {
    let task = task_in(runtime, dir);
    let caller = std::thread::spawn(move || call(&task, "list_files", json!({"path": "."})));
    let pid = find_child(host, "the hook", |cmdline| cmdline.contains("every-kind-hook"));
    wait_stopped(pid, "the hook");
    let seen = see("hook", pid);
    seen.report();
    resume(pid);
    let result = caller.join().unwrap();
    assert_eq!(result.status, ResultStatus::Success, "{}", text(&result));
    seen.check_clean(host, 0);
    seen.check_fds(&[(0, Fd::Pipe), (1, Fd::Pipe), (2, Fd::Pipe)]);
    seen.check_own_session(host);
    seen.check_users_environment();
}

fn parser_job(host: &Host, runtime: &Runtime, dir: &Path) {
    let task = task_in(runtime, dir);
    let caller = {
        let task = task.clone();
        std::thread::spawn(move || call(&task, "jobs", json!({"job": "sleep"})))
    };
    let pid = find_child(host, "the parser job", |cmdline| cmdline.contains("__isolated-job"));
    // Seen once the job runs (its thread is named `job`): the child has set itself up by then.
    wait_for("the job's thread", || {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == "job"))
    });
    let seen = see("parser job", pid);
    seen.report();
    task.cancel();
    let result = caller.join().unwrap();
    assert_eq!(result.status, ResultStatus::Error, "{}", text(&result));
    seen.check_clean(host, RUST_OWN);
    check_own_binary_child(&seen, host, "fixture_tools");
}

fn plugin_child(host: &Host, runtime: &Runtime, dir: &Path) {
    let task = task_in(runtime, dir);
    let result = call(&task, "crash_probe", json!({"how": "pid"}));
    assert!(!result.is_error(), "{result:?}");
    let pid: i32 = text(&result).trim_start_matches("pid ").parse().unwrap();
    assert_ne!(pid, host.pid, "the crash fixture runs out of process");
    let seen = see("plugin child", pid);
    seen.report();
    seen.check_clean(host, RUST_OWN);
    check_own_binary_child(&seen, host, "fixture_crash");
}

/// What a child of the runtime's own binary ignores of its own accord: SIGPIPE, which the standard library
/// ignores before `main` in every Rust program (so a write to a host that is gone fails with `EPIPE`).
const RUST_OWN: u64 = 1 << (libc::SIGPIPE - 1);

/// A child of the runtime's own binary: the library on 0, stdout pointed at its stderr pipe, the socket to
/// the host taken from stdout (and a copy of it to read with), an empty environment. It leads a group of its
/// own but stays in the host's session (a group leader cannot start one): it gave up the host's terminal
/// instead, which `tty_nr` shows.
fn check_own_binary_child(seen: &Seen, host: &Host, library: &'static str) {
    let what = seen.what;
    seen.check_fds(&[(0, Fd::Named(library)), (1, Fd::Pipe), (2, Fd::Pipe), (3, Fd::Socket), (4, Fd::Socket)]);
    let stdout_is_stderr = seen.fds.contains_key(&1) && seen.fds.get(&1) == seen.fds.get(&2);
    check(stdout_is_stderr, || format!("{what}: stdout is not its stderr"));
    check(seen.environ.is_empty(), || format!("{what}: environment {:?}", seen.names()));
    let grouped = seen.group == seen.pid && seen.session == host.pid;
    check(grouped, || format!("{what}: session {} group {}", seen.session, seen.group));
}

fn browser(host: &Host, runtime: &Runtime, dir: &Path) {
    let url = serve_a_page();
    let task = runtime.task(TaskContext::new(dir).with_images(true).with_browser(true));
    let launch = |task: &toolshed::TaskHandle, input: serde_json::Value| {
        block_on(task.execute(ToolUse::new("b1", "browser_action", input)))
    };
    let caller = {
        let task = task.clone();
        std::thread::spawn(move || launch(&task, json!({"action": "launch", "url": url})))
    };
    let wrapper = dir.join("chromium-wrapper").display().to_string();
    let pid = find_child(host, "the browser", |cmdline| cmdline.contains(&wrapper));
    wait_stopped(pid, "the browser");
    let seen = see("browser (as started)", pid);
    seen.report();
    resume(pid);
    let launched = caller.join().unwrap();
    assert_eq!(launched.status, ResultStatus::Success, "{}", launched.to_model_text());
    seen.check_clean(host, 0);
    // dash keeps the script it reads open on a descriptor of its own from 10 up (close-on-exec).
    seen.check_fds(&[(0, Fd::Null), (1, Fd::Null), (2, Fd::Pipe), (10, Fd::Named("chromium-wrapper"))]);
    seen.check_own_session(host);
    seen.check_users_environment();

    // The same process, now Chromium. Its signals and descriptors are its own doing (it ignores SIGPIPE and
    // opens many); its environment, session and terminal are still what it was given.
    let running = see("browser (running)", pid);
    running.report();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(String::from_utf8_lossy(&cmdline).contains("--user-data-dir="), "not Chromium yet: {cmdline:?}");
    check(running.tty_nr == 0, || "browser (running): a controlling terminal".to_owned());
    running.check_own_session(host);
    running.check_users_environment();
    running.check_no_secret();
    // Its scratch space is the user's own, not the shared TMPDIR.
    let tmp = PathBuf::from(running.env("TMPDIR").expect("Chromium's TMPDIR"));
    check(private(&tmp), || format!("browser (running): its TMPDIR {} is reachable by others", tmp.display()));
    let closed = launch(&task, json!({"action": "close"}));
    assert_eq!(closed.status, ResultStatus::Success, "{}", closed.to_model_text());
}

/// What the children showed that they must not: gathered, so one run tells every kind's.
static PROBLEMS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn check(ok: bool, problem: impl FnOnce() -> String) {
    if !ok {
        PROBLEMS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(problem());
    }
}

/// A page on 127.0.0.1 for the browser's launch: every request gets it.
fn serve_a_page() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = Vec::new();
            let mut buffer = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buffer[..n]),
                }
            }
            let body = "<html><body>every kind</body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// The one child of this process whose command line (arguments joined by spaces) `matches`, waited for.
fn find_child(host: &Host, what: &str, matches: impl Fn(&str) -> bool) -> i32 {
    let mut found = None;
    wait_for(what, || {
        found = std::fs::read_dir("/proc").unwrap().flatten().find_map(|entry| {
            let pid: i32 = entry.file_name().to_string_lossy().parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            (stat_fields(&stat)[1] == host.pid.to_string() && matches(&cmdline)).then_some(pid)
        });
        found.is_some()
    });
    found.unwrap()
}

/// Waits until `pid` has stopped itself.
fn wait_stopped(pid: i32, what: &str) {
    wait_for(&format!("{what} to stop itself"), || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| stat_fields(&stat)[0] == "T")
    });
}

fn resume(pid: i32) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGCONT).unwrap();
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + super::BOUND;
    while !done() {
        assert!(Instant::now() < deadline, "waited {:?} for {what}", super::BOUND);
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// `/proc/PID/stat`'s fields after the command name: state, ppid, pgrp, session, tty_nr, ...
fn stat_fields(stat: &str) -> Vec<String> {
    stat.rsplit_once(") ").map(|(_, rest)| rest.split_whitespace().map(str::to_owned).collect()).unwrap_or_default()
}

/// A `/proc/…/status` field.
fn field(status: &str, name: &str) -> String {
    status.lines().find_map(|line| line.strip_prefix(&format!("{name}:"))).unwrap_or_default().trim().to_owned()
}

fn sigset(hex: &str) -> u64 {
    u64::from_str_radix(hex, 16).unwrap()
}

fn bit(signal: i32) -> u64 {
    1 << (signal - 1)
}

/// Whether only this user reaches `dir`: walking up from it, a directory of this user's that nobody else may
/// enter comes before any directory that anybody may write.
fn private(dir: &Path) -> bool {
    let me = nix::unistd::geteuid().as_raw();
    for dir in dir.ancestors() {
        let Ok(meta) = std::fs::metadata(dir) else { return false };
        if meta.uid() == me && meta.mode() & 0o077 == 0 {
            return true;
        }
        if meta.mode() & 0o002 != 0 {
            return false;
        }
    }
    false
}

/// The `/proc/self/task/TID` directory of this process's thread named `name` (which the kernel keeps to 15
/// bytes).
fn thread_named(name: &str) -> Option<PathBuf> {
    let kept = &name[..name.len().min(15)];
    std::fs::read_dir("/proc/self/task")
        .ok()?
        .flatten()
        .map(|entry| entry.path())
        .find(|path| std::fs::read_to_string(path.join("comm")).is_ok_and(|comm| comm.trim_end() == kept))
}
