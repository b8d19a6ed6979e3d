//! The `sink`s of a pipeline: their shape, with Data Prepper's keys, and their rules.
//!
//! # Layout
//! - this file: the list of sinks ([`for_each_sink!`](crate::for_each_sink)), the [`Sink`]
//!   it makes with its [`name`](Sink::name), and what several sinks share: [`Codec`],
//!   [`Compression`], `check_url`.
//! - one file per sink ([`stdout`], [`mod@file`], [`kafka`], [`s3`], [`http`], [`pipeline`]): its
//!   config, its rules, its name and its settings as it runs ([`Resolve`](crate::Resolve)).
//! - [`batching`]: what the sinks that collect events into requests (s3, http) share as they
//!   run.
//! - [`template`]: the kafka sink's `partition_key`.

pub mod batching;
pub mod template;

use serde::Deserialize;

use crate::component::kind_enum;
use crate::error::Errors;
use crate::list_modules;
use crate::location::join;

/// The sinks, one line each: `Variant(module::ConfigType) = "name in the file"`, its doc the
/// user doc. This one list makes [`Sink`] (its variants, names and rules) and the module of
/// each sink (`sink/<module>.rs`, here and in the pipeline crate), and the pipeline crate's
/// builder; adding a sink is its config file, its runtime file and a line here.
#[macro_export]
macro_rules! for_each_sink {
    ($m:ident $($prefix:tt)*) => {
        $m! {
            $($prefix)*
            /// Writes each event as one JSON line to standard output.
            Stdout(stdout::StdoutSink) = "stdout",
            /// Appends each event as one JSON line to a file, flushed after every batch.
            File(file::FileSink) = "file",
            /// Produces each event as one record to a Kafka topic.
            Kafka(kafka::KafkaSink) = "kafka",
            /// Uploads events as objects to S3 or an S3-compatible store.
            S3(s3::S3Sink) = "s3",
            /// Sends events in requests to an HTTP endpoint.
            Http(http::HttpSink) = "http",
            /// Sends each event to another pipeline of the file (Data Prepper's `pipeline`
            /// sink), acknowledged once that pipeline's buffer holds it.
            Pipeline(pipeline::PipelineSink) = "pipeline",
            /// Takes every event and keeps none (Data Prepper's `noop`).
            Noop(noop::NoopSink) = "noop",
            /// Indexes each event as a document in OpenSearch (or Elasticsearch 6) through the
            /// bulk API, with Data Prepper's index types, templates and ISM policies.
            OpenSearch(opensearch::OpenSearchSink) = "opensearch",
            /// Sends spans, log records and metric data points to an OTLP endpoint (OTLP/HTTP
            /// or OTLP/gRPC, protobuf), as Data Prepper's `otlp` sink.
            Otlp(otlp::OtlpSink) = "otlp",
        }
    };
}

// One module per sink of the list: its config, `sink/<module>.rs`.
crate::for_each_sink!(list_modules);

crate::for_each_sink! {
    kind_enum
    /// A sink: one key naming it (see [`for_each_sink!`](crate::for_each_sink)).
    #[allow(
        clippy::large_enum_variant,
        reason = "read once at start, a few per pipeline; the opensearch sink has Data Prepper's many keys"
    )]
    pub enum Sink: dyn SinkConfig;
}

/// A sink's own rules and name; each config type of the list implements it (and
/// [`Resolve`](crate::Resolve), for the settings it runs with).
pub(crate) trait SinkConfig {
    /// Checks the sink's rules; `path` is its key path (`<pipeline>.sink[i].<name>`).
    fn check(&self, _path: &str, _errors: &mut Errors) {}

    /// See [`Sink::name`].
    fn name(&self) -> String;
}

impl Sink {
    /// What names the sink in logs, metrics (the `sink` label), dead letters and commands:
    /// its type and where it writes (`stdout`, `file:<path>`, `kafka:<topic>`,
    /// `s3://<bucket>/<prefix>`, `http:<url>`, `pipeline:<name>`).
    pub fn name(&self) -> String {
        self.config().name()
    }
}

/// Checks a sink's own rules; `path` is `<pipeline>.sink[i]`.
pub(crate) fn check_sink(sink: &Sink, path: &str, errors: &mut Errors) {
    sink.config().check(&join(path, sink.plugin_name()), errors);
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
