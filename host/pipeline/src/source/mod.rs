//! Sources write raw bytes to the pipeline's buffer.
//!
//! - [`http`] (push): clients POST; "accepted" only once the buffer holds the body.
//! - [`otlp`] (push): OTLP/gRPC and OTLP/HTTP clients export logs, traces and metrics; the
//!   same promise as `http`.
//! - [`intake`]: what the push sources share between the request and the buffer;
//!   [`listener`]: how they serve connections (TLS, HTTP/1.1 and HTTP/2, the connection
//!   limit, closing those that hold a connection open without sending).
//! - [`mod@file`] (pull): reads a file line by line; it can re-read its input, so it only uses
//!   the in-memory buffer.
//!
//! Each source builds itself from its config; [`build`] is the one place that maps a
//! configured source to its implementation (adding a source: a new file, plus one line there).

pub mod file;
pub mod http;
pub mod intake;
pub mod listener;
pub mod otlp;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use sluice_buffer::BufferWriter;
use tokio::sync::watch;

use crate::counters::Counters;

/// A source, built and ready: [`run`](Source::run) writes what it receives to the buffer
/// until `stop` turns true, letting in-flight requests finish.
#[async_trait::async_trait]
pub trait Source: Send {
    async fn run(self: Box<Self>, stop: watch::Receiver<bool>);
}

/// Why a source could not start.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("cannot listen on port {port}: {error}")]
    Listen { port: u16, error: std::io::Error },
    /// `ssl_certificate_file` / `ssl_key_file` cannot be used.
    #[error("TLS: {0}")]
    Tls(String),
    /// `authentication` cannot be used (a password that does not resolve).
    #[error("authentication: {0}")]
    Authentication(String),
}

/// What a source is built with besides its config.
pub struct SourceContext {
    /// The pipeline's name, for logs and metric labels.
    pub pipeline: String,
    /// Where the source writes its records.
    pub writer: Arc<dyn BufferWriter>,
    /// The pipeline's counts (accepted, refused, ...).
    pub counters: Arc<Counters>,
}

/// The source a pipeline's `source:` configures.
pub async fn build(
    config: &sluice_config::Source,
    cx: SourceContext,
) -> Result<Box<dyn Source>, SourceError> {
    Ok(match config {
        sluice_config::Source::Http(c) => Box::new(http::bind(c, cx).await?),
        sluice_config::Source::File(c) => Box::new(file::FileLines::new(c, cx)),
        other => {
            let (kind, otlp) = other.otlp().expect("the other sources are OTLP");
            let settings = otlp.settings(kind, &cx.pipeline);
            Box::new(otlp::bind(&settings, cx).await?)
        }
    })
}

/// Now, in ms since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
