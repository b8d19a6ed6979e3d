//! Sinks: where events go. A sink is an [`Output`] (the destination: a file, a Kafka topic,
//! an S3 bucket, an HTTP endpoint) driven by the same machinery for every kind ([`Sink`]):
//! staging events up to a threshold, retrying with backoff and jitter, dead-lettering what the
//! destination refuses for good, counting all of it, and completing each batch's [`Receipt`]
//! only once the destination holds the events, so the buffer acknowledges (Kafka: commits)
//! nothing a sink could still lose. See `docs/design/sinks.md`.
//!
//! # Layout
//! - this file: the [`Output`] trait and its [`SendError`], [`SinkError`] (each sink's own
//!   error, boxed), [`Sink`] (what the workers call), and [`build`], made from
//!   `sluice_config`'s sink list: each config resolved, its settings' `BuildOutput` (in its
//!   runtime file) makes its output.
//! - `receipt`: a batch's acknowledgement shared by its sinks, and the [`Tally`] through which
//!   they complete single records.
//! - `deliver`: sending with retries; what goes to the dead-letter file.
//! - `staged`: the task that collects events up to a threshold for outputs that want
//!   large requests (s3, http); `keyed`, its half that cuts them by buffer offsets, one
//!   partition's run of records each, so a batch read again makes the same requests.
//! - `codec`: ndjson / json bodies, gzip.
//! - the outputs: [`stdout`], [`mod@file`], [`kafka`], [`s3`], [`http`], [`pipeline`] (to
//!   another pipeline's buffer).
//! - [`dlq`]: the dead-letter file: what a rejected record looks like there, and where it goes.

mod codec;
mod deliver;
pub mod dlq;
mod keyed;
mod receipt;
mod staged;

// One module per sink of `sluice_config`'s list: its runtime, `sink/<module>.rs`.
use sluice_config::list_modules;
sluice_config::for_each_sink!(list_modules);

use std::sync::Arc;

use bytes::Bytes;
use sluice_buffer::Position;

pub use self::deliver::{Failing, failing};
use self::dlq::DeadLetters;
pub use self::receipt::{Receipt, Tally};
pub use sluice_config::sink::batching::{Retry, Threshold};

/// Why a sink could not be set up (or the dead-letter file written).
#[derive(Debug, thiserror::Error)]
#[error("sink `{sink}`: {source}")]
pub struct SinkError {
    pub sink: String,
    /// The sink's own error (each sink's setup fails in its own ways: its `BuildOutput::Error`),
    /// boxed at this boundary.
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl SinkError {
    pub fn new(sink: &str, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self {
            sink: sink.to_owned(),
            source: source.into(),
        }
    }
}

/// Why an output did not take (all of) a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// Nothing was taken, for a reason that may pass (the server is down, answered 503, the
    /// topic is unavailable): the whole request is sent again after a backoff.
    Retry(String),
    /// Nothing was taken, and sending again cannot help (a 4xx, a record too large): every event
    /// goes to the dead-letter file with the reason.
    Reject(String),
    /// Some events were taken and others not, each with its own fate (a bulk API's per-item
    /// answers, a Kafka produce where some records failed). `rejected` go to the dead-letter
    /// file; `retry` are sent again. Indices are into the events of the request.
    Partial {
        rejected: Vec<(usize, String)>,
        retry: Vec<usize>,
        /// Why the retried ones failed, for logs.
        reason: String,
    },
}

/// A destination. Implementations only send; staging, retries, dead letters, counting and the
/// name (its config's, `sluice_config::Sink::name`) are the [`Sink`]'s.
#[async_trait::async_trait]
pub trait Output: Send + Sync + 'static {
    /// Sends `events` (one serialized JSON object each, without a newline), which came from
    /// `from` (`from.at` is aligned with `events`; empty for events from nowhere in a buffer,
    /// as a dead-letter replay's). Resolves once the destination holds them durably, or with
    /// what it did not take. `events` is never empty unless the output
    /// [`records_reads`](Self::records_reads).
    async fn send(&self, events: &[Bytes], from: &Provenance) -> Result<(), SendError>;

    /// Whether the output records what each batch read (`from.covers`), so it is also sent
    /// the batches none of whose events reached it (the file sink, holding each event once).
    fn records_reads(&self) -> bool {
        false
    }

    /// Events per request this output can take at most (a Kafka produce has none; staged
    /// outputs get theirs from `threshold`).
    fn threshold(&self) -> Option<Threshold> {
        None
    }

    /// How failures are retried.
    fn retry(&self) -> Retry {
        Retry::default()
    }

    /// Whether requests should be cut by offsets where the buffer is Kafka (each
    /// [`send`](Self::send) then gets an [`Extent`] to name the request by).
    fn keyed(&self) -> bool {
        false
    }

    /// How the output writes each event's line itself, from the whole event, instead of the
    /// event serialized (the opensearch sink: an action line from the event and its metadata,
    /// then the document).
    fn encoder(&self) -> Option<Arc<dyn Encode>> {
        None
    }

    /// What of a line goes to the dead-letter file as the event: the line, unless the
    /// output's [`encoder`](Self::encoder) wrote more than the event.
    fn payload(&self, line: &Bytes) -> Bytes {
        line.clone()
    }
}

/// Makes a document as a sink's `include_keys`, `exclude_keys` and `tags_target_key` say,
/// from the object it is given.
pub type Shape<'a> = &'a dyn Fn(&serde_json::Map<String, serde_json::Value>) -> serde_json::Value;

/// An output's own writing of an event ([`Output::encoder`]).
pub trait Encode: Send + Sync {
    /// The line `event` becomes; `shape`: how the sink reshapes documents (none: as they are).
    fn encode(&self, event: &sluice_event::Event, shape: Option<Shape<'_>>) -> Vec<u8>;
}

/// A sink as the workers use it.
pub struct Sink {
    name: String,
    route: Route,
}

enum Route {
    /// Each batch is sent by the worker that read it, retried until it is taken.
    Direct(Arc<deliver::Delivery>),
    /// Batches are collected by the sink's own task up to a threshold.
    Staged(staged::Stager),
    /// The events themselves go to a pipeline of this process whose buffer holds them.
    Handoff(pipeline::Handoff),
}

/// Where a batch's lines came from in a Kafka buffer, so a sink can hold each event once
/// (`docs/design/exactly-once.md`). Empty for a memory buffer's batches and a flush's; an
/// event that went through a stateful processor has no position (`None` in `at`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    /// Per line, its record's position and its rank among the lines of that record this
    /// sink takes; `None` for an event without one.
    pub at: Vec<Option<(Position, u32)>>,
    /// What the batch read (whether or not an event of it reached this sink): one span per
    /// read of a partition ([`Span::of_read`]).
    pub covers: Vec<Span>,
    /// For a request cut by offsets (an output that is [`keyed`](Output::keyed)): what it
    /// holds, to name it by.
    pub extent: Option<Extent>,
}

/// What a request cut by offsets holds: the events of one partition's records `first..=last`
/// (the first and last with events for the sink), whose boundaries depend only on the
/// records, so the same records make the same request after a crash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extent {
    pub topic: std::sync::Arc<str>,
    pub partition: i32,
    pub first: i64,
    pub last: i64,
    /// When the first record was received (ms since the epoch): the time its name carries.
    pub received_at_ms: u64,
    pub events: usize,
}

/// A contiguous run of offsets of one partition: `first..=last`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub topic: std::sync::Arc<str>,
    pub partition: i32,
    pub first: i64,
    pub last: i64,
}

impl Span {
    /// The span of one record.
    fn at(p: &Position) -> Span {
        Span {
            topic: p.topic.clone(),
            partition: p.partition,
            first: p.offset,
            last: p.offset,
        }
    }

    /// What a buffer's read of one partition covered: `start..end`, offsets the consumer
    /// never saw included (transaction markers, compacted records hold no data), so the
    /// ranges a sink records stay whole.
    pub fn of_read(read: &sluice_buffer::Read) -> Span {
        Span {
            topic: read.topic.clone(),
            partition: read.partition,
            first: read.start,
            last: read.end - 1,
        }
    }

    /// The runs of `positions` (in any order, repeats allowed).
    pub fn runs<'a>(positions: impl Iterator<Item = &'a Position>) -> Vec<Span> {
        let mut sorted: Vec<&Position> = positions.collect();
        sorted.sort_unstable();
        let mut runs: Vec<Span> = Vec::new();
        for p in sorted {
            match runs.last_mut() {
                Some(r)
                    if r.topic == p.topic
                        && r.partition == p.partition
                        && p.offset <= r.last + 1 =>
                {
                    r.last = r.last.max(p.offset);
                }
                _ => runs.push(Span::at(p)),
            }
        }
        runs
    }
}

/// A batch's events as one sink takes them.
pub enum Take {
    /// One serialized JSON object each, as an [`Output`] sends them, and where they came from.
    Lines(Vec<Bytes>, Provenance),
    /// The events themselves, for a sink that [`hands_events`](Sink::hands_events).
    Events(Vec<sluice_event::Event>),
}

impl Sink {
    /// The sink `name` over `output`, dead-lettering into `dead_letters`, counting under
    /// `pipeline`; `read_delay`: how long a record can wait to be read after it is received
    /// (the pipeline's `delay`), which a sink that cuts requests by offsets waits out before
    /// it closes one by the clock.
    pub fn new(
        pipeline: &str,
        name: String,
        output: Arc<dyn Output>,
        dead_letters: Arc<DeadLetters>,
        read_delay: std::time::Duration,
    ) -> Self {
        let threshold = output.threshold();
        let delivery = Arc::new(deliver::Delivery::new(
            pipeline,
            name.clone(),
            output,
            dead_letters,
        ));
        let route = match threshold {
            Some(t) => Route::Staged(staged::Stager::start(delivery, t, read_delay)),
            None => Route::Direct(delivery),
        };
        Self { name, route }
    }

    /// The sink `config` configures, for `cx.pipeline`: over its [`Output`], or, for a
    /// `pipeline` sink into a buffer of events, the handoff.
    pub async fn open(
        cx: &SinkBuild<'_>,
        config: &sluice_config::Sink,
        dead_letters: Arc<DeadLetters>,
    ) -> Result<Self, SinkError> {
        if let sluice_config::Sink::Pipeline(connection) = config
            && let Some(handoff) = pipeline::Handoff::new(config.name(), connection, cx)
        {
            return Ok(Self {
                name: handoff.name().to_owned(),
                route: Route::Handoff(handoff),
            });
        }
        Ok(Self::new(
            cx.pipeline,
            config.name(),
            build(cx, config).await?,
            dead_letters,
            cx.read_delay,
        ))
    }

    /// For logs.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How the sink's output writes each event's line, if it does ([`Output::encoder`]).
    pub fn encoder(&self) -> Option<Arc<dyn Encode>> {
        match &self.route {
            Route::Direct(delivery) => delivery.output.encoder(),
            Route::Staged(stager) => stager.encoder(),
            Route::Handoff(_) => None,
        }
    }

    /// Whether the sink takes the events themselves ([`Take::Events`]), not their lines.
    pub fn hands_events(&self) -> bool {
        matches!(self.route, Route::Handoff(_))
    }

    /// Hands a batch's events to the sink. Resolves once the sink has taken them in (it waits
    /// while the sink is behind: that is the pipeline's backpressure); `receipt` is completed
    /// when the events are durable at the destination or dead-lettered.
    pub async fn take(&self, events: Take, receipt: Receipt) {
        match (&self.route, events) {
            (Route::Direct(delivery), Take::Lines(events, from)) => {
                delivery.send(events, from).await;
                receipt.complete();
            }
            (Route::Staged(stager), Take::Lines(events, from)) => {
                stager.take(events, from, receipt).await
            }
            (Route::Handoff(handoff), Take::Events(events)) => handoff.take(events, receipt).await,
            (_, _) => unreachable!("the router gives a sink events exactly when it hands_events"),
        }
    }

    /// Whether the sink completes a batch's records one by one: it cuts its requests by
    /// offsets ([`Output::keyed`]).
    pub fn cuts_by_offsets(&self) -> bool {
        matches!(&self.route, Route::Staged(stager) if stager.keyed())
    }

    /// Shutdown has begun: a staging sink sends what it holds now and each batch as it comes.
    pub fn drain(&self) {
        if let Route::Staged(stager) = &self.route {
            stager.drain();
        }
    }

    /// Sends what is staged and waits until it is delivered; called once the workers stopped.
    pub async fn close(&self) {
        match &self.route {
            Route::Direct(_) => {}
            Route::Staged(stager) => stager.close().await,
            Route::Handoff(handoff) => handoff.close().await,
        }
    }
}

/// The error and its causes, as one line (an HTTP client's errors say little alone).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The events of a batch's JSON lines, one [`Bytes`] each (slices of one buffer).
pub fn events(lines: Vec<u8>) -> Vec<Bytes> {
    let all = Bytes::from(lines);
    split_lines(&all)
        .filter(|line| !line.is_empty())
        .map(|line| all.slice_ref(line))
        .collect()
}

/// The lines of `text`, as `text.split(|&b| b == b'\n')` gives them (an empty last one when
/// `text` ends with a newline), each newline found with `memchr`: a batch's lines are
/// kilobytes each, and a byte-at-a-time loop over them showed in the OTLP profile.
pub fn split_lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let text = rest?;
        match memchr::memchr(b'\n', text) {
            Some(i) => {
                rest = Some(&text[i + 1..]);
                Some(&text[..i])
            }
            None => {
                rest = None;
                Some(text)
            }
        }
    })
}

/// What a sink is built with besides its settings and name.
pub struct SinkBuild<'a> {
    /// The pipeline the sink belongs to.
    pub pipeline: &'a str,
    /// The buffers of the pipelines built before this one, for `pipeline` sinks.
    pub connections: &'a pipeline::Connections,
    /// The pipeline's `delay`: see [`Sink::new`].
    pub read_delay: std::time::Duration,
}

/// How a sink's settings (its config [resolved](sluice_config::Resolve)) become its output;
/// each settings type of `sluice_config`'s sink list implements it in its runtime file.
pub(crate) trait BuildOutput: Sized {
    /// Why the output cannot be set up: the sink's own causes.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Connects (or opens) the output of the sink named `name`.
    async fn build(self, name: &str, cx: &SinkBuild<'_>) -> Result<Arc<dyn Output>, Self::Error>;
}

macro_rules! build_sink {
    ($( $(#[$doc:meta])* $variant:ident($config:ty) = $name:literal, )*) => {
        /// The output a pipeline's `sink:` entry configures: one arm per line of the sink
        /// list, each its config [resolved](sluice_config::Resolve) and its settings'
        /// `BuildOutput`.
        pub async fn build(
            cx: &SinkBuild<'_>,
            config: &sluice_config::Sink,
        ) -> Result<Arc<dyn Output>, SinkError> {
            let name = config.name();
            let fail = |e: Box<dyn std::error::Error + Send + Sync>| SinkError::new(&name, e);
            match config {
                $( sluice_config::Sink::$variant(config) => {
                    let settings = sluice_config::Resolve::resolve(config, cx.pipeline)
                        .map_err(|e| fail(e.into()))?;
                    settings.build(&name, cx).await.map_err(|e| fail(e.into()))
                } )*
            }
        }
    };
}
sluice_config::for_each_sink!(build_sink);

#[cfg(test)]
mod tests;
