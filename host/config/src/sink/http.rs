//! The `http` sink, in Data Prepper's shape:
//! ```yaml
//! sink:
//!   - http:
//!       url: https://collector.example.com/ingest
//!       http_method: POST
//!       codec:
//!         ndjson:
//!       custom_header:
//!         X-Tenant: [acme]
//!       authentication:
//!         http_basic:
//!           username: sluice
//!           password: ${env:COLLECTOR_PASSWORD}
//!       threshold:
//!         event_count: 500
//!         maximum_size: 5mb
//!         event_collect_timeout: 5s
//!       max_retries: 5
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::{CodecConfig, Compression, Threshold};
use crate::error::Errors;
use crate::kafka::Credentials;
use crate::location::join;
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
    #[serde(default)]
    pub custom_header: BTreeMap<String, Vec<String>>,
    /// `http_basic: {username, password}` (the password may be `${env:NAME}` or
    /// `${file:PATH}`; never logged). Default: none.
    #[serde(default)]
    pub authentication: Option<SinkAuthentication>,
    /// When collected events become a request. Default: 500 events, `5mb`, `5s`.
    #[serde(default = "default_threshold")]
    pub threshold: Threshold,
    /// Retries of a failed request (a connection error, 408, 429 or 5xx) before its events go
    /// to the dead-letter file. Default: retry until the endpoint takes them, holding the
    /// buffer's commit. Any other answer outside 2xx dead-letters the events at once.
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// How long one request may take. Default `30s`.
    #[serde(
        default = "default_request_timeout",
        deserialize_with = "units::duration"
    )]
    pub request_timeout: Duration,
    /// A PEM file of the CA that signs the endpoint's certificate, besides the system's.
    #[serde(default)]
    pub ssl_certificate_file: Option<PathBuf>,
    /// Skip verifying the endpoint's certificate (tests only). Default false.
    #[serde(default)]
    pub insecure_skip_verify: bool,
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

fn default_threshold() -> Threshold {
    Threshold {
        event_count: 500,
        maximum_size: ByteSize::mib(5),
        event_collect_timeout: Duration::from_secs(5),
    }
}

const fn default_request_timeout() -> Duration {
    Duration::from_secs(30)
}

pub(crate) fn check(h: &HttpSink, path: &str, errors: &mut Errors) {
    super::check_url(&h.url, path, "url", errors);
    h.threshold.check(path, errors);
    if let Some(codec) = &h.codec {
        codec.check(path, errors);
    }
    for name in h.custom_header.keys() {
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !valid {
            errors.at(
                &join(path, "custom_header"),
                format!("`{path}.custom_header` has `{name}`, which is not an HTTP header name"),
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
    if let Some(ca) = &h.ssl_certificate_file
        && !ca.is_file()
    {
        errors.at(
            &join(path, "ssl_certificate_file"),
            format!(
                "`{path}.ssl_certificate_file`: `{}` is not a readable file",
                ca.display()
            ),
        );
    }
    if h.request_timeout.is_zero() {
        errors.at(
            &join(path, "request_timeout"),
            format!("`{path}.request_timeout` must be more than zero"),
        );
    }
}
