//! `service_map` (deprecated name `service_map_stateful`): OpenTelemetry spans in, the
//! relationships of a service map out, as Data Prepper's `ServiceMapStatefulProcessor`.
//!
//! Spans are consumed: each one with a `serviceName` is remembered (its service, parent, trace,
//! kind and name) in the current of two windows, a root span's name as its trace's group, and
//! `(traceId, serviceName)` as a possibly isolated service. Once a window (`window_duration`)
//! has passed, at the next batch or flush, every span of the previous and current windows whose
//! parent (in either) belongs to another service makes two relationships:
//!
//! - the parent's service calls the child's (`serviceName`, `kind` of the parent, `destination`
//!   = `{resource: child's name, domain: child's service}`),
//! - the child's service is called (`serviceName`, `kind` of the child, `target` = the same
//!   endpoint),
//!
//! both with the trace's group (`traceGroupName`, null when neither window holds the root).
//! Services of the previous window that took part in no relationship come out alone (`kind`,
//! `destination`, `target` null). Each relationship carries Data Prepper's `hashId`
//! (Base64(MD5) of its fields) and comes out once per process: Data Prepper remembers every
//! relationship it emitted and never emits it again. Then the windows rotate: the current one
//! becomes the previous one, and the previous one's spans leave (their shares are released with
//! that evaluation's relationships). A span thus takes part in two evaluations.
//!
//! At shutdown (`flush(_, true)`) the windows are evaluated once more, as after Data Prepper's
//! `prepareForShutdown`, and every span leaves; as there, services isolated in the last window
//! do not come out (isolated services come only from the previous window).
//!
//! Where Data Prepper keeps the windows in MapDB files (`db_path`), sluice keeps them in memory,
//! bounded by `max_held_events`: past it, the windows are evaluated and rotated early.
//! Where Data Prepper's workers each evaluate a shard of the windows and meet at a barrier,
//! sluice's workers share one state under a lock; the outcome is the same.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use md5::{Digest as _, Md5};
use serde_json::{Value, json};
use sluice_buffer::Share;
use sluice_config::processor::service_map::ServiceMap as Config;
use sluice_event::{Event, Metadata};

use crate::{BuildError, BuildStateful, Released, Stateful, java_string};

/// Data Prepper's `EVENT_TYPE` for the relationships (`getEventType()` is `event`).
const EVENT_TYPE: &str = "event";

/// How many distinct relationships are remembered so each comes out once. Data Prepper's
/// `RELATIONSHIP_STATE` grows for the life of the process; sluice forgets them all when it is
/// full, so a relationship seen again after that comes out again. That is harmless: an
/// `opensearch` sink with `index_type: trace-analytics-service-map` uses `hashId` as the
/// document id (Data Prepper's `IndexConfiguration`), so a repeat replaces its document.
const MAX_RELATIONSHIPS: usize = 100_000;

impl BuildStateful for Config {
    fn build(&self) -> Result<Box<dyn Stateful>, BuildError> {
        Ok(Box::new(ServiceMap::new(self, Instant::now())))
    }
}

/// The processor: its options and the windows, shared by the pipeline's workers.
pub(crate) struct ServiceMap {
    window: Duration,
    max_held: usize,
    state: Mutex<State>,
}

impl ServiceMap {
    /// A processor whose first window starts at `now`.
    fn new(config: &Config, now: Instant) -> Self {
        Self {
            window: config.window_duration,
            max_held: config.max_held_events,
            state: Mutex::new(State {
                previous: Window::default(),
                current: Window::default(),
                rotated: now,
                seen: HashSet::new(),
                order: 0,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Stateful for ServiceMap {
    fn name(&self) -> &'static str {
        "service_map"
    }

    fn process(&self, events: Vec<(Event, Share)>, now: Instant) -> Released {
        let mut state = self.state();
        // Data Prepper evaluates at the start of `doExecute`, before taking the batch.
        let mut out = if state.due(now, self.window) {
            state.evaluate(now)
        } else {
            Released::default()
        };
        for (event, share) in events {
            let Some(span) = Span::read(&event) else {
                // Consumed, and nothing of it kept.
                out.done.push(share);
                continue;
            };
            while state.held() >= self.max_held {
                tracing::debug!(
                    max_held_events = self.max_held,
                    "service_map holds its most spans; evaluating and rotating the windows early"
                );
                out.extend(state.evaluate(now));
            }
            state.add(span, share);
        }
        out
    }

    fn flush(&self, now: Instant, all: bool) -> Released {
        let mut state = self.state();
        if all {
            // Data Prepper's `prepareForShutdown` forces one more evaluation; then its windows
            // are deleted.
            let mut out = state.evaluate(now);
            out.done.append(&mut state.previous.shares);
            state.previous = Window::default();
            return out;
        }
        if state.due(now, self.window) {
            state.evaluate(now)
        } else {
            Released::default()
        }
    }

    fn held(&self) -> usize {
        self.state().held()
    }
}

/// The two windows and what came out.
struct State {
    previous: Window,
    current: Window,
    /// When the windows last rotated (Data Prepper's `previousTimestamp`).
    rotated: Instant,
    /// The relationships that came out (Data Prepper's `RELATIONSHIP_STATE`), at most
    /// [`MAX_RELATIONSHIPS`].
    seen: HashSet<Relationship>,
    /// Counts the isolated services added, to emit them in the order they came.
    order: u64,
}

impl State {
    /// The spans whose shares are kept.
    fn held(&self) -> usize {
        self.previous.shares.len() + self.current.shares.len()
    }

    /// Whether a window has passed since the last rotation.
    fn due(&self, now: Instant, window: Duration) -> bool {
        now.saturating_duration_since(self.rotated) >= window
    }

    /// Puts `span` in the current window, which keeps its share.
    fn add(&mut self, span: Span, share: Share) {
        self.order += 1;
        let current = &mut self.current;
        current.isolated.entry(span.node).or_insert(self.order);
        if let Some((id, data)) = span.record {
            match current.by_id.get(&id) {
                Some(&i) => current.spans[i] = data,
                None => {
                    current.by_id.insert(id, current.spans.len());
                    current.spans.push(data);
                }
            }
        }
        if let Some((trace_id, name)) = span.trace_group {
            current.trace_groups.insert(trace_id, name);
        }
        current.shares.push(share);
    }

    /// Data Prepper's `evaluateEdges`: the new relationships of both windows' spans, and the
    /// previous window's isolated services; then the windows rotate and the previous
    /// window's spans leave.
    fn evaluate(&mut self, now: Instant) -> Released {
        let mut found = Vec::new();
        let mut linked = Vec::new();
        for child in self.previous.spans.iter().chain(&self.current.spans) {
            let Some(parent_id) = &child.parent_span_id else {
                continue;
            };
            let Some(parent) = self
                .current
                .get(parent_id)
                .or_else(|| self.previous.get(parent_id))
            else {
                continue;
            };
            if parent.service_name == child.service_name {
                continue;
            }
            let group = self.trace_group(&child.trace_id);
            linked.push((parent.trace_id.clone(), parent.service_name.clone()));
            linked.push((parent.trace_id.clone(), child.service_name.clone()));
            found.push(Relationship::destination(parent, child, group.clone()));
            found.push(Relationship::target(child, group));
        }
        for node in &linked {
            self.previous.isolated.remove(node);
            self.current.isolated.remove(node);
        }
        let mut isolated: Vec<_> = self.previous.isolated.iter().collect();
        isolated.sort_by_key(|&(_, order)| *order);
        for ((trace_id, service_name), _) in isolated {
            found.push(Relationship::isolated(
                service_name,
                self.trace_group(trace_id),
            ));
        }
        let time_received_ms = u64::try_from(chrono::Utc::now().timestamp_millis()).unwrap_or(0);
        let events: Vec<Event> = found
            .into_iter()
            .filter(|r| self.first_time(r))
            .map(|r| Event::new(r.to_json(), Metadata::new(EVENT_TYPE, time_received_ms)))
            .collect();
        tracing::debug!(
            relationships = events.len(),
            "service_map evaluated its windows"
        );
        let done = std::mem::take(&mut self.previous.shares);
        self.previous = std::mem::take(&mut self.current);
        self.rotated = now;
        Released {
            events,
            done,
            dropped: 0,
        }
    }

    /// The name of `trace_id`'s root span, from the current window, else the previous one.
    fn trace_group(&self, trace_id: &str) -> Option<String> {
        self.current
            .trace_groups
            .get(trace_id)
            .or_else(|| self.previous.trace_groups.get(trace_id))
            .cloned()
    }

    /// Whether `relationship` has not come out before (and now has).
    fn first_time(&mut self, relationship: &Relationship) -> bool {
        if self.seen.contains(relationship) {
            return false;
        }
        if self.seen.len() >= MAX_RELATIONSHIPS {
            tracing::warn!(
                max = MAX_RELATIONSHIPS,
                "service_map forgets the relationships it emitted: those seen again come out again"
            );
            self.seen.clear();
        }
        self.seen.insert(relationship.clone());
        true
    }
}

/// The spans of one window (Data Prepper's span and trace group "databases" and isolated
/// service nodes), with the shares of the events that made it.
#[derive(Default)]
struct Window {
    /// In the order they came; a span id seen again replaces its span, in place.
    spans: Vec<SpanData>,
    /// Span id (lowercase hex) → its index in `spans`.
    by_id: HashMap<String, usize>,
    /// Trace id → its root span's name.
    trace_groups: HashMap<String, String>,
    /// `(traceId, serviceName)` of every span, until a relationship links it; the number
    /// orders them as they came.
    isolated: HashMap<(String, String), u64>,
    shares: Vec<Share>,
}

impl Window {
    fn get(&self, span_id: &str) -> Option<&SpanData> {
        self.by_id.get(span_id).map(|&i| &self.spans[i])
    }
}

/// What a window keeps of a span (Data Prepper's `ServiceMapStateData`). Ids are lowercase
/// hex, as Data Prepper compares them decoded.
struct SpanData {
    service_name: String,
    /// None for a root span.
    parent_span_id: Option<String>,
    trace_id: String,
    kind: Option<String>,
    name: Option<String>,
}

/// A span read from an event, as Data Prepper's `processSpan` takes it apart.
struct Span {
    /// `(traceId, serviceName)`, a possibly isolated service.
    node: (String, String),
    /// Span id and what is kept; none when the span or parent id is not hex (Data Prepper
    /// logs it and keeps only the service node and trace group).
    record: Option<(String, SpanData)>,
    /// For a root span (empty `parentSpanId`) with a name: trace id and that name.
    trace_group: Option<(String, String)>,
}

impl Span {
    /// The span `event` holds, with keys as Data Prepper's `otel_trace_source` writes them
    /// (`JacksonSpan`); none for an event without `serviceName` (ignored, as Data Prepper
    /// does) or without a hex `traceId` (logged, as Data Prepper does). A missing
    /// `parentSpanId` is a root's empty one (Data Prepper's spans always have it).
    fn read(event: &Event) -> Option<Self> {
        let text = |key: &str| java_string(event.data.get(key)).ok().flatten();
        // `JacksonSpan.getServiceName`: the metadata attribute first (`output_format: otel`).
        let service_name = java_string(event.metadata.attributes.get("serviceName"))
            .ok()
            .flatten()
            .or_else(|| text("serviceName"))?;
        let Some(trace_id) = text("traceId").as_deref().and_then(hex) else {
            tracing::debug!(
                trace_id = ?event.data.get("traceId"),
                "service_map: an event without a hex `traceId` is ignored"
            );
            return None;
        };
        let parent = text("parentSpanId").unwrap_or_default();
        let name = text("name");
        let parent_span_id = if parent.is_empty() {
            Some(None)
        } else {
            hex(&parent).map(Some)
        };
        let record = match (text("spanId").as_deref().and_then(hex), parent_span_id) {
            (Some(span_id), Some(parent_span_id)) => Some((
                span_id,
                SpanData {
                    service_name: service_name.clone(),
                    parent_span_id,
                    trace_id: trace_id.clone(),
                    kind: text("kind"),
                    name: name.clone(),
                },
            )),
            _ => {
                tracing::debug!(
                    span_id = ?event.data.get("spanId"),
                    parent_span_id = parent,
                    "service_map: a span whose `spanId` or `parentSpanId` is not hex is not kept"
                );
                None
            }
        };
        let trace_group = match name {
            Some(name) if parent.is_empty() => Some((trace_id.clone(), name)),
            _ => None,
        };
        Some(Self {
            node: (trace_id, service_name),
            record,
            trace_group,
        })
    }
}

/// `text` as Apache Commons' `Hex.decodeHex` reads it (an even number of hex digits, either
/// case), as lowercase hex; none if it is not.
fn hex(text: &str) -> Option<String> {
    (text.len().is_multiple_of(2) && text.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| text.to_ascii_lowercase())
}

/// Data Prepper's `ServiceMapRelationship`: equal when every field is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Relationship {
    service_name: String,
    kind: Option<String>,
    destination: Option<Endpoint>,
    target: Option<Endpoint>,
    trace_group_name: Option<String>,
}

/// Data Prepper's `ServiceMapRelationship.Endpoint`: an operation (`resource`) of a service
/// (`domain`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Endpoint {
    resource: Option<String>,
    domain: String,
}

impl Relationship {
    /// `newDestinationRelationship`: `parent`'s service calls `child`'s operation.
    fn destination(parent: &SpanData, child: &SpanData, group: Option<String>) -> Self {
        Self {
            service_name: parent.service_name.clone(),
            kind: parent.kind.clone(),
            destination: Some(Endpoint::of(child)),
            target: None,
            trace_group_name: group,
        }
    }

    /// `newTargetRelationship`: `child`'s operation is its service's.
    fn target(child: &SpanData, group: Option<String>) -> Self {
        Self {
            service_name: child.service_name.clone(),
            kind: child.kind.clone(),
            destination: None,
            target: Some(Endpoint::of(child)),
            trace_group_name: group,
        }
    }

    /// `newIsolatedService`: a service that called and was called by no other.
    fn isolated(service_name: &str, group: Option<String>) -> Self {
        Self {
            service_name: service_name.to_owned(),
            kind: None,
            destination: None,
            target: None,
            trace_group_name: group,
        }
    }

    /// Data Prepper's `md5Hash`: Base64(MD5(`serviceName,kind,traceGroupName,` +
    /// `target.resource,target.domain` + `,` + `destination.resource,destination.domain`)),
    /// a missing value written `null` as Java's string concatenation does.
    fn hash_id(&self) -> String {
        fn or_null(text: Option<&str>) -> &str {
            text.unwrap_or("null")
        }
        fn endpoint(e: Option<&Endpoint>) -> String {
            e.map(|e| format!("{},{}", or_null(e.resource.as_deref()), e.domain))
                .unwrap_or_default()
        }
        let unhashed = format!(
            "{},{},{},{},{}",
            self.service_name,
            or_null(self.kind.as_deref()),
            or_null(self.trace_group_name.as_deref()),
            endpoint(self.target.as_ref()),
            endpoint(self.destination.as_ref()),
        );
        base64::engine::general_purpose::STANDARD.encode(Md5::digest(unhashed.as_bytes()))
    }

    /// The event's data, keys in Data Prepper's order (its fields'), nulls written.
    fn to_json(&self) -> Value {
        let endpoint = |e: &Option<Endpoint>| {
            e.as_ref().map_or(
                Value::Null,
                |e| json!({"resource": e.resource, "domain": e.domain}),
            )
        };
        json!({
            "serviceName": self.service_name,
            "kind": self.kind,
            "destination": endpoint(&self.destination),
            "target": endpoint(&self.target),
            "traceGroupName": self.trace_group_name,
            "hashId": self.hash_id(),
        })
    }
}

impl Endpoint {
    /// `child`'s operation: its name in its service.
    fn of(child: &SpanData) -> Self {
        Self {
            resource: child.name.clone(),
            domain: child.service_name.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use serde_json::{Value, json};
    use sluice_buffer::{Acknowledgement, Share};
    use sluice_event::{Event, Metadata};

    use super::*;

    const CLIENT: &str = "SPAN_KIND_CLIENT";
    const SERVER: &str = "SPAN_KIND_SERVER";

    /// A span as `otel_trace_source` writes it (the keys `service_map` reads, and a few more).
    fn span(service: &str, name: &str, id: &str, parent: &str, trace: &str, kind: &str) -> Value {
        json!({
            "traceId": trace, "spanId": id, "traceState": "", "parentSpanId": parent,
            "name": name, "kind": kind, "serviceName": service,
            "startTime": "2024-05-01T10:00:00Z", "endTime": "2024-05-01T10:00:01Z",
            "durationInNanos": 1_000_000_000_u64,
            "traceGroup": if parent.is_empty() { Value::from(name) } else { Value::Null },
        })
    }

    /// A processor with `window_duration` seconds and `max_held_events`, its first window
    /// starting at `start`.
    fn processor(window_secs: u64, max_held: usize, start: Instant) -> ServiceMap {
        let config: Config = serde_json::from_value(
            json!({"window_duration": window_secs, "max_held_events": max_held}),
        )
        .unwrap();
        ServiceMap::new(&config, start)
    }

    /// An event's share, and whether it was acknowledged (its one share released).
    fn tracked() -> (Share, Arc<AtomicBool>) {
        let acked = Arc::new(AtomicBool::new(false));
        let flag = acked.clone();
        let share = Acknowledgement::new(move || flag.store(true, Ordering::SeqCst)).shared();
        (share, acked)
    }

    /// Spans in one batch; each one's acknowledgement flag.
    fn batch(spans: &[&Value]) -> (Vec<(Event, Share)>, Vec<Arc<AtomicBool>>) {
        spans
            .iter()
            .map(|&data| {
                let (share, acked) = tracked();
                (
                    (Event::new(data.clone(), Metadata::new("TRACE", 0)), share),
                    acked,
                )
            })
            .unzip()
    }

    /// The relationships of `out` (their data), after releasing its shares as the pipeline
    /// does once the sinks took them.
    fn take(out: Released) -> Vec<Value> {
        for share in out.done {
            share.release();
        }
        for event in &out.events {
            assert_eq!(event.metadata.event_type, "event");
        }
        out.events.into_iter().map(|e| e.data).collect()
    }

    fn acked(flags: &[Arc<AtomicBool>]) -> Vec<bool> {
        flags.iter().map(|f| f.load(Ordering::SeqCst)).collect()
    }

    /// `(serviceName, kind, destination or target endpoint, traceGroupName)` of `r`, with
    /// `>` for a destination and `<` for a target.
    fn brief(r: &Value) -> String {
        let endpoint = |e: &Value| {
            format!(
                "{}@{}",
                e["resource"].as_str().unwrap_or("null"),
                e["domain"].as_str().unwrap()
            )
        };
        let way = if !r["destination"].is_null() {
            format!(">{}", endpoint(&r["destination"]))
        } else if !r["target"].is_null() {
            format!("<{}", endpoint(&r["target"]))
        } else {
            "alone".to_owned()
        };
        format!(
            "{} {} {} {}",
            r["serviceName"].as_str().unwrap(),
            r["kind"].as_str().unwrap_or("null"),
            way,
            r["traceGroupName"].as_str().unwrap_or("null")
        )
    }

    fn briefs(rs: &[Value]) -> Vec<String> {
        let mut all: Vec<String> = rs.iter().map(brief).collect();
        all.sort();
        all
    }

    fn secs(start: Instant, s: u64) -> Instant {
        start + Duration::from_secs(s)
    }

    #[test]
    fn hash_ids_are_data_preppers() {
        // ServiceMapRelationshipTest's known values.
        let data = |service: &str| SpanData {
            service_name: service.into(),
            parent_span_id: None,
            trace_id: String::new(),
            kind: Some("Kind".into()),
            name: Some("r1".into()),
        };
        let (parent, child) = (data("ServiceName"), data("d1"));
        let group = Some("TraceGroupName".to_owned());
        let destination = Relationship::destination(&parent, &child, group.clone());
        assert_eq!(destination.hash_id(), "r7rZwbptLFxOLPUlg/x2nA==");
        let target = Relationship {
            service_name: "ServiceName".into(),
            ..Relationship::target(&child, group)
        };
        assert_eq!(target.hash_id(), "lJtcAzLqaaeyhym6a99CcA==");
        // `ServiceName,null,null,,`
        assert_eq!(
            Relationship::isolated("ServiceName", None).hash_id(),
            base64::engine::general_purpose::STANDARD
                .encode(Md5::digest(b"ServiceName,null,null,,"))
        );
        assert_eq!(
            Relationship::isolated("S", Some("G".into())).to_json(),
            json!({"serviceName": "S", "kind": null, "destination": null, "target": null,
                   "traceGroupName": "G", "hashId": Relationship::isolated("S", Some("G".into())).hash_id()})
        );
    }

    /// Data Prepper's `testTraceGroupsWithEventRecordData`, its clock in seconds: edges found
    /// across windows, each once, a span's share released at the second evaluation it took
    /// part in, and relationships without a trace group once the root left the windows.
    #[test]
    fn edges_across_windows_each_once_with_shares_released_after_two_evaluations() {
        let (t1, t2) = (
            "5b8efff798038103d269b633813fc60c",
            "eee19b7ec3c1b174a4d6c0a0b1b3fc6e",
        );
        let frontend1 = span("FRONTEND", "reset_password", "aa01", "", t1, CLIENT);
        let auth_server = span("AUTH", "reset", "aa02", "aa01", t1, SERVER);
        let auth_client = span("AUTH", "reset", "aa03", "aa02", t1, CLIENT);
        let password = span("PASS", "update", "aa04", "aa03", t1, SERVER);
        let frontend2 = span("FRONTEND", "checkout", "bb01", "", t2, CLIENT);
        let checkout_server = span("CHECKOUT", "checkout", "bb02", "bb01", t2, SERVER);
        let checkout_client = span("CHECKOUT", "checkout", "bb03", "bb02", t2, CLIENT);
        let cart = span("CART", "get_items", "bb04", "bb03", t2, SERVER);
        let payment = span("PAY", "charge", "bb05", "bb03", t2, SERVER);

        let start = Instant::now();
        let p = processor(100, 100_000, start);

        // First batch: the window passed, evaluating nothing; the batch goes in the new one.
        let (events, first) = batch(&[&frontend1, &checkout_server, &frontend2, &checkout_client]);
        assert!(take(p.process(events, secs(start, 110))).is_empty());
        assert_eq!(p.held(), 4);

        // Second batch: the first batch's frontend -> checkout edge.
        let (events, second) = batch(&[&auth_server, &auth_client, &cart, &password, &payment]);
        let found = take(p.process(events, secs(start, 220)));
        assert_eq!(
            briefs(&found),
            [
                "CHECKOUT SPAN_KIND_SERVER <checkout@CHECKOUT checkout",
                "FRONTEND SPAN_KIND_CLIENT >checkout@CHECKOUT checkout",
            ]
        );
        assert_eq!(
            acked(&first),
            [false; 4],
            "the first batch is in the previous window"
        );
        assert_eq!(p.held(), 9);

        // Third (empty) batch: the rest, parents in the previous window; the first batch leaves.
        let found = take(p.process(Vec::new(), secs(start, 340)));
        assert_eq!(
            briefs(&found),
            [
                "AUTH SPAN_KIND_CLIENT >update@PASS reset_password",
                "AUTH SPAN_KIND_SERVER <reset@AUTH reset_password",
                "CART SPAN_KIND_SERVER <get_items@CART checkout",
                "CHECKOUT SPAN_KIND_CLIENT >charge@PAY checkout",
                "CHECKOUT SPAN_KIND_CLIENT >get_items@CART checkout",
                "FRONTEND SPAN_KIND_CLIENT >reset@AUTH reset_password",
                "PASS SPAN_KIND_SERVER <update@PASS reset_password",
                "PAY SPAN_KIND_SERVER <charge@PAY checkout",
            ]
        );
        assert_eq!(acked(&first), [true; 4]);
        assert_eq!(acked(&second), [false; 5]);
        assert_eq!(p.held(), 5);

        // The roots have left: auth -> password is found again without a trace group, so it
        // is new; the second batch leaves.
        let t3 = "0af7651916cd43dd8448eb211c80319c";
        let frontend3 = span("FRONTEND", "reset_password", "cc01", "cc01", t3, CLIENT);
        let auth_server2 = span("AUTH", "reset", "cc02", "cc01", t3, SERVER);
        let (events, third) = batch(&[&frontend3, &auth_server2]);
        let mut found = take(p.process(events, secs(start, 450)));
        assert_eq!(acked(&second), [true; 5]);
        found.extend(take(p.process(Vec::new(), secs(start, 560))));
        assert_eq!(
            briefs(&found),
            [
                "AUTH SPAN_KIND_CLIENT >update@PASS null",
                "AUTH SPAN_KIND_SERVER <reset@AUTH null",
                "FRONTEND SPAN_KIND_CLIENT >reset@AUTH null",
                "PASS SPAN_KIND_SERVER <update@PASS null",
            ]
        );
        assert_eq!(acked(&third), [false; 2]);

        // The same spans again, later: nothing new.
        let (events, again) = batch(&[&frontend3, &auth_server2]);
        assert!(take(p.process(events, secs(start, 600))).is_empty());
        assert!(take(p.flush(secs(start, 670), false)).is_empty());
        assert_eq!(acked(&third), [true; 2]);
        assert!(take(p.flush(secs(start, 680), true)).is_empty());
        assert_eq!(acked(&again), [true; 2]);
        assert_eq!(p.held(), 0);
    }

    /// Data Prepper's `testTraceGroupsWithIsolatedServiceEventRecordData`: a service that calls
    /// no other comes out alone, from the previous window.
    #[test]
    fn isolated_services_come_out_from_the_previous_window() {
        let trace = "0af7651916cd43dd8448eb211c80319c";
        let root = span("FRONTEND", "reset_password", "cc01", "", trace, CLIENT);
        let child = span("FRONTEND", "reset", "cc02", "cc01", trace, SERVER);
        let start = Instant::now();
        let p = processor(100, 100_000, start);
        let (events, flags) = batch(&[&root, &child]);
        assert!(take(p.process(events, start)).is_empty());
        assert!(take(p.flush(secs(start, 99), false)).is_empty());
        assert!(take(p.flush(secs(start, 110), false)).is_empty());
        assert_eq!(acked(&flags), [false; 2]);
        let found = take(p.flush(secs(start, 220), false));
        assert_eq!(briefs(&found), ["FRONTEND null alone reset_password"]);
        assert_eq!(acked(&flags), [true; 2]);
        assert_eq!(
            found[0]["hashId"],
            Relationship::isolated("FRONTEND", Some("reset_password".into())).hash_id()
        );
    }

    /// A service linked to another in a window is not isolated, even when its own spans come
    /// from the window before.
    #[test]
    fn a_linked_service_is_not_isolated() {
        let trace = "0af7651916cd43dd8448eb211c80319c";
        let root = span("FRONTEND", "home", "cc01", "", trace, CLIENT);
        let child = span("CART", "list", "cc02", "cc01", trace, SERVER);
        let start = Instant::now();
        let p = processor(10, 100_000, start);
        let (events, _) = batch(&[&root]);
        take(p.process(events, start));
        assert!(take(p.flush(secs(start, 10), false)).is_empty());
        let (events, _) = batch(&[&child]);
        take(p.process(events, secs(start, 11)));
        let found = take(p.flush(secs(start, 20), false));
        assert_eq!(
            briefs(&found),
            [
                "CART SPAN_KIND_SERVER <list@CART home",
                "FRONTEND SPAN_KIND_CLIENT >list@CART home"
            ]
        );
        assert!(take(p.flush(secs(start, 30), false)).is_empty());
        assert_eq!(p.held(), 0);
    }

    /// Events without `serviceName` or a hex `traceId` are consumed at once; a span whose ids
    /// are not hex is kept only as its service.
    #[test]
    fn what_is_not_a_span_is_consumed_at_once() {
        let trace = "0af7651916cd43dd8448eb211c80319c";
        let start = Instant::now();
        let p = processor(10, 100_000, start);
        let no_service = json!({"traceId": trace, "spanId": "01", "parentSpanId": "", "name": "x"});
        let bad_trace = span("A", "x", "01", "", "not hex", CLIENT);
        let log = json!({"message": "hello"});
        let bad_span = span("LONELY", "x", "zz", "", trace, CLIENT);
        let (events, flags) = batch(&[&no_service, &bad_trace, &log, &bad_span]);
        let out = p.process(events, start);
        assert!(out.events.is_empty());
        assert_eq!(out.done.len(), 3);
        take(out);
        assert_eq!(acked(&flags), [true, true, true, false]);
        assert_eq!(p.held(), 1);
        assert!(take(p.flush(secs(start, 10), false)).is_empty());
        // Its root name still names the trace group.
        let found = take(p.flush(secs(start, 20), false));
        assert_eq!(briefs(&found), ["LONELY null alone x"]);
        assert_eq!(acked(&flags), [true; 4]);
    }

    /// Upper-case ids are the same spans as lower-case ones (Data Prepper compares them
    /// decoded), and `serviceName` in the metadata wins over the data's.
    #[test]
    fn ids_in_either_case_and_the_service_name_in_the_metadata() {
        let trace = "0AF7651916CD43DD8448EB211C80319C";
        let root = span("FRONTEND", "home", "CC01", "", trace, CLIENT);
        let child = span(
            "ignored",
            "list",
            "cc02",
            "cc01",
            &trace.to_lowercase(),
            SERVER,
        );
        let start = Instant::now();
        let p = processor(10, 100_000, start);
        let (mut events, _) = batch(&[&root, &child]);
        events[1]
            .0
            .metadata
            .attributes
            .insert("serviceName".into(), json!("CART"));
        take(p.process(events, start));
        let found = take(p.flush(secs(start, 10), false));
        assert_eq!(
            briefs(&found),
            [
                "CART SPAN_KIND_SERVER <list@CART home",
                "FRONTEND SPAN_KIND_CLIENT >list@CART home"
            ]
        );
    }

    /// At shutdown the windows are evaluated once more, and every share is released.
    #[test]
    fn flush_all_evaluates_once_more_and_releases_everything() {
        let trace = "0af7651916cd43dd8448eb211c80319c";
        let root = span("FRONTEND", "home", "cc01", "", trace, CLIENT);
        let child = span("CART", "list", "cc02", "cc01", trace, SERVER);
        let alone = span(
            "ALONE",
            "solo",
            "dd01",
            "",
            "1af7651916cd43dd8448eb211c80319c",
            CLIENT,
        );
        let start = Instant::now();
        let p = processor(180, 100_000, start);
        let (events, first) = batch(&[&root, &alone]);
        take(p.process(events, start));
        // ALONE moves to the previous window: it is isolated at the next evaluation.
        assert!(
            take(p.flush(secs(start, 180), false))
                .iter()
                .all(|r| r["serviceName"] != "ALONE")
        );
        let (events, second) = batch(&[&child]);
        take(p.process(events, secs(start, 181)));
        assert_eq!(p.held(), 3);
        let found = take(p.flush(secs(start, 182), true));
        assert_eq!(
            briefs(&found),
            [
                "ALONE null alone solo",
                "CART SPAN_KIND_SERVER <list@CART home",
                "FRONTEND SPAN_KIND_CLIENT >list@CART home",
            ]
        );
        assert_eq!(acked(&first), [true; 2]);
        assert_eq!(acked(&second), [true]);
        assert_eq!(p.held(), 0);
        assert!(take(p.flush(secs(start, 183), true)).is_empty());
    }

    /// Past `max_held_events` the windows are evaluated and rotated early: what is held never
    /// passes the bound, and the oldest spans leave first.
    #[test]
    fn max_held_events_rotates_early() {
        let trace = "0af7651916cd43dd8448eb211c80319c";
        let root = span("FRONTEND", "home", "cc01", "", trace, CLIENT);
        let child = span("CART", "list", "cc02", "cc01", trace, SERVER);
        let other: Vec<Value> = (0..4)
            .map(|i| {
                span(
                    "FRONTEND",
                    "home",
                    &format!("ee0{i}"),
                    "cc01",
                    trace,
                    CLIENT,
                )
            })
            .collect();
        let start = Instant::now();
        let p = processor(180, 3, start);
        let (events, flags) = batch(&[&root, &child, &other[0], &other[1], &other[2], &other[3]]);
        let out = p.process(events, start);
        assert!(p.held() <= 3);
        // The 4th span found 3 held: the windows were evaluated (the edge came out) and
        // rotated, still 3 held (root, child, other[0] in the previous window), so again: those
        // 3 left. The last 3 are held.
        let found = take(out);
        assert_eq!(
            briefs(&found),
            [
                "CART SPAN_KIND_SERVER <list@CART home",
                "FRONTEND SPAN_KIND_CLIENT >list@CART home"
            ]
        );
        assert_eq!(acked(&flags), [true, true, true, false, false, false]);
        assert_eq!(p.held(), 3);
        // A later batch pushes the rest out in arrival order.
        let (events, more) = batch(&[&root]);
        take(p.process(events, secs(start, 1)));
        assert_eq!(acked(&flags), [true; 6]);
        assert_eq!(acked(&more), [false]);
        assert_eq!(p.held(), 1);
        take(p.flush(secs(start, 2), true));
        assert_eq!(acked(&more), [true]);
    }

    /// Past [`MAX_RELATIONSHIPS`] the remembered relationships are forgotten, and come out again.
    #[test]
    fn remembered_relationships_are_bounded() {
        let start = Instant::now();
        let mut state = processor(1, 1, start).state.into_inner().unwrap();
        for i in 0..MAX_RELATIONSHIPS {
            assert!(state.first_time(&Relationship::isolated(&i.to_string(), None)));
        }
        assert!(!state.first_time(&Relationship::isolated("0", None)));
        assert!(state.first_time(&Relationship::isolated("new", None)));
        assert_eq!(state.seen.len(), 1);
        assert!(state.first_time(&Relationship::isolated("0", None)));
    }

    /// The conformance table (`tests/data/dataprepper/conformance/service_map.json`): each
    /// case's inputs in one batch, then the shutdown flush; every share released.
    #[test]
    fn the_conformance_cases() {
        let path = crate::conformance("service_map");
        let cases: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert!(cases.len() >= 2);
        for case in &cases {
            let config: Config =
                serde_json::from_value(case["processor"]["service_map"].clone()).unwrap();
            let start = Instant::now();
            let p = ServiceMap::new(&config, start);
            let inputs: Vec<&Value> = case["inputs"].as_array().unwrap().iter().collect();
            let (events, flags) = batch(&inputs);
            let mut got = take(p.process(events, start));
            got.extend(take(p.flush(start + Duration::from_secs(3600), true)));
            for key in case["ignore"].as_array().unwrap() {
                for event in &mut got {
                    event
                        .as_object_mut()
                        .unwrap()
                        .remove(key.as_str().unwrap().trim_start_matches('/'));
                }
            }
            assert_eq!(&Value::Array(got), &case["outputs"], "{}", case["id"]);
            assert!(
                flags.iter().all(|f| f.load(Ordering::SeqCst)),
                "{}",
                case["id"]
            );
            assert_eq!(p.held(), 0);
        }
    }
}
