//! A tool actor's bounded pool of worker threads, where synchronous plugin calls run.
//!
//! Threads start on demand up to the bound and retire when idle. They are never joined: a plugin call cannot
//! be interrupted, so a thread stuck in one must never hold up shutdown or process exit. A bulk tool's pool
//! lowers its threads' CPU priority as they start, and every thread its calls start inherits it.
//!
//! A job says when it is about to hand over its answer ([`Finishing`]): the caller that answer wakes may queue
//! its next job before the worker is back at the queue, and that job is left for it rather than starting a
//! thread the pool does not need. (A pool that parks idle workers on a condition variable at once, without
//! crossbeam's brief spin, was measured: on a 2-vCPU VM a small read_file took twice as long, 116 µs against
//! 60 µs, as every hand-over then woke a halted CPU.)
//!
//! Idle workers share crossbeam's channel, which wakes the one parked longest: once a pool has two threads, one
//! caller's sequential jobs alternate between them, each hand-over a wake-up of a parked thread (~70 µs a no-op
//! call on a 2-vCPU VM against ~5.5 µs on one thread). So one caller's sequential jobs must never start a
//! second thread (see `Counts`). A pool handing each job to the worker idle last was built and measured: it
//! kept jobs on one thread after a burst, but a small read_file alone took 89–105 µs against 62 µs, and its p99
//! under 4 searching tasks 2 ms against 0.26 ms.
//!
//! A worker that has just finished looks for its next job for `[plugins] worker_spin_us` before it parks.
//! A parked worker is woken with an inter-processor interrupt, and on a VM whose idle vCPUs halt, waking one
//! cost ~20 µs of latency, plus ~10 µs for the thread that sent it, at each end of a hand-over. Crossbeam's own
//! spin, a few µs, ends before a sequential caller is back. Measured with `perf sched` on 2 × EPYC vCPUs, a
//! `noop_pooled` call took 46 µs with no spin of our own, 26 µs with a 100 µs spin and 18 µs with 200 µs,
//! against 20 µs for two `spawn_blocking` round trips. The spin yields the core between bursts of about a µs,
//! so a thread of normal priority that wants it gets it (a `SCHED_IDLE` or nice-19 bulk worker on that core
//! waits out the spin). One worker per pool spins at a time: the others park at once, or a pool grown by a
//! burst would keep every thread spinning, and one caller's sequential jobs would alternate between them.

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

type Job = Box<dyn FnOnce(Finishing<'_>) + Send>;

/// How long an idle worker waits for work before it exits.
const IDLE_KEEPALIVE: Duration = Duration::from_secs(10);
/// Pause hints between two looks at the queue while a worker spins (about a µs).
const SPIN_BURST: u32 = 32;

/// How big a pool may grow and how its idle workers wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PoolSettings {
    /// The most threads it starts.
    pub max: usize,
    /// How long a worker that has just finished looks for its next job before it parks.
    pub spin: Duration,
}

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
    /// The pool's threads and available workers, one atomic word ([`Counts`]) so that no decision reads one
    /// without the other.
    counts: AtomicU64,
    /// How long a worker that has just finished looks for its next job before it parks.
    spin: Duration,
    /// Whether a worker is spinning: one at a time.
    spinning: AtomicBool,
    keepalive: Duration,
}

/// The layout of `Shared::counts`: the number of threads in the high half; in the low half, workers minus the
/// jobs submitted and not yet finishing ([`Finishing::now`]) or done, offset by `BIAS` (below zero: jobs wait).
/// A submit that takes it to zero or below finds no worker idle or on its way back, and starts one. One counter
/// for both, so no submit can read a worker as neither idle nor returning while it passes from one to the other
/// (two counters read one after the other let sequential calls start a second thread, and then alternate
/// between two parked threads, each hand-over waking a halted CPU).
struct Counts;

impl Counts {
    const THREAD: u64 = 1 << 32;
    const WORKER: u64 = 1;
    const BIAS: u64 = 1 << 31;
    const EMPTY: u64 = Self::BIAS;

    fn threads(counts: u64) -> usize {
        (counts >> 32) as usize
    }

    fn available(counts: u64) -> i64 {
        (counts & 0xffff_ffff) as i64 - Self::BIAS as i64
    }
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
            self.shared.counts.fetch_add(Counts::WORKER, Ordering::AcqRel);
        }
    }
}

impl WorkerPool {
    /// A pool of threads named after `name`, running at `priority`.
    pub fn new(name: &str, settings: PoolSettings, priority: Priority) -> Self {
        Self::with_keepalive(name, settings, priority, IDLE_KEEPALIVE)
    }

    fn with_keepalive(name: &str, settings: PoolSettings, priority: Priority, keepalive: Duration) -> Self {
        let PoolSettings { max, spin } = settings;
        let (tx, rx) = crossbeam_channel::unbounded();
        let shared = Arc::new(Shared {
            rx,
            name: format!("tool-{name}"),
            max: max.max(1),
            priority,
            counts: AtomicU64::new(Counts::EMPTY),
            spin,
            spinning: AtomicBool::new(false),
            keepalive,
        });
        Self { tx, shared }
    }

    /// Queues a job; starts a thread when none is idle or on its way back and the bound allows. The job calls
    /// [`Finishing::now`] just before it hands over its answer.
    pub fn submit(&self, job: impl FnOnce(Finishing<'_>) + Send + 'static) -> Result<(), String> {
        self.tx.send(Box::new(job)).map_err(|_| "the worker pool is shut down".to_owned())?;
        if Counts::available(self.shared.counts.fetch_sub(Counts::WORKER, Ordering::AcqRel)) <= 0 {
            self.grow();
        }
        Ok(())
    }

    #[cfg(test)]
    fn threads(&self) -> usize {
        Counts::threads(self.shared.counts.load(Ordering::Acquire))
    }

    fn grow(&self) {
        let shared = &self.shared;
        // One more thread, counted available from the start (the job that asked for it is counted already),
        // unless the bound is reached.
        let grown = shared.counts.fetch_update(Ordering::AcqRel, Ordering::Acquire, |counts| {
            (Counts::threads(counts) < shared.max).then_some(counts + Counts::THREAD + Counts::WORKER)
        });
        if grown.is_err() {
            return;
        }
        let worker = Arc::clone(shared);
        let spawned = std::thread::Builder::new().name(shared.name.clone()).spawn(move || worker.run());
        if let Err(error) = spawned {
            shared.counts.fetch_sub(Counts::THREAD + Counts::WORKER, Ordering::AcqRel);
            tracing::error!(pool = %shared.name, "cannot start a worker thread: {error}");
        }
    }
}

impl Shared {
    fn run(&self) {
        apply(self.priority);
        loop {
            let next = match self.spin_for_job() {
                Some(job) => Ok(job),
                None => self.rx.recv_timeout(self.keepalive),
            };
            match next {
                Ok(job) => {
                    let finished = std::cell::Cell::new(false);
                    // Jobs contain their own panics; this is a second net so a worker never dies silently.
                    let _ = catch_unwind(AssertUnwindSafe(|| job(Finishing { shared: self, finished: &finished })));
                    if !finished.get() {
                        self.counts.fetch_add(Counts::WORKER, Ordering::AcqRel);
                    }
                }
                // Idle past the keep-alive: retire, unless a submit has counted on this worker meanwhile (its
                // job is queued or about to be).
                Err(RecvTimeoutError::Timeout) => {
                    // Thread and worker leave in one step: a submit that finds no worker then finds room
                    // for a thread (with two steps, a submit in between could see the bound still reached
                    // and leave its job to a thread on its way out).
                    let retired = self.counts.fetch_update(Ordering::AcqRel, Ordering::Acquire, |counts| {
                        (Counts::available(counts) > 0).then_some(counts - Counts::THREAD - Counts::WORKER)
                    });
                    if retired.is_ok() {
                        return;
                    }
                }
                // The pool is gone; nobody reads `available` any more.
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        self.counts.fetch_sub(Counts::THREAD, Ordering::AcqRel);
    }

    /// Looks for a job for up to `spin`, yielding the core between short bursts; `None` when none came,
    /// another worker is spinning already, or the pool is gone (the blocking receive that follows reports
    /// that).
    fn spin_for_job(&self) -> Option<Job> {
        if self.spin.is_zero() {
            return None;
        }
        // A spin too long to add to now (the runtime bounds it; this is the pool's own guard) is none.
        let deadline = Instant::now().checked_add(self.spin)?;
        if self.spinning.swap(true, Ordering::Acquire) {
            return None;
        }
        /// Lets the next worker spin however this spin ends.
        struct Spinning<'a>(&'a AtomicBool);
        impl Drop for Spinning<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _spinning = Spinning(&self.spinning);
        loop {
            match self.rx.try_recv() {
                Ok(job) => return Some(job),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => {}
            }
            if Instant::now() >= deadline {
                return None;
            }
            for _ in 0..SPIN_BURST {
                std::hint::spin_loop();
            }
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_jobs_within_the_bound() {
        let pool = WorkerPool::new("t", PoolSettings { max: 2, spin: Duration::ZERO }, Priority::Normal);
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
        let pool = WorkerPool::new("p", PoolSettings { max: 1, spin: Duration::ZERO }, Priority::Normal);
        pool.submit(|_| panic!("boom")).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        pool.submit(move |_| tx.send(7).unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), 7);
    }

    /// Submits a job that says it is finishing, answers `i` and, with `pause`, yields after answering; waits
    /// for the answer, as one caller's sequential calls do.
    fn answered(pool: &WorkerPool, i: u64, pause: bool) -> Result<u64, std::sync::mpsc::RecvTimeoutError> {
        let (tx, rx) = std::sync::mpsc::channel();
        pool.submit(move |finishing| {
            finishing.now();
            tx.send(i).unwrap();
            if pause {
                std::thread::yield_now();
            }
        })
        .unwrap();
        rx.recv_timeout(Duration::from_secs(30))
    }

    #[test]
    fn sequential_jobs_reuse_one_thread_and_idle_threads_retire() {
        sequential_jobs_reuse_one_thread_and_idle_threads_retire_with(Duration::ZERO);
    }

    #[test]
    fn sequential_jobs_reuse_one_spinning_thread_and_idle_threads_retire() {
        sequential_jobs_reuse_one_thread_and_idle_threads_retire_with(Duration::from_micros(200));
    }

    fn sequential_jobs_reuse_one_thread_and_idle_threads_retire_with(spin: Duration) {
        let pool =
            WorkerPool::with_keepalive("s", PoolSettings { max: 4, spin }, Priority::Normal, Duration::from_millis(50));
        for i in 0..500 {
            // The next job is queued the moment this answer arrives, while its worker is still returning.
            assert_eq!(answered(&pool, i, false), Ok(i));
        }
        assert_eq!(pool.threads(), 1, "a job queued as the previous one answers must not start a second thread");
        // Many more, the caller sometimes back before the worker is and sometimes after: whatever the order, a
        // worker passing from returning to idle is never seen as neither.
        for i in 0..20_000 {
            assert_eq!(answered(&pool, i, i % 3 == 0), Ok(i));
            if i % 5 == 0 {
                std::thread::yield_now();
            }
        }
        assert_eq!(pool.threads(), 1, "one caller's sequential jobs started a second thread");
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
    fn a_job_submitted_as_the_only_worker_retires_still_runs() {
        a_job_submitted_as_the_only_worker_retires_still_runs_with(Duration::ZERO, Duration::from_micros(300));
        // The same idle window, most of it spent spinning.
        a_job_submitted_as_the_only_worker_retires_still_runs_with(
            Duration::from_micros(200),
            Duration::from_micros(100),
        );
    }

    fn a_job_submitted_as_the_only_worker_retires_still_runs_with(spin: Duration, keepalive: Duration) {
        // At the bound, with an idle window (spin and keep-alive) the pauses straddle: each job arrives about
        // when its worker gives up waiting, so some arrive as it retires. Either it stays for the job or the
        // job starts a thread.
        let pool = WorkerPool::with_keepalive("r", PoolSettings { max: 1, spin }, Priority::Normal, keepalive);
        for i in 0..1_500 {
            assert_eq!(answered(&pool, i, false), Ok(i), "job {i} was left with no thread to run it");
            std::thread::sleep(Duration::from_micros(200 + (i % 5) * 50));
        }
    }

    #[test]
    fn a_dropped_pool_refuses_nothing_queued_and_its_workers_exit() {
        let pool = WorkerPool::new("d", PoolSettings { max: 2, spin: Duration::ZERO }, Priority::Normal);
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
        while Counts::threads(shared.counts.load(Ordering::Acquire)) > 0 && started.elapsed() < Duration::from_secs(30)
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(Counts::threads(shared.counts.load(Ordering::Acquire)), 0);
    }

    #[cfg(target_os = "linux")]
    /// The times the calling thread has blocked (`voluntary_ctxt_switches`): parking counts, yielding the core
    /// while runnable does not.
    fn blocked_so_far() -> u64 {
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        let line = status.lines().find_map(|line| line.strip_prefix("voluntary_ctxt_switches:")).unwrap();
        line.trim().parse().unwrap()
    }

    /// Runs `jobs` jobs one after another, each submitted `pause` after the last one answered (a caller's
    /// turnaround, longer than crossbeam's own brief spin), and returns, per job, the worker thread that ran it
    /// and the times that thread had blocked by then.
    #[cfg(target_os = "linux")]
    fn sequential(pool: &WorkerPool, jobs: usize, pause: Duration) -> Vec<(std::thread::ThreadId, u64)> {
        (0..jobs)
            .map(|_| {
                let (tx, rx) = std::sync::mpsc::channel();
                pool.submit(move |finishing| {
                    let ran = (std::thread::current().id(), blocked_so_far());
                    finishing.now();
                    tx.send(ran).unwrap();
                })
                .unwrap();
                let ran = rx.recv_timeout(Duration::from_secs(30)).unwrap();
                std::thread::sleep(pause);
                ran
            })
            .collect()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_spinning_worker_takes_a_sequential_caller_s_next_job_without_parking() {
        // A spin far longer than the caller's turnaround: the worker never has to park between jobs.
        let pool = WorkerPool::new("w", PoolSettings { max: 1, spin: Duration::from_secs(10) }, Priority::Normal);
        let jobs = 200;
        let ran = sequential(&pool, jobs, Duration::from_micros(300));
        // Counted from the first job, which started the thread; every later job found it spinning. A few blocks
        // are allowed for what else a thread may wait on (a page fault on a file, the allocator). With no spin
        // it parks for nearly every job.
        let parked = ran[jobs - 1].1 - ran[0].1;
        assert!(parked < jobs as u64 / 10, "the worker parked {parked} times in {jobs} sequential jobs");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn one_worker_spins_at_a_time_so_sequential_jobs_stay_on_it_after_a_burst() {
        let pool = WorkerPool::new("b", PoolSettings { max: 2, spin: Duration::from_secs(10) }, Priority::Normal);
        // A burst of two jobs that wait for each other: the pool has two threads.
        let gate = Arc::new(std::sync::Barrier::new(3));
        for _ in 0..2 {
            let gate = Arc::clone(&gate);
            pool.submit(move |_| {
                gate.wait();
            })
            .unwrap();
        }
        gate.wait();
        assert_eq!(pool.threads(), 2);
        let jobs = 200;
        let ran = sequential(&pool, jobs, Duration::from_micros(300));
        let mut per_thread = std::collections::HashMap::new();
        for (thread, _) in &ran {
            *per_thread.entry(*thread).or_insert(0usize) += 1;
        }
        // The spinning worker takes each job long before the parked one, woken by the channel, is back. With
        // both spinning, the jobs split about evenly between them.
        let most = per_thread.values().copied().max().unwrap_or(0);
        assert!(most >= jobs * 3 / 4, "{jobs} sequential jobs were split between threads: {per_thread:?}");
    }

    #[test]
    fn a_spinning_worker_ends_as_soon_as_its_pool_is_dropped() {
        let pool = WorkerPool::new("e", PoolSettings { max: 1, spin: Duration::from_secs(600) }, Priority::Normal);
        let (tx, rx) = std::sync::mpsc::channel();
        pool.submit(move |_| tx.send(1).unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), 1);
        let shared = Arc::clone(&pool.shared);
        drop(pool);
        // Far less than the spin: the worker sees the pool gone while it spins.
        let started = Instant::now();
        while Counts::threads(shared.counts.load(Ordering::Acquire)) > 0 && started.elapsed() < Duration::from_secs(60)
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(Counts::threads(shared.counts.load(Ordering::Acquire)), 0, "a spinning worker outlived its pool");
    }
}
