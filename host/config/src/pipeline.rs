//! The pipeline file's shape, in Data Prepper's form: a map of pipeline name to
//! `{workers, delay, source, buffer, processor, sink}`, with one plugin key per component;
//! and the rules that span a pipeline's fields or several pipelines.
//!
//! Every struct refuses unknown fields; every field's `///` doc is its user documentation (the
//! README's reference is written from it). Defaults follow Data Prepper where it has one.
//! Each component's shape and rules live in its own module: [`crate::source`],
//! [`crate::buffer`], [`crate::kafka`], [`crate::sink`].

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use sluice_event::{Expression, Key};

use crate::{Buffer, Processor, Sink, Source};

/// A whole pipeline file: pipelines in the order they are written.
#[derive(Debug, Clone)]
pub struct Config {
    pub pipelines: Vec<Pipeline>,
}

/// One pipeline.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// The pipeline's name: its key in the file.
    pub name: String,
    /// Read-side workers: how many batches are deserialized and written to the sinks at once.
    /// Default 1, as in Data Prepper.
    pub workers: usize,
    /// How long a worker waits for a batch to fill before taking what is there. Default 3000
    /// (milliseconds), as in Data Prepper; lower it for lower latency.
    pub delay: Duration,
    /// Where the data comes from. Required.
    pub source: Source,
    /// Where accepted data waits before it is deserialized. Default: `bounded_blocking`.
    pub buffer: Buffer,
    /// Processors: plugins from the plugin folder, applied in order to every event between the
    /// deserializer and the sinks (`- name: {options}`). Default: none.
    pub processor: Vec<Processor>,
    /// Named conditions (`route:`, or Data Prepper's newer spelling `routes:`): `- name:
    /// "expression"`. A sink with `routes` takes the events of those routes. Default: none.
    pub route: Vec<Route>,
    /// Where the events go: each event goes to every sink without `routes`, and to each sink
    /// one of whose `routes` it matches. At least one is required.
    pub sink: Vec<RoutedSink>,
    /// The dead-letter file: one JSON line per record that could not be deserialized. Default:
    /// `<data dir>/dlq/<pipeline>.jsonl`.
    pub dlq_path: Option<PathBuf>,
}

/// The fields of a pipeline, for suggestions.
pub const PIPELINE_FIELDS: &[&str] = &[
    "workers",
    "delay",
    "source",
    "buffer",
    "processor",
    "route",
    "routes",
    "sink",
    "dlq_path",
];

pub(crate) const fn default_workers() -> usize {
    1
}

pub(crate) const fn default_delay() -> Duration {
    Duration::from_millis(3000)
}

/// One route: a name the sinks' `routes` use, and the condition of the events it takes.
#[derive(Debug, Clone)]
pub struct Route {
    pub name: String,
    pub condition: Expression,
}

/// The name a sink's `routes` uses for the events that matched no route.
pub const DEFAULT_ROUTE: &str = "_default";

/// A sink and the keys every sink takes (Data Prepper's `SinkModel`), read from the sink's
/// block beside its own keys.
#[derive(Debug, Clone)]
pub struct RoutedSink {
    pub sink: Sink,
    pub context: SinkContext,
}

impl From<Sink> for RoutedSink {
    fn from(sink: Sink) -> Self {
        Self {
            sink,
            context: SinkContext::default(),
        }
    }
}

/// The keys every sink takes.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SinkContext {
    /// The routes whose events this sink takes; `_default` is the events that matched none.
    /// Default: every event.
    #[serde(default)]
    pub routes: Vec<String>,
    /// Writes each event's tags (a list) under this key in what the sink sends.
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub tags_target_key: Option<Key>,
    /// Only these top-level keys of each event are sent. Not with `exclude_keys`.
    #[serde(default)]
    pub include_keys: Vec<String>,
    /// These top-level keys of each event are not sent.
    #[serde(default)]
    pub exclude_keys: Vec<String>,
    #[serde(default)]
    pub forward_to: Option<crate::processor::Unsupported>,
}

impl SinkContext {
    /// The keys of a sink's block that are the context's, not the sink's.
    pub const KEYS: &[&str] = &[
        "routes",
        "tags_target_key",
        "include_keys",
        "exclude_keys",
        "forward_to",
    ];

    /// Whether the sink changes the events it is given (tags, keys).
    pub fn reshapes(&self) -> bool {
        self.tags_target_key.is_some()
            || !self.include_keys.is_empty()
            || !self.exclude_keys.is_empty()
    }
}
