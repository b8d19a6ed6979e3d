//! Sinks as they run: what the pipeline crate reads, resolved from the validated file shape
//! (defaults filled in, secrets read). The sinks that collect events into requests (s3, http)
//! share one [`Batching`]: how a request is written, when it is sent, how it is retried.

use std::path::PathBuf;
use std::time::Duration;

use super::{Codec, CodecConfig, Compression};
pub use crate::secret::BasicAuth;
use crate::secret::SecretError;

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

/// The s3 sink as it runs.
#[derive(Debug, Clone)]
pub struct S3Settings {
    pub bucket: String,
    pub region: String,
    /// An S3-compatible store instead of AWS, addressed path-style.
    pub endpoint: Option<String>,
    /// Objects of at least this many bytes go up in parts of this size.
    pub part_size: usize,
    /// How long one request may take.
    pub request_timeout: Duration,
    /// `object_key.path_prefix`, its date patterns not yet filled in.
    pub path_prefix: String,
    /// Objects cut and named by buffer offsets.
    pub exactly_once: bool,
    pub batching: Batching,
}

/// The http sink as it runs.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    pub url: String,
    pub method: super::http::HttpMethod,
    /// Headers sent with every request, a name once per value.
    pub headers: Vec<(String, String)>,
    /// Basic credentials, the password read.
    pub basic: Option<BasicAuth>,
    pub request_timeout: Duration,
    pub connection_timeout: Duration,
    /// A CA to trust besides the system's.
    pub ca: Option<PathBuf>,
    /// Skip verifying the endpoint's certificate.
    pub insecure: bool,
    /// Requests cut by buffer offsets, with an `Idempotency-Key`.
    pub exactly_once: bool,
    pub batching: Batching,
}

/// Why a sink's settings could not be resolved at startup.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// A password given as `${env:...}` or `${file:...}` could not be read.
    #[error("authentication: {0}")]
    Secret(#[from] SecretError),
    /// `partition_key` is not a valid template (validation says so first).
    #[error("partition_key: {0}")]
    PartitionKey(String),
}
