//! search_files through the real runtime: results against an independent oracle on a generated tree, the
//! 300 cap in path order, every `.clineignore` case, multi-root workspaces, bad input, and approval for paths
//! outside the workspace.

use crate::util::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use std::path::{Path, PathBuf};
use toolshed::{ResultStatus, TaskContext};

fn touch(root: &Path, rel: &str, body: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
}

/// A small deterministic generator (no `rand` dependency): the same tree on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % below
    }
}

const WORDS: &[&str] = &[
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu", "xi",
    "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega", "Alpha", "OMEGA", "x1", "x22",
];

/// A git repository (`.git` present, so `.gitignore` files apply, as in ripgrep) with nested directories,
/// names that sort differently as paths and as strings, `.gitignore` files with negations at several
/// levels, hidden files and directories, `.ignore` files, binary files, empty files, files without a final
/// newline, and symbolic links. Every line starts with its own `path:line`, so a line shown in a result
/// says where it came from.
fn generated_tree() -> tempfile::TempDir {
    let ws = workspace();
    let root = ws.path();
    let mut rng = Lcg(7);
    std::fs::create_dir_all(root.join(".git")).unwrap();
    touch(root, ".git/HEAD", "ref: alpha beta\n");
    touch(root, ".gitignore", "*.log\nbuild/\n!keep.log\n/top-only.txt\n");
    touch(root, "src/.gitignore", "gen*\n!generated-keep.rs\n");
    touch(root, "docs/.ignore", "draft.md\n");
    let dirs = [
        "",
        "src",
        "src/a",
        "src/a.b",
        "src/a/deep",
        "src/gen",
        "docs",
        "build",
        "lib-x",
        "lib",
        "lib/nested/more",
        ".hidden",
        "a b",
    ];
    let names = [
        "main.rs",
        "a.txt",
        "B.txt",
        "file2.md",
        "file10.md",
        "keep.log",
        "noise.log",
        "generated.rs",
        "generated-keep.rs",
        "draft.md",
        "top-only.txt",
        ".env",
        "z",
        "empty.txt",
        "bin.dat",
    ];
    for dir in dirs {
        for name in names {
            if rng.next(3) == 0 {
                continue;
            }
            let rel = if dir.is_empty() { name.to_owned() } else { format!("{dir}/{name}") };
            let mut body = String::new();
            if name != "empty.txt" {
                for line in 1..=rng.next(40) + 1 {
                    let words: Vec<&str> = (0..3).map(|_| WORDS[rng.next(WORDS.len())]).collect();
                    body.push_str(&format!("{rel}:{line} {}\n", words.join(" ")));
                }
            }
            if name == "z" {
                body.pop();
            }
            if name == "bin.dat" {
                body.insert(rng.next(body.len().max(1)), '\0');
            }
            touch(root, &rel, &body);
        }
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(root.join("src"), root.join("src-link")).unwrap();
        std::os::unix::fs::symlink(root.join("docs/a.txt"), root.join("link.txt")).unwrap();
    }
    ws
}

/// The oracle: a plain recursive walk in sorted order that applies the same rules ripgrep's defaults do here
/// (hidden names skipped, symbolic links not followed, `.gitignore` and `.ignore` files scoped to their
/// directory with the innermost match deciding, files with a NUL byte skipped) and `regex::Regex` on each
/// line. Returns `path:line` of every match in path order.
fn oracle(root: &Path, regex: &str) -> Vec<String> {
    fn walk(
        root: &Path,
        dir: &Path,
        rules: &mut Vec<ignore::gitignore::Gitignore>,
        regex: &regex::Regex,
        out: &mut Vec<String>,
    ) {
        let pushed = ["ignore", "gitignore"]
            .iter()
            .filter(|name| dir.join(format!(".{name}")).is_file())
            .map(|name| rules.push(ignore::gitignore::Gitignore::new(dir.join(format!(".{name}"))).0))
            .count();
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
        for path in entries {
            if path.file_name().unwrap().to_string_lossy().starts_with('.') {
                continue;
            }
            let kind = std::fs::symlink_metadata(&path).unwrap().file_type();
            if kind.is_symlink() {
                continue;
            }
            let ignored = rules.iter().rev().find_map(|rule| {
                let matched = rule.matched(&path, kind.is_dir());
                (!matched.is_none()).then(|| matched.is_ignore())
            });
            if ignored == Some(true) {
                continue;
            }
            if kind.is_dir() {
                walk(root, &path, rules, regex, out);
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            if bytes.contains(&0) {
                continue;
            }
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            for (index, line) in String::from_utf8(bytes).unwrap().split('\n').enumerate() {
                if regex.is_match(line) {
                    out.push(format!("{rel}:{}", index + 1));
                }
            }
        }
        rules.truncate(rules.len() - pushed);
    }
    let regex = regex::Regex::new(regex).unwrap();
    let mut out = Vec::new();
    walk(root, root, &mut Vec::new(), &regex, &mut out);
    out
}

/// The `path:line` of every match a search_files result shows, in order: the shown lines that match the
/// regex (context lines never do), each of which starts with its own `path:line`.
fn shown_matches(text: &str, regex: &str) -> Vec<String> {
    let regex = regex::Regex::new(regex).unwrap();
    // Paths may hold spaces; the place ends at the first `:line ` after them.
    let place = regex::Regex::new(r"^(.+?:\d+) ").unwrap();
    text.lines()
        .filter_map(|line| line.strip_prefix('│'))
        .filter(|line| *line != "----" && regex.is_match(line))
        .map(|line| place.captures(line).unwrap()[1].to_owned())
        .collect()
}

#[test]
fn matches_equal_an_independent_oracle() {
    let runtime = shipped().build().unwrap();
    let ws = generated_tree();
    let task = task_in(&runtime, ws.path());
    for regex in ["omega", "\\bzeta [a-z]+ (pi|rho)\\b", "^src/a\\.b/", "x22$", "(?i)alpha gamma", "md:3 ", "O[A-Z]+A"]
    {
        let expected = oracle(ws.path(), regex);
        assert!(
            !expected.is_empty() && expected.len() < 300,
            "{regex}: {} matches; pick another regex",
            expected.len()
        );
        let result = call(&task, "search_files", json!({"path": ".", "regex": regex}));
        assert_eq!(result.status, ResultStatus::Success, "{regex}");
        let text = text(&result);
        let header = if expected.len() == 1 {
            "Found 1 result.".to_owned()
        } else {
            format!("Found {} results.", expected.len())
        };
        assert!(text.starts_with(&format!("{header}\n\n")), "{regex}: {}", &text[..text.len().min(200)]);
        assert_eq!(shown_matches(&text, regex), expected, "{regex}");
    }
    // The tree exercises the rules: negated and nested ignore entries are in, everything else out.
    let files: std::collections::BTreeSet<String> =
        oracle(ws.path(), ":").into_iter().map(|place| place.rsplit_once(':').unwrap().0.to_owned()).collect();
    let any = |test: &dyn Fn(&str) -> bool| files.iter().any(|file| test(file));
    assert!(any(&|f| f == "keep.log") && any(&|f| f.ends_with("/keep.log")), "{files:?}");
    assert!(any(&|f| f == "src/generated-keep.rs") && any(&|f| f.starts_with("a b/")), "{files:?}");
    assert!(any(&|f| f.ends_with("/top-only.txt")) && any(&|f| f.ends_with("/draft.md")), "{files:?}");
    assert!(any(&|f| f.ends_with("/z") || f == "z"), "{files:?}");
    for excluded in ["noise.log", "bin.dat"] {
        assert!(!any(&|f| f.ends_with(excluded)), "{excluded}");
    }
    // `src/.gitignore` applies inside `src` only.
    assert!(
        !any(&|f| f.starts_with("src/") && f.ends_with("/generated.rs"))
            && any(&|f| f == "generated.rs" || f.ends_with("/generated.rs"))
    );
    for excluded in ["top-only.txt", "build/", ".hidden/", "src/gen/", "docs/draft.md", "src-link/", "link.txt"] {
        assert!(!any(&|f| f.starts_with(excluded)), "{excluded}");
    }
}

#[test]
fn the_capped_result_is_the_first_300_in_path_order() {
    let runtime = shipped().build().unwrap();
    let ws = generated_tree();
    let task = task_in(&runtime, ws.path());
    for (regex, pattern) in [("[a-z]", None), ("a|e", Some("*.md")), ("\\d", Some("src/**"))] {
        let mut input = json!({"path": ".", "regex": regex});
        if let Some(pattern) = pattern {
            input["file_pattern"] = json!(pattern);
        }
        let result = call(&task, "search_files", input);
        let text = text(&result);
        assert!(
            text.starts_with("Showing first 300 of 300+ results. Use a more specific search if necessary.\n\n"),
            "{regex}"
        );
        let shown = shown_matches(&text, regex);
        let mut expected = oracle(ws.path(), regex);
        if let Some(pattern) = pattern {
            let glob = ignore::overrides::OverrideBuilder::new(ws.path()).add(pattern).unwrap().build().unwrap();
            expected.retain(|place| glob.matched(place.split(':').next().unwrap(), false).is_whitelist());
        }
        assert!(expected.len() > 300, "{regex}");
        expected.truncate(300);
        assert_eq!(shown, expected, "{regex}");
    }
}

/// A workspace with a `.clineignore` and the files its cases need.
fn fenced_workspace(clineignore: &str) -> tempfile::TempDir {
    let ws = workspace();
    let root = ws.path();
    touch(root, ".clineignore", clineignore);
    for rel in [
        "src/app.rs",
        "src/key.pem",
        "prod.env",
        "example.env",
        "private/notes.txt",
        "generated/out.rs",
        "docs/readme.md",
    ] {
        touch(root, rel, &format!("{rel} needle\n"));
    }
    touch(root, "rules.txt", "generated/\n");
    ws
}

fn found_files(text: &str) -> Vec<String> {
    // A group heading is the line before an opening fence: the path, outside any `│` block.
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .filter(|pair| pair[1] == "│----" && !pair[0].starts_with('│'))
        .map(|pair| pair[0].to_owned())
        .collect()
}

#[test]
fn clineignore_patterns_negations_directories_and_includes_are_dropped() {
    let runtime = shipped().build().unwrap();
    let ws = fenced_workspace("*.pem\n*.env\n!example.env\nprivate/\n!include rules.txt\n");
    let task = task_in(&runtime, ws.path());
    let result = call(&task, "search_files", json!({"path": ".", "regex": "needle"}));
    assert_eq!(found_files(&text(&result)), ["docs/readme.md", "example.env", "src/app.rs"]);
    assert!(text(&result).starts_with("Found 3 results.\n\n"));
    // The rules file itself is readable; `.clineignore` is always fenced off.
    let result = call(&task, "search_files", json!({"path": ".", "regex": "generated|pem|private"}));
    assert_eq!(found_files(&text(&result)), ["rules.txt"]);
    // `private/` blocks what is inside, not the bare directory (Cline's rule), so the search runs and finds
    // nothing it may show.
    let result = call(&task, "search_files", json!({"path": "private", "regex": "needle"}));
    assert_eq!(text(&result), "Found 0 results.");
    // A path that is itself blocked is refused.
    let result = call(&task, "search_files", json!({"path": "src/key.pem", "regex": "needle"}));
    assert_eq!(result.status, ResultStatus::Error);
    assert!(text(&result).contains("Access to src/key.pem is blocked by the .clineignore file settings."));
}

#[cfg(unix)]
#[test]
fn a_link_into_an_ignored_directory_is_fenced_off_too() {
    let runtime = shipped().build().unwrap();
    let ws = fenced_workspace("private/\n");
    std::os::unix::fs::symlink(ws.path().join("private"), ws.path().join("innocent")).unwrap();
    std::os::unix::fs::symlink(ws.path().join("private/notes.txt"), ws.path().join("notes-link.txt")).unwrap();
    let task = task_in(&runtime, ws.path());
    // Searching through the link: the files it leads to are checked where they really are.
    let result = call(&task, "search_files", json!({"path": "innocent", "regex": "needle"}));
    assert_eq!(text(&result), "Found 0 results.");
    // The linked file is not followed by the walk (as ripgrep), and reading it is refused.
    let result = call(&task, "search_files", json!({"path": ".", "regex": "notes"}));
    assert_eq!(text(&result), "Found 0 results.");
    let read = call(&task, "read_file", json!({"path": "notes-link.txt"}));
    assert_eq!(read.status, ResultStatus::Error);
    assert!(text(&read).contains("is blocked by the .clineignore file settings"));
    let read = call(&task, "read_file", json!({"path": "innocent/notes.txt"}));
    assert_eq!(read.status, ResultStatus::Error);
}

#[test]
fn an_edited_clineignore_applies_to_the_next_call() {
    let runtime = shipped().build().unwrap();
    let ws = fenced_workspace("*.pem\n");
    let task = task_in(&runtime, ws.path());
    let files = |task: &toolshed::TaskHandle| {
        found_files(&text(&call(task, "search_files", json!({"path": "src", "regex": "needle"}))))
    };
    assert_eq!(files(&task), ["src/app.rs"]);
    // Rewritten while the runtime runs (a different size, and a later timestamp for good measure).
    std::fs::write(ws.path().join(".clineignore"), "src/app.rs\n").unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(2);
    std::fs::File::options().write(true).open(ws.path().join(".clineignore")).unwrap().set_modified(later).unwrap();
    assert_eq!(files(&task), ["src/key.pem"]);
    // Removed: nothing is fenced off any more.
    std::fs::remove_file(ws.path().join(".clineignore")).unwrap();
    assert_eq!(files(&task), ["src/app.rs", "src/key.pem"]);
}

/// Two roots, `front` (primary) and `back`, each with a `src` directory.
fn two_roots() -> (tempfile::TempDir, tempfile::TempDir) {
    let front = workspace();
    let back = workspace();
    touch(front.path(), "src/app.ts", "const needle = 1;\n");
    touch(front.path(), "README.md", "needle in the front\n");
    touch(back.path(), "src/main.rs", "fn main() {\n    needle();\n}\n");
    touch(back.path(), "src/secret.rs", "needle\n");
    touch(back.path(), ".clineignore", "src/secret.rs\n");
    (front, back)
}

#[test]
fn multi_root_hints_unknown_hints_and_every_root() {
    let runtime = shipped().build().unwrap();
    let (front, back) = two_roots();
    let front_name = front.path().file_name().unwrap().to_string_lossy().into_owned();
    let task = runtime.task(TaskContext::new(front.path()).with_root("back", back.path()));
    // A hint searches that root only, in the single-root format, relative to that root; the root's own
    // `.clineignore` applies.
    let result = call(&task, "search_files", json!({"path": "@back:src", "regex": "needle"}));
    assert_eq!(text(&result), "Found 1 result.\n\nsrc/main.rs\n│----\n│fn main() {\n│    needle();\n│}\n│----");
    // An unknown hint falls back to the primary root, as in Cline.
    let result = call(&task, "search_files", json!({"path": "@nope:src", "regex": "needle"}));
    assert_eq!(text(&result), "Found 1 result.\n\nsrc/app.ts\n│----\n│const needle = 1;\n│----");
    // No hint: every root, in Cline's multi-workspace format.
    let result = call(&task, "search_files", json!({"path": ".", "regex": "needle"}));
    assert_eq!(
        text(&result),
        format!(
            "Found 3 results across 2 workspaces.\n\n## Workspace: {front_name}\nREADME.md\n│----\n│needle in the front\n│----\n\nsrc/app.ts\n│----\n│const needle = 1;\n│----\n\n## Workspace: back\nsrc/main.rs\n│----\n│fn main() {{\n│    needle();\n│}}\n│----"
        )
    );
    let result = call(&task, "search_files", json!({"path": ".", "regex": "absent"}));
    assert_eq!(text(&result), "Found 0 results.");
}

#[test]
fn bad_input_gives_clear_errors() {
    let runtime = shipped().build().unwrap();
    let ws = workspace();
    touch(ws.path(), "src/a.rs", "one\ntwo\n");
    let task = task_in(&runtime, ws.path());
    let error = |input: serde_json::Value| {
        let result = call(&task, "search_files", input.clone());
        assert_eq!(result.status, ResultStatus::Error, "{input}");
        text(&result)
    };
    let invalid = error(json!({"path": ".", "regex": "(open"}));
    assert!(invalid.starts_with("The tool execution failed with the following error:\n<error>\nThe regex '(open' is not valid Rust regex syntax:\nregex parse error:"), "{invalid}");
    assert!(invalid.contains("unclosed group"));
    assert!(error(json!({"path": ".", "regex": "x", "file_pattern": "{a"}))
        .contains("The file_pattern '{a' is not a valid glob"));
    assert!(error(json!({"regex": "x"})).contains("Missing value for required parameter 'path'."));
    assert!(error(json!({"path": "."})).contains("Missing value for required parameter 'regex'."));
    let missing = error(json!({"path": "no/such", "regex": "x"}));
    assert!(missing
        .contains(&format!("Error searching files: Directory not found: {}", ws.path().join("no/such").display())));
    // A file as the path is searched alone, as ripgrep does with a file argument.
    let result = call(&task, "search_files", json!({"path": "src/a.rs", "regex": "two"}));
    assert_eq!(result.description, "[search_files for 'two']");
    assert_eq!(text(&result), "Found 1 result.\n\nsrc/a.rs\n│----\n│one\n│two\n│----");
}

#[cfg(unix)]
#[test]
fn an_unreadable_file_is_skipped() {
    use std::os::unix::fs::PermissionsExt;
    let runtime = shipped().build().unwrap();
    let ws = workspace();
    touch(ws.path(), "a.txt", "needle a\n");
    touch(ws.path(), "locked.txt", "needle locked\n");
    touch(ws.path(), "shut/inner.txt", "needle inner\n");
    touch(ws.path(), "z.txt", "needle z\n");
    std::fs::set_permissions(ws.path().join("locked.txt"), std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::set_permissions(ws.path().join("shut"), std::fs::Permissions::from_mode(0o000)).unwrap();
    // Root reads everything whatever the mode; then only "never a crash" can be checked.
    let enforced = std::fs::File::open(ws.path().join("locked.txt")).is_err();
    let result = call(&task_in(&runtime, ws.path()), "search_files", json!({"path": ".", "regex": "needle"}));
    std::fs::set_permissions(ws.path().join("shut"), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(result.status, ResultStatus::Success);
    if enforced {
        assert_eq!(found_files(&text(&result)), ["a.txt", "z.txt"]);
    } else {
        assert_eq!(found_files(&text(&result)), ["a.txt", "locked.txt", "shut/inner.txt", "z.txt"]);
    }
}

#[test]
fn paths_outside_the_workspace_ask_first() {
    // No approver and no `--yes`: a question cannot be asked, so the call is denied rather than run.
    let runtime = shipped().build().unwrap();
    let ws = workspace();
    let elsewhere = workspace();
    touch(elsewhere.path(), "a.txt", "needle\n");
    touch(ws.path(), "b.txt", "needle\n");
    let task = task_in(&runtime, ws.path());
    let outside = call(&task, "search_files", json!({"path": elsewhere.path().to_string_lossy(), "regex": "needle"}));
    assert_eq!(outside.status, ResultStatus::Denied);
    let relative_escape = format!("../{}", elsewhere.path().file_name().unwrap().to_string_lossy());
    assert_eq!(
        call(&task, "search_files", json!({"path": relative_escape, "regex": "needle"})).status,
        ResultStatus::Denied
    );
    #[cfg(unix)]
    {
        // A link inside the workspace that leads outside it leads outside.
        std::os::unix::fs::symlink(elsewhere.path(), ws.path().join("door")).unwrap();
        assert_eq!(
            call(&task, "search_files", json!({"path": "door", "regex": "needle"})).status,
            ResultStatus::Denied
        );
    }
    // Inside, a read-only search runs without asking.
    assert_eq!(call(&task, "search_files", json!({"path": ".", "regex": "needle"})).status, ResultStatus::Success);
    // With approval, the outside search runs; its paths are shown relative to the workspace, as Node's
    // `path.relative` would.
    let approving = shipped().yes(true).build().unwrap();
    let result = call(
        &task_in(&approving, ws.path()),
        "search_files",
        json!({"path": elsewhere.path().to_string_lossy(), "regex": "needle"}),
    );
    assert_eq!(text(&result), format!("Found 1 result.\n\n{relative_escape}/a.txt\n│----\n│needle\n│----"));
}
