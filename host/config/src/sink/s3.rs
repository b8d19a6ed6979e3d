//! The `s3` sink, in Data Prepper's shape:
//! ```yaml
//! sink:
//!   - s3:
//!       aws:
//!         region: us-east-1
//!       bucket: my-logs
//!       object_key:
//!         path_prefix: logs/%{yyyy}/%{MM}/%{dd}/
//!       threshold:
//!         event_count: 10000
//!         maximum_size: 50mb
//!         event_collect_timeout: 15s
//!       codec:
//!         ndjson:
//!       compression: gzip
//! ```

use std::time::Duration;

use serde::Deserialize;

use super::batching::{Batching, Threshold};
use super::{CodecConfig, Compression};
use crate::error::Errors;
use crate::location::join;
use crate::units::{self, ByteSize};

/// The `s3` sink.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct S3Sink {
    /// Where and as whom to connect. Required (`region` at least).
    pub aws: S3Aws,
    /// The bucket objects go to. It must exist. Required.
    pub bucket: String,
    /// How object names are made. Default: no prefix.
    #[serde(default)]
    pub object_key: ObjectKey,
    /// When collected events become an object. Required.
    pub threshold: S3Threshold,
    /// How events are written in an object: `ndjson` or `json`. Default `ndjson` (Data Prepper
    /// requires the key).
    #[serde(default)]
    pub codec: Option<CodecConfig>,
    /// `none` or `gzip` (the object gets `.gz` and `Content-Encoding: gzip`). Default `none`.
    #[serde(default)]
    pub compression: Compression,
    /// Retries of a failed upload before its events go to the dead-letter file. Default: retry
    /// until the store takes them, holding the buffer's commit, so an outage of any length
    /// loses and skips nothing. (Data Prepper's default, 5, drops the object's events after
    /// its retries.)
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// Objects of at least this size are uploaded in parts of this size (multipart upload; S3
    /// requires at least `5mb`). Default `8mb`.
    #[serde(default = "default_part_size")]
    pub multipart_part_size: ByteSize,
    /// How long one request to the store may take. Default `60s`.
    #[serde(
        default = "default_request_timeout",
        deserialize_with = "units::duration"
    )]
    pub request_timeout: Duration,
    /// Where an object is collected before it goes up: `in_memory` (the default; at most
    /// `threshold.maximum_size` per sink) or `multipart` (the same here: objects of at least
    /// `multipart_part_size` always go up in parts). `local_file` is not supported.
    #[serde(default)]
    pub buffer_type: BufferType,
    /// sluice's, not Data Prepper's: from a kafka buffer, each event lands in the bucket once,
    /// even when a crash makes the pipeline read a batch again. An object then holds a run of
    /// one buffer partition's records and is named `<path_prefix><topic>+<partition>+<first
    /// offset>.<extension>`, its date patterns filled from its first record's receive time, so
    /// a batch read again makes the same object and overwrites it. `false`: Data Prepper's
    /// names (`events-<time>-<unique>`), at least once. Default true.
    #[serde(default = "crate::yes")]
    pub exactly_once: bool,
}

/// `threshold` of the s3 sink: when collected events become an object. Whichever is reached
/// first.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct S3Threshold {
    /// Send once this many events are collected; an object holds at most this many (with
    /// `exactly_once` from a kafka buffer, one record's events are never split: an object
    /// ends after the record that reaches it). Default `0`: no count limit.
    #[serde(default)]
    pub event_count: usize,
    /// Send once the collected events take this much (before compression); an object is at
    /// most this large unless one event alone is larger. Default `50mb`.
    #[serde(default = "default_maximum_size")]
    pub maximum_size: ByteSize,
    /// Send once the oldest collected event has waited this long (1s to 1h). Required.
    #[serde(deserialize_with = "units::duration")]
    pub event_collect_timeout: Duration,
}

fn default_maximum_size() -> ByteSize {
    ByteSize::mib(50)
}

impl S3Threshold {
    pub(crate) fn check(&self, path: &str, errors: &mut Errors) {
        let path = join(path, "threshold");
        if self.maximum_size.bytes() == 0 {
            errors.at(
                &join(&path, "maximum_size"),
                format!("`{path}.maximum_size` must be more than zero, e.g. `50mb`"),
            );
        }
        if self.event_collect_timeout < Duration::from_secs(1)
            || self.event_collect_timeout > Duration::from_secs(3600)
        {
            errors.at(
                &join(&path, "event_collect_timeout"),
                format!("`{path}.event_collect_timeout` must be from `1s` to `1h`, e.g. `15s`"),
            );
        }
    }
}

/// `buffer_type` of the s3 sink.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferType {
    #[default]
    InMemory,
    Multipart,
    LocalFile,
}

/// `aws` of the s3 sink. Credentials come from the standard AWS chain (environment variables
/// `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, profile, instance role).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct S3Aws {
    /// The bucket's region. Required.
    pub region: String,
    /// An S3-compatible store instead of AWS (e.g. `http://127.0.0.1:8333`); path-style
    /// addressing is used with it. Default: AWS. (Not a Data Prepper key.)
    #[serde(default)]
    pub endpoint: Option<String>,
    /// Data Prepper's role to assume. Not supported yet: the sink uses the standard credential
    /// chain, which assumes a role from a profile's `role_arn` or `AWS_ROLE_ARN` (web identity).
    #[serde(default)]
    pub sts_role_arn: Option<String>,
    /// Goes with `sts_role_arn`; not supported yet.
    #[serde(default)]
    pub sts_external_id: Option<String>,
    /// Goes with `sts_role_arn`; not supported yet.
    #[serde(default)]
    pub sts_header_overrides: Option<serde_yaml::Value>,
}

/// `object_key` of the s3 sink.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectKey {
    /// The start of every object name, with date patterns of the upload time (UTC):
    /// `%{yyyy}`, `%{MM}`, `%{dd}`, `%{HH}`, `%{mm}`, `%{ss}`. E.g. `logs/%{yyyy}/%{MM}/%{dd}/`.
    /// The name goes on as `events-<time>-<unique>.<extension>`. Default: none.
    #[serde(default)]
    pub path_prefix: String,
}

fn default_part_size() -> ByteSize {
    ByteSize::mib(8)
}

const fn default_request_timeout() -> Duration {
    Duration::from_secs(60)
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

impl crate::Resolve for S3Sink {
    type Settings = S3Settings;
    type Error = std::convert::Infallible;
    fn resolve(&self, _pipeline: &str) -> Result<S3Settings, Self::Error> {
        let t = &self.threshold;
        Ok(S3Settings {
            bucket: self.bucket.clone(),
            region: self.aws.region.clone(),
            endpoint: self.aws.endpoint.clone(),
            part_size: usize::try_from(self.multipart_part_size.bytes()).unwrap_or(usize::MAX),
            request_timeout: self.request_timeout,
            path_prefix: self.object_key.path_prefix.clone(),
            exactly_once: self.exactly_once,
            batching: Batching::new(
                self.codec.as_ref(),
                self.compression,
                Threshold {
                    event_count: (t.event_count > 0).then_some(t.event_count),
                    maximum_size: Some(t.maximum_size.bytes()),
                    event_collect_timeout: Some(t.event_collect_timeout),
                },
                self.max_retries,
                None,
            ),
        })
    }
}

/// The date patterns `path_prefix` may hold.
pub const DATE_PATTERNS: [&str; 6] = ["yyyy", "MM", "dd", "HH", "mm", "ss"];

impl super::SinkConfig for S3Sink {
    fn check(&self, path: &str, errors: &mut Errors) {
        check(self, path, errors);
    }

    fn name(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.object_key.path_prefix)
    }
}

fn check(s: &S3Sink, path: &str, errors: &mut Errors) {
    if s.bucket.trim().is_empty() {
        errors.at(
            &join(path, "bucket"),
            format!("`{path}.bucket` must not be empty"),
        );
    }
    if s.aws.region.trim().is_empty() {
        errors.at(
            &join(path, "aws.region"),
            format!("`{path}.aws.region` must not be empty, e.g. `us-east-1`"),
        );
    }
    if let Some(endpoint) = &s.aws.endpoint {
        super::check_url(endpoint, &join(path, "aws"), "endpoint", errors);
    }
    let prefix = &s.object_key.path_prefix;
    let mut rest = prefix.as_str();
    while let Some(start) = rest.find("%{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            errors.at(
                &join(path, "object_key.path_prefix"),
                format!("`{path}.object_key.path_prefix` has `%{{` without its `}}`"),
            );
            break;
        };
        let pattern = &after[..end];
        if !DATE_PATTERNS.contains(&pattern) {
            errors.at(
                &join(path, "object_key.path_prefix"),
                format!(
                    "`{path}.object_key.path_prefix` has `%{{{pattern}}}`; the date patterns are {}",
                    DATE_PATTERNS.map(|p| format!("`%{{{p}}}`")).join(", ")
                ),
            );
        }
        rest = &after[end + 1..];
    }
    if prefix.starts_with('/') {
        errors.at(
            &join(path, "object_key.path_prefix"),
            format!(
                "`{path}.object_key.path_prefix` starts with `/`; object keys do not, remove it"
            ),
        );
    }
    for (key, given) in [
        ("sts_role_arn", s.aws.sts_role_arn.is_some()),
        ("sts_external_id", s.aws.sts_external_id.is_some()),
        ("sts_header_overrides", s.aws.sts_header_overrides.is_some()),
    ] {
        if given {
            errors.at(
                &join(path, &format!("aws.{key}")),
                format!(
                    "`{path}.aws.{key}`: assuming a role here is not supported yet; remove it and \
                     give the role through the standard AWS chain (a profile with `role_arn`, or \
                     `AWS_ROLE_ARN` with a web identity token)"
                ),
            );
        }
    }
    if s.buffer_type == BufferType::LocalFile {
        errors.at(
            &join(path, "buffer_type"),
            format!("`{path}.buffer_type: local_file` is not supported; use `in_memory` (objects are at most `threshold.maximum_size`)"),
        );
    }
    s.threshold.check(path, errors);
    if let Some(codec) = &s.codec {
        codec.check(path, errors);
    }
    if s.multipart_part_size.bytes() < 5 * 1024 * 1024 {
        errors.at(
            &join(path, "multipart_part_size"),
            format!("`{path}.multipart_part_size` must be at least `5mb` (S3's smallest part)"),
        );
    }
    if s.request_timeout.is_zero() {
        errors.at(
            &join(path, "request_timeout"),
            format!("`{path}.request_timeout` must be more than zero"),
        );
    }
}
