//! A tool actor's bounded pool of worker threads, where synchronous plugin calls run.
//!
//! Threads start on demand up to the bound and retire when idle. They are never joined: a plugin call cannot
//! be interrupted, so a thread stuck in one must never hold up shutdown or process exit. A bulk tool's pool
//! lowers its threads' CPU priority as they start, and every thread its calls start inherits it.
//!
//! Idle threads wait on a stack, and a job wakes the one that went idle last: its stack and the plugin's data
//! are still in cache, and on a virtual machine a thread woken on the core it just left runs at once, where
//! one woken on another, idle core pays for waking that core (tens of microseconds, measured). A thread
//! counts as idle under the same lock a job is queued under, and a job says when it is about to hand over its
//! answer ([`Finishing`]): a job queued by the caller that answer wakes is left for that worker, which takes it
//! before it would go idle, instead of starting a thread the pool does not need.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

type Job = Box<dyn FnOnce(Finishing<'_>) + Send>;

/// How long an idle worker waits for work before it exits.
const IDLE_KEEPALIVE: Duration = Duration::from_secs(10);

/// A bounded, lazily grown thread pool.
#[derive(Debug)]
pub(crate) struct WorkerPool {
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
    state: Mutex<State>,
    name: String,
    max: usize,
    priority: Priority,
    keepalive: Duration,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    /// Idle workers, the most recently idle last.
    idle: Vec<Arc<Slot>>,
    threads: usize,
    /// Workers whose job said it is finishing ([`Finishing::now`]) and that have not come back for the next.
    returning: usize,
    /// The pool was dropped: workers exit once the queue is empty.
    closed: bool,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("queued", &self.queue.len())
            .field("idle", &self.idle.len())
            .field("threads", &self.threads)
            .field("returning", &self.returning)
            .field("closed", &self.closed)
            .finish()
    }
}

/// One idle worker's wake-up: its own condition variable, so a job wakes exactly the worker chosen for it.
#[derive(Debug, Default)]
struct Slot {
    wake: Condvar,
    /// Set, under the pool's lock, when the worker was taken off the idle stack for a job (or the close).
    woken: std::sync::atomic::AtomicBool,
}

/// Handed to each job: [`Finishing::now`] tells the pool the job is about to hand over its answer.
pub(crate) struct Finishing<'a> {
    shared: &'a Shared,
    finished: &'a std::cell::Cell<bool>,
}

impl Finishing<'_> {
    /// The job is done but for handing over its answer: the caller that answer wakes may queue its next job
    /// at once, and this worker takes it rather than a new thread (call it once, just before the answer).
    pub fn now(&self) {
        if !self.finished.replace(true) {
            self.shared.lock().returning += 1;
        }
    }
}

impl WorkerPool {
    /// A pool of at most `max` threads named after `name`, running at `priority`.
    pub fn new(name: &str, max: usize, priority: Priority) -> Self {
        Self::with_keepalive(name, max, priority, IDLE_KEEPALIVE)
    }

    fn with_keepalive(name: &str, max: usize, priority: Priority, keepalive: Duration) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            name: format!("tool-{name}"),
            max: max.max(1),
            priority,
            keepalive,
        });
        Self { shared }
    }

    /// Queues a job; wakes the most recently idle worker, or leaves it for a worker whose job is finishing, or
    /// starts a thread when neither is there and the bound allows. The job calls [`Finishing::now`] just
    /// before it hands over its answer.
    pub fn submit(&self, job: impl FnOnce(Finishing<'_>) + Send + 'static) -> Result<(), String> {
        let shared = &self.shared;
        let mut state = shared.lock();
        if state.closed {
            return Err("the worker pool is shut down".to_owned());
        }
        state.queue.push_back(Box::new(job));
        if let Some(slot) = state.idle.pop() {
            slot.woken.store(true, Ordering::Relaxed);
            slot.wake.notify_one();
            return Ok(());
        }
        // A worker on its way back takes the queue's jobs first, one each.
        if state.threads >= shared.max || state.queue.len() <= state.returning {
            return Ok(());
        }
        state.threads += 1;
        drop(state);
        let worker = Arc::clone(shared);
        let spawned = std::thread::Builder::new().name(shared.name.clone()).spawn(move || worker.run());
        if let Err(error) = spawned {
            let mut state = shared.lock();
            state.threads -= 1;
            let stranded = state.threads == 0;
            drop(state);
            tracing::error!(pool = %shared.name, "cannot start a worker thread: {error}");
            if stranded {
                // No thread will ever take the job: its caller's answer channel closes when it is dropped,
                // which reports the call as failed instead of leaving it waiting for its timeout.
                shared.lock().queue.clear();
            }
        }
        Ok(())
    }

    #[cfg(test)]
    fn threads(&self) -> usize {
        self.shared.lock().threads
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.closed = true;
        for slot in state.idle.drain(..) {
            slot.woken.store(true, Ordering::Relaxed);
            slot.wake.notify_one();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Jobs run outside the lock, so a panic never happens while it is held; a poisoned state is whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn run(&self) {
        apply(self.priority);
        let slot = Arc::new(Slot::default());
        let mut state = self.lock();
        loop {
            if let Some(job) = state.queue.pop_front() {
                drop(state);
                let finished = std::cell::Cell::new(false);
                // Jobs contain their own panics; this is a second net so a worker never dies silently.
                let _ = catch_unwind(AssertUnwindSafe(|| job(Finishing { shared: self, finished: &finished })));
                state = self.lock();
                if finished.get() {
                    state.returning -= 1;
                }
                continue;
            }
            if state.closed {
                break;
            }
            slot.woken.store(false, Ordering::Relaxed);
            state.idle.push(Arc::clone(&slot));
            let deadline = Instant::now() + self.keepalive;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                state = slot.wake.wait_timeout(state, left).unwrap_or_else(PoisonError::into_inner).0;
                if slot.woken.load(Ordering::Relaxed) {
                    break;
                }
                if Instant::now() >= deadline {
                    // Still on the idle stack (nobody took it): leave it and retire.
                    state.idle.retain(|idle| !Arc::ptr_eq(idle, &slot));
                    state.threads -= 1;
                    return;
                }
            }
        }
        state.threads -= 1;
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
            pool.submit(move |_| tx.send(i).unwrap()).unwrap();
        }
        let mut got: Vec<i32> = (0..20).map(|_| rx.recv().unwrap()).collect();
        got.sort();
        assert_eq!(got, (0..20).collect::<Vec<_>>());
        assert!(pool.threads() <= 2);
    }

    #[test]
    fn a_panicking_job_does_not_kill_the_pool() {
        let pool = WorkerPool::new("p", 1, Priority::Normal);
        pool.submit(|_| panic!("boom")).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        pool.submit(move |_| tx.send(7).unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), 7);
    }

    #[test]
    fn sequential_jobs_reuse_one_thread_and_idle_threads_retire() {
        let pool = WorkerPool::with_keepalive("s", 4, Priority::Normal, Duration::from_millis(50));
        for i in 0..500 {
            let (tx, rx) = std::sync::mpsc::channel();
            // The next job is queued the moment this answer arrives, while its worker is still returning.
            pool.submit(move |finishing| {
                finishing.now();
                tx.send(i).unwrap();
            })
            .unwrap();
            assert_eq!(rx.recv().unwrap(), i);
        }
        assert_eq!(pool.threads(), 1, "a job queued as the previous one answers must not start a second thread");
        let started = Instant::now();
        while pool.threads() > 0 && started.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(pool.threads(), 0, "an idle worker retires after its keep-alive");
        let (tx, rx) = std::sync::mpsc::channel();
        pool.submit(move |_| tx.send(1).unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), 1, "a retired pool starts a thread again");
    }

    #[test]
    fn a_dropped_pool_refuses_nothing_queued_and_its_workers_exit() {
        let pool = WorkerPool::new("d", 2, Priority::Normal);
        let (tx, rx) = std::sync::mpsc::channel();
        let gate = Arc::new(std::sync::Barrier::new(2));
        let held = Arc::clone(&gate);
        pool.submit(move |_| {
            held.wait();
            tx.send(1).unwrap();
        })
        .unwrap();
        let shared = Arc::clone(&pool.shared);
        drop(pool);
        gate.wait();
        assert_eq!(rx.recv().unwrap(), 1, "a job queued before the drop still runs");
        let started = Instant::now();
        while shared.lock().threads > 0 && started.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(shared.lock().threads, 0);
    }
}
