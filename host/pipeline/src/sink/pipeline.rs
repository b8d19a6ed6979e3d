//! The `pipeline` sink: writes the events it takes into another pipeline's buffer, as that
//! pipeline's source would. A request is taken once the downstream pipeline holds it durably:
//! a kafka buffer once the brokers acknowledged the records; an in-memory buffer once the
//! downstream batches carrying them were acknowledged (its sinks took the events), so the
//! acknowledgement travels back along the chain. Only then is the upstream batch acknowledged.
//! Either way the upstream worker hands a batch over and reads on while the acknowledgement
//! is awaited, and a full downstream buffer slows the upstream pipeline (a wait for room, or
//! into Kafka a retry after a backoff): it never drops, and nothing between them queues
//! without bound.
//!
//! Into an in-memory downstream buffer (`Handoff`) the events cross as they are: parsed,
//! with their metadata, moved (not copied) when nothing else takes them, in records of up to
//! the downstream batch size that take room per event, as Data Prepper's pipeline connector
//! hands its records over. Nothing between the two pipelines serializes.
//!
//! Into a buffer of bytes (Kafka, a tiered buffer) they cross as NDJSON records (`ToPipeline`),
//! as many per record as the downstream buffer takes in one record, so a chain costs one
//! record per batch rather than one per event; the downstream pipeline reads them natively
//! (`worker::outcome::split_connected`), not with a deserializer. Each line is the event with
//! its metadata, `{"data": {...}, "metadata": {...}}` (`wrap`, written by the router for a
//! `pipeline` sink), which the downstream pipeline reads back into the event (`unwrap`): its
//! type, time received, tags and attributes cross the connection.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Map, Value};
use sluice_buffer::{BufferWriter, Record, WriteError};
use sluice_config::sink::pipeline::PipelineSink;
use sluice_event::{Event, Metadata};

use super::{Output, Provenance, SendError, SinkBuild};

/// The most bytes of events one record carries when the downstream buffer sets no limit.
const RECORD_BYTES: usize = 1024 * 1024;

/// The most bytes of events a request to the downstream pipeline holds.
const STAGED_BYTES: u64 = 8 * 1024 * 1024;

/// How long one write waits for room in the downstream buffer before the sink backs off and
/// tries again.
const WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// The buffers of the pipelines a `pipeline` sink may send to, by pipeline name.
#[derive(Default)]
pub struct Connections(HashMap<String, Arc<dyn BufferWriter>>);

impl Connections {
    /// Pipeline `name` is built: its buffer takes what its upstream pipelines send.
    pub fn insert(&mut self, name: &str, writer: Arc<dyn BufferWriter>) {
        self.0.insert(name.to_owned(), writer);
    }
}

/// A `pipeline` sink into a pipeline of this process whose buffer holds parsed events (the
/// in-memory one): hands the events over as they are. A write waits for room (the downstream
/// buffer's backpressure reaches the upstream worker); the upstream batch's receipt is
/// completed once the downstream batches carrying its events were acknowledged, by a task
/// per upstream batch, so the upstream worker reads on meanwhile (the downstream buffer's room bounds
/// how many wait). Events the downstream pipeline drops unacknowledged (its shutdown gave up
/// on them) leave the upstream batch unacknowledged: read again after a restart.
pub(crate) struct Handoff {
    /// `pipeline:<downstream>`.
    name: String,
    /// `pipeline:<upstream>`: the records' origin downstream.
    origin: String,
    per_record: usize,
    writer: Arc<dyn BufferWriter>,
    metrics: Arc<super::deliver::SinkMetrics>,
    /// The writes waiting for their acknowledgement.
    waiting: std::sync::Mutex<tokio::task::JoinSet<()>>,
}

impl Handoff {
    /// The handoff for `config` (the sink `name`), if its downstream pipeline's buffer holds
    /// events.
    pub(crate) fn new(name: String, config: &PipelineSink, cx: &SinkBuild<'_>) -> Option<Self> {
        let writer = cx.connections.0.get(&config.name)?;
        let per_record = writer.events_per_record()?;
        Some(Self {
            metrics: Arc::new(super::deliver::SinkMetrics::new(cx.pipeline, &name)),
            name,
            origin: format!("pipeline:{}", cx.pipeline),
            per_record,
            writer: writer.clone(),
            waiting: std::sync::Mutex::default(),
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Writes `events` into the downstream buffer once it has room; `receipt` completes when
    /// the downstream pipeline acknowledged all of them.
    pub(crate) async fn take(&self, mut events: Vec<Event>, receipt: super::Receipt) {
        if events.is_empty() {
            receipt.complete();
            return;
        }
        let (n, now) = (events.len() as u64, crate::source::now_ms());
        // One write per record: each waits for its own room, so a batch larger than the
        // downstream buffer still goes, record by record. No timeout: a full downstream buffer
        // holds the upstream worker here (the chain's backpressure) until its workers make
        // room. Shutdown drains the upstream level before it closes this buffer, and bounds
        // the wait with its deadline.
        let mut held = Vec::with_capacity(events.len().div_ceil(self.per_record));
        while !events.is_empty() {
            let rest = events.split_off(events.len().min(self.per_record));
            let record = Record {
                events: std::mem::replace(&mut events, rest),
                received_at_ms: now,
                origin: self.origin.clone(),
                ..Record::default()
            };
            match self.writer.write_held(vec![record], Duration::MAX).await {
                Ok(h) => held.push(h),
                Err(error) => {
                    tracing::error!(sink = %self.name, %error, "the downstream pipeline did not take a batch; it is not acknowledged upstream");
                    return;
                }
            }
        }
        let (metrics, name) = (self.metrics.clone(), self.name.clone());
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        while waiting.try_join_next().is_some() {}
        waiting.spawn(async move {
            for h in held {
                if let Err(lost) = h.acknowledged().await {
                    tracing::warn!(sink = %name, %lost, "the downstream pipeline stopped before taking a batch; it is not acknowledged upstream");
                    return;
                }
            }
            metrics.requests.increment(1);
            metrics.written.increment(n);
            receipt.complete();
        });
    }

    /// Waits for the writes still waiting for their acknowledgement; called once the upstream
    /// workers stopped.
    pub(crate) async fn close(&self) {
        let mut waiting =
            std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|e| e.into_inner()));
        while waiting.join_next().await.is_some() {}
    }
}

/// Why a `pipeline` sink could not be built.
#[derive(Debug, thiserror::Error)]
#[error("pipeline `{0}` is not running (the config check should have said so)")]
pub struct NotConnected(String);

impl super::BuildOutput for PipelineSink {
    type Error = NotConnected;
    async fn build(self, name: &str, cx: &SinkBuild<'_>) -> Result<Arc<dyn Output>, NotConnected> {
        let writer = cx
            .connections
            .0
            .get(&self.name)
            .cloned()
            .ok_or_else(|| NotConnected(self.name.clone()))?;
        Ok(Arc::new(ToPipeline {
            name: name.to_owned(),
            origin: format!("pipeline:{}", cx.pipeline),
            max_record: writer.max_record_size().unwrap_or(RECORD_BYTES),
            writer,
        }))
    }
}

/// Sends to one downstream pipeline's buffer.
struct ToPipeline {
    /// `pipeline:<downstream>`.
    name: String,
    /// `pipeline:<upstream>`: the records' origin downstream.
    origin: String,
    max_record: usize,
    writer: Arc<dyn BufferWriter>,
}

impl ToPipeline {
    /// `events` as records of NDJSON lines, each at most `max_record` bytes, with the indices
    /// of the events in each; an event larger than that alone is returned apart.
    fn records(&self, events: &[Bytes]) -> (Vec<(Record, Vec<usize>)>, Vec<usize>) {
        let now = crate::source::now_ms();
        let mut records = Vec::new();
        let mut too_large = Vec::new();
        let mut payload = Vec::new();
        let mut members = Vec::new();
        let mut flush = |payload: &mut Vec<u8>, members: &mut Vec<usize>| {
            if !members.is_empty() {
                records.push((
                    Record {
                        payload: std::mem::take(payload),
                        key: None,
                        received_at_ms: now,
                        origin: self.origin.clone(),
                        content_type: Some("application/x-ndjson".to_owned()),
                        headers: Vec::new(),
                        ..Default::default()
                    },
                    std::mem::take(members),
                ));
            }
        };
        for (i, event) in events.iter().enumerate() {
            if event.len() + 1 > self.max_record {
                too_large.push(i);
                continue;
            }
            if payload.len() + event.len() + 1 > self.max_record {
                flush(&mut payload, &mut members);
            }
            payload.extend_from_slice(event);
            payload.push(b'\n');
            members.push(i);
        }
        flush(&mut payload, &mut members);
        (records, too_large)
    }
}

#[async_trait::async_trait]
impl Output for ToPipeline {
    /// Staged, as the s3 and http sinks are: the upstream worker hands a batch over and reads
    /// on while the sink's task waits for the downstream buffer to hold the last request (the
    /// upstream batch's receipt completes then). One request in flight, one batch waiting:
    /// memory stays bounded, and a slow downstream pipeline slows the upstream one.
    fn threshold(&self) -> Option<super::Threshold> {
        Some(super::Threshold {
            event_count: None,
            maximum_size: Some(STAGED_BYTES),
            event_collect_timeout: Some(Duration::from_millis(5)),
        })
    }

    async fn send(&self, events: &[Bytes], _: &Provenance) -> Result<(), SendError> {
        let (records, too_large) = self.records(events);
        let rejected: Vec<(usize, String)> = too_large
            .into_iter()
            .map(|i| {
                let why = format!(
                    "the event ({} bytes) is larger than a record of {}'s buffer ({} bytes)",
                    events[i].len(),
                    self.name,
                    self.max_record
                );
                (i, why)
            })
            .collect();
        // A buffer of bytes holds what it took once `write` returns (Kafka: the brokers
        // acknowledged it); a memory buffer, which says so only later, gets the handoff.
        let mut records = records.into_iter();
        let mut failed = None;
        for (record, members) in records.by_ref() {
            if let Err(error) = self.writer.write(vec![record], WRITE_TIMEOUT).await {
                failed = Some((error, members));
                break;
            }
        }
        let (mut rejected, mut retry, mut reason) = (rejected, Vec::new(), String::new());
        if let Some((error, members)) = failed {
            reason = format!("{}: {error}", self.name);
            if let WriteError::TooLarge { .. } | WriteError::RecordTooLarge { .. } = error {
                // Cannot pass: these events go to the dead-letter file.
                rejected.extend(members.into_iter().map(|i| (i, reason.clone())));
            } else {
                // Full, closing, unavailable: this record and the rest are sent again later.
                retry.extend(members);
            }
            retry.extend(records.flat_map(|(_, m)| m));
        }
        if !retry.is_empty() {
            return Err(partial(rejected, retry, reason));
        }
        if rejected.is_empty() {
            Ok(())
        } else {
            Err(partial(rejected, Vec::new(), String::new()))
        }
    }
}

/// What a request's events became when not all were taken.
fn partial(rejected: Vec<(usize, String)>, retry: Vec<usize>, reason: String) -> SendError {
    SendError::Partial {
        rejected,
        retry,
        reason,
    }
}

/// An event as a connection carries it: its data (as the sink shapes it) and its metadata.
pub(crate) fn wrap(data: &Value, metadata: &Metadata) -> Vec<u8> {
    let mut m = Map::new();
    m.insert("event_type".into(), Value::from(&*metadata.event_type));
    m.insert(
        "time_received_ms".into(),
        Value::from(metadata.time_received_ms),
    );
    if !metadata.tags.is_empty() {
        m.insert("tags".into(), Value::from(metadata.tags.clone()));
    }
    if !metadata.attributes.is_empty() {
        m.insert(
            "attributes".into(),
            Value::Object(metadata.attributes.clone()),
        );
    }
    if let Some(t) = metadata.external_origination_time_ms {
        m.insert("external_origination_time_ms".into(), Value::from(t));
    }
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"{\"data\":");
    serde_json::to_writer(&mut out, data).expect("a Value serializes");
    out.extend_from_slice(b",\"metadata\":");
    serde_json::to_writer(&mut out, &m).expect("a Value serializes");
    out.push(b'}');
    out
}

/// Reads back, in place, the event a connection carried from the object [`wrap`] wrote;
/// `false` for any other object, which stays the event as it is.
pub(crate) fn unwrap(event: &mut Event) -> bool {
    let Value::Object(outer) = &mut event.data else {
        return false;
    };
    let carried = outer.len() == 2
        && outer.get("data").is_some_and(Value::is_object)
        && outer.get("metadata").is_some_and(Value::is_object);
    if !carried {
        return false;
    }
    let (Some(data), Some(Value::Object(m))) = (outer.remove("data"), outer.remove("metadata"))
    else {
        unreachable!("checked above")
    };
    let metadata = &mut event.metadata;
    if let Some(Value::String(t)) = m.get("event_type") {
        metadata.event_type = match t.as_str() {
            "LOG" => Cow::Borrowed("LOG"),
            "TRACE" => Cow::Borrowed("TRACE"),
            "METRIC" => Cow::Borrowed("METRIC"),
            "EVENT" => Cow::Borrowed("EVENT"),
            other => Cow::Owned(other.to_owned()),
        };
    }
    if let Some(t) = m.get("time_received_ms").and_then(Value::as_u64) {
        metadata.time_received_ms = t;
    }
    if let Some(Value::Array(tags)) = m.get("tags") {
        metadata.tags = tags
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect();
    }
    if let Some(Value::Object(attributes)) = m.get("attributes") {
        metadata.attributes = attributes.clone();
    }
    metadata.external_origination_time_ms = m
        .get("external_origination_time_ms")
        .and_then(Value::as_i64);
    event.data = data;
    true
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;
    use sluice_buffer::{Buffer, memory::MemoryBuffer};

    use super::*;

    /// A handoff from pipeline `up` into `down`'s memory buffer, and `down`'s buffer.
    fn handoff(capacity: usize, batch_size: usize) -> (Handoff, MemoryBuffer) {
        let down = MemoryBuffer::new("down", capacity, batch_size, Duration::ZERO);
        let mut connections = Connections::default();
        connections.insert("down", down.writer());
        let cx = SinkBuild {
            pipeline: "up",
            connections: &connections,
            read_delay: Duration::ZERO,
        };
        let config = sluice_config::sink::pipeline::PipelineSink {
            name: "down".to_owned(),
        };
        (
            Handoff::new("pipeline:down".to_owned(), &config, &cx)
                .expect("a memory buffer holds events"),
            down,
        )
    }

    fn numbered(n: usize) -> Vec<Event> {
        (0..n)
            .map(|i| Event::new(json!({"n": i}), Metadata::new("TRACE", 7)))
            .collect()
    }

    /// A receipt that counts its batch's acknowledgement in `acked`.
    fn receipt(acked: &Arc<AtomicUsize>) -> super::super::Receipt {
        let acked = acked.clone();
        super::super::Receipt::split(1, move || {
            acked.fetch_add(1, Ordering::SeqCst);
        })
        .remove(0)
    }

    #[tokio::test]
    async fn a_handoff_is_acknowledged_upstream_once_downstream_acknowledged_every_event() {
        let (handoff, down) = handoff(4, 2);
        let acked = Arc::new(AtomicUsize::new(0));
        let mut reader = down.reader();
        // Five events into a buffer of four: record by record, as room comes back.
        let take = handoff.take(numbered(5), receipt(&acked));
        let read = async {
            let mut got = Vec::new();
            while got.len() < 5 {
                let batch = reader.read().await.unwrap();
                got.extend(batch.records.iter().flat_map(|r| r.events.clone()));
                tokio::task::yield_now().await;
                assert_eq!(
                    acked.load(Ordering::SeqCst),
                    0,
                    "not before downstream acknowledged every event"
                );
                batch.ack.acknowledge();
            }
            got
        };
        let ((), got) = tokio::join!(take, read);
        assert_eq!(got, numbered(5), "in order, with their metadata");
        handoff.close().await;
        assert_eq!(acked.load(Ordering::SeqCst), 1);

        // A downstream batch dropped unacknowledged: the upstream batch never is.
        let acked = Arc::new(AtomicUsize::new(0));
        handoff.take(numbered(1), receipt(&acked)).await;
        drop(reader.read().await.unwrap());
        handoff.close().await;
        assert_eq!(acked.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn an_event_crosses_a_connection_with_its_metadata() {
        let mut metadata = Metadata::new("TRACE", 7);
        metadata.add_tag("a");
        metadata.attributes.insert("k".into(), Value::from(1));
        metadata.external_origination_time_ms = Some(-5);
        let line = wrap(&json!({"x": 1}), &metadata);
        let mut event = Event::new(
            serde_json::from_slice(&line).unwrap(),
            Metadata::new("LOG", 99),
        );
        assert!(unwrap(&mut event));
        assert_eq!(event, Event::new(json!({"x": 1}), metadata));

        // An object the connection did not write stays as it is.
        let mut plain = Event::new(json!({"data": {}, "other": 1}), Metadata::new("LOG", 1));
        assert!(!unwrap(&mut plain));
        assert_eq!(plain.data, json!({"data": {}, "other": 1}));
    }
}
