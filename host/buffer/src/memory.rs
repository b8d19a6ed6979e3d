//! `bounded_blocking`: an in-memory queue of raw records with a fixed capacity.
//!
//! Capacity is counted in records and held until a batch's events are in the sinks' hands
//! (or it is acknowledged), so records being deserialized or written to direct sinks still
//! count; what stateful processors keep and sinks stage after that is bounded on its own
//! (`max_held_events`, the sinks' thresholds): memory stays bounded however slow the sinks.
//! A record of events an upstream pipeline handed over parsed (`Record::events`) counts as
//! its events, in the room it takes and in a batch's size, as Data Prepper counts its records.
//! Writers wait (up to their timeout) for room and never drop; only a `pipeline` sink's handoff
//! waits without one (its wait is the chain's backpressure, bounded by shutdown's deadline).
//! A writer that must know when its records are through (`write_held`: an upstream pipeline's
//! `pipeline` sink) is told when the batches carrying them are acknowledged.

use std::collections::VecDeque;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};
use tokio::time::Instant;

use crate::{
    Acknowledgement, Batch, Buffer, BufferReader, BufferWriter, Held, Record, TierState, WriteError,
};

/// The in-memory buffer.
#[derive(Clone)]
pub struct MemoryBuffer {
    inner: Arc<Inner>,
}

struct Inner {
    /// The pipeline it buffers for, in metric labels and the shutdown summary.
    pipeline: String,
    capacity: usize,
    batch_size: usize,
    delay: Duration,
    /// A std Mutex: held only to push or pop, never across an await. Each record with the
    /// write that waits for its acknowledgement, if one does.
    queue: Mutex<VecDeque<(Record, Option<Arc<Pending>>)>>,
    /// Room left, in records. Permits are taken by writes and given back on acknowledgement.
    room: Arc<Semaphore>,
    /// Wakes readers on new records and on close.
    arrived: Notify,
    closed: AtomicBool,
    /// Data Prepper's gauges: `bounded_blocking_recordsInFlight` (records held, read or not)
    /// and `bounded_blocking_bufferUsage` (their share of the capacity).
    in_flight: metrics::Gauge,
    usage: metrics::Gauge,
}

impl MemoryBuffer {
    /// The buffer of `pipeline`: `capacity` records at most; batches of up to `batch_size`,
    /// waiting up to `delay` for a batch to fill.
    pub fn new(pipeline: &str, capacity: usize, batch_size: usize, delay: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                pipeline: pipeline.to_owned(),
                in_flight: metrics::gauge!("bounded_blocking_recordsInFlight", "pipeline" => pipeline.to_owned()),
                usage: metrics::gauge!("bounded_blocking_bufferUsage", "pipeline" => pipeline.to_owned()),
                capacity,
                batch_size,
                delay,
                queue: Mutex::new(VecDeque::new()),
                room: Arc::new(Semaphore::new(capacity)),
                arrived: Notify::new(),
                closed: AtomicBool::new(false),
            }),
        }
    }

    /// Records held now, including those read but not yet acknowledged.
    pub fn used(&self) -> usize {
        self.inner.capacity - self.inner.room.available_permits()
    }

    /// The most records it holds.
    pub fn capacity(&self) -> usize {
        self.inner.capacity
    }
}

#[async_trait::async_trait]
impl Buffer for MemoryBuffer {
    fn writer(&self) -> Arc<dyn BufferWriter> {
        Arc::new(self.clone())
    }

    fn reader(&self) -> Box<dyn BufferReader> {
        Box::new(self.clone())
    }

    fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        self.inner.arrived.notify_waiters();
    }

    fn update_gauges(&self) {
        let used = self.used();
        self.inner.in_flight.set(used as f64);
        self.inner
            .usage
            .set(used as f64 / self.inner.capacity.max(1) as f64);
    }

    fn log_summary(&self) {
        tracing::info!(pipeline = %self.inner.pipeline, left_in_buffer = self.used(), "memory buffer stopped");
    }

    fn tier_state(&self) -> TierState {
        let held = self.used();
        let unread = self.inner.queue.lock().expect("buffer queue lock").len();
        TierState {
            name: "bounded_blocking".to_owned(),
            durable: false,
            available: !self.inner.closed.load(Ordering::SeqCst) && held < self.inner.capacity,
            held: held as u64,
            capacity: Some(self.inner.capacity as u64),
            lag: unread as u64,
        }
    }

    fn take_now(&self, max: usize) -> Option<Batch> {
        let mut queue = self.inner.queue.lock().expect("buffer queue lock");
        let n = queue.len().min(max);
        if n == 0 {
            return None;
        }
        Some(batch(queue.drain(..n), &self.inner.room))
    }
}

/// One `write_held` waiting for its records' acknowledgements.
struct Pending {
    /// Records not acknowledged yet.
    remaining: AtomicUsize,
    /// Sent when none remain; dropped (the writer learns they were lost) when a batch carrying
    /// one is dropped unacknowledged.
    done: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
}

/// The pending writes of one batch's records, told on acknowledgement, or of the loss if the
/// batch is dropped without one.
struct Shares {
    pending: Vec<Arc<Pending>>,
    acknowledged: bool,
}

impl Shares {
    fn acknowledge(mut self) {
        self.acknowledged = true;
        for p in &self.pending {
            if p.remaining.fetch_sub(1, Ordering::AcqRel) == 1
                && let Some(done) = p.done.lock().expect("pending lock").take()
            {
                let _ = done.send(());
            }
        }
    }
}

impl Drop for Shares {
    fn drop(&mut self) {
        if !self.acknowledged {
            for p in &self.pending {
                p.done.lock().expect("pending lock").take();
            }
        }
    }
}

/// The room a record takes: one, or one per event it carries.
fn weight(record: &Record) -> usize {
    record.events.len().max(1)
}

/// How many records from the front of `queue` make a batch of at most `size` (by weight; at
/// least one), and whether that batch is full.
fn batch_len(queue: &VecDeque<(Record, Option<Arc<Pending>>)>, size: usize) -> (usize, bool) {
    let mut total = 0;
    for (n, (record, _)) in queue.iter().enumerate() {
        total += weight(record);
        if total >= size {
            return (if total > size { n.max(1) } else { n + 1 }, true);
        }
    }
    (queue.len(), false)
}

/// A batch of `records`, whose acknowledgement tells the writes waiting for them; its room
/// comes back with the acknowledgement or, before it, once its events are in the sinks'
/// hands (`Batch::room`), whichever comes first.
fn batch(
    records: impl Iterator<Item = (Record, Option<Arc<Pending>>)>,
    room: &Arc<Semaphore>,
) -> Batch {
    let (records, pending): (Vec<Record>, Vec<Option<Arc<Pending>>>) = records.unzip();
    let n: usize = records.iter().map(weight).sum();
    let held = Arc::new(Mutex::new(Some((room.clone(), n))));
    let free = move || {
        if let Some((room, n)) = held.lock().expect("room lock").take() {
            room.add_permits(n);
        }
    };
    let shares = Shares {
        pending: pending.into_iter().flatten().collect(),
        acknowledged: false,
    };
    let free_early = free.clone();
    Batch {
        records,
        unreadable: Vec::new(),
        ack: Acknowledgement::new(move || {
            free();
            shares.acknowledge();
        }),
        room: Some(Acknowledgement::new(free_early)),
        parts: None,
        reads: Vec::new(),
    }
}

impl MemoryBuffer {
    /// Queues `records` once there is room (waiting at most `timeout`), each with `pending`.
    async fn push(
        &self,
        records: Vec<Record>,
        timeout: Duration,
        pending: Option<Arc<Pending>>,
    ) -> Result<(), WriteError> {
        let inner = &self.inner;
        let needed: usize = records.iter().map(weight).sum();
        let too_large = || WriteError::TooLarge {
            records: needed,
            capacity: inner.capacity,
        };
        if needed > inner.capacity {
            return Err(too_large());
        }
        if inner.closed.load(Ordering::SeqCst) {
            return Err(WriteError::Closed);
        }
        let n = u32::try_from(needed).map_err(|_| too_large())?;
        let permits = tokio::time::timeout(timeout, inner.room.acquire_many(n))
            .await
            .map_err(|_| WriteError::Full(timeout))?
            .map_err(|_| WriteError::Closed)?;
        // Given back by the acknowledgement of the batch that carries these records.
        permits.forget();
        inner
            .queue
            .lock()
            .expect("buffer queue lock")
            .extend(records.into_iter().map(|r| (r, pending.clone())));
        inner.arrived.notify_waiters();
        Ok(())
    }
}

#[async_trait::async_trait]
impl BufferWriter for MemoryBuffer {
    async fn write(&self, records: Vec<Record>, timeout: Duration) -> Result<(), WriteError> {
        self.push(records, timeout, None).await
    }

    fn events_per_record(&self) -> Option<usize> {
        Some(self.inner.batch_size.min(self.inner.capacity).max(1))
    }

    async fn write_held(
        &self,
        records: Vec<Record>,
        timeout: Duration,
    ) -> Result<Held, WriteError> {
        let (done, held) = tokio::sync::oneshot::channel();
        let pending = Arc::new(Pending {
            remaining: AtomicUsize::new(records.len()),
            done: Mutex::new(Some(done)),
        });
        if records.is_empty() {
            return Ok(Held::now());
        }
        self.push(records, timeout, Some(pending)).await?;
        Ok(Held::on(held))
    }
}

#[async_trait::async_trait]
impl BufferReader for MemoryBuffer {
    async fn read(&mut self) -> Option<Batch> {
        let inner = &self.inner;
        let mut first_seen: Option<Instant> = None;
        loop {
            let mut arrived = pin!(inner.arrived.notified());
            arrived.as_mut().enable();
            {
                let mut queue = inner.queue.lock().expect("buffer queue lock");
                let closed = inner.closed.load(Ordering::SeqCst);
                if queue.is_empty() {
                    if closed {
                        return None;
                    }
                    first_seen = None;
                } else {
                    let started = *first_seen.get_or_insert_with(Instant::now);
                    let (n, full) = batch_len(&queue, inner.batch_size);
                    if full || closed || started.elapsed() >= inner.delay {
                        return Some(batch(queue.drain(..n), &inner.room));
                    }
                }
            }
            match first_seen {
                Some(started) => {
                    let _ = tokio::time::timeout_at(started + inner.delay, arrived).await;
                }
                None => arrived.await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(i: usize) -> Record {
        Record {
            payload: vec![i as u8],
            key: None,
            received_at_ms: 0,
            origin: "t".into(),
            content_type: None,
            headers: Vec::new(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn full_buffer_refuses_until_acknowledged() {
        let buffer = MemoryBuffer::new("test", 2, 2, Duration::ZERO);
        let w = buffer.writer();
        w.write(vec![rec(1), rec(2)], Duration::from_millis(10))
            .await
            .unwrap();
        let err = w
            .write(vec![rec(3)], Duration::from_millis(10))
            .await
            .unwrap_err();
        assert_eq!(err, WriteError::Full(Duration::from_millis(10)));
        let mut r = buffer.reader();
        let batch = r.read().await.unwrap();
        assert_eq!(batch.records.len(), 2);
        // Read but not acknowledged: still full.
        assert!(
            w.write(vec![rec(3)], Duration::from_millis(10))
                .await
                .is_err()
        );
        batch.ack.acknowledge();
        w.write(vec![rec(3)], Duration::from_millis(10))
            .await
            .unwrap();
        assert_eq!(buffer.used(), 1);
    }

    #[tokio::test]
    async fn a_held_write_resolves_when_its_batches_are_acknowledged_and_fails_when_dropped() {
        let buffer = MemoryBuffer::new("test", 10, 2, Duration::ZERO);
        let w = buffer.writer();
        let held = w
            .write_held((0..3).map(rec).collect(), Duration::ZERO)
            .await
            .unwrap();
        let mut held = Box::pin(held.acknowledged());
        let mut r = buffer.reader();
        let first = r.read().await.unwrap();
        let second = r.read().await.unwrap();
        assert_eq!((first.records.len(), second.records.len()), (2, 1));
        first.ack.acknowledge();
        assert!(
            tokio::time::timeout(Duration::from_millis(20), &mut held)
                .await
                .is_err(),
            "one record is not acknowledged yet"
        );
        second.ack.acknowledge();
        assert_eq!(held.await, Ok(()));

        let lost = w.write_held(vec![rec(9)], Duration::ZERO).await.unwrap();
        drop(r.read().await.unwrap());
        assert_eq!(lost.acknowledged().await, Err(crate::Lost));
    }

    #[tokio::test]
    async fn room_comes_back_once_the_sinks_have_a_batch_before_its_acknowledgement() {
        let buffer = MemoryBuffer::new("test", 2, 2, Duration::ZERO);
        let w = buffer.writer();
        let held = w
            .write_held(vec![rec(1), rec(2)], Duration::ZERO)
            .await
            .unwrap();
        let batch = buffer.reader().read().await.unwrap();
        assert_eq!(buffer.used(), 2);
        // A stateful processor keeps an event: the acknowledgement waits, the room does not.
        batch.room.expect("a memory buffer has room").acknowledge();
        assert_eq!(buffer.used(), 0);
        w.write(vec![rec(3), rec(4)], Duration::ZERO).await.unwrap();
        let mut held = Box::pin(held.acknowledged());
        assert!(
            tokio::time::timeout(Duration::from_millis(20), &mut held)
                .await
                .is_err(),
            "the writer waits for the acknowledgement, not the room"
        );
        batch.ack.acknowledge();
        assert_eq!(held.await, Ok(()));
        assert_eq!(buffer.used(), 2, "the room was given back once, not twice");
    }

    #[tokio::test]
    async fn records_of_events_take_room_and_fill_batches_per_event() {
        let carrying = |n: usize| Record {
            events: (0..n)
                .map(|i| {
                    sluice_event::Event::new(
                        serde_json::json!({"i": i}),
                        sluice_event::Metadata::new("LOG", 0),
                    )
                })
                .collect(),
            ..Record::default()
        };
        let buffer = MemoryBuffer::new("test", 10, 4, Duration::ZERO);
        let w = buffer.writer();
        assert_eq!(w.events_per_record(), Some(4), "the batch size");
        w.write(vec![carrying(3), carrying(3), rec(1)], Duration::ZERO)
            .await
            .unwrap();
        assert_eq!(
            buffer.used(),
            7,
            "one per event, one for the record of bytes"
        );
        assert_eq!(
            w.write(vec![carrying(4)], Duration::from_millis(10)).await,
            Err(WriteError::Full(Duration::from_millis(10)))
        );
        assert!(matches!(
            w.write(vec![carrying(11)], Duration::ZERO).await,
            Err(WriteError::TooLarge { records: 11, .. })
        ));
        let mut r = buffer.reader();
        let first = r.read().await.unwrap();
        assert_eq!(
            first.records.len(),
            1,
            "3 + 3 events are more than a batch of 4"
        );
        let second = r.read().await.unwrap();
        assert_eq!(second.records.len(), 2, "3 events and a record: 4");
        first.ack.acknowledge();
        assert_eq!(buffer.used(), 4);
        second.ack.acknowledge();
        assert_eq!(buffer.used(), 0);
    }

    #[tokio::test]
    async fn close_drains_then_ends() {
        let buffer = MemoryBuffer::new("test", 10, 4, Duration::from_secs(60));
        buffer
            .writer()
            .write((0..6).map(rec).collect(), Duration::ZERO)
            .await
            .unwrap();
        buffer.close();
        assert!(
            buffer
                .writer()
                .write(vec![rec(9)], Duration::ZERO)
                .await
                .is_err()
        );
        let mut r = buffer.reader();
        assert_eq!(r.read().await.unwrap().records.len(), 4);
        assert_eq!(r.read().await.unwrap().records.len(), 2);
        assert!(r.read().await.is_none());
    }

    #[tokio::test]
    async fn a_partial_batch_waits_for_the_delay() {
        let buffer = MemoryBuffer::new("test", 10, 4, Duration::from_millis(30));
        buffer
            .writer()
            .write(vec![rec(1)], Duration::ZERO)
            .await
            .unwrap();
        let started = std::time::Instant::now();
        let batch = buffer.reader().read().await.unwrap();
        assert_eq!(batch.records.len(), 1);
        assert!(started.elapsed() >= Duration::from_millis(25));
    }
}
