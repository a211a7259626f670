//! A client's `roots` as a session's workspace roots: `file://` URIs of existing directories, percent-decoded
//! and canonicalized, the first the primary, at most [`MAX_ROOTS`] of them. Anything else a client sends is
//! ignored (and logged at debug): a path that is not UTF-8 (the workspace is text, and a lossy copy would name
//! another directory), a name with control or line-separator characters or longer than [`MAX_NAME`] (the
//! name is shown to the model, which must not read it as lines of its own) falls back to the directory's.
// Roots are deprecated by a protocol revision after the ones the pinned clients speak; they still send them.
#![allow(deprecated)]

use rmcp::model::Root;
use std::path::PathBuf;

/// The most roots a session takes: every call carries them in its task info.
pub(super) const MAX_ROOTS: usize = 64;
/// The longest root name taken, in characters.
pub(super) const MAX_NAME: usize = 128;

/// The workspace roots `roots` name, as (name, canonical directory), in the client's order without repeats.
pub(super) fn workspace_roots(roots: &[Root]) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for root in roots {
        if out.len() == MAX_ROOTS {
            tracing::debug!("ignoring the client's roots after the first {MAX_ROOTS}");
            break;
        }
        let Some(path) = directory(&root.uri) else {
            continue;
        };
        if out.iter().any(|(_, seen)| *seen == path) {
            continue;
        }
        let name = root
            .name
            .as_deref()
            .map(str::trim)
            .filter(|name| {
                !name.is_empty()
                    && name.chars().count() <= MAX_NAME
                    && !name.chars().any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'))
            })
            .map_or_else(|| crate::workspace::root_name(&path), str::to_owned);
        out.push((name, path));
    }
    out
}

/// The existing directory a `file://` URI names, canonicalized.
fn directory(uri: &str) -> Option<PathBuf> {
    let ignored = |why: &str| {
        tracing::debug!("ignoring the client's root {:?}: {why}", crate::shown::escape_line(uri));
        None
    };
    let Ok(url) = url::Url::parse(uri) else {
        return ignored("not a URI");
    };
    if url.scheme() != "file" {
        return ignored("not a file:// URI");
    }
    // `to_file_path` percent-decodes, and refuses a host other than `localhost` or none.
    let Ok(path) = url.to_file_path() else {
        return ignored("not a local path");
    };
    match std::fs::canonicalize(&path) {
        Ok(path) if path.to_str().is_none() => ignored("not a UTF-8 path"),
        Ok(path) if path.is_dir() => Some(path),
        Ok(_) => ignored("not a directory"),
        Err(_) => ignored("no such directory"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(uri: &str, name: Option<&str>) -> Root {
        serde_json::from_value(serde_json::json!({"uri": uri, "name": name})).unwrap()
    }

    #[test]
    fn file_uris_of_directories_are_kept_in_order_and_the_rest_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let spaced = dir.path().join("with space");
        std::fs::create_dir(&spaced).unwrap();
        std::fs::write(dir.path().join("file.txt"), "x").unwrap();
        let base = dir.path().canonicalize().unwrap();
        let encoded = format!("file://{}/with%20space", base.display());
        let roots = workspace_roots(&[
            root("https://example.com/x", None),
            root(&encoded, Some("mine")),
            root(&format!("file://{}", base.display()), None),
            root(&format!("file://{}/file.txt", base.display()), None),
            root(&format!("file://{}/missing", base.display()), None),
            root(&format!("file://{}/./with%20space", base.display()), None),
            root("file://elsewhere.example/etc", None),
            root("not a uri", None),
        ]);
        let paths: Vec<&PathBuf> = roots.iter().map(|(_, path)| path).collect();
        assert_eq!(paths, vec![&spaced.canonicalize().unwrap(), &base]);
        assert_eq!(roots[0].0, "mine");
    }

    #[test]
    fn names_that_would_read_as_lines_paths_that_are_not_text_and_floods_are_not_taken() {
        use std::os::unix::ffi::OsStrExt as _;
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let uri = format!("file://{}", base.display());
        let default = crate::workspace::root_name(&base);
        for name in ["a\nb", "a\u{1b}[2Jb", "a\u{2028}b", "a\u{85}b", "a\tb", &"n".repeat(MAX_NAME + 1)] {
            let roots = workspace_roots(&[root(&uri, Some(name))]);
            assert_eq!(roots, vec![(default.clone(), base.clone())], "{name:?}");
        }
        // A directory whose name is not UTF-8: a lossy copy of its path would be another directory.
        let raw = base.join(std::ffi::OsStr::from_bytes(b"x\xff"));
        std::fs::create_dir(&raw).unwrap();
        std::fs::create_dir(base.join("x\u{fffd}")).unwrap();
        assert!(workspace_roots(&[root(&format!("{uri}/x%FF"), None)]).is_empty());
        // NUL, `..` up to `/` through a symlink: the NUL is refused, the rest canonicalized.
        assert!(workspace_roots(&[root(&format!("{uri}/x%00y"), None)]).is_empty());
        std::os::unix::fs::symlink("/", base.join("up")).unwrap();
        let up = workspace_roots(&[root(&format!("{uri}/up/tmp/.."), None)]);
        assert_eq!(up.iter().map(|(_, p)| p.clone()).collect::<Vec<_>>(), vec![PathBuf::from("/")]);
        let many: Vec<Root> = (0..MAX_ROOTS + 10)
            .map(|i| {
                let sub = base.join(format!("d{i}"));
                std::fs::create_dir(&sub).unwrap();
                root(&format!("file://{}", sub.display()), None)
            })
            .collect();
        assert_eq!(workspace_roots(&many).len(), MAX_ROOTS);
    }
}
