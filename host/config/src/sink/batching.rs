//! What the sinks that collect events into requests (s3, http) share as they run: one
//! [`Batching`] (how a request is written, when it is sent, how it is retried).

use std::time::Duration;

use super::{Codec, CodecConfig, Compression};

/// When collected events are sent. Whichever is reached first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threshold {
    /// Send once this many events are collected (a request holds at most this many).
    pub event_count: Option<usize>,
    /// Send once the collected events take this many bytes (a request holds at most this
    /// many, unless one event alone is larger).
    pub maximum_size: Option<u64>,
    /// Send once the oldest collected event has waited this long.
    pub event_collect_timeout: Option<Duration>,
}

/// How a sink's failed requests are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    /// The first wait; each retry doubles it, up to `max_backoff`.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// Retries before the events go to the dead-letter file; `None`: retry until they are
    /// taken, holding the batch's acknowledgement (the buffer keeps the data meanwhile).
    pub max_retries: Option<u32>,
}

impl Default for Retry {
    /// 100ms doubling up to 10s, until taken.
    fn default() -> Self {
        Self {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(10),
            max_retries: None,
        }
    }
}

/// How a sink that collects events into requests (s3, http) writes, sends and retries them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batching {
    pub codec: Codec,
    pub compression: Compression,
    pub threshold: Threshold,
    pub retry: Retry,
}

impl Batching {
    /// From a sink's keys: `codec` (default `ndjson`), `compression`, its threshold, and
    /// `max_retries` with the longest wait between retries (default [`Retry`]'s).
    pub(crate) fn new(
        codec: Option<&CodecConfig>,
        compression: Compression,
        threshold: Threshold,
        max_retries: Option<u32>,
        max_backoff: Option<Duration>,
    ) -> Self {
        let retry = Retry::default();
        Self {
            codec: codec.map_or(Codec::Ndjson, CodecConfig::codec),
            compression,
            threshold,
            retry: Retry {
                max_retries,
                max_backoff: max_backoff.unwrap_or(retry.max_backoff),
                ..retry
            },
        }
    }
}
