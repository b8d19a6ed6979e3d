//! `sluice tap`: a live sample of a pipeline's events at one point (Vector's `tap`): as the
//! deserializer made them, as a processor left them, or as a sink takes them.
//!
//! Untapped, a worker pays one relaxed atomic load per batch and point. Tapped, it copies at
//! most [`SAMPLE`] events of each batch at the tapped points into a bounded broadcast channel
//! and goes on; a listener that falls behind misses batches (it is a sample), it never slows
//! the worker down.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::broadcast;

/// The most events of one batch a point offers its listeners.
pub const SAMPLE: usize = 64;

/// Batches held for a slow listener before it misses some.
const ROOM: usize = 64;

/// Where a tap listens.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "stage", content = "name", rename_all = "snake_case")]
pub enum Point {
    /// The events the deserializer made, before any processor.
    Deserializer,
    /// The events as the processor of this name left them.
    Processor(String),
    /// The events a sink takes: by its name (`file:/var/out.jsonl`) or its type (`file`).
    Sink(String),
}

impl Point {
    /// Whether a listener at `self` hears what `offered` offers.
    fn hears(&self, offered: &Point) -> bool {
        match (self, offered) {
            (Point::Deserializer, Point::Deserializer) => true,
            (Point::Processor(a), Point::Processor(b)) => a == b,
            (Point::Sink(wanted), Point::Sink(name)) => {
                name == wanted
                    || name
                        .strip_prefix(wanted.as_str())
                        .is_some_and(|rest| rest.starts_with(':'))
            }
            _ => false,
        }
    }
}

/// As messages name it: ``deserializer``, ``processor `grok` ``, ``sink `file:/var/out.jsonl` ``.
impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Point::Deserializer => f.write_str("deserializer"),
            Point::Processor(name) => write!(f, "processor `{name}`"),
            Point::Sink(name) => write!(f, "sink `{name}`"),
        }
    }
}

/// Some events of one batch at one point.
#[derive(Debug)]
pub struct Tapped {
    pub point: Point,
    /// One JSON object each.
    pub events: Vec<Bytes>,
}

/// One pipeline's taps.
pub struct Tap {
    /// The points its pipeline offers (its processors and sinks, by name): a listener at any
    /// other would wait for ever.
    offered: Vec<Point>,
    /// Whether anyone listens anywhere: the one check an untapped batch pays.
    on: AtomicBool,
    /// The points listened at, one entry per listener.
    points: Mutex<Vec<Point>>,
    sender: broadcast::Sender<Arc<Tapped>>,
}

impl Default for Tap {
    fn default() -> Self {
        Self {
            offered: vec![Point::Deserializer],
            on: AtomicBool::new(false),
            points: Mutex::default(),
            sender: broadcast::channel(ROOM).0,
        }
    }
}

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tap")
            .field("on", &self.on.load(Ordering::Relaxed))
            .finish()
    }
}

impl Tap {
    /// A tap for a pipeline whose processors and sinks are named `processors` and `sinks` (a
    /// sink's name, `file:/var/out.jsonl`; a listener may also give its type, `file`).
    pub fn new<'a>(
        processors: impl IntoIterator<Item = &'a str>,
        sinks: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let mut offered = vec![Point::Deserializer];
        offered.extend(
            processors
                .into_iter()
                .map(|n| Point::Processor(n.to_owned())),
        );
        offered.extend(sinks.into_iter().map(|n| Point::Sink(n.to_owned())));
        Self {
            offered,
            ..Self::default()
        }
    }

    /// Whether a listener at `point` would hear anything; else, the points there are.
    pub fn check(&self, point: &Point) -> Result<(), &[Point]> {
        if self.offered.iter().any(|offered| point.hears(offered)) {
            return Ok(());
        }
        Err(&self.offered)
    }

    /// Whether anyone listens; check before making what [`offer`](Self::offer) takes.
    #[inline]
    pub fn listening(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Offers what `events` makes (at most [`SAMPLE`] of a batch's events) at the point
    /// `point` makes, if someone listens there. Untapped, neither is made.
    pub fn offer(&self, point: impl FnOnce() -> Point, events: impl FnOnce() -> Vec<Bytes>) {
        if !self.listening() {
            return;
        }
        let point = point();
        let wanted = self
            .points
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|p| p.hears(&point));
        if !wanted {
            return;
        }
        let events = events();
        if !events.is_empty() {
            let _ = self.sender.send(Arc::new(Tapped { point, events }));
        }
    }

    /// Listens at `point` until the listener is dropped.
    pub fn listen(self: &Arc<Self>, point: Point) -> Listener {
        let receiver = self.sender.subscribe();
        let mut points = self.points.lock().unwrap_or_else(|e| e.into_inner());
        points.push(point.clone());
        self.on.store(true, Ordering::Relaxed);
        Listener {
            tap: self.clone(),
            point,
            receiver,
        }
    }
}

/// One listener of a [`Tap`].
pub struct Listener {
    tap: Arc<Tap>,
    point: Point,
    receiver: broadcast::Receiver<Arc<Tapped>>,
}

impl Listener {
    /// The next batch of events offered at its point; `None` when the pipeline is gone. A
    /// listener that fell behind skips what it missed.
    pub async fn next(&mut self) -> Option<Arc<Tapped>> {
        loop {
            match self.receiver.recv().await {
                Ok(tapped) if self.point.hears(&tapped.point) => return Some(tapped),
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let mut points = self.tap.points.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = points.iter().position(|p| *p == self.point) {
            points.swap_remove(i);
        }
        self.tap.on.store(!points.is_empty(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_listener_hears_its_point_only_and_untapped_nothing_is_made() {
        let tap = Arc::new(Tap::default());
        tap.offer(
            || panic!("a point made while nobody listens"),
            || panic!("made while nobody listens"),
        );
        let mut sink = tap.listen(Point::Sink("file".into()));
        assert!(tap.listening());
        tap.offer(
            || Point::Deserializer,
            || panic!("made for a point nobody listens at"),
        );
        tap.offer(
            || Point::Sink("file:/a".into()),
            || vec![Bytes::from("{\"a\":1}")],
        );
        tap.offer(|| Point::Sink("filex".into()), || vec![Bytes::from("{}")]);
        let heard = sink.next().await.unwrap();
        assert_eq!(heard.point, Point::Sink("file:/a".into()));
        assert_eq!(heard.events, [Bytes::from("{\"a\":1}")]);
        drop(sink);
        assert!(!tap.listening(), "the last listener gone, the tap is off");
    }

    #[test]
    fn a_point_the_pipeline_does_not_offer_is_refused_with_those_it_does() {
        let tap = Tap::new(["grok", "date"], ["file:/var/out.jsonl", "stdout"]);
        for point in [
            Point::Deserializer,
            Point::Processor("date".into()),
            Point::Sink("file".into()),
            Point::Sink("file:/var/out.jsonl".into()),
            Point::Sink("stdout".into()),
        ] {
            assert_eq!(tap.check(&point), Ok(()), "{point:?}");
        }
        let there = [
            "deserializer",
            "processor `grok`",
            "processor `date`",
            "sink `file:/var/out.jsonl`",
            "sink `stdout`",
        ];
        for point in [
            Point::Processor("no_such_processor".into()),
            Point::Processor("file".into()),
            Point::Sink("grok".into()),
            Point::Sink("file:/var/other.jsonl".into()),
        ] {
            let named: Vec<String> = tap
                .check(&point)
                .unwrap_err()
                .iter()
                .map(Point::to_string)
                .collect();
            assert_eq!(named, there);
        }
    }

    #[test]
    fn a_point_reads_as_the_admin_endpoint_takes_it() {
        let p: Point = serde_json::from_str(r#"{"stage":"processor","name":"grok"}"#).unwrap();
        assert_eq!(p, Point::Processor("grok".into()));
        let d: Point = serde_json::from_str(r#"{"stage":"deserializer"}"#).unwrap();
        assert_eq!(d, Point::Deserializer);
    }
}
