//! The V4A patch text, read into file operations: Cline's preprocessing (bash wrappers, `\r`, sentinels) and
//! markers, with codex's tolerance of blank lines and of whitespace around the markers.

use std::collections::{HashMap, HashSet};

/// `*** Begin Patch`.
pub const BEGIN: &str = "*** Begin Patch";
/// `*** End Patch`.
pub const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const UPDATE: &str = "*** Update File: ";
const DELETE: &str = "*** Delete File: ";
const MOVE: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";
/// Lines that wrap a patch in a shell command; dropped outside the patch, as Cline does.
const WRAPPERS: [&str; 4] = ["%%bash", "apply_patch", "EOF", "```"];

/// One line of an update chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A line that stays (a space prefix, or none, or an empty line).
    Context(String),
    /// A line that goes (`-`).
    Delete(String),
    /// A line that comes (`+`).
    Insert(String),
}

/// One change within an updated file: optional `@@` anchors, then lines.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Chunk {
    /// `@@ text` lines that narrow down where the chunk is: each is found after the previous.
    pub anchors: Vec<String>,
    /// Context, deleted and inserted lines in order.
    pub lines: Vec<Line>,
    /// `*** End of File`: the chunk's lines end the file.
    pub eof: bool,
}

impl Chunk {
    /// The lines the file must contain: context and deletions.
    pub fn old(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                Line::Context(t) | Line::Delete(t) => Some(t.as_str()),
                Line::Insert(_) => None,
            })
            .collect()
    }
}

/// One file operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `*** Add File:` with its content (every line ends with a line break).
    Add {
        /// The path as written.
        path: String,
        /// The new file.
        content: String,
    },
    /// `*** Delete File:`.
    Delete {
        /// The path as written.
        path: String,
    },
    /// `*** Update File:`, optionally `*** Move to:`.
    Update {
        /// The path as written.
        path: String,
        /// Where the file moves.
        move_to: Option<String>,
        /// The changes, in file order.
        chunks: Vec<Chunk>,
    },
}

impl Action {
    /// The path the action names first.
    pub fn path(&self) -> &str {
        match self {
            Action::Add { path, .. } | Action::Delete { path } | Action::Update { path, .. } => path,
        }
    }
}

fn is_patch_line(line: &str) -> bool {
    [ADD, UPDATE, DELETE, MOVE, "@@", "+", "-", " "].iter().any(|p| line.starts_with(p)) || line == "***"
}

/// Cline's `stripBashWrapper`: keeps the patch and drops the shell command around it.
fn strip_wrapper(lines: Vec<&str>) -> Vec<&str> {
    let mut kept = Vec::new();
    let (mut inside, mut found_begin, mut found_content) = (false, false, false);
    let last = lines.len().saturating_sub(1);
    for (i, &line) in lines.iter().enumerate() {
        let trimmed = line.trim();
        if !inside && WRAPPERS.iter().any(|w| line.starts_with(w)) {
            continue;
        }
        if trimmed.starts_with(BEGIN) {
            (inside, found_begin) = (true, true);
            kept.push(line);
            continue;
        }
        if trimmed == END {
            inside = false;
            kept.push(line);
            continue;
        }
        let patch_line = is_patch_line(line);
        if patch_line && i != last {
            found_content = true;
        }
        if inside || (!found_begin && patch_line) || (line.is_empty() && found_content) {
            kept.push(line);
        }
    }
    while kept.last() == Some(&"") {
        kept.pop();
    }
    if !found_begin && !found_content {
        lines
    } else {
        kept
    }
}

/// A header line, whitespace around it ignored: its marker and the path after it.
fn header(line: &str) -> Option<(&'static str, &str)> {
    let trimmed = line.trim();
    [ADD, UPDATE, DELETE].into_iter().find_map(|m| trimmed.strip_prefix(m).map(|rest| (m, rest.trim())))
}

/// Whether a line ends an update's chunks: another header or the end of the patch.
fn ends_section(line: &str) -> bool {
    header(line).is_some() || line.trim() == END
}

/// Reads a patch. Errors are Cline's texts where Cline has them.
pub fn parse(text: &str) -> Result<Vec<Action>, String> {
    let lines: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let lines = strip_wrapper(lines);
    let has_begin = lines.first().is_some_and(|l| l.trim().starts_with(BEGIN));
    let has_end = lines.last().is_some_and(|l| l.trim() == END);
    let body: &[&str] = match (has_begin, has_end) {
        (true, true) if lines.len() >= 2 => &lines[1..lines.len() - 1],
        (false, false) => &lines[..],
        _ => return Err("Invalid patch text - incomplete sentinels. Try breaking it into smaller patches.".to_owned()),
    };

    // Where each path's last update or delete header is, so an Add can tell whether one follows it without
    // reading the rest of the patch again; and the paths seen, so a duplicate costs no scan of the actions.
    let mut changed_at: HashMap<&str, usize> = HashMap::new();
    for (at, line) in body.iter().enumerate() {
        if let Some((_, path)) = header(line).filter(|(marker, _)| *marker != ADD) {
            changed_at.insert(path, at);
        }
    }
    let mut seen: HashSet<String> = HashSet::new();
    let mut actions: Vec<Action> = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let line = body[i];
        if line.trim().is_empty() {
            i += 1;
            continue;
        }
        let Some((marker, path)) = header(line) else {
            return Err(format!("Unknown line while parsing: {line}"));
        };
        let operation = match marker {
            ADD => "add",
            DELETE => "delete",
            _ => "update",
        };
        if !seen.insert(path.to_owned()) {
            return Err(format!("Duplicate {operation} for file: {path}"));
        }
        i += 1;
        match marker {
            DELETE => actions.push(Action::Delete { path: path.to_owned() }),
            ADD => {
                // Cline loads the files to update or delete first, so adding one of them is an error.
                if changed_at.get(path).is_some_and(|&at| at >= i) {
                    return Err(format!("Add File Error: File already exists: {path}"));
                }
                let mut content = String::new();
                while i < body.len() && !ends_section(body[i]) {
                    let line = body[i];
                    // Blank lines between the file and the next header are spacing, not content.
                    if line.trim().is_empty()
                        && body[i..].iter().take_while(|l| !ends_section(l)).all(|l| l.trim().is_empty())
                    {
                        i = body[i..].iter().position(|l| ends_section(l)).map_or(body.len(), |p| i + p);
                        break;
                    }
                    let Some(added) = line.strip_prefix('+') else {
                        return Err(format!("Invalid Add File line (missing '+'): {line}"));
                    };
                    content.push_str(added);
                    content.push('\n');
                    i += 1;
                }
                actions.push(Action::Add { path: path.to_owned(), content });
            }
            _ => {
                let move_to = body.get(i).and_then(|l| l.trim().strip_prefix(MOVE)).map(|p| p.trim().to_owned());
                if move_to.is_some() {
                    i += 1;
                }
                let (chunks, next) = parse_chunks(body, i)?;
                if chunks.is_empty() {
                    return Err(format!("Update file hunk for path '{path}' is empty"));
                }
                i = next;
                actions.push(Action::Update { path: path.to_owned(), move_to, chunks });
            }
        }
    }
    Ok(actions)
}

/// The chunks of an update section from line `i`; returns them and the line after the section.
fn parse_chunks(body: &[&str], mut i: usize) -> Result<(Vec<Chunk>, usize), String> {
    let mut chunks = Vec::new();
    let mut chunk = Chunk::default();
    // Literally empty lines count as empty context, but those ending a chunk are only spacing.
    let mut trailing_blanks = 0;
    let finish = |chunk: &mut Chunk, trailing_blanks: &mut usize, chunks: &mut Vec<Chunk>| {
        let keep = chunk.lines.len() - *trailing_blanks;
        chunk.lines.truncate(keep);
        *trailing_blanks = 0;
        if !chunk.lines.is_empty() || !chunk.anchors.is_empty() {
            chunks.push(std::mem::take(chunk));
        }
    };
    while i < body.len() && !ends_section(body[i]) {
        let line = body[i];
        let trimmed_end = line.trim_end();
        if trimmed_end == "@@" || line.starts_with("@@ ") {
            if !chunk.lines.is_empty() {
                finish(&mut chunk, &mut trailing_blanks, &mut chunks);
            }
            let anchor = line.strip_prefix("@@").unwrap_or_default().trim();
            if !anchor.is_empty() {
                chunk.anchors.push(anchor.to_owned());
            }
            i += 1;
            continue;
        }
        if line.trim() == END_OF_FILE {
            chunk.eof = true;
            finish(&mut chunk, &mut trailing_blanks, &mut chunks);
            i += 1;
            continue;
        }
        if line.starts_with("***") {
            return Err(format!("Invalid line: {line}"));
        }
        let parsed = match line.chars().next() {
            Some('+') => Line::Insert(line[1..].to_owned()),
            Some('-') => Line::Delete(line[1..].to_owned()),
            Some(' ') => Line::Context(line[1..].to_owned()),
            // Cline tolerates context lines whose leading space went missing.
            Some(_) => Line::Context(line.to_owned()),
            None => Line::Context(String::new()),
        };
        trailing_blanks = if line.is_empty() { trailing_blanks + 1 } else { 0 };
        chunk.lines.push(parsed);
        i += 1;
    }
    finish(&mut chunk, &mut trailing_blanks, &mut chunks);
    Ok((chunks, i))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn ctx(s: &str) -> Line {
        Line::Context(s.to_owned())
    }

    #[test]
    fn sentinels() {
        assert!(parse("*** Add File: a\n+x").is_ok());
        assert_eq!(
            parse("*** Begin Patch\n*** Add File: a\n+x"),
            Err("Invalid patch text - incomplete sentinels. Try breaking it into smaller patches.".to_owned())
        );
        let wrapped = "%%bash\napply_patch <<\"EOF\"\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n";
        assert_eq!(parse(wrapped), Ok(vec![Action::Delete { path: "a".to_owned() }]));
    }

    #[test]
    fn stacked_anchors_blank_context_and_eof() {
        let patch = "*** Begin Patch\n*** Update File: f.py\n@@ class A\n@@     def f():\n-        pass\n+        return 1\n\n@@\n x\n\n y\n+z\n*** End of File\n*** End Patch";
        let actions = parse(patch).unwrap();
        let [Action::Update { chunks, .. }] = actions.as_slice() else { panic!("{actions:?}") };
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].anchors, ["class A", "def f():"]);
        assert_eq!(chunks[0].lines, [Line::Delete("        pass".into()), Line::Insert("        return 1".into())]);
        assert_eq!(chunks[1].lines, [ctx("x"), ctx(""), ctx("y"), Line::Insert("z".into())]);
        assert!(chunks[1].eof && !chunks[0].eof);
    }

    #[test]
    fn errors() {
        assert_eq!(parse("*** Begin Patch\nbad\n*** End Patch"), Err("Unknown line while parsing: bad".to_owned()));
        assert_eq!(
            parse("*** Begin Patch\n*** Add File: a\nnope\n*** End Patch"),
            Err("Invalid Add File line (missing '+'): nope".to_owned())
        );
        assert_eq!(
            parse("*** Begin Patch\n*** Delete File: a\n*** Delete File: a\n*** End Patch"),
            Err("Duplicate delete for file: a".to_owned())
        );
        assert_eq!(
            parse(
                "*** Begin Patch\n*** Add File: a\n+x\n*** Delete File: b\n*** Update File: a\n@@\n-x\n*** End Patch"
            ),
            Err("Add File Error: File already exists: a".to_owned())
        );
        assert_eq!(
            parse("*** Begin Patch\n*** Update File: a\n@@\n x\n*** Frob\n*** End Patch"),
            Err("Invalid line: *** Frob".to_owned())
        );
    }
}
