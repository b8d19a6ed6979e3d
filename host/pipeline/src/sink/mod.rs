//! Sinks: where events go. Each takes a whole batch of event lines and returns once it holds
//! them (for files: written and flushed), so the worker can acknowledge the batch.
//!
//! # Layout
//! - this file: the [`Sink`] trait, [`SinkError`], and [`build`], the one place that maps a
//!   configured sink to its implementation (adding a sink: a new file, plus one line there).
//! - [`stdout`], [`mod@file`]: the sinks.
//! - [`dlq`]: the dead-letter file: what a rejected record looks like there, and where it goes.

pub mod dlq;
pub mod file;
pub mod stdout;

use std::sync::Arc;

/// Why a sink could not take a batch. The worker retries with backoff.
#[derive(Debug, thiserror::Error)]
#[error("sink `{sink}`: {source}")]
pub struct SinkError {
    pub sink: String,
    pub source: std::io::Error,
}

/// A destination for events.
#[async_trait::async_trait]
pub trait Sink: Send + Sync {
    /// For logs: `stdout`, `file <path>`.
    fn name(&self) -> &str;

    /// Writes `lines` (JSON events, each ending in `\n`), all or, on error, to be retried
    /// whole. Resolves once the sink holds them.
    async fn write(&self, lines: &[u8]) -> Result<(), SinkError>;
}

/// The sink a pipeline's `sink:` entry configures.
pub async fn build(config: &sluice_config::Sink) -> Result<Arc<dyn Sink>, SinkError> {
    Ok(match config {
        sluice_config::Sink::Stdout(_) => Arc::new(stdout::StdoutSink::default()),
        sluice_config::Sink::File(f) => Arc::new(file::FileSink::open(&f.path).await?),
    })
}
