//! A tool actor's bounded pool of worker threads, where synchronous plugin calls run.
//!
//! Threads start on demand up to the bound and retire when idle. They are never joined: a plugin call cannot
//! be interrupted, so a thread stuck in one must never hold up shutdown or process exit.

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

#[derive(Debug)]
struct Shared {
    rx: Receiver<Job>,
    name: String,
    max: usize,
    threads: AtomicUsize,
    idle: AtomicUsize,
}

impl WorkerPool {
    /// A pool of at most `max` threads named after `name`.
    pub fn new(name: &str, max: usize) -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        let shared = Arc::new(Shared {
            rx,
            name: format!("tool-{name}"),
            max: max.max(1),
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
        let pool = WorkerPool::new("t", 2);
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
        let pool = WorkerPool::new("p", 1);
        pool.submit(|| panic!("boom")).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        pool.submit(move || tx.send(7).unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), 7);
    }
}
