//! The tiered buffer over memory tiers, with in-process policies and a fake clock: placement,
//! refusals, drops, state kept only with its write, policy faults, and a replay of random
//! writes, reads, out-of-order acks, policy faults and tier outages that checks nothing
//! accepted is lost: accepted = delivered + dropped + held, at every step and after the drain.

use std::sync::atomic::AtomicU64;

use super::testing::{self, FakeClock, Flaky, Replay, Rng, id};
use super::*;

const WAIT: Duration = Duration::from_millis(20);

fn tier(capacity: usize) -> Flaky {
    Flaky::new(capacity)
}

fn record(id: u64, origin: &str) -> Record {
    Record {
        payload: format!("{{\"id\":{id}}}").into_bytes(),
        key: None,
        received_at_ms: 0,
        origin: origin.to_owned(),
        content_type: None,
        headers: vec![("x-tenant".into(), format!("t{}", id % 3))],
        ..Default::default()
    }
}

/// A policy from a closure over each write's records.
struct Scripted<F>(F);

impl<F> Policy for Scripted<F>
where
    F: FnMut(&mut Context, &[Incoming]) -> Result<Result<Vec<Placement>, Refusal>, PolicyFault>
        + Send,
{
    fn wanted_headers(&self) -> Vec<String> {
        vec!["X-Tenant".into()]
    }
    fn on_write(
        &mut self,
        cx: &mut Context,
        records: &[Incoming],
    ) -> Result<Result<Vec<Placement>, Refusal>, PolicyFault> {
        (self.0)(cx, records)
    }
    fn next_read(&mut self, _: &mut Context, _: u32) -> Result<Option<usize>, PolicyFault> {
        Ok(None)
    }
}

type DroppedLog = Arc<Mutex<Vec<(Record, String)>>>;

fn buffer(
    tiers: &[Flaky],
    policy: Box<dyn Policy>,
    clock: Arc<FakeClock>,
) -> (TieredBuffer, DroppedLog) {
    let log: DroppedLog = Arc::default();
    let sink = log.clone();
    let tiers = tiers
        .iter()
        .map(|t| Arc::new(t.clone()) as Arc<dyn Buffer>)
        .collect();
    let buffer = TieredBuffer::new(
        "p",
        tiers,
        policy,
        Arc::new(State::new(1_000)),
        clock,
        Arc::new(move |d| {
            sink.lock().unwrap().extend(d);
            Box::pin(async {})
        }),
    );
    (buffer, log)
}

/// How long a read waits for records the test put there: a loaded machine is slow, not empty.
const READ_WAIT: Duration = Duration::from_secs(30);

/// Reads one batch the test expects (or `None` after [`READ_WAIT`] with nothing).
async fn read(reader: &mut Box<dyn BufferReader>) -> Option<Batch> {
    tokio::time::timeout(READ_WAIT, reader.read())
        .await
        .ok()
        .flatten()
}

/// Reads and acknowledges batches until `n` records came; their ids, in read order.
async fn read_ids(reader: &mut Box<dyn BufferReader>, n: usize) -> Vec<u64> {
    let mut ids = Vec::new();
    while ids.len() < n {
        let Some(batch) = read(reader).await else {
            panic!("read {ids:?}, not {n} records, within {READ_WAIT:?}");
        };
        ids.extend(batch.records.iter().map(id));
        batch.ack.acknowledge();
    }
    ids
}

#[tokio::test(flavor = "multi_thread")]
async fn records_go_to_the_tier_the_policy_names_with_its_key_and_drops_are_dead_lettered() {
    let tiers = [tier(100), tier(100)];
    let policy = Scripted(|_: &mut Context, records: &[Incoming]| {
        Ok(Ok(records
            .iter()
            .map(|r| match r.origin.as_str() {
                "high" => Placement::Tier { tier: 0, key: None },
                "low" => Placement::Tier {
                    tier: 1,
                    key: Some(r.headers[0].1.clone().into_bytes()),
                },
                _ => Placement::Drop(format!("unknown origin `{}`", r.origin)),
            })
            .collect()))
    });
    let (buffer, dropped) = buffer(&tiers, Box::new(policy), Arc::default());
    assert_eq!(buffer.writer().wanted_headers(), ["x-tenant"]);
    let records = vec![record(1, "high"), record(2, "low"), record(3, "other")];
    buffer.writer().write(records, WAIT).await.unwrap();
    assert_eq!(tiers[0].memory.used(), 1);
    assert_eq!(tiers[1].memory.used(), 1);
    let mut low = tiers[1].memory.reader();
    let batch = read(&mut low).await.unwrap();
    assert_eq!(batch.records[0].key.as_deref(), Some(&b"t2"[..]));
    assert!(
        batch.records[0].headers.is_empty(),
        "headers are the policy's only"
    );
    let dropped = dropped.lock().unwrap();
    assert_eq!(dropped.len(), 1);
    assert_eq!(
        (id(&dropped[0].0), dropped[0].1.as_str()),
        (3, "unknown origin `other`")
    );
    assert_eq!(buffer.stats().records_dropped.get(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refusal_keeps_nothing_and_says_how_long_to_wait() {
    let tiers = [tier(100)];
    let policy = Scripted(|cx: &mut Context, records: &[Incoming]| {
        cx.state().set(b"seen".to_vec(), vec![1], None);
        Ok(match records[0].origin.as_str() {
            "greedy" => Err(Refusal::Throttled {
                retry_after: Duration::from_millis(1500),
                reason: "tenant over its rate".into(),
            }),
            _ => Err(Refusal::Unavailable("not now".into())),
        })
    });
    let (buffer, _) = buffer(&tiers, Box::new(policy), Arc::default());
    let err = buffer
        .writer()
        .write(vec![record(1, "greedy")], WAIT)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        WriteError::Throttled {
            retry_after: Duration::from_millis(1500),
            reason: "tenant over its rate".into()
        }
    );
    let err = buffer
        .writer()
        .write(vec![record(2, "x")], WAIT)
        .await
        .unwrap_err();
    assert_eq!(err, WriteError::Unavailable("not now".into()));
    assert_eq!(tiers[0].memory.used(), 0);
    assert!(
        buffer.inner.state.is_empty(0),
        "a refused write's state changes are undone"
    );
    assert_eq!(buffer.stats().writes_refused.get(), 2);
}

/// A dedup policy: a record whose payload was written within 1 s is dropped.
fn dedup() -> Box<dyn Policy> {
    Box::new(Scripted(|cx: &mut Context, records: &[Incoming]| {
        let keys = records
            .iter()
            .map(|r| r.payload_hash.to_le_bytes().to_vec())
            .collect();
        let new = cx.state().insert_new(keys, 1_000);
        Ok(Ok(new
            .into_iter()
            .map(|new| match new {
                true => Placement::Tier { tier: 0, key: None },
                false => Placement::Drop("duplicate".into()),
            })
            .collect()))
    }))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_retry_of_a_write_that_failed_is_not_taken_for_a_duplicate() {
    let tiers = [tier(100)];
    let clock = Arc::new(FakeClock::default());
    let (buffer, dropped) = buffer(&tiers, dedup(), clock.clone());
    tiers[0].down.store(true, Ordering::SeqCst);
    let err = buffer
        .writer()
        .write(vec![record(7, "a")], WAIT)
        .await
        .unwrap_err();
    assert_eq!(err, WriteError::Unavailable("tier down".into()));
    tiers[0].down.store(false, Ordering::SeqCst);
    // The client retries: kept, not dropped as a duplicate of the write that failed.
    buffer
        .writer()
        .write(vec![record(7, "a")], WAIT)
        .await
        .unwrap();
    assert_eq!(tiers[0].memory.used(), 1);
    // A third send of the same bytes within the TTL is the duplicate.
    buffer
        .writer()
        .write(vec![record(7, "a")], WAIT)
        .await
        .unwrap();
    assert_eq!(tiers[0].memory.used(), 1);
    assert_eq!(dropped.lock().unwrap().len(), 1);
    // After the TTL it is new again.
    clock.0.store(1_000, Ordering::SeqCst);
    buffer
        .writer()
        .write(vec![record(7, "a")], WAIT)
        .await
        .unwrap();
    assert_eq!(tiers[0].memory.used(), 2);
}

/// A policy that fails on request and counts its recycles.
struct Faulty {
    recycled: Arc<AtomicU64>,
}

impl Policy for Faulty {
    fn on_write(
        &mut self,
        _: &mut Context,
        records: &[Incoming],
    ) -> Result<Result<Vec<Placement>, Refusal>, PolicyFault> {
        let place = |tier| Placement::Tier { tier, key: None };
        match records[0].origin.as_str() {
            "trap" => Err(PolicyFault("wasm trap: unreachable".into())),
            "panic" => panic!("a policy bug"),
            "short" => Ok(Ok(vec![])),
            "nowhere" => Ok(Ok(vec![place(9); records.len()])),
            _ => Ok(Ok(vec![place(0); records.len()])),
        }
    }
    fn next_read(&mut self, _: &mut Context, _: u32) -> Result<Option<usize>, PolicyFault> {
        Err(PolicyFault("wasm trap: next-read".into()))
    }
    fn recycle(&mut self) {
        self.recycled.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_policy_refuses_that_write_only_and_reading_goes_on() {
    let tiers = [tier(100)];
    let recycled = Arc::new(AtomicU64::new(0));
    let policy = Faulty {
        recycled: recycled.clone(),
    };
    let (buffer, _) = buffer(&tiers, Box::new(policy), Arc::default());
    let writer = buffer.writer();
    writer.write(vec![record(1, "ok")], WAIT).await.unwrap();
    for (origin, why) in [
        ("trap", "wasm trap: unreachable"),
        ("panic", "panicked"),
        ("short", "the policy placed 0 records of a write of 1"),
        (
            "nowhere",
            "the policy placed a record in tier 9; the buffer has 1 (0 to 0)",
        ),
    ] {
        match writer.write(vec![record(2, origin)], WAIT).await {
            Err(WriteError::Unavailable(reason)) => {
                assert!(reason.starts_with("the buffer policy failed: "), "{reason}");
                assert!(reason.contains(why), "{origin}: {reason}");
            }
            other => panic!("{origin}: {other:?}"),
        }
    }
    assert_eq!(recycled.load(Ordering::SeqCst), 4);
    assert_eq!(buffer.stats().policy_faults.get(), 4);
    writer.write(vec![record(3, "ok")], WAIT).await.unwrap();
    // next-read traps every time: the reader takes the tiers in turn and gets both.
    let mut reader = buffer.reader();
    assert_eq!(read_ids(&mut reader, 2).await, [1, 3]);
}

/// A policy making random choices from the seed: place in either tier, drop, refuse, fail.
struct Random(Rng);

impl Policy for Random {
    fn on_write(
        &mut self,
        _: &mut Context,
        records: &[Incoming],
    ) -> Result<Result<Vec<Placement>, Refusal>, PolicyFault> {
        match self.0.below(20) {
            0 => return Err(PolicyFault("random trap".into())),
            1 => return Ok(Err(Refusal::Unavailable("random refusal".into()))),
            2 => return Ok(Ok(vec![])), // a lie
            _ => {}
        }
        Ok(Ok(records
            .iter()
            .map(|_| match self.0.below(10) {
                0 => Placement::Drop("random drop".into()),
                n => Placement::Tier {
                    tier: (n % 2) as usize,
                    key: None,
                },
            })
            .collect()))
    }
    fn next_read(&mut self, _: &mut Context, _: u32) -> Result<Option<usize>, PolicyFault> {
        match self.0.below(4) {
            0 => Err(PolicyFault("random next-read trap".into())),
            1 => Ok(None),
            n => Ok(Some((n % 3) as usize)), // 2 is past the tiers: a fault, read in turn
        }
    }
    fn tick(&mut self, _: &mut Context) -> Result<Vec<Move>, PolicyFault> {
        if self.0.below(8) == 0 {
            return Err(PolicyFault("random tick trap".into()));
        }
        Ok((0..self.0.below(3))
            .map(|_| Move {
                from: self.0.below(3) as usize, // 2 is past the tiers, and from == to happens
                to: self.0.below(2) as usize,
                max_records: self.0.below(10) as usize,
            })
            .collect())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn random_writes_reads_acks_faults_moves_and_outages_lose_nothing() {
    let mut moved_somewhere = false;
    for seed in [1_u64, 7, 42, 1234, 99_991] {
        let replay = Replay {
            seed,
            steps: 400,
            tiers: 2,
            capacity: 40,
            headers: |_, id| vec![("x-tenant".into(), format!("t{}", id % 3))],
            repeat_percent: 10,
            wait: WAIT,
        };
        let report = testing::replay(&replay, Box::new(Random(Rng(seed ^ 0xabcdef)))).await;
        assert!(
            report.accepted > 0 && report.dropped > 0 && report.refused > 0 && report.faults > 0,
            "seed {seed}: the replay exercised little: {report:?}"
        );
        moved_somewhere |= report.moved > 0;
    }
    assert!(moved_somewhere, "no replay moved a record between tiers");
}

/// Spills to tier 1 (memory) while tier 0 is down, and moves the spill back once it is up.
struct Spill;

impl Policy for Spill {
    fn on_write(
        &mut self,
        cx: &mut Context,
        records: &[Incoming],
    ) -> Result<Result<Vec<Placement>, Refusal>, PolicyFault> {
        let tier = usize::from(!cx.tiers[0].available);
        Ok(Ok(records
            .iter()
            .map(|_| Placement::Tier { tier, key: None })
            .collect()))
    }
    fn next_read(&mut self, _: &mut Context, _: u32) -> Result<Option<usize>, PolicyFault> {
        Ok(None)
    }
    fn tick(&mut self, cx: &mut Context) -> Result<Vec<Move>, PolicyFault> {
        Ok(if cx.tiers[1].lag > 0 {
            vec![Move {
                from: 1,
                to: 0,
                max_records: 5,
            }]
        } else {
            Vec::new()
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_move_its_target_refuses_goes_to_the_readers_and_a_later_tick_moves_the_rest() {
    let tiers = [tier(20), tier(20)];
    let (buffer, _) = buffer(&tiers, Box::new(Spill), Arc::default());
    let writer = buffer.writer();
    tiers[0].down.store(true, Ordering::SeqCst);
    for i in 0..7 {
        writer.write(vec![record(i, "r")], WAIT).await.unwrap();
    }
    assert_eq!((tiers[0].memory.used(), tiers[1].memory.used()), (0, 7));
    // Tier 0 still down: the move's write fails; its 5 records stay held where they were,
    // for the readers.
    buffer.tick().await;
    assert_eq!((tiers[0].memory.used(), tiers[1].memory.used()), (0, 7));
    assert_eq!(buffer.stats().records_moved.get(), 0);
    tiers[0].down.store(false, Ordering::SeqCst);
    // The policy's next move of at most 5: the 2 not handed out.
    buffer.tick().await;
    assert_eq!((tiers[0].memory.used(), tiers[1].memory.used()), (2, 5));
    assert_eq!(buffer.stats().records_moved.get(), 2);
    // The refused move first, from where it was, then the moved records.
    let mut reader = buffer.reader();
    assert_eq!(read_ids(&mut reader, 7).await, (0..7).collect::<Vec<_>>());
    assert_eq!((tiers[0].memory.used(), tiers[1].memory.used()), (0, 0));
}

/// Places everything in tier 1 and asks, every tick, to move all of it to tier 0.
struct Hostage;

impl Policy for Hostage {
    fn on_write(
        &mut self,
        _: &mut Context,
        records: &[Incoming],
    ) -> Result<Result<Vec<Placement>, Refusal>, PolicyFault> {
        Ok(Ok(records
            .iter()
            .map(|_| Placement::Tier { tier: 1, key: None })
            .collect()))
    }
    fn next_read(&mut self, _: &mut Context, _: u32) -> Result<Option<usize>, PolicyFault> {
        Ok(None)
    }
    fn tick(&mut self, _: &mut Context) -> Result<Vec<Move>, PolicyFault> {
        Ok(vec![Move {
            from: 1,
            to: 0,
            max_records: usize::MAX,
        }])
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_move_larger_than_its_target_moves_what_fits_and_holds_nothing_back() {
    let tiers = [tier(4), tier(40)];
    let (buffer, _) = buffer(&tiers, Box::new(Hostage), Arc::default());
    let writer = buffer.writer();
    for i in 0..19 {
        writer.write(vec![record(i, "r")], WAIT).await.unwrap();
    }
    buffer.tick().await;
    assert_eq!(
        (tiers[0].memory.used(), tiers[1].memory.used()),
        (4, 15),
        "what the target had room for"
    );
    // Every record is read while the buffer runs and the policy keeps asking.
    let ticking = {
        let buffer = buffer.clone();
        tokio::spawn(async move {
            loop {
                buffer.tick().await;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let mut reader = buffer.reader();
    let mut ids = Vec::new();
    while ids.len() < 19 {
        let batch = tokio::time::timeout(Duration::from_secs(5), reader.read())
            .await
            .expect("no record is held back by the move")
            .expect("the buffer is open");
        ids.extend(batch.records.iter().map(id));
        batch.ack.acknowledge();
    }
    ticking.abort();
    ids.sort_unstable();
    assert_eq!(ids, (0..19).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_move_not_finished_at_shutdown_is_delivered_from_where_it_was() {
    let tiers = [tier(20), tier(20)];
    let (buffer, _) = buffer(&tiers, Box::new(Spill), Arc::default());
    tiers[0].down.store(true, Ordering::SeqCst);
    let writer = buffer.writer();
    for i in 0..3 {
        writer.write(vec![record(i, "r")], WAIT).await.unwrap();
    }
    buffer.tick().await; // taken from tier 1, not written to tier 0: given to the readers
    assert_eq!(tiers[1].memory.tier_state().lag, 0);
    assert_eq!(tiers[1].memory.used(), 3);
    let mut reader = buffer.reader();
    buffer.close();
    let mut ids = Vec::new();
    while let Some(batch) = tokio::time::timeout(Duration::from_secs(5), reader.read())
        .await
        .expect("the drain ends")
    {
        ids.extend(batch.records.iter().map(id));
        batch.ack.acknowledge();
    }
    assert_eq!(ids, [0, 1, 2]);
    assert_eq!(tiers[1].memory.used(), 0);
}

/// Asks for moves that break the contract.
struct BadMoves;

impl Policy for BadMoves {
    fn on_write(
        &mut self,
        _: &mut Context,
        records: &[Incoming],
    ) -> Result<Result<Vec<Placement>, Refusal>, PolicyFault> {
        Ok(Ok(records
            .iter()
            .map(|_| Placement::Tier { tier: 1, key: None })
            .collect()))
    }
    fn next_read(&mut self, _: &mut Context, _: u32) -> Result<Option<usize>, PolicyFault> {
        Ok(None)
    }
    fn tick(&mut self, _: &mut Context) -> Result<Vec<Move>, PolicyFault> {
        let m = |from, to| Move {
            from,
            to,
            max_records: 100,
        };
        Ok(vec![m(1, 2), m(1, 1), m(7, 0)])
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn moves_to_or_from_tiers_that_do_not_exist_are_faults_and_move_nothing() {
    let tiers = [tier(20), tier(20)];
    let (buffer, _) = buffer(&tiers, Box::new(BadMoves), Arc::default());
    buffer
        .writer()
        .write(vec![record(1, "r")], WAIT)
        .await
        .unwrap();
    buffer.tick().await;
    assert_eq!(buffer.stats().policy_faults.get(), 3);
    assert_eq!(buffer.stats().records_moved.get(), 0);
    assert_eq!((tiers[0].memory.used(), tiers[1].memory.used()), (0, 1));
}
