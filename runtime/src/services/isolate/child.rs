//! The child's side of a job: load the library handed down, build the handler, run the job on a thread with
//! the configured stack, and forward every host-service call to the parent.

use super::{frames, Reply, Start, ToHost, LIBRARY_FD};
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RStr, RString, RVec};
use std::fs::File;
use std::io::Write;
use std::os::fd::FromRawFd;
use std::sync::Mutex;
use toolshed_plugin_api::{Host, Host_TO};

/// The host a job sees: every service goes to the parent and waits for its reply.
struct Forwarding {
    /// The socket to the host, twice: for writing and for reading the replies.
    pipes: Mutex<(File, File)>,
    services: Vec<String>,
    max_frame: u64,
}

impl Forwarding {
    fn send(&self, message: &ToHost) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(message).map_err(std::io::Error::other)?;
        let mut pipes = self.pipes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        frames::write(&mut pipes.0, &bytes)
    }

    fn forward(&self, name: &str, request: &str) -> std::io::Result<Reply> {
        let bytes = serde_json::to_vec(&ToHost::Service { name: name.to_owned(), request: request.to_owned() })
            .map_err(std::io::Error::other)?;
        // One call at a time: the reply read next is this call's.
        let mut pipes = self.pipes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (out, input) = &mut *pipes;
        frames::write(out, &bytes)?;
        let reply = frames::read_blocking(input, self.max_frame)?;
        serde_json::from_slice(&reply).map_err(std::io::Error::other)
    }
}

impl Host for Forwarding {
    fn service(&self, name: RStr<'_>, request: RStr<'_>) -> RResult<RString, RString> {
        match self.forward(name.as_str(), request.as_str()) {
            Ok(Reply { ok: true, text }) => RResult::ROk(text.into()),
            Ok(Reply { ok: false, text }) => RResult::RErr(text.into()),
            // The parent is gone or broke the protocol: nothing useful is left to do.
            Err(_) => exit(3),
        }
    }

    fn services(&self) -> RVec<RString> {
        self.services.iter().map(|s| RString::from(s.as_str())).collect()
    }

    fn is_cancelled(&self) -> bool {
        // The parent kills the child instead.
        false
    }

    fn log(&self, level: u8, message: RStr<'_>) {
        let _ = self.send(&ToHost::Log { level, message: message.as_str().to_owned() });
    }
}

/// Leaves without running the plugin's or the runtime's destructors: the answer is sent, and the parent
/// kills the group anyway.
pub(crate) fn exit(code: i32) -> ! {
    // SAFETY: ends the process.
    unsafe { nix::libc::_exit(code) }
}

/// Sets the limits the host passed as arguments (address space, CPU seconds; 0 for none) on this process, no
/// core dumps, and death with the host, whose pid is the third argument, before anything of the job is read.
/// Shared with out-of-process plugins' children (`crate::registry::remote`).
pub(crate) fn limit_self() {
    use nix::libc;
    let args: Vec<u64> = std::env::args().skip(2).filter_map(|arg| arg.parse().ok()).collect();
    let [memory, cpu_seconds, parent] = args[..] else { exit(2) };
    let limit = |resource, soft: u64, hard: u64| {
        let value = libc::rlimit { rlim_cur: soft as libc::rlim_t, rlim_max: hard as libc::rlim_t };
        // SAFETY: a plain system call on a stack value.
        if unsafe { libc::setrlimit(resource, &value) } != 0 {
            exit(2);
        }
    };
    if memory > 0 {
        limit(libc::RLIMIT_AS, memory, memory);
    }
    if cpu_seconds > 0 {
        // SIGXCPU at the soft limit; SIGKILL a second later if it is caught.
        limit(libc::RLIMIT_CPU, cpu_seconds, cpu_seconds + 1);
    }
    limit(libc::RLIMIT_CORE, 0, 0);
    // SAFETY: plain system calls. The parent check after the prctl closes the race with a host that died
    // before it: then this process already belongs to someone else.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 || u64::from(libc::getppid() as u32) != parent {
            exit(2);
        }
    }
}

/// The socket to the host: a copy of stdout, taken before anything else runs; stdout proper then points at
/// stderr, so whatever the plugin prints lands in the stderr the parent keeps, not in the frames.
pub(crate) fn take_socket() -> File {
    // SAFETY: plain descriptor calls on the standard descriptors.
    unsafe {
        let fd = nix::libc::dup(1);
        if fd < 0 || nix::libc::dup2(2, 1) < 0 {
            exit(2);
        }
        File::from_raw_fd(fd)
    }
}

/// The child's `main`: returns only through [`exit`].
pub fn main() -> ! {
    limit_self();
    let socket = take_socket();
    let Ok(mut input) = socket.try_clone() else { exit(2) };
    let Ok(start) = frames::read_blocking(&mut input, u64::from(u32::MAX)) else { exit(2) };
    let Ok(start) = serde_json::from_slice::<Start>(&start) else { exit(2) };
    let host =
        Forwarding { pipes: Mutex::new((socket, input)), services: start.services.clone(), max_frame: start.max_frame };
    let broken = |message: String| -> ! {
        let _ = host.send(&ToHost::Broken { message });
        exit(1)
    };
    let library = std::path::PathBuf::from(format!("/proc/self/fd/{LIBRARY_FD}"));
    let plugin = match crate::registry::loader::load_inherited(&library) {
        Ok(plugin) => plugin,
        Err(e) => broken(format!("the parser's child process cannot load the plugin: {}", e.reason)),
    };
    let handler = match plugin.new_handler(&start.tool, &start.config) {
        Ok(Some(handler)) => handler,
        Ok(None) => broken(format!("the plugin declined `{}` in the parser's child process", start.tool)),
        Err(e) => broken(format!("the plugin's handler failed to start in the parser's child process: {e}")),
    };
    let stack = usize::try_from(start.stack_mb.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX);
    let answer = std::thread::scope(|scope| {
        let job = std::thread::Builder::new().name("job".to_owned()).stack_size(stack).spawn_scoped(scope, || {
            let host = Host_TO::from_ptr(&host, TD_Opaque);
            handler.execute(RStr::from_str(&start.call), host)
        });
        match job {
            Ok(job) => job.join().ok(),
            Err(_) => None,
        }
    });
    let done = match answer {
        Some(RResult::ROk(text)) => ToHost::Done { ok: true, text: text.into_string() },
        Some(RResult::RErr(text)) => ToHost::Done { ok: false, text: text.into_string() },
        None => broken("the parser's thread could not start or did not finish".to_owned()),
    };
    if host.send(&done).is_err() {
        exit(3);
    }
    let _ = std::io::stderr().flush();
    exit(0)
}
