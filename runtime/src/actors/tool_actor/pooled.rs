//! The pooled lane: a tool's phases handed to its worker threads by the caller itself, with the call's timeout,
//! cancellation, commit and abandonment rules, timed by the actor runtime's clock.

use super::{
    call_host, run_call, ExecuteStart, PhaseAnswer, PhaseError, RunPhase, ToolHealth, ABANDONED, DONE, RUNNING,
};
use crate::actors::pool::{Finishing, WorkerPool};
use crate::registry::loader::PluginHandler;
use crate::services::commit_gate::CommitGate;
use crate::task::CancelToken;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

type Answer = Result<PhaseAnswer, PhaseError>;

/// The runtime whose clock times pooled calls out (the actor thread's), and whether it still runs: a caller
/// waits for a pooled call on its own executor, but its timeouts are the actor runtime's timers, which must not
/// be polled once that runtime has stopped.
#[derive(Debug, Default)]
pub(crate) struct LaneClock {
    handle: OnceLock<tokio::runtime::Handle>,
    /// Read while a call's wait is polled; written when the runtime starts and when it stops.
    open: RwLock<bool>,
    /// Wakes every waiting call when the runtime stops: none waits for a timer that will never fire.
    stopped: CancelToken,
}

impl LaneClock {
    /// The actor runtime has started: its timers time calls from now on.
    pub fn start(&self, handle: tokio::runtime::Handle) {
        let _ = self.handle.set(handle);
        *self.open.write().unwrap_or_else(PoisonError::into_inner) = true;
    }

    /// The actor runtime is stopping (the runtime is dropped, or its actor system stopped another way): every
    /// waiting call is woken and answers that it stopped. Returns once no wait is being polled.
    pub fn stop(&self) {
        *self.open.write().unwrap_or_else(PoisonError::into_inner) = false;
        self.stopped.cancel();
    }

    /// The actor runtime's handle while it runs, and the read guard that keeps it running while it is used.
    fn running(&self) -> (std::sync::RwLockReadGuard<'_, bool>, Option<&tokio::runtime::Handle>) {
        let open = self.open.read().unwrap_or_else(PoisonError::into_inner);
        let handle = self.handle.get().filter(|_| *open);
        (open, handle)
    }

    /// `wait`'s output, or `None` when the runtime stops first.
    async fn unless_stopped<F: Future>(&self, wait: F) -> Option<F::Output> {
        tokio::select! {
            output = wait => Some(output),
            () = self.stopped.cancelled() => None,
        }
    }
}

/// What a call still waiting when the runtime stops is answered: what a call sent to a stopped actor was.
fn stopped() -> Answer {
    Err(PhaseError::Failed("the tool's actor has stopped".to_owned()))
}

fn lost() -> Answer {
    Err(PhaseError::Failed("the worker thread was lost".to_owned()))
}

/// What a pooled lane runs calls with, until its actor stops.
struct Parts {
    handler: Arc<PluginHandler>,
    pool: WorkerPool,
}

/// A pooled tool's phases, handed to its worker threads by the caller itself: the hop through the actor's
/// mailbox (a wake-up of the actor thread each way when the caller is elsewhere) is not needed to reach them.
pub(crate) struct PooledLane {
    name: Arc<str>,
    /// Taken when the tool's actor stops (its tool unloaded, the runtime dropped), so the handler (an isolated
    /// plugin's child process among them) and the workers go then, as they went with the actor, however long
    /// routes are held; calls from then on answer as calls to a stopped actor did.
    parts: Mutex<Option<Arc<Parts>>>,
    health: Arc<ToolHealth>,
    max_abandoned: usize,
    clock: Arc<LaneClock>,
}

impl std::fmt::Debug for PooledLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PooledLane").field("name", &self.name).finish_non_exhaustive()
    }
}

impl PooledLane {
    pub fn new(
        name: Arc<str>,
        handler: Arc<PluginHandler>,
        pool: WorkerPool,
        health: Arc<ToolHealth>,
        max_abandoned: usize,
        clock: Arc<LaneClock>,
    ) -> Self {
        let parts = Mutex::new(Some(Arc::new(Parts { handler, pool })));
        Self { name, parts, health, max_abandoned: max_abandoned.max(1), clock }
    }

    /// The tool's actor stopped: no call starts on this lane any more, and its handler and workers are let go
    /// once the calls running on them end.
    pub fn retire(&self) {
        drop(self.parts.lock().unwrap_or_else(PoisonError::into_inner).take());
    }

    /// Runs one phase on a worker with the call's timeout, cancellation and commit rules; the future runs on
    /// any executor.
    pub fn run(self: Arc<Self>, msg: RunPhase) -> impl Future<Output = Answer> + Send + 'static {
        let (cancelled, commit) = (Arc::clone(&msg.call.cancel), Arc::new(CommitGate::default()));
        let wait = Box::pin(Arc::clone(&self).wait(msg, Arc::clone(&commit)));
        OnClock { lane: self, cancelled, commit, wait }
    }

    async fn wait(self: Arc<Self>, msg: RunPhase, commit: Arc<CommitGate>) -> Answer {
        if self.health.quarantined() {
            return Err(PhaseError::Quarantined(self.health.abandoned()));
        }
        let Some(parts) = self.parts.lock().unwrap_or_else(PoisonError::into_inner).clone() else {
            return stopped();
        };
        let cancelled = Arc::clone(&msg.call.cancel);
        let host = call_host(&self.name, &parts.handler, &msg.call, &msg.task, &msg.router, Arc::clone(&commit));
        let (tx, rx) = oneshot::channel();
        let execute_timeout = msg.then_execute.as_ref().map(|then| then.timeout);
        let started = Arc::new(ExecuteStart::new(msg.timeout));
        let state = Arc::new(AtomicU8::new(RUNNING));
        let job = {
            let (handler, state, health) = (Arc::clone(&parts.handler), Arc::clone(&state), Arc::clone(&self.health));
            let started = Arc::clone(&started);
            let (phase, call, approved, then_execute) = (msg.phase, msg.call, msg.approved, msg.then_execute);
            move |finishing: Finishing<'_>| {
                let answer = run_call(&handler, phase, (&call, approved), &host, then_execute.as_ref(), Some(&started));
                if state.swap(DONE, Ordering::AcqRel) == ABANDONED {
                    // The last abandoned thread is back: the tool may serve again.
                    if health.abandoned.fetch_sub(1, Ordering::AcqRel) == 1 {
                        health.quarantined.store(false, Ordering::Release);
                    }
                }
                // The caller this answer wakes may queue its next call at once: this worker takes it.
                finishing.now();
                let _ = tx.send(answer);
            }
        };
        parts.pool.submit(job).map_err(PhaseError::Failed)?;
        drop(parts);

        // From here the call is settled however this future ends: dropped before the answer, it is settled on
        // the actor runtime as a cancelled call would be (its grace, then counted as abandoned).
        let mut pending = Detach(Some(Pending {
            rx,
            state,
            commit,
            cancelled: Arc::clone(&cancelled),
            lane: Arc::clone(&self),
            commit_wait: msg.commit_wait,
            grace: msg.cancel_grace,
        }));
        let (task, mut limit) = (msg.task, msg.timeout);
        let mut deadline = started.prepare_deadline;
        let mut awaiting_start = execute_timeout.is_some();
        let failure = loop {
            let Some(waiting) = pending.0.as_mut() else { return lost() };
            tokio::select! {
                answer = &mut waiting.rx => {
                    pending.0 = None;
                    return answer.unwrap_or_else(|_| lost());
                }
                // `execute` began after `prepare` in the same job, and its own timeout ends before the prepare
                // timeout would have: that deadline holds from now.
                () = started.sooner.notified(), if awaiting_start => {}
                () = tokio::time::sleep_until(deadline.into()) => {}
                () = task.cancel.cancelled() => break PhaseError::Cancelled,
                // The call alone was cancelled (its future dropped): the same as its task's, for it.
                () = cancelled.cancelled() => break PhaseError::Cancelled,
                // Only a wake-up: the runtime is going, and the wait answers so (`OnClock`).
                () = self.clock.stopped.cancelled() => {}
            }
            // `execute` began after `prepare` in the same job: its own timeout runs from its start.
            if let (true, Some(at), Some(execute)) = (awaiting_start, started.at.get(), execute_timeout) {
                awaiting_start = false;
                limit = execute;
                deadline = *at + execute;
            }
            if Instant::now() >= deadline {
                break PhaseError::TimedOut(limit);
            }
        };
        let answer = match pending.0.as_mut() {
            Some(waiting) => waiting.settle(failure).await,
            None => lost(),
        };
        pending.0 = None;
        answer
    }
}

/// A call past its submission whose caller has not had its answer yet.
struct Pending {
    rx: oneshot::Receiver<Answer>,
    state: Arc<AtomicU8>,
    commit: Arc<CommitGate>,
    cancelled: Arc<CancelToken>,
    lane: Arc<PooledLane>,
    commit_wait: Duration,
    grace: Duration,
}

impl Pending {
    /// The answer to a call that timed out or was cancelled (`failure`): a call that committed is writing, and
    /// reporting it failed would hide what it wrote, so its own answer is waited for (bounded, for a write that
    /// hangs); a cancelled one gets its grace to answer in its own words; else it is abandoned, counted until
    /// its thread returns.
    async fn settle(&mut self, failure: PhaseError) -> Answer {
        let clock = Arc::clone(&self.lane.clock);
        let failure = match self.commit.close() {
            true => failure,
            false => match clock.unless_stopped(tokio::time::timeout(self.commit_wait, &mut self.rx)).await {
                Some(Ok(answer)) => return answer.unwrap_or_else(|_| lost()),
                Some(Err(_)) => PhaseError::WriteOverran(self.commit_wait),
                None => return stopped(),
            },
        };
        // Every blocking host service the call uses from here on answers `Cancelled`.
        self.cancelled.cancel();
        if failure == PhaseError::Cancelled {
            match clock.unless_stopped(tokio::time::timeout(self.grace, &mut self.rx)).await {
                Some(Ok(answer)) => return answer.unwrap_or_else(|_| lost()),
                Some(Err(_)) => {}
                None => return stopped(),
            }
        }
        // Reply now; the plugin call keeps its thread until it returns.
        if self.state.compare_exchange(RUNNING, ABANDONED, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            let health = &self.lane.health;
            let abandoned = health.abandoned.fetch_add(1, Ordering::AcqRel) + 1;
            if abandoned >= self.lane.max_abandoned && !health.quarantined.swap(true, Ordering::AcqRel) {
                let tool = &self.lane.name;
                tracing::error!(%tool, abandoned, "tool quarantined: too many calls still running after being abandoned");
            }
        }
        Err(failure)
    }
}

/// Settles a pending call whose caller dropped its future before the answer (an MCP client's cancellation, a
/// host's own timeout around the call): on the actor runtime, as a cancelled call, so a plugin that ignores
/// cancellation is still counted and quarantined.
struct Detach(Option<Pending>);

impl Drop for Detach {
    fn drop(&mut self) {
        let Some(mut pending) = self.0.take() else { return };
        if pending.state.load(Ordering::Acquire) != RUNNING {
            return;
        }
        let clock = Arc::clone(&pending.lane.clock);
        let (_running, handle) = clock.running();
        if let Some(handle) = handle {
            handle.spawn(async move {
                let _ = pending.settle(PhaseError::Cancelled).await;
            });
        }
    }
}

/// A pooled call's wait, polled in the actor runtime's context (for its timers) while that runtime runs. Once
/// it stopped, the call is cancelled (the plugin's host services refuse) and closed to commits, and answers that
/// its actor stopped.
struct OnClock {
    lane: Arc<PooledLane>,
    cancelled: Arc<CancelToken>,
    commit: Arc<CommitGate>,
    wait: Pin<Box<dyn Future<Output = Answer> + Send>>,
}

impl Future for OnClock {
    type Output = Answer;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Answer> {
        let clock = Arc::clone(&self.lane.clock);
        let (_running, handle) = clock.running();
        let Some(handle) = handle else {
            self.cancelled.cancel();
            self.commit.close();
            return Poll::Ready(stopped());
        };
        let _context = handle.enter();
        self.wait.as_mut().poll(cx)
    }
}
