//! The command-permission controller of `execute_command`: Cline's `CommandPermissionController`,
//! configured by the `CLINE_COMMAND_PERMISSIONS` environment variable (CLINE-TOOLS.md §16).
//!
//! The setting is JSON, `{"allow": [...], "deny": [...], "allowRedirects": bool}`. A command is checked in
//! this order, and the first failure is reported with Cline's raw reason code:
//!
//! 1. A newline, CR, U+2028, U+2029 or U+0085 outside quotes, or a backtick outside single quotes, is
//!    `shell_operator_detected` (Cline's character scan, backslash escapes honoured outside single quotes).
//! 2. The command is parsed as bash. A command we cannot parse is `parse_error`.
//! 3. Each simple command becomes one *segment*: its words with quotes removed, joined by single spaces.
//!    `&&`, `||`, `|`, `;`, `&` and newlines separate segments. `$VAR` and `${…}` expand to nothing, a
//!    `$(…)`, backtick, `$((…))` or `<(…)`/`>(…)` stands as `$`, and glob characters stay as written.
//!    `(…)`, `{ …; }`, `if`/`for`/`while`/`case` bodies, function bodies and the inside of every
//!    substitution are validated recursively, as Cline validates its subshells.
//! 4. Any redirect (`>`, `>>`, `<`, `>&`, `<&`, `&>`, `|&`, `<>`, `>|`, `<<`, `<<<`, `<(…)`, `>(…)`) is
//!    `redirect_detected` unless `allowRedirects` is true. Redirect targets stay in the segment text, so
//!    `ls > out` is the segment `ls out` (and `cmd 2>&1` is `cmd 2 1`), as in Cline.
//! 5. Per segment: a `deny` match is `denied`; otherwise a non-empty `allow` list must match, or it is
//!    `no_match_deny_default`. Where a level of the command has several segments or any subshell, the
//!    codes become `segment_denied` / `segment_no_match` and the failing segment is reported.
//!
//! 6. A command the rules allow must still be provably inert: bash must run nothing the segments do not
//!    show. Otherwise it is `unverifiable`, with a detail naming the construct and what to write instead.
//!    Refused, going down the bash manual's list of expansions: tilde prefixes that are not a user name
//!    (brush swallowed `~$(id)` whole); parameter operators that assign (`${X:=…}`, `${X=…}`) or evaluate
//!    (`@P`, `@E`, `@A`, `@K`, `@k`); indirection (`${!X}`, `${!p*}`, `${!a[@]}`); arithmetic over names,
//!    expansions or substitutions, wherever it occurs (`$((…))`, `$[…]`, `((…))`, `for ((…))`, subscripts of
//!    `${a[…]}` and `a[…]=`, substring offsets, `[[ … -eq … ]]`), because bash evaluates a name's value as
//!    arithmetic again and a subscript in it runs commands (`X='a[$(id)]'; echo $((X))`); a command name
//!    built by expansion, glob, brace expansion or ANSI-C quoting (`${X:-id }echo hi` is the segment
//!    `echo hi`); function definitions; the builtins that run code or change what a name runs (`eval`, `exec`,
//!    `source`, `.`, `trap`, `command`, `builtin`, `let`, `mapfile`, `alias`, `shopt`, `hash`, `enable`, …);
//!    builtins assigning through names that are not plain and literal (`printf -v`, `read`, `getopts`,
//!    `unset`, `wait -p`, `test -v`, `declare` and its kin, which also may not use `-n`, `-i`, `-a`, `-A`);
//!    and assignments to variables that change how later commands run (`IFS` except before `read`, `PATH`,
//!    `ENV`, `BASH_ENV`, `PROMPT_COMMAND`, `PS0`–`PS4`, `SHELLOPTS`, `BASH_*`, `LD_*`, …). Brace expansion,
//!    word splitting, filename expansion and quote removal in arguments, plain `$X` reads and the operators
//!    that only read stay allowed. The rules come first, so a command they refuse keeps Cline's reason. The
//!    `command_permissions_exec` fuzz target runs what this allows under strace and fails on any program the
//!    allow list does not name.
//!
//! Patterns match the whole segment: `*` is any run of characters (including `/` and newlines), `?` is
//! exactly one character, every other character is literal.
//!
//! **Parser.** Cline splits commands with the `shell-quote` tokenizer, which does not understand bash: it
//! does not look inside `"$(…)"`, so `echo "$(rm -rf /)"` passes an `echo *` allow rule. We parse with
//! `brush-parser` 0.3, the parser of the brush shell: maintained, bash-compatible, and giving a full syntax
//! tree (quotes, `$(…)`, backticks, here-documents, process substitution, compound commands). It is plain
//! Rust with a modest dependency tree (peg, bon, cached, tracing, thiserror); 0.4 adds `insta` as a runtime
//! dependency, so we stay on 0.3. Every command substitution is found by the parser, so no command hidden
//! in one escapes the rules.
//!
//! **Where we differ from Cline, on purpose** (each closes a hole or removes a parser artefact):
//! - A command that cannot be parsed is denied (`parse_error`); Cline allowed it. So are the few valid bash
//!   constructs brush cannot parse (such as a here-document with `$(…)` in its body inside `"$(…)"`), and
//!   commands nested beyond the limits `MAX_DOLLARS`, `MAX_OPENERS`, `MAX_PAREN_DEPTH` and `MAX_RAW_PAREN_DEPTH`,
//!   which guard the stack and brush's backtracking.
//! - A malformed setting is an error from [`CommandPermissions::from_json`], and the caller denies every
//!   command; Cline silently allowed everything. That covers invalid JSON, JSON that is not an object,
//!   `allow`/`deny` that are not arrays of strings, and `allowRedirects` that is not a boolean. Unknown
//!   keys are ignored and `null` counts as absent, as in Cline. Blank text counts as unset.
//! - `$(…)` inside double quotes, backticks inside `$(…)`, `${x:-$(…)}`, `$((… $(…) …))` and here-document
//!   bodies are validated like any other substitution; Cline validated none of them.
//! - The words after a substitution stay in its segment (`echo a$(id)b` is `echo a$b`); Cline split them
//!   into a segment of their own. `$((…))` stands as `$` rather than a subshell whose text (`1+2`) had to
//!   match a pattern. `<(cmd)` stands as `$` and `cmd` is validated; Cline merged `cmd` into the outer
//!   segment, where `diff <(rm -rf /)` matched `diff *`.
//! - `|&` separates segments like `|` (bash runs two commands; Cline merged them into one segment), `<<<` is
//!   a redirect (Cline ignored it), and the `!` and `time` prefixes are not part of the segment, so
//!   `! rm -rf /` still meets a `rm *` deny rule.
//! - `if`, `for`, `while`, `case`, `{ …; }` and function bodies are validated command by command; Cline saw
//!   `then rm x` as one segment.
//! - `?` matches one Unicode character; Cline's JavaScript regex matched one UTF-16 unit.
//!
//! **Robustness.** No input panics the caller or hangs: nesting is bounded before parsing, parsing runs on
//! its own thread (where brush-parser's own panics on malformed here-documents are caught), and a brush
//! infinite loop on empty here-document delimiters is defused (see `Walker::program`). A fixed-seed fuzz
//! test guards this.

mod inert;
#[cfg(test)]
mod tests;
mod walk;

use std::fmt::Write as _;

use serde::Deserialize;
use walk::{Parsed, Unparsable, Walker};

/// The environment variable that holds the setting.
pub const ENV_VAR: &str = "CLINE_COMMAND_PERMISSIONS";

/// The most `$` and backtick characters a command may contain, counted wherever they are. brush's tokenizer
/// and word parser recurse once per nested `$(…)`, `${…}` or backtick, and each nested substitution is
/// parsed again at every level above it, so this bounds both the stack and the (quadratic) work.
const MAX_DOLLARS: usize = 250;

/// The most syntax tokens that open a nesting level (`(`, `{`, `[[`, `!`, `&&`, `||` and the keywords that
/// open a compound command) a command may contain, summed over all its nested substitutions. They are
/// counted on brush's tokens, so quoted text (a long commit message, say) does not count.
const MAX_OPENERS: usize = 500;

/// The deepest nesting of `(` operators a command may have. brush-parser's grammar backtracks exponentially
/// over nested `(` when something inside fails to parse (25 unclosed ones took 13 s, `(`×20 ` ; x` `)`×20
/// 0.4 s, each two more levels about doubling it), so a model's `((((((…` would hold the parsing thread for
/// minutes; found by the `command_permissions` fuzz target (fuzz/regressions/command_permissions/timeout-*).
/// Real commands nest subshells a few levels deep.
const MAX_PAREN_DEPTH: usize = 12;

/// The deepest nesting of `(` characters anywhere in a command, quoted or not (see `Walker::program`).
const MAX_RAW_PAREN_DEPTH: usize = 24;

/// Stack for the parsing thread. A debug build needs under 16 MiB for the costliest nesting allowed by the
/// limits above (the `nesting_limit` test), so this leaves a fourfold margin; it is reserved, not touched.
const PARSE_STACK_BYTES: usize = 64 << 20;

/// The parsed `CLINE_COMMAND_PERMISSIONS` setting.
///
/// [`Default`] is the unset setting, which allows every command (Cline's backward-compatible default).
#[derive(Debug, Clone, Default)]
pub struct CommandPermissions {
    /// `None` when the setting is unset or blank: nothing is checked at all.
    rules: Option<Rules>,
}

#[derive(Debug, Clone)]
struct Rules {
    allow: Vec<String>,
    deny: Vec<String>,
    allow_redirects: bool,
}

/// The JSON shape; unknown keys are ignored, as Cline ignores them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawConfig {
    allow: Option<Vec<String>>,
    deny: Option<Vec<String>>,
    allow_redirects: Option<bool>,
}

/// Why a command was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// Cline's raw reason code (`denied`, `no_match_deny_default`, `segment_denied`, `segment_no_match`,
    /// `redirect_detected`, `shell_operator_detected`), or our `parse_error` and `unverifiable`.
    pub reason: &'static str,
    /// The failing segment, for commands with several segments or subshells.
    pub segment: Option<String>,
    /// The deny pattern that matched, for `denied` and `segment_denied`.
    pub pattern: Option<String>,
    /// For `unverifiable`: which construct the check could not prove inert, and what to write instead.
    pub detail: Option<String>,
}

impl Denial {
    fn bare(reason: &'static str) -> Self {
        Self { reason, segment: None, pattern: None, detail: None }
    }
}

impl CommandPermissions {
    /// Parses the setting's text. Blank text is the unset setting.
    ///
    /// # Errors
    ///
    /// The setting is malformed. The message names the problem and the expected shape; the caller should
    /// deny every command with it rather than run commands unchecked.
    pub fn from_json(text: &str) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let raw: RawConfig = serde_json::from_str(text).map_err(|e| {
            format!(
                "{ENV_VAR} is malformed ({e}). Expected JSON such as \
                 {{\"allow\": [\"npm *\"], \"deny\": [\"rm *\"], \"allowRedirects\": false}}."
            )
        })?;
        Ok(Self {
            rules: Some(Rules {
                allow: raw.allow.unwrap_or_default(),
                deny: raw.deny.unwrap_or_default(),
                allow_redirects: raw.allow_redirects.unwrap_or(false),
            }),
        })
    }

    /// Checks one command against the setting.
    ///
    /// The command is parsed on a short-lived thread with a large stack (`PARSE_STACK_BYTES`), so a
    /// call costs a thread spawn; commands are rare enough for that not to matter.
    ///
    /// # Errors
    ///
    /// The command is refused; [`denial_message`] words the reason for the model.
    pub fn check(&self, command: &str) -> Result<(), Denial> {
        let Some(rules) = &self.rules else {
            return Ok(());
        };
        if has_dangerous_chars(command) {
            return Err(Denial::bare("shell_operator_detected"));
        }
        if command.chars().filter(|c| matches!(c, '$' | '`')).count() > MAX_DOLLARS {
            return Err(Denial::bare("parse_error"));
        }
        // The parser recurses once per nesting level, so it runs on a thread whose stack is sized for the
        // limits. brush-parser 0.3 also panics (an `unwrap` in its tokenizer) on some malformed
        // here-documents, such as `$(<<'')$(`; the panic ends that thread and the command is denied. This
        // relies on `panic = "unwind"`, the default: a plugin built with `panic = "abort"` would die instead.
        std::thread::scope(|scope| {
            let worker = std::thread::Builder::new()
                .name("command-permissions".into())
                .stack_size(PARSE_STACK_BYTES)
                .spawn_scoped(scope, || {
                    let mut walker = Walker::new();
                    let parsed = walker.program(command).map_err(|Unparsable| Denial::bare("parse_error"))?;
                    // Cline's verdicts come first, so a command the rules refuse anyway keeps Cline's reason;
                    // a command they would allow still needs every construct in it to be provably inert.
                    rules.validate(&parsed)?;
                    match walker.unverifiable {
                        Some(detail) => Err(Denial { detail: Some(detail), ..Denial::bare("unverifiable") }),
                        None => Ok(()),
                    }
                });
            match worker {
                Ok(handle) => handle.join().unwrap_or_else(|_| Err(Denial::bare("parse_error"))),
                Err(_) => Err(Denial::bare("parse_error")),
            }
        })
    }
}

/// The model-visible text of a denial, worded as Cline's `ExecuteCommandToolHandler` words it.
///
/// Cline tests the failing segment for truthiness, so an empty segment (a command that was only `$VAR`)
/// takes the `Reason:` form; we do the same.
#[must_use]
pub fn denial_message(command: &str, denial: &Denial) -> String {
    let mut text = format!("Command \"{command}\" was denied by {ENV_VAR}. ");
    match denial.segment.as_deref() {
        Some(segment) if !segment.is_empty() => {
            let _ = write!(text, "Segment \"{segment}\" {}.", denial.reason);
        }
        _ => {
            let _ = write!(text, "Reason: {}", denial.reason);
            if let Some(pattern) = denial.pattern.as_deref().filter(|p| !p.is_empty()) {
                let _ = write!(text, " (matched pattern: {pattern})");
            }
            if let Some(detail) = denial.detail.as_deref() {
                let _ = write!(text, ". {detail}");
            }
        }
    }
    text
}

impl Rules {
    /// Cline's recursive validation: redirects first, then this level's segments in order, then each
    /// subshell. Whether codes take the `segment_` form is decided per level, as Cline decides it.
    fn validate(&self, parsed: &Parsed) -> Result<(), Denial> {
        if parsed.has_redirects && !self.allow_redirects {
            return Err(Denial::bare("redirect_detected"));
        }
        let multi_segment = parsed.segments.len() > 1 || !parsed.subshells.is_empty();
        for segment in &parsed.segments {
            if let Err(mut denial) = self.check_segment(segment) {
                if multi_segment {
                    denial.reason = match denial.reason {
                        "denied" => "segment_denied",
                        "no_match_deny_default" => "segment_no_match",
                        other => other,
                    };
                    denial.segment = Some(segment.clone());
                }
                return Err(denial);
            }
        }
        parsed.subshells.iter().try_for_each(|subshell| self.validate(subshell))
    }

    fn check_segment(&self, segment: &str) -> Result<(), Denial> {
        if let Some(pattern) = self.deny.iter().find(|p| glob_matches(p, segment)) {
            return Err(Denial { reason: "denied", segment: None, pattern: Some(pattern.clone()), detail: None });
        }
        if self.allow.is_empty() || self.allow.iter().any(|p| glob_matches(p, segment)) {
            Ok(())
        } else {
            Err(Denial::bare("no_match_deny_default"))
        }
    }
}

/// Whole-string wildcard match: `*` is any run of characters, `?` one character, the rest literal.
///
/// The classic two-cursor algorithm: on a mismatch, retry from the last `*` with one more character
/// swallowed. It is O(pattern × text) at worst and never recurses.
fn glob_matches(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((star_p, star_t)) => {
                    p = star_p + 1;
                    t = star_t + 1;
                    star = Some((star_p, star_t + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// Cline's character scan: line separators outside any quotes, or a backtick outside single quotes. It
/// runs before parsing, as Cline's does, so its verdicts (and their precedence) are Cline's.
fn has_dangerous_chars(command: &str) -> bool {
    let (mut single, mut double, mut escaped) = (false, false, false);
    for c in command.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' if !single => escaped = true,
            '"' if !single => double = !double,
            '\'' if !double => single = !single,
            '\n' | '\r' | '\u{2028}' | '\u{2029}' | '\u{85}' if !single && !double => return true,
            '`' if !single => return true,
            _ => {}
        }
    }
    false
}
