//! A client's `roots` as a session's workspace roots: `file://` URIs of existing directories, percent-decoded
//! and canonicalized, the first the primary. Anything else a client sends is ignored (and logged at debug).
// Roots are deprecated by a protocol revision after the ones the pinned clients speak; they still send them.
#![allow(deprecated)]

use rmcp::model::Root;
use std::path::PathBuf;

/// The workspace roots `roots` name, as (name, canonical directory), in the client's order without repeats.
pub(super) fn workspace_roots(roots: &[Root]) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for root in roots {
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
            .filter(|name| !name.is_empty() && !name.contains(['\n', '\r']))
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
}
