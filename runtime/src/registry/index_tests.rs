//! The declaration index's checks: what it records and plans, and every way a cache file is refused.

use super::*;
use std::os::unix::fs::PermissionsExt as _;
use toolshed_plugin_api::{AliasDeclaration, ToolDeclaration};

fn declaration(tools: &[(&str, &[&str])]) -> PluginDeclaration {
    let tools = tools
        .iter()
        .map(|(name, aliases)| {
            let mut tool: ToolDeclaration =
                serde_json::from_value(serde_json::json!({"name": name, "specs": {}})).unwrap();
            tool.aliases = aliases
                .iter()
                .map(|alias| {
                    serde_json::from_value::<AliasDeclaration>(serde_json::json!({"name": alias, "specs": {}})).unwrap()
                })
                .collect();
            tool
        })
        .collect();
    PluginDeclaration { tools }
}

const HASH_A: &str = "0123456789abcdef0123456789abcdef";
const HASH_B: &str = "fedcba9876543210fedcba9876543210";

/// Two library files in a temp dir, recorded under their real stamps.
fn recorded(dir: &Path) -> (Index, PathBuf, PathBuf) {
    let (a, b) = (dir.join("liba.so"), dir.join("libb.so"));
    std::fs::write(&a, b"a").unwrap();
    std::fs::write(&b, b"b").unwrap();
    let mut index = Index::default();
    index.record(
        &a,
        FileStamp::read(&a).unwrap(),
        HASH_A,
        Some(&declaration(&[("write_to_file", &["replace_in_file"])])),
    );
    index.record(&b, FileStamp::read(&b).unwrap(), HASH_B, Some(&declaration(&[("read_file", &[])])));
    (index, a, b)
}

#[test]
fn a_written_index_reads_back_and_plans_by_name_and_alias() {
    let dir = tempfile::tempdir().unwrap();
    let (index, a, b) = recorded(dir.path());
    let path = dir.path().join("cache/toolshed/index.json");
    index.write(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the index is private: {mode:o}");
    let read = Index::read(&path).unwrap();
    let plan = plan(&read, &[a.clone(), b.clone()]).unwrap();
    assert_eq!(plan.file_of("replace_in_file"), Some(a.as_path()));
    assert_eq!(plan.file_of("read_file"), Some(b.as_path()));
    assert_eq!(plan.file_of("search_files"), None);
    assert_eq!(plan.hash_of(&b), Some(HASH_B));
}

#[test]
fn a_changed_file_misses_the_fast_path() {
    let dir = tempfile::tempdir().unwrap();
    let (index, a, b) = recorded(dir.path());
    // Same size, same modification time: the change time still moves.
    let mtime = std::fs::metadata(&b).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&b, b"c").unwrap();
    std::fs::File::options().write(true).open(&b).unwrap().set_modified(mtime).unwrap();
    let error = plan(&index, &[a, b]).unwrap_err();
    assert!(error.contains("is not indexed as it is now"), "{error}");
}

#[test]
fn a_name_two_files_declare_is_left_to_the_full_load() {
    let dir = tempfile::tempdir().unwrap();
    let (mut index, a, b) = recorded(dir.path());
    index.record(&b, FileStamp::read(&b).unwrap(), HASH_B, Some(&declaration(&[("write_to_file", &[])])));
    let error = plan(&index, &[a, b]).unwrap_err();
    assert!(error.contains("'write_to_file' is declared by"), "{error}");
}

#[test]
fn hostile_index_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.json");
    let refused = |bytes: &[u8]| {
        std::fs::write(&path, bytes).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        match Index::read(&path) {
            Err(IndexError::Refused { reason, .. }) => reason,
            other => panic!("accepted {:?}: {other:?}", String::from_utf8_lossy(&bytes[..bytes.len().min(80)])),
        }
    };
    assert!(refused(b"{not json").starts_with("not an index"));
    assert!(refused(br#"{"format":2,"libraries":{},"files":[]}"#).starts_with("format 2"));
    assert!(refused(br#"{"format":1,"libraries":{"xyz":[["a"]]},"files":[]}"#).contains("not a content hash"));
    let bad_name = format!(r#"{{"format":1,"libraries":{{"{HASH_A}":[["has space"]]}},"files":[]}}"#);
    assert!(refused(bad_name.as_bytes()).contains("invalid tool"));
    let relative = format!(
        r#"{{"format":1,"libraries":{{"{HASH_A}":[["a"]]}},"files":[{{"path":"lib.so","dev":1,"ino":1,"size":1,"mtime_ns":1,"ctime_ns":1,"hash":"{HASH_A}"}}]}}"#
    );
    assert!(refused(relative.as_bytes()).contains("relative path"));
    let unknown = r#"{"format":1,"libraries":{},"files":[],"extra":true}"#;
    assert!(refused(unknown.as_bytes()).starts_with("not an index"));
    let huge = vec![b' '; MAX_INDEX_BYTES as usize + 1];
    assert!(refused(&huge).contains("over the"));

    // Writable by others, or a link: refused however good the content.
    std::fs::write(&path, br#"{"format":1,"libraries":{},"files":[]}"#).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert!(
        matches!(Index::read(&path), Err(IndexError::Refused { reason, .. }) if reason.contains("writable by others"))
    );
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(Index::read(&path).is_ok());
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    assert!(matches!(Index::read(&link), Err(IndexError::Read { .. })));
    assert!(matches!(Index::read(&dir.path().join("missing.json")), Err(IndexError::Read { .. })));
}

#[test]
fn pruning_keeps_what_this_process_recorded_and_drops_files_that_are_gone() {
    let dir = tempfile::tempdir().unwrap();
    let (index, a, b) = recorded(dir.path());
    let path = dir.path().join("index.json");
    index.write(&path).unwrap();
    std::fs::remove_file(&a).unwrap();
    // A later process, which recorded nothing: the file that is gone goes, with its library.
    let later = Index::read(&path).unwrap();
    later.write(&path).unwrap();
    let again = Index::read(&path).unwrap();
    assert_eq!(again.files.len(), 1);
    assert!(again.files.contains_key(&b) && again.declared(HASH_A).is_none());
}

#[test]
fn names_no_plugin_may_have_are_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("libx.so");
    std::fs::write(&file, b"x").unwrap();
    let mut index = Index::default();
    let stamp = FileStamp::read(&file).unwrap();
    index.record(&file, stamp, HASH_A, Some(&declaration(&[("ok", &["srv__mcp__x"]), ("bad name", &[])])));
    assert_eq!(index.declared(HASH_A), Some(&[vec!["ok".to_owned()]][..]));
    // A file that did not load declares nothing, and the written index still reads back.
    index.record(&file, stamp, HASH_B, None);
    assert_eq!(index.declared(HASH_B), Some(&[][..]));
    let path = dir.path().join("index.json");
    index.write(&path).unwrap();
    assert!(Index::read(&path).is_ok());
}

#[test]
fn a_library_declaring_more_than_the_index_planned_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("liba.so"), dir.path().join("libb.so"));
    std::fs::write(&a, b"a").unwrap();
    std::fs::write(&b, b"b").unwrap();
    // Library A declares more tools than the index keeps, the last one a name library B serves (and, first
    // in discovery order, wins in a full load). The index never sees A's `execute_command`.
    let many: Vec<String> = (0..MAX_TOOLS).map(|i| format!("tool_{i}")).collect();
    let mut tools: Vec<(&str, &[&str])> = many.iter().map(|name| (name.as_str(), &[][..])).collect();
    tools.push(("execute_command", &[]));
    let wide = declaration(&tools);
    let mut index = Index::default();
    index.record(&b, FileStamp::read(&b).unwrap(), HASH_B, Some(&declaration(&[("execute_command", &[])])));
    index.record(&a, FileStamp::read(&a).unwrap(), HASH_A, Some(&wide));
    let planned = plan(&index, &[b.clone(), a.clone()]).unwrap();
    assert_eq!(planned.file_of("execute_command"), Some(b.as_path()));
    assert_eq!(planned.file_of("tool_0"), Some(a.as_path()));
    // Loaded for `tool_0`, A must not be taken as what the index said: it would register B's tool.
    assert!(!planned.declares_exactly(&a, &wide));
    // A library whose declarations changed under the same bytes (it declares by its environment) neither.
    let narrow = declaration(&[("execute_command", &[])]);
    assert!(planned.declares_exactly(&b, &narrow));
    assert!(!planned.declares_exactly(&b, &declaration(&[("execute_command", &[]), ("read_file", &[])])));
    assert!(!planned.declares_exactly(&b, &declaration(&[("other_tool", &[])])));
}

#[test]
fn an_empty_or_relative_home_names_no_cache() {
    let os = |s: &str| Some(std::ffi::OsString::from(s));
    assert_eq!(cache_path(None, os("")), None);
    assert_eq!(cache_path(None, os("relative/home")), None);
    assert_eq!(cache_path(os("cache"), os("")), None, "a relative XDG_CACHE_HOME is ignored as before");
    assert_eq!(cache_path(None, os("/home/u")), Some(PathBuf::from("/home/u/.cache/toolshed/index.json")));
    assert_eq!(cache_path(os("/c"), os("/home/u")), Some(PathBuf::from("/c/toolshed/index.json")));
}

#[test]
fn a_stamp_identity_is_recorded_and_read_back_like_a_content_hash() {
    let dir = tempfile::tempdir().unwrap();
    let (file, other) = (dir.path().join("libfixed.so"), dir.path().join("libodd.so"));
    std::fs::write(&file, b"x").unwrap();
    std::fs::write(&other, b"y").unwrap();
    let stamp = FileStamp::read(&file).unwrap();
    for kind in ["fixed", "leased"] {
        let identity = format!("{kind}-{:032x}", stamp.digest());
        let mut index = Index::default();
        index.record(&file, stamp, &identity, None);
        // Anything else is still no identity, and is not recorded.
        let odd = ["fixed-", "fixed-xyz", "fixed-fixed-0123456789abcdef0123456789abcdef", "leased-fixed-0", "0123"];
        for odd in odd {
            index.record(&other, stamp, odd, None);
            assert_eq!(index.hash_of(&other, &stamp), None, "{odd}");
        }
        assert_eq!(index.hash_of(&file, &stamp), Some(identity.as_str()));
        let path = dir.path().join("index.json");
        index.write(&path).unwrap();
        let read = Index::read(&path).unwrap();
        assert_eq!(read.hash_of(&file, &stamp), Some(identity.as_str()));
    }
}
