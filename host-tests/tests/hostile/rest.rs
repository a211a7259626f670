//! Breaks found by red-teaming issue 24's install path, one-shot index and loader, each kept as the test that
//! failed.
//!
//! `toolshed plugins install|remove` named their temporary files after the library (`.NAME.partial-PID`), so a
//! library whose name is near the file-name limit could not be installed, and one placed by hand could not be
//! removed ("File name too long" about a file the user never named). The loader's shadow base in the shared
//! temporary directory (`toolshed-shadow-$USER`, a name anyone can guess) was used whoever owned it, so another
//! user who made it first could swap a checked copy for their own library before it was mapped.

use crate::util::*;
use std::os::unix::fs::PermissionsExt as _;

#[test]
fn a_library_named_near_the_file_name_limit_installs_and_is_removed() {
    let home = workspace();
    let source = workspace();
    // 250 bytes with the extension: the limit is 255, a temporary name built from it is over.
    let long = format!("lib{}.so", "a".repeat(250 - "lib.so".len()));
    std::fs::copy(plugins().join(lib("read_file")), source.path().join(&long)).unwrap();
    let dir = home.path().join(".toolshed/plugins");
    let run = |args: &[&str]| toolshed(home.path(), home.path(), args, &[]);
    let installed = run(&["plugins", "install", source.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&installed.stderr);
    assert!(installed.status.success(), "{stderr}");
    let names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, [long.clone()], "the library, whole, and no temporary file");
    let removed = run(&["plugins", "remove", &long]);
    assert!(removed.status.success(), "{}", String::from_utf8_lossy(&removed.stderr));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

#[test]
fn a_shadow_base_someone_else_can_write_is_not_where_libraries_are_mapped_from() {
    let home = workspace();
    let tmp = workspace();
    let user = std::env::var("USER").unwrap_or_else(|_| "user".to_owned());
    // What another user would leave: the guessable base, open to all (the sticky bit would not help: they own it).
    let open = tmp.path().join(format!("toolshed-shadow-{user}"));
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let file = home.path().join("note.txt");
    std::fs::write(&file, "shadowed\n").unwrap();
    let plugins = plugins();
    let output = toolshed(
        home.path(),
        home.path(),
        &["--plugins", plugins.to_str().unwrap(), "call", "read_file", r#"{"path": "note.txt"}"#],
        &[("TMPDIR", tmp.path().to_str().unwrap())],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("shadowed"));
    assert!(stderr.contains("writable by others"), "the user is told why: {stderr}");
    assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0, "nothing was copied into the open base");
    let private = home.path().join(".cache/toolshed/shadow");
    let mode = std::fs::metadata(&private).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the shadow copies went to the user's private cache: {mode:o}");
}
