//! The differential target of the command permissions (issue 21): the checker's verdict against what bash
//! really runs. Bytes become a command, either verbatim (an input starting with `!`, so the committed seeds
//! and regressions stay readable and libFuzzer mutates their text) or through a grammar of bash constructs:
//! quotes, tildes, `$(…)`, backticks, `${…}` with every operator, arithmetic, arrays, assignments,
//! pipelines, lists, subshells, groups, functions, loops, `[[ … ]]` and the builtins that evaluate code.
//! When the checker allows the command under [`ALLOW`], it runs under `strace -f -z -e trace=execve` in a
//! scratch directory, and any program executed other than bash itself and the allowed names fails the
//! target, as does the marker file the grammar's payloads create.
//!
//! The payloads (`id`, `touch pwned`) are harmless, and the allow list names only builtins and no redirect,
//! so even a hole in the checker cannot write outside the scratch directory (whose path is also `HOME`).

use execute_command::permissions::CommandPermissions;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The allow list every command is checked against: the names bash may run (as builtins).
pub const ALLOW: &str = r#"{"allow": ["echo *", "printf *", "true"]}"#;

/// The programs [`ALLOW`] names.
const ALLOWED_PROGRAMS: &[&str] = &["echo", "printf", "true"];

/// The longest one command may run before its process group is killed; `TOOLSHED_FUZZ_EXEC_TIMEOUT_MS`
/// overrides it (an allowed `while true; do true; done` runs until then, and is not a failure).
const DEFAULT_TIMEOUT_MS: u64 = 2_000;

/// Checks the command the bytes describe, and runs it when it is allowed.
///
/// # Panics
///
/// The checker allowed a command that executed a program [`ALLOW`] does not name, or created the marker
/// file; or strace is missing (`cargo xtask test` and `cargo xtask fuzz` install it).
pub fn command_permissions_exec(data: &[u8]) {
    let command = match data.strip_prefix(b"!") {
        Some(text) => String::from_utf8_lossy(text).into_owned(),
        None => Grammar { data, at: 0 }.program(),
    };
    // No process can be given an argument with a NUL in it, so such a command never runs anywhere.
    if command.contains('\0') {
        return;
    }
    let Ok(rules) = CommandPermissions::from_json(ALLOW) else {
        panic!("the fixed allow list {ALLOW} does not parse");
    };
    if rules.check(&command).is_err() {
        return;
    }
    let Ok(scratch) = tempfile::tempdir() else { panic!("cannot create a scratch directory") };
    let executed = run_traced(&command, scratch.path());
    let unnamed: Vec<&String> = executed
        .iter()
        .skip(1)
        .filter(|program| {
            let name = program.rsplit('/').next().unwrap_or(program);
            !ALLOWED_PROGRAMS.contains(&name)
        })
        .collect();
    assert!(unnamed.is_empty(), "the checker allowed {command:?} under {ALLOW}, and it executed {unnamed:?}");
    assert!(
        !scratch.path().join("pwned").exists(),
        "the checker allowed {command:?} under {ALLOW}, and it created the marker file"
    );
}

/// Runs `bash -c command` under strace in `dir` and returns the programs it executed, bash first.
fn run_traced(command: &str, dir: &Path) -> Vec<String> {
    let trace = dir.join(".trace");
    let timeout = std::env::var("TOOLSHED_FUZZ_EXEC_TIMEOUT_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(Duration::from_millis(DEFAULT_TIMEOUT_MS), Duration::from_millis);
    let spawned = Command::new("strace")
        .args(["-f", "-z", "-qq", "-e", "trace=execve", "-o"])
        .arg(&trace)
        .args(["bash", "-c", command])
        .current_dir(dir)
        .env("HOME", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => panic!("cannot run strace ({e}); `cargo xtask test` installs it (apt-get install -y strace)"),
    };
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < timeout => std::thread::sleep(Duration::from_millis(2)),
            Ok(None) | Err(_) => break None,
        }
    };
    // The whole group goes, whether bash ended or not: a background job of the command must not outlive it.
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    let _ = child.wait();
    let text = std::fs::read_to_string(&trace).unwrap_or_default();
    let executed: Vec<String> = text
        .lines()
        .filter_map(|line| line.split_once("execve(\"").and_then(|(_, rest)| rest.split_once('"')))
        .map(|(program, _)| program.to_owned())
        .collect();
    if executed.is_empty() && status.is_some() {
        panic!("strace traced nothing for {command:?}: is strace allowed to trace here (ptrace)?");
    }
    executed
}

/// A byte-driven generator: each choice reads one byte; when the bytes run out every choice is the first,
/// which is always the simplest, so generation ends.
struct Grammar<'a> {
    data: &'a [u8],
    at: usize,
}

/// Words with no expansion.
const WORDS: &[&str] = &["echo", "printf", "true", "x", "a", "-v", "%s", "X", "a[0]", "pwned", "--", "-n", "=", "-eq"];

/// What a hole would run.
const PAYLOADS: &[&str] = &["id", "touch pwned", "echo ok; id", "ls"];

/// Text that is code once something evaluates it.
const STORED: &[&str] =
    &["\\$(id)", "a[\\$(id)]", "\\$(touch pwned)", "a[\\$(touch pwned)]", "'a[$(id)]'", "'$(id)'", "x", "1"];

/// Parameter operators, written around a name (`⟦N⟧`) and an operand (`⟦W⟧`).
const OPERATORS: &[&str] = &[
    "${⟦N⟧}",
    "${⟦N⟧:-⟦W⟧}",
    "${⟦N⟧-⟦W⟧}",
    "${⟦N⟧:=⟦W⟧}",
    "${⟦N⟧=⟦W⟧}",
    "${⟦N⟧:+⟦W⟧}",
    "${⟦N⟧+⟦W⟧}",
    "${⟦N⟧:?⟦W⟧}",
    "${#⟦N⟧}",
    "${⟦N⟧#⟦W⟧}",
    "${⟦N⟧##⟦W⟧}",
    "${⟦N⟧%⟦W⟧}",
    "${⟦N⟧%%⟦W⟧}",
    "${⟦N⟧/⟦W⟧/⟦W⟧}",
    "${⟦N⟧//⟦W⟧}",
    "${⟦N⟧^}",
    "${⟦N⟧^^}",
    "${⟦N⟧,,}",
    "${⟦N⟧@P}",
    "${⟦N⟧@E}",
    "${⟦N⟧@A}",
    "${⟦N⟧@K}",
    "${⟦N⟧@k}",
    "${⟦N⟧@Q}",
    "${⟦N⟧@U}",
    "${⟦N⟧@a}",
    "${⟦N⟧:1:2}",
    "${⟦N⟧:⟦N⟧}",
    "${⟦N⟧:0:⟦N⟧}",
    "${!⟦N⟧}",
    "${!⟦N⟧*}",
    "${!⟦N⟧@}",
    "${!⟦N⟧[@]}",
    "${⟦N⟧[0]}",
    "${⟦N⟧[⟦N⟧]}",
    "${⟦N⟧[@]}",
    "${⟦N⟧[*]}",
    "${⟦N⟧[⟦W⟧]}",
    "${#⟦N⟧[@]}",
    "$⟦N⟧",
];

/// Commands and builtins around a name (`⟦N⟧`), an argument list (`⟦A⟧`) or a payload (`⟦P⟧`).
const COMMANDS: &[&str] = &[
    "echo ⟦A⟧",
    "printf ⟦A⟧",
    "true",
    "printf -v ⟦N⟧ ⟦A⟧",
    "printf -v 'a[$(⟦P⟧)]' ⟦A⟧",
    "read ⟦N⟧ <<< ⟦A⟧",
    "read -a ⟦N⟧ <<< ⟦A⟧",
    "declare ⟦N⟧=⟦A⟧",
    "declare -n ⟦N⟧=⟦A⟧",
    "declare -i ⟦N⟧=⟦A⟧",
    "declare -a ⟦N⟧=⟦A⟧",
    "local ⟦N⟧",
    "export ⟦N⟧=⟦A⟧",
    "readonly ⟦N⟧=⟦A⟧",
    "typeset ⟦N⟧",
    "let ⟦N⟧",
    "eval ⟦A⟧",
    "exec ⟦A⟧",
    "source ⟦A⟧",
    ". ⟦A⟧",
    "trap ⟦A⟧ EXIT",
    "command ⟦A⟧",
    "builtin ⟦A⟧",
    "mapfile -C ⟦A⟧ ⟦N⟧",
    "test -v ⟦A⟧",
    "[ -v ⟦A⟧ ]",
    "[[ -v ⟦A⟧ ]]",
    "[[ ⟦A⟧ -eq 0 ]]",
    "(( ⟦A⟧ ))",
    "alias ⟦N⟧=⟦A⟧",
    "coproc ⟦A⟧",
    "unset ⟦A⟧",
    "getopts a ⟦N⟧",
    "wait -p ⟦N⟧",
    "hash -p /usr/bin/id echo",
    "set -- ⟦A⟧",
    "set ⟦A⟧",
    "⟦N⟧=⟦A⟧",
    "⟦N⟧[⟦A⟧]=⟦A⟧",
    "⟦N⟧=(⟦A⟧)",
    "⟦N⟧=⟦A⟧ echo ⟦A⟧",
    "IFS=⟦A⟧",
    "PS4=⟦A⟧",
    "PATH=⟦A⟧",
    "BASH_ENV=⟦A⟧",
    "f() { ⟦P⟧; }",
    "echo() { ⟦P⟧; }",
    "⟦A⟧",
];

impl Grammar<'_> {
    fn choose(&mut self, n: usize) -> usize {
        let byte = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        usize::from(byte) % n.max(1)
    }

    fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
        from[self.choose(from.len())]
    }

    fn program(&mut self) -> String {
        let mut text = self.list(3);
        // A few top-level commands, each a fresh chance to use what earlier ones stored.
        while self.at < self.data.len() && self.choose(3) == 1 {
            let separator = self.pick(&["; ", " && ", " || ", " | ", " & "]);
            text.push_str(separator);
            text.push_str(&self.list(3));
        }
        text
    }

    fn list(&mut self, depth: usize) -> String {
        if depth == 0 {
            return self.simple(0);
        }
        match self.choose(10) {
            0..=4 => self.simple(depth),
            5 => format!("( {} )", self.list(depth - 1)),
            6 => format!("{{ {}; }}", self.list(depth - 1)),
            7 => format!("if {}; then {}; fi", self.list(depth - 1), self.list(depth - 1)),
            8 => format!("for i in {}; do {}; done", self.args(depth - 1), self.list(depth - 1)),
            _ => format!("{} {} {}", self.list(depth - 1), self.pick(&[";", "&&", "||", "|"]), self.list(depth - 1)),
        }
    }

    fn simple(&mut self, depth: usize) -> String {
        let template = self.pick(COMMANDS);
        let name = self.pick(&["X", "Y", "a", "PS1", "i", "RANDOM", "OPTIND"]);
        let payload = self.payload(depth);
        let args = self.args(depth);
        template.replace("⟦N⟧", name).replace("⟦P⟧", &payload).replace("⟦A⟧", &args)
    }

    fn payload(&mut self, depth: usize) -> String {
        if depth > 0 && self.choose(4) == 0 {
            return self.list(depth - 1);
        }
        self.pick(PAYLOADS).to_owned()
    }

    fn args(&mut self, depth: usize) -> String {
        let count = 1 + self.choose(3);
        (0..count).map(|_| self.word(depth)).collect::<Vec<_>>().join(" ")
    }

    fn word(&mut self, depth: usize) -> String {
        let pieces = 1 + self.choose(3);
        (0..pieces).map(|_| self.piece(depth)).collect()
    }

    fn piece(&mut self, depth: usize) -> String {
        match self.choose(14) {
            0..=2 => self.pick(WORDS).to_owned(),
            3 => self.pick(STORED).to_owned(),
            4 => format!("'{}'", self.pick(STORED)),
            5 => format!("\"{}\"", self.piece(depth.saturating_sub(1))),
            6 => format!("~{}", self.piece(depth.saturating_sub(1))),
            7 => format!("$({})", self.payload(depth)),
            8 => format!("`{}`", self.pick(PAYLOADS)),
            9 | 10 => {
                let operand = if depth > 0 { self.piece(depth - 1) } else { self.pick(STORED).to_owned() };
                let name = self.pick(&["X", "Y", "a", "PS1", "1", "@", "HOME"]);
                self.pick(OPERATORS).replace("⟦N⟧", name).replace("⟦W⟧", &operand)
            }
            11 => format!("$(({}))", self.pick(&["1+2", "X", "a[X]", "X+1", "$X", "$(echo 1)", "16#ff"])),
            12 => self.pick(&["{a,b}", "{1..2}", "*", "?", "[a]", "$'\\x69d'", "\\$", "$[X]", "$\"x\""]).to_owned(),
            _ => format!("{}={}", self.pick(&["X", "a[X]", "PS4"]), self.pick(STORED)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The oracle sees what bash runs: bash itself first, then every program, builtins never.
    #[test]
    fn the_trace_names_every_program_run() {
        let dir = tempfile::tempdir().expect("scratch");
        let executed = run_traced("echo hi; printf x; true; id >/dev/null; (ls >/dev/null)", dir.path());
        let names: Vec<&str> = executed.iter().map(|p| p.rsplit('/').next().unwrap_or(p)).collect();
        assert_eq!(names, ["bash", "id", "ls"]);
    }

    /// A hole fails the target: a command the checker denies is never run, so the oracle is tried directly.
    #[test]
    fn an_unnamed_program_is_a_failure() {
        let allowed = std::panic::catch_unwind(|| command_permissions_exec(b"!echo hi; printf '%s' x; true"));
        assert!(allowed.is_ok());
        // `id` is denied, so it never runs; the oracle itself must still name it.
        let dir = tempfile::tempdir().expect("scratch");
        assert!(run_traced("echo ~$(id)", dir.path()).iter().any(|p| p.ends_with("/id")));
    }

    /// The grammar always terminates and produces text for any bytes, including none.
    #[test]
    fn the_grammar_ends() {
        for data in [&b""[..], b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", b"\x05\x05\x05\x05\x05"] {
            let _ = Grammar { data, at: 0 }.program();
        }
    }
}
