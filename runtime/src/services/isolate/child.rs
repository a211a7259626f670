//! The child's side of a job: load the library handed down, build the handler, run the job on a thread with
//! the configured stack, and forward every host-service call to the parent.

use super::{Reply, Start, ToHost, LIBRARY_FD};
use crate::child_process::{exit, frames, limit_self, take_socket};
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RStr, RString, RVec};
use std::fs::File;
use std::io::Write;
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
