//! Confirmed file access: opening and reading the very file the path checks allowed, never one a link
//! swapped in afterwards, and never blocking on a FIFO or reading an endless file.

use super::{result, HostClient};
use std::path::Path;

impl HostClient<'_> {
    /// Opens a file for reading and confirms that what was opened is what the path checks saw.
    ///
    /// A link swapped between a tool's checks and its `open` would otherwise lead a read that needed no
    /// approval (inside the workspace) to a file outside it, or past `.clineignore`. The real path of the open
    /// descriptor is checked again, so whatever the file system did in between, the bytes read are the ones
    /// the checks allowed. Never blocks on a FIFO (opened non-blocking; the caller checks the file type).
    ///
    /// `approved` is the call's [`ToolCall::approved`](crate::ToolCall): without it, a file that turns out to
    /// lie outside the workspace is refused.
    pub fn open_confirmed(&self, absolute: &str, approved: bool) -> Result<std::fs::File, OpenError> {
        let file = open_nonblocking(Path::new(absolute)).map_err(OpenError::Io)?;
        if let Some(real) = opened_path(&file) {
            let real = real.to_string_lossy();
            // Without links on the way, the checks saw this very path.
            if real != absolute {
                let allowed = self.path_allowed(&real).map_err(|e| OpenError::Refused(e.message))?;
                if !allowed {
                    return Err(OpenError::Refused(result::clineignore_error(&real)));
                }
                if !approved && !self.resolve_path(&real).map_err(|e| OpenError::Refused(e.message))?.inside_workspace {
                    return Err(OpenError::Refused(format!(
                        "{absolute} leads to {real}, outside the workspace, which this call was not approved to \
                         read (a link, or one changed after it was checked). Read that file with read_file to be \
                         asked for approval."
                    )));
                }
            }
        }
        Ok(file)
    }

    /// Reads a whole file through [`HostClient::open_confirmed`]: a regular file only (a FIFO or a device could
    /// block or never end), and at most `cap` bytes. The one way a tool that needs a file's bytes at once (an
    /// outline, an image, a document, an edit) reads it, so a link swapped after the checks, a file that lies
    /// outside the workspace, and a huge or endless file all end the same way, with a reason.
    pub fn read_confirmed(&self, absolute: &str, approved: bool, cap: u64) -> Result<Vec<u8>, ReadError> {
        let file = self.open_confirmed(absolute, approved).map_err(|e| match e {
            OpenError::Io(e) => ReadError::Io(e),
            OpenError::Refused(message) => ReadError::Refused(message),
        })?;
        read_capped(file, cap)
    }
}

/// Why [`HostClient::open_confirmed`] gave no file.
#[derive(Debug)]
pub enum OpenError {
    /// The open itself failed.
    Io(std::io::Error),
    /// The opened file is not one the checks allowed; the text says why, for the model.
    Refused(String),
}

/// Opens for reading without blocking on a FIFO.
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc_nonblock());
    }
    options.open(path)
}

/// Opens `real`, a path whose links the caller already resolved and checked (an edit's target), and confirms
/// that the opened file is still at that path: a link swapped into it since the checks is refused instead
/// of followed. The confirmed open for callers that did their checks on the real path themselves.
pub fn open_real(real: &Path) -> Result<std::fs::File, OpenError> {
    let file = open_nonblocking(real).map_err(OpenError::Io)?;
    match opened_path(&file) {
        Some(opened) if opened != real => Err(OpenError::Refused(format!(
            "{} changed after it was checked: it now leads to {}. Try again.",
            real.display(),
            opened.display()
        ))),
        _ => Ok(file),
    }
}

/// Why [`HostClient::read_confirmed`] (or [`read_capped`]) gave no bytes.
#[derive(Debug)]
pub enum ReadError {
    /// The open or the read failed.
    Io(std::io::Error),
    /// The opened file is not one the checks allowed; the text says why, for the model.
    Refused(String),
    /// A directory, FIFO, device or socket: nothing was read.
    NotAFile,
    /// Larger than the cap: nothing is returned. `size` is the size the file had (at least).
    TooLarge {
        /// The file's size in bytes, or how far a read got before passing the cap.
        size: u64,
        /// The cap it passed.
        cap: u64,
    },
}

impl ReadError {
    /// The reason in words, for a note or a tool error about `path`.
    pub fn describe(&self, path: &str) -> String {
        match self {
            ReadError::Io(e) => format!("{path}: {e}"),
            ReadError::Refused(message) => message.clone(),
            ReadError::NotAFile => format!("{path} is not a regular file."),
            ReadError::TooLarge { size, cap } => format!(
                "{path} is {}, over the {} limit for this tool.",
                result::format_bytes(*size),
                result::format_bytes(*cap)
            ),
        }
    }
}

/// Reads an opened file whole when it is a regular file of at most `cap` bytes. The size is checked before
/// reading (a sparse 1 GB file costs nothing to refuse) and again while reading, since a file can grow after
/// its size was taken: no more than `cap + 1` bytes are ever held.
pub fn read_capped(file: std::fs::File, cap: u64) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let metadata = file.metadata().map_err(ReadError::Io)?;
    if !metadata.is_file() {
        return Err(ReadError::NotAFile);
    }
    if metadata.len() > cap {
        return Err(ReadError::TooLarge { size: metadata.len(), cap });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes).map_err(ReadError::Io)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLarge { size: bytes.len() as u64, cap });
    }
    Ok(bytes)
}

/// `O_NONBLOCK`, so opening a FIFO returns at once (regular files ignore the flag).
#[cfg(unix)]
fn libc_nonblock() -> i32 {
    // The value is fixed per platform; spelled out to keep `libc` out of every plugin's dependencies.
    #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
    return 0x0004;
    #[cfg(not(any(target_os = "macos", target_os = "ios", target_os = "freebsd")))]
    return 0o4000;
}

/// The real path of an open file, where the platform tells it.
fn opened_path(file: &std::fs::File) -> Option<std::path::PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        None
    }
}
