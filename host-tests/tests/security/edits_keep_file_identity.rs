//! Class 8: edits keep owner, group and hard links, and a no-op edit leaves every byte.
//!
//! Every tool that writes (write_to_file, replace_in_file, apply_patch) goes through one write path; each test
//! runs all three over real files in a temp workspace, as root where the suite runs (so `chown` is real), and
//! compares the file's identity (inode, links, owner, group, mode, extended attributes) before and after.

use crate::util::*;
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use toolshed::{ResultStatus, Runtime, TaskHandle};

/// A runtime with the two edit plugins alone. Loads are serialised: two loads of one library at once in one
/// process race on its shadow copy.
fn runtime() -> Runtime {
    static LOADING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = LOADING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let runtime = Runtime::builder()
        .plugin_file(plugins().join(lib("write_to_file")))
        .plugin_file(plugins().join(lib("apply_patch")))
        .yes(true)
        .build()
        .unwrap();
    assert!(runtime.load_errors().is_empty(), "{:?}", runtime.load_errors());
    runtime
}

/// What must survive an edit besides the bytes.
#[derive(Debug, PartialEq, Eq)]
struct Identity {
    inode: u64,
    links: u64,
    uid: u32,
    gid: u32,
    mode: u32,
}

fn identity(path: &Path) -> Identity {
    let meta = fs::metadata(path).unwrap();
    Identity { inode: meta.ino(), links: meta.nlink(), uid: meta.uid(), gid: meta.gid(), mode: meta.mode() }
}

/// The three tools, each changing `old` (the last line of `name`) into `new`.
fn edits(name: &str, old: &str, new: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("write_to_file", json!({"path": name, "content": format!("first\n{new}\n")})),
        (
            "replace_in_file",
            json!({"path": name, "diff": format!("------- SEARCH\n{old}\n=======\n{new}\n+++++++ REPLACE")}),
        ),
        (
            "apply_patch",
            json!({"input": format!("*** Begin Patch\n*** Update File: {name}\n@@\n first\n-{old}\n+{new}\n*** End Patch")}),
        ),
    ]
}

fn succeed(task: &TaskHandle, tool: &str, input: Value) {
    let result = call(task, tool, input);
    assert_eq!(result.status, ResultStatus::Success, "{tool}: {}", result.to_model_text());
}

/// The names in `dir`, sorted: an edit leaves no temporary or backup file behind.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

fn is_root() -> bool {
    fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

#[test]
fn owner_group_and_mode_survive_every_edit_tool() {
    let runtime = runtime();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    for (i, (tool, input)) in edits("owned.txt", "old", "new").into_iter().enumerate() {
        let path = ws.path().join("owned.txt");
        fs::write(&path, "first\nold\n").unwrap();
        // A set-uid, set-gid script of another user and group: each part is what a rename would lose.
        fs::set_permissions(&path, fs::Permissions::from_mode(0o6750)).unwrap();
        if is_root() {
            std::os::unix::fs::chown(&path, Some(1234), Some(4321)).unwrap();
        }
        let before = identity(&path);
        succeed(&task, tool, input);
        assert_eq!(fs::read_to_string(&path).unwrap(), "first\nnew\n", "{tool}");
        assert_eq!(identity(&path), before, "{tool} (round {i})");
        if is_root() {
            assert_eq!((before.uid, before.gid), (1234, 4321));
        }
        assert_eq!(names(ws.path()), ["owned.txt"], "{tool}");
        fs::remove_file(&path).unwrap();
    }
}

#[test]
fn hard_links_see_every_edit() {
    let runtime = runtime();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    fs::create_dir(ws.path().join("other")).unwrap();
    for (tool, input) in edits("linked.txt", "old", "new") {
        let (path, twin) = (ws.path().join("linked.txt"), ws.path().join("other/twin.txt"));
        fs::write(&path, "first\nold\n").unwrap();
        fs::hard_link(&path, &twin).unwrap();
        let before = identity(&path);
        succeed(&task, tool, input);
        assert_eq!(fs::read_to_string(&twin).unwrap(), "first\nnew\n", "{tool}: the other name sees the edit");
        assert_eq!(identity(&path), before, "{tool}");
        assert_eq!(identity(&twin), before, "{tool}");
        assert_eq!(names(ws.path()), ["linked.txt", "other"], "{tool}");
        fs::remove_file(&path).unwrap();
        fs::remove_file(&twin).unwrap();
    }
}

#[test]
fn a_link_in_the_workspace_stays_a_link_to_the_edited_file() {
    let runtime = runtime();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    fs::create_dir(ws.path().join("real")).unwrap();
    for (tool, input) in edits("alias.txt", "old", "new") {
        let (link, target) = (ws.path().join("alias.txt"), ws.path().join("real/file.txt"));
        fs::write(&target, "first\nold\n").unwrap();
        std::os::unix::fs::symlink("real/file.txt", &link).unwrap();
        succeed(&task, tool, input);
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "{tool}: the link was replaced");
        assert_eq!(fs::read_link(&link).unwrap(), Path::new("real/file.txt"));
        assert_eq!(fs::read_to_string(&target).unwrap(), "first\nnew\n", "{tool}");
        fs::remove_file(&link).unwrap();
    }
}

/// An access ACL (`user::rw-, user:1234:rw-, group::r--, mask::rw-, other::---`) in the kernel's xattr form.
fn acl() -> Vec<u8> {
    let entry =
        |tag: u16, perm: u16, id: u32| [&tag.to_le_bytes()[..], &perm.to_le_bytes(), &id.to_le_bytes()].concat();
    let none = u32::MAX;
    [
        2u32.to_le_bytes().to_vec(),
        entry(1, 6, none),
        entry(2, 6, 1234),
        entry(4, 4, none),
        entry(0x10, 6, none),
        entry(0x20, 0, none),
    ]
    .concat()
}

/// Sets or reads extended attributes with Python's `os` module (the test crate links no xattr binding).
fn python(script: &str, path: &Path) -> std::process::Output {
    Command::new("python3").args(["-c", script]).arg(path).output().expect("python3 runs")
}

fn attributes(path: &Path) -> String {
    let out = python(
        "import os,sys; p=sys.argv[1]; print(sorted((n, os.getxattr(p, n).hex()) for n in os.listxattr(p)))",
        path,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn acls_and_extended_attributes_survive_every_edit_tool() {
    let runtime = runtime();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    for (tool, input) in edits("tagged.txt", "old", "new") {
        let path = ws.path().join("tagged.txt");
        fs::write(&path, "first\nold\n").unwrap();
        let set = python(
            &format!(
                "import os,sys; p=sys.argv[1]; os.setxattr(p, 'user.origin', b'review'); os.setxattr(p, 'system.posix_acl_access', bytes.fromhex('{}'))",
                acl().iter().map(|b| format!("{b:02x}")).collect::<String>()
            ),
            &path,
        );
        assert!(set.status.success(), "setting attributes: {}", String::from_utf8_lossy(&set.stderr));
        let before = (attributes(&path), identity(&path).mode);
        assert!(before.0.contains("user.origin") && before.0.contains("system.posix_acl_access"), "{}", before.0);
        succeed(&task, tool, input);
        assert_eq!((attributes(&path), identity(&path).mode), before, "{tool}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "first\nnew\n", "{tool}");
        fs::remove_file(&path).unwrap();
    }
}

#[test]
fn no_op_edits_leave_every_byte_and_the_inode() {
    let runtime = runtime();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let utf16: Vec<u8> = [0xFF, 0xFE].into_iter().chain("a\r\nb".encode_utf16().flat_map(u16::to_le_bytes)).collect();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("no final break", b"a\nb".to_vec(), "b"),
        ("CRLF, no final break", b"a\r\nb".to_vec(), "b"),
        ("CRLF, final break", b"a\r\nb\r\n".to_vec(), "b"),
        ("BOM and CRLF, no final break", b"\xEF\xBB\xBFa\r\nb".to_vec(), "b"),
        ("UTF-16 with BOM, no final break", utf16, "b"),
        ("mixed breaks, CRLF line", b"a\r\nb\nc".to_vec(), "a\nb"),
        ("mixed breaks, last lines", b"a\r\nb\nc".to_vec(), "b\nc"),
        ("last line ends in a lone CR", b"a\nb\r".to_vec(), "b"),
        ("trailing spaces, CRLF in mixed", b"x  \r\ny\n".to_vec(), "x"),
    ];
    for (what, original, lines) in cases {
        let path = ws.path().join("f.txt");
        fs::write(&path, &original).unwrap();
        let before = identity(&path);
        let diff = format!("------- SEARCH\n{lines}\n=======\n{lines}\n+++++++ REPLACE");
        succeed(&task, "replace_in_file", json!({"path": "f.txt", "diff": diff}));
        assert_eq!(fs::read(&path).unwrap(), original, "{what}");
        assert_eq!(identity(&path), before, "{what}: a no-op edit wrote the file");
        fs::remove_file(&path).unwrap();
    }
    // A real change of the last line keeps the file's missing final break and its CRLF.
    for (original, expected) in [(&b"a\nb"[..], &b"a\nc"[..]), (b"a\r\nb", b"a\r\nc"), (b"a\r\nb\nc", b"a\r\nb\nz")] {
        let path = ws.path().join("g.txt");
        fs::write(&path, original).unwrap();
        let (old, new) = if original.ends_with(b"c") { ("c", "z") } else { ("b", "c") };
        let diff = format!("------- SEARCH\n{old}\n=======\n{new}\n+++++++ REPLACE");
        succeed(&task, "replace_in_file", json!({"path": "g.txt", "diff": diff}));
        assert_eq!(fs::read(&path).unwrap(), expected, "{:?}", String::from_utf8_lossy(original));
    }
}

/// A file-size limit the plugins load under (the loader copies each library to a shadow path first) that a
/// large edit still exceeds.
fn size_limit() -> u64 {
    let largest = ["write_to_file", "apply_patch"]
        .iter()
        .map(|name| fs::metadata(plugins().join(lib(name))).unwrap().len())
        .max()
        .unwrap();
    largest + 64 * 1024
}

/// Runs `toolshed call --yes` with the two edit plugins, the input on stdin, under a file-size limit of
/// `limit` bytes: a write past it fails with EFBIG, a real failure in the middle of writing a file.
fn call_limited(ws: &Path, limit: u64, tool: &str, input: &Value) -> std::process::Output {
    use std::process::Stdio;
    let home = workspace();
    let dir = home.path().join("plugins");
    fs::create_dir(&dir).unwrap();
    for name in ["write_to_file", "apply_patch"] {
        fs::copy(plugins().join(lib(name)), dir.join(lib(name))).unwrap();
    }
    let mut child = Command::new("prlimit")
        .arg(format!("--fsize={limit}"))
        .arg("--")
        .arg(toolshed_bin())
        .args(["--plugins", &dir.to_string_lossy(), "--cwd", &ws.to_string_lossy(), "call", "--yes", tool, "-"])
        .env("HOME", home.path())
        .env_remove("TOOLSHED_PLUGINS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prlimit (util-linux) runs");
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, input.to_string().as_bytes()).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn a_write_that_fails_midway_puts_the_file_back() {
    let ws = workspace();
    let limit = size_limit();
    let big = "x".repeat(limit as usize + 4096);
    let original = "first\nold\n";
    // Written through the inode (another link), then by rename (a plain file): both fail whole.
    for linked in [true, false] {
        for (tool, input) in edits("f.txt", "old", &big) {
            let path = ws.path().join("f.txt");
            fs::write(&path, original).unwrap();
            if linked {
                fs::hard_link(&path, ws.path().join("twin.txt")).unwrap();
            }
            let before = identity(&path);
            let output = call_limited(ws.path(), limit, tool, &input);
            let out = stdout(&output);
            assert_eq!(output.status.code(), Some(1), "{tool}: {out}\n{}", stderr(&output));
            assert!(out.contains("File too large"), "{tool} (linked: {linked}): {out}");
            assert_eq!(fs::read_to_string(&path).unwrap(), original, "{tool} (linked: {linked})");
            assert_eq!(identity(&path), before, "{tool} (linked: {linked})");
            let expected: &[&str] = if linked { &["f.txt", "twin.txt"] } else { &["f.txt"] };
            assert_eq!(names(ws.path()), expected, "{tool} (linked: {linked}): a temporary or backup file is left");
            for name in expected {
                fs::remove_file(ws.path().join(name)).unwrap();
            }
        }
    }
}

#[test]
fn a_patch_that_fails_on_its_second_file_changes_neither() {
    let ws = workspace();
    let limit = size_limit();
    let (a, b) = (ws.path().join("a.txt"), ws.path().join("b.txt"));
    fs::write(&a, "first\nold\n").unwrap();
    fs::write(&b, "first\nold\n").unwrap();
    fs::hard_link(&a, ws.path().join("a-twin.txt")).unwrap();
    fs::hard_link(&b, ws.path().join("b-twin.txt")).unwrap();
    let (ids_a, ids_b) = (identity(&a), identity(&b));
    let big = "x".repeat(limit as usize + 4096);
    let patch = format!(
        "*** Begin Patch\n*** Update File: a.txt\n@@\n first\n-old\n+small\n*** Update File: b.txt\n@@\n first\n-old\n+{big}\n*** End Patch"
    );
    let output = call_limited(ws.path(), limit, "apply_patch", &json!({"input": patch}));
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(stdout(&output).contains("No file was changed."), "{}", stdout(&output));
    assert_eq!(fs::read_to_string(&a).unwrap(), "first\nold\n");
    assert_eq!(fs::read_to_string(&b).unwrap(), "first\nold\n");
    assert_eq!((identity(&a), identity(&b)), (ids_a, ids_b));
    assert_eq!(names(ws.path()), ["a-twin.txt", "a.txt", "b-twin.txt", "b.txt"]);
}
