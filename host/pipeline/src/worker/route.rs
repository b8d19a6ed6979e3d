//! Which sinks take which events: the pipeline's routes (`route:`), each sink's `routes`
//! (`_default`: the events that matched no route; none: every event), and how a sink reshapes
//! what it sends (`tags_target_key`, `include_keys`, `exclude_keys`). An event can go to
//! several sinks, or to none (counted: `sluice_eventsUnrouted`). A route whose condition
//! cannot be evaluated for an event (a type mismatch) does not match it.
//!
//! A pipeline without routes whose sinks reshape nothing gives every sink the same lines,
//! parsed by nobody.

use bytes::Bytes;
use serde_json::{Map, Value};
use sluice_config::{DEFAULT_ROUTE, Route, RoutedSink};
use sluice_event::{Event, Key};

use super::outcome::Split;

/// A pipeline's routes and what each of its sinks takes.
#[derive(Debug)]
pub struct Router {
    routes: Vec<Route>,
    /// One per sink, in the pipeline's order.
    sinks: Vec<Takes>,
}

/// What one sink takes.
#[derive(Debug)]
struct Takes {
    /// Every event (the sink has no `routes`).
    all: bool,
    /// Indexes into `Router::routes` of the sink's routes.
    routes: Vec<usize>,
    /// The sink's routes include `_default`.
    default: bool,
    shape: Option<Shape>,
}

/// How a sink reshapes each event it sends.
#[derive(Debug)]
struct Shape {
    tags_target_key: Option<Key>,
    include_keys: Vec<String>,
    exclude_keys: Vec<String>,
}

/// A batch's events as each sink takes them.
pub(crate) struct Routed {
    /// One list per sink, in the pipeline's order.
    pub(crate) per_sink: Vec<Vec<Bytes>>,
    /// Events no sink took.
    pub(crate) unrouted: u64,
}

impl Router {
    pub fn new(routes: &[Route], sinks: &[RoutedSink]) -> Self {
        let sinks = sinks
            .iter()
            .map(|s| {
                let c = &s.context;
                Takes {
                    all: c.routes.is_empty(),
                    routes: c
                        .routes
                        .iter()
                        .filter_map(|name| routes.iter().position(|r| &r.name == name))
                        .collect(),
                    default: c.routes.iter().any(|r| r == DEFAULT_ROUTE),
                    shape: c.reshapes().then(|| Shape {
                        tags_target_key: c.tags_target_key.clone(),
                        include_keys: c.include_keys.clone(),
                        exclude_keys: c.exclude_keys.clone(),
                    }),
                }
            })
            .collect();
        Self {
            routes: routes.to_vec(),
            sinks,
        }
    }

    /// `sinks` sinks without routes: each takes every event.
    pub fn every_event(sinks: usize) -> Self {
        let sinks = (0..sinks)
            .map(|_| Takes {
                all: true,
                routes: Vec::new(),
                default: false,
                shape: None,
            })
            .collect();
        Self {
            routes: Vec::new(),
            sinks,
        }
    }

    /// Each sink's events of `split`.
    pub(crate) fn route(&self, split: &mut Split) -> Routed {
        let n = split.event_count;
        let mut routed = Routed {
            per_sink: Vec::with_capacity(self.sinks.len()),
            unrouted: 0,
        };
        // matched[e * routes + r]: event e matched route r.
        let width = self.routes.len();
        let mut matched = vec![false; n * width];
        if width > 0 {
            for (e, event) in split.parsed().iter().enumerate() {
                for (r, route) in self.routes.iter().enumerate() {
                    matched[e * width + r] = route.condition.matches(event).unwrap_or_else(|error| {
                        tracing::debug!(route = %route.name, %error, "route condition could not be evaluated; the event does not match it");
                        false
                    });
                }
            }
        }
        let takes = |sink: &Takes, e: usize| {
            let row = &matched[e * width..(e + 1) * width];
            sink.all
                || sink.routes.iter().any(|&r| row[r])
                || (sink.default && !row.iter().any(|&m| m))
        };
        let mut taken = vec![false; n];
        // Reshaped sinks first, from the parsed events; then the lines, serialized once.
        let mut shaped: Vec<Option<Vec<Bytes>>> = Vec::with_capacity(self.sinks.len());
        for sink in &self.sinks {
            shaped.push(sink.shape.as_ref().map(|shape| {
                split
                    .parsed()
                    .iter()
                    .enumerate()
                    .filter(|&(e, _)| takes(sink, e))
                    .map(|(_, event)| Bytes::from(shape.write(event)))
                    .collect()
            }));
        }
        let lines = if shaped.iter().all(Option::is_some) {
            Vec::new()
        } else {
            split.lines();
            crate::sink::events(std::mem::take(&mut split.events))
        };
        for (sink, shaped) in self.sinks.iter().zip(shaped) {
            for (e, t) in taken.iter_mut().enumerate() {
                *t = *t || takes(sink, e);
            }
            routed.per_sink.push(match shaped {
                Some(events) => events,
                None if sink.all => lines.clone(),
                None => lines
                    .iter()
                    .enumerate()
                    .filter(|&(e, _)| takes(sink, e))
                    .map(|(_, line)| line.clone())
                    .collect(),
            });
        }
        routed.unrouted = taken.iter().filter(|&&t| !t).count() as u64;
        routed
    }
}

impl Shape {
    /// The event as this sink sends it: only `include_keys`, or without `exclude_keys`, then
    /// its tags under `tags_target_key`.
    fn write(&self, event: &Event) -> Vec<u8> {
        let Value::Object(data) = &event.data else {
            unreachable!("an event's data is an object")
        };
        let mut out: Map<String, Value> = data
            .iter()
            .filter(|(k, _)| {
                (self.include_keys.is_empty() || self.include_keys.contains(k))
                    && !self.exclude_keys.contains(k)
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut out_value = Value::Object(std::mem::take(&mut out));
        if let Some(key) = &self.tags_target_key {
            let tags = event
                .metadata
                .tags
                .iter()
                .map(|t| Value::String(t.clone()))
                .collect();
            // A key through a non-object value: the tags are left out rather than the event.
            let _ = key.put(&mut out_value, Value::Array(tags));
        }
        serde_json::to_vec(&out_value).expect("a Value serializes")
    }
}
