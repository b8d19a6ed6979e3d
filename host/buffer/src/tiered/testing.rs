//! For tests of buffer policies (this crate's, and the Wasm components' in `tests/`): memory
//! tiers that can be taken down, a clock the test moves, and a seeded replay of random writes,
//! reads, out-of-order acknowledgements, ticks, tier outages and clock jumps through a
//! [`TieredBuffer`] that checks, at every step and after the drain, that nothing accepted is
//! lost: accepted = delivered + dropped (counted) + held. Built with the `testing` feature.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{
    Clock, Context, Incoming, Placement, Policy, PolicyFault, Refusal, State, TierState,
    TieredBuffer,
};
use crate::memory::MemoryBuffer;
use crate::{Batch, Buffer, BufferReader, BufferWriter, Record, WriteError};

/// Every record to tier `.0` with its own key, reads in turn, no moves: the smallest policy,
/// and what the tiered buffer costs by itself.
pub struct AllTo(pub usize);

impl Policy for AllTo {
    fn on_write(
        &mut self,
        _: &mut Context,
        records: &[Incoming],
    ) -> Result<Result<Vec<Placement>, Refusal>, PolicyFault> {
        let tier = self.0;
        Ok(Ok(records
            .iter()
            .map(|_| Placement::Tier { tier, key: None })
            .collect()))
    }
    fn next_read(&mut self, _: &mut Context, _: u32) -> Result<Option<usize>, PolicyFault> {
        Ok(None)
    }
}

/// A clock the test moves.
#[derive(Debug, Default)]
pub struct FakeClock(pub AtomicU64);

impl FakeClock {
    pub fn set(&self, now_ms: u64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }
    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for FakeClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// A memory tier that can be taken down: its writes then fail, as a broker outage would.
#[derive(Clone)]
pub struct Flaky {
    pub memory: MemoryBuffer,
    pub down: Arc<AtomicBool>,
}

impl Flaky {
    /// A tier of `capacity` records, read in batches of 4.
    pub fn new(capacity: usize) -> Self {
        Self {
            memory: MemoryBuffer::new("t", capacity, 4, Duration::from_millis(1)),
            down: Arc::default(),
        }
    }

    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl Buffer for Flaky {
    fn writer(&self) -> Arc<dyn BufferWriter> {
        Arc::new(self.clone())
    }
    fn reader(&self) -> Box<dyn BufferReader> {
        self.memory.reader()
    }
    fn close(&self) {
        self.memory.close();
    }
    fn log_summary(&self) {}
    fn tier_state(&self) -> TierState {
        TierState {
            available: !self.is_down(),
            ..self.memory.tier_state()
        }
    }
    fn take_now(&self, max: usize) -> Option<Batch> {
        self.memory.take_now(max)
    }
}

#[async_trait::async_trait]
impl BufferWriter for Flaky {
    async fn write(&self, records: Vec<Record>, timeout: Duration) -> Result<(), WriteError> {
        if self.is_down() {
            return Err(WriteError::Unavailable("tier down".into()));
        }
        self.memory.writer().write(records, timeout).await
    }
}

/// xorshift64*: a seeded sequence, so a failing replay can be run again.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// The replay's record `id`: its payload is `{"id":N}`, so equal ids are equal bytes.
pub fn record(id: u64, headers: Vec<(String, String)>) -> Record {
    Record {
        payload: format!("{{\"id\":{id}}}").into_bytes(),
        key: None,
        received_at_ms: 0,
        origin: "http:/replay".to_owned(),
        content_type: None,
        headers,
        ..Default::default()
    }
}

/// The id of a replay record.
pub fn id(record: &Record) -> u64 {
    let text = std::str::from_utf8(&record.payload).expect("a replay record");
    text.trim_start_matches("{\"id\":")
        .trim_end_matches('}')
        .parse()
        .expect("a replay record")
}

/// What a replay does.
pub struct Replay {
    pub seed: u64,
    pub steps: usize,
    /// The tiers: this many memory tiers of `capacity` records each.
    pub tiers: usize,
    pub capacity: usize,
    /// The headers of a record with this id, drawn from the replay's sequence (a tenant, a
    /// priority, a fault asked of a hostile policy).
    pub headers: fn(&mut Rng, u64) -> Vec<(String, String)>,
    /// The chance, in percent, that a written record repeats an earlier one (same bytes).
    pub repeat_percent: u64,
    /// How long a write may wait for room.
    pub wait: Duration,
}

/// What a replay saw (records counted once per write).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    pub accepted: usize,
    /// Records in writes that were refused (or failed): the client was told to retry.
    pub refused: usize,
    pub delivered: usize,
    pub dropped: usize,
    pub moved: u64,
    pub faults: u64,
}

/// Runs `replay` through a tiered buffer run by `policy`; panics (naming the seed and step) if
/// an accepted record is lost or a record appears that was not written, at any step or after
/// the drain.
pub async fn replay(r: &Replay, policy: Box<dyn Policy>) -> Report {
    let seed = r.seed;
    let mut rng = Rng(seed);
    let tiers: Vec<Flaky> = (0..r.tiers).map(|_| Flaky::new(r.capacity)).collect();
    let clock = Arc::new(FakeClock::default());
    clock.set(1_700_000_000_000);
    type Log = Arc<Mutex<Vec<(Record, String)>>>;
    let log: Log = Arc::default();
    let sink = log.clone();
    let buffer = TieredBuffer::new(
        "replay",
        tiers
            .iter()
            .map(|t| Arc::new(t.clone()) as Arc<dyn Buffer>)
            .collect(),
        policy,
        Arc::new(State::new(10_000)),
        clock.clone(),
        Arc::new(move |d| {
            sink.lock().unwrap().extend(d);
            Box::pin(async {})
        }),
    );
    let writer = buffer.writer();
    let mut reader = buffer.reader();
    let read_wait = Duration::from_millis(40);
    // Per id: how many writes of it were accepted / refused, and how many times it came out.
    let mut accepted: BTreeMap<u64, usize> = BTreeMap::new();
    let mut refused: BTreeMap<u64, usize> = BTreeMap::new();
    let mut delivered: BTreeMap<u64, usize> = BTreeMap::new();
    let mut unacked: Vec<Batch> = Vec::new();
    let mut next_id = 0;
    let held = |tiers: &[Flaky]| tiers.iter().map(|t| t.memory.used()).sum::<usize>();
    let deliver = |batch: Batch, delivered: &mut BTreeMap<u64, usize>| {
        for rec in &batch.records {
            *delivered.entry(id(rec)).or_default() += 1;
        }
        batch.ack.acknowledge();
    };
    for step in 0..r.steps {
        match rng.below(10) {
            0..=3 => {
                let n = 1 + rng.below(4);
                let mut ids = Vec::new();
                let records: Vec<Record> = (0..n)
                    .map(|_| {
                        let id = if next_id > 0 && rng.below(100) < r.repeat_percent {
                            rng.below(next_id)
                        } else {
                            next_id += 1;
                            next_id - 1
                        };
                        ids.push(id);
                        record(id, (r.headers)(&mut rng, id))
                    })
                    .collect();
                let into = match writer.write(records, r.wait).await {
                    Ok(()) => &mut accepted,
                    Err(_) => &mut refused,
                };
                for id in ids {
                    *into.entry(id).or_default() += 1;
                }
            }
            4..=5 => {
                if let Ok(Some(batch)) = tokio::time::timeout(read_wait, reader.read()).await {
                    unacked.push(batch);
                }
            }
            6..=7 if !unacked.is_empty() => {
                let batch = unacked.swap_remove(rng.below(unacked.len() as u64) as usize);
                deliver(batch, &mut delivered);
            }
            8 if rng.below(2) == 0 => buffer.tick().await,
            8 => {
                let t = &tiers[rng.below(tiers.len() as u64) as usize];
                t.set_down(!t.is_down());
            }
            9 => clock.advance(rng.below(2_000)),
            _ => {}
        }
        let accepted_total: usize = accepted.values().sum();
        let refused_total: usize = refused.values().sum();
        let kept = delivered.values().sum::<usize>() + log.lock().unwrap().len() + held(&tiers);
        assert!(
            kept >= accepted_total && kept <= accepted_total + refused_total,
            "seed {seed}, step {step}: delivered + dropped + held = {kept}, accepted {accepted_total} (+ at most {refused_total} of refused writes)"
        );
    }
    // Drain: every tier up, every batch acknowledged, close, read to the end.
    for t in &tiers {
        t.set_down(false);
    }
    for batch in unacked.drain(..) {
        deliver(batch, &mut delivered);
    }
    buffer.close();
    while let Some(batch) = tokio::time::timeout(Duration::from_secs(10), reader.read())
        .await
        .expect("the drain ends")
    {
        deliver(batch, &mut delivered);
    }
    assert_eq!(held(&tiers), 0, "seed {seed}: records held after the drain");
    let mut dropped: BTreeMap<u64, usize> = BTreeMap::new();
    for (rec, _) in log.lock().unwrap().iter() {
        *dropped.entry(id(rec)).or_default() += 1;
    }
    let count = |m: &BTreeMap<u64, usize>, id: &u64| m.get(id).copied().unwrap_or(0);
    for id in accepted.keys().chain(refused.keys()) {
        let (a, f) = (count(&accepted, id), count(&refused, id));
        let got = count(&delivered, id) + count(&dropped, id);
        assert!(
            a <= got && got <= a + f,
            "seed {seed}: record {id} accepted {a} time(s), refused {f}, came out {got}"
        );
        assert!(
            count(&dropped, id) <= a,
            "seed {seed}: record {id} dropped {} time(s) but accepted {a}: a refused write's drop was dead-lettered",
            count(&dropped, id)
        );
    }
    assert!(
        delivered
            .keys()
            .all(|id| accepted.contains_key(id) || refused.contains_key(id)),
        "seed {seed}: a record nobody wrote"
    );
    let stats = buffer.stats();
    Report {
        accepted: accepted.values().sum(),
        refused: refused.values().sum(),
        delivered: delivered.values().sum(),
        dropped: dropped.values().sum(),
        moved: stats.records_moved.get(),
        faults: stats.policy_faults.get(),
    }
}
