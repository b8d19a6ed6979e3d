//! The `otlp` sink, in Data Prepper's shape (its `otlp-sink` plugin, 2.x):
//! ```yaml
//! sink:
//!   - otlp:
//!       endpoint: https://otlp-collector.example.com/v1/traces
//!       max_retries: 5
//!       threshold:
//!         max_events: 512
//!         max_batch_size: 1mb
//!         flush_timeout: 200ms
//!       additional_headers:
//!         X-Tenant: acme
//!       aws:
//!         region: us-west-2
//!         sts_role_arn: arn:aws:iam::123456789012:role/MyRole
//!       service_name: xray
//! ```
//! Keys from Data Prepper's `OtlpSinkConfig` and `ThresholdConfig`: `endpoint`, `max_retries`,
//! `threshold` (`max_events`, `max_batch_size`, `flush_timeout`), `aws` (`region`,
//! `sts_role_arn`, `sts_external_id`, `sts_header_overrides`; `configuration` is refused),
//! `additional_headers`, `service_name`. Data Prepper sends OTLP/HTTP only, always gzip, and
//! requires `aws`; sluice's own keys add what it does not have: `protocol: grpc`,
//! `compression: none`, TLS (`ssl_certificate_file`, `insecure_skip_verify`),
//! `request_timeout`, and sending unsigned when `aws` is left out (Data Prepper's config says
//! it requires `aws` only until non-AWS endpoints are supported).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::Compression;
use super::batching::{Retry, Threshold};
use crate::error::Errors;
use crate::location::join;
use crate::units::{self, ByteSize};

/// The `otlp` sink.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtlpSink {
    /// Where requests go: with `protocol: http` the full URL with the signal's path
    /// (`https://collector:4318/v1/traces`, `/v1/metrics`, `/v1/logs`); with `protocol: grpc`
    /// the server (`http://collector:4317`; a path is ignored, the gRPC method names the
    /// signal). Required.
    pub endpoint: String,
    /// Retries of a request that failed for a reason that may pass (no connection, HTTP 429,
    /// 502, 503 or 504; gRPC UNAVAILABLE, RESOURCE_EXHAUSTED, ...), with backoff from 100ms
    /// doubling to 10s with jitter, as Data Prepper's. Then, and at once for any other
    /// failure, the request's events go to the dead-letter file (Data Prepper drops them).
    /// Default 5.
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// When collected events become a request; whichever is reached first. Default 512
    /// events, `1mb`, `200ms`.
    #[serde(default)]
    pub threshold: OtlpThreshold,
    /// Sign every request with AWS SigV4 (`{}`: the default credentials chain). Data Prepper
    /// requires it; without it sluice sends unsigned.
    #[serde(default)]
    pub aws: Option<OtlpAws>,
    /// Headers added to every request (after signing, so not signed), e.g. `X-Tenant: acme`.
    /// Not `Authorization`, `Host`, `Content-Type`, `Content-Encoding`, `Content-Length` or
    /// `X-Amz-*`. Default none.
    #[serde(default)]
    pub additional_headers: BTreeMap<String, String>,
    /// The service named in the SigV4 signature (with `aws`), e.g. `logs`, `osis`. Default
    /// `xray`.
    #[serde(default)]
    pub service_name: Option<String>,
    /// sluice's: `http` (OTLP/HTTP, protobuf; Data Prepper's only) or `grpc` (OTLP/gRPC, HTTP/2
    /// without TLS for an `http://` endpoint). Default `http`.
    #[serde(default)]
    pub protocol: OtlpProtocol,
    /// sluice's: `gzip` (as Data Prepper always sends) or `none`. Default `gzip`.
    #[serde(default = "default_compression")]
    pub compression: Compression,
    /// sluice's: a PEM file of the CA that signs the endpoint's certificate, besides the
    /// system's.
    #[serde(default)]
    pub ssl_certificate_file: Option<PathBuf>,
    /// sluice's: skip verifying the endpoint's certificate (tests only). Default false.
    #[serde(default)]
    pub insecure_skip_verify: bool,
    /// sluice's: how long one request may take, answer included. Default `10s` (Armeria's
    /// response timeout, which Data Prepper's client keeps).
    #[serde(
        default = "default_request_timeout",
        deserialize_with = "units::duration"
    )]
    pub request_timeout: Duration,
}

/// `threshold` of the otlp sink (Data Prepper's `ThresholdConfig`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtlpThreshold {
    /// The most events (spans, log records, metric data points) in one request; `0`: no
    /// limit by count. Default 512.
    #[serde(default = "default_max_events")]
    pub max_events: usize,
    /// The most bytes of encoded items in one request, before compression, unless one item
    /// alone is larger. Default `1mb`.
    #[serde(default = "default_max_batch_size")]
    pub max_batch_size: ByteSize,
    /// Send once the oldest collected event has waited this long; at least `1ms`. Default
    /// `200ms`.
    #[serde(
        default = "default_flush_timeout",
        deserialize_with = "units::duration"
    )]
    pub flush_timeout: Duration,
}

impl Default for OtlpThreshold {
    fn default() -> Self {
        Self {
            max_events: default_max_events(),
            max_batch_size: default_max_batch_size(),
            flush_timeout: default_flush_timeout(),
        }
    }
}

/// `aws` of the otlp sink (Data Prepper's `AwsConfig`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtlpAws {
    /// The signing region. Default: the region named in `endpoint`'s host
    /// (`xray.us-west-2.amazonaws.com`), as Data Prepper finds it.
    #[serde(default)]
    pub region: Option<String>,
    /// An IAM role to assume through STS; requests are signed with its credentials.
    #[serde(default)]
    pub sts_role_arn: Option<String>,
    /// The external id of the AssumeRole call (with `sts_role_arn`).
    #[serde(default)]
    pub sts_external_id: Option<String>,
    /// Headers sent with the AssumeRole call (at most 5; with `sts_role_arn`).
    #[serde(default)]
    pub sts_header_overrides: BTreeMap<String, String>,
    /// Not supported: Data Prepper's extension-level AWS configuration name.
    #[serde(default)]
    pub configuration: Option<serde_yaml::Value>,
}

/// `protocol` of the otlp sink (sluice's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OtlpProtocol {
    #[default]
    Http,
    Grpc,
}

/// Data Prepper's defaults (`OtlpSinkConfig`, `ThresholdConfig`).
const fn default_max_retries() -> u32 {
    5
}

const fn default_max_events() -> usize {
    512
}

const fn default_max_batch_size() -> ByteSize {
    ByteSize::mib(1)
}

const fn default_flush_timeout() -> Duration {
    Duration::from_millis(200)
}

const fn default_compression() -> Compression {
    Compression::Gzip
}

const fn default_request_timeout() -> Duration {
    Duration::from_secs(10)
}

/// Headers `additional_headers` may not set (Data Prepper's `PROTECTED_HEADERS`), besides
/// `x-amz-*`.
const PROTECTED_HEADERS: [&str; 5] = [
    "authorization",
    "host",
    "content-type",
    "content-encoding",
    "content-length",
];

/// Signing with SigV4, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpSigning {
    pub region: String,
    /// The signing name (`service_name`, default `xray`).
    pub service: String,
    pub sts_role_arn: Option<String>,
    pub sts_external_id: Option<String>,
    pub sts_header_overrides: BTreeMap<String, String>,
}

/// `aws` without `region`, and `endpoint` names none (Data Prepper fails the same way when it
/// builds the signer).
#[derive(Debug, thiserror::Error)]
#[error(
    "`aws.region` is not set and `endpoint` `{0}` names no AWS region in its host; set \
     `aws.region`, e.g. `us-east-1`"
)]
pub struct NoRegion(String);

/// The otlp sink as it runs.
#[derive(Debug, Clone)]
pub struct OtlpSettings {
    pub endpoint: String,
    pub protocol: OtlpProtocol,
    pub gzip: bool,
    pub headers: Vec<(String, String)>,
    pub aws: Option<OtlpSigning>,
    pub ca: Option<PathBuf>,
    pub insecure: bool,
    pub request_timeout: Duration,
    pub threshold: Threshold,
    pub retry: Retry,
}

impl crate::Resolve for OtlpSink {
    type Settings = OtlpSettings;
    type Error = NoRegion;
    /// Finds the signing region.
    fn resolve(&self, _pipeline: &str) -> Result<OtlpSettings, NoRegion> {
        let t = &self.threshold;
        let aws = match &self.aws {
            None => None,
            Some(a) => Some(OtlpSigning {
                region: a
                    .region
                    .clone()
                    .or_else(|| region_in(&self.endpoint))
                    .ok_or_else(|| NoRegion(self.endpoint.clone()))?,
                service: self.service_name.clone().unwrap_or_else(|| "xray".into()),
                sts_role_arn: a.sts_role_arn.clone(),
                sts_external_id: a.sts_external_id.clone(),
                sts_header_overrides: a.sts_header_overrides.clone(),
            }),
        };
        Ok(OtlpSettings {
            endpoint: self.endpoint.clone(),
            protocol: self.protocol,
            gzip: self.compression == Compression::Gzip,
            headers: self
                .additional_headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            aws,
            ca: self.ssl_certificate_file.clone(),
            insecure: self.insecure_skip_verify,
            request_timeout: self.request_timeout,
            threshold: Threshold {
                event_count: (t.max_events > 0).then_some(t.max_events),
                maximum_size: Some(t.max_batch_size.bytes()),
                event_collect_timeout: Some(t.flush_timeout),
            },
            retry: Retry {
                max_retries: Some(self.max_retries),
                // Data Prepper's `Backoff.exponential(100, 10_000)`.
                initial_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(10),
            },
        })
    }
}

impl super::SinkConfig for OtlpSink {
    fn check(&self, path: &str, errors: &mut Errors) {
        check(self, path, errors);
    }

    fn name(&self) -> String {
        format!("otlp:{}", self.endpoint)
    }
}

/// The first label of `endpoint`'s host that reads as an AWS region (`us-west-2`,
/// `us-gov-east-1`, `cn-north-1`), as Data Prepper looks for a known region among the labels.
pub fn region_in(endpoint: &str) -> Option<String> {
    let host = endpoint.split("://").nth(1)?.split(['/', ':']).next()?;
    host.split('.')
        .find(|label| {
            let parts: Vec<&str> = label.split('-').collect();
            parts.len() >= 3
                && parts[0].len() == 2
                && parts[0].bytes().all(|b| b.is_ascii_lowercase())
                && parts[1..parts.len() - 1]
                    .iter()
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()))
                && parts[parts.len() - 1].parse::<u8>().is_ok()
        })
        .map(str::to_owned)
}

fn check(o: &OtlpSink, path: &str, errors: &mut Errors) {
    super::check_url(&o.endpoint, path, "endpoint", errors);
    let t = &o.threshold;
    if t.max_batch_size.bytes() == 0 {
        errors.at(
            &join(path, "threshold.max_batch_size"),
            format!("`{path}.threshold.max_batch_size` must be more than zero, e.g. `1mb`"),
        );
    }
    if t.flush_timeout < Duration::from_millis(1) {
        errors.at(
            &join(path, "threshold.flush_timeout"),
            format!("`{path}.threshold.flush_timeout` must be at least 1ms, e.g. `200ms`"),
        );
    }
    if o.request_timeout.is_zero() {
        errors.at(
            &join(path, "request_timeout"),
            format!("`{path}.request_timeout` must be more than zero, e.g. `10s`"),
        );
    }
    for name in o.additional_headers.keys() {
        let lower = name.to_ascii_lowercase();
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !valid {
            errors.at(
                &join(path, "additional_headers"),
                format!(
                    "`{path}.additional_headers` has `{name}`, which is not an HTTP header name"
                ),
            );
        } else if PROTECTED_HEADERS.contains(&lower.as_str()) || lower.starts_with("x-amz-") {
            errors.at(
                &join(path, "additional_headers"),
                format!(
                    "`{path}.additional_headers` may not set `{name}` (the sink sets \
                     Authorization, Host, Content-Type, Content-Encoding, Content-Length and \
                     X-Amz-*); remove it"
                ),
            );
        }
    }
    if let Some(ca) = &o.ssl_certificate_file {
        errors.file(&join(path, "ssl_certificate_file"), ca);
    }
    if o.service_name.is_some() && o.aws.is_none() {
        errors.at(
            &join(path, "service_name"),
            format!(
                "`{path}.service_name` names the service of the SigV4 signature, and there is no \
                 `aws` to sign with; add `aws: {{}}` or remove `service_name`"
            ),
        );
    }
    if let Some(aws) = &o.aws {
        check_aws(aws, &join(path, "aws"), errors);
    }
}

fn check_aws(aws: &OtlpAws, path: &str, errors: &mut Errors) {
    if aws.configuration.is_some() {
        errors.at(
            &join(path, "configuration"),
            format!(
                "`{path}.configuration` (a named AWS configuration of Data Prepper's `aws` \
                 extension) is not supported; set `region` and `sts_role_arn` here instead"
            ),
        );
    }
    match &aws.region {
        Some(r) if r.trim().is_empty() => errors.at(
            &join(path, "region"),
            format!("`{path}.region` is empty; write a region such as `us-east-1`"),
        ),
        Some(_) => {}
        // Without one, the region comes from `endpoint` at startup, where Data Prepper
        // finds it too (Data Prepper's README examples name collectors without a region,
        // and pass its validation).
        None => {}
    }
    if let Some(arn) = &aws.sts_role_arn
        && !(20..=2048).contains(&arn.len())
    {
        errors.at(
            &join(path, "sts_role_arn"),
            format!(
                "`{path}.sts_role_arn` must be 20 to 2048 characters, e.g. \
                 `arn:aws:iam::123456789012:role/MyRole`"
            ),
        );
    }
    if let Some(id) = &aws.sts_external_id {
        if !(2..=1224).contains(&id.len()) {
            errors.at(
                &join(path, "sts_external_id"),
                format!("`{path}.sts_external_id` must be 2 to 1224 characters"),
            );
        }
        if aws.sts_role_arn.is_none() {
            errors.at(
                &join(path, "sts_external_id"),
                format!(
                    "`{path}.sts_external_id` is only sent when assuming a role; set \
                     `sts_role_arn` or remove it"
                ),
            );
        }
    }
    if aws.sts_header_overrides.len() > 5 {
        errors.at(
            &join(path, "sts_header_overrides"),
            format!("`{path}.sts_header_overrides` takes at most 5 headers"),
        );
    }
    if !aws.sts_header_overrides.is_empty() && aws.sts_role_arn.is_none() {
        errors.at(
            &join(path, "sts_header_overrides"),
            format!(
                "`{path}.sts_header_overrides` goes with `sts_role_arn`; give the role, or \
                 remove it"
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::region_in;

    #[test]
    fn the_region_is_found_in_the_endpoint_host() {
        assert_eq!(
            region_in("https://xray.us-west-2.amazonaws.com/v1/traces").as_deref(),
            Some("us-west-2")
        );
        assert_eq!(
            region_in("https://logs.us-gov-east-1.amazonaws.com:443/v1/logs").as_deref(),
            Some("us-gov-east-1")
        );
        assert_eq!(region_in("https://otlp-collector.example.com/v1/metrics"), None);
        assert_eq!(region_in("http://127.0.0.1:4318/v1/traces"), None);
    }
}
