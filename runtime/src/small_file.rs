//! Reading the small files a repository hands the host (config files, rules files, skills): regular files
//! only, opened without blocking, and never more than a cap.
//!
//! A cloned repository can make any of them a link to `/dev/zero` (read forever, take the memory), to
//! `/dev/stdin` or a FIFO (opening or reading blocks the start), or simply huge. Opening with `O_NONBLOCK`
//! returns at once for a FIFO; the opened file is then looked at, so what is checked is what is read.

use std::io::{self, Read as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

/// The bytes of the regular file at `path`, at most `cap` of them.
///
/// # Errors
///
/// The open's own error (`NotFound` for a missing file); `InvalidInput` for anything that is not a regular
/// file; `FileTooLarge` for a file over `cap`. Each message says which, in words for the user.
pub(crate) fn read(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    read_open(open(path, 0)?, cap, false)
}

/// [`read`] for a file that must stay inside `dir` (a skill's folder), whatever links lead to it: the path
/// resolved must lie in `dir` resolved, it is opened by that resolved path without following a link (one
/// swapped in after the look is refused), and it may have no other hard link (which could be a file
/// anywhere on the file system).
///
/// # Errors
///
/// As [`read`]; `PermissionDenied` for a file that resolves outside `dir` or has other hard links.
pub(crate) fn read_within(path: &Path, dir: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let dir = dir.canonicalize()?;
    let real = path.canonicalize()?;
    if !real.starts_with(&dir) {
        let message = format!("it leads out of {} (to {})", dir.display(), real.display());
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, message));
    }
    read_open(open(&real, nix::libc::O_NOFOLLOW)?, cap, true)
}

fn open(path: &Path, flags: i32) -> io::Result<std::fs::File> {
    std::fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK | flags).open(path)
}

fn read_open(file: std::fs::File, cap: u64, single_link: bool) -> io::Result<Vec<u8>> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "it is not a regular file"));
    }
    if single_link && meta.nlink() > 1 {
        let message = format!("it has {} hard links, and another may be any file", meta.nlink());
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, message));
    }
    let too_large = || io::Error::new(io::ErrorKind::FileTooLarge, format!("it is larger than {} KiB", cap / 1024));
    if meta.len() > cap {
        return Err(too_large());
    }
    // The file may grow after the look: read one byte past the cap to tell.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_large());
    }
    Ok(bytes)
}

/// [`read`], as UTF-8 text (`InvalidData` when it is not).
pub(crate) fn read_text(path: &Path, cap: u64) -> io::Result<String> {
    utf8(read(path, cap)?)
}

/// [`read_within`], as UTF-8 text (`InvalidData` when it is not).
pub(crate) fn read_text_within(path: &Path, dir: &Path, cap: u64) -> io::Result<String> {
    utf8(read_within(path, dir, cap)?)
}

fn utf8(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_small_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small");
        std::fs::write(&small, "abc").unwrap();
        assert_eq!(read(&small, 3).unwrap(), b"abc");
        assert_eq!(read(&small, 2).unwrap_err().kind(), io::ErrorKind::FileTooLarge);
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        for special in [fifo.as_path(), Path::new("/dev/zero"), dir.path()] {
            assert_eq!(read(special, 1024).unwrap_err().kind(), io::ErrorKind::InvalidInput, "{special:?}");
        }
        assert_eq!(read(&dir.path().join("missing"), 1).unwrap_err().kind(), io::ErrorKind::NotFound);
        std::fs::write(&small, [0xe9]).unwrap();
        assert_eq!(read_text(&small, 8).unwrap_err().kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn a_confined_read_stays_in_its_directory() {
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        std::fs::write(&secret, "secret").unwrap();
        let dir = outside.path().join("skill");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("real"), "inside").unwrap();
        std::os::unix::fs::symlink("real", dir.join("link-in")).unwrap();
        std::os::unix::fs::symlink(&secret, dir.join("link-out")).unwrap();
        std::os::unix::fs::symlink("../secret", dir.join("relative-out")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero")).unwrap();
        assert_eq!(read_within(&dir.join("link-in"), &dir, 64).unwrap(), b"inside");
        for name in ["link-out", "relative-out", "zero"] {
            let error = read_within(&dir.join(name), &dir, 64).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::PermissionDenied, "{name}: {error}");
        }
        std::fs::hard_link(&secret, dir.join("hard")).unwrap();
        let error = read_within(&dir.join("hard"), &dir, 64).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied, "{error}");
        let fifo = dir.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert_eq!(read_within(&fifo, &dir, 64).unwrap_err().kind(), io::ErrorKind::InvalidInput);
        std::fs::write(dir.join("big"), "x".repeat(65)).unwrap();
        assert_eq!(read_within(&dir.join("big"), &dir, 64).unwrap_err().kind(), io::ErrorKind::FileTooLarge);
    }
}
