//! The walk over brush's syntax tree: a command becomes [`Parsed`] levels, each holding the segments of its
//! simple commands (their words with quotes removed, expansions dropped) and, as nested levels, every
//! substitution and compound command in it. Its nesting is bounded before brush parses it at all. What the
//! walk meets that the check cannot prove inert is judged by the rules in `inert`.

use std::fmt::Write as _;

use brush_parser::ast;
use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::{ParserOptions, SourceInfo, Token};

use super::inert::{
    arithmetic_is_literal, has_glob_or_brace, is_ifs, is_one_double_quoted, name_is_inert, pieces_are_literal, shorten,
    Arg,
};
use super::{MAX_OPENERS, MAX_PAREN_DEPTH, MAX_RAW_PAREN_DEPTH};

/// Whether a token can add a level to the parser's recursion. Keywords only count as unquoted words (a
/// quoted one keeps its quotes in the token), and `&&`/`||` count because a chain of them inside `[[ … ]]`
/// becomes a nested tree.
fn is_opener(token: &Token) -> bool {
    match token {
        Token::Operator(op, _) => matches!(op.as_str(), "(" | "&&" | "||"),
        Token::Word(word, _) => matches!(
            word.as_str(),
            "{" | "[[" | "!" | "if" | "elif" | "while" | "until" | "for" | "case" | "select" | "function" | "coproc"
        ),
    }
}

/// The segments of one level of a command, and its nested levels.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    pub(super) segments: Vec<String>,
    pub(super) subshells: Vec<Parsed>,
    pub(super) has_redirects: bool,
}

/// The command could not be parsed (or nests too deeply); the parser's message is not shown to the model.
pub(super) struct Unparsable;

/// Bash, without `extglob`: non-interactive bash has it off, and with it on a `$(…)` inside `@(…)` would be
/// hidden in a glob word. Without it such a command fails to parse and is denied.
pub(super) fn parser_options() -> ParserOptions {
    ParserOptions { enable_extended_globbing: false, posix_mode: false, sh_mode: false, tilde_expansion: true }
}

/// Turns brush's syntax tree into [`Parsed`] levels.
pub(super) struct Walker {
    /// Openers that the rest of the command may still use; shared by all nested levels, because their
    /// recursion adds up along a chain of substitutions.
    openers_left: usize,
    /// The first construct found that the check cannot prove inert, worded for the model (see `unverifiable`).
    pub(super) unverifiable: Option<String>,
}

impl Walker {
    pub(super) fn new() -> Self {
        Self { openers_left: MAX_OPENERS, unverifiable: None }
    }

    /// Records a construct the check cannot verify: `what` names it (with its text), `fix` says what to
    /// write instead. Only the first is kept, so the model fixes the command from left to right.
    pub(super) fn unverifiable(&mut self, what: &str, fix: &str) {
        if self.unverifiable.is_none() {
            self.unverifiable = Some(format!("Command uses {what}, which the permission check cannot verify; {fix}."));
        }
    }
    pub(super) fn program(&mut self, text: &str) -> Result<Parsed, Unparsable> {
        // brush-parser 0.3 loops forever, allocating, when the input ends while a here-document with an empty
        // delimiter (`cat <<'' `) is pending. Such a document ends at the first empty line, so two trailing
        // newlines always end it; they change nothing else, as trailing newlines end a command anyway.
        let text = format!("{text}\n\n");
        // brush's word parser also backtracks over `(` runs inside words (`${X:-'$(h((((…`), where the token
        // depth below does not see them: bound the raw depth too, quotes or not. No real command nests
        // parentheses this deep, even in quoted text.
        // Counted since the nearest substitution (`$(`, `<(`, `>(`), which starts a parse of its own and has
        // its own bound (`MAX_DOLLARS`): each open `(` records the run of bare ones it ends.
        let (mut open, mut before) = (Vec::<usize>::new(), ' ');
        for c in text.chars() {
            match c {
                '(' if matches!(before, '$' | '<' | '>') => open.push(0),
                '(' => {
                    let run = open.last().copied().unwrap_or(0) + 1;
                    if run > MAX_RAW_PAREN_DEPTH {
                        return Err(Unparsable);
                    }
                    open.push(run);
                }
                ')' => {
                    open.pop();
                }
                _ => {}
            }
            before = c;
        }
        let options = parser_options();
        let tokens =
            brush_parser::uncached_tokenize_str(&text, &options.tokenizer_options()).map_err(|_| Unparsable)?;
        let mut depth = 0usize;
        for token in &tokens {
            match token {
                Token::Operator(op, _) if op == "(" => depth += 1,
                Token::Operator(op, _) if op == ")" => depth = depth.saturating_sub(1),
                Token::Operator(..) | Token::Word(..) => {}
            }
            if depth > MAX_PAREN_DEPTH {
                return Err(Unparsable);
            }
        }
        // `( (` with space between is two subshells to bash, but brush reads any two `(` in a row as the
        // arithmetic command `((`, whose text the rules never see: `( ( 2to3 -w . ) )` looked like arithmetic
        // over numbers. Only `((` written together is arithmetic to both. Inside `[[ … ]]` parentheses group.
        let mut in_test = false;
        let spaced_parens = tokens.windows(2).any(|pair| match (&pair[0], &pair[1]) {
            (Token::Operator(first, at), Token::Operator(second, next)) => {
                !in_test && first == "(" && second == "(" && at.end.index != next.start.index
            }
            (Token::Word(word, _), _) => {
                in_test = match word.as_str() {
                    "[[" => true,
                    "]]" => false,
                    _ => in_test,
                };
                false
            }
            (Token::Operator(..), _) => false,
        });
        if spaced_parens {
            self.unverifiable(
                "nested subshells opened with `( (`, which the parser reads as arithmetic",
                "write a single pair of parentheses, or put a command between them",
            );
        }
        let openers = tokens.iter().filter(|token| is_opener(token)).count();
        self.openers_left = self.openers_left.checked_sub(openers).ok_or(Unparsable)?;
        let program = brush_parser::parse_tokens(&tokens, &options, &SourceInfo::default()).map_err(|_| Unparsable)?;
        let mut out = Parsed::default();
        for list in &program.complete_commands {
            self.list(&mut out, list)?;
        }
        Ok(out)
    }

    /// Adds every command of a list to `out`. Separators (`;`, `&`, `&&`, `||`, `|`, newline) only end
    /// segments, so they need no handling beyond visiting each command.
    fn list(&mut self, out: &mut Parsed, list: &ast::CompoundList) -> Result<(), Unparsable> {
        for ast::CompoundListItem(and_or, _separator) in &list.0 {
            for (_operator, pipeline) in and_or {
                // `!` and `time` are not part of any segment: `! rm -rf /` must still meet a `rm *` rule.
                for command in &pipeline.seq {
                    self.command(out, command)?;
                }
            }
        }
        Ok(())
    }

    fn command(&mut self, out: &mut Parsed, command: &ast::Command) -> Result<(), Unparsable> {
        match command {
            ast::Command::Simple(simple) => {
                let mut words = Vec::new();
                let mut name = None;
                if let Some(word) = &simple.word_or_name {
                    self.command_name(&word.value)?;
                    name = Some(self.word(out, &word.value)?);
                }
                for item in simple.prefix.iter().flat_map(|prefix| &prefix.0) {
                    if let ast::CommandPrefixOrSuffixItem::AssignmentWord(assignment, _raw) = item {
                        // `IFS= read -r line` only changes how that `read` splits its input.
                        if !(is_ifs(assignment) && name.as_deref() == Some("read")) {
                            self.assigned_name(assignment);
                        }
                    }
                    self.item(out, &mut words, item)?;
                }
                words.extend(name.clone());
                let mut args = Vec::new();
                for item in simple.suffix.iter().flat_map(|suffix| &suffix.0) {
                    match item {
                        ast::CommandPrefixOrSuffixItem::Word(word) => {
                            let (text, literal) = self.word_info(out, &word.value)?;
                            let globbing = has_glob_or_brace(&word.value);
                            let splits = (!literal || globbing) && !is_one_double_quoted(&word.value);
                            words.push(text.clone());
                            args.push(Arg { text, literal: literal && !globbing, splits, assignment: None });
                        }
                        ast::CommandPrefixOrSuffixItem::AssignmentWord(assignment, _raw) => {
                            let text = self.assignment(out, assignment)?;
                            words.push(text.clone());
                            args.push(Arg { text, literal: true, splits: false, assignment: Some(assignment) });
                        }
                        ast::CommandPrefixOrSuffixItem::IoRedirect(_)
                        | ast::CommandPrefixOrSuffixItem::ProcessSubstitution(..) => {
                            self.item(out, &mut words, item)?;
                        }
                    }
                }
                if let Some(name) = &name {
                    self.builtin(name, &args);
                }
                // Cline keeps a segment whose words all expanded to nothing (`$FOO` is the segment ``).
                if !words.is_empty() {
                    out.segments.push(words.join(" "));
                }
            }
            ast::Command::Compound(compound, redirects) => {
                let mut inner = self.compound(compound)?;
                if let Some(redirects) = redirects {
                    self.redirect_list(&mut inner, redirects)?;
                }
                out.subshells.push(inner);
            }
            ast::Command::Function(function) => {
                // A function can take the name of an allowed command (or builtin) and be run by anything
                // that names it, so what a later word runs is no longer what the segment says.
                self.unverifiable(
                    &format!("a function definition `{}`", shorten(&function.fname.value)),
                    "run the commands directly instead of defining a function",
                );
                let ast::FunctionBody(body, redirects) = &function.body;
                let mut inner = self.compound(body)?;
                if let Some(redirects) = redirects {
                    self.redirect_list(&mut inner, redirects)?;
                }
                out.subshells.push(inner);
            }
            ast::Command::ExtendedTest(test) => {
                let mut text = String::from("[[ ");
                self.test(out, &mut text, &test.expr)?;
                text.push_str(" ]]");
                out.segments.push(text);
            }
        }
        Ok(())
    }

    /// A compound command becomes one nested level holding the commands of all its lists. Words that are
    /// not commands (loop values, `case` subjects and patterns, arithmetic) contribute only the
    /// substitutions inside them.
    fn compound(&mut self, compound: &ast::CompoundCommand) -> Result<Parsed, Unparsable> {
        let mut inner = Parsed::default();
        match compound {
            ast::CompoundCommand::Arithmetic(arithmetic) => {
                self.arithmetic(&arithmetic.expr.value, "((", "))");
                self.text_substitutions(&mut inner, &arithmetic.expr.value)?
            }
            ast::CompoundCommand::ArithmeticForClause(clause) => {
                for expr in [&clause.initializer, &clause.condition, &clause.updater].into_iter().flatten() {
                    self.arithmetic(&expr.value, "for ((", "))");
                    self.text_substitutions(&mut inner, &expr.value)?;
                }
                self.list(&mut inner, &clause.body.list)?;
            }
            ast::CompoundCommand::BraceGroup(group) => self.list(&mut inner, &group.list)?,
            ast::CompoundCommand::Subshell(subshell) => self.list(&mut inner, &subshell.list)?,
            ast::CompoundCommand::ForClause(clause) => {
                self.assigned(&clause.variable_name, "for");
                for value in clause.values.iter().flatten() {
                    self.word(&mut inner, &value.value)?;
                }
                self.list(&mut inner, &clause.body.list)?;
            }
            ast::CompoundCommand::CaseClause(clause) => {
                self.word(&mut inner, &clause.value.value)?;
                for item in &clause.cases {
                    for pattern in &item.patterns {
                        self.word(&mut inner, &pattern.value)?;
                    }
                    if let Some(list) = &item.cmd {
                        self.list(&mut inner, list)?;
                    }
                }
            }
            ast::CompoundCommand::IfClause(clause) => {
                self.list(&mut inner, &clause.condition)?;
                self.list(&mut inner, &clause.then)?;
                for branch in clause.elses.iter().flatten() {
                    if let Some(condition) = &branch.condition {
                        self.list(&mut inner, condition)?;
                    }
                    self.list(&mut inner, &branch.body)?;
                }
            }
            ast::CompoundCommand::WhileClause(clause) | ast::CompoundCommand::UntilClause(clause) => {
                let ast::WhileOrUntilClauseCommand(condition, body, _) = clause;
                self.list(&mut inner, condition)?;
                self.list(&mut inner, &body.list)?;
            }
        }
        Ok(inner)
    }

    fn item(
        &mut self,
        out: &mut Parsed,
        words: &mut Vec<String>,
        item: &ast::CommandPrefixOrSuffixItem,
    ) -> Result<(), Unparsable> {
        match item {
            ast::CommandPrefixOrSuffixItem::Word(word) => words.push(self.word(out, &word.value)?),
            ast::CommandPrefixOrSuffixItem::AssignmentWord(assignment, _raw) => {
                words.push(self.assignment(out, assignment)?);
            }
            ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => self.redirect(out, words, redirect)?,
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_kind, subshell) => {
                // Cline counts `<(` and `>(` among its redirect operators.
                out.has_redirects = true;
                words.push(self.process_substitution(out, subshell)?);
            }
        }
        Ok(())
    }

    fn assignment(&mut self, out: &mut Parsed, assignment: &ast::Assignment) -> Result<String, Unparsable> {
        let mut text = match &assignment.name {
            ast::AssignmentName::VariableName(name) => name.clone(),
            ast::AssignmentName::ArrayElementName(name, index) => {
                self.subscript(name, index);
                self.text_substitutions(out, index)?;
                format!("{name}[{index}]")
            }
        };
        text.push_str(if assignment.append { "+=" } else { "=" });
        match &assignment.value {
            ast::AssignmentValue::Scalar(value) => text.push_str(&self.word(out, &value.value)?),
            ast::AssignmentValue::Array(elements) => {
                let mut rendered = Vec::with_capacity(elements.len());
                for (index, value) in elements {
                    let value = self.word(out, &value.value)?;
                    rendered.push(match index {
                        Some(index) => {
                            let name = match &assignment.name {
                                ast::AssignmentName::VariableName(name)
                                | ast::AssignmentName::ArrayElementName(name, _) => name,
                            };
                            self.subscript(name, &index.value);
                            format!("[{}]={value}", self.word(out, &index.value)?)
                        }
                        None => value,
                    });
                }
                let _ = write!(text, "({})", rendered.join(" "));
            }
        }
        Ok(text)
    }

    /// A redirect marks its level and leaves its file descriptor and target as words of the segment, as
    /// shell-quote's tokens left them for Cline.
    fn redirect(
        &mut self,
        out: &mut Parsed,
        words: &mut Vec<String>,
        redirect: &ast::IoRedirect,
    ) -> Result<(), Unparsable> {
        out.has_redirects = true;
        match redirect {
            ast::IoRedirect::File(fd, _kind, target) => {
                words.extend(fd.map(|fd| fd.to_string()));
                match target {
                    ast::IoFileRedirectTarget::Filename(word) | ast::IoFileRedirectTarget::Duplicate(word) => {
                        words.push(self.word(out, &word.value)?);
                    }
                    ast::IoFileRedirectTarget::Fd(fd) => words.push(fd.to_string()),
                    ast::IoFileRedirectTarget::ProcessSubstitution(_kind, subshell) => {
                        words.push(self.process_substitution(out, subshell)?);
                    }
                }
            }
            ast::IoRedirect::HereDocument(fd, here) => {
                words.extend(fd.map(|fd| fd.to_string()));
                // The body is data, not words of the command, but an unquoted delimiter makes it expand.
                if here.requires_expansion {
                    self.text_substitutions(out, &here.doc.value)?;
                }
            }
            ast::IoRedirect::HereString(fd, word) => {
                words.extend(fd.map(|fd| fd.to_string()));
                words.push(self.word(out, &word.value)?);
            }
            ast::IoRedirect::OutputAndError(word, _append) => words.push(self.word(out, &word.value)?),
        }
        Ok(())
    }

    /// Redirects of a compound command or function body: there is no segment to hold their words, so only
    /// the flag and the substitutions in their targets count.
    fn redirect_list(&mut self, out: &mut Parsed, redirects: &ast::RedirectList) -> Result<(), Unparsable> {
        let mut discarded = Vec::new();
        for redirect in &redirects.0 {
            self.redirect(out, &mut discarded, redirect)?;
        }
        Ok(())
    }

    fn process_substitution(
        &mut self,
        out: &mut Parsed,
        subshell: &ast::SubshellCommand,
    ) -> Result<String, Unparsable> {
        let mut inner = Parsed::default();
        self.list(&mut inner, &subshell.list)?;
        out.subshells.push(inner);
        Ok("$".to_owned())
    }

    fn test(&mut self, out: &mut Parsed, text: &mut String, expr: &ast::ExtendedTestExpr) -> Result<(), Unparsable> {
        match expr {
            ast::ExtendedTestExpr::And(left, right) | ast::ExtendedTestExpr::Or(left, right) => {
                let operator = if matches!(expr, ast::ExtendedTestExpr::And(..)) { "&&" } else { "||" };
                self.test(out, text, left)?;
                let _ = write!(text, " {operator} ");
                self.test(out, text, right)?;
            }
            ast::ExtendedTestExpr::Not(inner) => {
                text.push_str("! ");
                self.test(out, text, inner)?;
            }
            ast::ExtendedTestExpr::Parenthesized(inner) => {
                text.push_str("( ");
                self.test(out, text, inner)?;
                text.push_str(" )");
            }
            ast::ExtendedTestExpr::UnaryTest(predicate, word) => {
                let (operand, literal) = self.word_info(out, &word.value)?;
                if matches!(
                    predicate,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                        | ast::UnaryPredicate::ShellVariableIsSetAndNameRef
                ) && !(literal && name_is_inert(&operand))
                {
                    self.unverifiable(
                        &format!(
                            "`[[ {predicate} {} ]]` (it evaluates the subscript of the name it is given)",
                            shorten(&word.value)
                        ),
                        "test a plain variable name, written literally",
                    );
                }
                let _ = write!(text, "{predicate} {operand}");
            }
            ast::ExtendedTestExpr::BinaryTest(predicate, left, right) => {
                let (left_text, left_literal) = self.word_info(out, &left.value)?;
                let (right_text, right_literal) = self.word_info(out, &right.value)?;
                let arithmetic = matches!(
                    predicate,
                    ast::BinaryPredicate::ArithmeticEqualTo
                        | ast::BinaryPredicate::ArithmeticNotEqualTo
                        | ast::BinaryPredicate::ArithmeticLessThan
                        | ast::BinaryPredicate::ArithmeticLessThanOrEqualTo
                        | ast::BinaryPredicate::ArithmeticGreaterThan
                        | ast::BinaryPredicate::ArithmeticGreaterThanOrEqualTo
                );
                let inert = |text: &str, literal: bool| literal && arithmetic_is_literal(text);
                if arithmetic && !(inert(&left_text, left_literal) && inert(&right_text, right_literal)) {
                    self.unverifiable(
                        &format!(
                            "the arithmetic comparison `[[ {} {predicate} {} ]]` (it evaluates names and expanded \
                             values as arithmetic, where an array subscript runs commands)",
                            shorten(&left.value),
                            shorten(&right.value)
                        ),
                        "compare literal numbers, or compare strings with `==`",
                    );
                }
                let _ = write!(text, "{left_text} {predicate} {right_text}");
            }
        }
        Ok(())
    }

    /// A word's text after quote removal, with every substitution in it added to `out` as a subshell.
    fn word(&mut self, out: &mut Parsed, raw: &str) -> Result<String, Unparsable> {
        self.word_info(out, raw).map(|(text, _literal)| text)
    }

    /// [`Walker::word`], and whether the word is literal: no expansion of any kind (a tilde included), so the
    /// text is exactly the word bash passes on (globs and braces aside: see [`has_glob_or_brace`]).
    fn word_info(&mut self, out: &mut Parsed, raw: &str) -> Result<(String, bool), Unparsable> {
        let pieces = word::parse(raw, &parser_options()).map_err(|_| Unparsable)?;
        let mut text = String::new();
        self.pieces(out, &mut text, raw, &pieces)?;
        Ok((text, pieces_are_literal(&pieces)))
    }

    fn pieces(
        &mut self,
        out: &mut Parsed,
        text: &mut String,
        raw: &str,
        pieces: &[WordPieceWithSource],
    ) -> Result<(), Unparsable> {
        // bash still evaluates the obsolete `$[…]` as arithmetic; brush reads it as the texts `$` and `[…]`.
        let obsolete_arithmetic = pieces.windows(2).any(|pair| match (&pair[0].piece, &pair[1].piece) {
            (WordPiece::Text(dollar), WordPiece::Text(bracket)) => dollar.ends_with('$') && bracket.starts_with('['),
            _ => false,
        }) || pieces
            .iter()
            .any(|piece| matches!(&piece.piece, WordPiece::Text(text) if text.contains("$[")));
        if obsolete_arithmetic {
            self.unverifiable(
                &format!("the obsolete arithmetic `$[…]` in `{}`", shorten(raw)),
                "write literal numbers, or use `$((…))` over literal numbers",
            );
        }
        for piece in pieces {
            match &piece.piece {
                WordPiece::Text(s) | WordPiece::SingleQuotedText(s) | WordPiece::AnsiCQuotedText(s) => text.push_str(s),
                WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(out, text, raw, inner)?;
                }
                WordPiece::TildePrefix(user) => {
                    // brush-parser takes everything up to the next `/`, `:` or `;` as the tilde prefix, quotes
                    // and substitutions included, so `~$(id)` hid `$(id)` (which bash runs). Only a prefix that
                    // is a user name (or `+`, `-`, a directory-stack index) is known to be inert.
                    if !user.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+')) {
                        self.unverifiable(
                            &format!("the tilde prefix `~{}` (not a plain user name)", shorten(user)),
                            "write the path without `~`, or quote the `~`",
                        );
                    }
                    text.push('~');
                    text.push_str(user);
                }
                WordPiece::EscapeSequence(s) => text.push_str(s.strip_prefix('\\').unwrap_or(s)),
                WordPiece::ParameterExpansion(expr) => {
                    // Expands to nothing, as in Cline, but `${x:-$(cmd)}` and `${a[$(cmd)]}` still run `cmd`.
                    let source = raw.get(piece.start_index..piece.end_index).ok_or(Unparsable)?;
                    self.parameter(expr, source);
                    self.text_substitutions(out, source.strip_prefix('$').unwrap_or(source))?;
                }
                WordPiece::CommandSubstitution(command) | WordPiece::BackquotedCommandSubstitution(command) => {
                    let inner = self.program(command)?;
                    out.subshells.push(inner);
                    text.push('$');
                }
                WordPiece::ArithmeticExpression(expr) => {
                    self.arithmetic(&expr.value, "$((", "))");
                    self.text_substitutions(out, &expr.value)?;
                    text.push('$');
                }
            }
        }
        Ok(())
    }

    /// Finds the substitutions in text that bash expands but that is not a word of its own (arithmetic,
    /// parameter operands, here-document bodies), by reading it as the inside of double quotes. Double
    /// quotes in the text become single quotes, which are literal there, so they cannot end it early.
    fn text_substitutions(&mut self, out: &mut Parsed, text: &str) -> Result<(), Unparsable> {
        if !text.contains(['$', '`']) {
            return Ok(());
        }
        let quoted = format!("\"{}\"", text.replace('"', "'"));
        self.word(out, &quoted).map(drop)
    }
}
