//! `cargo xtask plugins`: one `cargo build --workspace` (features unify once), then the plugin and fixture
//! libraries copied into their own directories, which is what the runtime and the tests load.

use crate::{cmd, root};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Where the built libraries went.
pub struct Built {
    /// Shipped plugins: `target/plugins` (release) or `target/plugins-debug`.
    pub plugins: PathBuf,
    /// Test fixtures: `target/fixtures[-debug]`.
    pub fixtures: PathBuf,
}

/// Builds the workspace and copies the plugin libraries.
pub fn plugins(release: bool) -> Result<Built> {
    // Two runs at once (a test run and a bench, say) would clear each other's plugin directories while the
    // other copies into them or loads from them: one run at a time, from the build to the last copy.
    std::fs::create_dir_all(root().join("target"))?;
    let lock_path = root().join("target/.xtask-plugins.lock");
    let lock = std::fs::File::create(&lock_path).with_context(|| format!("creating {}", lock_path.display()))?;
    if lock.try_lock().is_err() {
        eprintln!("xtask: waiting for another `cargo xtask` run to finish with the plugin directories");
        lock.lock().with_context(|| format!("locking {}", lock_path.display()))?;
    }
    let mut args = vec!["build", "--workspace"];
    if release {
        args.push("--release");
    }
    cmd("cargo", &args, &[])?;
    let profile = if release { "release" } else { "debug" };
    let suffix = if release { "" } else { "-debug" };
    let target = root().join("target");
    let out = target.join(profile);
    let plugins = copy_libraries(&root().join("plugins"), &out, &target.join(format!("plugins{suffix}")))?;
    let fixtures =
        copy_libraries(&root().join("host-tests/fixtures"), &out, &target.join(format!("fixtures{suffix}")))?;
    variants(release, &fixtures)?;
    eprintln!("xtask: plugins in {}", plugins.display());
    Ok(Built { plugins, fixtures })
}

/// Second builds of fixtures with a feature on, copied into `fixtures/variants/`: the hot-reload tests swap
/// them in over the first builds. Their own target directory, because a cdylib's file name does not change
/// with its features: building both in one directory would leave either build under the other's name.
fn variants(release: bool, fixtures: &Path) -> Result<()> {
    let target = root().join("target/fixtures-variants");
    let mut args = vec!["build", "--package", "toolshed-fixture_reload", "--features", "variant_b"];
    if release {
        args.push("--release");
    }
    cmd("cargo", &args, &[("CARGO_TARGET_DIR", &target)])?;
    let dest = fixtures.join("variants");
    std::fs::create_dir_all(&dest)?;
    let file = library_file("fixture_reload");
    let from = target.join(if release { "release" } else { "debug" }).join(&file);
    std::fs::copy(&from, dest.join(&file)).with_context(|| format!("copying {}", from.display()))?;
    Ok(())
}

/// Copies `lib<name>.so` for every crate directory under `crates` from `out` into a fresh `dest`: into a
/// staging directory first, put in place by renames, so `dest` is never seen half-filled.
fn copy_libraries(crates: &Path, out: &Path, final_dest: &Path) -> Result<PathBuf> {
    let staging = final_dest.with_extension("staging");
    if staging.exists() {
        std::fs::remove_dir_all(&staging).with_context(|| format!("clearing {}", staging.display()))?;
    }
    std::fs::create_dir_all(&staging)?;
    let dest = staging.as_path();
    let mut names: Vec<String> = std::fs::read_dir(crates)
        .with_context(|| format!("reading {}", crates.display()))?
        .filter_map(std::result::Result::ok)
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        let file = library_file(&name);
        let from = out.join(&file);
        if !from.is_file() {
            bail!("{} was not built; is `[lib] name = \"{name}\"` and crate-type cdylib set?", from.display());
        }
        // Copy, never link: a running runtime may still have the old file mapped.
        std::fs::copy(&from, dest.join(&file)).with_context(|| format!("copying {}", from.display()))?;
    }
    let old = final_dest.with_extension("old");
    if old.exists() {
        std::fs::remove_dir_all(&old).with_context(|| format!("clearing {}", old.display()))?;
    }
    if final_dest.exists() {
        std::fs::rename(final_dest, &old).with_context(|| format!("moving {} aside", final_dest.display()))?;
    }
    std::fs::rename(&staging, final_dest).with_context(|| format!("putting {} in place", final_dest.display()))?;
    if old.exists() {
        std::fs::remove_dir_all(&old).with_context(|| format!("clearing {}", old.display()))?;
    }
    Ok(final_dest.to_owned())
}

/// The platform's file name of a dynamic library.
pub fn library_file(name: &str) -> String {
    format!("{}{name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX)
}
