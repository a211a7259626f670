//! Targets for the edit formats: `replace_in_file`'s SEARCH/REPLACE blocks and `apply_patch`'s V4A patches,
//! each over a raw original file.

use crate::{edit_input, line_cuts};
use apply_patch::fuzzing::{self as patch, Action, Chunk, Line};
use write_to_file::fuzzing::{self as diff, Edit};

/// Model families: Claude's diffs are used as written, the others get Cline's model fixes first.
const FAMILIES: [&str; 2] = ["claude", "gpt"];

/// Checks that located edits are sound slices of `original`: in bounds, on character boundaries, and not
/// overlapping one another.
fn assert_sound(original: &str, edits: &[Edit]) {
    for (i, edit) in edits.iter().enumerate() {
        assert!(edit.start <= edit.end && edit.end <= original.len(), "edit {i} out of bounds: {edit:?}");
        assert!(original.is_char_boundary(edit.start) && original.is_char_boundary(edit.end), "edit {i} splits a char");
        for earlier in &edits[..i] {
            assert!(
                !(edit.start < earlier.end && earlier.start < edit.end),
                "edit {i} overlaps an earlier one: {edit:?} {earlier:?}"
            );
        }
    }
}

/// SEARCH/REPLACE diffs (`replace_in_file`). Invariants: no panic; located edits are sound; the edits a
/// streaming prefix reports are the first edits of the whole diff (the UI never shows an edit that will not
/// be applied); and a diff whose blocks replace lines of the file with themselves leaves the file's bytes —
/// byte-order mark, encoding, line breaks — exactly as they were.
pub fn replace_in_file(data: &[u8]) {
    let (flags, original, text) = edit_input(data);
    let family = FAMILIES[usize::from(flags & 1)];
    let result = diff::replace_in_file(original, &text, family);
    let Ok(working) = diff::working_text(original) else {
        assert!(result.is_err(), "an undecodable file was edited");
        return;
    };
    // The parser on the working text, as the tool runs it (CRLF already LF in the diff for Claude).
    let prepared = text.replace("\r\n", "\n");
    let whole = diff::parse(&prepared, &working, true);
    match &whole {
        Ok(edits) => {
            assert_sound(&working, edits);
            let _ = diff::apply(&working, edits);
        }
        Err(error) => assert_sound(&working, &error.completed),
    }
    if family == "claude" {
        assert_eq!(result.is_ok(), whole.is_ok(), "the tool and its parser disagree");
    }
    for cut in line_cuts(&prepared, 24) {
        let prefix = &prepared[..cut];
        match (diff::parse(prefix, &working, false), &whole) {
            (Ok(streamed), Ok(edits)) => {
                assert_sound(&working, &streamed);
                assert!(streamed.len() <= edits.len(), "a prefix found more edits than the whole diff");
                assert_eq!(streamed[..], edits[..streamed.len()], "a prefix located an edit differently");
            }
            (Ok(streamed), Err(_)) => assert_sound(&working, &streamed),
            (Err(error), _) => assert_sound(&working, &error.completed),
        }
    }
    identity_diff(flags, original, &working);
}

/// A line of the working text split into what a model reads and its break: `\n`, `\r\n` (a file of mixed
/// breaks), or at the end of the file none or a lone `\r`.
fn split_break(line: &str) -> (&str, &str) {
    for end in ["\r\n", "\n", "\r"] {
        if let Some(content) = line.strip_suffix(end) {
            return (content, &line[content.len()..]);
        }
    }
    (line, "")
}

/// A diff replacing a run of the file's lines, as a model reads them, with themselves must leave the file byte
/// for byte: the last line without a break included, lines ending in `\r\n` in a file of mixed breaks, a
/// last line ending in a lone `\r` (the cases the security review found: Cline adds a break to each). And a
/// diff changing one of those lines must change that line alone, every break kept.
fn identity_diff(flags: u8, original: &[u8], working: &str) {
    let lines: Vec<(&str, &str)> = working.split_inclusive('\n').map(split_break).collect();
    if lines.is_empty() {
        return;
    }
    let first = usize::from(flags >> 1) % lines.len();
    let count = (usize::from(flags >> 5) % 4 + 1).min(lines.len() - first);
    let block: Vec<&str> = lines[first..first + count].iter().map(|(content, _)| *content).collect();
    // Lines that the diff format cannot carry as they are: markers, and a `\r` at the end of a diff line,
    // which the tool's CRLF folding would take for part of a break.
    if block.iter().any(|l| l.ends_with('\r') || write_to_file::fuzzing::is_any_marker(l)) {
        return;
    }
    let search = format!("{}\n", block.join("\n"));
    let text = format!("------- SEARCH\n{search}=======\n{search}+++++++ REPLACE\n");
    match diff::replace_in_file(original, &text, "claude") {
        Ok(bytes) => assert!(bytes == original, "an edit that changes nothing changed the file: {bytes:?}"),
        Err(error) => panic!("the file's own lines were not found: {error}"),
    }

    const CHANGED: &str = "toolshed fuzz: a changed line";
    let replace = format!("{CHANGED}\n{}", block[1..].iter().map(|l| format!("{l}\n")).collect::<String>());
    let text = format!("------- SEARCH\n{search}=======\n{replace}+++++++ REPLACE\n");
    let edits = match diff::parse(&text, working, true) {
        Ok(edits) => edits,
        Err(error) => panic!("the file's own lines were not found: {}", error.message),
    };
    let [edit] = edits.as_slice() else { panic!("one block located {} edits", edits.len()) };
    let matched: Vec<(&str, &str)> = working[edit.start..edit.end].split_inclusive('\n').map(split_break).collect();
    // A whitespace-tolerant match elsewhere rewrites its lines as the diff has them; only a match of these
    // very lines has one expected result.
    if matched.iter().map(|(content, _)| *content).ne(block.iter().copied()) {
        return;
    }
    let mut expected = working[..edit.start].to_owned();
    expected.push_str(CHANGED);
    matched.iter().enumerate().for_each(|(i, (content, end))| {
        if i > 0 {
            expected.push_str(content);
        }
        expected.push_str(end);
    });
    expected.push_str(&working[edit.end..]);
    assert_eq!(diff::apply(working, &edits), expected, "a one-line change touched other bytes");
}

/// Prints actions as V4A text, every line ending in CRLF (the parser drops one `\r` per line, so a `\r` that
/// ends a line of content survives).
fn print_patch(actions: &[Action]) -> String {
    let mut out = String::from("*** Begin Patch\r\n");
    let mut line = |text: &str| {
        out.push_str(text);
        out.push_str("\r\n");
    };
    for action in actions {
        match action {
            Action::Add { path, content } => {
                line(&format!("*** Add File: {path}"));
                content.split_inclusive('\n').for_each(|l| line(&format!("+{}", l.trim_end_matches('\n'))));
            }
            Action::Delete { path } => line(&format!("*** Delete File: {path}")),
            Action::Update { path, move_to, chunks } => {
                line(&format!("*** Update File: {path}"));
                if let Some(to) = move_to {
                    line(&format!("*** Move to: {to}"));
                }
                for (n, chunk) in chunks.iter().enumerate() {
                    if chunk.anchors.is_empty() {
                        line("@@");
                    }
                    chunk.anchors.iter().for_each(|a| line(&format!("@@ {a}")));
                    for l in &chunk.lines {
                        line(&match l {
                            Line::Context(t) => format!(" {t}"),
                            Line::Delete(t) => format!("-{t}"),
                            Line::Insert(t) => format!("+{t}"),
                        });
                    }
                    if chunk.eof {
                        line("*** End of File");
                    } else if chunk.lines.is_empty() && n + 1 < chunks.len() {
                        // Anchors alone before another chunk: a blank line (spacing, dropped again) keeps the
                        // next chunk's `@@` lines from joining these (found by the fuzzer).
                        line("");
                    }
                }
            }
        }
    }
    line("*** End Patch");
    out
}

/// V4A patches (`apply_patch`). Invariants: no panic; parse(print(actions)) gives the actions back; each
/// update applies to the original or fails without output; a chunk of only the file's own lines as context
/// leaves its bytes unchanged; the streaming headers of a prefix are the first headers of the whole; the
/// banded similarity test agrees with the plain Levenshtein distance.
pub fn apply_patch(data: &[u8]) {
    let (flags, original, text) = edit_input(data);
    let parsed = patch::parse(&text);
    if let Ok(actions) = &parsed {
        let printed = print_patch(actions);
        match patch::parse(&printed) {
            Ok(again) => assert_eq!(&again, actions, "parse(print(x)) differs; printed:\n{printed}"),
            Err(e) => panic!("a printed patch does not parse ({e}):\n{printed}"),
        }
        for action in actions {
            if let Action::Update { chunks, .. } = action
                && let Ok((bytes, _)) = patch::update(original, chunks)
            {
                assert!(std::str::from_utf8(&bytes).is_ok() || original.first().is_some_and(|&b| b >= 0xFE));
            }
        }
    }
    let whole = patch::headers(&text, true);
    for cut in line_cuts(&text, 24) {
        let streamed = patch::headers(&text[..cut], false);
        assert!(streamed.len() <= whole.len() && streamed[..] == whole[..streamed.len()], "streamed headers differ");
    }
    identity_patch(flags, original);
    similarity(&text);
}

/// A chunk of the file's own lines as context must leave its bytes as they were.
fn identity_patch(flags: u8, original: &[u8]) {
    let Ok(text) = patch::text(original) else {
        assert!(patch::update(original, &[]).is_err(), "an undecodable file was patched");
        return;
    };
    match patch::update(original, &[]) {
        Ok((bytes, _)) => assert!(bytes == original, "applying no chunk changed the file"),
        Err(error) => panic!("a decodable file failed with no chunks: {error}"),
    }
    // `lines` drops each line's break (LF or CRLF), as the chunk lines of a patch have none.
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return;
    }
    let first = usize::from(flags >> 1) % lines.len();
    let count = (usize::from(flags >> 5) % 4 + 1).min(lines.len() - first);
    let chunk = Chunk {
        anchors: Vec::new(),
        lines: lines[first..first + count].iter().map(|l| Line::Context((*l).to_owned())).collect(),
        eof: flags & 1 == 1,
    };
    match patch::update(original, &[chunk]) {
        Ok((bytes, _)) => assert!(bytes == original, "a context-only chunk changed the file: {bytes:?}"),
        Err(error) => panic!("the file's own lines were not found: {error}"),
    }
}

/// The plain Levenshtein distance, in characters.
fn levenshtein(a: &[char], b: &[char]) -> usize {
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            current[j + 1] = (previous[j] + usize::from(ca != cb)).min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

/// The banded similarity test against the plain distance, on the first two lines of the patch text.
fn similarity(text: &str) {
    let mut lines = text.lines();
    let (Some(a), Some(b)) = (lines.next(), lines.next()) else {
        return;
    };
    let (ca, cb): (Vec<char>, Vec<char>) = (a.chars().take(200).collect(), b.chars().take(200).collect());
    let (a, b): (String, String) = (ca.iter().collect(), cb.iter().collect());
    let longer = ca.len().max(cb.len());
    let expected = longer == 0 || (longer - levenshtein(&ca, &cb)) as f64 / longer as f64 >= 0.66;
    assert_eq!(patch::similar(&a, &b, 0.66), expected, "similar({a:?}, {b:?})");
}
