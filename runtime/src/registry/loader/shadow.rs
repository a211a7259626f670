//! This process's shadow directory, where writable libraries are copied before they are mapped: private to the
//! user, locked for the process's lifetime, and cleared of what dead processes left.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// This process's shadow directory: created once, locked for the process's lifetime (the lock is the kernel's,
/// so it goes with the process however it ends), and the directories of dead processes removed on the way.
struct ShadowDir {
    dir: PathBuf,
    _lock: nix::fcntl::Flock<std::fs::File>,
}

static SHADOW: OnceLock<Result<ShadowDir, String>> = OnceLock::new();

/// Where every user's shadow directories live: one per process under it.
fn shadow_base() -> PathBuf {
    let user = std::env::var("USER").unwrap_or_else(|_| "user".to_owned());
    std::env::temp_dir().join(format!("toolshed-shadow-{user}"))
}

/// This process's shadow directory, made on first use.
pub fn shadow_dir() -> Result<&'static Path, String> {
    match SHADOW.get_or_init(|| shadow_in(&shadow_base(), private_shadow_base().as_deref())) {
        Ok(shadow) => Ok(&shadow.dir),
        Err(message) => Err(message.clone()),
    }
}

/// The shadow directory under `base` when `base` is this user's alone, else under `fallback` (in the user's
/// cache): `base` sits in the shared temporary directory under a name anyone can guess, and whoever can write
/// in it could swap a checked copy for their own library between its rename and the dynamic loader opening it.
fn shadow_in(base: &Path, fallback: Option<&Path>) -> Result<ShadowDir, String> {
    let why = match private_base(base) {
        Ok(()) => return make_shadow_dir(base),
        Err(why) => why,
    };
    let Some(fallback) = fallback else {
        return Err(format!("the shadow directory {} is not safe to use: {why}; set TMPDIR", base.display()));
    };
    tracing::warn!("not using the shadow directory {}: {why}; using {}", base.display(), fallback.display());
    if let Some(parent) = fallback.parent() {
        use std::os::unix::fs::DirBuilderExt as _;
        let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent);
    }
    private_base(fallback).map_err(|also| {
        format!(
            "neither shadow directory is safe to use: {} is {why}, {} is {also}",
            base.display(),
            fallback.display()
        )
    })?;
    make_shadow_dir(fallback)
}

/// The shadow base used when the shared one is not this user's alone: `shadow` in the user's cache directory.
fn private_shadow_base() -> Option<PathBuf> {
    Some(crate::registry::index::default_path()?.parent()?.join("shadow"))
}

/// Creates `base` (mode 0700) if it is missing, and checks it is a directory, not a link, owned by this user
/// and writable by nobody else.
fn private_base(base: &Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
    match std::fs::DirBuilder::new().mode(0o700).create(base) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create it: {e}")),
    }
    let meta = std::fs::symlink_metadata(base).map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_dir() {
        return Err("not a directory".to_owned());
    }
    if meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(format!("owned by uid {}, not by this user", meta.uid()));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!("writable by others (mode {:o})", meta.mode() & 0o7777));
    }
    Ok(())
}

fn make_shadow_dir(base: &Path) -> Result<ShadowDir, String> {
    let fail = |what: &str, path: &Path, e: &dyn fmt::Display| format!("cannot {what} {}: {e}", path.display());
    std::fs::create_dir_all(base).map_err(|e| fail("create the shadow directory", base, &e))?;
    clean_stale(base);
    let pid = std::process::id();
    // Made under a temporary name and locked before it gets its final one, so another process cleaning up
    // never sees an unlocked live directory.
    let creating = base.join(format!("{pid}.creating"));
    let _ = std::fs::remove_dir_all(&creating);
    std::fs::create_dir(&creating).map_err(|e| fail("create the shadow directory", &creating, &e))?;
    let lock_path = creating.join("lock");
    let file = std::fs::File::create(&lock_path).map_err(|e| fail("create the lock file", &lock_path, &e))?;
    let lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|(_, e)| fail("lock", &lock_path, &e))?;
    let dir = base.join(pid.to_string());
    // A directory with our pid belongs to a dead process whose pid was reused: nobody alive holds its lock.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&creating, &dir).map_err(|e| fail("create the shadow directory", &dir, &e))?;
    Ok(ShadowDir { dir, _lock: lock })
}

/// Removes what dead processes left in `base`: directories whose lock nobody holds, half-made directories and
/// loose files of processes that are gone.
fn clean_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.split(['.', '-']).next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        let alive = process_alive(pid);
        if path.is_dir() && !name.contains('.') {
            let unlocked = std::fs::File::open(path.join("lock"))
                .ok()
                .is_some_and(|f| nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock).is_ok());
            if unlocked || !alive {
                let _ = std::fs::remove_dir_all(&path);
            }
        } else if !alive {
            // `{pid}.creating` directories and the loose copies of older versions, which had no directory.
            let _ = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        }
    }
}

fn process_alive(pid: i32) -> bool {
    // Signal 0 checks existence; EPERM means it exists under another user.
    !matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None), Err(nix::errno::Errno::ESRCH))
}

/// The plugin library copies `/proc/self/maps` shows: those in the shadow directory and those mapped from files
/// whose inode is in `in_place`; how many, and their mapped size in bytes. `None` where there is no such file.
pub(super) fn mapped_copies(in_place: &std::collections::BTreeSet<u64>) -> Option<(u64, u64)> {
    let (Ok(dir), Ok(maps)) = (shadow_dir(), std::fs::read_to_string("/proc/self/maps")) else {
        return None;
    };
    let dir = format!("{}/", dir.display());
    let mut copies = std::collections::HashMap::<&str, u64>::new();
    for line in maps.lines() {
        // `start-end perms offset dev inode path`; the path may end in " (deleted)" (copies are removed once open).
        let mut fields = line.splitn(6, ' ');
        let range = fields.next().unwrap_or_default();
        let inode = fields.nth(3).and_then(|inode| inode.parse::<u64>().ok()).unwrap_or(0);
        let Some(path) = fields
            .next()
            .map(str::trim_start)
            .filter(|path| path.starts_with(&dir) || (inode != 0 && in_place.contains(&inode)))
        else {
            continue;
        };
        let size = range
            .split_once('-')
            .and_then(|(start, end)| Some(u64::from_str_radix(end, 16).ok()? - u64::from_str_radix(start, 16).ok()?))
            .unwrap_or(0);
        *copies.entry(path).or_default() += size;
    }
    Some((copies.len() as u64, copies.values().sum()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_shadow_directories_are_cleaned_and_live_ones_kept() {
        let base = tempfile::tempdir().unwrap();
        // A dead process's directory (its lock file unlocked), and a live one's (locked by a child process).
        let dead = base.path().join("999999999");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join("lock"), b"").unwrap();
        std::fs::write(base.path().join("999999998-abc-libx.so"), b"").unwrap();
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let live = base.path().join(child.id().to_string());
        std::fs::create_dir(&live).unwrap();
        let lock = nix::fcntl::Flock::lock(
            std::fs::File::create(live.join("lock")).unwrap(),
            nix::fcntl::FlockArg::LockExclusiveNonblock,
        )
        .unwrap();
        let other = base.path().join("not-a-pid");
        std::fs::create_dir(&other).unwrap();
        let mine = make_shadow_dir(base.path()).unwrap();
        assert!(!dead.exists() && !base.path().join("999999998-abc-libx.so").exists());
        assert!(live.exists() && other.exists());
        assert_eq!(mine.dir, base.path().join(std::process::id().to_string()));
        assert!(mine.dir.join("lock").is_file());
        drop(lock);
        // Unlocked now: the next process cleans it even though its pid is alive.
        clean_stale(base.path());
        assert!(!live.exists());
        assert!(mine.dir.exists(), "our own directory stays: its lock is held");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn a_shadow_base_others_can_write_or_a_link_is_not_used() {
        use std::os::unix::fs::PermissionsExt as _;
        let temp = tempfile::tempdir().unwrap();
        // Another user's base would be refused by owner; one anyone can write is refused by mode, a link
        // (to a directory someone else controls) as a link.
        let open = temp.path().join("toolshed-shadow-open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let linked = temp.path().join("toolshed-shadow-linked");
        std::os::unix::fs::symlink(&open, &linked).unwrap();
        let fallback = temp.path().join("cache/toolshed/shadow");
        for base in [&open, &linked] {
            assert!(private_base(base).is_err(), "{} was accepted", base.display());
            let shadow = shadow_in(base, Some(&fallback)).unwrap();
            assert_eq!(shadow.dir, fallback.join(std::process::id().to_string()));
            let mode = std::fs::metadata(&fallback).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "the fallback is private: {mode:o}");
            drop(shadow);
        }
        assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0, "nothing was made in the open base");
        let refused = shadow_in(&open, None).err().unwrap();
        assert!(refused.contains("writable by others"), "{refused}");
        // A missing base is made private, and used.
        let fresh = temp.path().join("toolshed-shadow-fresh");
        let shadow = shadow_in(&fresh, None).unwrap();
        assert_eq!(shadow.dir, fresh.join(std::process::id().to_string()));
        assert_eq!(std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o077, 0);
    }
}
