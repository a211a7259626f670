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
    let file = std::fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK).open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "it is not a regular file"));
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
    String::from_utf8(read(path, cap)?).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not UTF-8 text"))
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
}
