//! A worker: read a batch, deserialize it in the plugin (off the async reactor), write the
//! events to every sink and the rejects to the dead-letter file, then acknowledge the batch.
//! A sink failure is retried with backoff, and the batch is not acknowledged until it succeeds.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde_json::{Value, json};
use sluice_buffer::BufferReader;
use sluice_plugin::{Decoded, Decoder, RawRecord};

use crate::sink::LineSink;

/// Counts of one pipeline, logged at shutdown (and the metrics endpoint's source, later).
#[derive(Debug, Default)]
pub struct Counters {
    /// Records the source handed to the buffer.
    pub accepted: AtomicU64,
    /// Requests refused because the buffer was full or closing.
    pub refused: AtomicU64,
    /// Records read from the buffer.
    pub consumed: AtomicU64,
    /// Events written to the sinks.
    pub events: AtomicU64,
    /// Records sent to the dead-letter file.
    pub dead_lettered: AtomicU64,
    /// Batches acknowledged.
    pub acknowledged: AtomicU64,
}

/// What a worker needs besides its reader and decoder.
pub struct Outputs {
    pub pipeline: String,
    pub sinks: Vec<Arc<LineSink>>,
    pub dlq: Arc<LineSink>,
    pub counters: Arc<Counters>,
    /// How long shutdown waits for this pipeline's batches.
    pub drain_timeout: Duration,
}

/// Runs until the buffer is closed and drained.
pub async fn run(mut reader: Box<dyn BufferReader>, decoder: Decoder, outputs: Arc<Outputs>) {
    let mut decoder = Some(decoder);
    while let Some(mut batch) = reader.read().await {
        outputs.counters.consumed.fetch_add(
            (batch.records.len() + batch.unreadable.len()) as u64,
            Ordering::Relaxed,
        );
        let content_types: Vec<Option<String>> = batch
            .records
            .iter()
            .map(|r| r.content_type.clone())
            .collect();
        let records: Vec<RawRecord> = std::mem::take(&mut batch.records)
            .into_iter()
            .map(raw)
            .collect();
        let mut d = decoder
            .take()
            .expect("decoder is returned after every batch");
        // Sync wasm calls must not run on the reactor.
        let (d, records, decoded) = tokio::task::spawn_blocking(move || {
            let decoded = d.decode(&records);
            (d, records, decoded)
        })
        .await
        .expect("the decoder does not panic: plugin faults are values");
        decoder = Some(d);

        let (events, n_events, mut dead) =
            sort(&outputs.pipeline, &records, &content_types, decoded);
        for u in &batch.unreadable {
            tracing::debug!(pipeline = %outputs.pipeline, origin = %u.record.origin, reason = %u.reason, "dead-lettering a record the buffer could not open");
            dead.push(dead_letter(
                &outputs.pipeline,
                &raw(u.record.clone()),
                u.record.content_type.as_deref(),
                &u.reason,
            ));
        }
        let n_dead = dead.len() as u64;
        deliver(&outputs.dlq, &lines(&dead)).await;
        let n_events = n_events as u64;
        for sink in &outputs.sinks {
            deliver(sink, &events).await;
        }
        batch.ack.acknowledge();
        outputs
            .counters
            .events
            .fetch_add(n_events, Ordering::Relaxed);
        outputs
            .counters
            .dead_lettered
            .fetch_add(n_dead, Ordering::Relaxed);
        outputs
            .counters
            .acknowledged
            .fetch_add(1, Ordering::Relaxed);
    }
}

fn raw(r: sluice_buffer::Record) -> RawRecord {
    RawRecord {
        payload: r.payload,
        key: r.key,
        received_at_ms: r.received_at_ms,
        origin: r.origin,
    }
}

/// Splits outcomes into event lines (ready for the sinks) and dead-letter entries. A record
/// whose plugin output is not all JSON objects is dead-lettered whole, so a record is never
/// half-delivered.
fn sort(
    pipeline: &str,
    records: &[RawRecord],
    content_types: &[Option<String>],
    decoded: Vec<Decoded>,
) -> (Vec<u8>, usize, Vec<Value>) {
    let mut events = Vec::new();
    let mut n_events = 0;
    let mut dead = Vec::new();
    for ((record, outcome), content_type) in records.iter().zip(decoded).zip(content_types) {
        let reason = match outcome {
            Decoded::Events(texts) => {
                let mark = events.len();
                match append_events(&texts, &mut events) {
                    Ok(()) => {
                        n_events += texts.len();
                        continue;
                    }
                    Err(reason) => {
                        events.truncate(mark);
                        reason
                    }
                }
            }
            Decoded::Malformed(reason) => reason,
            Decoded::Trapped(reason) => format!("plugin trapped: {reason}"),
        };
        tracing::debug!(pipeline, origin = %record.origin, %reason, "dead-lettering record");
        dead.push(dead_letter(
            pipeline,
            record,
            content_type.as_deref(),
            &reason,
        ));
    }
    (events, n_events, dead)
}

/// Checks that each text is one JSON object and appends it as one line. The plugin's text is
/// kept as it is (validated, not rebuilt) unless it spans lines.
fn append_events(texts: &[String], out: &mut Vec<u8>) -> Result<(), String> {
    for (i, text) in texts.iter().enumerate() {
        let raw: Box<serde_json::value::RawValue> = serde_json::from_str(text)
            .map_err(|e| format!("plugin returned event {i} that is not valid JSON: {e}"))?;
        let raw = raw.get().trim();
        if !raw.starts_with('{') {
            return Err(format!(
                "plugin returned event {i} that is not a JSON object"
            ));
        }
        if raw.contains('\n') {
            // Whitespace between tokens (strings cannot hold a raw newline): re-serialize.
            let v: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
            out.extend_from_slice(v.to_string().as_bytes());
        } else {
            out.extend_from_slice(raw.as_bytes());
        }
        out.push(b'\n');
    }
    Ok(())
}

fn dead_letter(
    pipeline: &str,
    record: &RawRecord,
    content_type: Option<&str>,
    reason: &str,
) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    let now = SystemTime::now();
    json!({
        "pipeline": pipeline,
        "origin": record.origin,
        "reason": reason,
        "payload": b64.encode(&record.payload),
        "key": record.key.as_ref().map(|k| b64.encode(k)),
        "content_type": content_type,
        "received_at_ms": record.received_at_ms,
        "time": humantime::format_rfc3339_seconds(now).to_string(),
    })
}

fn lines(values: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        out.extend_from_slice(v.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

/// Writes until it succeeds: the batch is not acknowledged before every sink has it.
async fn deliver(sink: &LineSink, lines: &[u8]) {
    let mut backoff = Duration::from_millis(100);
    loop {
        match sink.write(lines).await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(error = %e, retry_in = ?backoff, "sink refused a batch; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
        }
    }
}
