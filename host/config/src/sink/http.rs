//! The `http` sink, in Data Prepper's shape:
//! ```yaml
//! sink:
//!   - http:
//!       url: https://collector.example.com/ingest
//!       http_method: POST
//!       codec:
//!         ndjson:
//!       custom_headers:
//!         X-Tenant: [acme]
//!       authentication:
//!         http_basic:
//!           username: sluice
//!           password: ${env:COLLECTOR_PASSWORD}
//!       threshold:
//!         max_events: 100
//!         max_request_size: 10mb
//!         flush_timeout: 10s
//!       max_retries: 5
//! ```
//! Keys from Data Prepper's http sink (2.16): `url`, `codec`, `custom_headers`, `threshold`
//! (`max_events`, `max_request_size`, `flush_timeout`), `max_retries`, `http_retry_interval`,
//! `connection_timeout`, `request_timeout`, `insecure_skip_verify` (`insecure`); from its
//! earlier README, which the issue asks for: `http_method` and `authentication.http_basic`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::batching::{Batching, Threshold};
use super::{CodecConfig, Compression};
use crate::error::Errors;
use crate::kafka::Credentials;
use crate::location::join;
use crate::secret::{BasicAuth, SecretError};
use crate::units::{self, ByteSize};

/// The `http` sink.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSink {
    /// Where requests go: an `http://` or `https://` URL. Required.
    pub url: String,
    /// `POST` or `PUT`. Default `POST`.
    #[serde(default)]
    pub http_method: HttpMethod,
    /// How events are written in a request body. Default `ndjson`.
    #[serde(default)]
    pub codec: Option<CodecConfig>,
    /// `none` or `gzip` (sent with `Content-Encoding: gzip`). Default `none`.
    #[serde(default)]
    pub compression: Compression,
    /// Headers sent with every request: a name and its values, e.g. `X-Tenant: [acme]`.
    /// (`custom_header` is accepted too.)
    #[serde(default, alias = "custom_header")]
    pub custom_headers: BTreeMap<String, Vec<String>>,
    /// `http_basic: {username, password}` (the password may be `${env:NAME}` or
    /// `${file:PATH}`; never logged). Default: none.
    #[serde(default)]
    pub authentication: Option<SinkAuthentication>,
    /// When collected events become a request. Default: 100 events, `50mb`, `10s`.
    #[serde(default)]
    pub threshold: HttpThreshold,
    /// Retries of a failed request (a connection error, 408, 429 or 5xx) before its events go
    /// to the dead-letter file. Default: retry until the endpoint takes them, holding the
    /// buffer's commit, so an outage of any length loses and skips nothing (Data Prepper's
    /// default, 3, gives up after about two minutes). Any other answer outside 2xx
    /// dead-letters the request's events at once, with the status.
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// The longest wait between retries; they start at 100ms and double up to this, with
    /// jitter. Default `30s` (Data Prepper waits this long before every retry).
    #[serde(
        default = "default_retry_interval",
        deserialize_with = "units::duration"
    )]
    pub http_retry_interval: Duration,
    /// How long one request may take, answer included. Default `60s`.
    #[serde(
        default = "default_request_timeout",
        deserialize_with = "units::duration"
    )]
    pub request_timeout: Duration,
    /// How long connecting may take. Default `60s`.
    #[serde(
        default = "default_request_timeout",
        deserialize_with = "units::duration"
    )]
    pub connection_timeout: Duration,
    /// A PEM file of the CA that signs the endpoint's certificate, besides the system's.
    #[serde(default)]
    pub ssl_certificate_file: Option<PathBuf>,
    /// Skip verifying the endpoint's certificate (tests only). Default false. (`insecure` is
    /// accepted too.)
    #[serde(default, alias = "insecure")]
    pub insecure_skip_verify: bool,
    /// sluice's: from a kafka buffer, a request holds a run of one buffer partition's records,
    /// cut where the records alone say (so a batch read again after a crash makes the same
    /// requests), and carries `Idempotency-Key: <topic>+<partition>+<first offset>+<last
    /// offset>`: an endpoint that drops a key it has seen gets each event once. `false`:
    /// requests are cut as events come, without the header. Default true.
    #[serde(default = "crate::yes")]
    pub exactly_once: bool,
}

/// `threshold` of the http sink: when collected events become a request. Whichever is reached
/// first.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpThreshold {
    /// The most events in one request (with `exactly_once` from a kafka buffer, one record's
    /// events are never split: a request ends after the record that reaches it). Default 100.
    #[serde(default = "default_max_events")]
    pub max_events: usize,
    /// The largest body (before compression), unless one event alone is larger. Default `50mb`.
    #[serde(default = "default_max_request_size")]
    pub max_request_size: ByteSize,
    /// Send once the oldest collected event has waited this long. Default `10s`.
    #[serde(
        default = "default_flush_timeout",
        deserialize_with = "units::duration"
    )]
    pub flush_timeout: Duration,
}

impl Default for HttpThreshold {
    fn default() -> Self {
        Self {
            max_events: default_max_events(),
            max_request_size: default_max_request_size(),
            flush_timeout: default_flush_timeout(),
        }
    }
}

const fn default_max_events() -> usize {
    100
}

fn default_max_request_size() -> ByteSize {
    ByteSize::mib(50)
}

const fn default_flush_timeout() -> Duration {
    Duration::from_secs(10)
}

const fn default_retry_interval() -> Duration {
    Duration::from_secs(30)
}

/// `authentication` of the http sink.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SinkAuthentication {
    /// HTTP Basic credentials. Required.
    pub http_basic: Credentials,
}

/// `http_method` of the http sink.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum HttpMethod {
    #[default]
    #[serde(alias = "post")]
    POST,
    #[serde(alias = "put")]
    PUT,
}

const fn default_request_timeout() -> Duration {
    Duration::from_secs(60)
}

/// The http sink as it runs.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    pub url: String,
    pub method: HttpMethod,
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

impl crate::Resolve for HttpSink {
    type Settings = HttpSettings;
    type Error = SecretError;
    /// Reads the password.
    fn resolve(&self, _pipeline: &str) -> Result<HttpSettings, SecretError> {
        let basic = match &self.authentication {
            Some(auth) => Some(auth.http_basic.resolve()?),
            None => None,
        };
        let t = &self.threshold;
        Ok(HttpSettings {
            url: self.url.clone(),
            method: self.http_method,
            headers: self
                .custom_headers
                .iter()
                .flat_map(|(name, values)| values.iter().map(|v| (name.clone(), v.clone())))
                .collect(),
            basic,
            request_timeout: self.request_timeout,
            connection_timeout: self.connection_timeout,
            ca: self.ssl_certificate_file.clone(),
            insecure: self.insecure_skip_verify,
            exactly_once: self.exactly_once,
            batching: Batching::new(
                self.codec.as_ref(),
                self.compression,
                Threshold {
                    event_count: Some(t.max_events),
                    maximum_size: Some(t.max_request_size.bytes()),
                    event_collect_timeout: Some(t.flush_timeout),
                },
                self.max_retries,
                Some(self.http_retry_interval),
            ),
        })
    }
}

impl super::SinkConfig for HttpSink {
    fn check(&self, path: &str, errors: &mut Errors) {
        check(self, path, errors);
    }

    fn name(&self) -> String {
        format!("http:{}", self.url)
    }
}

fn check(h: &HttpSink, path: &str, errors: &mut Errors) {
    super::check_url(&h.url, path, "url", errors);
    let t = &h.threshold;
    for (key, bad) in [
        ("max_events", t.max_events == 0),
        ("max_request_size", t.max_request_size.bytes() == 0),
        ("flush_timeout", t.flush_timeout.is_zero()),
    ] {
        if bad {
            errors.at(
                &join(path, &format!("threshold.{key}")),
                format!("`{path}.threshold.{key}` must be more than zero"),
            );
        }
    }
    for (key, value) in [
        ("http_retry_interval", h.http_retry_interval),
        ("connection_timeout", h.connection_timeout),
    ] {
        if value.is_zero() {
            errors.at(
                &join(path, key),
                format!("`{path}.{key}` must be more than zero"),
            );
        }
    }
    if let Some(codec) = &h.codec {
        codec.check(path, errors);
    }
    for name in h.custom_headers.keys() {
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !valid {
            errors.at(
                &join(path, "custom_headers"),
                format!("`{path}.custom_headers` has `{name}`, which is not an HTTP header name"),
            );
        }
    }
    if let Some(auth) = &h.authentication
        && let Err(reason) = auth.http_basic.resolved_password()
    {
        errors.at(
            &join(path, "authentication.http_basic.password"),
            format!("`{path}.authentication.http_basic.password`: {reason}"),
        );
    }
    if let Some(ca) = &h.ssl_certificate_file {
        errors.file(&join(path, "ssl_certificate_file"), ca);
    }
    if h.request_timeout.is_zero() {
        errors.at(
            &join(path, "request_timeout"),
            format!("`{path}.request_timeout` must be more than zero"),
        );
    }
}
