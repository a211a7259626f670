//! The frames both sides of a child process speak: a little-endian `u32` length, then that many bytes.
//! The host's reader never blocks past its wait and never buffers more than the frame cap, so a child that
//! stalls mid-frame or announces a huge one cannot hold or flood the host.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

/// Writes one frame (blocking: the peer reads its frames whole).
pub(crate) fn write(to: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    let len = u32::try_from(bytes.len()).map_err(|_| io::Error::other("frame too large"))?;
    to.write_all(&len.to_le_bytes())?;
    to.write_all(bytes)?;
    to.flush()
}

/// Reads one frame, blocking (the child's side).
pub(crate) fn read_blocking(from: &mut impl Read, max: u64) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    from.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len);
    if u64::from(len) > max {
        return Err(io::Error::other(format!("a frame of {len} bytes is over the cap of {max}")));
    }
    let mut bytes = vec![0u8; len as usize];
    from.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// What one wait for a frame gave.
pub(crate) enum Frame {
    Complete(Vec<u8>),
    /// Nothing whole yet.
    Pending,
    /// The peer closed its end.
    Closed,
}

pub(crate) enum Error {
    Io,
    /// A frame announced this many bytes, over the cap.
    TooLarge(u64),
}

/// A non-blocking frame reader over a pipe.
pub(crate) struct FrameReader<R> {
    pipe: R,
    max: u64,
    buffer: Vec<u8>,
}

impl<R: Read + AsFd> FrameReader<R> {
    pub(crate) fn new(pipe: R, max: u64) -> Self {
        Self { pipe, max, buffer: Vec::new() }
    }

    /// Waits up to `wait` for a whole frame.
    pub(crate) fn next(&mut self, wait: Duration) -> Result<Frame, Error> {
        if let Some(frame) = self.take()? {
            return Ok(Frame::Complete(frame));
        }
        let mut fds = [nix::libc::pollfd { fd: self.pipe.as_fd().as_raw_fd(), events: nix::libc::POLLIN, revents: 0 }];
        let millis = nix::libc::c_int::try_from(wait.as_millis()).unwrap_or(nix::libc::c_int::MAX);
        // SAFETY: one valid pollfd on the stack.
        let ready = unsafe { nix::libc::poll(fds.as_mut_ptr(), 1, millis) };
        if ready < 0 {
            let error = io::Error::last_os_error();
            return if error.kind() == io::ErrorKind::Interrupted { Ok(Frame::Pending) } else { Err(Error::Io) };
        }
        if ready == 0 {
            return Ok(Frame::Pending);
        }
        // Readable: one read returns what is there without blocking (the descriptor stays blocking, as the
        // host's writes on the same socket need).
        let mut chunk = [0u8; 64 * 1024];
        loop {
            match self.pipe.read(&mut chunk) {
                Ok(0) => return self.take().map(|frame| frame.map_or(Frame::Closed, Frame::Complete)),
                Ok(n) => {
                    self.buffer.extend_from_slice(&chunk[..n]);
                    return self.take().map(|frame| frame.map_or(Frame::Pending, Frame::Complete));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(Error::Io),
            }
        }
    }

    /// The first whole frame in the buffer, if any.
    fn take(&mut self) -> Result<Option<Vec<u8>>, Error> {
        let Some(len) = self.buffer.get(..4) else {
            return Ok(None);
        };
        let len = u64::from(u32::from_le_bytes([len[0], len[1], len[2], len[3]]));
        if len > self.max {
            return Err(Error::TooLarge(len));
        }
        let end = 4 + len as usize;
        if self.buffer.len() < end {
            return Ok(None);
        }
        let frame = self.buffer[4..end].to_vec();
        self.buffer.drain(..end);
        Ok(Some(frame))
    }
}
