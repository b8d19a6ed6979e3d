//! The processor stages: each processor of the pipeline (see [`crate::processor`]), in order,
//! over the events a batch deserialized into.
//!
//! - A run of consecutive built-in processors works on the events parsed once (`Split::parsed`):
//!   each processor changes an event in place, drops it (counted) or splits it into several
//!   (`split_event`: they keep its record).
//! - A plugin processor works on the events' text: an event it keeps stays as it was; one it
//!   replaces becomes the events it returned (each checked: one JSON object, made one line,
//!   with the metadata of the event it came from); one it drops is gone; one it fails (or
//!   traps on) goes to the dead-letter file with the processor's name and reason. A 0.3
//!   plugin also sees each event's metadata, and what it sets replaces it (`metadata`).
//!
//! Runs on the worker's blocking thread, right after the deserializer.

use std::borrow::Cow;
use std::time::Instant;

use serde_json::Value;
use sluice_buffer::Share;
use sluice_event::Metadata;
use sluice_plugin::{Event, EventMetadata, Processed, RawRecord};

use super::outcome::{Split, append_events};
use crate::processor::{Process, Stage};
use crate::sink::dlq::{self, Rejected};
use crate::watchdog::Slot;

/// What the stages did to a batch, for the counters.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct StageCounts {
    /// Events a processor dropped on purpose.
    pub(crate) dropped: u64,
    /// Events a processor failed or trapped on (dead-lettered).
    pub(crate) failed: u64,
}

/// What a batch's run through the stages needs besides its events.
pub(crate) struct Run<'a> {
    pub(crate) pipeline: &'a str,
    /// The index of the first stage given in the pipeline's processor list.
    pub(crate) first: usize,
    /// Per record, the index of the first processor its events go through (a replayed event
    /// joins at the processor that failed it); empty: all go through every stage.
    pub(crate) starts: &'a [usize],
    /// The batch's acknowledgement, of which a stateful stage keeps a share per event it keeps.
    pub(crate) share: &'a Share,
    pub(crate) slot: &'a Slot,
    /// Where `sluice tap` listens to what each stage leaves.
    pub(crate) tap: &'a crate::operate::tap::Tap,
}

impl Run<'_> {
    /// Runs `split`'s events through every stage in order, in place. `records` are the batch's
    /// records (each event's `split.owners` entry names its record).
    pub(crate) fn stages(
        &self,
        stages: &mut [Stage],
        records: &mut Vec<RawRecord>,
        split: &mut Split,
    ) -> StageCounts {
        let mut done = StageCounts::default();
        for (i, stage) in stages.iter_mut().enumerate() {
            let index = self.first + i;
            if split.event_count() == 0 {
                break;
            }
            // Replayed events that join later wait out this stage.
            let waiting = if self.starts.is_empty() {
                None
            } else {
                split.hold(|owner| self.starts.get(owner).is_some_and(|&s| s > index))
            };
            if split.event_count() > 0 {
                self.stage(index, stage, records, split, &mut done);
                self.tap.offer(
                    || crate::operate::tap::Point::Processor(stage.name().to_owned()),
                    || split.sample(crate::operate::tap::SAMPLE),
                );
            }
            if let Some(waiting) = waiting {
                split.restore(waiting);
            }
        }
        done
    }

    /// One stage over `split`'s events.
    fn stage(
        &self,
        index: usize,
        stage: &mut Stage,
        records: &mut Vec<RawRecord>,
        split: &mut Split,
        done: &mut StageCounts,
    ) {
        let (pipeline, share, slot) = (self.pipeline, self.share, self.slot);
        match stage {
            Stage::Builtin(processor) => {
                done.dropped += run_builtin(&**processor, split);
            }
            Stage::Stateful(processor) => {
                let events = std::mem::take(split.parsed());
                split.owners.clear();
                // What an earlier stateful stage let go may be kept by this one: the shares it
                // carries go with the events, released only once all of them left this one too.
                let (mine, carried) = (share.share(), std::mem::take(&mut split.done));
                let group = sluice_buffer::Acknowledgement::new(move || {
                    mine.release();
                    for s in carried {
                        s.release();
                    }
                })
                .shared();
                let input = events.into_iter().map(|e| (e, group.share())).collect();
                let out = processor.process(input, Instant::now());
                group.release();
                done.dropped += out.dropped;
                left(processor.name(), out, records, split);
            }
            Stage::Plugin(stage) => {
                let counts = run_plugin(pipeline, index, &mut **stage, records, split, slot);
                done.dropped += counts.dropped;
                done.failed += counts.failed;
            }
        }
    }
}

/// What `processor` let go becomes `split`'s events (and their shares its `done`). An event that
/// leaves a stateful processor may be from an earlier batch: each gets a record of its own
/// (origin: the processor) for the stages after it.
pub(crate) fn left(
    processor: &str,
    out: sluice_processors::Released,
    records: &mut Vec<RawRecord>,
    split: &mut Split,
) {
    split.owners.clear();
    for event in &out.events {
        split.owners.push(records.len());
        records.push(RawRecord {
            payload: Vec::new(),
            key: None,
            received_at_ms: event.metadata.time_received_ms,
            origin: format!("processor {processor}"),
        });
    }
    split.parsed = Some(out.events);
    split.done.extend(out.done);
}

/// One built-in over the parsed events; returns how many it dropped.
fn run_builtin(processor: &dyn sluice_processors::Processor, split: &mut Split) -> u64 {
    let events = std::mem::take(split.parsed());
    processor.batch();
    let mut kept = Vec::with_capacity(events.len());
    let mut owners = Vec::with_capacity(events.len());
    let mut dropped = 0;
    for (mut event, &owner) in events.into_iter().zip(&split.owners) {
        match processor.process(&mut event) {
            sluice_processors::Fate::Keep => {
                kept.push(event);
                owners.push(owner);
            }
            sluice_processors::Fate::Drop => dropped += 1,
            // The events split off keep their record's provenance.
            sluice_processors::Fate::Split(before) => {
                owners.extend(std::iter::repeat_n(owner, before.len() + 1));
                kept.extend(before);
                kept.push(event);
            }
        }
    }
    split.owners = owners;
    split.parsed = Some(kept);
    dropped
}

/// One plugin over the events' text.
fn run_plugin(
    pipeline: &str,
    index: usize,
    stage: &mut dyn Process,
    records: &[RawRecord],
    split: &mut Split,
    slot: &Slot,
) -> StageCounts {
    let mut done = StageCounts::default();
    let name = stage.name().to_owned();
    let count = split.event_count();
    split.lines();
    let (text, metadata) = (&split.events, &split.metadata);
    let bodies: Vec<&[u8]> = crate::sink::split_lines(text).take(count).collect();
    let seen: Vec<EventMetadata> = if stage.sees_metadata() {
        metadata.iter().map(to_plugin).collect()
    } else {
        Vec::new()
    };
    let events: Vec<Event<'_>> = bodies
        .iter()
        .zip(&split.owners)
        .enumerate()
        .map(|(i, (body, &owner))| Event {
            body,
            received_at_ms: records[owner].received_at_ms,
            origin: &records[owner].origin,
            metadata: seen.get(i),
        })
        .collect();
    if let Some(deadline) = stage.deadline() {
        slot.enter(&name, "processor", deadline);
    }
    let results = stage.process(&events);
    slot.leave();
    let mut lines = Vec::with_capacity(text.len());
    let mut owners = Vec::with_capacity(split.owners.len());
    let mut kept_metadata = Vec::with_capacity(split.owners.len());
    let mut dead: Vec<(usize, Value)> = Vec::new();
    let reject = |event: &Event<'_>,
                  owner: usize,
                  reason: String,
                  dead: &mut Vec<(usize, Value)>| {
        tracing::debug!(pipeline, processor = %name, origin = %event.origin, %reason, "dead-lettering an event");
        let rejected = Rejected {
            stage: dlq::Stage::Processor { index, name: &name },
            origin: event.origin,
            payload: event.body,
            key: None,
            content_type: Some("application/json"),
            received_at_ms: event.received_at_ms,
        };
        dead.push((owner, dlq::entry(pipeline, rejected, &reason)));
    };
    for (((event, &owner), result), meta) in
        events.iter().zip(&split.owners).zip(results).zip(metadata)
    {
        // What a 0.3 plugin set replaces the event's metadata.
        let meta = match &result {
            Processed::Keep(Some(set)) | Processed::Replace(_, Some(set)) => {
                match from_plugin(meta, set) {
                    Ok(new) => Cow::Owned(new),
                    Err(reason) => {
                        reject(
                            event,
                            owner,
                            format!("processor `{name}` set metadata: {reason}"),
                            &mut dead,
                        );
                        continue;
                    }
                }
            }
            _ => Cow::Borrowed(meta),
        };
        match result {
            Processed::Keep(_) => {
                lines.extend_from_slice(event.body);
                lines.push(b'\n');
                owners.push(owner);
                kept_metadata.push(meta.into_owned());
            }
            Processed::Drop => done.dropped += 1,
            Processed::Replace(replacement, _) => {
                let mark = lines.len();
                match append_events(&replacement, &mut lines) {
                    Ok(()) => {
                        owners.extend(std::iter::repeat_n(owner, replacement.len()));
                        kept_metadata
                            .extend(std::iter::repeat_n(meta.into_owned(), replacement.len()));
                    }
                    Err(reason) => {
                        lines.truncate(mark);
                        reject(
                            event,
                            owner,
                            format!("processor `{name}`: {reason}"),
                            &mut dead,
                        );
                    }
                }
            }
            Processed::Failed(reason) => reject(
                event,
                owner,
                format!("processor `{name}` failed: {reason}"),
                &mut dead,
            ),
            Processed::Trapped(reason) => reject(
                event,
                owner,
                format!("processor `{name}` trapped: {reason}"),
                &mut dead,
            ),
        }
    }
    done.failed = dead.len() as u64;
    split.owners = owners;
    split.events = lines;
    split.metadata = kept_metadata;
    split.dead.extend(dead);
    done
}

/// An event's metadata as a 0.3 plugin sees it (attributes as JSON text).
fn to_plugin(metadata: &Metadata) -> EventMetadata {
    EventMetadata {
        event_type: metadata.event_type.to_string(),
        tags: metadata.tags.clone(),
        attributes: Value::Object(metadata.attributes.clone()).to_string(),
    }
}

/// `old` with what a 0.3 plugin `set`: its event type, tags (each kept once) and attributes,
/// which must be one JSON object. The times stay the host's.
fn from_plugin(old: &Metadata, set: &EventMetadata) -> Result<Metadata, String> {
    let attributes = match serde_json::from_str::<Value>(&set.attributes) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            return Err(format!(
                "`attributes` must be one JSON object, got `{other}`"
            ));
        }
        Err(e) => return Err(format!("`attributes` is not JSON: {e}")),
    };
    let event_type = if old.event_type == set.event_type {
        old.event_type.clone()
    } else {
        Cow::Owned(set.event_type.clone())
    };
    let mut new = Metadata {
        event_type,
        time_received_ms: old.time_received_ms,
        attributes,
        tags: Vec::with_capacity(set.tags.len()),
        external_origination_time_ms: old.external_origination_time_ms,
    };
    new.add_tags(&set.tags);
    Ok(new)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use sluice_buffer::Acknowledgement;
    use sluice_processors::{Released, Stateful};

    use super::*;

    /// Keeps what it is given; `flush(_, true)` or its next `process` lets it go.
    #[derive(Default)]
    struct Keeps(Mutex<Vec<(sluice_event::Event, Share)>>, bool);

    impl Stateful for Keeps {
        fn name(&self) -> &'static str {
            "keeps"
        }
        fn process(&self, events: Vec<(sluice_event::Event, Share)>, _: Instant) -> Released {
            let mut held = self.0.lock().unwrap();
            let mut out = Released::default();
            if self.1 {
                // Lets go of the earlier batch's events as this one's come in.
                for (e, s) in held.drain(..) {
                    out.events.push(e);
                    out.done.push(s);
                }
            }
            held.extend(events);
            out
        }
        fn flush(&self, _: Instant, all: bool) -> Released {
            let mut out = Released::default();
            if all {
                for (e, s) in self.0.lock().unwrap().drain(..) {
                    out.events.push(e);
                    out.done.push(s);
                }
            }
            out
        }
        fn held(&self) -> usize {
            self.0.lock().unwrap().len()
        }
    }

    fn run<'a>(share: &'a Share, slot: &'a Slot, starts: &'a [usize]) -> Run<'a> {
        Run {
            pipeline: "p",
            first: 0,
            starts,
            share,
            slot,
            tap: &TAP,
        }
    }

    static TAP: std::sync::LazyLock<crate::operate::tap::Tap> =
        std::sync::LazyLock::new(crate::operate::tap::Tap::default);

    /// Appends its name to the event's `seen` list.
    struct Mark(&'static str);

    impl sluice_processors::Processor for Mark {
        fn name(&self) -> &'static str {
            self.0
        }
        fn process(&self, event: &mut sluice_event::Event) -> sluice_processors::Fate {
            let seen = event.data.as_object_mut().unwrap().entry("seen");
            let seen = seen.or_insert_with(|| serde_json::json!([]));
            seen.as_array_mut().unwrap().push(self.0.into());
            sluice_processors::Fate::Keep
        }
    }

    /// A replayed event that a processor failed joins at that processor: the ones before it
    /// do not run on it again, and the batch's other events go through all of them.
    #[test]
    fn a_replayed_event_skips_the_processors_before_the_one_that_failed_it() {
        let mut stages = vec![
            Stage::Builtin(Arc::new(Mark("a"))),
            Stage::Builtin(Arc::new(Mark("b"))),
            Stage::Builtin(Arc::new(Mark("c"))),
        ];
        let slot = crate::watchdog::Watchdog::default().slot("p", 0);
        let share = Acknowledgement::new(|| {}).shared();
        let (mut records, mut s) = split(3);
        run(&share, &slot, &[0, 2, 1]).stages(&mut stages, &mut records, &mut s);
        let events = s.parsed().clone();
        let mut seen: Vec<(usize, serde_json::Value)> = events
            .iter()
            .zip(&s.owners)
            .map(|(e, &owner)| (owner, e.data["seen"].clone()))
            .collect();
        seen.sort_by_key(|(owner, _)| *owner);
        assert_eq!(
            seen,
            [
                (0, serde_json::json!(["a", "b", "c"])),
                (1, serde_json::json!(["c"])),
                (2, serde_json::json!(["b", "c"])),
            ]
        );
        share.release();
    }

    fn batch(acked: &Arc<AtomicUsize>) -> Share {
        let a = acked.clone();
        Acknowledgement::new(move || {
            a.fetch_add(1, Ordering::SeqCst);
        })
        .shared()
    }

    fn split(n: usize) -> (Vec<RawRecord>, Split) {
        let mut s = Split::default();
        let events = (0..n)
            .map(|i| sluice_event::Event::new(serde_json::json!({"i": i}), Metadata::new("LOG", 0)))
            .collect();
        s.parsed = Some(events);
        s.owners = (0..n).collect();
        let records = (0..n)
            .map(|_| RawRecord {
                payload: Vec::new(),
                key: None,
                received_at_ms: 0,
                origin: "t".into(),
            })
            .collect();
        (records, s)
    }

    /// Two stateful stages: what the first lets go of an earlier batch and the second keeps
    /// keeps that batch unacknowledged (its shares travel with the events, not with the batch
    /// they leave in).
    #[test]
    fn a_batch_stays_unacknowledged_while_a_later_stateful_stage_keeps_its_events() {
        let first = Arc::new(Keeps(Mutex::default(), true));
        let second = Arc::new(Keeps::default());
        let mut stages = vec![
            Stage::Stateful(first.clone()),
            Stage::Stateful(second.clone()),
        ];
        let slot = crate::watchdog::Watchdog::default().slot("p", 0);
        let (one, two) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        for acked in [&one, &two] {
            let share = batch(acked);
            let (mut records, mut s) = split(2);
            run(&share, &slot, &[]).stages(&mut stages, &mut records, &mut s);
            // Delivered: the batch's own share and what left with it are released.
            share.release();
            for d in std::mem::take(&mut s.done) {
                d.release();
            }
        }
        assert_eq!(
            second.held(),
            2,
            "batch one's events, let go by the first stage"
        );
        assert_eq!(
            one.load(Ordering::SeqCst),
            0,
            "batch one's events are still kept"
        );
        for d in second.flush(Instant::now(), true).done {
            d.release();
        }
        assert_eq!(one.load(Ordering::SeqCst), 1);
        assert_eq!(
            two.load(Ordering::SeqCst),
            0,
            "batch two's are in the first stage"
        );
        for d in first.flush(Instant::now(), true).done {
            d.release();
        }
        assert_eq!(two.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn metadata_a_plugin_sets_replaces_the_events_but_keeps_the_hosts_times() {
        let mut old = Metadata::new("LOG", 7);
        old.external_origination_time_ms = Some(-1);
        old.add_tag("a");
        let seen = to_plugin(&old);
        assert_eq!(
            (
                seen.event_type.as_str(),
                &seen.tags[..],
                seen.attributes.as_str()
            ),
            ("LOG", &["a".to_owned()][..], "{}")
        );
        let set = |attributes: &str| EventMetadata {
            event_type: "TRACE".into(),
            tags: vec!["b".into(), "a".into(), "b".into()],
            attributes: attributes.into(),
        };
        let new = from_plugin(&old, &set(r#"{"k":1}"#)).unwrap();
        assert_eq!(new.event_type, "TRACE");
        assert_eq!(new.tags, ["b", "a"], "each tag once, in order");
        assert_eq!(new.attributes["k"], 1);
        assert_eq!(
            (new.time_received_ms, new.external_origination_time_ms),
            (7, Some(-1))
        );
        assert_eq!(
            from_plugin(&old, &set("[1]")).unwrap_err(),
            "`attributes` must be one JSON object, got `[1]`"
        );
        assert!(
            from_plugin(&old, &set("{"))
                .unwrap_err()
                .starts_with("`attributes` is not JSON: ")
        );
    }
}
