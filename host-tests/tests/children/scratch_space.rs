//! Class 6, shared scratch space: a command's spilled output (and every other scratch file) goes into
//! directories the runtime made itself and checked, private to the user; never into `$TMPDIR/cline` or any
//! directory another user (or a link) prepared there first.

use super::{command_text, host_uid, root, user_dir};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Runs a command whose output spills, with `TMPDIR` = `tmp`; the log file the result names.
fn spill(ws: &Path, home: &Path, tmp: &Path) -> PathBuf {
    let out = command_text(ws, home, "seq 1 200000", &[("TMPDIR", tmp.to_str().unwrap())]);
    let log = out.lines().find_map(|l| l.strip_prefix("Full output saved to: ")).unwrap_or_else(|| panic!("{out}"));
    PathBuf::from(log)
}

/// Checks `log` holds the whole output, is the user's alone, and sits in a task directory inside a scratch
/// root that are both the user's alone.
fn check_private(log: &Path) {
    let expect: String = (1..=200_000).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(log).unwrap(), expect);
    let meta = std::fs::symlink_metadata(log).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (host_uid(), 0o600), "{}", log.display());
    let task = log.parent().unwrap();
    assert!(task.file_name().unwrap().to_str().unwrap().starts_with("task-"), "{}", log.display());
    for dir in [task, task.parent().unwrap()] {
        let meta = std::fs::symlink_metadata(dir).unwrap();
        assert!(meta.file_type().is_dir(), "{} is not a directory of its own", dir.display());
        assert_eq!((meta.uid(), meta.mode() & 0o777), (host_uid(), 0o700), "{}", dir.display());
    }
}

#[test]
fn spilled_output_is_private_to_the_user() {
    let (ws, home, tmp) = (user_dir(), user_dir(), user_dir());
    let log = spill(ws.path(), home.path(), tmp.path());
    // The user's own cache, out of `/tmp` and `TMPDIR`, which the `workspace-write` sandbox may write.
    assert!(log.starts_with(home.path().join(".cache/toolshed/scratch")), "{}", log.display());
    check_private(&log);
}

/// A way to prepare a directory name before the user's host gets to it, and its name.
type Case = (&'static str, Box<dyn Fn(&Path)>);

#[test]
fn a_directory_prepared_by_someone_else_is_never_used() {
    let uid = host_uid();
    // Each: what is waiting at $TMPDIR/cline and $TMPDIR/toolshed-UID before the user's first command.
    let cases: Vec<Case> = vec![
        (
            "world-writable",
            Box::new(|dir: &Path| {
                std::fs::create_dir(dir).unwrap();
                super::give_to_user(dir);
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
            }),
        ),
        (
            "readable by others",
            Box::new(|dir: &Path| {
                std::fs::create_dir(dir).unwrap();
                super::give_to_user(dir);
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
            }),
        ),
        (
            "a link to a directory of the attacker's",
            Box::new(|dir: &Path| {
                let target = dir.with_extension("target");
                std::fs::create_dir(&target).unwrap();
                std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o777)).unwrap();
                std::os::unix::fs::symlink(&target, dir).unwrap();
            }),
        ),
        ("a file", Box::new(|dir: &Path| std::fs::write(dir, "").unwrap())),
    ];
    let mut cases = cases;
    if root() {
        // Another user's (root's) directory, private to them: the user's host could not even enter it.
        cases.push(("another user's", Box::new(|dir: &Path| std::fs::create_dir(dir).unwrap())));
    }
    for (name, prepare) in cases {
        let (ws, home, tmp) = (user_dir(), user_dir(), tmp_dir());
        // Cline's place, and each place the runtime would take, in its order: the user's cache, then TMPDIR.
        let cline = tmp.path().join("cline");
        let named = tmp.path().join(format!("toolshed-{uid}"));
        let cache = home.path().join(".cache/toolshed/scratch");
        std::fs::create_dir_all(cache.parent().unwrap()).unwrap();
        for dir in [home.path().join(".cache"), home.path().join(".cache/toolshed")] {
            super::give_to_user(&dir);
        }
        let prepared = [cline.clone(), named.clone(), cache.clone()];
        for dir in &prepared {
            prepare(dir);
        }
        let log = spill(ws.path(), home.path(), tmp.path());
        assert!(prepared.iter().all(|dir| !log.starts_with(dir)), "{name}: {}", log.display());
        check_private(&log);
        let targets = prepared.iter().map(|dir| dir.with_extension("target"));
        for prepared in prepared.iter().cloned().chain(targets) {
            if prepared.is_dir() {
                let entries: Vec<_> = std::fs::read_dir(&prepared).map(|d| d.flatten().collect()).unwrap_or_default();
                assert!(entries.is_empty(), "{name}: the runtime wrote into {}: {entries:?}", prepared.display());
            }
        }
    }
}

/// A shared temporary directory as `/tmp` is: everyone may create in it, sticky.
fn tmp_dir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("tmp-").tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    dir
}

#[test]
fn each_task_has_its_own_scratch_directory() {
    let (ws, home, tmp) = (user_dir(), user_dir(), tmp_dir());
    let first = spill(ws.path(), home.path(), tmp.path());
    let second = spill(ws.path(), home.path(), tmp.path());
    // Two `toolshed call`s are two tasks.
    assert_ne!(first.parent(), second.parent());
    assert_eq!(first.parent().unwrap().parent(), second.parent().unwrap().parent());
    check_private(&first);
    check_private(&second);
}

#[test]
fn nothing_spills_where_a_sandboxed_command_could_swap_the_directory() {
    // No usable home: the scratch root falls back to TMPDIR, which the workspace-write sandbox writes. A
    // command there could swap its task's directory for a link between the check and the log's creation.
    let (ws, home, tmp) = (user_dir(), user_dir(), tmp_dir());
    // HOME is `/`, whose cache this user cannot make, and XDG_CACHE_HOME is not absolute.
    let out = command_text(
        ws.path(),
        home.path(),
        "seq 1 200000",
        &[
            ("TMPDIR", tmp.path().to_str().unwrap()),
            ("XDG_CACHE_HOME", "relative/not/a/cache"),
            ("HOME", "/"),
            ("TOOLSHED_COMMANDS_SANDBOX", "workspace-write"),
        ],
    );
    assert!(out.contains("lines written to no log file"), "{out}");
    let left: Vec<PathBuf> = ignore::WalkBuilder::new(tmp.path())
        .standard_filters(false)
        .build()
        .flatten()
        .map(ignore::DirEntry::into_path)
        .filter(|path| path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("large-output")))
        .collect();
    assert!(left.is_empty(), "something was spilled into TMPDIR: {left:?}");
}
