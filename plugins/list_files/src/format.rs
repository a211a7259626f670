//! Cline's `formatFilesList`: entries as POSIX paths relative to the listed directory, sorted so that each
//! directory is followed by its subtree, `.clineignore`d ones marked with a lock, and the truncation note.

use std::cmp::Ordering;
use std::path::Path;

use crate::collate;
use crate::walk::Entry;

/// Appended when the listing stopped at the limit.
pub(crate) const TRUNCATION_NOTE: &str =
    "\n\n(File list truncated. Use list_files on specific subdirectories if you need to explore further.)";
/// The whole result when nothing was listed.
pub(crate) const NO_FILES: &str = "No files found.";
/// Cline's `LOCK_TEXT_SYMBOL` and the space after it, before entries `.clineignore` denies.
pub(crate) const LOCK: &str = "🔒 ";

/// One line of the listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    /// The path components relative to the listed directory.
    parts: Vec<String>,
    is_dir: bool,
    /// The entry's absolute path without a trailing slash, as `.clineignore` is asked about it.
    pub(crate) absolute: String,
}

impl Line {
    /// The text shown: the POSIX relative path, directories with a trailing `/`.
    pub(crate) fn text(&self) -> String {
        let mut text = self.parts.join("/");
        if self.is_dir {
            text.push('/');
        }
        text
    }
}

/// The entries as lines, in Cline's display order.
pub(crate) fn sorted_lines(root: &Path, entries: &[Entry]) -> Vec<Line> {
    let mut lines: Vec<Line> = entries
        .iter()
        .map(|entry| {
            // Entries are built under `root`; the full path is a harmless fallback that cannot happen.
            let relative = entry.path.strip_prefix(root).unwrap_or(&entry.path);
            Line {
                parts: relative.iter().map(|part| part.to_string_lossy().into_owned()).collect(),
                is_dir: entry.is_dir,
                absolute: entry.path.to_string_lossy().into_owned(),
            }
        })
        .collect();
    lines.sort_by(display_order);
    lines
}

/// Cline's comparator. It splits `a/b/` into `["a", "b", ""]` and decides at the first differing component:
/// a path that ends there (a plain file, or the empty part after a directory's own slash) comes before one
/// that goes on, otherwise the names are compared. So at every level files come first, then directories,
/// each directory right before its own subtree. The source comment says directories come first; the code,
/// which we follow, does the opposite.
///
/// Written as a lexicographic comparison of `(goes on, name)` per component, which is the same on every
/// real listing (a directory never holds a file and a directory of one name) and a total order by
/// construction, as Rust's sort requires.
fn display_order(a: &Line, b: &Line) -> Ordering {
    let (a_len, b_len) = (split_len(a), split_len(b));
    for (i, (x, y)) in split(a).zip(split(b)).enumerate() {
        let a_goes_on = i + 1 < a_len;
        let b_goes_on = i + 1 < b_len;
        let order = a_goes_on.cmp(&b_goes_on).then_with(|| collate::compare(x, y));
        if order != Ordering::Equal {
            return order;
        }
    }
    a_len.cmp(&b_len)
}

/// The components as Cline's `split("/")` sees them: a directory has an empty last part. An iterator, so a
/// sort's comparisons allocate nothing.
fn split(line: &Line) -> impl Iterator<Item = &str> {
    line.parts.iter().map(String::as_str).chain(line.is_dir.then_some(""))
}

/// How many components [`split`] gives.
fn split_len(line: &Line) -> usize {
    line.parts.len() + usize::from(line.is_dir)
}

/// The result text. `allowed` holds the `.clineignore` verdict for each line (missing verdicts allow).
pub(crate) fn render(lines: &[Line], allowed: &[bool], hit_limit: bool) -> String {
    let shown: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| match allowed.get(i) {
            Some(false) => format!("{LOCK}{}", line.text()),
            Some(true) | None => line.text(),
        })
        .collect();
    if hit_limit {
        return format!("{}{TRUNCATION_NOTE}", shown.join("\n"));
    }
    if shown.is_empty() {
        return NO_FILES.to_owned();
    }
    shown.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::path::PathBuf;

    fn entries(root: &str, paths: &[&str]) -> Vec<Entry> {
        paths
            .iter()
            .map(|path| Entry {
                path: PathBuf::from(root).join(path.trim_end_matches('/')),
                is_dir: path.ends_with('/'),
            })
            .collect()
    }

    fn sorted_text(paths: &[&str]) -> String {
        let lines = sorted_lines(Path::new("/w"), &entries("/w", paths));
        render(&lines, &[], false)
    }

    #[test]
    fn files_first_then_each_directory_with_its_subtree() {
        let found =
            ["src/", "b.txt", "lib/", "A.md", "src/main.rs", "src/util/", "lib/x.rs", "src/util/mod.rs", "src/a.rs"];
        assert_eq!(
            sorted_text(&found),
            "A.md\nb.txt\nlib/\nlib/x.rs\nsrc/\nsrc/a.rs\nsrc/main.rs\nsrc/util/\nsrc/util/mod.rs"
        );
    }

    #[test]
    fn names_sort_case_insensitively_and_numerically() {
        let found = ["file10.txt", "File2.txt", "file1.txt", "dir10/", "dir9/", "Dir1/", "dir9/b10", "dir9/b9"];
        assert_eq!(sorted_text(&found), "file1.txt\nFile2.txt\nfile10.txt\nDir1/\ndir9/\ndir9/b9\ndir9/b10\ndir10/");
    }

    #[test]
    fn locked_entries_are_marked() {
        let lines = sorted_lines(Path::new("/w"), &entries("/w", &["secret/", "a.txt", "secret/key"]));
        let absolute: Vec<&str> = lines.iter().map(|line| line.absolute.as_str()).collect();
        // Directories are checked without their trailing slash, as Cline's `path.resolve` leaves them.
        assert_eq!(absolute, ["/w/a.txt", "/w/secret", "/w/secret/key"]);
        assert_eq!(render(&lines, &[true, true, false], false), "a.txt\nsecret/\n🔒 secret/key");
    }

    #[test]
    fn truncation_note_and_empty_result() {
        let lines = sorted_lines(Path::new("/w"), &entries("/w", &["b", "a"]));
        assert_eq!(
            render(&lines, &[true, true], true),
            "a\nb\n\n(File list truncated. Use list_files on specific subdirectories if you need to explore further.)"
        );
        assert_eq!(render(&[], &[], false), "No files found.");
    }
}
