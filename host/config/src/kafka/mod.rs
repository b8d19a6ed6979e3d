//! The `kafka` buffer: its shape (Data Prepper's keys), its rules (`validate`), the
//! librdkafka properties sluice owns (`properties`), and the settings it runs with
//! ([`resolved`]).

mod properties;
pub mod resolved;
mod validate;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::processor::Unsupported;
use crate::units::{self, ByteSize};

pub use crate::secret::{Credentials, SecretError, resolve_secret};

pub use properties::{KafkaClient, owned_property};
pub(crate) use validate::{check_authentication, check_properties, check_servers};

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
    /// Encryption of records at rest in Kafka (AES-256-GCM envelopes): `kms`, `key` or
    /// `key_file`. Default: none. Data Prepper's block of the same name, with `type: ssl` or
    /// `type: none` (and `certificate`, `insecure`), is TLS to the brokers and is read as
    /// `encryption_in_transit`.
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

impl KafkaBuffer {
    /// The start of the buffer's metric names: `custom_metric_prefix`, else `kafka_buffer`.
    pub fn metric_prefix(&self) -> String {
        self.custom_metric_prefix
            .clone()
            .unwrap_or_else(|| "kafka_buffer".to_owned())
    }
}

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
    /// Data Prepper's encryption in transit, `ssl` or `none`: with it, this block is TLS to
    /// the brokers, as `encryption_in_transit` (whose keys it then takes: `certificate`,
    /// `insecure`), and holds no key for records at rest.
    #[serde(default, rename = "type")]
    pub kind: Option<TransitType>,
    /// With `type`: the CA's PEM file, as `encryption_in_transit.certificate`.
    #[serde(default)]
    pub certificate: Option<PathBuf>,
    /// With `type`: skip verifying the brokers' certificates, as
    /// `encryption_in_transit.insecure`.
    #[serde(default)]
    pub insecure: Option<bool>,
    /// Data Prepper's Java trust store: refused; give the CA as a PEM file in `certificate`.
    #[serde(default)]
    pub trust_store_file_path: Option<Unsupported>,
    /// Data Prepper's Java trust store password: refused with `trust_store_file_path`.
    #[serde(default)]
    pub trust_store_password: Option<Unsupported>,
}

impl BufferEncryption {
    /// Whether this is Data Prepper's encryption in transit rather than sluice's at rest.
    pub fn is_in_transit(&self) -> bool {
        self.kind.is_some() || self.certificate.is_some() || self.insecure.is_some()
    }
}

impl KafkaBuffer {
    /// The encryption of records at rest: `encryption`, unless it is Data Prepper's TLS block.
    pub fn at_rest(&self) -> Option<&BufferEncryption> {
        self.encryption.as_ref().filter(|e| !e.is_in_transit())
    }

    /// TLS to the brokers: `encryption_in_transit`, or Data Prepper's `encryption: {type: ...}`.
    pub fn in_transit(&self) -> Option<InTransit> {
        match (&self.encryption_in_transit, &self.encryption) {
            (Some(t), _) => Some(t.clone()),
            (None, Some(e)) if e.is_in_transit() => Some(InTransit {
                // Data Prepper's default type is ssl.
                kind: e.kind.unwrap_or(TransitType::Ssl),
                certificate: e.certificate.clone(),
                insecure: e.insecure.unwrap_or(false),
            }),
            _ => None,
        }
    }
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
    /// How often acknowledged offsets are committed. For the first `commit_interval` after a
    /// partition is assigned (a start, a rebalance) every acknowledged batch is committed at
    /// once, so a process that crashes soon after each start (an OOM loop) still moves forward
    /// rather than reading the same backlog again every time; after that at most every
    /// `commit_interval`. Also on rebalance and shutdown. A `kill -9` makes the next start read
    /// again at most one interval's worth of acknowledged records, plus what was in flight.
    /// Default `5s`.
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
    /// SASL/PLAIN. Data Prepper's name `plaintext` is accepted too.
    #[serde(default, alias = "plaintext")]
    pub plain: Option<Credentials>,
    /// Data Prepper's SCRAM block: the credentials with their `mechanism`, `SCRAM-SHA-256` or
    /// `SCRAM-SHA-512`.
    #[serde(default)]
    pub scram: Option<ScramCredentials>,
    /// SASL/SCRAM-SHA-256.
    #[serde(default)]
    pub scram_sha_256: Option<Credentials>,
    /// SASL/SCRAM-SHA-512.
    #[serde(default)]
    pub scram_sha_512: Option<Credentials>,
    /// Data Prepper's AWS MSK IAM authentication: not supported yet.
    #[serde(default)]
    pub aws_msk_iam: Option<Unsupported>,
    /// Data Prepper's OAuth (OAUTHBEARER): not supported yet.
    #[serde(default)]
    pub oauth: Option<Unsupported>,
    /// Data Prepper's Azure federated authentication: not supported yet.
    #[serde(default)]
    pub azure_federated: Option<Unsupported>,
}

impl KafkaSasl {
    /// librdkafka's `sasl.mechanism` and the credentials (the first given; validation
    /// requires exactly one).
    pub fn mechanism(&self) -> Option<(&'static str, &Credentials)> {
        None.or(self.plain.as_ref().map(|c| ("PLAIN", c)))
            .or(self
                .scram
                .as_ref()
                .and_then(|s| Some((s.mechanism()?, &s.credentials))))
            .or(self.scram_sha_256.as_ref().map(|c| ("SCRAM-SHA-256", c)))
            .or(self.scram_sha_512.as_ref().map(|c| ("SCRAM-SHA-512", c)))
    }

    /// How many mechanisms are given.
    pub fn count(&self) -> usize {
        [
            self.plain.is_some(),
            self.scram.is_some(),
            self.scram_sha_256.is_some(),
            self.scram_sha_512.is_some(),
        ]
        .iter()
        .filter(|g| **g)
        .count()
    }
}

/// Data Prepper's `sasl.scram`: credentials and the mechanism.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScramCredentials {
    #[serde(flatten)]
    pub credentials: Credentials,
    /// `SCRAM-SHA-256` or `SCRAM-SHA-512`. Required.
    pub mechanism: String,
}

impl ScramCredentials {
    /// librdkafka's mechanism name, if it is one sluice knows.
    pub fn mechanism(&self) -> Option<&'static str> {
        match self
            .mechanism
            .to_ascii_uppercase()
            .replace('_', "-")
            .as_str()
        {
            "SCRAM-SHA-256" => Some("SCRAM-SHA-256"),
            "SCRAM-SHA-512" => Some("SCRAM-SHA-512"),
            _ => None,
        }
    }
}
