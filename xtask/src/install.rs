//! `cargo xtask install [--prefix DIR] [--debug] [--no-build]`: the `toolshed` binary and the shipped plugins,
//! built and copied where everyday use finds them.
//!
//! Without a prefix the binary goes where `cargo install` puts binaries (`$CARGO_INSTALL_ROOT/bin`, else
//! `$CARGO_HOME/bin`, else `~/.cargo/bin`: already on a Rust user's `PATH`) and the plugins into
//! `~/.toolshed/plugins`, the CLI's default plugin directory. With `--prefix P` they go to `P/bin/toolshed` and
//! `P/lib/toolshed/plugins`, which the binary finds beside itself. Every file is written under a hidden
//! temporary name in its destination directory and renamed over the old one, so a running `toolshed` (or its
//! hot reload, which ignores names that are not libraries) never sees a half-written file.

use crate::{build, root};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Where one install puts things.
struct Destination {
    bin: PathBuf,
    plugins: PathBuf,
}

/// Runs the install with the command line after `install`.
pub fn run(args: &[String]) -> Result<()> {
    let mut prefix = None;
    let (mut release, mut build_first) = (true, true);
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--prefix" => prefix = Some(PathBuf::from(args.next().context("--prefix needs a directory")?)),
            // The tests install what `cargo xtask test` has just built, without a release build.
            "--debug" => release = false,
            "--no-build" => build_first = false,
            other => bail!("unknown install option '{other}'"),
        }
    }
    let destination = match prefix {
        Some(prefix) => {
            let prefix = std::path::absolute(&prefix).with_context(|| format!("--prefix {}", prefix.display()))?;
            Destination { bin: prefix.join("bin"), plugins: prefix.join("lib/toolshed/plugins") }
        }
        None => Destination { bin: cargo_bin_dir()?, plugins: home()?.join(".toolshed/plugins") },
    };
    let plugins = if build_first {
        build::plugins(release)?.plugins
    } else {
        root().join(if release { "target/plugins" } else { "target/plugins-debug" })
    };
    let binary = root().join(if release { "target/release" } else { "target/debug" }).join("toolshed");
    if !binary.is_file() {
        bail!("{} was not built (run without --no-build)", binary.display());
    }
    let libraries = libraries(&plugins)?;
    std::fs::create_dir_all(&destination.bin).with_context(|| format!("creating {}", destination.bin.display()))?;
    std::fs::create_dir_all(&destination.plugins)
        .with_context(|| format!("creating {}", destination.plugins.display()))?;
    let installed = destination.bin.join("toolshed");
    place(&binary, &installed)?;
    for library in &libraries {
        let name = library.file_name().context("a library without a file name")?;
        place(library, &destination.plugins.join(name))?;
    }
    eprintln!("xtask: installed {}", installed.display());
    eprintln!("xtask: installed {} plugins in {}", libraries.len(), destination.plugins.display());
    advise(&destination);
    Ok(())
}

/// The shipped plugin libraries `cargo xtask plugins` left in `dir`, sorted.
fn libraries(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {} (run without --no-build)", dir.display()))?
        .filter_map(std::result::Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|ext| ext == std::env::consts::DLL_EXTENSION))
        .collect();
    found.sort();
    if found.is_empty() {
        bail!("no plugin libraries in {}", dir.display());
    }
    Ok(found)
}

/// Copies `from` to `to` through a hidden temporary file beside `to`, synced, then renamed over `to`: a reader
/// sees the old file or the new one, whole. The temporary name does not end in the library extension, so the
/// runtime's discovery and hot reload never look at it.
fn place(from: &Path, to: &Path) -> Result<()> {
    let dir = to.parent().context("a destination without a directory")?;
    let name = to.file_name().context("a destination without a file name")?.to_string_lossy();
    let partial = dir.join(format!(".{name}.partial-{}", std::process::id()));
    // Created new (never through a link or over a file someone left under that name in a shared prefix),
    // with the source's permissions.
    let created = (|| {
        use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
        let mut source = std::fs::File::open(from)?;
        let mode = source.metadata()?.permissions().mode() & 0o777;
        let mut out = std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&partial)?;
        // As `fs::copy` did: the source's mode, whatever the umask.
        out.set_permissions(std::fs::Permissions::from_mode(mode))?;
        std::io::copy(&mut source, &mut out)?;
        out.sync_all()
    })();
    let copied = match created {
        // Our own name is taken: a file this install did not make is never written through or kept.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(e).with_context(|| format!("{} exists; remove it and install again", partial.display()))
        }
        other => other.and_then(|()| std::fs::rename(&partial, to)),
    };
    if let Err(e) = copied {
        let _ = std::fs::remove_file(&partial);
        return Err(e).with_context(|| format!("installing {} as {}", from.display(), to.display()));
    }
    Ok(())
}

/// Where `cargo install` puts binaries: `$CARGO_INSTALL_ROOT/bin`, else `$CARGO_HOME/bin`, else `~/.cargo/bin`.
fn cargo_bin_dir() -> Result<PathBuf> {
    for var in ["CARGO_INSTALL_ROOT", "CARGO_HOME"] {
        if let Some(dir) = std::env::var_os(var).filter(|dir| !dir.is_empty()) {
            return Ok(PathBuf::from(dir).join("bin"));
        }
    }
    Ok(home()?.join(".cargo/bin"))
}

fn home() -> Result<PathBuf> {
    std::env::var_os("HOME").filter(|home| !home.is_empty()).map(PathBuf::from).context("HOME is not set")
}

/// Says what would keep the installed command from finding itself or its plugins.
fn advise(destination: &Destination) {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| same_dir(&dir, &destination.bin)));
    if !on_path {
        eprintln!(
            "xtask: {} is not on your PATH; add it, or run {}",
            destination.bin.display(),
            destination.bin.join("toolshed").display()
        );
    }
    if let Some(dir) = std::env::var_os("TOOLSHED_PLUGINS") {
        eprintln!(
            "xtask: TOOLSHED_PLUGINS is set ({}): toolshed loads the plugins there instead; unset it to use {}",
            Path::new(&dir).display(),
            destination.plugins.display()
        );
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    a == b || a.canonicalize().ok().is_some_and(|a| b.canonicalize().is_ok_and(|b| a == b))
}

#[cfg(test)]
mod tests {
    use super::place;

    #[test]
    fn a_placed_file_replaces_the_old_one_whole_and_leaves_no_temporary_behind() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("new");
        std::fs::write(&source, b"new bytes").unwrap();
        let dest_dir = dir.path().join("dest");
        std::fs::create_dir(&dest_dir).unwrap();
        let dest = dest_dir.join("libx.so");
        std::fs::write(&dest, b"old").unwrap();
        // A reader holding the old file keeps reading the old bytes: the new file is a new inode.
        let held = std::fs::File::open(&dest).unwrap();
        place(&source, &dest).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"new bytes");
        assert_eq!(std::io::read_to_string(held).unwrap(), "old");
        let names: Vec<_> = std::fs::read_dir(&dest_dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["libx.so"]);
    }

    #[test]
    fn a_link_left_under_the_temporary_name_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("new");
        std::fs::write(&source, b"new bytes").unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let dest_dir = dir.path().join("dest");
        std::fs::create_dir(&dest_dir).unwrap();
        // Someone who can write in a shared prefix guesses the temporary name.
        let planted = dest_dir.join(format!(".toolshed.partial-{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let err = place(&source, &dest_dir.join("toolshed")).unwrap_err();
        assert!(format!("{err:#}").contains("exists"), "{err:#}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(!dest_dir.join("toolshed").exists());
    }
}
