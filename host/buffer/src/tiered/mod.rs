//! A buffer over other buffers: its **tiers** (a Kafka topic, a memory queue, in the order the
//! YAML lists them) do all the storing, and its **policy** (a Wasm component of the
//! `buffer-plugin` world, behind [`Policy`]) decides where each written record goes, what is
//! refused or dropped, and which tier a worker reads next. Design:
//! `docs/design/buffer-components.md`.
//!
//! What the policy cannot change, because this file does it:
//! - a write succeeds only when every tier its records were placed in holds them (each tier's
//!   own write: for Kafka, the broker acknowledged);
//! - the policy's state changes of a write are applied only when the write succeeded;
//! - a policy failure (trap, deadline, a reply that breaks the contract) refuses that write
//!   (503) and nothing else: reads go on in turn;
//! - acknowledgement and commits stay each tier's (a batch is read from one tier and
//!   acknowledged to it).
//!
//! # Layout
//! - this file: [`TieredBuffer`], its writer and readers.
//! - [`policy`]: the [`Policy`] trait and what it sees and answers.
//! - `moves`: the moves between tiers the policy's `tick` asks for.
//! - [`state`]: the policy's key-value state, kept by the host.
//! - `testing` (feature `testing`): tiers that fail on request, a fake clock, a seeded replay.

mod moves;
pub mod policy;
pub mod state;

#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::task::Poll;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc;

pub use policy::{Context, Incoming, Move, Placement, Policy, PolicyFault, Refusal, TierState};
pub use state::State;

use crate::{Batch, Buffer, BufferReader, BufferWriter, Count, Record, WriteError};

/// Where the time comes from: the system clock, or a fake one in tests.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// The system clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// Takes the records a policy dropped, with its reasons, once their write succeeded (the
/// pipeline writes them to its dead-letter file); the write answers its client once this is
/// done, so a dropped record is in the dead-letter file before the client hears 200.
pub type Dropped = Arc<
    dyn Fn(Vec<(Record, String)>) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
        + Send
        + Sync,
>;

/// The counts of a tiered buffer, `sluice_buffer_<name>{pipeline}`.
#[derive(Debug)]
pub struct TieredStats {
    /// Records dropped by the policy (dead-lettered with its reason).
    pub records_dropped: Count,
    /// Writes the policy refused (429 or 503).
    pub writes_refused: Count,
    /// Policy calls that failed (trap, deadline, memory cap, a reply breaking the contract).
    pub policy_faults: Count,
    /// Records moved from one tier to another (the policy's `tick`).
    pub records_moved: Count,
}

impl TieredStats {
    fn new(pipeline: &str) -> Self {
        Self {
            records_dropped: Count::new("sluice_buffer_recordsDropped", pipeline),
            writes_refused: Count::new("sluice_buffer_writesRefused", pipeline),
            policy_faults: Count::new("sluice_buffer_policyFaults", pipeline),
            records_moved: Count::new("sluice_buffer_recordsMoved", pipeline),
        }
    }
}

/// The tiered buffer of one pipeline.
#[derive(Clone)]
pub struct TieredBuffer {
    inner: Arc<Inner>,
}

struct Inner {
    pipeline: String,
    tiers: Vec<Arc<dyn Buffer>>,
    writers: Vec<Arc<dyn BufferWriter>>,
    /// One call at a time (a Wasm store is single-threaded); a std Mutex, locked only in
    /// blocking tasks.
    policy: Mutex<Box<dyn Policy>>,
    /// The policy's name, for logs.
    policy_name: String,
    wanted_headers: Vec<String>,
    state: Arc<State>,
    clock: Arc<dyn Clock>,
    dropped: Dropped,
    next_worker: AtomicU32,
    stats: TieredStats,
    closed: AtomicBool,
    /// Starts the tick task with the first reader.
    ticking: Once,
    moves: moves::Moves,
}

impl TieredBuffer {
    /// A buffer over `tiers` (at least one) run by `policy`.
    pub fn new(
        pipeline: &str,
        tiers: Vec<Arc<dyn Buffer>>,
        policy: Box<dyn Policy>,
        state: Arc<State>,
        clock: Arc<dyn Clock>,
        dropped: Dropped,
    ) -> Self {
        assert!(!tiers.is_empty(), "a tiered buffer has at least one tier");
        let writers = tiers.iter().map(|t| t.writer()).collect();
        let wanted_headers = policy
            .wanted_headers()
            .into_iter()
            .map(|h| h.to_ascii_lowercase())
            .collect();
        Self {
            inner: Arc::new(Inner {
                pipeline: pipeline.to_owned(),
                tiers,
                writers,
                policy_name: policy.name().to_owned(),
                policy: Mutex::new(policy),
                wanted_headers,
                state,
                clock,
                dropped,
                next_worker: AtomicU32::new(0),
                stats: TieredStats::new(pipeline),
                closed: AtomicBool::new(false),
                ticking: Once::new(),
                moves: moves::Moves::default(),
            }),
        }
    }

    /// One tick now: the moves earlier ticks could not finish, then the policy's `tick` and
    /// its moves. The buffer does this by itself about once a second once it has a reader.
    pub async fn tick(&self) {
        self.inner.tick().await;
    }

    /// Its counts.
    pub fn stats(&self) -> &TieredStats {
        &self.inner.stats
    }
}

impl Inner {
    fn tier_states(&self) -> Vec<TierState> {
        self.tiers.iter().map(|t| t.tier_state()).collect()
    }

    /// Runs `call` on the policy: (its answer, the context it left). On a multi-threaded
    /// runtime in place (`block_in_place`: the worker hands its other tasks to another thread
    /// while the call runs, so a call that runs to its deadline stalls nobody else, and a short
    /// one costs no thread hop); otherwise on the blocking pool. A panic is a fault.
    async fn call<T: Send + 'static>(
        self: &Arc<Self>,
        call: impl FnOnce(&mut dyn Policy, &mut Context) -> Result<T, PolicyFault> + Send + 'static,
    ) -> (Result<T, PolicyFault>, Context) {
        let inner = self.clone();
        let mut cx = Context::new(self.tier_states(), self.clock.now_ms(), self.state.clone());
        let run = move || {
            let mut policy = inner.policy.lock().unwrap_or_else(|p| p.into_inner());
            let answer = call(policy.as_mut(), &mut cx);
            (cx.checked(answer), cx)
        };
        if tokio::runtime::Handle::current().runtime_flavor()
            == tokio::runtime::RuntimeFlavor::MultiThread
        {
            let state = self.state.clone();
            return tokio::task::block_in_place(move || {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or_else(|_| {
                    (
                        Err(PolicyFault("the policy call panicked".into())),
                        Context::new(Vec::new(), 0, state),
                    )
                })
            });
        }
        tokio::task::spawn_blocking(run)
            .await
            .unwrap_or_else(|panic| {
                let cx = Context::new(Vec::new(), 0, self.state.clone());
                (
                    Err(PolicyFault(format!("the policy call panicked: {panic}"))),
                    cx,
                )
            })
    }

    fn fault(&self, what: &str, fault: &PolicyFault) {
        self.stats.policy_faults.add(1);
        tracing::warn!(pipeline = %self.pipeline, policy = %self.policy_name, error = %fault, "buffer policy failed in {what}");
    }

    /// Checks a reply against the contract: one placement per record, tiers that exist.
    fn check(&self, placements: &[Placement], records: usize) -> Result<(), PolicyFault> {
        if placements.len() != records {
            return Err(PolicyFault(format!(
                "the policy placed {} records of a write of {records}",
                placements.len()
            )));
        }
        for p in placements {
            if let Placement::Tier { tier, .. } = p
                && *tier >= self.tiers.len()
            {
                return Err(PolicyFault(format!(
                    "the policy placed a record in tier {tier}; the buffer has {} (0 to {})",
                    self.tiers.len(),
                    self.tiers.len() - 1
                )));
            }
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Buffer for TieredBuffer {
    fn writer(&self) -> Arc<dyn BufferWriter> {
        Arc::new(self.clone())
    }

    fn reader(&self) -> Box<dyn BufferReader> {
        self.inner.ticking.call_once(|| {
            let inner = self.inner.clone();
            tokio::spawn(async move {
                let mut every = tokio::time::interval(moves::TICK_EVERY);
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                every.tick().await;
                while !inner.closed.load(Ordering::SeqCst) {
                    every.tick().await;
                    inner.tick().await;
                }
            });
        });
        let worker = self.inner.next_worker.fetch_add(1, Ordering::Relaxed);
        let channels = self
            .inner
            .tiers
            .iter()
            .map(|tier| {
                // One batch read ahead per tier: the worker takes from whichever tier it should.
                let (tx, rx) = mpsc::channel(1);
                let mut reader = tier.reader();
                tokio::spawn(async move {
                    while let Some(batch) = reader.read().await {
                        if tx.send(batch).await.is_err() {
                            break;
                        }
                    }
                });
                rx
            })
            .collect();
        Box::new(TieredReader {
            inner: self.inner.clone(),
            worker,
            channels,
            turn: 0,
        })
    }

    fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        for tier in &self.inner.tiers {
            tier.close();
        }
    }

    async fn join(&self) {
        for tier in &self.inner.tiers {
            tier.join().await;
        }
    }

    fn drain_timeout(&self) -> Option<Duration> {
        self.inner
            .tiers
            .iter()
            .filter_map(|t| t.drain_timeout())
            .max()
    }

    fn update_gauges(&self) {
        for tier in &self.inner.tiers {
            tier.update_gauges();
        }
        metrics::gauge!("sluice_buffer_policyStateBytes", "pipeline" => self.inner.pipeline.clone())
            .set(self.inner.state.bytes() as f64);
    }

    fn log_summary(&self) {
        let s = &self.inner.stats;
        tracing::info!(
            pipeline = %self.inner.pipeline,
            records_dropped = s.records_dropped.get(),
            writes_refused = s.writes_refused.get(),
            policy_faults = s.policy_faults.get(),
            records_moved = s.records_moved.get(),
            "tiered buffer stopped"
        );
        for tier in &self.inner.tiers {
            tier.log_summary();
        }
    }

    /// As a tier itself (not expected): the sum of its tiers, durable only if all are.
    fn tier_state(&self) -> TierState {
        let states = self.inner.tier_states();
        TierState {
            name: "tiered".to_owned(),
            durable: states.iter().all(|s| s.durable),
            available: states.iter().any(|s| s.available),
            held: states.iter().map(|s| s.held).sum(),
            capacity: None,
            lag: states.iter().map(|s| s.lag).sum(),
        }
    }
}

#[async_trait::async_trait]
impl BufferWriter for TieredBuffer {
    async fn write(&self, records: Vec<Record>, timeout: Duration) -> Result<(), WriteError> {
        let inner = &self.inner;
        let incoming: Vec<Incoming> = records.iter().map(Incoming::of).collect();
        let count = records.len();
        let (answer, cx) = inner
            .call(move |policy, cx| policy.on_write(cx, &incoming))
            .await;
        let placements = match answer.and_then(|a| {
            if let Ok(placements) = &a {
                inner.check(placements, count)?;
            }
            Ok(a)
        }) {
            Ok(Ok(placements)) => placements,
            Ok(Err(refusal)) => {
                inner.stats.writes_refused.add(1);
                return Err(match refusal {
                    Refusal::Throttled {
                        retry_after,
                        reason,
                    } => WriteError::Throttled {
                        retry_after,
                        reason,
                    },
                    Refusal::Unavailable(reason) => WriteError::Unavailable(reason),
                });
            }
            Err(fault) => {
                inner.fault("on-write", &fault);
                // Whatever the instance holds may be what made it fail.
                let inner2 = inner.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    inner2
                        .policy
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .recycle();
                })
                .await;
                return Err(WriteError::Unavailable(format!(
                    "the buffer policy failed: {fault}"
                )));
            }
        };

        // Each tier's records, keyed as the policy said; the dropped ones aside.
        let mut per_tier: Vec<Vec<Record>> = vec![Vec::new(); inner.tiers.len()];
        let mut dropped = Vec::new();
        for (mut record, placement) in records.into_iter().zip(placements) {
            match placement {
                Placement::Tier { tier, key } => {
                    if key.is_some() {
                        record.key = key;
                    }
                    record.headers = Vec::new();
                    per_tier[tier].push(record);
                }
                Placement::Drop(reason) => dropped.push((record, reason)),
            }
        }
        // Every tier at once; the write succeeds only if every one holds its records.
        let mut writes: Vec<(usize, Vec<Record>)> = per_tier
            .into_iter()
            .enumerate()
            .filter(|(_, records)| !records.is_empty())
            .collect();
        let mut failed = None;
        if writes.len() == 1 {
            // The usual case: no task to spawn.
            let (tier, records) = writes.pop().expect("one write");
            if let Err(e) = inner.writers[tier].write(records, timeout).await {
                failed = Some(e);
            }
        } else {
            let mut tasks = tokio::task::JoinSet::new();
            for (tier, records) in writes {
                let writer = inner.writers[tier].clone();
                tasks.spawn(async move { writer.write(records, timeout).await });
            }
            while let Some(result) = tasks.join_next().await {
                let result = result.unwrap_or_else(|panic| {
                    Err(WriteError::Unavailable(format!(
                        "a tier's write panicked: {panic}"
                    )))
                });
                if let Err(e) = result {
                    failed.get_or_insert(e);
                }
            }
        }
        if let Some(e) = failed {
            // The state changes of this write are not kept (`cx` is dropped with its overlay).
            return Err(e);
        }
        if let Err(full) = cx.keep() {
            // The records are held; only the policy's memory of them is lost (a later retry
            // may be kept twice, never lost).
            tracing::warn!(pipeline = %inner.pipeline, error = %full, "buffer policy state not updated");
        }
        if !dropped.is_empty() {
            inner.stats.records_dropped.add(dropped.len() as u64);
            (inner.dropped)(dropped).await;
        }
        Ok(())
    }

    fn max_record_size(&self) -> Option<usize> {
        self.inner
            .writers
            .iter()
            .filter_map(|w| w.max_record_size())
            .min()
    }

    fn wanted_headers(&self) -> Vec<String> {
        self.inner.wanted_headers.clone()
    }
}

/// One worker's reader: a batch read ahead from each tier; the policy names which to take.
struct TieredReader {
    inner: Arc<Inner>,
    worker: u32,
    channels: Vec<mpsc::Receiver<Batch>>,
    /// Where the next turn starts when the policy names no tier (or one with nothing).
    turn: usize,
}

#[async_trait::async_trait]
impl BufferReader for TieredReader {
    async fn read(&mut self) -> Option<Batch> {
        if let Some(batch) = self.inner.moves.take_returned() {
            return Some(batch);
        }
        let worker = self.worker;
        let (answer, _) = self
            .inner
            .call(move |policy, cx| policy.next_read(cx, worker))
            .await;
        let n = self.channels.len();
        match answer {
            Ok(Some(tier)) if tier < n => {
                if let Ok(batch) = self.channels[tier].try_recv() {
                    return Some(batch);
                }
            }
            Ok(Some(tier)) => self.inner.fault(
                "next-read",
                &PolicyFault(format!("the policy named tier {tier}; the buffer has {n}")),
            ),
            Ok(None) => {}
            Err(fault) => self.inner.fault("next-read", &fault),
        }
        // In turn: the first tier from `turn` that has a batch, else wait for any, or for a
        // batch a move gave back.
        let start = self.turn;
        let taken = loop {
            let channels = &mut self.channels;
            let any = std::future::poll_fn(|cx| {
                let mut open = false;
                for i in 0..n {
                    let tier = (start + i) % n;
                    match channels[tier].poll_recv(cx) {
                        Poll::Ready(Some(batch)) => return Poll::Ready(Some((tier, batch))),
                        Poll::Ready(None) => {}
                        Poll::Pending => open = true,
                    }
                }
                if open {
                    Poll::Pending
                } else {
                    Poll::Ready(None)
                }
            });
            tokio::select! {
                taken = any => break taken,
                () = self.inner.moves.returned_ready.notified() => {
                    if let Some(batch) = self.inner.moves.take_returned() {
                        return Some(batch);
                    }
                }
            }
        };
        let Some((tier, batch)) = taken else {
            // Every tier is drained: what moves gave back, once no tick is under way.
            loop {
                if let Some(batch) = self.inner.moves.take_returned() {
                    return Some(batch);
                }
                if !self.inner.moves.under_way() {
                    return self.inner.moves.take_returned();
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        self.turn = (tier + 1) % n;
        Some(batch)
    }
}
