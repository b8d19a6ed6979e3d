//! The buffer between sources and the read side.
//!
//! Sources write raw records (the bytes exactly as received) through a [`BufferWriter`]; the
//! pipeline's workers read them back in batches through [`BufferReader`]s, deserialize them, send
//! the events to the sinks, and only then acknowledge the batch. Acknowledgement is what frees
//! room in the in-memory buffer, and what commits offsets in the Kafka buffer (`sluice-kafka`).
//!
//! A [`Buffer`] owns its whole lifecycle, so the pipeline that runs it names no concrete
//! buffer: write ([`BufferWriter`]), read ([`BufferReader`]), acknowledge ([`Acknowledgement`]),
//! drain ([`Buffer::close`], then readers empty it), shut down ([`Buffer::join`]), report
//! ([`Buffer::log_summary`], [`Buffer::update_gauges`]) and say how long a drain may take
//! ([`Buffer::drain_timeout`]).
//!
//! # Layout
//! - this file: [`Record`], the traits, [`Batch`], [`Acknowledgement`] and its [`Share`]s,
//!   [`WriteError`],
//!   [`Count`].
//! - [`memory`]: `bounded_blocking`, the in-memory implementation.
//! - [`tiered`]: a buffer over other buffers (its tiers) whose policy (a Wasm component)
//!   places records, refuses or drops writes, and picks the tier a worker reads next.

use std::time::Duration;

pub mod memory;
pub mod tiered;

pub use tiered::TierState;

/// One raw record as a source received it, or the events an upstream pipeline of the same
/// process handed over already parsed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Record {
    /// The bytes exactly as received (empty when the record carries `events`).
    pub payload: Vec<u8>,
    /// Events a `pipeline` sink hands, parsed and with their metadata, to a downstream
    /// pipeline whose buffer holds them as they are ([`BufferWriter::events_per_record`]: the
    /// in-memory one), so nothing between two pipelines of one process serializes them. Empty
    /// for records of bytes; only such a buffer is ever given a record with events.
    pub events: Vec<sluice_event::Event>,
    /// The key, when the source has one.
    pub key: Option<Vec<u8>>,
    /// When the source received it, in ms since the Unix epoch.
    pub received_at_ms: u64,
    /// Where it sits in a durable buffer (Kafka), once read back from it: what lets a sink
    /// tell a record it already holds from a new one. `None` for a memory buffer's records.
    pub position: Option<Position>,
    /// Where it came from, for error reports (`http:/log/ingest`).
    pub origin: String,
    /// What the source was told the bytes are (http: the `Content-Type` header), when known.
    pub content_type: Option<String>,
    /// Why it was dead-lettered before, oldest first, when it was replayed from the
    /// dead-letter file (`sluice dlq replay`): dead-lettered again, its new entry keeps these.
    pub dead_lettered: Vec<String>,
    /// The request headers a buffer policy asked for ([`BufferWriter::wanted_headers`]), as
    /// sent. Read by the policy when the record is written; not stored with the record.
    pub headers: Vec<(String, String)>,
}

/// Where a record sits in a Kafka buffer: its topic, partition and offset.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Position {
    pub topic: std::sync::Arc<str>,
    pub partition: i32,
    pub offset: i64,
}

/// Why a write was refused. Nothing refused was accepted: the source tells its client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    #[error("the buffer is full (no room within {0:?})")]
    Full(Duration),
    #[error("{records} records are more than the buffer can ever hold ({capacity})")]
    TooLarge { records: usize, capacity: usize },
    #[error("a record of {size} bytes is larger than the buffer takes ({max} bytes)")]
    RecordTooLarge { size: usize, max: usize },
    #[error("the buffer is shutting down")]
    Closed,
    #[error("the buffer is unavailable: {0}")]
    Unavailable(String),
    /// The buffer's policy holds this writer back for now (a rate or quota): HTTP 429.
    #[error("{reason} (retry after {retry_after:?})")]
    Throttled {
        retry_after: Duration,
        reason: String,
    },
}

/// A count that is both readable in-process (shutdown summaries, tests) and exported as a
/// metric (`metrics` facade; the binary installs the Prometheus exporter).
pub struct Count {
    value: std::sync::atomic::AtomicU64,
    metric: metrics::Counter,
}

impl Count {
    /// The counter `name{pipeline}`.
    pub fn new(name: &str, pipeline: &str) -> Self {
        Self {
            value: std::sync::atomic::AtomicU64::new(0),
            metric: metrics::counter!(name.to_owned(), "pipeline" => pipeline.to_owned()),
        }
    }

    pub fn add(&self, n: u64) {
        self.value
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        self.metric.increment(n);
    }

    /// The count so far.
    pub fn get(&self) -> u64 {
        self.value.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl std::fmt::Debug for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.get())
    }
}

/// The write half, shared by a pipeline's sources.
#[async_trait::async_trait]
pub trait BufferWriter: Send + Sync {
    /// Resolves once the buffer holds every record of `records` (all or none), or fails
    /// after waiting at most `timeout` for room.
    async fn write(&self, records: Vec<Record>, timeout: Duration) -> Result<(), WriteError>;

    /// [`write`](Self::write), and what resolves once the records are as safe as the writer
    /// needs: a durable buffer's (Kafka) at once, as it holds them once written; the
    /// in-memory buffer's once the batches that carry them were acknowledged by the pipeline
    /// that reads it (its sinks took the events). A `pipeline` sink waits on it, so the
    /// upstream batch is acknowledged only then.
    async fn write_held(
        &self,
        records: Vec<Record>,
        timeout: Duration,
    ) -> Result<Held, WriteError> {
        self.write(records, timeout).await.map(|()| Held::now())
    }

    /// Whether the buffer holds records of parsed events (`Record::events`), and then how many
    /// events one such record should carry at most (its batch size). Such a record takes room
    /// for each of its events. `None` (the default): records of bytes only.
    fn events_per_record(&self) -> Option<usize> {
        None
    }

    /// The largest record payload the buffer takes, if it has a limit. Sources split larger
    /// inputs on record boundaries they know, or refuse them.
    fn max_record_size(&self) -> Option<usize> {
        None
    }

    /// The partition a record keyed `key` goes to, if the buffer spreads keyed records over
    /// partitions by their key (Kafka, with its default partitioner). A source that keeps
    /// related records together by key (the OTLP trace sources: the spans of a trace) can then
    /// put the records of several keys that share a partition into one. `None` (the default):
    /// the buffer has no such partitions, or sluice cannot tell which one a key goes to.
    fn partition_of(&self, _key: &[u8]) -> Option<u32> {
        None
    }

    /// The request headers the buffer wants kept with each record (lowercase names), for its
    /// policy; none by default.
    fn wanted_headers(&self) -> Vec<String> {
        Vec::new()
    }
}

/// What [`BufferWriter::write_held`] gives: resolves once the records it wrote are acknowledged.
#[derive(Debug)]
pub struct Held(Option<tokio::sync::oneshot::Receiver<()>>);

/// The records of a [`Held`] were lost: a batch that carried them was dropped without being
/// acknowledged (a worker stopped at shutdown). Write them again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the buffer dropped the records before its pipeline acknowledged them")]
pub struct Lost;

impl Held {
    /// Already acknowledged: a durable buffer's.
    pub fn now() -> Self {
        Self(None)
    }

    /// Acknowledged when `sender` sends; lost when it is dropped first.
    pub fn on(receiver: tokio::sync::oneshot::Receiver<()>) -> Self {
        Self(Some(receiver))
    }

    /// Waits until the records are acknowledged.
    pub async fn acknowledged(self) -> Result<(), Lost> {
        match self.0 {
            None => Ok(()),
            Some(receiver) => receiver.await.map_err(|_| Lost),
        }
    }
}

/// The read half: one per worker.
#[async_trait::async_trait]
pub trait BufferReader: Send {
    /// The next batch; `None` once the buffer is closed and empty.
    async fn read(&mut self) -> Option<Batch>;
}

/// A buffer: hands out writers and readers, drains, shuts down and reports on itself.
///
/// The shutdown protocol, as the pipeline runs it: [`close`](Buffer::close), let the readers
/// return `None` (within [`drain_timeout`](Buffer::drain_timeout)), then
/// [`join`](Buffer::join), then [`log_summary`](Buffer::log_summary).
#[async_trait::async_trait]
pub trait Buffer: Send + Sync {
    /// A writer for a source.
    fn writer(&self) -> std::sync::Arc<dyn BufferWriter>;
    /// A reader for a worker.
    fn reader(&self) -> Box<dyn BufferReader>;
    /// Stops accepting writes; readers drain what is held, then get `None`.
    fn close(&self);
    /// Waits for the buffer's own work to end after the readers are done (for Kafka: the last
    /// commit, leaving the group, flushing the producer). Nothing to wait for by default.
    async fn join(&self) {}
    /// How long shutdown may wait for this buffer's batches to be acknowledged, if the buffer
    /// has its own setting (`None`: the run's default).
    fn drain_timeout(&self) -> Option<Duration> {
        None
    }
    /// Sets the buffer's gauges; the pipeline calls it about once a second. Buffers that keep
    /// their gauges current themselves leave it empty.
    fn update_gauges(&self) {}
    /// Logs what the buffer saw, once, at shutdown.
    fn log_summary(&self);
    /// What a buffer policy sees of this buffer when it is one tier of a tiered buffer.
    fn tier_state(&self) -> TierState;
    /// Takes up to `max` unread records now, without waiting, for a tiered buffer's move to
    /// another tier (which acknowledges the batch here once the other tier holds them). `None`
    /// when there are none, or when this buffer cannot hand records over: a Kafka topic's
    /// records are its consumer group's to read.
    fn take_now(&self, _max: usize) -> Option<Batch> {
        None
    }
}

/// Records read together, with the handle that acknowledges them.
pub struct Batch {
    pub records: Vec<Record>,
    /// Records the buffer read but could not open (an unknown envelope version, a record that
    /// fails to decrypt). They go to the dead-letter file with the reason, never
    /// to the deserializer, and are acknowledged with the batch so they never stall it.
    pub unreadable: Vec<Unreadable>,
    pub ack: Acknowledgement,
    /// Frees the batch's room in a buffer that counts room (the in-memory one) before the
    /// acknowledgement does: the worker calls it once the sinks took the batch's events. What
    /// a stateful processor keeps, or a sink stages, is bounded on its own
    /// (`max_held_events`, the sinks' thresholds); holding the buffer's room for it too would
    /// let a processor that keeps one event of each batch (a span whose root never comes) fill
    /// the buffer and stall the pipeline until its flush. `None`: no room to free (Kafka).
    pub room: Option<Acknowledgement>,
    /// Acknowledges single records ahead of the whole batch (Kafka), so a sink can let a
    /// commit land between two of a batch's records (`docs/design/exactly-once.md`).
    /// `None`: the batch is acknowledged whole only.
    pub parts: Option<std::sync::Arc<dyn RecordAcks>>,
    /// What the batch read of each partition (Kafka; empty otherwise): how the batches of one
    /// partition follow each other.
    pub reads: Vec<Read>,
}

/// Acknowledges some of a batch's records before the batch: [`Batch::parts`].
pub trait RecordAcks: Send + Sync {
    /// The records at these indices of [`Batch::records`] are held by every sink. Each index
    /// is given at most once; the batch's [`Acknowledgement`] covers the rest.
    fn acknowledge(&self, records: &[usize]);

    /// The offset committed for `partition` while it is still assigned as it was when the
    /// batch was read (`None` once it was revoked, or if the batch read nothing of it).
    fn committed(&self, partition: i32) -> Option<i64>;
}

/// One partition's share of a batch: offsets `start..end` of one assignment of the partition.
/// The reads of one assignment follow each other without gaps (each `start` is the previous
/// `end`), the first one `begins` where the assignment began reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub topic: std::sync::Arc<str>,
    pub partition: i32,
    /// The assignment (process-wide, increasing): a partition read again after it was
    /// revoked and assigned anew has a larger one.
    pub epoch: u64,
    pub start: i64,
    pub end: i64,
    /// The first read of its assignment.
    pub begins: bool,
}

/// A record the buffer could not open, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    pub record: Record,
    pub reason: String,
}

/// Call [`Acknowledgement::acknowledge`] once every event from the batch is accepted by the
/// sinks (dead-lettered records count as handled). Dropping it without acknowledging keeps the
/// records unacknowledged (for the Kafka buffer: uncommitted).
pub struct Acknowledgement(Option<Box<dyn FnOnce() + Send>>);

impl Acknowledgement {
    pub fn new(f: impl FnOnce() + Send + 'static) -> Self {
        Self(Some(Box::new(f)))
    }

    pub fn acknowledge(mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }

    /// This acknowledgement as the first of counted [`Share`]s.
    pub fn shared(self) -> Share {
        Share {
            tally: std::sync::Arc::new(Tally {
                left: std::sync::atomic::AtomicUsize::new(1),
                abandoned: std::sync::atomic::AtomicBool::new(false),
                ack: std::sync::Mutex::new(Some(self)),
            }),
            released: false,
        }
    }
}

/// A counted share of an [`Acknowledgement`]: it is acknowledged once every share was
/// released. A share dropped without [`release`](Share::release) (its events were lost on the
/// way) means it never is: the Kafka buffer reads those records again after a restart.
///
/// A batch's acknowledgement becomes shares when a stateful processor keeps some of its events
/// past the batch (waiting for a trace's root span, a window, a group): each event it keeps
/// holds a share until it leaves the processor and its sinks took it.
pub struct Share {
    tally: std::sync::Arc<Tally>,
    released: bool,
}

struct Tally {
    left: std::sync::atomic::AtomicUsize,
    abandoned: std::sync::atomic::AtomicBool,
    ack: std::sync::Mutex<Option<Acknowledgement>>,
}

impl Share {
    /// Another share of the same acknowledgement.
    pub fn share(&self) -> Share {
        self.tally
            .left
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Share {
            tally: self.tally.clone(),
            released: false,
        }
    }

    /// What this share stands for is done: the last share released acknowledges.
    pub fn release(mut self) {
        self.released = true;
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering;
        if !self.released {
            self.tally.abandoned.store(true, Ordering::SeqCst);
        }
        if self.tally.left.fetch_sub(1, Ordering::SeqCst) == 1 {
            let ack = self
                .tally
                .ack
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(ack) = ack
                && !self.tally.abandoned.load(Ordering::SeqCst)
            {
                ack.acknowledge();
            }
        }
    }
}

impl std::fmt::Debug for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Share")
            .field("left", &self.tally.left)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod share_tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::Acknowledgement;

    fn counted() -> (Arc<AtomicUsize>, Acknowledgement) {
        let acked = Arc::new(AtomicUsize::new(0));
        let a = acked.clone();
        (
            acked,
            Acknowledgement::new(move || {
                a.fetch_add(1, Ordering::SeqCst);
            }),
        )
    }

    #[test]
    fn acknowledged_once_when_the_last_share_is_released() {
        let (acked, ack) = counted();
        let first = ack.shared();
        let held = first.share();
        first.release();
        assert_eq!(acked.load(Ordering::SeqCst), 0, "an event is still held");
        held.release();
        assert_eq!(acked.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_share_dropped_unreleased_means_never_acknowledged() {
        let (acked, ack) = counted();
        let first = ack.shared();
        drop(first.share());
        first.release();
        assert_eq!(acked.load(Ordering::SeqCst), 0);
    }
}
