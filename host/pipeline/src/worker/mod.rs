//! A worker: read a batch, deserialize it in the plugin (off the async reactor), run the
//! processors, hand the events to every sink and the rejects to the dead-letter file, then
//! let the batch be acknowledged once every sink's receipt completed. Retries are the sinks'
//! (`crate::sink`); a worker waits while a sink is behind, which is the pipeline's backpressure.
//!
//! # Layout
//! - this file: the loop (`run`), following new plugin versions between batches.
//! - `outcome`: splits a batch's plugin outcomes into event lines and dead-letter entries.
//! - `process`: the processor stages, in order, over those events.
//! - `route`: which sinks take which events ([`Router`]).

mod outcome;
mod process;
mod route;

pub use self::route::Router;
pub use crate::processor::Stage;

use std::sync::Arc;

use sluice_buffer::BufferReader;
use sluice_plugin::{Decoder, RawRecord};

use crate::counters::Counters;
use crate::follow::Following;
use crate::sink::dlq::{self, DeadLetters};
use crate::sink::{Receipt, Sink};
use crate::watchdog::Slot;

/// Where a pipeline's workers deliver: each sink the events its routes select, the
/// dead-letter file every record that gave none; the counters count both.
pub struct Delivery {
    pub pipeline: String,
    /// The type of the source's events (`getEventType()`): `LOG`, `TRACE`, `METRIC`.
    pub event_type: &'static str,
    /// The source is `pipeline`: its records are events with the metadata they had upstream,
    /// read natively (`outcome::split_connected`), not by the deserializer.
    pub connected: bool,
    pub sinks: Vec<Arc<Sink>>,
    /// Which sink takes which event, one entry per sink of `sinks`.
    pub router: Router,
    pub dead_letters: Arc<DeadLetters>,
    pub counters: Arc<Counters>,
}

/// Runs until the buffer is closed and drained. `slot` marks which plugin each batch is in,
/// for the watchdog. The deserializer follows new versions of its plugin.
pub(crate) async fn run(
    mut reader: Box<dyn BufferReader>,
    decoder: Following<Decoder>,
    stages: Vec<Stage>,
    outputs: Arc<Delivery>,
    slot: Arc<Slot>,
) {
    let mut stages = Some(stages);
    let mut decoder = Some(decoder);
    while let Some(mut batch) = reader.read().await {
        let mut d = decoder
            .take()
            .expect("decoder is returned after every batch");
        // A new plugin version: switch before this batch, never inside one.
        d.follow().await;
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
            .map(plugin_record)
            .collect();
        let mut stage_list = stages
            .take()
            .expect("stages are returned after every batch");
        for stage in &mut stage_list {
            if let Stage::Plugin(plugin) = stage {
                plugin.follow().await;
            }
        }
        // Sync wasm calls must not run on the reactor.
        let delivery = outputs.clone();
        let slot = slot.clone();
        let (d, stage_list, split, routed, counts) = tokio::task::spawn_blocking(move || {
            let pipeline = &delivery.pipeline;
            let mut split = if delivery.connected {
                // Events from upstream pipelines: read natively, with their metadata.
                outcome::split_connected(pipeline, delivery.event_type, &records, &content_types)
            } else {
                slot.enter(
                    d.current.plugin().name(),
                    "deserializer",
                    d.limits().timeout,
                );
                let decoded = d.measured(|d| d.decode_typed(&records, &content_types));
                slot.leave();
                outcome::split_outcomes(
                    pipeline,
                    delivery.event_type,
                    &records,
                    &content_types,
                    decoded,
                )
            };
            let counts =
                process::run_stages(pipeline, &mut stage_list, &records, &mut split, &slot);
            let routed = delivery.router.route(&mut split);
            let unreadable = std::mem::take(&mut split.unreadable);
            for (owner, body, reason) in &unreadable {
                let record = &records[*owner];
                tracing::debug!(pipeline, origin = %record.origin, %reason, "dead-lettering an event");
                let rejected = dlq::Rejected {
                    origin: &record.origin,
                    payload: body,
                    key: None,
                    content_type: Some("application/json"),
                    received_at_ms: record.received_at_ms,
                };
                split.dead.push(dlq::entry(pipeline, rejected, reason));
            }
            let counts = process::StageCounts {
                failed: counts.failed + unreadable.len() as u64,
                ..counts
            };
            (d, stage_list, split, routed, counts)
        })
        .await
        .expect("the plugins do not panic: plugin faults are values");
        decoder = Some(d);
        stages = Some(stage_list);
        outputs.counters.dropped.add(counts.dropped);
        outputs.counters.processor_failed.add(counts.failed);

        let n_events = split.event_count() as u64;
        let mut dead = split.dead;
        outputs.counters.unrouted.add(routed.unrouted);
        outputs
            .counters
            .failed_to_parse
            .add(dead.len() as u64 - counts.failed);
        for u in &batch.unreadable {
            tracing::debug!(pipeline = %outputs.pipeline, origin = %u.record.origin, reason = %u.reason, "dead-lettering a record the buffer could not open");
            let r = &u.record;
            let rejected = dlq::Rejected {
                origin: &r.origin,
                payload: &r.payload,
                key: r.key.as_deref(),
                content_type: r.content_type.as_deref(),
                received_at_ms: r.received_at_ms,
            };
            dead.push(dlq::entry(&outputs.pipeline, rejected, &u.reason));
        }
        let n_dead = dead.len() as u64;
        if !dead.is_empty() {
            outputs.dead_letters.write_until_held(&dead).await;
        }
        outputs.counters.dead_lettered.add(n_dead);
        // The batch is acknowledged once every sink holds its events: at once for sinks that
        // send as they take, later for sinks that stage (s3, http with a threshold).
        let ack = batch.ack;
        let counters = outputs.counters.clone();
        let receipts = Receipt::split(outputs.sinks.len(), move || {
            ack.acknowledge();
            counters.events.add(n_events);
            counters.acknowledged.add(1);
        });
        for ((sink, receipt), events) in outputs.sinks.iter().zip(receipts).zip(routed.per_sink) {
            sink.take(events, receipt).await;
        }
    }
}

/// The plugin's view of a buffered record.
fn plugin_record(r: sluice_buffer::Record) -> RawRecord {
    RawRecord {
        payload: r.payload,
        key: r.key,
        received_at_ms: r.received_at_ms,
        origin: r.origin,
    }
}

#[cfg(test)]
mod tests;
