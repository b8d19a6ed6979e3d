//! The buffer's history, read again (`sluice buffer replay`) and described (`sluice buffer
//! status`), beside the live consumer group and without moving its committed offsets: a
//! consumer of its own that assigns partitions itself, never joins the group and never commits.
//!
//! The window's offsets come from the broker's offsets for times (the record timestamp sluice
//! writes is the receive time). A broker without that lookup gets the same
//! answer from the receive time in each record: a binary search per partition, one record read
//! per step.
#![expect(
    clippy::result_large_err,
    reason = "once per command, with the crate's error, which carries librdkafka's for the message"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::message::Message as _;
use rdkafka::{Offset, TopicPartitionList};
use sluice_buffer::{Acknowledgement, Batch, BufferReader};
use tokio::sync::mpsc;

use crate::{KafkaBufferConfig, KafkaBufferError, envelope};

/// How long a metadata or offsets request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one record read of the search may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// One partition of the buffer topic, as `sluice buffer status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PartitionStatus {
    pub partition: i32,
    /// The live group's committed offset (`None`: nothing committed).
    pub committed: Option<i64>,
    /// The first offset the topic still holds.
    pub low: i64,
    /// The offset the next record will take.
    pub high: i64,
    /// Records not yet committed by the group (from `low` when nothing is).
    pub lag: i64,
    /// The receive time of the oldest record held, in ms since the Unix epoch.
    pub oldest_ms: Option<u64>,
}

/// Which records to read again: those received from `from_ms` (inclusive) to `to_ms`
/// (exclusive; `None`: up to the end as it is when the read starts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from_ms: u64,
    pub to_ms: Option<u64>,
}

/// A consumer outside the group: `group.id` another one's (no commit is ever made with it).
fn outsider(config: &KafkaBufferConfig) -> Result<BaseConsumer, KafkaBufferError> {
    let mut client = config.client(&config.consumer_properties);
    client
        .set(
            "group.id",
            format!("{}-sluice-rewind-{}", config.group_id, std::process::id()),
        )
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("enable.partition.eof", "false")
        .set("auto.offset.reset", "earliest");
    client.create().map_err(|error| KafkaBufferError::Client {
        role: "consumer",
        servers: config.servers(),
        error,
    })
}

fn failed(config: &KafkaBufferConfig, what: &str, e: impl std::fmt::Display) -> KafkaBufferError {
    KafkaBufferError::History {
        topic: config.topic.clone(),
        servers: config.servers(),
        reason: format!("{what}: {e}"),
    }
}

/// The topic's partitions.
fn partitions(
    consumer: &BaseConsumer,
    config: &KafkaBufferConfig,
) -> Result<Vec<i32>, KafkaBufferError> {
    let metadata = consumer
        .fetch_metadata(Some(&config.topic), REQUEST_TIMEOUT)
        .map_err(|e| failed(config, "reading the topic's metadata", e))?;
    let mut partitions: Vec<i32> = metadata
        .topics()
        .iter()
        .flat_map(|t| t.partitions().iter().map(|p| p.id()))
        .collect();
    partitions.sort_unstable();
    if partitions.is_empty() {
        return Err(failed(
            config,
            "the topic",
            "has no partitions (does it exist?)",
        ));
    }
    Ok(partitions)
}

/// Each partition's committed offset (of the live group), watermarks, lag and oldest record.
/// Blocking.
pub fn status(config: &KafkaBufferConfig) -> Result<Vec<PartitionStatus>, KafkaBufferError> {
    let consumer = outsider(config)?;
    let partitions = partitions(&consumer, config)?;
    // The live group's offsets: a consumer with its group id that never joins it.
    let mut group = config.client(&config.consumer_properties);
    group
        .set("group.id", &config.group_id)
        .set("enable.auto.commit", "false");
    let group: BaseConsumer = group.create().map_err(|error| KafkaBufferError::Client {
        role: "consumer",
        servers: config.servers(),
        error,
    })?;
    let mut list = TopicPartitionList::new();
    for &p in &partitions {
        list.add_partition(&config.topic, p);
    }
    let committed = group
        .committed_offsets(list, REQUEST_TIMEOUT)
        .map_err(|e| failed(config, "reading the group's committed offsets", e))?;
    let mut out = Vec::new();
    for p in partitions {
        let (low, high) = consumer
            .fetch_watermarks(&config.topic, p, REQUEST_TIMEOUT)
            .map_err(|e| failed(config, "reading the offsets", e))?;
        let committed = committed
            .find_partition(&config.topic, p)
            .and_then(|e| e.offset().to_raw())
            .filter(|&o| o >= 0);
        let oldest_ms = if high > low {
            received_at(&consumer, config, p, low)?.map(|(_, t)| t)
        } else {
            None
        };
        out.push(PartitionStatus {
            partition: p,
            committed,
            low,
            high,
            lag: high - committed.unwrap_or(low).max(low),
            oldest_ms,
        });
    }
    Ok(out)
}

/// The offset and receive time of the first record at or after `offset` in `partition`
/// (`None`: none within the probe's time).
fn received_at(
    consumer: &BaseConsumer,
    config: &KafkaBufferConfig,
    partition: i32,
    offset: i64,
) -> Result<Option<(i64, u64)>, KafkaBufferError> {
    let mut list = TopicPartitionList::new();
    list.add_partition_offset(&config.topic, partition, Offset::Offset(offset))
        .map_err(|e| failed(config, "assigning", e))?;
    consumer
        .assign(&list)
        .map_err(|e| failed(config, "assigning", e))?;
    let started = std::time::Instant::now();
    while started.elapsed() < PROBE_TIMEOUT {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) if m.partition() == partition && m.offset() >= offset => {
                let meta = envelope::Meta::read(&m);
                let record = envelope::record(&m, &meta, &Arc::from(config.topic.as_str()));
                return Ok(Some((m.offset(), record.received_at_ms)));
            }
            Some(Err(e)) => return Err(failed(config, "reading a record", e)),
            _ => {}
        }
    }
    Ok(None)
}

/// The first offset in `low..high` of `partition` whose record was received at `at_ms` or
/// later (`high` if none): the broker's offsets for times, else a binary search on the
/// receive times (which sluice writes in order within a partition).
fn offset_for_time(
    consumer: &BaseConsumer,
    config: &KafkaBufferConfig,
    partition: i32,
    (low, high): (i64, i64),
    at_ms: u64,
) -> Result<i64, KafkaBufferError> {
    let mut list = TopicPartitionList::new();
    let _ = list.add_partition_offset(
        &config.topic,
        partition,
        Offset::Offset(i64::try_from(at_ms).unwrap_or(i64::MAX)),
    );
    if let Ok(found) = consumer.offsets_for_times(list, REQUEST_TIMEOUT)
        && let Some(element) = found.find_partition(&config.topic, partition)
        && element.error().is_ok()
    {
        match element.offset() {
            Offset::Offset(o) => return Ok(o.clamp(low, high)),
            Offset::End => return Ok(high),
            _ => {}
        }
    }
    tracing::debug!(
        partition,
        "the broker has no offsets for times; searching the receive times"
    );
    search((low, high), at_ms, |offset| {
        received_at(consumer, config, partition, offset)
    })
}

/// The first offset in `low..high` whose record was received at `at_ms` or later (`high` if
/// none), by a binary search; `probe(offset)` reads the first record at or after `offset`: its
/// offset and receive time (offsets may have gaps: compacted, or transaction markers).
fn search<E>(
    (low, high): (i64, i64),
    at_ms: u64,
    mut probe: impl FnMut(i64) -> Result<Option<(i64, u64)>, E>,
) -> Result<i64, E> {
    // [lo, hi): the answer is in it.
    let (mut lo, mut hi) = (low, high);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match probe(mid)? {
            Some((found, t)) if found < hi && t < at_ms => lo = found + 1,
            Some((found, _)) if found < hi => hi = found.max(lo),
            // Nothing readable from `mid` up to `hi`.
            _ => hi = mid,
        }
    }
    Ok(lo)
}

/// What a rewind has read, for its progress bar.
#[derive(Debug, Default)]
pub struct Progress {
    /// Records to read in all.
    pub total: AtomicU64,
    /// Records read so far.
    pub read: AtomicU64,
}

/// Reads a window of the topic again, as batches for the pipeline's workers; the batches'
/// acknowledgements commit nothing. Its records carry no position: the sinks take them as new
/// (a file sink's record of offsets would skip them otherwise).
pub struct Rewind {
    batches: Arc<tokio::sync::Mutex<mpsc::Receiver<Batch>>>,
    progress: Arc<Progress>,
    stop: Arc<AtomicBool>,
}

impl Rewind {
    /// Finds the window's offsets in each partition and starts reading (on a thread). With
    /// `encryption`, sealed records are opened as the buffer's consumers open them.
    pub async fn start(
        config: KafkaBufferConfig,
        window: Window,
    ) -> Result<Self, KafkaBufferError> {
        let opener = config
            .encryption
            .as_ref()
            .map(|e| sluice_crypt::Opener::new(e.keys.clone(), tokio::runtime::Handle::current()));
        let (tx, rx) = mpsc::channel(2);
        let progress = Arc::new(Progress::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready) = tokio::sync::oneshot::channel();
        let (p, s) = (progress.clone(), stop.clone());
        let (topic, servers) = (config.topic.clone(), config.servers());
        std::thread::Builder::new()
            .name("kafka-rewind".to_owned())
            .spawn(move || {
                let ranges = match ranges(&config, window) {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let total: i64 = ranges.iter().map(|(_, start, end)| end - start).sum();
                p.total.store(total.max(0) as u64, Ordering::Relaxed);
                let _ = ready_tx.send(Ok(()));
                read(&config, &ranges, opener.as_ref(), &tx, &p, &s);
            })
            .expect("spawning the rewind thread");
        ready.await.map_err(|_| KafkaBufferError::History {
            topic,
            servers,
            reason: "the rewind thread stopped".to_owned(),
        })??;
        Ok(Self {
            batches: Arc::new(tokio::sync::Mutex::new(rx)),
            progress,
            stop,
        })
    }

    pub fn progress(&self) -> Arc<Progress> {
        self.progress.clone()
    }

    /// A reader for one worker; they share the batches.
    pub fn reader(&self) -> Box<dyn BufferReader> {
        Box::new(RewindReader {
            batches: self.batches.clone(),
        })
    }
}

impl Drop for Rewind {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Each partition's offsets `start..end` in the window.
fn ranges(
    config: &KafkaBufferConfig,
    window: Window,
) -> Result<Vec<(i32, i64, i64)>, KafkaBufferError> {
    let consumer = outsider(config)?;
    let mut out = Vec::new();
    for p in partitions(&consumer, config)? {
        let (low, high) = consumer
            .fetch_watermarks(&config.topic, p, REQUEST_TIMEOUT)
            .map_err(|e| failed(config, "reading the offsets", e))?;
        let start = offset_for_time(&consumer, config, p, (low, high), window.from_ms)?;
        let end = match window.to_ms {
            Some(to) => offset_for_time(&consumer, config, p, (start, high), to)?,
            None => high,
        };
        tracing::debug!(partition = p, start, end, "rewind window");
        if end > start {
            out.push((p, start, end));
        }
    }
    Ok(out)
}

/// Reads `ranges` and sends them as batches of `max_poll_records`.
fn read(
    config: &KafkaBufferConfig,
    ranges: &[(i32, i64, i64)],
    opener: Option<&sluice_crypt::Opener>,
    tx: &mpsc::Sender<Batch>,
    progress: &Progress,
    stop: &AtomicBool,
) {
    if ranges.is_empty() {
        return;
    }
    let consumer = match outsider(config) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "the rewind cannot read");
            return;
        }
    };
    let mut list = TopicPartitionList::new();
    for &(p, start, _) in ranges {
        let _ = list.add_partition_offset(&config.topic, p, Offset::Offset(start));
    }
    if let Err(e) = consumer.assign(&list) {
        tracing::error!(error = %e, "the rewind cannot assign its partitions");
        return;
    }
    let topic: Arc<str> = Arc::from(config.topic.as_str());
    let mut open: Vec<(i32, i64)> = ranges.iter().map(|&(p, _, end)| (p, end)).collect();
    let mut records = Vec::new();
    let mut unreadable = Vec::new();
    let send = |records: &mut Vec<_>, unreadable: &mut Vec<_>| {
        let batch = Batch {
            records: std::mem::take(records),
            unreadable: std::mem::take(unreadable),
            ack: Acknowledgement::new(|| {}),
            room: None,
            parts: None,
            reads: Vec::new(),
        };
        tx.blocking_send(batch).is_ok()
    };
    let mut last_read = std::time::Instant::now();
    while !open.is_empty() && !stop.load(Ordering::SeqCst) {
        if last_read.elapsed() > PROBE_TIMEOUT {
            // The last offsets of a window may hold no record (transaction markers, compacted
            // away): nothing more comes.
            tracing::warn!(partitions = ?open, "no more records came from these partitions; the rewind ends there");
            break;
        }
        let Some(polled) = consumer.poll(Duration::from_millis(100)) else {
            if (!records.is_empty() || !unreadable.is_empty())
                && !send(&mut records, &mut unreadable)
            {
                return;
            }
            continue;
        };
        let m = match polled {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "the rewind's read failed; going on");
                continue;
            }
        };
        last_read = std::time::Instant::now();
        let Some(i) = open.iter().position(|&(p, _)| p == m.partition()) else {
            continue;
        };
        if m.offset() >= open[i].1 {
            open.swap_remove(i);
            continue;
        }
        if m.offset() + 1 >= open[i].1 {
            open.swap_remove(i);
        }
        progress.read.fetch_add(1, Ordering::Relaxed);
        let meta = envelope::Meta::read(&m);
        let mut record = envelope::record(&m, &meta, &topic);
        record.position = None;
        match envelope::open(opener, &meta, record) {
            Ok(record) => records.push(record),
            Err((u, _)) => unreadable.push(u),
        }
        if records.len() + unreadable.len() >= config.batch_size
            && !send(&mut records, &mut unreadable)
        {
            return;
        }
    }
    if !records.is_empty() || !unreadable.is_empty() {
        send(&mut records, &mut unreadable);
    }
}

struct RewindReader {
    batches: Arc<tokio::sync::Mutex<mpsc::Receiver<Batch>>>,
}

#[async_trait::async_trait]
impl BufferReader for RewindReader {
    async fn read(&mut self) -> Option<Batch> {
        self.batches.lock().await.recv().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records at these offsets (gaps between), received at these times.
    fn probe(records: &[(i64, u64)]) -> impl FnMut(i64) -> Result<Option<(i64, u64)>, ()> + '_ {
        |offset| Ok(records.iter().copied().find(|&(o, _)| o >= offset))
    }

    #[test]
    fn the_search_finds_the_first_record_received_at_or_after_the_time() {
        let records: Vec<(i64, u64)> = (0..100).map(|o| (o * 3, 1000 + o as u64 * 10)).collect();
        let all = (0, 300);
        // Where a read from the offset found starts: the first record at or after it.
        let first = |at_ms, within| {
            let start = search(within, at_ms, probe(&records)).unwrap();
            records.iter().find(|&&(o, _)| o >= start).map(|&(o, _)| o)
        };
        assert_eq!(first(0, all), Some(0));
        assert_eq!(first(1000, all), Some(0));
        assert_eq!(first(1001, all), Some(3));
        assert_eq!(first(1500, all), Some(150));
        assert_eq!(first(1495, all), Some(150));
        assert_eq!(first(1490, all), Some(147));
        assert_eq!(first(9999, all), None, "none: past the last record");
        assert_eq!(first(1000, (150, 300)), Some(150), "within the bounds");
        let mut probes = 0;
        let counted = |o| {
            probes += 1;
            probe(&records)(o)
        };
        search(all, 1777, counted).unwrap();
        assert!(probes <= 10, "{probes} probes for 300 offsets");
    }
}
