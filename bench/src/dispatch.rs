//! Row 1, dispatch: a no-op tool through executor → tool actor → plugin and back, against the bare channel and
//! thread hops the path is made of, measured in the same process and interleaved round by round.
//!
//! The in-system rows (1a–1c) run their loops on the runtime's actor thread through `run_on_runtime`, as do
//! their references, so both sides pay the same scheduler and neither pays a cross-thread wake-up to start.
//! Row 1d measures what a host pays from its own multi-thread tokio runtime, where every actor hop is a
//! cross-thread wake-up.

use crate::stats::{Figure, Row, Target, Unit};
use anyhow::{bail, Context, Result};
use serde_json::{Map, Value};
use std::future::Future;
use std::path::Path;
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};
use toolshed::{Block, ResultStatus, Runtime, TaskContext, TaskHandle, ToolResult, ToolUse};

/// Interleaved rounds per row; the median is taken over every call of every round.
const ROUNDS: usize = 15;
/// Sequential calls per round on the actor thread (1a): a round lasts a few milliseconds.
const INLINE_CALLS: usize = 5_000;
/// Sequential calls per round through worker threads (1b), whose hops cost microseconds each.
const POOLED_CALLS: usize = 1_000;
/// Concurrent callers (1c), and the calls each makes per round.
const CALLERS: usize = 1_000;
const CALLS_PER_CALLER: usize = 50;
/// Rounds of the throughput and host rows, each of which lasts tens of milliseconds.
const LONG_ROUNDS: usize = 7;
/// Sequential calls per round from the host's runtime (1d), where each call waits for cross-thread wake-ups.
const HOST_CALLS: usize = 400;
/// Callers in flight from the host's runtime (1d), and the calls each makes per round.
const HOST_CALLERS: usize = 100;
const HOST_CALLS_PER_CALLER: usize = 100;
/// What every reference answers, as the no-op tools do.
const OK: &str = "ok";
/// Request slots of the reference channel: actix's default mailbox capacity.
const MAILBOX: usize = 16;

/// A reference request: where to send the answer.
type Request = oneshot::Sender<&'static str>;

/// Runs the dispatch rows against the `fixture_tools` library.
pub fn rows(fixture: &Path, workspace: &Path) -> Result<Vec<Row>> {
    // Third-party tools ask by default; `yes` keeps the policy out of a measurement of dispatch.
    let runtime = Runtime::builder().plugin_file(fixture).yes(true).build()?;
    if let Some(error) = runtime.load_errors().first() {
        bail!("{error}");
    }
    let task = runtime.task(TaskContext::new(workspace));
    // Awaits `run_on_runtime` from this thread; the timed loops run on the actor thread.
    let driver = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let on_runtime = OnRuntime { driver: &driver, runtime: &runtime };

    verify(&driver, &runtime, &task)?;

    let mut rows = Vec::new();
    let (mut ours, mut reference) = interleave(ROUNDS, |ours| {
        let task = task.clone();
        on_runtime.run(move || async move {
            if ours {
                let mut timer = Timer::start(INLINE_CALLS);
                for _ in 0..INLINE_CALLS {
                    timer.record(is_ok(&task.execute(noop("noop")).await));
                }
                timer.finish()
            } else {
                let (client, server) = echo_server();
                let mut timer = Timer::start(INLINE_CALLS);
                for _ in 0..INLINE_CALLS {
                    timer.record(round_trip(&client).await);
                }
                drop(client);
                let _ = server.await;
                timer.finish()
            }
        })
    })?;
    let inline_reference = Figure::with_p99(&mut reference);
    rows.push(Row {
        id: "1a".to_owned(),
        what: "dispatch: `noop` (inline), sequential on the actor thread".to_owned(),
        unit: Unit::Nanos,
        ours: Figure::with_p99(&mut ours),
        reference_name: "tokio mpsc + oneshot round trip, same thread".to_owned(),
        reference: inline_reference,
        target: Target::RatioAtMost(3.0),
        higher_is_better: false,
        note: Some("an inline tool that always proceeds: run on the caller's thread, no hop".to_owned()),
    });

    let (mut ours, mut reference) = interleave(ROUNDS, |ours| {
        let task = task.clone();
        on_runtime.run(move || async move {
            let mut timer = Timer::start(POOLED_CALLS);
            for _ in 0..POOLED_CALLS {
                timer.record(if ours {
                    is_ok(&task.execute(noop("noop_pooled")).await)
                } else {
                    // Prepare and execute each run on a worker thread: two hops there and back per call.
                    blocking_round_trip().await && blocking_round_trip().await
                });
            }
            timer.finish()
        })
    })?;
    rows.push(Row {
        id: "1b".to_owned(),
        what: "dispatch: `noop_pooled`, on a worker thread".to_owned(),
        unit: Unit::Nanos,
        ours: Figure::with_p99(&mut ours),
        reference_name: "2 × `spawn_blocking` round trip".to_owned(),
        reference: Figure::with_p99(&mut reference),
        target: Target::RatioAtMost(1.5),
        higher_is_better: false,
        note: None,
    });

    let (mut ours, mut reference) = interleave(LONG_ROUNDS, |ours| {
        let task = task.clone();
        let per_call = on_runtime.run(move || async move {
            if ours {
                concurrent(CALLERS, CALLS_PER_CALLER, move || {
                    let task = task.clone();
                    async move { is_ok(&task.execute(noop("noop")).await) }
                })
                .await
            } else {
                let (client, server) = echo_server();
                let timed = concurrent(CALLERS, CALLS_PER_CALLER, move || {
                    let client = client.clone();
                    async move { round_trip(&client).await }
                })
                .await;
                let _ = server.await;
                timed
            }
        })?;
        Ok(vec![1e9 / per_call])
    })?;
    rows.push(Row {
        id: "1c".to_owned(),
        what: format!("throughput: `noop`, {CALLERS} callers on the actor thread"),
        unit: Unit::PerSecond,
        ours: Figure::median(&mut ours),
        reference_name: format!("mpsc + oneshot echo task, {CALLERS} callers"),
        reference: Figure::median(&mut reference),
        // Issue 27: at most 4× the echo task's cost per call (its calls/s at least a quarter of the echo's).
        target: Target::RatioAtMost(4.0),
        higher_is_better: true,
        note: None,
    });

    rows.extend(host_rows(&runtime, &task, inline_reference)?);
    rows.push(isolated_row(fixture, workspace, &on_runtime, &task)?);
    Ok(rows)
}

/// Row 1f: `noop_pooled` with the fixture library in a child process (`[plugins] isolation = "process"`)
/// against the same tool in process, interleaved: the price of a socket round trip per phase.
fn isolated_row(fixture: &Path, workspace: &Path, on_runtime: &OnRuntime<'_>, task: &TaskHandle) -> Result<Row> {
    let config = toolshed::Config::from_toml_str("[plugins]\nisolation = \"process\"\n")?;
    let isolated = Runtime::builder().config(config).plugin_file(fixture).yes(true).build()?;
    if let Some(error) = isolated.load_errors().first() {
        bail!("{error}");
    }
    let isolated_task = isolated.task(TaskContext::new(workspace));
    let check = on_runtime.driver.block_on(isolated_task.execute(noop("noop_pooled")));
    if !is_ok(&check) {
        bail!("the isolated `noop_pooled` answered {:?}: {}", check.status, check.to_model_text());
    }
    let (mut ours, mut reference) = interleave(ROUNDS, |ours| {
        let task = if ours { isolated_task.clone() } else { task.clone() };
        on_runtime.run(move || async move {
            let mut timer = Timer::start(POOLED_CALLS);
            for _ in 0..POOLED_CALLS {
                timer.record(is_ok(&task.execute(noop("noop_pooled")).await));
            }
            timer.finish()
        })
    })?;
    Ok(Row {
        id: "1f".to_owned(),
        what: "dispatch: `noop_pooled` with its plugin in a child process".to_owned(),
        unit: Unit::Nanos,
        ours: Figure::with_p99(&mut ours),
        reference_name: "the same tool in process (1b's)".to_owned(),
        reference: Figure::with_p99(&mut reference),
        target: Target::Report,
        higher_is_better: false,
        note: Some("two socket round trips to the plugin's process: prepare and execute".to_owned()),
    })
}

/// Runs timed loops on the runtime's actor thread and waits for them from this one.
struct OnRuntime<'a> {
    driver: &'a tokio::runtime::Runtime,
    runtime: &'a Runtime,
}

impl OnRuntime<'_> {
    /// Builds the future on the actor thread (it need not be `Send`) and returns its output.
    fn run<T, Fut>(&self, make: impl FnOnce() -> Fut + Send + 'static) -> Result<T>
    where
        T: Send + 'static,
        Fut: Future<Output = Result<T>> + 'static,
    {
        self.driver.block_on(self.runtime.run_on_runtime(make)).context("the runtime stopped")?
    }
}

/// Rows 1d and 1e: the same `noop` calls from a host's own multi-thread tokio runtime, one at a time and many in
/// flight.
/// Its reference is 1a's (one same-thread round trip); a bare cross-thread round trip to the actor thread is
/// measured alongside, interleaved, so the table shows how much of the cost is the wake-ups alone.
fn host_rows(runtime: &Runtime, task: &TaskHandle, inline_reference: Figure) -> Result<Vec<Row>> {
    let host = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    // An echo task on the actor thread, reached from the host's threads.
    let (client, server) = mpsc::channel::<Request>(MAILBOX);
    let echo = runtime.run_on_runtime(move || serve(server));

    let (mut one, one_wake) = interleave(LONG_ROUNDS, |ours| {
        let (task, client) = (task.clone(), client.clone());
        // Spawned, so the loop runs on a worker thread of the host's runtime as a host's task would.
        host.block_on(host.spawn(async move {
            let mut timer = Timer::start(HOST_CALLS);
            for _ in 0..HOST_CALLS {
                timer.record(if ours { is_ok(&task.execute(noop("noop")).await) } else { round_trip(&client).await });
            }
            timer.finish()
        }))?
    })?;
    let (mut many, many_wake) = interleave(LONG_ROUNDS, |ours| {
        let start = Instant::now();
        let callers: Vec<_> = (0..HOST_CALLERS)
            .map(|_| {
                let (task, client) = (task.clone(), client.clone());
                host.spawn(async move {
                    let mut ok = 0;
                    for _ in 0..HOST_CALLS_PER_CALLER {
                        let done =
                            if ours { is_ok(&task.execute(noop("noop")).await) } else { round_trip(&client).await };
                        ok += usize::from(done);
                    }
                    ok
                })
            })
            .collect();
        let ok: usize = host.block_on(async move {
            let mut ok = 0;
            for caller in callers {
                ok += caller.await.unwrap_or(0);
            }
            ok
        });
        let calls = HOST_CALLERS * HOST_CALLS_PER_CALLER;
        if ok != calls {
            bail!("{} of {calls} calls from the host's runtime failed", calls - ok);
        }
        Ok(vec![start.elapsed().as_nanos() as f64 / calls as f64])
    })?;
    drop(client);
    let _ = host.block_on(echo);

    let wake = |samples: &[f64]| Unit::Nanos.show(Figure::median(&mut samples.to_vec()).median);
    Ok(vec![
        Row {
            id: "1d".to_owned(),
            what: "host's own tokio runtime: `noop`, one at a time".to_owned(),
            unit: Unit::Nanos,
            ours: Figure::with_p99(&mut one),
            reference_name: "1a's reference".to_owned(),
            reference: inline_reference,
            target: Target::Report,
            higher_is_better: false,
            note: Some(format!("a bare cross-thread round trip to the actor thread: {}", wake(&one_wake))),
        },
        Row {
            id: "1e".to_owned(),
            what: format!("host's own tokio runtime: `noop`, {HOST_CALLERS} in flight, per call"),
            unit: Unit::Nanos,
            ours: Figure::median(&mut many),
            reference_name: "1a's reference".to_owned(),
            reference: Figure { p99: None, ..inline_reference },
            target: Target::Report,
            higher_is_better: false,
            note: Some(format!("bare cross-thread round trips, {HOST_CALLERS} in flight: {}", wake(&many_wake))),
        },
    ])
}

/// Checks every pair answers the same before anything is timed: each no-op tool and each reference says "ok".
fn verify(driver: &tokio::runtime::Runtime, runtime: &Runtime, task: &TaskHandle) -> Result<()> {
    for tool in ["noop", "noop_pooled"] {
        let result = driver.block_on(task.execute(noop(tool)));
        if !is_ok(&result) {
            bail!("`{tool}` answered {:?} instead of \"{OK}\": {}", result.status, result.to_model_text());
        }
    }
    let references = driver.block_on(runtime.run_on_runtime(|| async {
        let (client, server) = echo_server();
        let echoed = round_trip(&client).await;
        drop(client);
        let _ = server.await;
        echoed && blocking_round_trip().await
    }));
    if references != Some(true) {
        bail!("a reference round trip did not answer \"{OK}\"");
    }
    Ok(())
}

/// Runs `measure(ours)` for both sides, alternating which goes first, after one round of each as warm-up;
/// returns every sample of each side.
fn interleave(rounds: usize, mut measure: impl FnMut(bool) -> Result<Vec<f64>>) -> Result<(Vec<f64>, Vec<f64>)> {
    measure(true)?;
    measure(false)?;
    let (mut ours, mut reference) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for ours_side in if round % 2 == 0 { [true, false] } else { [false, true] } {
            let samples = measure(ours_side)?;
            let side = if ours_side { &mut ours } else { &mut reference };
            side.extend(samples);
        }
    }
    Ok((ours, reference))
}

/// Per-call durations of calls made one after another, with one clock read per call: each call's time is the
/// gap since the previous one ended.
struct Timer {
    samples: Vec<f64>,
    failed: usize,
    last: Instant,
}

impl Timer {
    fn start(calls: usize) -> Self {
        Self { samples: Vec::with_capacity(calls), failed: 0, last: Instant::now() }
    }

    /// Records the end of a call and whether it answered as it should.
    fn record(&mut self, ok: bool) {
        let now = Instant::now();
        self.samples.push((now - self.last).as_nanos() as f64);
        self.failed += usize::from(!ok);
        self.last = now;
    }

    /// Every call's duration in ns; fails if any call failed.
    fn finish(self) -> Result<Vec<f64>> {
        if self.failed > 0 {
            bail!("{} of {} calls failed", self.failed, self.samples.len());
        }
        Ok(self.samples)
    }
}

/// Runs `callers` tasks on this thread's local set, each making `per_caller` calls in sequence; returns the
/// wall time per call in ns.
async fn concurrent<F, Fut>(callers: usize, per_caller: usize, make: F) -> Result<f64>
where
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = bool> + 'static,
{
    let make = std::rc::Rc::new(make);
    let start = Instant::now();
    let handles: Vec<_> = (0..callers)
        .map(|_| {
            let make = std::rc::Rc::clone(&make);
            tokio::task::spawn_local(async move {
                let mut ok = 0;
                for _ in 0..per_caller {
                    ok += usize::from(make().await);
                }
                ok
            })
        })
        .collect();
    drop(make);
    let mut ok = 0;
    for handle in handles {
        ok += handle.await.unwrap_or(0);
    }
    let elapsed = start.elapsed();
    let calls = callers * per_caller;
    if ok != calls {
        bail!("{} of {calls} concurrent calls failed", calls - ok);
    }
    Ok(elapsed.as_nanos() as f64 / calls as f64)
}

/// A no-op tool use.
pub(crate) fn noop(tool: &str) -> ToolUse {
    ToolUse::new("bench", tool, Value::Object(Map::new()))
}

/// Whether a no-op call answered as it should.
pub(crate) fn is_ok(result: &ToolResult) -> bool {
    result.status == ResultStatus::Success && matches!(result.blocks.as_slice(), [Block::Text { text }] if text == OK)
}

/// The reference's echo task, spawned on this thread's local set: the physical cost of one actor hop.
fn echo_server() -> (mpsc::Sender<Request>, tokio::task::JoinHandle<()>) {
    let (client, server) = mpsc::channel::<Request>(MAILBOX);
    (client, tokio::task::spawn_local(serve(server)))
}

/// Answers every request until the last client is dropped.
async fn serve(mut requests: mpsc::Receiver<Request>) {
    while let Some(reply) = requests.recv().await {
        let _ = reply.send(OK);
    }
}

/// One request and its answer through the echo task.
async fn round_trip(client: &mpsc::Sender<Request>) -> bool {
    let (reply, answer) = oneshot::channel();
    client.send(reply).await.is_ok() && answer.await == Ok(OK)
}

/// One closure run on tokio's blocking pool and its answer awaited.
async fn blocking_round_trip() -> bool {
    matches!(tokio::task::spawn_blocking(|| OK).await, Ok(OK))
}
