//! A tool actor's bounded pool of worker threads, where synchronous plugin calls run.
//!
//! Threads start on demand up to the bound and retire when idle. They are never joined: a plugin call cannot
//! be interrupted, so a thread stuck in one must never hold up shutdown or process exit. A bulk tool's pool
//! lowers its threads' CPU priority as they start, and every thread its calls start inherits it.

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

type Job = Box<dyn FnOnce() + Send>;

/// How long an idle worker waits for work before it exits.
const IDLE_KEEPALIVE: Duration = Duration::from_secs(10);

/// A bounded, lazily grown thread pool.
#[derive(Debug)]
pub(crate) struct WorkerPool {
    tx: Sender<Job>,
    shared: Arc<Shared>,
}

pub(crate) use crate::config::BulkPriority as Priority;

/// Lowers the calling thread to `priority` (on Linux, nice values and scheduling policies are per thread and
/// inherited by the threads it starts). A failure leaves the thread as it was: slower short calls, never a
/// failed one.
fn apply(priority: Priority) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain syscalls on the calling thread (pid 0 / its own tid) with a valid, zeroed param.
        let failed = unsafe {
            match priority {
                Priority::Normal => return,
                Priority::Low => {
                    let tid = libc::gettid() as libc::id_t;
                    libc::setpriority(libc::PRIO_PROCESS, tid, 19) != 0
                }
                Priority::Idle => {
                    let param = libc::sched_param { sched_priority: 0 };
                    libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) != 0
                }
            }
        };
        if failed {
            tracing::debug!(?priority, "could not lower a bulk worker's priority: {}", std::io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = priority;
}

#[derive(Debug)]
struct Shared {
    rx: Receiver<Job>,
    name: String,
    max: usize,
    priority: Priority,
    threads: AtomicUsize,
    idle: AtomicUsize,
}

impl WorkerPool {
    /// A pool of at most `max` threads named after `name`, running at `priority`.
    pub fn new(name: &str, max: usize, priority: Priority) -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        let shared = Arc::new(Shared {
            rx,
            name: format!("tool-{name}"),
            max: max.max(1),
            priority,
            threads: AtomicUsize::new(0),
            idle: AtomicUsize::new(0),
        });
        Self { tx, shared }
    }

    /// Queues a job; starts a thread when none is idle and the bound allows.
    pub fn submit(&self, job: impl FnOnce() + Send + 'static) -> Result<(), String> {
        self.tx.send(Box::new(job)).map_err(|_| "the worker pool is shut down".to_owned())?;
        if self.shared.idle.load(Ordering::Acquire) == 0 {
            self.grow();
        }
        Ok(())
    }

    fn grow(&self) {
        let shared = &self.shared;
        let mut current = shared.threads.load(Ordering::Acquire);
        loop {
            if current >= shared.max {
                return;
            }
            match shared.threads.compare_exchange(current, current + 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(actual) => current = actual,
            }
        }
        let worker = Arc::clone(shared);
        let spawned = std::thread::Builder::new().name(shared.name.clone()).spawn(move || worker.run());
        if let Err(error) = spawned {
            shared.threads.fetch_sub(1, Ordering::AcqRel);
            tracing::error!(pool = %shared.name, "cannot start a worker thread: {error}");
        }
    }
}

impl Shared {
    fn run(&self) {
        apply(self.priority);
        loop {
            self.idle.fetch_add(1, Ordering::AcqRel);
            let job = self.rx.recv_timeout(IDLE_KEEPALIVE);
            self.idle.fetch_sub(1, Ordering::AcqRel);
            match job {
                // Jobs contain their own panics; this is a second net so a worker never dies silently.
                Ok(job) => {
                    let _ = catch_unwind(AssertUnwindSafe(job));
                }
                Err(RecvTimeoutError::Timeout) if self.rx.is_empty() => break,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        self.threads.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_jobs_within_the_bound() {
        let pool = WorkerPool::new("t", 2, Priority::Normal);
        let (tx, rx) = std::sync::mpsc::channel();
        for i in 0..20 {
            let tx = tx.clone();
            pool.submit(move || tx.send(i).unwrap()).unwrap();
        }
        let mut got: Vec<i32> = (0..20).map(|_| rx.recv().unwrap()).collect();
        got.sort();
        assert_eq!(got, (0..20).collect::<Vec<_>>());
        assert!(pool.shared.threads.load(Ordering::Acquire) <= 2);
    }

    #[test]
    fn a_panicking_job_does_not_kill_the_pool() {
        let pool = WorkerPool::new("p", 1, Priority::Normal);
        pool.submit(|| panic!("boom")).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        pool.submit(move || tx.send(7).unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), 7);
    }
}
