//! What the permission check refuses as `unverifiable`: the constructs of a command that the rules allow
//! but that bash could make run something the segments do not show. The walk calls these checks on the
//! words it meets: the command name, parameter operators, arithmetic and subscripts, assignments to
//! special variables, and the builtins that run code or assign through the names they are given.

use brush_parser::ast;
use brush_parser::word::{self, WordPiece, WordPieceWithSource};

use super::walk::{parser_options, Unparsable, Walker};

/// One argument of a simple command, as the builtin rules need it.
pub(super) struct Arg<'a> {
    /// The text after quote removal, expansions dropped (as in the segment).
    pub(super) text: String,
    /// No expansion of any kind in it, nor unquoted glob or brace characters, so `text` is exactly the one
    /// word the builtin receives.
    pub(super) literal: bool,
    /// It may become several words, or none (an unquoted expansion, a glob, a brace expansion): only a word
    /// that is literal or one double-quoted whole cannot.
    pub(super) splits: bool,
    /// The parsed assignment, when brush read the word as one (`declare x=1`).
    pub(super) assignment: Option<&'a ast::Assignment>,
}

impl Walker {
    /// The command word decides what runs, so it must be written out: an expansion, a glob or a brace
    /// expansion there makes the program something the segment text does not name (`${X:-id }echo hi` is the
    /// segment `echo hi` but runs `id`). ANSI-C quoting is refused too: brush keeps its escapes undecoded, so
    /// `$'\x65val'` would not be recognised as `eval`.
    pub(super) fn command_name(&mut self, raw: &str) -> Result<(), Unparsable> {
        let pieces = word::parse(raw, &parser_options()).map_err(|_| Unparsable)?;
        let expanded = !pieces_are_literal_but_tildes(&pieces);
        let globbing = raw != "["
            && pieces
                .iter()
                .any(|piece| matches!(&piece.piece, WordPiece::Text(text) if text.contains(['*', '?', '[', '{'])));
        let ansi_c = pieces.iter().any(|piece| matches!(piece.piece, WordPiece::AnsiCQuotedText(_)));
        if expanded {
            self.unverifiable(
                &format!("a command name built by expansion `{}`", shorten(raw)),
                "write the command name literally",
            );
        } else if globbing {
            self.unverifiable(
                &format!("a command name with glob or brace characters `{}`", shorten(raw)),
                "write the command name literally, or quote those characters",
            );
        } else if ansi_c {
            self.unverifiable(
                &format!("a command name in ANSI-C quotes `{}`", shorten(raw)),
                "write the command name literally",
            );
        }
        Ok(())
    }

    /// A parameter expansion is inert when it only reads: a plain `$X`/`${X}`, a length, a default or
    /// alternative value that is not assigned, pattern removal and replacement, case changes, a substring at
    /// literal offsets. Everything that assigns, evaluates a value as code or arithmetic, or looks a name up
    /// indirectly is refused. The operands' own substitutions are found by `text_substitutions`.
    pub(super) fn parameter(&mut self, expr: &word::ParameterExpr, source: &str) {
        use word::{ParameterExpr as P, ParameterTransformOp as T};
        let shown = shorten(source);
        let (parameter, indirect) = match expr {
            P::Parameter { parameter, indirect }
            | P::UseDefaultValues { parameter, indirect, .. }
            | P::AssignDefaultValues { parameter, indirect, .. }
            | P::IndicateErrorIfNullOrUnset { parameter, indirect, .. }
            | P::UseAlternativeValue { parameter, indirect, .. }
            | P::ParameterLength { parameter, indirect }
            | P::RemoveSmallestSuffixPattern { parameter, indirect, .. }
            | P::RemoveLargestSuffixPattern { parameter, indirect, .. }
            | P::RemoveSmallestPrefixPattern { parameter, indirect, .. }
            | P::RemoveLargestPrefixPattern { parameter, indirect, .. }
            | P::Substring { parameter, indirect, .. }
            | P::Transform { parameter, indirect, .. }
            | P::UppercaseFirstChar { parameter, indirect, .. }
            | P::UppercasePattern { parameter, indirect, .. }
            | P::LowercaseFirstChar { parameter, indirect, .. }
            | P::LowercasePattern { parameter, indirect, .. }
            | P::ReplaceSubstring { parameter, indirect, .. } => (parameter, *indirect),
            P::VariableNames { .. } | P::MemberKeys { .. } => {
                self.unverifiable(&format!("indirect expansion `{shown}`"), "name the variables directly");
                return;
            }
        };
        if indirect {
            // The value names another parameter, and a name with a subscript evaluates it (`a[$(id)]` runs id).
            self.unverifiable(&format!("indirect expansion `{shown}`"), "name the variable directly");
        }
        if let word::Parameter::NamedWithIndex { name, index } = parameter {
            self.subscript(name, index);
        }
        match expr {
            P::AssignDefaultValues { .. } => {
                self.unverifiable(&format!("parameter assignment `{shown}`"), "write the value literally");
            }
            P::Transform { op, .. } => match op {
                T::PromptExpand
                | T::ExpandEscapeSequences
                | T::ToAssignmentLogic
                | T::ToAttributeFlags
                | T::PossiblyQuoteWithArraysExpanded { .. } => {
                    self.unverifiable(
                        &format!("the parameter transformation `{shown}`"),
                        "use the plain value `${NAME}`",
                    );
                }
                T::CapitalizeInitial | T::Quoted | T::ToLowerCase | T::ToUpperCase => {}
            },
            P::Substring { offset, length, .. } => {
                for expr in std::iter::once(offset).chain(length) {
                    if !arithmetic_is_literal(&expr.value) {
                        self.unverifiable(
                            &format!(
                                "the substring `{shown}` (its offset or length is arithmetic over names or expansions)"
                            ),
                            "write the offset and length as literal numbers",
                        );
                    }
                }
            }
            P::Parameter { .. }
            | P::UseDefaultValues { .. }
            | P::IndicateErrorIfNullOrUnset { .. }
            | P::UseAlternativeValue { .. }
            | P::ParameterLength { .. }
            | P::RemoveSmallestSuffixPattern { .. }
            | P::RemoveLargestSuffixPattern { .. }
            | P::RemoveSmallestPrefixPattern { .. }
            | P::RemoveLargestPrefixPattern { .. }
            | P::UppercaseFirstChar { .. }
            | P::UppercasePattern { .. }
            | P::LowercaseFirstChar { .. }
            | P::LowercasePattern { .. }
            | P::ReplaceSubstring { .. }
            | P::VariableNames { .. }
            | P::MemberKeys { .. } => {}
        }
    }

    /// Arithmetic evaluates every name it meets, and the value of a name as arithmetic again, where an array
    /// subscript runs its command substitutions (`X='a[$(id)]'; echo $((X))` runs `id`); the output of a
    /// `$(…)` is evaluated the same way. So only numbers and operators are inert.
    pub(super) fn arithmetic(&mut self, expr: &str, open: &str, close: &str) {
        if !arithmetic_is_literal(expr) {
            self.unverifiable(
                &format!("arithmetic `{open}{}{close}` over names or expansions", shorten(expr)),
                "write literal numbers, or compute the value in a separate command",
            );
        }
    }

    /// An indexed array's subscript is arithmetic (see `arithmetic`).
    pub(super) fn subscript(&mut self, name: &str, index: &str) {
        if !arithmetic_is_literal(index) {
            self.unverifiable(
                &format!("the array subscript `{}[{}]` (evaluated as arithmetic)", shorten(name), shorten(index)),
                "use a literal number as the subscript",
            );
        }
    }

    /// A prefix or standalone assignment: the subscript is checked where it is rendered; here the name.
    pub(super) fn assigned_name(&mut self, assignment: &ast::Assignment) {
        if let ast::AssignmentName::VariableName(name) = &assignment.name {
            self.assigned(name, "=");
        }
    }

    /// Variables that change what later commands run or how they are parsed: the search path, word splitting,
    /// files bash sources, prompt strings bash expands (`PS4` under `set -x`), shell options, the dynamic
    /// loader, and bash's own tables (`BASH_ALIASES`, `BASH_CMDS`).
    pub(super) fn assigned(&mut self, name: &str, how: &str) {
        if is_special_variable(name) {
            self.unverifiable(
                &format!("an assignment to `{name}` (by `{how}`; it changes how the shell runs later commands)"),
                "leave that variable as it is",
            );
        }
    }

    /// Builtins that run text as code, change what a name runs, or assign through names they are given.
    pub(super) fn builtin(&mut self, name: &str, args: &[Arg<'_>]) {
        match name {
            "eval" | "exec" | "source" | "." | "trap" | "command" | "builtin" | "alias" | "enable" | "hash" | "fc"
            | "compgen" | "complete" | "compopt" | "bind" | "let" | "mapfile" | "readarray" | "shopt" | "coproc"
            | "select" => {
                self.unverifiable(
                    &format!("the `{name}` builtin (it can run code or change what a command name runs)"),
                    "run the commands directly",
                );
            }
            "declare" | "typeset" | "local" | "readonly" | "export" => self.declaration(name, args),
            "printf" => {
                // `printf -v NAME` assigns; only the first argument can be that option.
                let Some(first) = args.first() else { return };
                let target = if !first.literal {
                    Some(None)
                } else if first.text == "-v" {
                    Some(args.get(1))
                } else if let Some(rest) = first.text.strip_prefix("-v") {
                    self.assigned_target(name, rest, true);
                    None
                } else {
                    None
                };
                if let Some(target) = target {
                    match target {
                        Some(arg) => self.assigned_target(name, &arg.text, arg.literal),
                        None => self.assigned_target(name, "", false),
                    }
                }
            }
            "read" => self.read(args),
            "set" => {
                // `-k` puts every `NAME=value` argument of later commands into their environment, where the
                // segment shows it as an argument; `-o posix` changes how later substitutions are parsed.
                let mut rest = args.iter();
                while let Some(arg) = rest.next() {
                    if arg.text == "--" || !(arg.text.starts_with('-') || arg.text.starts_with('+') || !arg.literal) {
                        break;
                    }
                    let letters = arg.text.get(1..).unwrap_or_default();
                    let named = if letters.contains('o') { rest.next() } else { None };
                    let keyword = letters.contains('k');
                    let bad_name = named.is_some_and(|n| !n.literal || matches!(n.text.as_str(), "keyword" | "posix"));
                    if !arg.literal || keyword || bad_name {
                        self.unverifiable(
                            &format!("`set {}` (it changes how later commands are read or run)", shorten(&arg.text)),
                            "leave the shell's options as they are",
                        );
                    }
                }
            }
            "getopts" => {
                if let Some(arg) = args.get(1) {
                    self.assigned_target(name, &arg.text, arg.literal);
                }
            }
            "unset" => {
                for arg in args {
                    if !(arg.literal && (arg.text.starts_with('-') || is_identifier(&arg.text))) {
                        self.assigned_target(name, &arg.text, false);
                    }
                }
            }
            "wait" | "test" | "[" => {
                // `wait -p NAME` assigns, `test -v NAME` evaluates NAME's subscript.
                // An argument that is not literal could turn out to be that option, so whatever follows it must
                // be inert too.
                let option = if name == "wait" { "-p" } else { "-v" };
                for pair in args.windows(2) {
                    let could_be_option = !pair[0].literal
                        || pair[0].text == option
                        || (name == "wait" && pair[0].text.starts_with('-') && pair[0].text.contains('p'))
                        || (name != "wait" && pair[0].text == "-R");
                    if could_be_option && (!pair[1].literal || pair[1].text.contains('[')) {
                        self.unverifiable(
                            &format!(
                                "`{name} {option}` with the name `{}` (its subscript would be evaluated)",
                                shorten(&pair[1].text)
                            ),
                            "give it a plain variable name, written literally",
                        );
                    }
                }
                // An argument that may split into several words could hold the option and its name together.
                if args.iter().any(|arg| arg.splits) {
                    self.unverifiable(
                        &format!("`{name}` with an unquoted argument that may expand to several words"),
                        "quote the argument, or write it literally",
                    );
                }
            }
            _ => {}
        }
    }

    /// `declare` and its kin assign through their arguments at run time, quoted or not, so each must be a
    /// literal option without attributes that evaluate (`-n` namerefs, `-i` integers, `-a`/`-A` arrays,
    /// whose compound values carry subscripts) or a plain, unspecial name with an optional value.
    fn declaration(&mut self, name: &str, args: &[Arg<'_>]) {
        for arg in args {
            if let Some(assignment) = arg.assignment {
                match &assignment.name {
                    ast::AssignmentName::VariableName(variable) => self.assigned(variable, name),
                    // The subscript was checked when the word was rendered.
                    ast::AssignmentName::ArrayElementName(..) => {}
                }
                if matches!(assignment.value, ast::AssignmentValue::Array(_)) {
                    self.unverifiable(
                        &format!("`{name}` with the array value `{}`", shorten(&arg.text)),
                        "assign the elements with literal subscripts in separate words",
                    );
                }
                continue;
            }
            if !arg.literal {
                self.unverifiable(
                    &format!("`{name}` with the expanded argument `{}`", shorten(&arg.text)),
                    "write the names and options literally",
                );
                continue;
            }
            if let Some(flags) = arg.text.strip_prefix(['-', '+']) {
                if flags.chars().any(|c| !matches!(c, 'r' | 'x' | 'g' | 'p' | 'f' | 'F' | 't' | 'l' | 'u')) {
                    self.unverifiable(
                        &format!(
                            "`{name} {}` (these attributes make assignments evaluate code or arithmetic)",
                            shorten(&arg.text)
                        ),
                        "declare plain variables (`-r`, `-x` and `-g` are fine)",
                    );
                }
                continue;
            }
            let variable = arg.text.split_once('=').map_or(arg.text.as_str(), |(left, _)| left);
            let variable = variable.strip_suffix('+').unwrap_or(variable);
            self.assigned_target(name, variable, true);
        }
    }

    /// `read`: `-a` fills an array, and each name must be plain (`read 'a[$(id)]'` runs `id`).
    fn read(&mut self, args: &[Arg<'_>]) {
        let mut rest = args.iter();
        let mut options = true;
        while let Some(arg) = rest.next() {
            if !arg.literal {
                self.assigned_target("read", &arg.text, false);
                continue;
            }
            if options && arg.text == "--" {
                options = false;
                continue;
            }
            match arg.text.strip_prefix('-').filter(|_| options) {
                Some(flags) if !flags.is_empty() => {
                    // Options with a value take the rest of the word, or else the next word.
                    if let Some(at) = flags.find(['a', 'd', 'i', 'n', 'N', 'p', 't', 'u']) {
                        if flags[at..].starts_with('a') {
                            self.unverifiable("`read -a` (it reads into an array)", "read into plain variables");
                        }
                        if at + 1 == flags.len() {
                            rest.next();
                        }
                    }
                }
                _ => {
                    options = false;
                    self.assigned_target("read", &arg.text, true);
                }
            }
        }
    }

    /// A name a builtin assigns to: it must be written literally, be a plain identifier (a subscript there is
    /// evaluated) and not a special variable.
    fn assigned_target(&mut self, builtin: &str, name: &str, literal: bool) {
        if !literal || !is_identifier(name) {
            self.unverifiable(
                &format!("`{builtin}` assigning to `{}` (not a plain variable name written literally)", shorten(name)),
                "assign to a plain variable name",
            );
        } else {
            self.assigned(name, builtin);
        }
    }
}

/// At most 60 characters of a construct's text, for a denial message.
pub(super) fn shorten(text: &str) -> String {
    if text.chars().count() <= 60 {
        text.to_owned()
    } else {
        text.chars().take(57).chain("...".chars()).collect()
    }
}

pub(super) fn is_ifs(assignment: &ast::Assignment) -> bool {
    matches!(&assignment.name, ast::AssignmentName::VariableName(name) if name == "IFS")
}

/// Whether a piece expands (parameters, substitutions, arithmetic, a tilde).
fn is_expansion(piece: &WordPiece) -> bool {
    match piece {
        WordPiece::Text(_)
        | WordPiece::SingleQuotedText(_)
        | WordPiece::AnsiCQuotedText(_)
        | WordPiece::EscapeSequence(_) => false,
        WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
            inner.iter().any(|piece| is_expansion(&piece.piece))
        }
        WordPiece::TildePrefix(_)
        | WordPiece::ParameterExpansion(_)
        | WordPiece::CommandSubstitution(_)
        | WordPiece::BackquotedCommandSubstitution(_)
        | WordPiece::ArithmeticExpression(_) => true,
    }
}

/// Whether a word has unquoted glob or brace characters. Brace and filename expansion can turn an argument
/// into options: `printf {-v,'a[$(id)]',x}`, or `printf *` in a directory with files named `-v` and
/// `a[$(id)]`, is `printf -v 'a[$(id)]' x` to bash.
pub(super) fn has_glob_or_brace(raw: &str) -> bool {
    word::parse(raw, &parser_options()).map_or(true, |pieces| {
        pieces.iter().any(|piece| matches!(&piece.piece, WordPiece::Text(text) if text.contains(['*', '?', '[', '{'])))
    })
}

/// Whether a word stays one word whatever it expands to: one double-quoted whole (`"$X"`), or one of the
/// special parameters that are always a number (`$!`, `$$`, `$#`, `$?`).
pub(super) fn is_one_double_quoted(raw: &str) -> bool {
    if matches!(raw, "$!" | "$$" | "$#" | "$?" | "${!}" | "${$}" | "${#}" | "${?}") {
        return true;
    }
    word::parse(raw, &parser_options()).is_ok_and(
        |pieces| matches!(pieces.as_slice(), [one] if matches!(one.piece, WordPiece::DoubleQuotedSequence(_))),
    )
}

pub(super) fn pieces_are_literal(pieces: &[WordPieceWithSource]) -> bool {
    !pieces.iter().any(|piece| is_expansion(&piece.piece))
}

/// Literal apart from a leading tilde (`~/bin/tool`), whose prefix the word walk checks.
fn pieces_are_literal_but_tildes(pieces: &[WordPieceWithSource]) -> bool {
    !pieces.iter().any(|piece| !matches!(piece.piece, WordPiece::TildePrefix(_)) && is_expansion(&piece.piece))
}

/// Arithmetic that names nothing: numbers (`42`, `0x1f`, `16#ff`, `64#@_`), operators, parentheses and
/// spaces. A `$`, a backtick, a quote, a subscript or a name make it unverifiable.
pub(super) fn arithmetic_is_literal(expr: &str) -> bool {
    let mut chars = expr.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            // A whole number, so that the text is one to bash too: `7z` is no number, and bash runs `((7z) )`
            // as nested subshells when it is not arithmetic.
            let mut token = String::from(c);
            while let Some(d) = chars.next_if(|&d| d.is_ascii_alphanumeric() || matches!(d, '_' | '#' | '@')) {
                token.push(d);
            }
            if !is_number(&token) {
                return false;
            }
        } else if !(c.is_ascii_whitespace() || "+-*/%<>=!&|^~?:,()".contains(c)) {
            return false;
        }
    }
    true
}

/// bash's integer constants: decimal, octal (`017`), hexadecimal (`0x1f`) and `base#digits` (`2#101`).
fn is_number(token: &str) -> bool {
    if let Some((base, digits)) = token.split_once('#') {
        return base.parse::<u32>().is_ok_and(|b| (2..=64).contains(&b))
            && !digits.is_empty()
            && digits.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '@' | '_'));
    }
    match token.strip_prefix("0x").or_else(|| token.strip_prefix("0X")) {
        Some(hex) => !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()),
        None => token.chars().all(|c| c.is_ascii_digit()),
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A name whose subscript, if any, is a literal number (`x`, `a[0]`, `a[@]`).
pub(super) fn name_is_inert(text: &str) -> bool {
    match text.split_once('[') {
        None => is_identifier(text),
        Some((name, rest)) => {
            is_identifier(name)
                && rest
                    .strip_suffix(']')
                    .is_some_and(|index| matches!(index, "@" | "*") || arithmetic_is_literal(index))
        }
    }
}

/// See [`Walker::assigned`]; the integer variables bash declares itself are here too.
fn is_special_variable(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "IFS",
        "PATH",
        "ENV",
        "BASH_ENV",
        "PROMPT_COMMAND",
        "PS0",
        "PS1",
        "PS2",
        "PS3",
        "PS4",
        "SHELLOPTS",
        "BASHOPTS",
        "POSIXLY_CORRECT",
        "CDPATH",
        "GLOBIGNORE",
        "EXECIGNORE",
        // Integer variables: a value assigned to them is evaluated as arithmetic (see `Walker::arithmetic`).
        "OPTIND",
        "RANDOM",
        "SRANDOM",
        "HISTCMD",
        "BASHPID",
        "SECONDS",
        "LINENO",
    ];
    NAMES.contains(&name) || name.starts_with("BASH_") || name.starts_with("LD_")
}
