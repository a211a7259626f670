//! The stdio transport's two streams, driven by the runtime's reactor when they are pipes or sockets.
//!
//! tokio's `stdin()` and `stdout()` do every read and write on a blocking-pool thread: each request and each
//! answer crossed one more thread (a wake-up on another, often halted, vCPU) than the call itself needed. A
//! pipe or a socket can be polled instead, so a copy of the descriptor is made non-blocking and registered with
//! the reactor. Anything else (a file, a terminal) keeps tokio's blocking streams.
//!
//! `O_NONBLOCK` belongs to the open file, which other descriptors may share: stdout is left blocking when
//! stderr is the same pipe (logs written with `eprintln!` would fail with `EAGAIN`), and both flags are
//! restored when the streams are dropped, so whoever holds the same pipe after us finds it as it was.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The session's input.
pub(super) type Input = Box<dyn AsyncRead + Send + Unpin>;
/// The session's output.
pub(super) type Output = Box<dyn AsyncWrite + Send + Unpin>;

/// stdin and stdout for the stdio session.
pub(super) fn streams() -> (Input, Output) {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let stderr = io::stderr();
    let input: Input = match polled_reader(stdin.as_fd()) {
        Some(reader) => Box::new(reader),
        None => Box::new(tokio::io::stdin()),
    };
    let shares_stderr = same_file(stdout.as_fd(), stderr.as_fd());
    let output: Output = match (!shares_stderr).then(|| polled_writer(stdout.as_fd())).flatten() {
        Some(writer) => Box::new(writer),
        None => Box::new(tokio::io::stdout()),
    };
    (input, output)
}

/// What a descriptor is, as far as polling goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Fifo,
    Socket,
    Other,
}

fn kind(fd: BorrowedFd<'_>) -> Kind {
    match nix::sys::stat::fstat(fd) {
        Ok(stat) => match nix::sys::stat::SFlag::from_bits_truncate(stat.st_mode) & nix::sys::stat::SFlag::S_IFMT {
            nix::sys::stat::SFlag::S_IFIFO => Kind::Fifo,
            nix::sys::stat::SFlag::S_IFSOCK => Kind::Socket,
            _ => Kind::Other,
        },
        Err(_) => Kind::Other,
    }
}

fn same_file(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    match (nix::sys::stat::fstat(a), nix::sys::stat::fstat(b)) {
        (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
        // Unknown: treated as shared, so nothing is changed.
        _ => true,
    }
}

/// A polled copy of a readable pipe or socket; None when `fd` is neither or the reactor refuses it.
fn polled_reader(fd: BorrowedFd<'_>) -> Option<Restoring<Box<dyn AsyncRead + Send + Unpin>>> {
    let kind = kind(fd);
    let restore = Restore::capture(fd)?;
    let copy = fd.try_clone_to_owned().ok()?;
    let stream: Box<dyn AsyncRead + Send + Unpin> = match kind {
        Kind::Fifo => Box::new(tokio::net::unix::pipe::Receiver::from_owned_fd(copy).ok()?),
        Kind::Socket => Box::new(socket(copy)?),
        Kind::Other => return None,
    };
    Some(Restoring { stream, _restore: restore })
}

/// A polled copy of a writable pipe or socket; None when `fd` is neither or the reactor refuses it.
fn polled_writer(fd: BorrowedFd<'_>) -> Option<Restoring<Box<dyn AsyncWrite + Send + Unpin>>> {
    let kind = kind(fd);
    let restore = Restore::capture(fd)?;
    let copy = fd.try_clone_to_owned().ok()?;
    let stream: Box<dyn AsyncWrite + Send + Unpin> = match kind {
        Kind::Fifo => Box::new(tokio::net::unix::pipe::Sender::from_owned_fd(copy).ok()?),
        Kind::Socket => Box::new(socket(copy)?),
        Kind::Other => return None,
    };
    Some(Restoring { stream, _restore: restore })
}

fn socket(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
    let std = std::os::unix::net::UnixStream::from(fd);
    std.set_nonblocking(true).ok()?;
    tokio::net::UnixStream::from_std(std).ok()
}

/// Puts a descriptor's file status flags back as they were found.
struct Restore {
    fd: RawFd,
    flags: nix::fcntl::OFlag,
}

impl Restore {
    fn capture(fd: BorrowedFd<'_>) -> Option<Self> {
        let flags = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL).ok()?;
        Some(Self { fd: fd.as_raw_fd(), flags: nix::fcntl::OFlag::from_bits_truncate(flags) })
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        // SAFETY: the descriptor outlives the stream (stdin and stdout stay open for the process's life; only
        // copies were handed to the reactor).
        let fd = unsafe { BorrowedFd::borrow_raw(self.fd) };
        let _ = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETFL(self.flags));
    }
}

/// A stream that restores its descriptor's flags when dropped (after the stream's own copy is closed).
struct Restoring<S> {
    stream: S,
    _restore: Restore,
}

impl<S: AsyncRead + Unpin> AsyncRead for Restoring<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Restoring<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    #[tokio::test]
    async fn a_pipe_is_polled_and_its_flags_are_restored() {
        let (read, write) = nix::unistd::pipe().unwrap();
        let before = nix::fcntl::fcntl(read.as_fd(), nix::fcntl::FcntlArg::F_GETFL).unwrap();
        let mut reader = polled_reader(read.as_fd()).expect("a pipe is polled");
        let mut writer = polled_writer(write.as_fd()).expect("a pipe is polled");
        let during = nix::fcntl::fcntl(read.as_fd(), nix::fcntl::FcntlArg::F_GETFL).unwrap();
        assert_ne!(during & libc::O_NONBLOCK, 0);
        writer.write_all(b"{\"jsonrpc\":\"2.0\"}\n").await.unwrap();
        writer.flush().await.unwrap();
        let mut buf = [0u8; 64];
        let n = reader.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"{\"jsonrpc\":\"2.0\"}\n");
        drop((reader, writer));
        let after = nix::fcntl::fcntl(read.as_fd(), nix::fcntl::FcntlArg::F_GETFL).unwrap();
        assert_eq!(after, before);
    }

    #[tokio::test]
    async fn a_socket_is_polled_both_ways() {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut reader = polled_reader(ours.as_fd()).expect("a socket is polled");
        let mut writer = polled_writer(ours.as_fd()).expect("a socket is polled");
        let mut peer = socket(OwnedFd::from(theirs)).unwrap();
        peer.write_all(b"ping\n").await.unwrap();
        let mut buf = [0u8; 8];
        let n = reader.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"ping\n");
        writer.write_all(b"pong\n").await.unwrap();
        let n = peer.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"pong\n");
        // The peer's end closed: the reader sees the end of its input.
        drop(peer);
        assert_eq!(reader.read(&mut buf).await.unwrap(), 0);
    }

    #[test]
    fn a_regular_file_is_left_to_the_blocking_streams() {
        let file = tempfile::tempfile().unwrap();
        assert!(kind(file.as_fd()) == Kind::Other);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let _guard = runtime.enter();
        assert!(polled_reader(file.as_fd()).is_none());
    }

    #[test]
    fn the_two_ends_of_one_pipe_are_the_same_file_and_two_pipes_are_not() {
        let (a_read, a_write) = nix::unistd::pipe().unwrap();
        let (b_read, _b_write) = nix::unistd::pipe().unwrap();
        assert!(same_file(a_read.as_fd(), a_write.as_fd()));
        assert!(!same_file(a_read.as_fd(), b_read.as_fd()));
    }
}
