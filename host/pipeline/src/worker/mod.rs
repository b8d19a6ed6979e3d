//! A worker: read a batch, deserialize it in the plugin (off the async reactor), run the
//! processors, hand the events to every sink and the rejects to the dead-letter file, then
//! let the batch be acknowledged once every sink's receipt completed. Retries are the sinks'
//! (`crate::sink`); a worker waits while a sink is behind, which is the pipeline's backpressure.
//!
//! # Layout
//! - this file: the loop (`run`), following new plugin versions between batches, and the
//!   flusher of a pipeline whose stateful processors keep events past their batch (`flush`).
//! - `outcome`: splits a batch's plugin outcomes into event lines and dead-letter entries.
//! - `process`: the processor stages, in order, over those events.
//! - `route`: which sinks take which events ([`Router`]).
//! - `replayed`: records `sluice dlq replay` sent back (events skip the deserializer).

mod outcome;
mod process;
pub mod replayed;
mod route;

pub use self::route::Router;
pub use crate::processor::Stage;

use std::sync::Arc;

use sluice_buffer::BufferReader;
use sluice_plugin::{Decoder, RawRecord};

use crate::counters::Counters;
use crate::follow::Following;
use crate::sink::dlq::{self, DeadLetters};
use crate::sink::{Receipt, Sink, Tally};
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
    /// A sink completes records one by one (it cuts requests by offsets) and no stateful
    /// processor keeps events: a Kafka buffer's batches are then [`Tally`]d, so the commit can
    /// land between two records of a batch.
    pub per_record: bool,
    /// Where `sluice tap` listens: after the deserializer, each processor, and at each sink.
    pub tap: Arc<crate::operate::tap::Tap>,
    /// The source reads its input itself (`kafka`, `s3`): what its records' events get (Data
    /// Prepper's `kafka_*` metadata, the object's bucket and key).
    pub decorate: Option<Arc<dyn crate::source::Decorate>>,
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
        // Where each record sits in a Kafka buffer, and the runs of offsets the batch read.
        let from = Origins::of(&batch);
        let tally = tally(&outputs, &batch);
        let replayed = replayed::Replayed::of(&batch.records);
        // Events an upstream pipeline of this process handed over, parsed.
        let handed: Vec<Vec<sluice_event::Event>> = if outputs.connected {
            batch
                .records
                .iter_mut()
                .map(|r| std::mem::take(&mut r.events))
                .collect()
        } else {
            Vec::new()
        };
        // A kafka or s3 source's: each record's attributes and fields.
        let decorations: Vec<_> = match &outputs.decorate {
            Some(d) => batch.records.iter().map(|r| d.decorate(r)).collect(),
            None => Vec::new(),
        };
        let records: Vec<RawRecord> = std::mem::take(&mut batch.records)
            .into_iter()
            .map(plugin_record)
            .collect();
        let mut stage_list = stages
            .take()
            .expect("stages are returned after every batch");
        follow(&mut stage_list).await;
        // Stateful processors keep a share of it per event they keep.
        let (ack, room, counters) = (batch.ack, batch.room, outputs.counters.clone());
        let share = sluice_buffer::Acknowledgement::new(move || {
            ack.acknowledge();
            counters.acknowledged.add(1);
        })
        .shared();
        // Sync wasm calls must not run on the reactor.
        let delivery = outputs.clone();
        let slot = slot.clone();
        let (d, stage_list, share, mut out) = crate::off_reactor(move || {
            let pipeline = &delivery.pipeline;
            let split = if delivery.connected {
                // Events from upstream pipelines: read natively, with their metadata.
                outcome::split_connected(
                    pipeline,
                    delivery.event_type,
                    &records,
                    &content_types,
                    handed,
                )
            } else {
                slot.enter(
                    d.current.plugin().name(),
                    "deserializer",
                    d.limits().timeout,
                );
                let decoded = d.measured(|d| match &replayed {
                    None => d.decode_typed(&records, &content_types),
                    Some(replayed) => replayed.decode(d, &records, &content_types),
                });
                slot.leave();
                let mut split = outcome::split_outcomes(
                    pipeline,
                    delivery.event_type,
                    &records,
                    &content_types,
                    decoded,
                );
                if !decorations.is_empty() {
                    split.decorate(&decorations);
                }
                split
            };
            delivery.tap.offer(
                || crate::operate::tap::Point::Deserializer,
                || split.sample(crate::operate::tap::SAMPLE),
            );
            let parse_failures = split.dead.len() as u64;
            let out = finish(
                &delivery,
                Stages {
                    list: &mut stage_list,
                    first: 0,
                },
                records,
                split,
                &share,
                &slot,
                &from,
                replayed.as_ref(),
            );
            let out = Outgoing {
                failed_to_parse: parse_failures,
                ..out
            };
            (d, stage_list, share, out)
        })
        .await;
        decoder = Some(d);
        stages = Some(stage_list);
        for u in &batch.unreadable {
            tracing::debug!(pipeline = %outputs.pipeline, origin = %u.record.origin, reason = %u.reason, "dead-lettering a record the buffer could not open");
            let r = &u.record;
            let rejected = dlq::Rejected {
                stage: dlq::Stage::Buffer,
                origin: &r.origin,
                payload: &r.payload,
                key: r.key.as_deref(),
                content_type: r.content_type.as_deref(),
                received_at_ms: r.received_at_ms,
            };
            // Dead-lettered, but not a parse failure (`numberOfRecordsFailedToParse`).
            let mut entry = dlq::entry(&outputs.pipeline, rejected, &u.reason);
            dlq::add_earlier_reasons(&mut entry, &r.dead_lettered);
            out.dead.push((r.position.clone(), entry));
        }
        deliver(&outputs, out, share, tally).await;
        // The sinks have the events: a memory buffer's room is free, even while a stateful
        // processor keeps some of them or a sink stages them.
        if let Some(room) = room {
            room.acknowledge();
        }
    }
}

/// The batch's records for sinks that complete them one by one, when the pipeline has such a
/// sink and the buffer acknowledges records one by one.
fn tally(outputs: &Delivery, batch: &sluice_buffer::Batch) -> Option<Arc<Tally>> {
    let parts = batch.parts.as_ref().filter(|_| outputs.per_record)?;
    let records = batch
        .records
        .iter()
        .map(|r| Some((r.position.clone()?, r.received_at_ms)))
        .collect::<Option<Vec<_>>>()?;
    Some(Arc::new(Tally::new(
        records,
        batch.reads.clone(),
        outputs.sinks.len(),
        parts.clone(),
    )))
}

/// Between batches: each plugin stage switches to its plugin's new version, if any.
async fn follow(stages: &mut [Stage]) {
    for stage in stages {
        if let Stage::Plugin(plugin) = stage {
            plugin.follow().await;
        }
    }
}

/// What a batch (or a flush) sends: each sink's events and the dead letters, with what the
/// counters count of it.
struct Outgoing {
    routed: route::Routed,
    /// The dead letters, each with its record's position in a Kafka buffer.
    dead: Vec<(Option<sluice_buffer::Position>, serde_json::Value)>,
    /// Shares of earlier batches whose events leave with this one.
    done: Vec<sluice_buffer::Share>,
    events: u64,
    dropped: u64,
    processor_failed: u64,
    failed_to_parse: u64,
}

/// Where a batch's records sit in a Kafka buffer (`docs/design/exactly-once.md`).
#[derive(Default)]
struct Origins {
    /// Per record of the batch; empty when none has a position (a memory buffer).
    positions: Vec<Option<sluice_buffer::Position>>,
    /// The offsets the batch read, per partition, unreadable records included.
    covers: Vec<crate::sink::Span>,
}

impl Origins {
    fn of(batch: &sluice_buffer::Batch) -> Self {
        let unreadable = batch.unreadable.iter().map(|u| &u.record);
        if batch
            .records
            .iter()
            .chain(unreadable)
            .all(|r| r.position.is_none())
        {
            return Self::default();
        }
        Self {
            positions: batch.records.iter().map(|r| r.position.clone()).collect(),
            covers: batch.reads.iter().map(crate::sink::Span::of_read).collect(),
        }
    }

    /// Where the lines of `chosen` (indexes into the events, whose records `owners` names)
    /// came from: each its record's position and its rank among that record's lines here.
    fn provenance(&self, chosen: &[usize], owners: &[usize]) -> crate::sink::Provenance {
        if self.positions.is_empty() {
            return crate::sink::Provenance::default();
        }
        // Lines so far of each record.
        let mut ranks = vec![0u32; self.positions.len()];
        let at = chosen
            .iter()
            .map(|&e| {
                let owner = owners[e];
                let position = self.positions.get(owner).cloned().flatten()?;
                let rank = &mut ranks[owner];
                *rank += 1;
                Some((position, *rank - 1))
            })
            .collect();
        crate::sink::Provenance {
            at,
            covers: self.covers.clone(),
            extent: None,
        }
    }
}

/// The processors a batch goes through: the pipeline's, from its processor at index `first`.
struct Stages<'a> {
    list: &'a mut [Stage],
    first: usize,
}

/// Runs `split` through `stages`, routes it, and dead-letters what cannot be read: on the
/// blocking thread. `from` says where the batch's records came from; `replayed`, which of
/// them `sluice dlq replay` sent back.
#[expect(
    clippy::too_many_arguments,
    reason = "one call per batch and one per flush; each argument is a different part of it"
)]
fn finish(
    delivery: &Delivery,
    stages: Stages<'_>,
    mut records: Vec<RawRecord>,
    mut split: outcome::Split,
    share: &sluice_buffer::Share,
    slot: &Slot,
    from: &Origins,
    replayed: Option<&replayed::Replayed>,
) -> Outgoing {
    let pipeline = &delivery.pipeline;
    let starts = replayed.map(replayed::Replayed::starts).unwrap_or_default();
    let run = process::Run {
        pipeline,
        first: stages.first,
        starts: &starts,
        share,
        slot,
        tap: &delivery.tap,
    };
    let counts = run.stages(stages.list, &mut records, &mut split);
    let mut routed = delivery.router.route(&mut split);
    for (taken, chosen) in routed.per_sink.iter_mut().zip(&routed.chosen) {
        if let crate::sink::Take::Lines(_, provenance) = taken {
            *provenance = from.provenance(chosen, &split.owners);
        }
    }
    if delivery.tap.listening() {
        for (sink, taken) in delivery.sinks.iter().zip(&routed.per_sink) {
            if let crate::sink::Take::Lines(lines, _) = taken {
                let point = || crate::operate::tap::Point::Sink(sink.name().to_owned());
                let sample = crate::operate::tap::SAMPLE;
                delivery
                    .tap
                    .offer(point, || lines.iter().take(sample).cloned().collect());
            }
        }
    }
    let unreadable = std::mem::take(&mut split.unreadable);
    for (owner, body, reason) in &unreadable {
        let record = &records[*owner];
        tracing::debug!(pipeline, origin = %record.origin, %reason, "dead-lettering an event");
        let rejected = dlq::Rejected {
            stage: dlq::Stage::Processor {
                index: stages.first,
                // No processor after: the routes read it.
                name: stages.list.first().map_or("route", |s| s.name()),
            },
            origin: &record.origin,
            payload: body,
            key: None,
            content_type: Some("application/json"),
            received_at_ms: record.received_at_ms,
        };
        split
            .dead
            .push((*owner, dlq::entry(pipeline, rejected, reason)));
    }
    if let Some(replayed) = replayed {
        replayed.add_reasons(&mut split.dead);
    }
    let position = |record: usize| from.positions.get(record).cloned().flatten();
    Outgoing {
        events: split.event_count() as u64,
        routed,
        dead: split
            .dead
            .into_iter()
            .map(|(record, entry)| (position(record), entry))
            .collect(),
        done: split.done,
        dropped: counts.dropped,
        processor_failed: counts.failed + unreadable.len() as u64,
        failed_to_parse: 0,
    }
}

/// Counts `out`, writes its dead letters, and hands each sink its events; `share` (and the
/// shares `out` lets go) are released once every sink took them: at once for sinks that send
/// as they take, later for sinks that stage (s3, http with a threshold).
async fn deliver(
    outputs: &Delivery,
    out: Outgoing,
    share: sluice_buffer::Share,
    tally: Option<Arc<Tally>>,
) {
    let counters = &outputs.counters;
    counters.dropped.add(out.dropped);
    counters.processor_failed.add(out.processor_failed);
    counters.unrouted.add(out.routed.unrouted);
    counters.failed_to_parse.add(out.failed_to_parse);
    if !out.dead.is_empty() {
        // A batch read again after a crash dead-letters none of its records twice.
        outputs.dead_letters.write_from_until_held(&out.dead).await;
    }
    counters.dead_lettered.add(out.dead.len() as u64);
    let (n_events, done) = (out.events, out.done);
    let counters = counters.clone();
    let receipts = Receipt::split_tallied(outputs.sinks.len(), tally, move || {
        share.release();
        for s in done {
            s.release();
        }
        counters.events.add(n_events);
    });
    for ((sink, receipt), events) in outputs.sinks.iter().zip(receipts).zip(out.routed.per_sink) {
        sink.take(events, receipt).await;
    }
}

/// Where a pipeline's shutdown is, for its flusher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Running,
    /// Shutdown began (every level at once): everything held goes, every 100 ms, so the
    /// batches it holds are acknowledged and the buffers can drain (a Kafka buffer's readers
    /// end only then, and an upstream level's batches wait for what later levels hold).
    Draining,
    /// The workers have ended: a last flush, then the flusher returns.
    Last,
}

/// A pipeline's flusher, when it has stateful processors: about once a second it asks each
/// for what its time let go (a flush interval, a window, a group's duration) and sends that
/// through the stages after it to the sinks, as a worker sends a batch. From
/// [`Phase::Draining`] on it lets go of everything held, so held events reach the sinks
/// before the buffer's last commit; at [`Phase::Last`] it returns.
pub(crate) async fn flush(
    stages: Vec<Stage>,
    outputs: Arc<Delivery>,
    slot: Arc<Slot>,
    mut phase: tokio::sync::watch::Receiver<Phase>,
) {
    let mut stages = Some(stages);
    loop {
        let every = if *phase.borrow() == Phase::Running {
            std::time::Duration::from_secs(1)
        } else {
            std::time::Duration::from_millis(100)
        };
        let now = tokio::select! {
            _ = tokio::time::sleep(every) => *phase.borrow(),
            changed = phase.changed() => if changed.is_err() { Phase::Last } else { *phase.borrow() },
        };
        let all = now != Phase::Running;
        let mut list = stages
            .take()
            .expect("stages are returned after every flush");
        follow(&mut list).await;
        let delivery = outputs.clone();
        let slot = slot.clone();
        let (list, sends) = tokio::task::spawn_blocking(move || {
            let mut sends = Vec::new();
            for i in 0..list.len() {
                let Stage::Stateful(processor) = &list[i] else {
                    continue;
                };
                let processor = processor.clone();
                let out = processor.flush(std::time::Instant::now(), all);
                metrics::gauge!("sluice_processor_eventsHeld", "pipeline" => delivery.pipeline.clone(), "processor" => processor.name())
                    .set(processor.held() as f64);
                if out.events.is_empty() && out.done.is_empty() {
                    continue;
                }
                // What leaves is released with what it becomes downstream.
                let share = sluice_buffer::Acknowledgement::new(|| {}).shared();
                let mut records = Vec::new();
                let mut split = outcome::Split::default();
                let dropped = out.dropped;
                process::left(processor.name(), out, &mut records, &mut split);
                // What leaves a stateful processor has no single record: no provenance.
                let none = Origins::default();
                let mut out = finish(
                    &delivery,
                    Stages {
                        list: &mut list[i + 1..],
                        first: i + 1,
                    },
                    records,
                    split,
                    &share,
                    &slot,
                    &none,
                    None,
                );
                out.dropped += dropped;
                sends.push((out, share));
            }
            (list, sends)
        })
        .await
        .expect("the plugins do not panic: plugin faults are values");
        stages = Some(list);
        for (out, share) in sends {
            deliver(&outputs, out, share, None).await;
        }
        if now == Phase::Last {
            return;
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
