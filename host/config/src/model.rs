//! The pipeline file's shape, in Data Prepper's form: a map of pipeline name to
//! `{workers, delay, source, buffer, processor, sink}`, with one plugin key per component.
//!
//! Every struct refuses unknown fields; every field's `///` doc is its user documentation (the
//! README's reference is written from it). Defaults follow Data Prepper where it has one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use crate::units::{self, ByteSize};

/// A whole pipeline file: pipelines in the order they are written.
#[derive(Debug, Clone)]
pub struct Config {
    pub pipelines: Vec<Pipeline>,
}

/// One pipeline.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// The pipeline's name: its key in the file.
    pub name: String,
    /// Read-side workers: how many batches are deserialized and written to the sinks at once.
    /// Default 1, as in Data Prepper.
    pub workers: usize,
    /// How long a worker waits for a batch to fill before taking what is there. Default 3000
    /// (milliseconds), as in Data Prepper; lower it for lower latency.
    pub delay: Duration,
    /// Where the data comes from. Required.
    pub source: Source,
    /// Where accepted data waits before it is deserialized. Default: `bounded_blocking`.
    pub buffer: Buffer,
    /// Processors, applied in order. sluice has none yet; an empty list is valid.
    pub processor: Vec<Processor>,
    /// Where the events go; each event goes to every sink. At least one is required.
    pub sink: Vec<Sink>,
    /// The dead-letter file: one JSON line per record that could not be deserialized. Default:
    /// `<data dir>/dlq/<pipeline>.jsonl`.
    pub dlq_path: Option<PathBuf>,
}

/// The fields of a pipeline, for suggestions.
pub const PIPELINE_FIELDS: &[&str] = &[
    "workers",
    "delay",
    "source",
    "buffer",
    "processor",
    "sink",
    "dlq_path",
];

pub(crate) const fn default_workers() -> usize {
    1
}

pub(crate) const fn default_delay() -> Duration {
    Duration::from_millis(3000)
}

/// A source: one key naming the plugin.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Source {
    /// Accepts HTTP POST requests; each request body is one record.
    Http(HttpSource),
}

impl Source {
    /// The deserializer that turns this source's raw records into events.
    pub fn deserializer(&self) -> &DeserializerConfig {
        match self {
            Source::Http(http) => &http.deserializer,
        }
    }
}

/// The `http` source, compatible with Data Prepper's.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSource {
    /// The TCP port to listen on (all interfaces). Default 2021.
    #[serde(default = "default_http_port")]
    pub port: u16,
    /// The URL path that accepts POST requests. Default `/log/ingest`.
    #[serde(default = "default_http_path")]
    pub path: String,
    /// The deserializer plugin for request bodies: a name (`json`), or a map with `name`,
    /// `options`, `max_memory` and `timeout`. Default `json`.
    #[serde(default, deserialize_with = "deserializer_name_or_map")]
    pub deserializer: DeserializerConfig,
    /// The largest accepted request body; larger ones get 413. Default `10mb`.
    #[serde(default = "default_max_request_length")]
    pub max_request_length: ByteSize,
    /// How long a request may wait for room in the buffer before it is refused with 503 and
    /// `Retry-After`. Default `10s`.
    #[serde(
        default = "default_request_timeout",
        deserialize_with = "units::duration"
    )]
    pub request_timeout: Duration,
}

/// Data Prepper's http source port.
const fn default_http_port() -> u16 {
    2021
}

fn default_http_path() -> String {
    "/log/ingest".to_owned()
}

/// Data Prepper's http source `max_request_length` default.
const fn default_max_request_length() -> ByteSize {
    ByteSize::mib(10)
}

/// Data Prepper's http source `request_timeout` default.
const fn default_request_timeout() -> Duration {
    Duration::from_secs(10)
}

/// Which deserializer plugin a source uses, with its options and sandbox limits.
///
/// Written either as a plugin name (`deserializer: ndjson`) or as a map:
/// ```yaml
/// deserializer:
///   name: csv
///   options: {delimiter: ";"}
///   max_memory: 128mb
///   timeout: 2s
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeserializerConfig {
    /// The plugin's name: the file stem of its `.wasm` file, or a built-in (`json`, `ndjson`).
    pub name: String,
    /// Options passed to the plugin's `configure` export once per instance.
    #[serde(default)]
    pub options: BTreeMap<String, serde_yaml::Value>,
    /// The most linear memory one plugin instance may use. Default `64mb`.
    #[serde(default = "default_max_memory")]
    pub max_memory: ByteSize,
    /// The longest one batch call may run before the instance is stopped. Default `1s`.
    #[serde(
        default = "default_plugin_timeout",
        deserialize_with = "units::duration"
    )]
    pub timeout: Duration,
}

const fn default_max_memory() -> ByteSize {
    ByteSize::mib(64)
}

const fn default_plugin_timeout() -> Duration {
    Duration::from_secs(1)
}

impl DeserializerConfig {
    /// The options as the plugin's `configure` receives them: scalars as their text, lists and
    /// maps as JSON text.
    pub fn option_pairs(&self) -> Vec<(String, String)> {
        self.options
            .iter()
            .map(|(k, v)| {
                let text = match v {
                    serde_yaml::Value::String(s) => s.clone(),
                    serde_yaml::Value::Bool(b) => b.to_string(),
                    serde_yaml::Value::Number(n) => n.to_string(),
                    serde_yaml::Value::Null => String::new(),
                    other => serde_json::to_string(other).unwrap_or_default(),
                };
                (k.clone(), text)
            })
            .collect()
    }
}

impl Default for DeserializerConfig {
    fn default() -> Self {
        Self {
            name: "json".to_owned(),
            options: BTreeMap::new(),
            max_memory: default_max_memory(),
            timeout: default_plugin_timeout(),
        }
    }
}

/// `deserializer: json` or `deserializer: {name: json, ...}`. A hand-written visitor rather
/// than `#[serde(untagged)]`, so errors inside the map still name the field.
pub(crate) fn deserializer_name_or_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<DeserializerConfig, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = DeserializerConfig;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a plugin name such as `json`, or a map with `name` and `options`")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(DeserializerConfig {
                name: v.to_owned(),
                ..DeserializerConfig::default()
            })
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            DeserializerConfig::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(V)
}

/// A buffer: one key naming the plugin.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Buffer {
    /// An in-memory bounded queue of raw records. Fast; lost if the process dies.
    BoundedBlocking(BoundedBlocking),
}

impl Default for Buffer {
    fn default() -> Self {
        Buffer::BoundedBlocking(BoundedBlocking::default())
    }
}

/// The `bounded_blocking` buffer, as in Data Prepper.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoundedBlocking {
    /// The most records (request bodies) held at once, counting those being processed. When
    /// full, sources refuse new data (http answers 503 with `Retry-After`). Default 12800.
    #[serde(default = "default_buffer_size")]
    pub buffer_size: usize,
    /// The most records handed to the deserializer in one batch. Default 200.
    #[serde(default = "default_batch_size")]
    pub batch_size: usize,
}

/// Data Prepper's bounded_blocking defaults.
const fn default_buffer_size() -> usize {
    12_800
}

const fn default_batch_size() -> usize {
    200
}

impl Default for BoundedBlocking {
    fn default() -> Self {
        Self {
            buffer_size: default_buffer_size(),
            batch_size: default_batch_size(),
        }
    }
}

/// A processor. None exist yet: the stage is there so pipelines can name it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Processor {}

/// A sink: one key naming the plugin.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Sink {
    /// Writes each event as one JSON line to standard output.
    Stdout(StdoutSink),
    /// Appends each event as one JSON line to a file, flushed after every batch.
    File(FileSink),
}

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
}
