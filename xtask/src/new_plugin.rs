//! `cargo xtask new-plugin NAME [--dir DIR]`: a new tool plugin crate from `xtask/template/`, with a `Tool`
//! implementation and its tests, that builds inside this workspace or anywhere else.

use crate::root;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;

/// The template's files: (path in the new crate, text with `{{…}}` placeholders).
const TEMPLATE: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../template/Cargo.toml.in")),
    ("src/lib.rs", include_str!("../template/src/lib.rs.in")),
];

/// Where the new crate's `toolshed-plugin-api` comes from.
enum Api {
    /// A directory holding its source: this repository's `plugin-api/`, or an unpacked `cargo package`.
    Path(PathBuf),
    /// A registry version requirement.
    Version(String),
}

/// Parses the arguments after `new-plugin` and writes the crate; returns its directory.
pub fn run(args: &[String]) -> Result<PathBuf> {
    let usage = "usage: cargo xtask new-plugin NAME [--dir DIR] [--api-path DIR | --api-version VERSION]";
    let mut name = None;
    let mut dir = None;
    let mut api = Api::Path(root().join("plugin-api"));
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value = || rest.next().with_context(|| format!("{arg} needs a value\n\n{usage}"));
        match arg.as_str() {
            "--dir" => dir = Some(PathBuf::from(value()?)),
            "--api-path" => api = Api::Path(PathBuf::from(value()?)),
            "--api-version" => api = Api::Version(value()?.clone()),
            flag if flag.starts_with('-') => bail!("unknown option {flag}\n\n{usage}"),
            other if name.is_none() => name = Some(other.to_owned()),
            other => bail!("unexpected argument {other}\n\n{usage}"),
        }
    }
    let name = name.with_context(|| usage.to_owned())?;
    check_name(&name)?;
    let parent = match dir {
        Some(dir) => dir,
        None => std::env::current_dir()?,
    };
    std::fs::create_dir_all(&parent).with_context(|| format!("creating {}", parent.display()))?;
    let parent = parent.canonicalize()?;
    let dest = parent.join(&name);
    if dest.exists() {
        bail!("{} already exists", dest.display());
    }
    let api_dependency = match &api {
        Api::Path(path) => {
            let path = path.canonicalize().with_context(|| format!("the plugin API at {}", path.display()))?;
            format!("toolshed-plugin-api = {{ path = {:?} }}", path.display().to_string())
        }
        Api::Version(version) => format!("toolshed-plugin-api = {version:?}"),
    };
    // Inside `plugins/` the crate is a member of this workspace; anywhere else it is a workspace of its own.
    let member = parent == root().join("plugins");
    let workspace =
        if member { "" } else { "\n# A workspace of its own, not part of any directory above it.\n[workspace]\n" };
    let type_name = camel(&name);
    for (path, text) in TEMPLATE {
        let text = text
            .replace("{{name}}", &name)
            .replace("{{Type}}", &type_name)
            .replace("{{api_dependency}}", &api_dependency)
            .replace("{{workspace}}", workspace);
        let file = dest.join(path);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
    }
    if !member {
        // Resolve dependencies as this workspace does, so the plugin gets the abi_stable the runtime has.
        let lock = root().join("Cargo.lock");
        if lock.is_file() {
            std::fs::copy(&lock, dest.join("Cargo.lock"))?;
        }
    }
    eprintln!("xtask: created {} (tool `{name}`); build it with `cargo build --release` there", dest.display());
    Ok(dest)
}

/// A tool name that is also a crate and library name: `^[a-z][a-z0-9_]{0,63}$`.
fn check_name(name: &str) -> Result<()> {
    let ok = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !ok {
        bail!("'{name}' is not a plugin name: use lower-case letters, digits and '_', starting with a letter (at most 64)");
    }
    Ok(())
}

/// `my_tool` → `MyTool`.
fn camel(name: &str) -> String {
    name.split('_')
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_types() {
        assert_eq!(camel("hello_tool"), "HelloTool");
        assert!(check_name("hello_tool2").is_ok());
        assert!(check_name("Hello").is_err() && check_name("2x").is_err() && check_name("a-b").is_err());
    }

    #[test]
    fn writes_a_standalone_crate() {
        let dir = std::env::temp_dir().join(format!("xtask-new-plugin-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let args: Vec<String> =
            ["greeter", "--dir", &dir.to_string_lossy()].iter().map(std::string::ToString::to_string).collect();
        let crate_dir = run(&args).unwrap_or_else(|e| panic!("{e:#}"));
        let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap_or_default();
        assert!(manifest.contains("name = \"greeter\"") && manifest.contains("\n[workspace]\n"), "{manifest}");
        assert!(manifest.contains("toolshed-plugin-api = { path = "), "{manifest}");
        let lib = std::fs::read_to_string(crate_dir.join("src/lib.rs")).unwrap_or_default();
        assert!(lib.contains("impl Tool for Greeter") && !lib.contains("{{"), "{lib}");
        assert!(run(&args).is_err(), "an existing crate is never overwritten");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
