//! Which sinks take which events: the pipeline's routes (`route:`), each sink's `routes`
//! (`_default`: the events that matched no route; none: every event), and how a sink reshapes
//! what it sends (`tags_target_key`, `include_keys`, `exclude_keys`). An event can go to
//! several sinks, or to none (counted: `sluice_eventsUnrouted`). A route whose condition
//! cannot be evaluated for an event (a type mismatch) does not match it.
//!
//! A pipeline without routes whose sinks reshape nothing gives every sink the same lines,
//! parsed by nobody.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};
use sluice_config::{DEFAULT_ROUTE, Route, RoutedSink};
use sluice_event::{Event, Key};

use super::outcome::Split;
use crate::sink::{Encode, Provenance, Take};

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
    /// The sink sends to another pipeline: each event goes with its metadata
    /// (`crate::sink::pipeline::wrap`).
    connection: bool,
    /// The sink takes the events themselves (`Sink::hands_events`), moved when no later
    /// sink needs them.
    hands: bool,
    /// The sink's output writes each event's line itself (`Sink::encoder`).
    encoder: Option<Arc<dyn Encode>>,
}

impl std::fmt::Debug for dyn Encode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Encode")
    }
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
    pub(crate) per_sink: Vec<Take>,
    /// Per sink, the indexes (into the batch's events) of the events it takes, in order.
    pub(crate) chosen: Vec<Vec<usize>>,
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
                    connection: matches!(s.sink, sluice_config::Sink::Pipeline(_)),
                    hands: false,
                    encoder: None,
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
                connection: false,
                hands: false,
                encoder: None,
            })
            .collect();
        Self {
            routes: Vec::new(),
            sinks,
        }
    }

    /// Sink `i` takes the events themselves when `hands[i]` (`Sink::hands_events`).
    pub fn handing(mut self, hands: &[bool]) -> Self {
        for (sink, &hands) in self.sinks.iter_mut().zip(hands) {
            sink.hands = hands;
        }
        self
    }

    /// Sink `i`'s output writes each event's line itself with `encoders[i]`
    /// (`Sink::encoder`).
    pub fn encoding(mut self, encoders: Vec<Option<Arc<dyn Encode>>>) -> Self {
        for (sink, encoder) in self.sinks.iter_mut().zip(encoders) {
            sink.encoder = encoder;
        }
        self
    }

    /// Each sink's events of `split`.
    pub(crate) fn route(&self, split: &mut Split) -> Routed {
        if !self.routes.is_empty() || self.sinks.iter().any(Takes::reads_events) {
            // Parsing first: an event that cannot be read leaves the batch (`unreadable`).
            split.parsed();
        }
        let n = split.event_count();
        let mut routed = Routed {
            per_sink: Vec::with_capacity(self.sinks.len()),
            chosen: Vec::with_capacity(self.sinks.len()),
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
        // Reshaped sinks and connections first, from the parsed events; then the sinks that
        // take the events themselves, copies of them; then the lines, serialized once. With
        // no lines to make, the last sink taking events takes them without a copy.
        let mut per_sink: Vec<Option<Take>> = Vec::with_capacity(self.sinks.len());
        for sink in &self.sinks {
            per_sink.push((sink.reads_events() && !sink.hands).then(|| {
                Take::Lines(
                    split
                        .parsed()
                        .iter()
                        .enumerate()
                        .filter(|&(e, _)| takes(sink, e))
                        .map(|(_, event)| Bytes::from(sink.write(event)))
                        .collect(),
                    Provenance::default(),
                )
            }));
        }
        let lines_wanted = self.sinks.iter().any(|s| !s.reads_events());
        let last_hand = self.sinks.iter().rposition(|s| s.hands);
        for (i, sink) in self.sinks.iter().enumerate().filter(|(_, s)| s.hands) {
            let events = if Some(i) == last_hand && !lines_wanted {
                // Nothing reads them after this sink: moved, not copied.
                std::mem::take(split.parsed())
                    .into_iter()
                    .enumerate()
                    .filter(|&(e, _)| takes(sink, e))
                    .map(|(_, event)| sink.handed(event))
                    .collect()
            } else {
                split
                    .parsed()
                    .iter()
                    .enumerate()
                    .filter(|&(e, _)| takes(sink, e))
                    .map(|(_, event)| sink.handed(event.clone()))
                    .collect()
            };
            per_sink[i] = Some(Take::Events(events));
        }
        let lines = if lines_wanted {
            split.lines();
            crate::sink::events(std::mem::take(&mut split.events))
        } else {
            Vec::new()
        };
        for (sink, taken) in self.sinks.iter().zip(per_sink) {
            routed.per_sink.push(match taken {
                Some(taken) => taken,
                None if sink.all => Take::Lines(lines.clone(), Provenance::default()),
                None => Take::Lines(
                    lines
                        .iter()
                        .enumerate()
                        .filter(|&(e, _)| takes(sink, e))
                        .map(|(_, line)| line.clone())
                        .collect(),
                    Provenance::default(),
                ),
            });
            routed
                .chosen
                .push((0..n).filter(|&e| takes(sink, e)).collect());
        }
        // A sink without routes takes every event: nothing to count then.
        if !self.sinks.iter().any(|s| s.all) {
            routed.unrouted = (0..n)
                .filter(|&e| !self.sinks.iter().any(|sink| takes(sink, e)))
                .count() as u64;
        }
        routed
    }
}

impl Takes {
    /// Whether the sink sends something other than the events' lines: reshaped events, or
    /// events with their metadata.
    fn reads_events(&self) -> bool {
        self.shape.is_some() || self.connection || self.encoder.is_some()
    }

    /// The event as this sink hands it over (reshaped, with its metadata).
    fn handed(&self, event: Event) -> Event {
        match &self.shape {
            Some(shape) => Event::new(shape.shaped(&event), event.metadata),
            None => event,
        }
    }

    /// The event as this sink sends it.
    fn write(&self, event: &Event) -> Vec<u8> {
        if let Some(encoder) = &self.encoder {
            let tags = &event.metadata.tags;
            return match &self.shape {
                Some(shape) => encoder.encode(event, Some(&|data| shape.shape(data, tags))),
                None => encoder.encode(event, None),
            };
        }
        let shaped = self.shape.as_ref().map(|shape| shape.shaped(event));
        let data = shaped.as_ref().unwrap_or(&event.data);
        if self.connection {
            crate::sink::pipeline::wrap(data, &event.metadata)
        } else {
            serde_json::to_vec(data).expect("a Value serializes")
        }
    }
}

impl Shape {
    /// The event as this sink sends it: only `include_keys`, or without `exclude_keys`, then
    /// its tags under `tags_target_key`.
    fn shaped(&self, event: &Event) -> Value {
        let Value::Object(data) = &event.data else {
            unreachable!("an event's data is an object")
        };
        self.shape(data, &event.metadata.tags)
    }

    /// `data` as this sink sends it, with `tags`.
    fn shape(&self, data: &Map<String, Value>, tags: &[String]) -> Value {
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
            let tags = tags.iter().map(|t| Value::String(t.clone())).collect();
            // A key through a non-object value: the tags are left out rather than the event.
            let _ = key.put(&mut out_value, Value::Array(tags));
        }
        out_value
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use sluice_config::sink::stdout::StdoutSink;
    use sluice_config::{Route, RoutedSink, Sink, SinkContext};
    use sluice_event::{Expression, Key, Metadata};

    use super::*;

    fn route(name: &str, condition: &str) -> Route {
        Route {
            name: name.to_owned(),
            condition: Expression::parse_condition(condition).unwrap(),
        }
    }

    fn sink(routes: &[&str], context: SinkContext) -> RoutedSink {
        RoutedSink {
            sink: Sink::Stdout(StdoutSink {}),
            context: SinkContext {
                routes: routes.iter().map(|r| (*r).to_owned()).collect(),
                ..context
            },
        }
    }

    /// A batch of `events`, the first tagged `t`.
    fn split(events: &[Value]) -> Split {
        let mut split = Split::default();
        for (i, e) in events.iter().enumerate() {
            split.events.extend_from_slice(e.to_string().as_bytes());
            split.events.push(b'\n');
            let mut metadata = Metadata::new("LOG", 0);
            if i == 0 {
                metadata.add_tag("t");
            }
            split.metadata.push(metadata);
            split.owners.push(i);
        }
        split
    }

    /// What a sink took, as values (events: their data).
    fn lines(taken: &Take) -> Vec<Value> {
        match taken {
            Take::Lines(lines, _) => lines
                .iter()
                .map(|e| serde_json::from_slice(e).unwrap())
                .collect(),
            Take::Events(events) => events.iter().map(|e| e.data.clone()).collect(),
        }
    }

    #[test]
    fn each_sink_takes_its_routes_default_takes_the_unmatched_and_the_rest_are_counted() {
        let routes = [
            route("big", "/n >= 10"),
            route("odd", "/n % 2 == 1"),
            route("nobody", "/n == 4"),
        ];
        let sinks = [
            sink(&["big"], SinkContext::default()),
            sink(&["odd", "big"], SinkContext::default()),
            sink(&["_default"], SinkContext::default()),
            sink(&[], SinkContext::default()),
        ];
        let router = Router::new(&routes, &sinks);
        let events: Vec<Value> = [1, 2, 4, 11, 12].iter().map(|n| json!({"n": n})).collect();
        let routed = router.route(&mut split(&events));
        let ns = |i: usize| -> Vec<i64> {
            lines(&routed.per_sink[i])
                .iter()
                .map(|e| e["n"].as_i64().unwrap())
                .collect()
        };
        assert_eq!(ns(0), [11, 12]);
        assert_eq!(
            ns(1),
            [1, 11, 12],
            "an event matching two of a sink's routes goes once"
        );
        assert_eq!(
            ns(2),
            [2],
            "4 matched `nobody`, so it is not a default event"
        );
        assert_eq!(ns(3), [1, 2, 4, 11, 12], "no routes: every event");
        assert_eq!(routed.unrouted, 0, "the last sink takes everything");

        let router = Router::new(&routes, &sinks[..3]);
        let routed = router.route(&mut split(&events));
        assert_eq!(routed.unrouted, 1, "4 went to no sink");
    }

    #[test]
    fn an_event_that_cannot_be_read_is_neither_routed_nor_counted_as_unrouted() {
        let routes = [route("big", "/n >= 10")];
        let sinks = [sink(&["big"], SinkContext::default())];
        let mut batch = split(&[json!({"n": 1}), json!({"n": 12})]);
        batch
            .events
            .splice(0..0, br#"{"n":1e400}"#.iter().copied().chain([b'\n']));
        batch.metadata.push(Metadata::new("LOG", 0));
        batch.owners.insert(0, 2);
        let routed = Router::new(&routes, &sinks).route(&mut batch);
        assert_eq!(lines(&routed.per_sink[0]), [json!({"n": 12})]);
        assert_eq!(routed.unrouted, 1, "only {{\"n\":1}}");
        assert_eq!(batch.unreadable.len(), 1);
    }

    #[test]
    fn a_route_that_cannot_be_evaluated_does_not_match() {
        let routes = [route("big", "/n >= 10")];
        let sinks = [
            sink(&["big"], SinkContext::default()),
            sink(&["_default"], SinkContext::default()),
        ];
        let routed = Router::new(&routes, &sinks).route(&mut split(&[json!({"n": "text"})]));
        assert!(lines(&routed.per_sink[0]).is_empty());
        assert_eq!(lines(&routed.per_sink[1]).len(), 1);
    }

    #[test]
    fn sinks_shape_what_they_send() {
        let tags = SinkContext {
            tags_target_key: Some(Key::parse("meta/tags").unwrap()),
            exclude_keys: vec!["secret".to_owned()],
            ..SinkContext::default()
        };
        let only = SinkContext {
            include_keys: vec!["n".to_owned()],
            ..SinkContext::default()
        };
        let sinks = [
            sink(&[], tags),
            sink(&[], only),
            sink(&[], SinkContext::default()),
        ];
        let events = [
            json!({"n": 1, "secret": "x"}),
            json!({"n": 2, "secret": "y"}),
        ];
        let routed = Router::new(&[], &sinks).route(&mut split(&events));
        assert_eq!(
            lines(&routed.per_sink[0]),
            [
                json!({"n": 1, "meta": {"tags": ["t"]}}),
                json!({"n": 2, "meta": {"tags": []}})
            ]
        );
        assert_eq!(
            lines(&routed.per_sink[1]),
            [json!({"n": 1}), json!({"n": 2})]
        );
        assert_eq!(
            lines(&routed.per_sink[2]),
            events,
            "the others send the events as they are"
        );
    }

    #[test]
    fn sinks_that_take_events_get_them_with_their_metadata_routed_and_shaped() {
        let pipeline = |routes: &[&str], context| RoutedSink {
            sink: Sink::Pipeline(sluice_config::sink::pipeline::PipelineSink {
                name: "next".to_owned(),
            }),
            ..sink(routes, context)
        };
        let only = SinkContext {
            include_keys: vec!["n".to_owned()],
            ..SinkContext::default()
        };
        let routes = [route("big", "/n >= 10")];
        let events = [json!({"n": 1, "x": "a"}), json!({"n": 12, "x": "b"})];
        let is_event = |taken: &Take| matches!(taken, Take::Events(_));

        // Two sinks take events, a third the lines: both get copies.
        let sinks = [
            pipeline(&["big"], SinkContext::default()),
            pipeline(&[], only.clone()),
            sink(&[], SinkContext::default()),
        ];
        let router = Router::new(&routes, &sinks).handing(&[true, true, false]);
        let routed = router.route(&mut split(&events));
        assert!(is_event(&routed.per_sink[0]) && is_event(&routed.per_sink[1]));
        assert_eq!(lines(&routed.per_sink[0]), [events[1].clone()]);
        assert_eq!(
            lines(&routed.per_sink[1]),
            [json!({"n": 1}), json!({"n": 12})]
        );
        assert_eq!(lines(&routed.per_sink[2]), events);
        let Take::Events(shaped) = &routed.per_sink[1] else {
            unreachable!()
        };
        assert_eq!(
            shaped[0].metadata.tags,
            ["t"],
            "metadata goes with the event"
        );

        // Only sinks of events: the last takes them without a copy, as they are.
        let sinks = [
            pipeline(&["big"], SinkContext::default()),
            pipeline(&[], SinkContext::default()),
        ];
        let routed = Router::new(&routes, &sinks)
            .handing(&[true, true])
            .route(&mut split(&events));
        assert_eq!(lines(&routed.per_sink[0]), [events[1].clone()]);
        assert_eq!(lines(&routed.per_sink[1]), events);
        assert_eq!(routed.unrouted, 0);
    }
}
