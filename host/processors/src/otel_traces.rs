//! `otel_traces`: each span gets its trace's group (`traceGroup`, `traceGroupFields`) from the
//! trace's root span, as Data Prepper's `OTelTraceRawProcessor`:
//!
//! - a root span (empty `parentSpanId`) leaves at once (with its own trace group, made from it
//!   where its source did not set one), and its trace group is remembered
//!   (`trace_group_cache_ttl`, at most `trace_group_cache_max_size` traces);
//! - a span whose trace group is remembered leaves at once, filled;
//! - any other span is held until its root arrives (then both leave, filled), or until a flush
//!   finds its trace first held at least `trace_flush_interval` ago: it then leaves as it is,
//!   without a trace group (Data Prepper logs "spans with missing trace groups").
//!
//! A held span keeps its batch's acknowledgement: a kill -9 while it waits loses nothing.
//! Past `max_held_events` held spans the traces held longest leave early, as a flush would
//! let them go. At shutdown everything held leaves.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use sluice_buffer::Share;
use sluice_config::processor::otel_traces as config;
use sluice_event::Event;

use crate::{BuildError, BuildStateful, Released, Stateful};

impl BuildStateful for config::OtelTraces {
    fn build(&self) -> Result<Box<dyn Stateful>, BuildError> {
        Ok(Box::new(OtelTraces {
            flush_interval: self.trace_flush_interval,
            cache_ttl: self.trace_group_cache_ttl,
            cache_max: usize::try_from(self.trace_group_cache_max_size).unwrap_or(usize::MAX),
            max_held: self.max_held_events,
            state: Mutex::new(State::default()),
        }))
    }
}

/// `otel_traces`, built: its options and the spans it holds, shared by the pipeline's workers.
struct OtelTraces {
    flush_interval: Duration,
    cache_ttl: Duration,
    cache_max: usize,
    max_held: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// traceId → its root's trace group, and when it was remembered.
    groups: HashMap<String, (Group, Instant)>,
    /// The remembered groups, oldest first (entries of groups replaced since are stale).
    group_order: VecDeque<(String, Instant)>,
    /// traceId → the spans held for want of its root.
    held: HashMap<String, SpanSet>,
    /// The held traces by when they were first held (and a sequence number): oldest first.
    held_order: BTreeMap<(Instant, u64), String>,
    /// The next sequence number of `held_order`.
    next: u64,
    /// How many spans `held` holds.
    held_spans: usize,
    /// When the last flush ran (`None`: never).
    last_flush: Option<Instant>,
}

/// A trace's group: its root span's name and fields.
#[derive(Debug, Clone)]
struct Group {
    name: Value,
    fields: Value,
}

/// The spans of one trace held for its root, since `seen` (its key in `held_order`).
struct SpanSet {
    seen: (Instant, u64),
    spans: Vec<(Event, Share)>,
}

impl Stateful for OtelTraces {
    fn name(&self) -> &'static str {
        "otel_traces"
    }

    fn process(&self, events: Vec<(Event, Share)>, now: Instant) -> Released {
        let mut out = Released::default();
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let state = &mut *guard;
        for (mut span, share) in events {
            let Some(trace) = text(&span, "traceId") else {
                // Not a span: nothing to wait for.
                out.events.push(span);
                out.done.push(share);
                continue;
            };
            if text(&span, "parentSpanId").is_none_or(|p| p.is_empty()) {
                let group = group_of(&span);
                state.remember(trace.clone(), group.clone(), now, self.cache_max);
                // The root's own, where its source did not set them (events not from OTLP).
                fill(&mut span, &group);
                out.events.push(span);
                out.done.push(share);
                if let Some(set) = state.take(&trace) {
                    for (mut child, share) in set.spans {
                        fill(&mut child, &group);
                        out.events.push(child);
                        out.done.push(share);
                    }
                }
            } else if let Some(group) = state.group(&trace, now, self.cache_ttl) {
                fill(&mut span, &group);
                out.events.push(span);
                out.done.push(share);
            } else {
                if !state.held.contains_key(&trace) {
                    let seen = (now, state.next);
                    state.next += 1;
                    state.held_order.insert(seen, trace.clone());
                    state.held.insert(
                        trace.clone(),
                        SpanSet {
                            seen,
                            spans: Vec::new(),
                        },
                    );
                }
                let set = state.held.get_mut(&trace).expect("inserted above");
                set.spans.push((span, share));
                state.held_spans += 1;
            }
        }
        // Bounded: the traces held longest go early, as a flush would let them go.
        while state.held_spans > self.max_held {
            let Some((_, trace)) = state.held_order.first_key_value() else {
                break;
            };
            let trace = trace.clone();
            if let Some(set) = state.take(&trace) {
                state.let_go(&trace, set, now, self.cache_ttl, &mut out);
            }
        }
        out
    }

    fn flush(&self, now: Instant, all: bool) -> Released {
        let mut out = Released::default();
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let state = &mut *guard;
        // Forgotten groups leave the cache (every call: the cache is kept to its ttl).
        while let Some((trace, at)) = state.group_order.front().cloned() {
            if now.saturating_duration_since(at) < self.cache_ttl {
                break;
            }
            state.group_order.pop_front();
            if state.groups.get(&trace).is_some_and(|(_, t)| *t == at) {
                state.groups.remove(&trace);
            }
        }
        let due = all
            || state
                .last_flush
                .is_none_or(|last| now.saturating_duration_since(last) >= self.flush_interval);
        if !due {
            return out;
        }
        state.last_flush = Some(now);
        while let Some(((seen, _), trace)) = state.held_order.first_key_value() {
            if !all && now.saturating_duration_since(*seen) < self.flush_interval {
                break;
            }
            let trace = trace.clone();
            if let Some(set) = state.take(&trace) {
                state.let_go(&trace, set, now, self.cache_ttl, &mut out);
            }
        }
        out
    }

    fn held(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .held_spans
    }
}

impl State {
    /// Takes `trace`'s held set, if any, out of `held` and `held_order`.
    fn take(&mut self, trace: &str) -> Option<SpanSet> {
        let set = self.held.remove(trace)?;
        self.held_order.remove(&set.seen);
        self.held_spans -= set.spans.len();
        Some(set)
    }

    /// Remembers `trace`'s group, forgetting the oldest past `max`.
    fn remember(&mut self, trace: String, group: Group, now: Instant, max: usize) {
        self.groups.insert(trace.clone(), (group, now));
        self.group_order.push_back((trace, now));
        while self.groups.len() > max {
            let Some((old, at)) = self.group_order.pop_front() else {
                break;
            };
            if self.groups.get(&old).is_some_and(|(_, t)| *t == at) {
                self.groups.remove(&old);
            }
        }
    }

    /// `trace`'s group, if remembered and not older than `ttl`.
    fn group(&self, trace: &str, now: Instant, ttl: Duration) -> Option<Group> {
        self.groups
            .get(trace)
            .filter(|(_, at)| now.saturating_duration_since(*at) < ttl)
            .map(|(group, _)| group.clone())
    }

    /// Lets a held set go: filled if its group is known by now, else as it is.
    fn let_go(&self, trace: &str, set: SpanSet, now: Instant, ttl: Duration, out: &mut Released) {
        let group = self.group(trace, now, ttl);
        if group.is_none() {
            tracing::warn!(
                spans = set.spans.len(),
                trace,
                "spans let go with missing trace groups (their root span did not arrive in time)"
            );
        }
        for (mut span, share) in set.spans {
            if let Some(group) = &group {
                fill(&mut span, group);
            }
            out.events.push(span);
            out.done.push(share);
        }
    }
}

/// The text at top-level `key`, if there is text there.
fn text(event: &Event, key: &str) -> Option<String> {
    event
        .data
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// A root span's trace group: as the source set it (`traceGroup`, `traceGroupFields`), else
/// made from the root as Data Prepper's codec makes it (its name; its end time, duration and
/// status code).
fn group_of(root: &Event) -> Group {
    let data = &root.data;
    let name = match data.get("traceGroup") {
        Some(Value::String(s)) => Value::String(s.clone()),
        _ => data.get("name").cloned().unwrap_or(Value::Null),
    };
    let fields = match data.get("traceGroupFields") {
        Some(Value::Object(map)) if !map.is_empty() => Value::Object(map.clone()),
        _ => {
            let status = data
                .get("status.code")
                .or_else(|| data.get("status").and_then(|s| s.get("code")))
                .cloned()
                .unwrap_or(Value::Null);
            let mut map = Map::new();
            map.insert(
                "endTime".into(),
                data.get("endTime").cloned().unwrap_or(Value::Null),
            );
            map.insert(
                "durationInNanos".into(),
                data.get("durationInNanos").cloned().unwrap_or(Value::Null),
            );
            map.insert("statusCode".into(), status);
            Value::Object(map)
        }
    };
    Group { name, fields }
}

/// Sets `span`'s trace group.
fn fill(span: &mut Event, group: &Group) {
    if let Value::Object(map) = &mut span.data {
        map.insert("traceGroup".into(), group.name.clone());
        map.insert("traceGroupFields".into(), group.fields.clone());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::{Value, json};
    use sluice_buffer::{Acknowledgement, Share};
    use sluice_event::{Event, Metadata};

    use super::*;
    use crate::testing::stateful;

    /// A batch's acknowledgement that counts how often it was acknowledged.
    fn batch() -> (Arc<AtomicUsize>, Share) {
        let acked = Arc::new(AtomicUsize::new(0));
        let a = acked.clone();
        let share = Acknowledgement::new(move || {
            a.fetch_add(1, Ordering::SeqCst);
        })
        .shared();
        (acked, share)
    }

    fn events(spans: &[Value], share: &Share) -> Vec<(Event, Share)> {
        spans
            .iter()
            .map(|s| {
                (
                    Event::new(s.clone(), Metadata::new("TRACE", 0)),
                    share.share(),
                )
            })
            .collect()
    }

    fn span(trace: &str, id: &str, parent: &str) -> Value {
        json!({"traceId": trace, "spanId": id, "parentSpanId": parent, "name": format!("op-{id}"),
               "endTime": "2020-08-20T05:40:43.217170200Z", "durationInNanos": 5, "status.code": 0})
    }

    /// Releases what left, as the sinks would once they took it.
    fn taken(out: Released) -> Vec<Value> {
        for share in out.done {
            share.release();
        }
        out.events.into_iter().map(|e| e.data).collect()
    }

    #[test]
    fn the_documented_cases_of_data_preppers_tests() {
        let cases: Vec<Value> = serde_json::from_str(
            &std::fs::read_to_string(crate::conformance("otel_traces")).unwrap(),
        )
        .unwrap();
        assert_eq!(cases.len(), 3);
        for case in cases {
            let p = stateful(&case["processor"].to_string());
            let start = Instant::now();
            let (acked, first) = batch();
            let mut got = Vec::new();
            for spans in case["batches"].as_array().unwrap() {
                let share = first.share();
                got.extend(taken(
                    p.process(events(spans.as_array().unwrap(), &share), start),
                ));
                share.release();
            }
            if let Some(after) = case["flush_after_seconds"].as_u64() {
                assert!(
                    taken(p.flush(start, false)).is_empty(),
                    "{}: too early",
                    case["id"]
                );
                got.extend(taken(p.flush(start + Duration::from_secs(after), false)));
            }
            first.release();
            assert_eq!(Value::Array(got), case["outputs"], "{}", case["id"]);
            assert_eq!(p.held(), 0);
            assert_eq!(
                acked.load(Ordering::SeqCst),
                1,
                "{}: acknowledged",
                case["id"]
            );
        }
    }

    #[test]
    fn a_held_span_holds_its_batchs_acknowledgement_until_its_root_leaves() {
        let p = stateful("otel_traces:");
        let now = Instant::now();
        let (acked, first) = batch();
        let out = p.process(events(&[span("t", "c", "r")], &first), now);
        first.release();
        assert!(taken(out).is_empty());
        assert_eq!(
            (p.held(), acked.load(Ordering::SeqCst)),
            (1, 0),
            "the child waits, and its batch with it"
        );
        let (acked2, second) = batch();
        let out = taken(p.process(events(&[span("t", "r", "")], &second), now));
        second.release();
        assert_eq!(out.len(), 2);
        assert_eq!(out[1]["traceGroup"], "op-r");
        assert_eq!(
            out[1]["traceGroupFields"],
            json!({"endTime": "2020-08-20T05:40:43.217170200Z", "durationInNanos": 5, "statusCode": 0})
        );
        assert_eq!(
            acked.load(Ordering::SeqCst) + acked2.load(Ordering::SeqCst),
            2
        );
    }

    #[test]
    fn a_group_is_remembered_for_its_ttl_then_late_spans_wait() {
        let p = stateful("otel_traces:\n  trace_group_cache_ttl: PT15S");
        let now = Instant::now();
        let (_, share) = batch();
        taken(p.process(events(&[span("t", "r", "")], &share), now));
        let soon = taken(p.process(
            events(&[span("t", "a", "r")], &share),
            now + Duration::from_secs(14),
        ));
        assert_eq!(soon[0]["traceGroup"], "op-r");
        let late = taken(p.process(
            events(&[span("t", "b", "r")], &share),
            now + Duration::from_secs(16),
        ));
        assert!(late.is_empty(), "its root's group was forgotten: it waits");
        assert_eq!(p.held(), 1);
        share.release();
    }

    #[test]
    fn past_max_held_events_the_oldest_traces_leave_without_a_group() {
        let p = stateful("otel_traces:\n  max_held_events: 2");
        let now = Instant::now();
        let (_, share) = batch();
        let out = taken(p.process(
            events(
                &[
                    span("t1", "a", "x"),
                    span("t2", "b", "x"),
                    span("t3", "c", "x"),
                ],
                &share,
            ),
            now,
        ));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["traceId"], "t1");
        assert_eq!(out[0].get("traceGroup"), None);
        assert_eq!(p.held(), 2);
        let rest = taken(p.flush(now, true));
        assert_eq!(rest.len(), 2, "shutdown lets everything go");
        assert_eq!(p.held(), 0);
        share.release();
    }

    #[test]
    fn events_that_are_not_spans_pass() {
        let p = stateful("otel_traces:");
        let (acked, share) = batch();
        let out = taken(p.process(events(&[json!({"message": "hi"})], &share), Instant::now()));
        share.release();
        assert_eq!(out, [json!({"message": "hi"})]);
        assert_eq!(acked.load(Ordering::SeqCst), 1);
    }
}
