//! The `sink`s of a pipeline: their shape.

use std::path::PathBuf;

use serde::Deserialize;

/// A sink: one key naming the plugin.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Sink {
    /// Writes each event as one JSON line to standard output.
    Stdout(StdoutSink),
    /// Appends each event as one JSON line to a file, flushed after every batch.
    File(FileSink),
}

/// The `stdout` sink. It takes no options.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StdoutSink {}

/// The `file` sink.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSink {
    /// The file to append to; created (with its folder) if missing. Required.
    pub path: PathBuf,
}
