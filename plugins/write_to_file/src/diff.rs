//! SEARCH/REPLACE blocks, as Cline's `constructNewFileContent` (v1) reads them: the marker forms, the partial
//! marker a stream may end with, the four matching tiers and the empty-SEARCH rules.
//!
//! The diff is read line by line. A block is a SEARCH marker, the text to find, a divider, the replacement and
//! a REPLACE marker. Each block is located when its divider arrives, in this order:
//!
//! 1. the exact text, from where the previous in-order block ended;
//! 2. line by line with surrounding whitespace ignored, from there;
//! 3. for two lines or more, the first and last lines as anchors at the same block length, from there;
//! 4. the exact text from the start of the file, which allows blocks out of file order.
//!
//! Where Cline silently loses or corrupts an edit, this module reports an error instead: a SEARCH marker
//! before the previous block's REPLACE marker (Cline drops the earlier block), two blocks whose matches
//! overlap (Cline splices the file twice), a diff whose last SEARCH never reaches its divider, and a diff
//! without any block (Cline reports success and changes nothing).

/// One located block: replace `original[start..end]` with `replacement`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// Where the match starts, in bytes of the original.
    pub start: usize,
    /// Where it ends.
    pub end: usize,
    /// The replacement text.
    pub replacement: String,
    /// The end of the diff line that completed the block, in bytes of the diff: the diff up to here is what
    /// the user has seen of this block.
    pub diff_end: usize,
}

/// Why a diff cannot be applied, with the blocks located before the failure (for progress reporting).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffError {
    /// Cline's error text.
    pub message: String,
    /// The blocks completed before the failing one.
    pub completed: Vec<Edit>,
}

const SEARCH_WORD: &str = " SEARCH";
const REPLACE_WORD: &str = " REPLACE";

/// `^[c]{3,}{word}>?$`.
fn is_marker(line: &str, c: char, word: &str) -> bool {
    let run = line.len() - line.trim_start_matches(c).len();
    if run < 3 {
        return false;
    }
    let rest = &line[run..];
    rest.strip_prefix(word).is_some_and(|tail| tail.is_empty() || tail == ">")
}

/// `------- SEARCH` or the legacy `<<<<<<< SEARCH`.
pub fn is_search_start(line: &str) -> bool {
    is_marker(line, '-', SEARCH_WORD) || is_marker(line, '<', SEARCH_WORD)
}

/// `=======`.
pub fn is_divider(line: &str) -> bool {
    line.len() >= 3 && line.bytes().all(|b| b == b'=')
}

/// `+++++++ REPLACE` or the legacy `>>>>>>> REPLACE`.
pub fn is_replace_end(line: &str) -> bool {
    is_marker(line, '+', REPLACE_WORD) || is_marker(line, '>', REPLACE_WORD)
}

/// Any of the three markers.
pub fn is_any_marker(line: &str) -> bool {
    is_search_start(line) || is_divider(line) || is_replace_end(line)
}

/// `s.trim()` as JavaScript trims.
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(crate::edit_io::is_js_space)
}

/// `s.trimEnd()` as JavaScript trims.
pub fn js_trim_end(s: &str) -> &str {
    s.trim_end_matches(crate::edit_io::is_js_space)
}

/// The original's lines and where each starts, for the line-based tiers, and where each trimmed line occurs
/// (built on first use), so a tier tries only the places of a block's rarest line instead of every line
/// from its start for every block.
struct Lines<'a> {
    lines: Vec<&'a str>,
    starts: Vec<usize>,
    trimmed: std::cell::OnceCell<std::collections::HashMap<&'a str, Vec<usize>>>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        let lines: Vec<&str> = text.split('\n').collect();
        let mut starts = Vec::with_capacity(lines.len());
        let mut at = 0;
        for line in &lines {
            starts.push(at);
            at += line.len() + 1;
        }
        Self { lines, starts, trimmed: std::cell::OnceCell::new() }
    }

    /// The lines whose trimmed text is `text`, in order.
    fn places(&self, text: &str) -> &[usize] {
        let index = self.trimmed.get_or_init(|| {
            let mut index: std::collections::HashMap<&'a str, Vec<usize>> = std::collections::HashMap::new();
            for (i, line) in self.lines.iter().enumerate() {
                index.entry(js_trim(line)).or_default().push(i);
            }
            index
        });
        index.get(text).map_or(&[], Vec::as_slice)
    }

    /// The first start in `first..=last` where `offset` lines further the trimmed line is `text`, and
    /// `fits` holds: tried only at the places of `text`.
    fn first_start(
        &self,
        text: &str,
        offset: usize,
        (first, last): (usize, usize),
        fits: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let places = self.places(text);
        let begin = places.partition_point(|&p| p < first + offset);
        places[begin..].iter().take_while(|&&p| p <= last + offset).map(|&p| p - offset).find(|&i| fits(i))
    }

    /// The first line starting at or after byte `from`.
    fn first_at(&self, from: usize) -> usize {
        self.starts.partition_point(|&start| start < from)
    }

    /// The byte range of lines `i..i + count`, each with its line break (clamped at the end of the text).
    fn span(&self, i: usize, count: usize, text_len: usize) -> (usize, usize) {
        let start = self.starts[i];
        let last = i + count - 1;
        (start, (self.starts[last] + self.lines[last].len() + 1).min(text_len))
    }
}

/// The SEARCH text's lines without the empty element its final line break leaves.
fn search_lines(search: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = search.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    lines
}

/// Tier 2: every line equal after trimming.
fn line_trimmed_match(original: &str, lines: &Lines<'_>, search: &str, from: usize) -> Option<(usize, usize)> {
    let wanted: Vec<&str> = search_lines(search).into_iter().map(js_trim).collect();
    if wanted.is_empty() || wanted.len() > lines.lines.len() {
        return None;
    }
    let range = (lines.first_at(from), lines.lines.len() - wanted.len());
    let (offset, rarest) = wanted.iter().enumerate().min_by_key(|(_, w)| lines.places(w).len())?;
    lines
        .first_start(rarest, offset, range, |i| {
            wanted.iter().enumerate().all(|(k, w)| js_trim(lines.lines[i + k]) == *w)
        })
        .map(|i| lines.span(i, wanted.len(), original.len()))
}

/// Tier 3: the first and last lines as anchors, for SEARCH texts of two lines or more.
fn block_anchor_match(original: &str, lines: &Lines<'_>, search: &str, from: usize) -> Option<(usize, usize)> {
    // Cline counts the empty element after the final line break here, so two real lines qualify.
    if search.split('\n').count() < 3 {
        return None;
    }
    let wanted = search_lines(search);
    let (first, last, size) = (js_trim(wanted[0]), js_trim(wanted[wanted.len() - 1]), wanted.len());
    if size > lines.lines.len() {
        return None;
    }
    let range = (lines.first_at(from), lines.lines.len() - size);
    let fits = |i: usize| js_trim(lines.lines[i]) == first && js_trim(lines.lines[i + size - 1]) == last;
    let found = match lines.places(first).len() <= lines.places(last).len() {
        true => lines.first_start(first, 0, range, fits),
        false => lines.first_start(last, size - 1, range, fits),
    };
    found.map(|i| lines.span(i, size, original.len()))
}

/// The block's SEARCH text as Cline quotes it in errors.
fn quoted(search: &str) -> String {
    format!("The SEARCH block:\n{}", js_trim_end(search))
}

/// Cline's error for an empty SEARCH on a non-empty file.
pub const EMPTY_SEARCH_ERROR: &str = "Empty SEARCH block detected with non-empty file. This usually indicates a malformed SEARCH marker.\nPlease ensure your SEARCH marker follows the correct format:\n- Use '------- SEARCH' (7+ dashes + space + SEARCH)\n";

/// Our error for a diff without any block (Cline reports success and changes nothing).
pub const NO_BLOCKS_ERROR: &str = "The diff does not contain any SEARCH/REPLACE blocks. Each block starts with a '------- SEARCH' line, then the exact lines to find, a '=======' line, the replacement lines, and ends with a '+++++++ REPLACE' line.";

/// Locates one SEARCH text, through the four tiers.
fn locate(original: &str, lines: &Lines<'_>, search: &str, from: usize) -> Result<(usize, usize), String> {
    if search.is_empty() {
        return if original.is_empty() { Ok((0, 0)) } else { Err(EMPTY_SEARCH_ERROR.to_owned()) };
    }
    if let Some(at) = original[from..].find(search) {
        return Ok((from + at, from + at + search.len()));
    }
    if let Some(found) = line_trimmed_match(original, lines, search, from) {
        return Ok(found);
    }
    if let Some(found) = block_anchor_match(original, lines, search, from) {
        return Ok(found);
    }
    match original.find(search) {
        Some(at) => Ok((at, at + search.len())),
        None => Err(format!("{}\n...does not match anything in the file.", quoted(search))),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Outside,
    Search,
    Replace,
}

/// Reads the blocks of `diff` and locates each in `original`.
///
/// With `final_pass` false the diff is still streaming: a block counts once its REPLACE marker has arrived.
/// With `final_pass` true the diff is complete: a last block without its REPLACE marker is accepted, and a
/// diff without blocks is an error. The edits come in diff order.
pub fn parse(diff: &str, original: &str, final_pass: bool) -> Result<Vec<Edit>, DiffError> {
    let lines_of_original = Lines::new(original);
    let mut lines: Vec<&str> = diff.split('\n').collect();
    // A last line that starts like a marker but is not one may be a marker still arriving: drop it.
    if let Some(last) = lines.last()
        && last.starts_with(['-', '<', '=', '+', '>'])
        && !is_any_marker(last)
    {
        lines.pop();
    }

    let mut located = Located::default();
    let mut section = Section::Outside;
    let mut search = String::new();
    let mut replacement = String::new();
    let mut found: Option<(usize, usize)> = None;
    // Where the previous in-order block ended: tiers 1 to 3 search from here.
    let mut processed = 0;
    let mut offset = 0;
    let fail = |message: String, edits: &Vec<Edit>| DiffError { message, completed: edits.clone() };

    for line in lines {
        let line_end = (offset + line.len() + 1).min(diff.len());
        offset = line_end;
        if is_search_start(line) {
            if section == Section::Replace {
                return Err(fail(
                    format!(
                        "{}\n...is missing its closing '+++++++ REPLACE' marker before the next SEARCH block.",
                        quoted(&search)
                    ),
                    &located.edits,
                ));
            }
            section = Section::Search;
            search.clear();
            replacement.clear();
            continue;
        }
        if is_divider(line) {
            section = Section::Replace;
            found =
                Some(locate(original, &lines_of_original, &search, processed).map_err(|m| fail(m, &located.edits))?);
            continue;
        }
        if is_replace_end(line) {
            let Some((start, end)) = found else {
                return Err(fail(format!("{}\n...is malformatted.", quoted(&search)), &located.edits));
            };
            let fitted = fit(&original[start..end], &search, &replacement);
            push(&mut located, &mut processed, &search, Edit { start, end, replacement: fitted, diff_end: line_end })?;
            section = Section::Outside;
            search.clear();
            replacement.clear();
            found = None;
            continue;
        }
        match section {
            Section::Search => {
                search.push_str(line);
                search.push('\n');
            }
            Section::Replace => {
                replacement.push_str(line);
                replacement.push('\n');
            }
            Section::Outside => {}
        }
    }

    if final_pass {
        match (section, found) {
            (Section::Replace, Some((start, end))) => {
                let replacement = fit(&original[start..end], &search, &replacement);
                let edit = Edit { start, end, replacement, diff_end: diff.len() };
                push(&mut located, &mut processed, &search, edit)?;
            }
            (Section::Search, _) => {
                return Err(fail(format!("{}\n...is malformatted.", quoted(&search)), &located.edits));
            }
            _ => {}
        }
        if located.edits.is_empty() {
            return Err(fail(NO_BLOCKS_ERROR.to_owned(), &located.edits));
        }
    }
    Ok(located.edits)
}

/// A line's break as the file has it: `\r\n`, `\n`, or at the end of the file none (or a lone `\r`).
fn line_break(line: &str) -> &str {
    if line.ends_with("\r\n") {
        "\r\n"
    } else if line.ends_with('\n') {
        "\n"
    } else if line.ends_with('\r') {
        "\r"
    } else {
        ""
    }
}

/// The replacement as it goes into the file in place of `matched`, the text a block's SEARCH located.
///
/// The diff's lines all end in `\n`, but the lines a whitespace-tolerant tier (2 or 3) matched may not: a
/// last line without a break, `\r\n` in a file of mixed breaks, a lone `\r` at the end. Cline writes the
/// diff's breaks over them, so even a block that replaces lines with themselves changes the file; here a
/// block whose REPLACE is its SEARCH keeps the matched text as it is, and any other replacement takes the
/// breaks of the lines it replaces, line for line (its last line the break of the last matched line, so a
/// file that ends without a break still does), further lines the last real break.
fn fit(matched: &str, search: &str, replacement: &str) -> String {
    if replacement == search {
        return matched.to_owned();
    }
    let matched: Vec<&str> = matched.split_inclusive('\n').collect();
    let Some(last) = matched.last() else {
        return replacement.to_owned();
    };
    let breaks: Vec<&str> = matched.iter().map(|line| line_break(line)).collect();
    if breaks.iter().all(|b| *b == "\n") {
        return replacement.to_owned();
    }
    let usual = breaks.iter().rev().find(|b| b.ends_with('\n')).copied().unwrap_or("\n");
    if replacement.is_empty() {
        return String::new();
    }
    let body = replacement.strip_suffix('\n').unwrap_or(replacement);
    let lines: Vec<&str> = body.split('\n').collect();
    let mut out = String::with_capacity(replacement.len() + lines.len());
    for (i, line) in lines.iter().enumerate() {
        let line_break = if i + 1 == lines.len() {
            if replacement.ends_with('\n') {
                line_break(last)
            } else {
                ""
            }
        } else if i + 1 < breaks.len() {
            breaks[i]
        } else {
            usual
        };
        out.push_str(line);
        out.push_str(line_break);
    }
    out
}

/// The located blocks, and their spans ordered, so a new block's overlap check costs a lookup, not a pass
/// over every earlier block.
#[derive(Default)]
struct Located {
    edits: Vec<Edit>,
    spans: std::collections::BTreeSet<(usize, usize)>,
}

/// Records a located block, refusing one whose match overlaps an earlier block's.
fn push(located: &mut Located, processed: &mut usize, search: &str, edit: Edit) -> Result<(), DiffError> {
    // Recorded spans never overlap, so in (start, end) order their ends never decrease either: the span
    // that overlaps the new one, if any does, is the last that starts before the new one ends.
    let before = located.spans.range(..(edit.end, 0)).next_back().copied();
    let Located { edits, spans } = located;
    if before.is_some_and(|(start, end)| edit.start < end && start < edit.end) {
        return Err(DiffError {
            message: format!("{}\n...matches text that an earlier SEARCH block already replaced.", quoted(search)),
            completed: edits.clone(),
        });
    }
    // A block found before the previous one (tier 4) is out of order and does not move the search start.
    if edit.start >= *processed {
        *processed = edit.end;
    }
    spans.insert((edit.start, edit.end));
    edits.push(edit);
    Ok(())
}

/// The original with every edit applied, in file order.
pub fn apply(original: &str, edits: &[Edit]) -> String {
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    // Stable: insertions at the same point keep their diff order.
    sorted.sort_by_key(|e| e.start);
    let mut out = String::with_capacity(original.len());
    let mut at = 0;
    for edit in sorted {
        out.push_str(&original[at..edit.start]);
        out.push_str(&edit.replacement);
        at = edit.end;
    }
    out.push_str(&original[at..]);
    out
}

/// Applies a complete diff: the new content and the edits, or Cline's error.
#[cfg(test)]
pub fn construct(diff: &str, original: &str) -> Result<(String, Vec<Edit>), DiffError> {
    let edits = parse(diff, original, true)?;
    Ok((apply(original, &edits), edits))
}

/// The 1-based line of byte `at` in `text`, as the UI shows where a block starts.
pub fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn run(diff: &str, original: &str) -> Result<String, String> {
        construct(diff, original).map(|(content, _)| content).map_err(|e| e.message)
    }

    #[test]
    fn markers() {
        for line in ["------- SEARCH", "--- SEARCH", "<<<<<<< SEARCH", "------- SEARCH>", "<<< SEARCH>"] {
            assert!(is_search_start(line), "{line}");
        }
        for line in ["-- SEARCH", "-------SEARCH", "------- SEARCH ", "<<-- SEARCH", "------- SEARCH\r", "x--- SEARCH"]
        {
            assert!(!is_search_start(line), "{line}");
        }
        assert!(is_divider("===") && is_divider("==========") && !is_divider("==") && !is_divider("======= "));
        for line in ["+++++++ REPLACE", ">>>>>>> REPLACE", "+++ REPLACE>"] {
            assert!(is_replace_end(line), "{line}");
        }
        assert!(!is_replace_end("++ REPLACE") && !is_replace_end("+++++++REPLACE"));
    }

    #[test]
    fn tiers_in_order() {
        // Exact.
        assert_eq!(run("------- SEARCH\nb\n=======\nB\n+++++++ REPLACE", "a\nb\nc"), Ok("a\nB\nc".to_owned()));
        // Line-trimmed keeps the file's own line, indentation included, out of the result.
        assert_eq!(run("------- SEARCH\nb\n=======\n  B\n+++++++ REPLACE", "a\n\tb  \nc"), Ok("a\n  B\nc".to_owned()));
        // Block anchor: the middle line differs.
        assert_eq!(
            run("------- SEARCH\nfn x() {\n  old\n}\n=======\nfn y() {}\n+++++++ REPLACE", "fn x() {\n  new\n}\n"),
            Ok("fn y() {}\n".to_owned())
        );
        // Out of order: found from the start of the file.
        assert_eq!(
            run(
                "------- SEARCH\nc\n=======\nC\n+++++++ REPLACE\n------- SEARCH\na\n=======\nA\n+++++++ REPLACE",
                "a\nb\nc\n"
            ),
            Ok("A\nb\nC\n".to_owned())
        );
    }

    #[test]
    fn empty_search_rules() {
        assert_eq!(run("------- SEARCH\n=======\nnew\n+++++++ REPLACE", ""), Ok("new\n".to_owned()));
        assert_eq!(run("------- SEARCH\n=======\nnew\n+++++++ REPLACE", "old"), Err(EMPTY_SEARCH_ERROR.to_owned()));
    }

    #[test]
    fn partial_markers_and_streaming() {
        let diff = "------- SEARCH\nb\n=======\nB\n+++";
        // Streaming: the block is not complete yet.
        assert_eq!(parse(diff, "a\nb\n", false).unwrap(), vec![]);
        // Final: the partial marker is dropped and the open block accepted.
        assert_eq!(run(diff, "a\nb\n"), Ok("a\nB\n".to_owned()));
    }

    #[test]
    fn our_fixes_are_errors() {
        assert_eq!(
            run("------- SEARCH\na\n=======\nA\n------- SEARCH\nb\n=======\nB\n+++++++ REPLACE", "a\nb\n"),
            Err("The SEARCH block:\na\n...is missing its closing '+++++++ REPLACE' marker before the next SEARCH block.".to_owned())
        );
        assert_eq!(
            run(
                "------- SEARCH\na\n=======\nA\n+++++++ REPLACE\n------- SEARCH\na\n=======\nB\n+++++++ REPLACE",
                "a\n"
            ),
            Err("The SEARCH block:\na\n...matches text that an earlier SEARCH block already replaced.".to_owned())
        );
        assert_eq!(run("------- SEARCH\na", "a\n"), Err("The SEARCH block:\na\n...is malformatted.".to_owned()));
        assert_eq!(run("just some text", "a\n"), Err(NO_BLOCKS_ERROR.to_owned()));
    }

    #[test]
    fn completed_blocks_travel_with_errors() {
        let error =
            parse("------- SEARCH\na\n=======\nA\n+++++++ REPLACE\n------- SEARCH\nzzz\n=======\n", "a\nb\n", false)
                .unwrap_err();
        assert_eq!(error.message, "The SEARCH block:\nzzz\n...does not match anything in the file.");
        assert_eq!(error.completed.len(), 1);
        assert_eq!(error.completed[0].diff_end, "------- SEARCH\na\n=======\nA\n+++++++ REPLACE\n".len());
    }

    #[test]
    fn replacements_keep_the_breaks_of_the_lines_they_replace() {
        let block = |search: &str, replace: &str| format!("------- SEARCH\n{search}=======\n{replace}+++++++ REPLACE");
        // A block replacing lines with themselves changes nothing, whatever the breaks it matched.
        for (file, lines) in
            [("a\nb", "b\n"), ("a\nb", "a\nb\n"), ("a\r\nb\nc", "a\nb\n"), ("a\nb\r", "b\n"), ("  x  \r\ny", "x\n")]
        {
            assert_eq!(run(&block(lines, lines), file), Ok(file.to_owned()), "{file:?} / {lines:?}");
        }
        // Other replacements take the matched lines' breaks, line for line, and keep a missing final break.
        assert_eq!(run(&block("b\n", "c\n"), "a\nb"), Ok("a\nc".to_owned()));
        assert_eq!(run(&block("b\n", "c\nd\n"), "a\nb"), Ok("a\nc\nd".to_owned()));
        assert_eq!(run(&block("a\nb\n", "A\nB\n"), "a\r\nb\nc"), Ok("A\r\nB\nc".to_owned()));
        assert_eq!(run(&block("a\nb\n", "A\nX\nB\n"), "a\r\nb\r\nc"), Ok("A\r\nX\r\nB\r\nc".to_owned()));
        assert_eq!(run(&block("b\n", "c\n"), "a\nb\r"), Ok("a\nc\r".to_owned()));
        assert_eq!(run(&block("b\n", ""), "a\nb"), Ok("a\n".to_owned()));
        // An exact match is Cline's splice, unchanged.
        assert_eq!(run(&block("b\n", "c\n"), "a\nb\n"), Ok("a\nc\n".to_owned()));
    }

    #[test]
    fn js_whitespace() {
        assert_eq!(js_trim("\u{FEFF}\u{3000} x \u{2028}"), "x");
        // NEL is whitespace to Rust, not to JavaScript.
        assert_eq!(js_trim("\u{85}x"), "\u{85}x");
        assert_eq!(line_of("a\nb\nc", 4), 3);
    }

    /// How a block writes the line it searches for.
    type Shape = fn(&str) -> String;

    /// A 20,000-line file, and 6,000 blocks each replacing one of its lines (`shape` decides how the block
    /// writes its SEARCH line, `reverse` whether the blocks come last line first); and the file they give.
    fn many_blocks(shape: Shape, reverse: bool) -> (String, String, String) {
        let lines: Vec<String> = (0..20_000).map(|i| format!("line {i} of the file")).collect();
        let mut order: Vec<usize> = (0..6_000).map(|k| k * 3).collect();
        if reverse {
            order.reverse();
        }
        let mut diff = String::new();
        let mut expected = lines.clone();
        for i in order {
            diff.push_str(&format!("------- SEARCH\n{}\n=======\nchanged {i}\n+++++++ REPLACE\n", shape(&lines[i])));
            expected[i] = format!("changed {i}");
        }
        (lines.join("\n") + "\n", diff, expected.join("\n") + "\n")
    }

    #[test]
    fn six_thousand_blocks_on_a_large_file_apply() {
        let shapes: [(Shape, bool); 3] = [
            (|line| line.to_owned(), false),
            // Found by the whitespace-tolerant tier, after the exact search failed.
            (|line| format!("  {line}  "), false),
            // Out of file order: found by the exact search from the start of the file.
            (|line| line.to_owned(), true),
        ];
        for (shape, reverse) in shapes {
            let (original, diff, expected) = many_blocks(shape, reverse);
            assert_eq!(run(&diff, &original), Ok(expected));
        }
    }

    #[test]
    fn a_block_found_nowhere_in_a_file_of_repeated_lines_fails() {
        // Every line of the file is the block's first line: without the index each place would compare
        // 2,000 lines before failing.
        let original = "x\n".repeat(200_000);
        let diff = format!("------- SEARCH\n{}y\n=======\nz\n+++++++ REPLACE", "  x\n".repeat(2_000));
        let error = run(&diff, &original).unwrap_err();
        assert!(error.ends_with("...does not match anything in the file."), "{error}");
    }
}
