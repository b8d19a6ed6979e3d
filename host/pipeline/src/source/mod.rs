//! Sources write raw bytes to the pipeline's buffer.
//!
//! - [`http`] (push): clients POST; "accepted" only once the buffer holds the body.
//! - [`otlp`] (push): OTLP/gRPC and OTLP/HTTP clients export logs, traces and metrics; the
//!   same promise as `http`.
//! - [`intake`]: what the push sources share between the request and the buffer;
//!   [`listener`]: how they serve connections from one resolved
//!   [`ListenerSettings`](sluice_config::ListenerSettings) (TLS, HTTP/1.1 and HTTP/2, the
//!   connection limit, closing those that hold a connection open without sending).
//! - [`mod@file`] (pull): reads a file line by line; it can re-read its input, so it only uses
//!   the in-memory buffer.
//! - [`pipeline`]: receives nothing itself; upstream pipelines' `pipeline` sinks write into its
//!   buffer.
//!
//! Each source is built from its resolved settings (`sluice_config`'s
//! [`Resolve::Settings`](sluice_config::Resolve::Settings): `HttpSettings`, `OtlpSettings`,
//! `FileSettings`, ...), never from the YAML's structs: its file (one per line of
//! `sluice_config::for_each_source!`, `source/<module>.rs`) implements `Build` for them, and
//! [`build`], generated from the same list, resolves a configured source and builds it.
//! Adding a source: `docs/design/components.md`.

pub mod intake;
pub mod listener;
mod pulled;

// One module per source of `sluice_config`'s list: its runtime, `source/<module>.rs`.
sluice_config::for_each_source!(list_modules);

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_buffer::{BufferWriter, Record, WriteError};
use tokio::sync::watch;

use sluice_config::list_modules;

use crate::counters::Counters;

/// A source, built and ready: [`run`](Source::run) writes what it receives to the buffer
/// until `stop` turns true, letting in-flight requests finish.
#[async_trait::async_trait]
pub trait Source: Send {
    async fn run(self: Box<Self>, stop: watch::Receiver<bool>);
}

/// What a source that reads its input itself adds to the events of each record it read
/// (Data Prepper's `kafka_*` attributes, the `s3` object's bucket and key).
pub trait Decorate: Send + Sync + std::fmt::Debug {
    /// What `record`'s events get; records that get the same may share one (the lines of one
    /// object), which lets the worker add it to their text once.
    fn decorate(&self, record: &Record) -> Arc<Decoration>;
}

/// What [`Decorate`] adds to each event of one record.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Decoration {
    /// Metadata attributes.
    pub attributes: serde_json::Map<String, serde_json::Value>,
    /// Fields to set, each by its path (`["s3", "bucket"]`: objects made on the way).
    pub fields: Vec<(Vec<String>, serde_json::Value)>,
}

/// The decorator of pipeline source `source`, if it has one.
pub(crate) fn decorator(source: &sluice_config::Source) -> Option<Arc<dyn Decorate>> {
    match source {
        sluice_config::Source::Kafka(_) => kafka::Topics::of(source),
        sluice_config::Source::S3(s) => s3::Objects::of(s),
        _ => None,
    }
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
    Authentication(#[from] sluice_config::SecretError),
}

/// What a source is built with besides its config.
pub struct SourceContext {
    /// The pipeline's name, for logs and metric labels.
    pub pipeline: String,
    /// Where the source writes its records.
    pub writer: Arc<dyn BufferWriter>,
    /// The pipeline's counts (accepted, refused, ...).
    pub counters: Arc<Counters>,
    /// The buffer partitions by record key (Kafka): a source that can keys its records so that
    /// related ones stay together (the OTLP trace sources: records by trace, the traces of one
    /// partition together).
    pub keyed: bool,
}

/// Builds a source's runtime from its resolved settings: each source's file implements it for
/// its config's [`Resolve::Settings`](sluice_config::Resolve::Settings), and [`build`] calls it.
trait Build {
    async fn build(self, cx: SourceContext) -> Result<Box<dyn Source>, SourceError>;
}

/// [`build`], from the list of sources: a source in `sluice_config::for_each_source!` whose
/// settings have no [`Build`] does not compile.
macro_rules! build_source {
    ($( $(#[$doc:meta])* $variant:ident($module:ident::$config:ident) = $name:literal, )*) => {
        /// The source a pipeline's `source:` configures, built from its resolved settings.
        pub async fn build(
            config: &sluice_config::Source,
            cx: SourceContext,
        ) -> Result<Box<dyn Source>, SourceError> {
            match config {
                $(
                    sluice_config::Source::$variant(c) => {
                        let settings = sluice_config::Resolve::resolve(&**c, &cx.pipeline)?;
                        settings.build(cx).await
                    }
                )*
            }
        }
    };
}
sluice_config::for_each_source!(build_source);

/// Writes `records` for a source that can wait (a file, standard input, a generator: its input
/// waits with it), counted as accepted once written. While the buffer is full, unavailable
/// (Kafka down) or throttles, it tries again, each try waiting up to `each` for room; a batch
/// larger than the buffer holds goes in parts. A record larger than the buffer takes can never
/// be written: it is logged by its origin and counted refused, and the rest go on. An error
/// only when the buffer is shutting down: the source stops.
pub(crate) async fn write_waiting(
    writer: &dyn BufferWriter,
    mut records: Vec<Record>,
    counters: &Counters,
    each: Duration,
) -> Result<(), WriteError> {
    while !records.is_empty() {
        let n = records.len();
        match writer.write(records.clone(), each).await {
            Ok(()) => {
                counters.accepted.add(n as u64);
                return Ok(());
            }
            Err(WriteError::Full(_)) => {
                tracing::debug!(records = n, "the buffer is full; the source waits for room");
            }
            Err(WriteError::Unavailable(reason)) => {
                tracing::warn!(%reason, "the buffer is unavailable; the source tries again");
                tokio::time::sleep(each).await;
            }
            Err(WriteError::Throttled { retry_after, .. }) => {
                tokio::time::sleep(retry_after).await;
            }
            Err(WriteError::TooLarge { capacity, .. }) if n > 1 => {
                let rest = records.split_off(capacity.clamp(1, n - 1));
                Box::pin(write_waiting(writer, records, counters, each)).await?;
                records = rest;
            }
            Err(e @ (WriteError::TooLarge { .. } | WriteError::RecordTooLarge { .. })) => {
                // Which records: the one of a batch of one, else those over the limit.
                let max = match e {
                    WriteError::RecordTooLarge { max, .. } => max,
                    _ => 0,
                };
                records.retain(|record| {
                    let size = record.payload.len() + record.key.as_ref().map_or(0, Vec::len);
                    let fits = n > 1 && size <= max;
                    if !fits {
                        tracing::error!(origin = %record.origin, size, error = %e, "a record the buffer can never take; refused");
                        counters.refused.add(1);
                    }
                    fits
                });
                if records.len() == n {
                    // None stood out: halves, down to the one that cannot go.
                    let rest = records.split_off(n / 2);
                    Box::pin(write_waiting(writer, records, counters, each)).await?;
                    records = rest;
                }
            }
            Err(e @ WriteError::Closed) => {
                tracing::info!("the buffer is shutting down; the source stops");
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Now, in ms since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use sluice_buffer::{BufferWriter, Record, WriteError};

    use super::write_waiting;
    use crate::counters::Counters;

    /// A buffer of `capacity` records per write and `max` bytes per record, unavailable for
    /// its first write, that keeps what it took.
    struct Small {
        capacity: usize,
        max: usize,
        took: Mutex<Vec<String>>,
        tries: Mutex<usize>,
    }

    #[async_trait::async_trait]
    impl BufferWriter for Small {
        async fn write(&self, records: Vec<Record>, _: Duration) -> Result<(), WriteError> {
            *self.tries.lock().unwrap() += 1;
            if *self.tries.lock().unwrap() == 1 {
                return Err(WriteError::Unavailable("starting".to_owned()));
            }
            if records.len() > self.capacity {
                let (records, capacity) = (records.len(), self.capacity);
                return Err(WriteError::TooLarge { records, capacity });
            }
            if let Some(r) = records.iter().find(|r| r.payload.len() > self.max) {
                let (size, max) = (r.payload.len(), self.max);
                return Err(WriteError::RecordTooLarge { size, max });
            }
            let mut took = self.took.lock().unwrap();
            took.extend(records.iter().map(|r| r.origin.clone()));
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_waiting_source_writes_around_what_the_buffer_cannot_take() {
        let buffer = Small {
            capacity: 2,
            max: 3,
            took: Mutex::default(),
            tries: Mutex::default(),
        };
        let records = ["a", "b", "toolong", "d", "e"]
            .into_iter()
            .map(|payload| Record {
                payload: payload.as_bytes().to_vec(),
                origin: payload.to_owned(),
                ..Default::default()
            })
            .collect();
        let counters = Counters::new("p", "t");
        write_waiting(&buffer, records, &counters, Duration::from_millis(1))
            .await
            .unwrap();
        assert_eq!(*buffer.took.lock().unwrap(), ["a", "b", "d", "e"]);
        assert_eq!((counters.accepted.get(), counters.refused.get()), (4, 1));
    }
}
