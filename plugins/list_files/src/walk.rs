//! Collects a directory's entries as Cline's `listFiles` does: the top level, or a breadth-first walk that
//! skips the usual dependency and build directories, hidden directories and what `.gitignore` files exclude,
//! and stops at the limit.
//!
//! The `ignore` crate reads each directory ([`ignore::WalkBuilder`] limited to depth 1) and parses and
//! matches the `.gitignore` files ([`ignore::gitignore::Gitignore`]). The queue is ours because the crate's
//! walkers are depth-first or unordered, and Cline's limit keeps the first entries in breadth-first order.

use ignore::gitignore::Gitignore;
use ignore::WalkBuilder;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::collate;

/// Directories Cline's recursive listing never shows or enters, as path suffixes relative to the listed
/// directory (`target/dependency` is a `dependency` directory inside a `target` directory).
const DEFAULT_IGNORED: &[&[&str]] = &[
    &["node_modules"],
    &["__pycache__"],
    &["env"],
    &["venv"],
    &["target", "dependency"],
    &["build", "dependencies"],
    &["dist"],
    &["out"],
    &["bundle"],
    &["vendor"],
    &["tmp"],
    &["temp"],
    &["deps"],
    &["Pods"],
];

/// How often, in entries read, a long directory read checks whether it should stop.
const STOP_CHECK_EVERY: usize = 256;

/// One listed entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The entry's path: the listed directory joined with the entry's relative path.
    pub(crate) path: PathBuf,
    /// Whether it is a directory, or a symbolic link to one (shown with a trailing `/`, never entered).
    pub(crate) is_dir: bool,
}

/// What a listing found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Listing {
    /// The entries, in the order they were found (breadth-first when recursive).
    pub(crate) entries: Vec<Entry>,
    /// Cline's `didHitLimit`: as many entries as the limit, so there may be more.
    pub(crate) hit_limit: bool,
    /// The walk was stopped (timeout or cancellation) before it finished.
    pub(crate) interrupted: bool,
}

/// Lists `dir`: its children, or with `recursive` its tree breadth-first, at most `limit` entries.
///
/// The filesystem root, `home` (the user's home directory), a missing path and a non-directory all give an
/// empty listing, as in Cline. `should_stop` is asked between directories and every few hundred entries;
/// when it answers `true` the entries found so far are returned.
pub(crate) fn list(
    dir: &Path,
    recursive: bool,
    limit: usize,
    home: Option<&Path>,
    should_stop: &dyn Fn() -> bool,
) -> Listing {
    if is_restricted(dir, home) || !dir.is_dir() {
        return Listing::default();
    }
    let (entries, interrupted) =
        if recursive { breadth_first(dir, limit, should_stop) } else { top_level(dir, limit, should_stop) };
    Listing { hit_limit: entries.len() >= limit, entries, interrupted }
}

/// Whether `dir` is the filesystem root or the home directory, which Cline refuses to list. Both the path
/// as given and its canonical form are checked, so a symbolic link to either is refused too.
fn is_restricted(dir: &Path, home: Option<&Path>) -> bool {
    let is_restricted_path = |path: &Path| path.parent().is_none() || home.is_some_and(|home| path == home);
    let canonical_home = home.and_then(|home| home.canonicalize().ok());
    is_restricted_path(dir)
        || dir.canonicalize().is_ok_and(|canonical| {
            is_restricted_path(&canonical) || canonical_home.as_deref() == Some(canonical.as_path())
        })
}

/// The direct children, hidden ones and `node_modules` included, without any ignore rules, as Cline's
/// `globby("*")`. They are sorted first so that the limit keeps the same entries on every run.
fn top_level(dir: &Path, limit: usize, should_stop: &dyn Fn() -> bool) -> (Vec<Entry>, bool) {
    let (mut children, interrupted) = read_children(dir, should_stop);
    sort_siblings(&mut children);
    children.truncate(limit);
    (children, interrupted)
}

/// The `.gitignore` matchers that apply inside one directory, the innermost first.
struct Rules {
    gitignore: Gitignore,
    outer: Option<Rc<Rules>>,
}

impl Rules {
    /// Whether a `.gitignore` excludes `path`. The innermost file that has an opinion decides, and within a
    /// file the last matching pattern, so `!pattern` can re-include what an outer file excluded.
    fn exclude(rules: Option<&Rc<Rules>>, path: &Path, is_dir: bool) -> bool {
        let mut current = rules;
        while let Some(rules) = current {
            let matched = rules.gitignore.matched(path, is_dir);
            if matched.is_ignore() {
                return true;
            }
            if matched.is_whitelist() {
                return false;
            }
            current = rules.outer.as_ref();
        }
        false
    }
}

/// A directory waiting in the breadth-first queue, with the `.gitignore` rules of its ancestors.
struct Queued {
    dir: PathBuf,
    rules: Option<Rc<Rules>>,
}

/// Cline's `globbyLevelByLevel`: every directory's children before any grandchild, directories counting
/// toward the limit, stopping as soon as the limit is reached.
fn breadth_first(root: &Path, limit: usize, should_stop: &dyn Fn() -> bool) -> (Vec<Entry>, bool) {
    // Hidden directories are skipped unless the listing itself targets one (say `.github`).
    let show_hidden_dirs = root.file_name().is_some_and(|name| name.to_string_lossy().starts_with('.'));
    let mut found = Vec::new();
    let mut queue = VecDeque::from([Queued { dir: root.to_owned(), rules: None }]);
    while let Some(Queued { dir, rules }) = queue.pop_front() {
        if found.len() >= limit {
            break;
        }
        if should_stop() {
            return (found, true);
        }
        let (mut children, interrupted) = read_children(&dir, should_stop);
        if interrupted {
            return (found, true);
        }
        // This directory's own `.gitignore` applies to its children and everything below them.
        let rules = match children
            .iter()
            .find(|child| !child.is_dir && child.path.file_name() == Some(".gitignore".as_ref()))
        {
            Some(file) => {
                let (gitignore, _partial_error) = Gitignore::new(&file.path);
                Some(Rc::new(Rules { gitignore, outer: rules }))
            }
            None => rules,
        };
        children.retain(|child| {
            !excluded_by_default(root, child, show_hidden_dirs)
                && !Rules::exclude(rules.as_ref(), &child.path, child.is_dir)
        });
        sort_siblings(&mut children);
        for child in children {
            if found.len() >= limit {
                break;
            }
            if child.is_dir && !is_symlink(&child.path) {
                queue.push_back(Queued { dir: child.path.clone(), rules: rules.clone() });
            }
            found.push(child);
        }
    }
    (found, false)
}

/// Cline's fixed ignore globs `**/{name}/**` and `**/.*/**`: they match directories (the entry and all it
/// contains) but never files, so `.env` or a file called `dist` is still listed.
fn excluded_by_default(root: &Path, entry: &Entry, show_hidden_dirs: bool) -> bool {
    if !entry.is_dir {
        return false;
    }
    let Ok(relative) = entry.path.strip_prefix(root) else {
        return false;
    };
    let components: Vec<_> = relative.iter().map(|part| part.to_string_lossy()).collect();
    let Some(name) = components.last() else {
        return false;
    };
    if !show_hidden_dirs && name.starts_with('.') {
        return true;
    }
    DEFAULT_IGNORED.iter().any(|suffix| {
        components.len() >= suffix.len()
            && components.iter().rev().zip(suffix.iter().rev()).all(|(part, want)| part == want)
    })
}

/// Sorts one directory's children in the order they are taken: files before directories (as Cline displays
/// them), each group by name. Cline takes them in whatever order the filesystem returns; a fixed order makes
/// the entries kept at the limit the same on every run.
///
/// Each name is read once, not on every comparison: converting both names for each of a sort's comparisons
/// was most of the cost of listing a directory.
fn sort_siblings(children: &mut Vec<Entry>) {
    let mut keyed: Vec<(String, Entry)> = children
        .drain(..)
        .map(|entry| (entry.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(), entry))
        .collect();
    keyed.sort_by(|(a_name, a), (b_name, b)| a.is_dir.cmp(&b.is_dir).then_with(|| collate::compare(a_name, b_name)));
    children.extend(keyed.into_iter().map(|(_, entry)| entry));
}

/// The direct children of `dir`, read by the `ignore` crate with every filter off and symbolic links not
/// followed. Unreadable entries are skipped, as globby's `suppressErrors` does. The flag says whether
/// `should_stop` interrupted the read.
fn read_children(dir: &Path, should_stop: &dyn Fn() -> bool) -> (Vec<Entry>, bool) {
    let walk = WalkBuilder::new(dir).standard_filters(false).follow_links(false).max_depth(Some(1)).build();
    let mut children = Vec::new();
    for (read, item) in walk.enumerate() {
        if read % STOP_CHECK_EVERY == STOP_CHECK_EVERY - 1 && should_stop() {
            return (children, true);
        }
        let Ok(entry) = item else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let is_dir = match entry.file_type() {
            Some(kind) if kind.is_symlink() => entry.path().is_dir(),
            Some(kind) => kind.is_dir(),
            None => false,
        };
        children.push(Entry { path: entry.into_path(), is_dir });
    }
    (children, false)
}

fn is_symlink(path: &Path) -> bool {
    path.symlink_metadata().is_ok_and(|meta| meta.file_type().is_symlink())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::fs;

    /// Builds a tree under a fresh temporary directory: paths ending in `/` are directories, others files.
    fn tree(paths: &[&str]) -> tempfile::TempDir {
        // tempfile's default prefix is `.tmp`, a hidden name, which would switch hidden directories on.
        let dir = tempfile::Builder::new().prefix("list-files-").tempdir().unwrap();
        for path in paths {
            let full = dir.path().join(path);
            if path.ends_with('/') {
                fs::create_dir_all(&full).unwrap();
            } else {
                fs::create_dir_all(full.parent().unwrap()).unwrap();
                fs::write(&full, "").unwrap();
            }
        }
        dir
    }

    /// The listing as relative paths in found order, directories with a trailing `/`.
    fn names(root: &Path, listing: &Listing) -> Vec<String> {
        listing
            .entries
            .iter()
            .map(|entry| {
                let relative = entry.path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                if entry.is_dir {
                    relative + "/"
                } else {
                    relative
                }
            })
            .collect()
    }

    fn run(root: &Path, recursive: bool, limit: usize) -> Listing {
        list(root, recursive, limit, None, &|| false)
    }

    #[test]
    fn top_level_includes_hidden_and_ignored_names() {
        let dir = tree(&[".env", ".git/HEAD", "node_modules/x/index.js", "src/main.rs", "b.txt", "a.txt"]);
        let listing = run(dir.path(), false, 200);
        assert_eq!(names(dir.path(), &listing), [".env", "a.txt", "b.txt", ".git/", "node_modules/", "src/"]);
        assert!(!listing.hit_limit);
    }

    #[test]
    fn top_level_is_cut_at_the_limit() {
        let dir = tree(&["a", "b", "c", "d/"]);
        let listing = run(dir.path(), false, 3);
        assert_eq!(names(dir.path(), &listing), ["a", "b", "c"]);
        assert!(listing.hit_limit);
    }

    #[test]
    fn recursive_is_breadth_first() {
        let dir = tree(&["a/b/c/deep.txt", "a/one.txt", "z/two.txt", "top.txt"]);
        let listing = run(dir.path(), true, 200);
        assert_eq!(
            names(dir.path(), &listing),
            ["top.txt", "a/", "z/", "a/one.txt", "a/b/", "z/two.txt", "a/b/c/", "a/b/c/deep.txt"]
        );
    }

    #[test]
    fn recursive_limit_keeps_the_shallow_entries() {
        let dir = tree(&["a/b/c/d.txt", "x.txt", "y/z.txt"]);
        // Directories count toward the limit; the walk stops in breadth-first order.
        let listing = run(dir.path(), true, 4);
        assert_eq!(names(dir.path(), &listing), ["x.txt", "a/", "y/", "a/b/"]);
        assert!(listing.hit_limit);
        assert!(!listing.interrupted);
    }

    #[test]
    fn recursive_skips_default_ignored_directories_but_not_files() {
        let dir = tree(&[
            "node_modules/pkg/index.js",
            "src/node_modules/pkg/index.js",
            "src/__pycache__/m.pyc",
            "target/dependency/x.jar",
            "target/debug.txt",
            "dependency/kept.txt",
            "Pods/p",
            "pods/kept",
            "dist",
            "src/lib.rs",
        ]);
        let listing = run(dir.path(), true, 200);
        assert_eq!(
            names(dir.path(), &listing),
            [
                "dist",
                "dependency/",
                "pods/",
                "src/",
                "target/",
                "dependency/kept.txt",
                "pods/kept",
                "src/lib.rs",
                "target/debug.txt",
            ]
        );
    }

    #[test]
    fn recursive_skips_hidden_directories_but_lists_hidden_files() {
        let dir = tree(&[".env", ".git/HEAD", ".github/workflows/ci.yml", "src/.hidden", "src/.cache/x", "a.txt"]);
        let listing = run(dir.path(), true, 200);
        assert_eq!(names(dir.path(), &listing), [".env", "a.txt", "src/", "src/.hidden"]);
    }

    #[test]
    fn recursive_into_a_hidden_directory_shows_hidden_directories() {
        let dir = tree(&[".github/workflows/ci.yml", ".github/.cache/x", ".github/node_modules/y"]);
        let target = dir.path().join(".github");
        let listing = run(&target, true, 200);
        assert_eq!(names(&target, &listing), [".cache/", "workflows/", ".cache/x", "workflows/ci.yml"]);
    }

    #[test]
    fn gitignore_files_apply_to_their_own_subtree_without_a_git_repository() {
        let dir = tree(&[
            "app.ts",
            "debug.log",
            "ignored-dir/secret.ts",
            "src/generated/output.ts",
            "src/code.ts",
            "src/keep.log",
            "lib/generated/util.ts",
        ]);
        fs::write(dir.path().join(".gitignore"), "# comment\n*.log\nignored-dir/\n").unwrap();
        // A nested file scopes its patterns to its directory and can re-include what the root excluded.
        fs::write(dir.path().join("src/.gitignore"), "generated/\n!keep.log\n").unwrap();
        let listing = run(dir.path(), true, 200);
        assert_eq!(
            names(dir.path(), &listing),
            [
                ".gitignore",
                "app.ts",
                "lib/",
                "src/",
                "lib/generated/",
                "src/.gitignore",
                "src/code.ts",
                "src/keep.log",
                "lib/generated/util.ts",
            ]
        );
    }

    #[test]
    fn gitignore_inside_an_ignored_directory_is_never_read() {
        let dir = tree(&["build-out/.gitignore", "build-out/a.txt", "kept.txt"]);
        fs::write(dir.path().join(".gitignore"), "build-out\n").unwrap();
        fs::write(dir.path().join("build-out/.gitignore"), "!*\n").unwrap();
        let listing = run(dir.path(), true, 200);
        assert_eq!(names(dir.path(), &listing), [".gitignore", "kept.txt"]);
    }

    #[test]
    fn non_recursive_ignores_gitignore() {
        let dir = tree(&["debug.log", "a.txt"]);
        fs::write(dir.path().join(".gitignore"), "*.log\n").unwrap();
        let listing = run(dir.path(), false, 200);
        assert_eq!(names(dir.path(), &listing), [".gitignore", "a.txt", "debug.log"]);
    }

    #[cfg(unix)]
    #[test]
    fn symbolic_links_are_listed_but_not_followed() {
        let dir = tree(&["real/inner.txt", "file.txt"]);
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("real/loop")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("missing"), dir.path().join("broken")).unwrap();
        let listing = run(dir.path(), true, 200);
        assert_eq!(
            names(dir.path(), &listing),
            ["broken", "file.txt", "link/", "real/", "real/inner.txt", "real/loop/"]
        );
        // A link given as the directory to list is followed, as globby's `cwd` is.
        let link = dir.path().join("link");
        assert_eq!(names(&link, &run(&link, false, 200)), ["inner.txt", "loop/"]);
    }

    #[test]
    fn refuses_the_root_the_home_directory_and_non_directories() {
        let dir = tree(&["home/user/a.txt", "file.txt"]);
        let home = dir.path().join("home/user");
        assert_eq!(list(Path::new("/"), true, 200, None, &|| false), Listing::default());
        assert_eq!(list(&home, false, 200, Some(&home), &|| false), Listing::default());
        // The same directory spelled with a trailing slash is still the home directory.
        let spelled = PathBuf::from(format!("{}/", home.display()));
        assert_eq!(list(&spelled, true, 200, Some(&home), &|| false), Listing::default());
        assert_eq!(run(&dir.path().join("file.txt"), false, 200), Listing::default());
        assert_eq!(run(&dir.path().join("missing"), true, 200), Listing::default());
        // Its parent is fine.
        assert_eq!(names(dir.path(), &list(dir.path(), false, 200, Some(&home), &|| false)), ["file.txt", "home/"]);
    }

    #[cfg(unix)]
    #[test]
    fn refuses_a_link_to_the_home_directory() {
        let dir = tree(&["home/user/a.txt"]);
        let home = dir.path().join("home/user");
        std::os::unix::fs::symlink(&home, dir.path().join("alias")).unwrap();
        assert_eq!(list(&dir.path().join("alias"), false, 200, Some(&home), &|| { false }), Listing::default());
    }

    #[test]
    fn stopping_returns_what_was_found_without_claiming_the_limit() {
        let dir = tree(&["a/b/c.txt", "x.txt"]);
        let calls = std::cell::Cell::new(0);
        // Stop before the second directory is read: only the root's children are kept.
        let stop = || {
            calls.set(calls.get() + 1);
            calls.get() > 1
        };
        let listing = list(dir.path(), true, 200, None, &stop);
        assert_eq!(names(dir.path(), &listing), ["x.txt", "a/"]);
        assert!(listing.interrupted);
        assert!(!listing.hit_limit);
    }
}
