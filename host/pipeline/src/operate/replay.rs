//! `sluice dlq replay`: dead letters back through the pipeline.
//!
//! - A record's bytes (the deserializer or the buffer refused it) go back into the pipeline's
//!   buffer with their original key, receive time, origin and content type, and the reasons
//!   they were dead-lettered for: they are deserialized and processed again (by the plugin's
//!   new version, if it was fixed), and dead-lettered anew, with every reason, if they fail.
//! - An event a processor failed goes back into the buffer as that event
//!   (`worker::replayed`): it skips the deserializer and meets the processors from the one
//!   that failed it.
//! - An event a sink did not take goes back to that sink; if the sink refuses it again it is
//!   dead-lettered anew with both reasons.
//!
//! Entries go in chunks; a chunk is marked replayed in the file only once the buffer (or the
//! sink) holds all of it. Interrupted, a replay leaves the rest unmarked: replayed again, every
//! entry is delivered at least once and none is dropped.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use sluice_buffer::{BufferWriter, Record};

use super::dead_letters::{self, Entry, Kind, Select};
use crate::sink::dlq::{self, DeadLetters};
use crate::sink::{Output, SendError};

/// Entries sent and marked at a time.
const CHUNK: usize = 200;

/// How long a chunk may wait for room in the buffer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a sink is tried with a chunk before its events are dead-lettered anew.
const SINK_ATTEMPTS: u32 = 3;

/// What a replay did (or, dry, would do).
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Report {
    /// Entries the selection picked.
    pub picked: usize,
    /// Records and events written back into the buffer.
    pub to_buffer: usize,
    /// Events sent to each sink (by its name).
    pub to_sinks: BTreeMap<String, usize>,
    /// Events a sink refused again: dead-lettered anew, with both reasons.
    pub dead_lettered_again: usize,
    /// Entries not replayed, each with why (its sink is not in the pipeline any more).
    pub left: Vec<(usize, String)>,
    /// Nothing was sent: what would have been.
    pub dry_run: bool,
}

/// Why a replay stopped. What it marked before is replayed; the rest is not.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Read(#[from] dead_letters::ReadError),
    #[error(transparent)]
    Select(#[from] dead_letters::SelectError),
    #[error(
        "the buffer did not take the replayed records: {0}; what was marked replayed is in the buffer, replay again for the rest"
    )]
    Buffer(String),
    #[error("the dead-letter file refused the mark of replayed entries: {0}")]
    Mark(String),
}

/// Where a replay sends what it replays: the pipeline's buffer, and its sinks by name.
pub struct Target<'a> {
    pub pipeline: &'a str,
    pub writer: Arc<dyn BufferWriter>,
    /// The pipeline's dead-letter file (written through, so the running pipeline's own
    /// record of it stays in step).
    pub dead_letters: Arc<DeadLetters>,
    /// The pipeline's sinks' outputs, by name; built on first use.
    pub sinks: &'a dyn Sinks,
}

/// The outputs of a pipeline's sinks, found by name.
#[async_trait::async_trait]
pub trait Sinks: Send + Sync {
    /// The output named `name` (`file:<path>`, `s3://bucket/prefix`), or why there is none.
    async fn output(&self, name: &str) -> Result<Arc<dyn Output>, String>;
}

/// Replays the entries `select` picks from the dead-letter file at `path` into `target`.
pub async fn replay(
    path: &std::path::Path,
    select: &Select,
    dry_run: bool,
    target: &Target<'_>,
) -> Result<Report, ReplayError> {
    let entries = dead_letters::read(path)?;
    let picked = select.pick(&entries)?;
    let mut report = Report {
        picked: picked.len(),
        dry_run,
        ..Report::default()
    };
    for chunk in picked.chunks(CHUNK) {
        let mut records = Vec::new();
        let mut numbers = Vec::new();
        let mut by_sink: BTreeMap<String, Vec<&Entry>> = BTreeMap::new();
        for &entry in chunk {
            match entry.kind() {
                Kind::Record => records.push(record(entry, entry.content_type())),
                Kind::Event { processor } => records.push(record(
                    entry,
                    Some(crate::worker::replayed::event_content_type(processor)),
                )),
                Kind::Sink { sink } => {
                    by_sink.entry(sink).or_default().push(entry);
                    continue;
                }
            }
            numbers.push(entry.number);
        }
        report.to_buffer += records.len();
        if !dry_run && !records.is_empty() {
            let held = target
                .writer
                .write_held(records, WRITE_TIMEOUT)
                .await
                .map_err(|e| ReplayError::Buffer(e.to_string()))?;
            held.acknowledged()
                .await
                .map_err(|e| ReplayError::Buffer(e.to_string()))?;
            mark(target, &numbers, "buffer").await?;
        }
        for (sink, entries) in by_sink {
            let output = match target.sinks.output(&sink).await {
                Ok(output) => output,
                Err(why) => {
                    report
                        .left
                        .extend(entries.iter().map(|e| (e.number, why.clone())));
                    continue;
                }
            };
            *report.to_sinks.entry(sink.clone()).or_default() += entries.len();
            if dry_run {
                continue;
            }
            report.dead_lettered_again += to_sink(target, &*output, &entries).await;
            let numbers: Vec<usize> = entries.iter().map(|e| e.number).collect();
            mark(target, &numbers, &format!("sink:{sink}")).await?;
        }
    }
    Ok(report)
}

/// The buffer record that brings `entry` back.
fn record(entry: &Entry, content_type: Option<String>) -> Record {
    Record {
        payload: entry.payload(),
        key: entry.key(),
        received_at_ms: entry.value["received_at_ms"].as_u64().unwrap_or(0),
        origin: dead_letters::source_origin(entry.origin()).to_owned(),
        content_type,
        dead_lettered: entry.reasons(),
        ..Record::default()
    }
}

/// Sends `entries`' events to `output`, trying a few times; what it still refuses is
/// dead-lettered anew with every reason. Returns how many were.
async fn to_sink(target: &Target<'_>, output: &dyn Output, entries: &[&Entry]) -> usize {
    // An output that writes its lines itself (opensearch: an action line, then the document)
    // gets each event's line made again from the event.
    let encoder = output.encoder();
    let events: Vec<Bytes> = entries
        .iter()
        .map(|e| {
            let payload = e.payload();
            let event = encoder.as_ref().and_then(|encoder| {
                let data: serde_json::Value = serde_json::from_slice(&payload).ok()?;
                data.is_object().then(|| {
                    let received = e.value["received_at_ms"].as_u64().unwrap_or(0);
                    let event = sluice_event::Event::new(
                        data,
                        sluice_event::Metadata::new("LOG", received),
                    );
                    encoder.encode(&event, None)
                })
            });
            Bytes::from(event.unwrap_or(payload))
        })
        .collect();
    let mut todo: Vec<usize> = (0..events.len()).collect();
    let mut refused: Vec<(usize, String)> = Vec::new();
    for attempt in 1..=SINK_ATTEMPTS {
        let batch: Vec<Bytes> = todo.iter().map(|&i| events[i].clone()).collect();
        match output
            .send(&batch, &crate::sink::Provenance::default())
            .await
        {
            Ok(()) => {
                todo.clear();
            }
            Err(SendError::Reject(reason)) => {
                refused.extend(todo.drain(..).map(|i| (i, reason.clone())));
            }
            Err(SendError::Partial {
                rejected, retry, ..
            }) => {
                refused.extend(rejected.into_iter().map(|(i, r)| (todo[i], r)));
                todo = retry.into_iter().map(|i| todo[i]).collect();
            }
            Err(SendError::Retry(reason)) => {
                if attempt == SINK_ATTEMPTS {
                    refused.extend(todo.drain(..).map(|i| (i, reason.clone())));
                }
            }
        }
        if todo.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
    }
    if refused.is_empty() {
        return 0;
    }
    let dead: Vec<serde_json::Value> = refused
        .iter()
        .map(|(i, reason)| {
            let e = entries[*i];
            let mut value = e.value.clone();
            let fields = value.as_object_mut().expect("an entry is an object");
            let earlier = e.reasons();
            fields.remove("earlier_reasons");
            fields.insert("reason".to_owned(), serde_json::json!(reason));
            fields.insert(
                "time".to_owned(),
                serde_json::json!(
                    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
                ),
            );
            dlq::add_earlier_reasons(&mut value, &earlier);
            value
        })
        .collect();
    target.dead_letters.write_until_held(&dead).await;
    dead.len()
}

async fn mark(target: &Target<'_>, numbers: &[usize], to: &str) -> Result<(), ReplayError> {
    target
        .dead_letters
        .write(&[dead_letters::mark(numbers, to)])
        .await
        .map_err(|e| ReplayError::Mark(e.to_string()))?;
    tracing::info!(
        pipeline = target.pipeline,
        entries = numbers.len(),
        to,
        "replayed dead letters"
    );
    Ok(())
}
