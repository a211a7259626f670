//! Class 2: command permissions judge every expansion bash would perform.
//!
//! Each case runs `execute_command` through the real runtime, with every ask approved, in a workspace of its
//! own. The command would create the marker file `pwned` if bash ran the code hidden in it; the check must
//! refuse it with an `unverifiable` reason naming the construct, and the marker must not exist afterwards.
//! Two user settings: an allow list (the construct hides a program the list does not name) and a deny list
//! (`allow *` but never `touch`), under which the construct hides a denied program behind an allowed word.

use crate::util::*;
use serde_json::json;
use toolshed::{ResultStatus, TaskHandle};

/// The allow-list setting.
const ALLOW: &str = r#"{"allow": ["echo *", "printf *", "true", "[[ * ]]", "test *", "cat *"]}"#;
/// The deny-list setting.
const DENY: &str = r#"{"allow": ["*"], "deny": ["touch *"]}"#;

/// Stores the code `a[$(touch pwned)]` in `X` with an allowed command, for the cases that evaluate it.
const STORE: &str = "printf -v X %s 'a[$(touch pwned)]'; ";

fn runtime_under(setting: &str) -> toolshed::Runtime {
    let mut config = toolshed::Config::default();
    config.commands.permissions = Some(setting.to_owned());
    shipped().yes(true).config(config).build().unwrap()
}

/// Every command must be refused as unverifiable, with `kind` in the reason, and must not run.
fn assert_refused(setting: &str, cases: &[(&str, &str)]) {
    let runtime = runtime_under(setting);
    for &(command, kind) in cases {
        let ws = workspace();
        // A hostile repository's script, for `source` and `BASH_ENV`.
        std::fs::write(ws.path().join("evil.sh"), "touch pwned\n").unwrap();
        let task: TaskHandle = task_in(&runtime, ws.path());
        let result = call(&task, "execute_command", json!({"command": command, "requires_approval": false}));
        let text = text(&result);
        assert_ne!(result.status, ResultStatus::Success, "{command:?} ran: {text}");
        assert!(text.contains("was denied by CLINE_COMMAND_PERMISSIONS. Reason: unverifiable."), "{command:?}: {text}");
        assert!(text.contains("which the permission check cannot verify;"), "{command:?}: {text}");
        assert!(text.contains(kind), "{command:?}: the reason does not name {kind:?}: {text}");
        assert!(!ws.path().join("pwned").exists(), "{command:?} created the marker");
    }
}

#[test]
fn tilde_prefixes_that_are_not_user_names_are_refused() {
    assert_refused(
        ALLOW,
        &[
            ("echo ~$(touch pwned)", "the tilde prefix `~$(touch pwned)`"),
            ("echo ~\"$(touch pwned)\"", "tilde prefix"),
            ("printf %s ~$(touch pwned)/x", "tilde prefix"),
            ("echo \"$HOME\" ~$( touch pwned )/x", "tilde prefix"),
            ("echo x ~'$(touch pwned)'", "tilde prefix"),
        ],
    );
}

#[test]
fn parameter_operators_that_assign_are_refused() {
    assert_refused(
        ALLOW,
        &[
            ("echo ${X:=\\$(touch pwned)} ${X@P}", "parameter assignment `${X:=\\$(touch pwned)}`"),
            ("echo ${X=\\$(touch pwned)}", "parameter assignment"),
            ("echo \"${X:=a[\\$(touch pwned)]}\" $((X))", "parameter assignment"),
            ("printf %s ${HOME:=x}", "parameter assignment"),
        ],
    );
}

#[test]
fn parameter_transformations_that_evaluate_are_refused() {
    assert_refused(
        ALLOW,
        &[
            ("printf -v X %s '$(touch pwned)'; echo ${X@P}", "parameter transformation `${X@P}`"),
            ("printf -v X %s '$(touch pwned)'; echo \"${X@P}\"", "parameter transformation"),
            ("echo ${X@E}", "parameter transformation"),
            ("echo ${X@A}", "parameter transformation"),
            ("echo ${X@K} ${X@k}", "parameter transformation"),
            ("echo ${X:-${Y@P}}", "parameter transformation"),
        ],
    );
}

#[test]
fn arithmetic_over_names_or_expansions_is_refused() {
    let cases = [
        format!("{STORE}echo $((X))"),
        format!("{STORE}echo $(( $X + 1 ))"),
        "echo $(( $(echo 'a[$(touch pwned)]') ))".to_owned(),
        format!("{STORE}(( X ))"),
        format!("{STORE}for ((i = X; i < 1; i++)); do true; done"),
        format!("{STORE}echo $((1 + X))"),
    ];
    let cases: Vec<(&str, &str)> = cases.iter().map(|c| (c.as_str(), "arithmetic")).collect();
    assert_refused(ALLOW, &cases);
}

#[test]
fn array_subscripts_and_substring_offsets_that_evaluate_are_refused() {
    let cases = [
        (format!("{STORE}echo ${{a[X]}}"), "the array subscript `a[X]`"),
        ("echo ${a[$(echo 'b[$(touch pwned)]')]}".to_owned(), "array subscript"),
        (format!("{STORE}echo ${{#a[X]}}"), "array subscript"),
        (format!("{STORE}echo ${{HOME:X}}"), "substring"),
        (format!("{STORE}echo ${{HOME:0:X}}"), "substring"),
        (format!("{STORE}echo ${{a[X]:-d}}"), "array subscript"),
    ];
    let cases: Vec<(&str, &str)> = cases.iter().map(|(c, k)| (c.as_str(), *k)).collect();
    assert_refused(ALLOW, &cases);
}

#[test]
fn indirection_is_refused() {
    let cases = [
        (format!("{STORE}echo ${{!X}}"), "indirect expansion `${!X}`"),
        (format!("{STORE}echo ${{!X:-x}}"), "indirect expansion"),
        ("echo ${!HO*}".to_owned(), "indirect expansion"),
        ("echo ${!a[@]}".to_owned(), "indirect expansion"),
    ];
    let cases: Vec<(&str, &str)> = cases.iter().map(|(c, k)| (c.as_str(), *k)).collect();
    assert_refused(ALLOW, &cases);
}

#[test]
fn tests_that_evaluate_names_are_refused() {
    let cases = [
        (format!("{STORE}[[ $X -eq 0 ]]"), "arithmetic comparison"),
        (format!("{STORE}[[ X -lt 1 ]]"), "arithmetic comparison"),
        (format!("{STORE}[[ -v $X ]]"), "`[[ -v"),
        ("test -v 'a[$(touch pwned)]'".to_owned(), "`test -v`"),
        (format!("{STORE}test $Y $X"), "`test -v`"),
    ];
    let cases: Vec<(&str, &str)> = cases.iter().map(|(c, k)| (c.as_str(), *k)).collect();
    assert_refused(ALLOW, &cases);
}

#[test]
fn command_names_built_by_expansion_are_refused() {
    assert_refused(
        ALLOW,
        &[
            // The segment is `echo hi`, but bash splits the default value into `touch pwned echo hi`.
            ("${X:-touch pwned }echo hi", "a command name built by expansion"),
            ("e\"${X:-}\"cho hi", "a command name built by expansion"),
        ],
    );
    assert_refused(
        DENY,
        &[
            ("$(echo touch) pwned", "a command name built by expansion"),
            ("${X:-touch} pwned", "a command name built by expansion"),
            ("{touch,pwned}", "glob or brace"),
            ("/usr/bin/tou?h pwned", "glob or brace"),
            ("$'\\x74ouch' pwned", "ANSI-C"),
        ],
    );
}

#[test]
fn builtins_that_run_code_are_refused() {
    assert_refused(
        DENY,
        &[
            ("eval 'touch pwned'", "the `eval` builtin"),
            ("exec touch pwned", "the `exec` builtin"),
            ("source ./evil.sh", "the `source` builtin"),
            (". ./evil.sh", "the `.` builtin"),
            ("trap 'touch pwned' EXIT", "the `trap` builtin"),
            ("command touch pwned", "the `command` builtin"),
            ("builtin eval 'touch pwned'", "the `builtin` builtin"),
            ("\\eval 'touch pwned'", "the `eval` builtin"),
            ("'ev'al 'touch pwned'", "the `eval` builtin"),
            ("let 'a[$(touch pwned)]'", "the `let` builtin"),
            ("echo x | mapfile -C 'touch pwned' -c 1 X", "the `mapfile` builtin"),
            ("coproc touch pwned", "the `coproc` builtin"),
            ("hash -p /usr/bin/touch t; t pwned", "the `hash` builtin"),
            ("shopt -s expand_aliases; alias t='touch pwned'", "the `shopt` builtin"),
            ("alias t='touch pwned'", "the `alias` builtin"),
            ("enable -n echo", "the `enable` builtin"),
        ],
    );
}

#[test]
fn builtins_that_assign_through_names_are_refused() {
    assert_refused(
        DENY,
        &[
            ("declare -n r='a[$(touch pwned)]'; echo $r", "`declare -n`"),
            ("declare -i n; n='a[$(touch pwned)]'", "`declare -i`"),
            ("declare 'a[$(touch pwned)]=1'", "not a plain variable name"),
            ("typeset -n r=X", "`typeset -n`"),
            ("local -n r=X", "`local -n`"),
            ("export 'a[$(touch pwned)]=1'", "not a plain variable name"),
            ("readonly \"$X\"", "expanded argument"),
            ("declare -a 'a=([$(touch pwned)]=1)'", "`declare -a`"),
            ("printf -v 'a[$(touch pwned)]' %s x", "`printf` assigning"),
            ("printf \"$F\" 'a[$(touch pwned)]' x", "`printf` assigning"),
            ("echo 1 | read 'a[$(touch pwned)]'", "`read` assigning"),
            ("echo 1 | read -a X", "`read -a`"),
            ("getopts a 'a[$(touch pwned)]'", "`getopts` assigning"),
            ("unset 'a[$(touch pwned)]'", "`unset` assigning"),
        ],
    );
}

#[test]
fn assignments_that_change_how_commands_run_are_refused() {
    assert_refused(
        DENY,
        &[
            ("PS4='$(touch pwned)'; set -x; true", "an assignment to `PS4`"),
            ("BASH_ENV=./evil.sh bash -c true", "an assignment to `BASH_ENV`"),
            ("ENV=./evil.sh sh -i", "an assignment to `ENV`"),
            ("PROMPT_COMMAND='touch pwned'", "an assignment to `PROMPT_COMMAND`"),
            ("IFS=x; true", "an assignment to `IFS`"),
            ("PATH=.:$PATH; true", "an assignment to `PATH`"),
            ("for PATH in .; do true; done", "an assignment to `PATH`"),
            ("printf -v PS4 %s '$(touch pwned)'; set -x; true", "an assignment to `PS4`"),
            ("export BASH_ENV=./evil.sh", "an assignment to `BASH_ENV`"),
            ("LD_PRELOAD=./x.so true", "an assignment to `LD_PRELOAD`"),
        ],
    );
}

#[test]
fn function_definitions_are_refused() {
    assert_refused(
        DENY,
        &[
            ("true() { echo hi; }; true", "a function definition `true`"),
            ("function f { echo hi; }; f", "a function definition `f`"),
            ("f() ( echo hi ); f", "a function definition"),
        ],
    );
}

/// What is provably inert still runs: plain reads, safe operators, numeric arithmetic, brace expansion in
/// arguments, user-name tildes, quoted text that only looks like code.
#[test]
fn inert_expansions_still_run() {
    let ws = workspace();
    let runtime = runtime_under(ALLOW);
    let task = task_in(&runtime, ws.path());
    let cases = [
        ("echo ${PWD:+set} ${UNSET:-d} ${#UNSET} $((1 + 2 * 3)) $((16#ff)) {a,b}", "set d 0 7 255 a b"),
        ("printf '%s\\n' '$(touch pwned)' \"\\$(touch pwned)\"", "$(touch pwned)\n$(touch pwned)"),
        ("echo ~root/x", "/root/x"),
        ("[[ 2 -gt 1 ]] && echo yes", "yes"),
        ("printf -v X %s 'a[$(touch pwned)]'; echo \"$X\" ${X^^}", "a[$(touch pwned)] A[$(TOUCH PWNED)]"),
    ];
    for (command, output) in cases {
        let result = call(&task, "execute_command", json!({"command": command, "requires_approval": false}));
        assert_eq!(result.status, ResultStatus::Success, "{command:?}: {}", text(&result));
        assert!(text(&result).contains(output), "{command:?}: {}", text(&result));
    }
    assert!(!ws.path().join("pwned").exists());
}

/// The issue's reproduction through the `toolshed` binary: no run, a reason on stdout, exit 1.
#[test]
fn the_cli_refuses_the_reproduction() {
    let home = workspace();
    let ws = workspace();
    let plugins = plugins();
    let input = r#"{"command":"echo ~$(touch pwned)","requires_approval":"false"}"#;
    let out = toolshed(
        home.path(),
        ws.path(),
        &["--plugins", plugins.to_str().unwrap(), "call", "--yes", "execute_command", input],
        &[("TOOLSHED_COMMANDS_PERMISSIONS", r#"{"allow": ["echo *"]}"#)],
    );
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("Reason: unverifiable. Command uses the tilde prefix"), "{}", stdout(&out));
    assert!(!ws.path().join("pwned").exists());
}
