//! A worker: read a batch, deserialize it in the plugin (off the async reactor), write the
//! events to every sink and the rejects to the dead-letter file, then acknowledge the batch.
//! A sink failure is retried with backoff, and the batch is not acknowledged until it succeeds.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde_json::{Value, json};
use sluice_buffer::{BufferReader, Count};
use sluice_plugin::{Decoded, Decoder, DecoderStats, Limits, Plugin, RawRecord};
use tokio::sync::watch;

use crate::sink::LineSink;
use crate::watchdog::Slot;

/// Counts of one pipeline, exported as metrics (`<buffer prefix>_<name>{pipeline}` for the
/// buffer's, `sluice_<name>{pipeline}` for the rest) and logged at shutdown.
#[derive(Debug)]
pub struct Counters {
    /// recordsWritten: records the sources handed to the buffer.
    pub accepted: Count,
    /// writeTimeouts: writes refused because the buffer stayed full.
    pub write_timeouts: Count,
    /// numberOfBufferSizeOverflows: writes refused as larger than the buffer takes.
    pub overflows: Count,
    /// requestsRefused (sluice_): requests refused for any reason (full, closing, Kafka down).
    pub refused: Count,
    /// recordsRead: records read from the buffer.
    pub consumed: Count,
    /// numberOfRecordsFailedToParse: records the deserializer rejected or trapped on.
    pub failed_to_parse: Count,
    /// eventsWritten (sluice_): events written to the sinks.
    pub events: Count,
    /// recordsDeadLettered (sluice_): records sent to the dead-letter file.
    pub dead_lettered: Count,
    /// batchesAcknowledged (sluice_).
    pub acknowledged: Count,
}

impl Counters {
    pub fn new(pipeline: &str, buffer_prefix: &str) -> Self {
        let buffer = |name: &str| Count::new(&format!("{buffer_prefix}_{name}"), pipeline);
        let own = |name: &str| Count::new(&format!("sluice_{name}"), pipeline);
        Self {
            accepted: buffer("recordsWritten"),
            write_timeouts: buffer("writeTimeouts"),
            overflows: buffer("numberOfBufferSizeOverflows"),
            refused: own("requestsRefused"),
            consumed: buffer("recordsRead"),
            failed_to_parse: buffer("numberOfRecordsFailedToParse"),
            events: own("eventsWritten"),
            dead_lettered: own("recordsDeadLettered"),
            acknowledged: own("batchesAcknowledged"),
        }
    }
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

/// How a worker builds a decoder from a new plugin version (hot reload).
#[derive(Clone)]
pub struct Swap {
    /// New versions of the pipeline's plugin, published by the catalog.
    pub updates: watch::Receiver<Plugin>,
    /// The deserializer's options, for `configure` on the new instance.
    pub options: Vec<(String, String)>,
    pub limits: Limits,
}

/// Metrics of one pipeline's deserializer plugin, labelled `{pipeline, plugin}`.
struct PluginMetrics {
    calls: metrics::Counter,
    faults: metrics::Counter,
    deadline_hits: metrics::Counter,
    recycled: metrics::Counter,
    swaps: metrics::Counter,
    memory: metrics::Gauge,
    batch_seconds: metrics::Histogram,
    /// Batches that spent longer than the plugin's deadline in it (see `watchdog`).
    stalls: metrics::Counter,
}

impl PluginMetrics {
    fn new(pipeline: &str, plugin: &str) -> Self {
        let labels = [
            ("pipeline", pipeline.to_owned()),
            ("plugin", plugin.to_owned()),
        ];
        Self {
            calls: metrics::counter!("sluice_plugin_calls", &labels),
            faults: metrics::counter!("sluice_plugin_traps", &labels),
            deadline_hits: metrics::counter!("sluice_plugin_deadline_hits", &labels),
            recycled: metrics::counter!("sluice_plugin_instances_recycled", &labels),
            swaps: metrics::counter!("sluice_plugin_versions_switched", &labels),
            memory: metrics::gauge!("sluice_plugin_memory_bytes", &labels),
            batch_seconds: metrics::histogram!("sluice_plugin_batch_seconds", &labels),
            stalls: metrics::counter!("sluice_worker_stalls", &labels),
        }
    }

    /// Records what one batch cost, from the decoder's counters before and after it.
    fn batch(&self, before: DecoderStats, after: DecoderStats, took: Duration) {
        self.calls.increment(after.calls - before.calls);
        self.faults.increment(after.faults - before.faults);
        self.deadline_hits
            .increment(after.deadline_hits - before.deadline_hits);
        self.recycled.increment(after.recycled - before.recycled);
        // The peak over this worker's instances (the gauge shows the last worker to report).
        self.memory.set(after.peak_memory as f64);
        self.batch_seconds.record(took.as_secs_f64());
    }
}

/// Runs until the buffer is closed and drained. `slot` marks the time each batch spends in
/// the plugin, for the watchdog.
pub async fn run(
    mut reader: Box<dyn BufferReader>,
    decoder: Decoder,
    mut swap: Swap,
    outputs: Arc<Outputs>,
    slot: Arc<Slot>,
) {
    let plugin_metrics = PluginMetrics::new(&outputs.pipeline, decoder.plugin().name());
    let mut decoder = Some(decoder);
    while let Some(mut batch) = reader.read().await {
        // A new plugin version: switch before this batch, never inside one.
        if swap.updates.has_changed().unwrap_or(false) {
            let current = decoder
                .take()
                .expect("decoder is returned after every batch");
            let (next, switched) = switch(&mut swap, current, &outputs.pipeline).await;
            if switched {
                plugin_metrics.swaps.increment(1);
            }
            decoder = Some(next);
        }
        outputs
            .counters
            .consumed
            .add((batch.records.len() + batch.unreadable.len()) as u64);
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
        slot.begin();
        let (d, records, decoded, before, took) = tokio::task::spawn_blocking(move || {
            let before = d.stats();
            let started = std::time::Instant::now();
            let decoded = d.decode(&records);
            (d, records, decoded, before, started.elapsed())
        })
        .await
        .expect("the decoder does not panic: plugin faults are values");
        if slot.end() {
            plugin_metrics.stalls.increment(1);
        }
        plugin_metrics.batch(before, d.stats(), took);
        decoder = Some(d);

        let (events, n_events, mut dead) =
            sort(&outputs.pipeline, &records, &content_types, decoded);
        outputs.counters.failed_to_parse.add(dead.len() as u64);
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
        outputs.counters.events.add(n_events);
        outputs.counters.dead_lettered.add(n_dead);
        outputs.counters.acknowledged.add(1);
    }
}

/// Builds a decoder from the newest version of the plugin (instantiate and `configure`, off
/// the reactor). If that fails (the new version refuses the options, or cannot start), the
/// current decoder is kept and the error logged; the version is not retried.
async fn switch(swap: &mut Swap, current: Decoder, pipeline: &str) -> (Decoder, bool) {
    let plugin = swap.updates.borrow_and_update().clone();
    if plugin.sha256() == current.plugin().sha256() {
        return (current, false);
    }
    let (options, limits) = (swap.options.clone(), swap.limits);
    let built = tokio::task::spawn_blocking(move || Decoder::new(plugin, options, limits))
        .await
        .expect("building a decoder does not panic");
    match built {
        Ok(next) => {
            tracing::info!(pipeline, plugin = next.plugin().name(), from = %&current.plugin().sha256()[..12], to = %&next.plugin().sha256()[..12], "switched to the new plugin version");
            (next, true)
        }
        Err(error) => {
            tracing::error!(pipeline, %error, "the new plugin version cannot start here; keeping the running one");
            (current, false)
        }
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
