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
    /// Where the events go; each event goes to every sink. At least one is required.
    pub sink: Vec<Sink>,
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
    "sink",
    "dlq_path",
];

pub(crate) const fn default_workers() -> usize {
    1
}

pub(crate) const fn default_delay() -> Duration {
    Duration::from_millis(3000)
}
