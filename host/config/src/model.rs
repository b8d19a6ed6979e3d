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
    /// Reads a file, one record per line (a pull source).
    File(FileSource),
}

/// Whether a source is pushed data by clients or pulls it itself. Only push sources may use the
/// kafka buffer: a pull source can re-read its input, and writing it to Kafka only to read it
/// back adds a copy without adding durability (Data Prepper has the same rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    Push,
    Pull,
}

impl Source {
    /// The deserializer that turns this source's raw records into events.
    pub fn deserializer(&self) -> &DeserializerConfig {
        match self {
            Source::Http(http) => &http.deserializer,
            Source::File(file) => &file.deserializer,
        }
    }

    /// The plugin name, as written in the file.
    pub fn plugin_name(&self) -> &'static str {
        match self {
            Source::Http(_) => "http",
            Source::File(_) => "file",
        }
    }

    /// Push or pull.
    pub fn kind(&self) -> SourceKind {
        match self {
            Source::Http(_) => SourceKind::Push,
            Source::File(_) => SourceKind::Pull,
        }
    }
}

/// The `file` source: reads a file line by line, each line one record, then (with `tail`)
/// waits for more lines.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSource {
    /// The file to read. Required.
    pub path: PathBuf,
    /// Keep reading lines appended after the end, like `tail -f`. Default false: stop at the end.
    #[serde(default)]
    pub tail: bool,
    /// The deserializer for each line. Default `json`.
    #[serde(default, deserialize_with = "deserializer_name_or_map")]
    pub deserializer: DeserializerConfig,
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
    /// The most connections open at once; one more is answered 503 with `Retry-After` and
    /// closed. Default `500`.
    #[serde(default = "default_max_connection_count")]
    pub max_connection_count: usize,
    /// How long a client has to send a request's line and headers, counted from when it
    /// connects or from the first byte of a following request; then the connection is closed.
    /// Default `10s`.
    #[serde(
        default = "default_header_read_timeout",
        deserialize_with = "units::duration"
    )]
    pub header_read_timeout: Duration,
    /// How long a connection may stay silent while sluice waits for it: a keep-alive
    /// connection between requests, or a request body that stops arriving; then the connection
    /// is closed. Default `75s`.
    #[serde(default = "default_idle_timeout", deserialize_with = "units::duration")]
    pub idle_timeout: Duration,
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

/// Data Prepper's http source `max_connection_count` default.
const fn default_max_connection_count() -> usize {
    500
}

/// Data Prepper has no such key. A client sends its request head in one go, so 10 s is
/// plenty even on a slow link, and short enough that idle sockets cannot pile up.
const fn default_header_read_timeout() -> Duration {
    Duration::from_secs(10)
}

/// Data Prepper has no such key. nginx's `keepalive_timeout` default: longer than the 60 s a
/// load balancer such as AWS's ALB keeps an idle connection, so the balancer closes first and
/// never sends a request on a connection sluice is closing.
const fn default_idle_timeout() -> Duration {
    Duration::from_secs(75)
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
    /// Replace each worker's plugin instance with a fresh one after this many batches, which
    /// returns the memory a guest heap kept (Python and JavaScript heaps never shrink). `0`
    /// recycles only after a trap. Default `10000`.
    #[serde(default = "default_recycle_after")]
    pub recycle_after: u64,
}

const fn default_recycle_after() -> u64 {
    10_000
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
            recycle_after: default_recycle_after(),
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
#[expect(
    clippy::large_enum_variant,
    reason = "one value per pipeline, parsed once at start: boxing saves nothing that matters"
)]
pub enum Buffer {
    /// An in-memory bounded queue of raw records. Fast; lost if the process dies.
    BoundedBlocking(BoundedBlocking),
    /// A Kafka topic: accepted records survive a crash of sluice; offsets are committed only
    /// after the sinks took the events.
    Kafka(KafkaBuffer),
}

impl Buffer {
    /// The plugin name, as written in the file.
    pub fn plugin_name(&self) -> &'static str {
        match self {
            Buffer::BoundedBlocking(_) => "bounded_blocking",
            Buffer::Kafka(_) => "kafka",
        }
    }
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

/// The `kafka` buffer, in Data Prepper's shape:
/// ```yaml
/// buffer:
///   kafka:
///     bootstrap_servers: [127.0.0.1:9092]
///     topics:
///       - name: dns-ip-pipeline-buffer
///         group_id: data-prepper-group
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaBuffer {
    /// The brokers to bootstrap from, `host:port` each. Required.
    pub bootstrap_servers: Vec<String>,
    /// The buffer topic: a list with exactly one entry. Required.
    // Defaulted so that a misspelt `topic:` gets its own message, not also "missing `topics`";
    // validation requires exactly one.
    #[serde(default)]
    pub topics: Vec<KafkaTopic>,
    /// How long shutdown waits for batches already read to reach the sinks (and be committed)
    /// before it leaves the group; what is not done is read again after a restart. Default `30s`.
    #[serde(
        default = "default_drain_timeout",
        deserialize_with = "units::duration"
    )]
    pub drain_timeout: Duration,
    /// The largest Kafka record sluice writes (payload, key and envelope headers; Kafka
    /// brokers refuse records over their `message.max.bytes`, 1 MiB by default). A larger
    /// request body is split on record boundaries where the source knows them (the elements of
    /// a JSON array); otherwise the request is refused (http: 413). Default `1mb`.
    #[serde(default = "default_max_request_size")]
    pub max_request_size: ByteSize,
    /// How long a write waits for Kafka to acknowledge a record before the source is told it
    /// failed (http: 503). librdkafka's `message.timeout.ms`. Default `10s`.
    #[serde(
        default = "default_produce_timeout",
        deserialize_with = "units::duration"
    )]
    pub produce_timeout: Duration,
    /// SASL credentials for the brokers. Default: none.
    #[serde(default)]
    pub authentication: Option<KafkaAuthentication>,
    /// Encryption of records at rest in Kafka (AES-256-GCM envelopes). Default: none.
    #[serde(default)]
    pub encryption: Option<BufferEncryption>,
    /// TLS to the brokers. Default: none (plaintext). Data Prepper's `encryption: {type: ssl}`.
    #[serde(default)]
    pub encryption_in_transit: Option<InTransit>,
    /// Extra librdkafka producer settings, passed through as written (e.g. `linger.ms: 5`,
    /// `compression.type: lz4`). Keys sluice sets itself are refused.
    #[serde(default, deserialize_with = "units::properties")]
    pub producer_properties: BTreeMap<String, String>,
    /// Extra librdkafka consumer settings, passed through as written (e.g.
    /// `fetch.wait.max.ms: 100`). Keys sluice sets itself are refused.
    #[serde(default, deserialize_with = "units::properties")]
    pub consumer_properties: BTreeMap<String, String>,
    /// Replaces `kafka_buffer` at the start of this buffer's metric names. Default: none.
    #[serde(default)]
    pub custom_metric_prefix: Option<String>,
}

/// The fields of `kafka`, for suggestions.
pub const KAFKA_FIELDS: &[&str] = &[
    "bootstrap_servers",
    "topics",
    "drain_timeout",
    "max_request_size",
    "produce_timeout",
    "authentication",
    "encryption",
    "encryption_in_transit",
    "producer_properties",
    "consumer_properties",
    "custom_metric_prefix",
];

const fn default_drain_timeout() -> Duration {
    Duration::from_secs(30)
}

const fn default_max_request_size() -> ByteSize {
    ByteSize::mib(1)
}

const fn default_produce_timeout() -> Duration {
    Duration::from_secs(10)
}

/// `encryption` of the kafka buffer: exactly one of `kms`, `key` or `key_file`.
/// ```yaml
/// encryption:
///   kms:
///     key_id: alias/sluice-buffer
///     region: us-east-1
///     encryption_context: {pipeline: log-pipeline}
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BufferEncryption {
    /// Data keys from AWS KMS (`GenerateDataKey`), wrapped by this KMS key.
    #[serde(default)]
    pub kms: Option<KmsEncryption>,
    /// A static AES-256 key, base64 (32 bytes), instead of KMS. Never printed.
    #[serde(default)]
    pub key: Option<Secret>,
    /// A file holding the static key (base64, or 32 raw bytes), instead of `key`.
    #[serde(default)]
    pub key_file: Option<PathBuf>,
}

/// `encryption.kms`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KmsEncryption {
    /// The KMS key that wraps the data keys: an id, ARN or `alias/...`. Required.
    pub key_id: String,
    /// The AWS region. Required.
    pub region: String,
    /// A KMS-compatible endpoint instead of AWS's, e.g. `http://127.0.0.1:4566`. Default: AWS.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// Sent with every GenerateDataKey and Decrypt; KMS refuses to unwrap with another.
    #[serde(default)]
    pub encryption_context: BTreeMap<String, String>,
    /// How long one data key seals records before the next is fetched. Default `1h`.
    #[serde(
        default = "default_data_key_lifetime",
        deserialize_with = "units::duration"
    )]
    pub data_key_lifetime: Duration,
}

const fn default_data_key_lifetime() -> Duration {
    Duration::from_secs(3600)
}

/// `encryption_in_transit`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InTransit {
    /// `ssl` (TLS) or `none`. Required.
    #[serde(rename = "type")]
    pub kind: TransitType,
    /// A PEM file of the CA that signed the brokers' certificates. Default: the system's CAs.
    #[serde(default)]
    pub certificate: Option<PathBuf>,
    /// Skip verifying the brokers' certificates (tests only). Default false.
    #[serde(default)]
    pub insecure: bool,
}

/// `encryption_in_transit.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransitType {
    Ssl,
    None,
}

/// A secret from the file: printed as `<redacted>`.
#[derive(Clone, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// One topic of the kafka buffer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaTopic {
    /// The topic's name. Required.
    pub name: String,
    /// The consumer group. Every sluice process with the same `group_id` shares the topic's
    /// partitions. Required.
    pub group_id: String,
    /// How many consumers this process runs in the group. Default 2.
    #[serde(default = "default_topic_workers")]
    pub workers: usize,
    /// Create the topic at startup if it does not exist. Default false.
    #[serde(default)]
    pub create_topic: bool,
    /// Partitions of a topic created by `create_topic`. Default 1.
    #[serde(default = "default_one")]
    pub number_of_partitions: i32,
    /// Replication factor of a topic created by `create_topic`. Default 1.
    #[serde(default = "default_one")]
    pub replication_factor: i32,
    /// Where a group with no committed offset starts: `earliest` or `latest`. Default
    /// `earliest`, so nothing written before the first start is skipped.
    #[serde(default)]
    pub auto_offset_reset: AutoOffsetReset,
    /// How often acknowledged offsets are committed (also on rebalance and shutdown). Default `5s`.
    #[serde(
        default = "default_commit_interval",
        deserialize_with = "units::duration"
    )]
    pub commit_interval: Duration,
    /// The most records in one batch handed to the deserializer. Default 500. Data Prepper's
    /// name `consumer_max_poll_records` is accepted too.
    #[serde(
        default = "default_max_poll_records",
        alias = "consumer_max_poll_records"
    )]
    pub max_poll_records: usize,
    /// `session.timeout.ms`: how long the group waits for a silent consumer. Default `45s`.
    #[serde(
        default = "default_session_timeout",
        deserialize_with = "units::duration"
    )]
    pub session_timeout: Duration,
    /// `max.poll.interval.ms`. sluice keeps polling while it waits for slow sinks, so this only
    /// matters if a process hangs. Default `300s`.
    #[serde(
        default = "default_max_poll_interval",
        deserialize_with = "units::duration"
    )]
    pub max_poll_interval: Duration,
    /// Static group membership (Kafka's `group.instance.id`, KIP-345): a process restarted
    /// after a crash takes its partitions straight back, instead of waiting `session_timeout`
    /// for the group to give up on its dead predecessor. Default true. The trade-off: static
    /// members do not leave the group when they stop, so the partitions of a process that is
    /// stopped and not started again wait `session_timeout` before the group hands them to
    /// the others; set false where processes are often scaled down for good.
    #[serde(default = "default_static_membership")]
    pub static_membership: bool,
    /// This process's instance id in the group; its consumer `i` uses `<id>-<i>`. Default
    /// `sluice-<hostname>-<pipeline>-<hash of the data dir>`: the same across restarts of one
    /// process, different for every other process (two running processes cannot share a data
    /// dir). Set it where the hostname or data dir changes across restarts (e.g. to a
    /// StatefulSet's pod name), and never give two running processes the same one: the group
    /// fences one of them.
    #[serde(default)]
    pub group_instance_id: Option<String>,
}

/// The fields of a kafka topic, for suggestions.
pub const KAFKA_TOPIC_FIELDS: &[&str] = &[
    "name",
    "group_id",
    "workers",
    "create_topic",
    "number_of_partitions",
    "replication_factor",
    "auto_offset_reset",
    "commit_interval",
    "max_poll_records",
    "session_timeout",
    "max_poll_interval",
    "static_membership",
    "group_instance_id",
];

const fn default_topic_workers() -> usize {
    2
}

const fn default_one() -> i32 {
    1
}

const fn default_commit_interval() -> Duration {
    Duration::from_secs(5)
}

const fn default_max_poll_records() -> usize {
    500
}

const fn default_session_timeout() -> Duration {
    Duration::from_secs(45)
}

/// On: a restarted process resumes at once (KIP-345); see `static_membership`.
const fn default_static_membership() -> bool {
    true
}

const fn default_max_poll_interval() -> Duration {
    Duration::from_secs(300)
}

/// `auto_offset_reset`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoOffsetReset {
    /// Start from the oldest record the topic holds.
    #[default]
    Earliest,
    /// Start from records written after the group first joined.
    Latest,
}

impl AutoOffsetReset {
    /// librdkafka's value.
    pub fn as_str(self) -> &'static str {
        match self {
            AutoOffsetReset::Earliest => "earliest",
            AutoOffsetReset::Latest => "latest",
        }
    }
}

/// `authentication` of the kafka buffer: `sasl` with exactly one mechanism.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaAuthentication {
    /// The SASL mechanism and its credentials. Required.
    // Optional in serde only, so a misspelt mechanism gets one message; validation requires it.
    #[serde(default)]
    pub sasl: Option<KafkaSasl>,
}

/// One SASL mechanism: exactly one of the fields. (A struct rather than an enum so that YAML's
/// `scram_sha_512: {...}` map form parses inside the buffer's settings.)
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaSasl {
    /// SASL/PLAIN.
    #[serde(default)]
    pub plain: Option<Credentials>,
    /// SASL/SCRAM-SHA-256.
    #[serde(default)]
    pub scram_sha_256: Option<Credentials>,
    /// SASL/SCRAM-SHA-512.
    #[serde(default)]
    pub scram_sha_512: Option<Credentials>,
}

impl KafkaSasl {
    /// librdkafka's `sasl.mechanism` and the credentials (the first given; validation
    /// requires exactly one).
    pub fn mechanism(&self) -> Option<(&'static str, &Credentials)> {
        None.or(self.plain.as_ref().map(|c| ("PLAIN", c)))
            .or(self.scram_sha_256.as_ref().map(|c| ("SCRAM-SHA-256", c)))
            .or(self.scram_sha_512.as_ref().map(|c| ("SCRAM-SHA-512", c)))
    }

    /// How many mechanisms are given.
    pub fn count(&self) -> usize {
        [
            self.plain.is_some(),
            self.scram_sha_256.is_some(),
            self.scram_sha_512.is_some(),
        ]
        .iter()
        .filter(|g| **g)
        .count()
    }
}

/// A user name and password. The password is never printed.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    /// The user name. Required.
    pub username: String,
    /// The password: the text itself, `${env:NAME}` (an environment variable) or
    /// `${file:PATH}` (a file's first line). Required.
    pub password: String,
}

impl Credentials {
    /// The password, with `${env:...}` / `${file:...}` resolved. Errors never hold it.
    pub fn resolved_password(&self) -> Result<String, String> {
        resolve_secret(&self.password)
    }
}

/// `${env:NAME}` → the variable, `${file:PATH}` → the file's first line, else the text.
pub fn resolve_secret(text: &str) -> Result<String, String> {
    let inner = text.strip_prefix("${").and_then(|t| t.strip_suffix('}'));
    match inner.and_then(|t| t.split_once(':')) {
        Some(("env", name)) => {
            std::env::var(name).map_err(|_| format!("the environment variable `{name}` is not set"))
        }
        Some(("file", path)) => std::fs::read_to_string(path)
            .map(|t| t.lines().next().unwrap_or_default().to_owned())
            .map_err(|e| format!("cannot read the secret file `{path}`: {e}")),
        _ => Ok(text.to_owned()),
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
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
