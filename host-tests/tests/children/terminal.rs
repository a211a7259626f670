//! Class 4, the user's terminal: the `toolshed` CLI runs on a pseudo-terminal that is its controlling terminal
//! (as under the user's shell), and the children it starts — commands, their background jobs, hooks — get no
//! controlling terminal (`/dev/tty` opens nothing), inject nothing into the terminal with `TIOCSTI`, cannot take
//! it over from a session of their own, and, inside the command sandbox, cannot write it by its path.
//!
//! Each check also looks at the terminal itself: its master side shows everything written to it or echoed
//! from injected input, and its input queue holds anything injected. Controls show that the harness sees both:
//! a process that does have the terminal as its controlling one injects (where the kernel still allows
//! `TIOCSTI`), and a command outside the sandbox, with the user's full rights, writes it by path.

use super::{as_user, cli, root, user_config, user_dir, BOUND, USER};
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a child can do to a terminal, one line per attempt: `LABEL ACTION PATH: ok` or `…: ERRNO`. It builds
/// the bytes it injects itself (`INJECTED-LABEL`), so they can reach the terminal only by injection, never as
/// the text of a command echoed somewhere. Run as `probe.py LABEL PATH…`; a label starting with `steal` takes
/// no `O_NOCTTY` on open and tries `TIOCSCTTY` too (meant for a process in a session of its own).
const PROBE: &str = r#"
import errno, fcntl, os, sys, termios

label, paths = sys.argv[1], sys.argv[2:]
steal = label.startswith('steal')
payload = ('INJECTED-' + label + '\n').encode()


def attempt(action, path, call):
    try:
        result = call()
        print(label, action, path + ':', 'ok', flush=True)
        return result
    except OSError as e:
        print(label, action, path + ':', errno.errorcode.get(e.errno, e.errno), flush=True)
        return None


def stat():
    # Fields 7 and 8 of /proc/self/stat, counted after the command name (which may hold spaces).
    fields = open('/proc/self/stat').read().rsplit(')', 1)[1].split()
    return 'tty_nr=%s tpgid=%s' % (fields[4], fields[5])


print(label, 'stat:', stat(), flush=True)
# Every terminal among the descriptors it was started with.
ttys = [os.readlink('/proc/self/fd/%s' % fd) for fd in sorted(map(int, os.listdir('/proc/self/fd'))) if os.isatty(fd)]
print(label, 'terminals:', ' '.join(ttys) or 'none', flush=True)
flags = 0 if steal else os.O_NOCTTY
for path in paths:
    fd = attempt('open-rw', path, lambda: os.open(path, os.O_RDWR | flags))
    if fd is None:
        fd = attempt('open-r', path, lambda: os.open(path, os.O_RDONLY | flags))
    if fd is None:
        continue
    if steal:
        print(label, 'opened', path + ':', stat(), flush=True)
        attempt('tiocsctty', path, lambda: fcntl.ioctl(fd, termios.TIOCSCTTY, 1))
        print(label, 'after-tiocsctty', path + ':', stat(), flush=True)
    attempt('tiocsti', path, lambda: [fcntl.ioctl(fd, termios.TIOCSTI, bytes([b])) for b in payload])
    os.close(fd)
"#;

/// The shell's own line: `shell: PID SESSION TTY_NR TPGID PS_TTY` (`ps` shows `?` for no terminal).
const SHELL_LINE: &str = r#"echo "shell: $$ $(cut -d' ' -f6-8 /proc/$$/stat) $(ps -o tty= -p $$)""#;

/// A pseudo-terminal standing in for the user's: the slave is the user's (mode 0620, as a login leaves it),
/// and a thread collects everything that comes out of the master.
struct Terminal {
    slave: OwnedFd,
    /// `/dev/pts/N`.
    path: PathBuf,
    seen: Arc<Mutex<Vec<u8>>>,
}

impl Terminal {
    fn open() -> Self {
        let pty = nix::pty::openpty(None, None).unwrap();
        let path = std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd())).unwrap();
        assert!(path.starts_with("/dev/pts/"), "the pseudo-terminal's slave is {}", path.display());
        if root() {
            std::os::unix::fs::chown(&path, Some(USER), None).unwrap();
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o620)).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let collected = Arc::clone(&seen);
        let mut master = File::from(pty.master);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match master.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => collected.lock().unwrap().extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    // EIO: no descriptor of the slave is open any more.
                    Err(_) => break,
                }
            }
        });
        Self { slave: pty.slave, path, seen }
    }

    fn name(&self) -> &str {
        self.path.to_str().unwrap()
    }

    /// The terminal's `tty_nr`, as field 7 of `/proc/PID/stat` shows it for a process it controls.
    fn tty_nr(&self) -> u64 {
        let rdev = std::fs::metadata(&self.path).unwrap().rdev();
        let (major, minor) = (u64::from(libc::major(rdev)), u64::from(libc::minor(rdev)));
        (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)
    }

    /// Runs `command` to its end on the terminal as the user's shell would start it: in a session of its own
    /// whose controlling terminal this is, with stdin, stdout and stderr on it. Returns everything the
    /// terminal showed (carriage returns removed).
    fn run(&self, mut command: Command) -> String {
        let stdio = || Stdio::from(self.slave.try_clone().unwrap());
        command.stdin(stdio()).stdout(stdio()).stderr(stdio());
        // SAFETY: setsid and ioctl are system calls, async-signal-safe; nothing is allocated.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().unwrap();
        let deadline = Instant::now() + BOUND;
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{command:?} did not end within {BOUND:?}; the terminal showed:\n{}", self.shown());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.drain()
    }

    /// Everything the master has shown so far.
    fn shown(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().unwrap()).replace('\r', "")
    }

    /// Waits until everything written to the terminal so far has come out of the master: output leaves in
    /// order, so once a line written now shows, all before it has. Returns what showed before that line.
    fn drain(&self) -> String {
        const END: &str = "[the harness: end of output]";
        File::from(self.slave.try_clone().unwrap()).write_all(format!("\n{END}\n").as_bytes()).unwrap();
        let deadline = Instant::now() + BOUND;
        loop {
            let shown = self.shown();
            if let Some(at) = shown.find(END) {
                return shown[..at].to_owned();
            }
            assert!(Instant::now() < deadline, "the terminal's output did not drain; it showed:\n{shown}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What waits in the terminal's input queue: what was typed, or injected with `TIOCSTI` (nobody types
    /// here). The terminal is put out of canonical mode first, so a partial line counts too; through a
    /// descriptor of its own, once the run has ended.
    fn pending_input(&self) -> Vec<u8> {
        let mut file =
            OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(&self.path).unwrap();
        let mut termios = nix::sys::termios::tcgetattr(&file).unwrap();
        termios.local_flags.remove(nix::sys::termios::LocalFlags::ICANON);
        termios.control_chars[nix::sys::termios::SpecialCharacterIndices::VMIN as usize] = 0;
        termios.control_chars[nix::sys::termios::SpecialCharacterIndices::VTIME as usize] = 0;
        nix::sys::termios::tcsetattr(&file, nix::sys::termios::SetArg::TCSANOW, &termios).unwrap();
        let mut pending = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match file.read(&mut buf) {
                Ok(0) => return pending,
                Ok(n) => pending.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return pending,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => panic!("reading {}'s input queue: {e}", self.path.display()),
            }
        }
    }

    /// Asserts that nothing reached the terminal from `what`: no injected input waiting to be read, none of
    /// it echoed, no bytes written by path, no escape sequence.
    fn assert_untouched(&self, shown: &str, what: &str) {
        let pending = self.pending_input();
        assert!(
            pending.is_empty(),
            "{what}: injected into the terminal: {:?}\n{shown}",
            String::from_utf8_lossy(&pending)
        );
        for sign in ["INJECTED-", "WRITTEN-", "\x1b]0;"] {
            assert!(!shown.contains(sign), "{what}: {sign:?} reached the terminal:\n{shown}");
        }
    }
}

/// A workspace and home of the user's, with the probe in the workspace (readable by the user, who owns the
/// directory).
fn setup() -> (tempfile::TempDir, tempfile::TempDir, String) {
    let (ws, home) = (user_dir(), user_dir());
    let probe = ws.path().join("probe.py");
    std::fs::write(&probe, PROBE).unwrap();
    let probe = probe.to_str().unwrap().to_owned();
    (ws, home, probe)
}

/// `toolshed call --yes execute_command` of `command`, for [`Terminal::run`].
fn call(ws: &Path, home: &Path, command: &str) -> Command {
    let input = serde_json::json!({"command": command, "requires_approval": false}).to_string();
    cli(ws, home, &["call", "--yes", "execute_command", &input])
}

/// The rest of the one line of `text` that starts with `prefix`.
fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    let found: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix(prefix)).collect();
    match found.as_slice() {
        [rest] => rest.trim(),
        _ => panic!("expected one line starting with {prefix:?}:\n{text}"),
    }
}

/// Asserts the [`SHELL_LINE`] in `text`: the shell leads a session of its own and has no terminal.
fn assert_shell_alone(text: &str, what: &str) {
    let fields: Vec<&str> = line(text, "shell: ").split_whitespace().collect();
    let [pid, session, tty_nr, tpgid, ps_tty] = fields[..] else {
        panic!("{what}: a malformed shell line {fields:?}:\n{text}");
    };
    assert_eq!(
        (session, tty_nr, tpgid, ps_tty),
        (pid, "0", "-1", "?"),
        "{what}: the shell is not alone in a session without a terminal:\n{text}"
    );
}

/// The probe's outcome for `label action path`.
fn outcome<'a>(text: &'a str, label: &str, action: &str, path: &str) -> &'a str {
    line(text, &format!("{label} {action} {path}:"))
}

/// Asserts the probe under `label` was refused `TIOCSTI` on `path` (which error depends on the kernel:
/// `EPERM` for a terminal that is not the caller's controlling one, `EIO` where `dev.tty.legacy_tiocsti` is 0).
fn assert_tiocsti_refused(text: &str, label: &str, path: &str) {
    let result = outcome(text, label, "tiocsti", path);
    assert_ne!(result, "ok", "{label}: TIOCSTI on {path} succeeded:\n{text}");
}

/// Asserts the exit status a shell line `PREFIX$?` shows is a failure (which one depends on the shell: bash
/// says 1 for a redirection that fails, dash 2).
fn assert_failed(text: &str, prefix: &str) {
    assert_ne!(line(text, prefix), "0", "{prefix}:\n{text}");
}

/// Whether the kernel lets an unprivileged process inject into its own controlling terminal: the sysctl is
/// absent before Linux 6.2, where it always could.
fn legacy_tiocsti() -> bool {
    std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").map_or(true, |v| v.trim() != "0")
}

/// Asserts the probe under `label` ran with no controlling terminal and no terminal among its descriptors,
/// and `/dev/tty` opened nothing for it.
fn assert_probe_alone(text: &str, label: &str) {
    assert_eq!(line(text, &format!("{label} stat:")), "tty_nr=0 tpgid=-1", "{label}: a controlling terminal:\n{text}");
    assert_eq!(line(text, &format!("{label} terminals:")), "none", "{label}:\n{text}");
    assert_eq!(outcome(text, label, "open-rw", "/dev/tty"), "ENXIO", "{label}:\n{text}");
    assert_eq!(outcome(text, label, "open-r", "/dev/tty"), "ENXIO", "{label}:\n{text}");
}

#[test]
fn the_harness_sees_what_a_process_controlling_the_terminal_injects() {
    // The control for the tests below: the probe run as the user with the terminal as its controlling one
    // (what every command was before it got a session of its own), with no runtime between.
    let (ws, _home, probe) = setup();
    let terminal = Terminal::open();
    // Through `sh`, which finds `python3` in the user's PATH and becomes it (so it is the session leader).
    let mut command = as_user(Path::new("/bin/sh"));
    command.args(["-c", "exec python3 \"$0\" \"$@\"", &probe, "control", "/dev/tty"]).current_dir(ws.path());
    let shown = terminal.run(command);
    let stat = line(&shown, "control stat:");
    assert!(
        stat.starts_with(&format!("tty_nr={} ", terminal.tty_nr()))
            && stat != format!("tty_nr={} tpgid=-1", terminal.tty_nr()),
        "the harness did not make the terminal the process's controlling one:\n{shown}"
    );
    assert_eq!(outcome(&shown, "control", "open-rw", "/dev/tty"), "ok", "{shown}");
    let pending = String::from_utf8_lossy(&terminal.pending_input()).into_owned();
    if legacy_tiocsti() {
        assert_eq!(outcome(&shown, "control", "tiocsti", "/dev/tty"), "ok", "{shown}");
        assert_eq!(pending, "INJECTED-control\n", "{shown}");
        assert!(shown.contains("INJECTED-control\n"), "the injected input was not echoed:\n{shown}");
    } else {
        // `dev.tty.legacy_tiocsti = 0`: the kernel refuses every unprivileged injection.
        assert_eq!(outcome(&shown, "control", "tiocsti", "/dev/tty"), "EIO", "{shown}");
        assert_eq!(pending, "", "{shown}");
    }
}

#[test]
fn a_command_has_no_controlling_terminal_and_injects_nothing_into_the_users() {
    let (ws, home, probe) = setup();
    let terminal = Terminal::open();
    let pts = terminal.name();
    let command = format!(
        "{SHELL_LINE}\n\
         echo \"host: $(cut -d' ' -f7 /proc/$PPID/stat)\"\n\
         echo x > /dev/tty; echo \"tty=$?\"\n\
         python3 {probe} command /dev/tty {pts}\n\
         setsid -w python3 {probe} steal {pts}\n\
         python3 {probe} job /dev/tty {pts} & wait\n"
    );
    let shown = terminal.run(call(ws.path(), home.path(), &command));
    // The host (the CLI, the shell's parent) has the terminal as its controlling one; the shell does not.
    assert_eq!(line(&shown, "host:"), terminal.tty_nr().to_string(), "{shown}");
    assert_shell_alone(&shown, "the command");
    assert_failed(&shown, "tty=");
    assert!(shown.contains("/dev/tty: No such device or address"), "{shown}");
    // The probe in the shell, and in a background job of it.
    for label in ["command", "job"] {
        assert_probe_alone(&shown, label);
        // The user's own terminal, by path: the user's full rights, so it opens; injection is still refused,
        // as it is not the probe's controlling terminal.
        assert_eq!(outcome(&shown, label, "open-rw", pts), "ok", "{label}:\n{shown}");
        assert_tiocsti_refused(&shown, label, pts);
    }
    // In a session of its own, the probe opens the terminal without O_NOCTTY and asks for it with TIOCSCTTY:
    // it stays the host's session's, so the probe gets no controlling terminal and injects nothing.
    assert_eq!(line(&shown, "steal stat:"), "tty_nr=0 tpgid=-1", "{shown}");
    assert_eq!(outcome(&shown, "steal", "open-rw", pts), "ok", "{shown}");
    assert_eq!(line(&shown, &format!("steal opened {pts}:")), "tty_nr=0 tpgid=-1", "{shown}");
    assert_ne!(outcome(&shown, "steal", "tiocsctty", pts), "ok", "{shown}");
    assert_eq!(line(&shown, &format!("steal after-tiocsctty {pts}:")), "tty_nr=0 tpgid=-1", "{shown}");
    assert_tiocsti_refused(&shown, "steal", pts);
    terminal.assert_untouched(&shown, "a command");
}

#[test]
fn inside_the_sandbox_a_command_cannot_write_the_users_terminal() {
    for mode in ["off", "read-only", "workspace-write"] {
        let (ws, home, probe) = setup();
        user_config(home.path(), &format!("[commands]\nsandbox = \"{mode}\"\n"));
        let terminal = Terminal::open();
        let pts = terminal.name();
        // A window title, then a marker (split in the command's text, so only the write can join it).
        let command = format!(
            "{SHELL_LINE}\n\
             printf '\\033]0;pwned\\007%s%s\\n' WRIT 'TEN-{mode}' > {pts}; echo \"printf=$?\"\n\
             (exec 3>{pts}); echo \"exec=$?\"\n\
             echo x > /dev/tty; echo \"tty=$?\"\n\
             python3 {probe} {mode} /dev/tty {pts}\n"
        );
        let shown = terminal.run(call(ws.path(), home.path(), &command));
        assert_shell_alone(&shown, mode);
        assert_failed(&shown, "tty=");
        if mode == "off" {
            // The control: without the sandbox the command has the user's full rights, and its escape
            // sequence and marker reach the terminal (which the harness sees); /dev/tty still opens nothing.
            assert_eq!(line(&shown, "printf="), "0", "{shown}");
            assert_eq!(line(&shown, "exec="), "0", "{shown}");
            assert!(shown.contains("\x1b]0;pwned\x07WRITTEN-off\n"), "the harness missed the write:\n{shown}");
            assert!(shown.contains("/dev/tty: No such device or address"), "{shown}");
            assert_probe_alone(&shown, mode);
            assert_eq!(outcome(&shown, mode, "open-rw", pts), "ok", "{shown}");
            assert_tiocsti_refused(&shown, mode, pts);
            assert!(terminal.pending_input().is_empty(), "{shown}");
            continue;
        }
        assert_failed(&shown, "printf=");
        assert_failed(&shown, "exec=");
        assert!(shown.contains(&format!("{pts}: Permission denied")), "{mode}:\n{shown}");
        // Landlock refuses the write before the terminal is asked (which would say there is none).
        assert!(shown.contains("/dev/tty: Permission denied"), "{mode}:\n{shown}");
        assert_eq!(line(&shown, &format!("{mode} stat:")), "tty_nr=0 tpgid=-1", "{mode}:\n{shown}");
        assert_eq!(line(&shown, &format!("{mode} terminals:")), "none", "{mode}:\n{shown}");
        // No terminal device opens at all inside the sandbox, not even to read: a terminal is read for what
        // the user types (a password at a prompt).
        for path in ["/dev/tty", pts] {
            assert_eq!(outcome(&shown, mode, "open-rw", path), "EACCES", "{mode}:\n{shown}");
            assert_eq!(outcome(&shown, mode, "open-r", path), "EACCES", "{mode}:\n{shown}");
            // Nothing opened: there was nothing to try TIOCSTI on.
            assert!(!shown.contains(&format!("{mode} tiocsti {path}:")), "{mode}:\n{shown}");
        }
        terminal.assert_untouched(&shown, mode);
    }
}

#[test]
fn a_hook_has_no_controlling_terminal_and_injects_nothing() {
    let (ws, home, probe) = setup();
    let terminal = Terminal::open();
    let pts = terminal.name();
    // The hook writes what it found to a file: its output is the hook protocol's.
    let hook = format!("{{ {SHELL_LINE}; python3 {probe} hook /dev/tty {pts}; }} > hook.txt 2>&1");
    let hook = toml::Value::String(hook);
    user_config(
        home.path(),
        &format!("[hooks]\npre_tool_use = [{{ matcher = \"execute_command\", command = {hook} }}]\n"),
    );
    let shown = terminal.run(call(ws.path(), home.path(), "echo the command ran"));
    assert!(shown.contains("the command ran"), "{shown}");
    let found = std::fs::read_to_string(ws.path().join("hook.txt")).unwrap();
    assert_shell_alone(&found, "the hook");
    assert_probe_alone(&found, "hook");
    assert_eq!(outcome(&found, "hook", "open-rw", pts), "ok", "{found}");
    assert_tiocsti_refused(&found, "hook", pts);
    terminal.assert_untouched(&shown, "a hook");
}
