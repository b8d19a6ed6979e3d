//! Sending a request until the output takes it: retryable failures wait an exponential
//! backoff with jitter and send again (only the events still to send); events the output
//! refuses for good go to the dead-letter file with the reason. Every outcome is counted.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use super::dlq::{self, DeadLetters, Rejected};
use super::{Output, Retry, SendError};

/// The wait before retry number `attempt` (0-based): `initial × 2^attempt`, capped, then a
/// random point in its upper half, so that sinks (and hosts) that failed together do not retry
/// together.
pub(crate) fn backoff(retry: &Retry, attempt: u32) -> Duration {
    let base = retry
        .initial_backoff
        .saturating_mul(1 << attempt.min(20))
        .min(retry.max_backoff);
    base / 2 + base.mul_f64(fastrand::f64() / 2.0)
}

/// The counters of one sink, labelled `{pipeline, sink}`.
pub(crate) struct SinkMetrics {
    /// Events the destination holds.
    pub(crate) written: metrics::Counter,
    /// Requests that failed and were sent again.
    pub(crate) retries: metrics::Counter,
    /// Events the sink gave up on (refused for good, or out of retries): dead-lettered.
    pub(crate) failed: metrics::Counter,
    /// Requests the destination took.
    pub(crate) requests: metrics::Counter,
}

impl SinkMetrics {
    pub(crate) fn new(pipeline: &str, sink: &str) -> Self {
        let c = |name: &'static str| metrics::counter!(name, "pipeline" => pipeline.to_owned(), "sink" => sink.to_owned());
        Self {
            written: c("sluice_sink_eventsWritten"),
            retries: c("sluice_sink_retries"),
            failed: c("sluice_sink_eventsFailed"),
            requests: c("sluice_sink_requestsSucceeded"),
        }
    }
}

/// A sink whose destination is failing: requests are being retried.
#[derive(Debug, Clone)]
pub struct Failing {
    pub pipeline: String,
    pub sink: String,
    /// Since when its requests fail.
    pub since: std::time::Instant,
    /// The last failure.
    pub reason: String,
}

/// The sinks of this process whose requests are being retried, by `(pipeline, sink)`.
static FAILING: std::sync::Mutex<std::collections::BTreeMap<(String, String), Failing>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// The sinks of this process being retried now (for `/health`).
pub fn failing() -> Vec<Failing> {
    FAILING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .cloned()
        .collect()
}

/// One output with what it needs to deliver: its retry policy, the pipeline's dead-letter
/// file, its counters.
pub(crate) struct Delivery {
    pipeline: String,
    /// The sink's name.
    pub(crate) name: String,
    pub(crate) output: Arc<dyn Output>,
    retry: Retry,
    dead_letters: Arc<DeadLetters>,
    pub(crate) metrics: SinkMetrics,
}

impl Delivery {
    pub(crate) fn new(
        pipeline: &str,
        name: String,
        output: Arc<dyn Output>,
        dead_letters: Arc<DeadLetters>,
    ) -> Self {
        Self {
            pipeline: pipeline.to_owned(),
            metrics: SinkMetrics::new(pipeline, &name),
            name,
            retry: output.retry(),
            output,
            dead_letters,
        }
    }

    /// Sends `events` until every one is taken or dead-lettered. No events is nothing to send,
    /// unless the output [`records_reads`](Output::records_reads) and the batch read some.
    pub(crate) async fn send(&self, events: Vec<Bytes>, from: super::Provenance) {
        if events.is_empty() && (from.covers.is_empty() || !self.output.records_reads()) {
            return;
        }
        let sink = self.name.as_str();
        let mut todo = events;
        let mut from = from;
        let mut attempt = 0u32;
        loop {
            let reason = match self.output.send(&todo, &from).await {
                Ok(()) => {
                    if !todo.is_empty() {
                        self.metrics.requests.increment(1);
                        self.metrics.written.increment(todo.len() as u64);
                    }
                    self.mark(None);
                    return;
                }
                Err(SendError::Reject(reason)) => {
                    tracing::warn!(pipeline = %self.pipeline, sink, events = todo.len(), %reason, "the sink refused events; dead-lettering them");
                    let rejected: Vec<_> = todo.iter().map(|e| (e, reason.as_str())).collect();
                    self.dead_letter(&rejected).await;
                    return;
                }
                Err(SendError::Partial {
                    rejected,
                    retry,
                    reason,
                }) => {
                    // An output's indices are trusted for the events, not for arithmetic.
                    let taken = todo.len().saturating_sub(rejected.len() + retry.len());
                    self.metrics.written.increment(taken as u64);
                    if !rejected.is_empty() {
                        tracing::warn!(pipeline = %self.pipeline, sink, events = rejected.len(), reason = %rejected[0].1, "the sink refused events; dead-lettering them");
                        let dead: Vec<_> = rejected
                            .iter()
                            .filter_map(|(i, why)| todo.get(*i).map(|e| (e, why.as_str())))
                            .collect();
                        self.dead_letter(&dead).await;
                    }
                    if retry.is_empty() {
                        self.metrics.requests.increment(1);
                        self.mark(None);
                        return;
                    }
                    todo = retry.iter().filter_map(|i| todo.get(*i).cloned()).collect();
                    if !from.at.is_empty() {
                        from.at = retry
                            .iter()
                            .filter_map(|i| from.at.get(*i).cloned())
                            .collect();
                    }
                    reason
                }
                Err(SendError::Retry(reason)) => reason,
            };
            if self.retry.max_retries.is_some_and(|max| attempt >= max) {
                let reason = format!("gave up after {} attempts: {reason}", attempt + 1);
                tracing::error!(pipeline = %self.pipeline, sink, events = todo.len(), %reason, "dead-lettering events the sink did not take");
                let dead: Vec<_> = todo.iter().map(|e| (e, reason.as_str())).collect();
                self.dead_letter(&dead).await;
                return;
            }
            self.mark(Some(&reason));
            let wait = backoff(&self.retry, attempt);
            tracing::warn!(pipeline = %self.pipeline, sink, events = todo.len(), %reason, retry_in = ?wait, attempt = attempt + 1, "the sink failed to take events; retrying");
            self.metrics.retries.increment(1);
            attempt = attempt.saturating_add(1);
            tokio::time::sleep(wait).await;
        }
    }

    /// Records that the sink's requests fail for `reason`, or (`None`) that one was taken.
    fn mark(&self, reason: Option<&str>) {
        let mut failing = FAILING.lock().unwrap_or_else(|e| e.into_inner());
        let key = (self.pipeline.clone(), self.name.clone());
        match reason {
            None => {
                failing.remove(&key);
            }
            Some(reason) => {
                let entry = failing.entry(key).or_insert_with(|| Failing {
                    pipeline: self.pipeline.clone(),
                    sink: self.name.clone(),
                    since: std::time::Instant::now(),
                    reason: String::new(),
                });
                entry.reason = reason.to_owned();
            }
        }
    }

    /// Writes `events` to the dead-letter file, each with its reason; retries the file until
    /// it holds them (they are not acknowledged before).
    async fn dead_letter(&self, events: &[(&Bytes, &str)]) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let origin = format!("sink:{}", self.name);
        let entries: Vec<_> = events
            .iter()
            .map(|(event, reason)| {
                let rejected = Rejected {
                    stage: dlq::Stage::Sink { name: &self.name },
                    origin: &origin,
                    payload: &self.output.payload(event),
                    key: None,
                    content_type: Some("application/json"),
                    received_at_ms: now,
                };
                dlq::entry(&self.pipeline, rejected, reason)
            })
            .collect();
        self.dead_letters.write_until_held(&entries).await;
        self.metrics.failed.increment(entries.len() as u64);
    }
}
