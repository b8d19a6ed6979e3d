//! What every push source does with what a client sent, whatever the protocol: admit the
//! request under `max_pending_requests`, keep the headers the buffer's policy reads, write the
//! records and wait until the buffer holds them, and count it all. A refusal says why and when
//! to retry; each protocol renders it its own way (the http source as a status code with
//! `Retry-After`, the OTLP sources as OTLP/HTTP statuses or gRPC statuses with `RetryInfo`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use axum::http::HeaderMap;
use sluice_buffer::{BufferWriter, Record, WriteError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::counters::Counters;

/// Why a request was not accepted. Nothing of it is in the buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Too many requests in progress (`max_pending_requests`): retry later.
    Busy {
        retry_after: Duration,
        message: String,
    },
    /// The buffer's policy holds this client back (a rate or quota): retry later.
    Throttled {
        retry_after: Duration,
        message: String,
    },
    /// The buffer stayed full for `request_timeout`, is shutting down or cannot be reached:
    /// retry later.
    Unavailable {
        retry_after: Duration,
        message: String,
    },
    /// Larger than the buffer ever takes: retrying the same request cannot help.
    TooLarge { message: String },
}

impl Refusal {
    /// What the client is told.
    pub fn message(&self) -> &str {
        match self {
            Refusal::Busy { message, .. }
            | Refusal::Throttled { message, .. }
            | Refusal::Unavailable { message, .. }
            | Refusal::TooLarge { message } => message,
        }
    }

    /// When the client may retry; `None` when it should not.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Refusal::Busy { retry_after, .. }
            | Refusal::Throttled { retry_after, .. }
            | Refusal::Unavailable { retry_after, .. } => Some(*retry_after),
            Refusal::TooLarge { .. } => None,
        }
    }
}

/// `Retry-After` in whole seconds, rounded up (a client never retries too early), at least 1.
pub fn retry_after_seconds(retry_after: Duration) -> String {
    retry_after.as_millis().div_ceil(1000).max(1).to_string()
}

/// How long clients are told to wait after a refusal: `min` after the first, doubling with
/// each refusal in a row up to `max`, back to `min` after a write succeeds (Data Prepper's
/// `retry_info`). The http source uses 1 s throughout.
#[derive(Debug)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    /// Refusals since the last accepted write.
    streak: AtomicU32,
}

impl Backoff {
    pub fn new(min: Duration, max: Duration) -> Self {
        Self {
            min,
            max: max.max(min),
            streak: AtomicU32::new(0),
        }
    }

    fn refused(&self) -> Duration {
        let streak = self.streak.fetch_add(1, Ordering::Relaxed).min(16);
        self.min.saturating_mul(1 << streak).min(self.max)
    }

    fn accepted(&self) {
        self.streak.store(0, Ordering::Relaxed);
    }
}

/// A request's place under `max_pending_requests`, given back (and uncounted in
/// `sluice_requestsInProgress`) when dropped.
pub struct InProgress {
    _permit: OwnedSemaphorePermit,
    gauge: metrics::Gauge,
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.gauge.decrement(1.0);
    }
}

/// One push source's way into the buffer.
pub struct Intake {
    pub pipeline: String,
    writer: Arc<dyn BufferWriter>,
    /// `request_timeout`: how long a write may wait for room.
    timeout: Duration,
    counters: Arc<Counters>,
    /// `max_pending_requests`: a permit per request being handled.
    pending: Arc<Semaphore>,
    max_pending: usize,
    /// `sluice_requestsInProgress{pipeline}`: the requests holding a place.
    in_progress: metrics::Gauge,
    /// Request headers the buffer's policy reads (lowercase names).
    wanted_headers: Vec<String>,
    backoff: Backoff,
}

impl Intake {
    pub fn new(
        pipeline: &str,
        writer: Arc<dyn BufferWriter>,
        counters: Arc<Counters>,
        request_timeout: Duration,
        max_pending_requests: usize,
        backoff: Backoff,
    ) -> Self {
        Self {
            pipeline: pipeline.to_owned(),
            wanted_headers: writer.wanted_headers(),
            writer,
            timeout: request_timeout,
            counters,
            pending: Arc::new(Semaphore::new(
                max_pending_requests.min(Semaphore::MAX_PERMITS),
            )),
            max_pending: max_pending_requests,
            in_progress: metrics::gauge!("sluice_requestsInProgress", "pipeline" => pipeline.to_owned()),
            backoff,
        }
    }

    /// A place among the requests in progress, held until the request is answered.
    pub fn admit(&self, source: &str) -> Result<InProgress, Refusal> {
        let admitted = self.pending.clone().try_acquire_owned().map(|permit| {
            self.in_progress.increment(1.0);
            InProgress {
                _permit: permit,
                gauge: self.in_progress.clone(),
            }
        });
        admitted.map_err(|_| {
            self.counters.refused.add(1);
            Refusal::Busy {
                retry_after: self.backoff.refused(),
                message: format!(
                    "too many requests in progress: the {source} source's `max_pending_requests` \
                     = {} is reached; retry later",
                    self.max_pending
                ),
            }
        })
    }

    /// The largest record the buffer takes, if it has a limit.
    pub fn max_record_size(&self) -> Option<usize> {
        self.writer.max_record_size()
    }

    /// The partition the buffer puts a record keyed `key` in, if it can tell (Kafka).
    pub fn partition_of(&self, key: &[u8]) -> Option<u32> {
        self.writer.partition_of(key)
    }

    /// The headers the buffer's policy reads (`X-Tenant`, `Idempotency-Key`), and no others.
    pub fn headers(&self, headers: &HeaderMap) -> Vec<(String, String)> {
        self.wanted_headers
            .iter()
            .filter_map(|name| {
                let value = headers.get(name.as_str())?.to_str().ok()?;
                Some((name.clone(), value.to_owned()))
            })
            .collect()
    }

    /// A refusal for a body too large for the buffer, counted.
    pub fn too_large(&self, message: String) -> Refusal {
        self.counters.overflows.add(1);
        Refusal::TooLarge { message }
    }

    /// Writes `records` and resolves once the buffer holds all of them, or with why not.
    pub async fn write(&self, records: Vec<Record>) -> Result<(), Refusal> {
        let n = records.len() as u64;
        match self.writer.write(records, self.timeout).await {
            Ok(()) => {
                self.counters.accepted.add(n);
                self.backoff.accepted();
                Ok(())
            }
            Err(e @ (WriteError::TooLarge { .. } | WriteError::RecordTooLarge { .. })) => {
                Err(self.too_large(e.to_string()))
            }
            Err(WriteError::Throttled {
                retry_after,
                reason,
            }) => {
                self.counters.refused.add(1);
                Err(Refusal::Throttled {
                    retry_after,
                    message: format!("{reason}; retry later"),
                })
            }
            Err(e) => {
                if let WriteError::Full(_) = e {
                    self.counters.write_timeouts.add(1);
                }
                self.counters.refused.add(1);
                tracing::warn!(pipeline = %self.pipeline, error = %e, "refusing request");
                Err(Refusal::Unavailable {
                    retry_after: self.backoff.refused(),
                    message: format!("{e}; retry later"),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_while_refusing_and_resets_on_success() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
        let waits: Vec<u128> = (0..7).map(|_| b.refused().as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1600, 2000, 2000]);
        b.accepted();
        assert_eq!(b.refused(), Duration::from_millis(100));
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(retry_after_seconds(Duration::from_millis(100)), "1");
        assert_eq!(retry_after_seconds(Duration::from_millis(1001)), "2");
        assert_eq!(retry_after_seconds(Duration::ZERO), "1");
    }
}
