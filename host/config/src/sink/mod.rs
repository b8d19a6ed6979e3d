//! The `sink`s of a pipeline: their shape, with Data Prepper's keys, and their rules.
//!
//! # Layout
//! - this file: the list of sinks ([`for_each_sink!`](crate::for_each_sink)) and the
//!   [`Sink`] it makes, the local sinks (`stdout`, `file`), and what the remote sinks share:
//!   [`Codec`], [`Compression`].
//! - [`kafka`], [`s3`], [`http`]: one module per remote sink, each with its `resolve`.
//! - [`resolved`]: the sinks as they run, what the pipeline crate reads; the s3 and http
//!   sinks share its [`resolved::Batching`].
//! - [`template`]: the kafka sink's `partition_key`.

pub mod http;
pub mod kafka;
pub mod resolved;
pub mod s3;
pub mod template;

use std::path::PathBuf;

use serde::Deserialize;

use crate::component::kind_enum;
use crate::error::Errors;
use crate::location::join;

/// The sinks, one line each: `Variant(config type) = "name in the file"`, its doc the user
/// doc. This one list makes [`Sink`] (its variants, names and rules, here) and the pipeline
/// crate's builder; adding a sink is its config file, its runtime file and a line here.
#[macro_export]
macro_rules! for_each_sink {
    ($m:ident $($prefix:tt)*) => {
        $m! {
            $($prefix)*
            /// Writes each event as one JSON line to standard output.
            Stdout($crate::sink::StdoutSink) = "stdout",
            /// Appends each event as one JSON line to a file, flushed after every batch.
            File($crate::sink::FileSink) = "file",
            /// Produces each event as one record to a Kafka topic.
            Kafka($crate::sink::kafka::KafkaSink) = "kafka",
            /// Uploads events as objects to S3 or an S3-compatible store.
            S3($crate::sink::s3::S3Sink) = "s3",
            /// Sends events in requests to an HTTP endpoint.
            Http($crate::sink::http::HttpSink) = "http",
            /// Sends each event to another pipeline of the file (Data Prepper's `pipeline`
            /// sink), acknowledged once that pipeline's buffer holds it.
            Pipeline($crate::connection::PipelineSink) = "pipeline",
        }
    };
}

crate::for_each_sink! {
    kind_enum
    /// A sink: one key naming it (see [`for_each_sink!`](crate::for_each_sink)).
    pub enum Sink: dyn SinkConfig;
}

/// A sink's own rules; each config type of the list implements it.
pub(crate) trait SinkConfig {
    /// Checks the sink's rules; `path` is its key path (`<pipeline>.sink[i].<name>`).
    fn check(&self, _path: &str, _errors: &mut Errors) {}
}

/// Checks a sink's own rules; `path` is `<pipeline>.sink[i]`.
pub(crate) fn check_sink(sink: &Sink, path: &str, errors: &mut Errors) {
    sink.config().check(&join(path, sink.plugin_name()), errors);
}

impl SinkConfig for StdoutSink {}

impl SinkConfig for FileSink {}

/// The `stdout` sink. It takes no options.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StdoutSink {}

/// The `file` sink.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSink {
    /// The file to append to; created (with its folder) if missing. Required.
    pub path: PathBuf,
    /// sluice's, not Data Prepper's: from a kafka buffer, write each event once, even when a
    /// crash makes the pipeline read a batch again. The sink keeps, beside the file,
    /// `<path>.offsets`: the buffer offsets the file holds and its length. `false`: at least
    /// once (a batch read again after a crash is written again). Default true.
    #[serde(default = "crate::yes")]
    pub exactly_once: bool,
}

/// `codec`: how events are written into one request or object. One key: `ndjson` (the
/// default) or `json`.
/// ```yaml
/// codec:
///   ndjson:
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodecConfig {
    /// One event per line (newline-delimited JSON). Takes no options.
    #[serde(default, deserialize_with = "crate::http::present")]
    pub ndjson: Option<serde_yaml::Value>,
    /// One JSON document holding the events in an array: `{"events": [...]}`.
    #[serde(default, deserialize_with = "crate::http::present")]
    pub json: Option<serde_yaml::Value>,
}

/// The codec a [`CodecConfig`] names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Codec {
    Ndjson,
    /// The array is under `key_name` (default `events`).
    Json {
        key_name: String,
    },
}

impl CodecConfig {
    /// The codec (validation checks that exactly one is given, with valid options).
    pub fn codec(&self) -> Codec {
        match &self.json {
            Some(options) => Codec::Json {
                key_name: options
                    .get("key_name")
                    .and_then(serde_yaml::Value::as_str)
                    .unwrap_or("events")
                    .to_owned(),
            },
            None => Codec::Ndjson,
        }
    }

    pub(crate) fn check(&self, path: &str, errors: &mut Errors) {
        let path = join(path, "codec");
        if self.ndjson.is_some() == self.json.is_some() {
            errors.at(
                &path,
                format!(
                    "`{path}` takes one of `ndjson` and `json`, e.g. `codec: {{ndjson: {{}}}}`"
                ),
            );
        }
        if let Some(options) = &self.ndjson
            && !is_empty(options)
        {
            errors.at(
                &join(&path, "ndjson"),
                format!("`{path}.ndjson` takes no options"),
            );
        }
        if let Some(options) = &self.json
            && !is_empty(options)
        {
            let ok = options.as_mapping().is_some_and(|m| {
                m.iter().all(|(k, v)| {
                    k.as_str() == Some("key_name") && v.as_str().is_some_and(|s| !s.is_empty())
                })
            });
            if !ok {
                errors.at(
                    &join(&path, "json"),
                    format!("`{path}.json` takes only `key_name` (text, default `events`)"),
                );
            }
        }
    }
}

fn is_empty(v: &serde_yaml::Value) -> bool {
    v.is_null() || v.as_mapping().is_some_and(serde_yaml::Mapping::is_empty)
}

/// `compression` of what a sink sends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    #[default]
    None,
    Gzip,
}

/// Checks `url`-like endpoint text at `path`.
pub(crate) fn check_url(url: &str, path: &str, key: &str, errors: &mut Errors) {
    let ok = (url.starts_with("http://") || url.starts_with("https://"))
        && url.split("://").nth(1).is_some_and(|rest| !rest.is_empty());
    if !ok {
        errors.at(
            &join(path, key),
            format!("`{path}.{key}` is `{url}`; write an http:// or https:// URL"),
        );
    }
}
