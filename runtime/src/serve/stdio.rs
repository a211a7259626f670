//! The stdio transport's two streams, driven by the runtime's reactor when they are pipes.
//!
//! tokio's `stdin()` and `stdout()` do every read and write on a blocking-pool thread: each request and each
//! answer crossed one more thread (a wake-up on another, often halted, vCPU) than the call itself needed. A
//! pipe can be polled instead. `O_NONBLOCK` belongs to the open file, which the client, a wrapper script, or
//! our own stderr (the same pipe or socket) may share, so it is never set on fd 0 or 1: the pipe is opened
//! again through `/proc/self/fd`, which gives an open file of its own on the same pipe, and only that one is
//! made non-blocking. Nothing shared changes, so nothing needs restoring, whether the process ends normally, on
//! a signal, or killed. Anything else (a socket, which cannot be opened again; a file; a terminal) keeps
//! tokio's blocking streams.

use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use tokio::io::{AsyncRead, AsyncWrite};

/// The session's input.
pub(super) type Input = Box<dyn AsyncRead + Send + Unpin>;
/// The session's output.
pub(super) type Output = Box<dyn AsyncWrite + Send + Unpin>;

/// stdin and stdout for the stdio session.
pub(super) fn streams() -> (Input, Output) {
    let input: Input = match polled_reader(io::stdin().as_fd()) {
        Some(reader) => Box::new(reader),
        None => Box::new(tokio::io::stdin()),
    };
    let output: Output = match polled_writer(io::stdout().as_fd()) {
        Some(writer) => Box::new(writer),
        None => Box::new(tokio::io::stdout()),
    };
    (input, output)
}

/// A polled reader of the pipe `fd` reads; None when `fd` is not a pipe or cannot be opened again.
fn polled_reader(fd: BorrowedFd<'_>) -> Option<tokio::net::unix::pipe::Receiver> {
    let own = reopen(fd, false)?;
    tokio::net::unix::pipe::Receiver::from_owned_fd(own).ok()
}

/// A polled writer of the pipe `fd` writes; None when `fd` is not a pipe or cannot be opened again.
fn polled_writer(fd: BorrowedFd<'_>) -> Option<tokio::net::unix::pipe::Sender> {
    let own = reopen(fd, true)?;
    tokio::net::unix::pipe::Sender::from_owned_fd(own).ok()
}

/// A new, non-blocking open file of the pipe `fd` refers to; None for anything but a pipe.
fn reopen(fd: BorrowedFd<'_>, write: bool) -> Option<OwnedFd> {
    let stat = nix::sys::stat::fstat(fd).ok()?;
    let kind = nix::sys::stat::SFlag::from_bits_truncate(stat.st_mode) & nix::sys::stat::SFlag::S_IFMT;
    if kind != nix::sys::stat::SFlag::S_IFIFO {
        return None;
    }
    let file = OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .ok()?;
    // The same pipe, not whatever took the path's place between the two looks.
    let reopened = nix::sys::stat::fstat(file.as_fd()).ok()?;
    (reopened.st_dev == stat.st_dev && reopened.st_ino == stat.st_ino).then(|| file.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    fn flags(fd: BorrowedFd<'_>) -> i32 {
        nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL).unwrap()
    }

    #[tokio::test]
    async fn a_pipe_is_polled_through_an_open_file_of_its_own() {
        let (read, write) = nix::unistd::pipe().unwrap();
        let before = (flags(read.as_fd()), flags(write.as_fd()));
        let mut reader = polled_reader(read.as_fd()).expect("a pipe is polled");
        let mut writer = polled_writer(write.as_fd()).expect("a pipe is polled");
        // The descriptors the pipe came by (the client's, stderr's when it is the same pipe) stay blocking.
        assert_eq!((flags(read.as_fd()), flags(write.as_fd())), before);
        assert_eq!(before.0 & libc::O_NONBLOCK, 0);
        writer.write_all(b"{\"jsonrpc\":\"2.0\"}\n").await.unwrap();
        writer.flush().await.unwrap();
        let mut buf = [0u8; 64];
        let n = reader.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"{\"jsonrpc\":\"2.0\"}\n");
        // The client's end closed: the reader sees the end of its input (its own open file writes nothing).
        drop((writer, write));
        assert_eq!(reader.read(&mut buf).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn a_large_answer_waits_for_a_slow_reader_and_arrives_whole() {
        let (read, write) = nix::unistd::pipe().unwrap();
        let mut writer = polled_writer(write.as_fd()).unwrap();
        drop(write);
        let answer = vec![b'x'; 1 << 20];
        let expected = answer.len();
        let reading = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            let mut all = Vec::new();
            std::io::Read::read_to_end(&mut std::fs::File::from(read), &mut all).unwrap();
            all.len()
        });
        writer.write_all(&answer).await.unwrap();
        drop(writer);
        assert_eq!(reading.join().unwrap(), expected);
    }

    #[test]
    fn sockets_files_and_terminals_are_left_to_the_blocking_streams() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let _guard = runtime.enter();
        let (ours, _theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        assert!(polled_reader(ours.as_fd()).is_none());
        assert!(polled_writer(ours.as_fd()).is_none());
        assert_eq!(flags(ours.as_fd()) & libc::O_NONBLOCK, 0, "the shared socket was left as it was");
        let file = tempfile::tempfile().unwrap();
        assert!(polled_reader(file.as_fd()).is_none());
        let null = std::fs::File::open("/dev/null").unwrap();
        assert!(polled_reader(null.as_fd()).is_none());
    }
}
