//! The `kafka` source (a pull source): reads topics other producers write, in Data Prepper's
//! shape, keys verbatim:
//! ```yaml
//! source:
//!   kafka:
//!     bootstrap_servers: [127.0.0.1:9092]
//!     topics:
//!       - name: Topic1
//!         group_id: groupID1
//!         serde_format: json
//! ```
//! Its consumers are the kafka buffer's (one implementation): groups, rebalances, offsets
//! committed only once the sinks took the events, the commit schedule, lag metrics. They are
//! the pipeline's read side, so the pipeline's buffer stays `bounded_blocking`, whose
//! `buffer_size` bounds the records read ahead of the workers.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::deserializer::{DeserializerConfig, check_deserializer, opt_deserializer};
use super::{CheckSource, SourceConfig, SourceKind};
use crate::context::Context;
use crate::error::Errors;
use crate::kafka::resolved::{Membership, Sasl, Tls};
use crate::kafka::{
    AutoOffsetReset, KafkaAuthentication, KafkaClient, TransitType, check_authentication,
    check_properties, check_servers,
};
use crate::location::join;
use crate::processor::Unsupported;
use crate::secret::SecretError;
use crate::units::{self, ByteSize};

/// The `kafka` source.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaSource {
    /// The brokers to bootstrap from, `host:port` each. Required (Data Prepper's MSK lookup,
    /// `aws.msk`, is not supported).
    pub bootstrap_servers: Vec<String>,
    /// The topics to read, 1 to 10. Required.
    #[serde(default)]
    pub topics: Vec<SourceTopic>,
    /// SASL credentials for the brokers: `sasl` with one of `plaintext` (or `plain`), `scram`
    /// (with its `mechanism`), `scram_sha_256`, `scram_sha_512`. Default: none.
    #[serde(default)]
    pub authentication: Option<KafkaAuthentication>,
    /// TLS to the brokers: `type: ssl` (or `none`), `certificate` (the CA's PEM file),
    /// `insecure`. Default: none, plaintext (Data Prepper defaults to `ssl` even without the
    /// block; sluice's kafka clients all default to plaintext, as its kafka buffer does).
    #[serde(default)]
    pub encryption: Option<SourceEncryption>,
    /// Data Prepper's end-to-end acknowledgements. sluice always commits an offset only once
    /// every sink took the record's events (what `true` asks for), so either value reads the
    /// same. Default false.
    #[serde(default)]
    pub acknowledgments: bool,
    /// Data Prepper's wait for acknowledgements; accepted, no effect: a batch's offsets wait
    /// for its sinks, and shutdown waits `drain_timeout`.
    #[serde(default, deserialize_with = "units::optional_duration")]
    pub acknowledgments_timeout: Option<Duration>,
    /// Data Prepper's acknowledgement expiry; accepted, no effect (see
    /// `acknowledgments_timeout`).
    #[serde(default)]
    pub acknowledgments_expiry_reset: bool,
    /// librdkafka's `client.dns.lookup`: `use_all_dns_ips` (`default` is the same) or
    /// `resolve_canonical_bootstrap_servers_only`. Default: librdkafka's.
    #[serde(default)]
    pub client_dns_lookup: Option<DnsLookup>,
    /// A schema registry (AWS Glue, Confluent): refused, as sluice cannot reach one. Decode
    /// Avro or Protobuf records with a `deserializer` plugin instead.
    #[serde(default)]
    pub schema: Option<SchemaRegistry>,
    /// Data Prepper's AWS settings (MSK bootstrap lookup, IAM): not supported yet; give
    /// `bootstrap_servers` and SASL credentials.
    #[serde(default)]
    pub aws: Option<Unsupported>,
    /// sluice's: the deserializer for every record, in place of `serde_format` (a plugin name
    /// or a map with `name` and `options`). Default: from `serde_format`.
    #[serde(default, deserialize_with = "opt_deserializer")]
    pub deserializer: Option<DeserializerConfig>,
    /// sluice's: how long shutdown waits for records already read to reach the sinks (and be
    /// committed) before it leaves the groups; what is not done is read again after a restart.
    /// Default `30s`.
    #[serde(
        default = "default_drain_timeout",
        deserialize_with = "units::duration"
    )]
    pub drain_timeout: Duration,
    /// sluice's: extra librdkafka consumer settings, passed through as written (over what the
    /// topics' keys set: `fetch.wait.max.ms: 100` wins over `fetch_max_wait`). Keys sluice
    /// sets itself are refused.
    #[serde(default, deserialize_with = "units::properties")]
    pub consumer_properties: BTreeMap<String, String>,
}

/// One topic the kafka source reads.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceTopic {
    /// The topic's name. Required.
    pub name: String,
    /// The consumer group: every process with the same `group_id` shares the topic's
    /// partitions. Required.
    #[serde(default)]
    pub group_id: Option<String>,
    /// The group's `client.id` prefix (each consumer adds `-<n>`). Default `sluice-<group_id>`.
    #[serde(default)]
    pub client_id: Option<String>,
    /// Consumers this process runs in the group, 1 to 200. Default 2.
    #[serde(default = "default_workers")]
    pub workers: usize,
    /// How a record's value becomes an event: `plaintext` (`{"message": "<value>"}`; Data
    /// Prepper names the field after the record's key when it has one) or `json` (the value is
    /// the event; a value that is not a JSON object is dead-lettered). `bytes` reads as
    /// `plaintext`, as in Data Prepper without a schema; `avro` needs a schema registry:
    /// decode it with a `deserializer` plugin. Default `plaintext`.
    #[serde(default)]
    pub serde_format: SerdeFormat,
    /// Where a record's key goes: `include_as_field` (field `kafka_key`, `json` only),
    /// `include_as_metadata` (attribute `kafka_key`) or `discard`. Default `include_as_field`.
    #[serde(default)]
    pub key_mode: KeyMode,
    /// How often acknowledged offsets are committed, at least `1s` (the kafka buffer's
    /// schedule: at once for the first interval after an assignment). Default `5s`.
    #[serde(
        default = "default_commit_interval",
        deserialize_with = "units::duration"
    )]
    pub commit_interval: Duration,
    /// Data Prepper's Kafka auto-commit; accepted, no effect: sluice commits only what the
    /// sinks took. Default false.
    #[serde(default)]
    pub auto_commit: bool,
    /// Where a group with no committed offset starts: `earliest` or `latest`. Default
    /// `earliest`.
    #[serde(default)]
    pub auto_offset_reset: AutoOffsetReset,
    /// `session.timeout.ms`, at least `1s`. Default `45s`.
    #[serde(
        default = "default_session_timeout",
        deserialize_with = "units::duration"
    )]
    pub session_timeout: Duration,
    /// `heartbeat.interval.ms`, at least `1s`. Default `5s`.
    #[serde(default = "default_five_seconds", deserialize_with = "units::duration")]
    pub heart_beat_interval: Duration,
    /// `max.poll.interval.ms`. Default `300s`.
    #[serde(
        default = "default_max_poll_interval",
        deserialize_with = "units::duration"
    )]
    pub max_poll_interval: Duration,
    /// The most records in one batch handed to the deserializer. Default 500.
    #[serde(default = "default_max_poll_records")]
    pub consumer_max_poll_records: usize,
    /// Data Prepper's poll wait; accepted, no effect (a batch waits at most the pipeline's
    /// `delay` to fill).
    #[serde(default, deserialize_with = "units::optional_duration")]
    pub thread_waiting_time: Option<Duration>,
    /// `max.partition.fetch.bytes`. Default `1mb`.
    #[serde(default = "default_max_partition_fetch_bytes")]
    pub max_partition_fetch_bytes: ByteSize,
    /// `fetch.max.bytes`, `1000b` to `50mb` (librdkafka's least). Default `50mb`.
    #[serde(default = "default_fetch_max_bytes")]
    pub fetch_max_bytes: ByteSize,
    /// `fetch.wait.max.ms`: integer milliseconds, at least 1. Default 500.
    #[serde(default = "default_fetch_max_wait")]
    pub fetch_max_wait: u64,
    /// `fetch.min.bytes`, at least `1b`. Default `1b`.
    #[serde(default = "default_fetch_min_bytes")]
    pub fetch_min_bytes: ByteSize,
    /// `isolation.level`: `read_uncommitted` or `read_committed`. Default `read_uncommitted`.
    #[serde(default)]
    pub isolation_level: IsolationLevel,
    /// `retry.backoff.ms`. Default `10s`.
    #[serde(default = "default_ten_seconds", deserialize_with = "units::duration")]
    pub retry_backoff: Duration,
    /// `reconnect.backoff.ms`. Default `10s`.
    #[serde(default = "default_ten_seconds", deserialize_with = "units::duration")]
    pub reconnect_backoff: Duration,
    /// `topic.metadata.refresh.interval.ms` (Java's `metadata.max.age.ms`). Default `300s`.
    #[serde(
        default = "default_metadata_max_age",
        deserialize_with = "units::duration"
    )]
    pub metadata_max_age: Duration,
    /// `connections.max.idle.ms`, at least `1s`. Default `540s`.
    #[serde(
        default = "default_connections_max_idle",
        deserialize_with = "units::duration"
    )]
    pub connections_max_idle: Duration,
    /// sluice's: static group membership (KIP-345), as the kafka buffer's. Default true.
    #[serde(default = "crate::yes")]
    pub static_membership: bool,
    /// sluice's: this process's instance id in the group, as the kafka buffer's. Default
    /// `sluice-<hostname>-<pipeline>-<hash of the data dir>`.
    #[serde(default)]
    pub group_instance_id: Option<String>,
}

/// `serde_format` of a topic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SerdeFormat {
    #[default]
    Plaintext,
    Json,
    Bytes,
    Avro,
}

impl SerdeFormat {
    /// The built-in deserializer that reads it (`None`: avro, refused).
    fn deserializer(self) -> Option<DeserializerConfig> {
        let format = match self {
            SerdeFormat::Json => return Some(DeserializerConfig::default()),
            SerdeFormat::Plaintext | SerdeFormat::Bytes => "plain",
            SerdeFormat::Avro => return None,
        };
        Some(DeserializerConfig {
            name: "plain".to_owned(),
            options: [("format".to_owned(), format.into())].into(),
            ..DeserializerConfig::default()
        })
    }
}

/// `key_mode` of a topic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyMode {
    /// Field `kafka_key` of a `json` record's event, when the record has a key.
    #[default]
    IncludeAsField,
    /// Metadata attribute `kafka_key`.
    IncludeAsMetadata,
    /// Neither.
    Discard,
}

/// `isolation_level` of a topic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IsolationLevel {
    #[default]
    ReadUncommitted,
    ReadCommitted,
}

/// `client_dns_lookup`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DnsLookup {
    Default,
    UseAllDnsIps,
    ResolveCanonicalBootstrapServersOnly,
}

/// `encryption` of the kafka source: TLS to the brokers, Data Prepper's keys.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceEncryption {
    /// `ssl` or `none`. Default `ssl`.
    #[serde(default = "ssl", rename = "type")]
    pub kind: TransitType,
    /// The CA's PEM file that signed the brokers' certificates. Default: the system's CAs.
    #[serde(default)]
    pub certificate: Option<PathBuf>,
    /// Skip verifying the brokers' certificates (tests only). Default false.
    #[serde(default)]
    pub insecure: bool,
    /// Data Prepper's Java trust store: refused; give the CA as a PEM file in `certificate`.
    #[serde(default)]
    pub trust_store_file_path: Option<Unsupported>,
    /// Refused with `trust_store_file_path`.
    #[serde(default)]
    pub trust_store_password: Option<Unsupported>,
}

const fn ssl() -> TransitType {
    TransitType::Ssl
}

/// `schema`: read only to name the registry it points at.
#[derive(Debug, Clone, Deserialize)]
pub struct SchemaRegistry {
    /// `aws_glue` or `confluent`.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// The registry's address.
    #[serde(default)]
    pub registry_url: Option<String>,
}

const fn default_workers() -> usize {
    2
}
const fn default_commit_interval() -> Duration {
    Duration::from_secs(5)
}
const fn default_session_timeout() -> Duration {
    Duration::from_secs(45)
}
const fn default_five_seconds() -> Duration {
    Duration::from_secs(5)
}
const fn default_ten_seconds() -> Duration {
    Duration::from_secs(10)
}
const fn default_max_poll_interval() -> Duration {
    Duration::from_secs(300)
}
const fn default_max_poll_records() -> usize {
    500
}
const fn default_max_partition_fetch_bytes() -> ByteSize {
    ByteSize::mib(1)
}
const fn default_fetch_max_bytes() -> ByteSize {
    ByteSize::mib(50)
}
const fn default_fetch_max_wait() -> u64 {
    500
}
const fn default_fetch_min_bytes() -> ByteSize {
    ByteSize(1)
}
const fn default_metadata_max_age() -> Duration {
    Duration::from_secs(300)
}
const fn default_connections_max_idle() -> Duration {
    Duration::from_secs(540)
}
const fn default_drain_timeout() -> Duration {
    Duration::from_secs(30)
}

/// The kafka source as it runs: one entry per topic, secrets resolved.
#[derive(Debug, Clone)]
pub struct KafkaSourceSettings {
    pub bootstrap_servers: Vec<String>,
    pub topics: Vec<TopicSettings>,
    pub sasl: Option<Sasl>,
    pub tls: Option<Tls>,
    pub drain_timeout: Duration,
}

/// One topic as its consumers read it.
#[derive(Debug, Clone)]
pub struct TopicSettings {
    pub name: String,
    pub group_id: String,
    /// Consumers this process runs in the group.
    pub workers: usize,
    pub key_mode: KeyMode,
    pub commit_interval: Duration,
    pub auto_offset_reset: AutoOffsetReset,
    pub session_timeout: Duration,
    pub max_poll_interval: Duration,
    pub max_poll_records: usize,
    pub membership: Membership,
    /// librdkafka consumer settings: `consumer_properties`, then what the topic's keys set.
    pub consumer_properties: BTreeMap<String, String>,
    /// The start of the topic's metric names: `kafka_topic_<name>`, as Data Prepper's
    /// `<pipeline>.kafka.topic.<name>.` (the pipeline is a label).
    pub metric_prefix: String,
}

impl SourceTopic {
    /// The librdkafka settings the topic's keys make, over `extra`.
    fn properties(&self, extra: &BTreeMap<String, String>, dns: Option<DnsLookup>) -> BTreeMap<String, String> {
        let ms = |d: Duration| d.as_millis().to_string();
        let mut p = BTreeMap::new();
        let mut set = |k: &str, v: String| {
            p.insert(k.to_owned(), v);
        };
        set("heartbeat.interval.ms", ms(self.heart_beat_interval));
        set(
            "max.partition.fetch.bytes",
            self.max_partition_fetch_bytes.bytes().to_string(),
        );
        set("fetch.max.bytes", self.fetch_max_bytes.bytes().to_string());
        set("fetch.wait.max.ms", self.fetch_max_wait.to_string());
        set("fetch.min.bytes", self.fetch_min_bytes.bytes().to_string());
        set(
            "isolation.level",
            match self.isolation_level {
                IsolationLevel::ReadUncommitted => "read_uncommitted",
                IsolationLevel::ReadCommitted => "read_committed",
            }
            .to_owned(),
        );
        set("retry.backoff.ms", ms(self.retry_backoff));
        // librdkafka refuses a backoff above its maximum (1 s and 10 s by default).
        set(
            "retry.backoff.max.ms",
            ms(self.retry_backoff.max(Duration::from_secs(1))),
        );
        set("reconnect.backoff.ms", ms(self.reconnect_backoff));
        set(
            "reconnect.backoff.max.ms",
            ms(self.reconnect_backoff.max(Duration::from_secs(10))),
        );
        // A consumer's `fetch.max.bytes` must be at least its `message.max.bytes`.
        set(
            "message.max.bytes",
            self.fetch_max_bytes.bytes().clamp(1000, 1_000_000).to_string(),
        );
        set("topic.metadata.refresh.interval.ms", ms(self.metadata_max_age));
        set("connections.max.idle.ms", ms(self.connections_max_idle));
        if let Some(dns) = dns {
            let value = match dns {
                DnsLookup::Default | DnsLookup::UseAllDnsIps => "use_all_dns_ips",
                DnsLookup::ResolveCanonicalBootstrapServersOnly => {
                    "resolve_canonical_bootstrap_servers_only"
                }
            };
            set("client.dns.lookup", value.to_owned());
        }
        // `consumer_properties` as written, over what the topic's keys set.
        p.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        p
    }
}

impl KafkaSource {
    /// TLS to the brokers, when `encryption.type` is `ssl`.
    fn tls(&self) -> Option<Tls> {
        self.encryption
            .as_ref()
            .filter(|e| e.kind == TransitType::Ssl)
            .map(|e| Tls {
                ca: e.certificate.clone(),
                insecure: e.insecure,
            })
    }

}

impl SourceConfig for KafkaSource {
    // It can read its topics again: writing them to another Kafka topic adds a copy, not
    // durability.
    const KIND: SourceKind = SourceKind::Pull;
    const READS_ITSELF: bool = true;
    fn read<'de, D: Deserializer<'de>>(_: &'static str, d: D) -> Result<Self, D::Error> {
        Self::deserialize(d)
    }
    fn deserializer(&self) -> Cow<'_, DeserializerConfig> {
        if let Some(d) = &self.deserializer {
            return Cow::Borrowed(d);
        }
        let format = self
            .topics
            .first()
            .map(|t| t.serde_format)
            .unwrap_or_default();
        Cow::Owned(format.deserializer().unwrap_or_default())
    }
}

impl crate::Resolve for KafkaSource {
    type Settings = KafkaSourceSettings;
    type Error = SecretError;
    fn resolve(&self, _pipeline: &str) -> Result<KafkaSourceSettings, SecretError> {
        let topics = self
            .topics
            .iter()
            .map(|t| {
                let group_id = t.group_id.clone().unwrap_or_default();
                let mut consumer_properties =
                    t.properties(&self.consumer_properties, self.client_dns_lookup);
                if let Some(id) = &t.client_id {
                    consumer_properties.insert("client.id".to_owned(), id.clone());
                }
                TopicSettings {
                    metric_prefix: metric_prefix(&t.name),
                    name: t.name.clone(),
                    group_id,
                    workers: t.workers,
                    key_mode: t.key_mode,
                    commit_interval: t.commit_interval,
                    auto_offset_reset: t.auto_offset_reset,
                    session_timeout: t.session_timeout,
                    max_poll_interval: t.max_poll_interval,
                    max_poll_records: t.consumer_max_poll_records,
                    membership: if t.static_membership {
                        Membership::Static {
                            instance_id: t.group_instance_id.clone(),
                        }
                    } else {
                        Membership::Dynamic
                    },
                    consumer_properties,
                }
            })
            .collect();
        Ok(KafkaSourceSettings {
            bootstrap_servers: self.bootstrap_servers.clone(),
            topics,
            sasl: crate::kafka::resolved::resolve_sasl(self.authentication.as_ref())?,
            tls: self.tls(),
            drain_timeout: self.drain_timeout,
        })
    }
}

/// `kafka_topic_<name>`, the name's characters outside Prometheus's `[a-zA-Z0-9_]` as `_`.
fn metric_prefix(topic: &str) -> String {
    let clean: String = topic
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("kafka_topic_{clean}")
}

impl CheckSource for KafkaSource {
    fn check(&self, path: &str, errors: &mut Errors, context: Context<'_>) {
        check_servers(&self.bootstrap_servers, path, errors);
        check_authentication(self.authentication.as_ref(), path, errors);
        if let Some(ca) = self.tls().and_then(|t| t.ca) {
            errors.file(&join(path, "encryption.certificate"), &ca);
        }
        if self.topics.is_empty() || self.topics.len() > 10 {
            errors.at(
                &join(path, "topics"),
                format!(
                    "`{path}.topics` lists {} topics; list 1 to 10, each with `name` and \
                     `group_id`",
                    self.topics.len()
                ),
            );
        }
        if let Some(schema) = &self.schema {
            let registry = match (&schema.kind, &schema.registry_url) {
                (Some(kind), Some(url)) => format!("the {kind} schema registry at {url}"),
                (Some(kind), None) => format!("the {kind} schema registry"),
                (None, Some(url)) => format!("the schema registry at {url}"),
                (None, None) => "a schema registry".to_owned(),
            };
            errors.at(
                &join(path, "schema"),
                format!(
                    "`{path}.schema` points at {registry}, which sluice cannot reach; remove it \
                     and decode the records with a `deserializer` plugin (Avro, Protobuf, ...)"
                ),
            );
        }
        check_properties(
            KafkaClient::Consumer,
            &self.consumer_properties,
            path,
            "consumer_properties",
            errors,
        );
        if self.drain_timeout.is_zero() {
            errors.at(
                &join(path, "drain_timeout"),
                format!("`{path}.drain_timeout` must be more than zero"),
            );
        }
        let mut formats = Vec::new();
        for (i, t) in self.topics.iter().enumerate() {
            check_topic(t, &format!("{path}.topics[{i}]"), errors);
            if !formats.contains(&t.serde_format) {
                formats.push(t.serde_format);
            }
        }
        if self.deserializer.is_none() && formats.len() > 1 {
            errors.at(
                &join(path, "topics"),
                format!(
                    "the topics of `{path}` have different `serde_format`s; one source has one \
                     deserializer: read them in one pipeline each, or give `deserializer`"
                ),
            );
        }
        check_deserializer(
            &self.deserializer(),
            &join(path, "deserializer"),
            errors,
            context,
        );
    }
}

fn check_topic(t: &SourceTopic, path: &str, errors: &mut Errors) {
    if t.name.trim().is_empty() {
        errors.at(
            &join(path, "name"),
            format!("`{path}.name` must not be empty"),
        );
    }
    match &t.group_id {
        None => errors.at(
            path,
            format!("`{path}` needs `group_id`, the consumer group that reads `{}`", t.name),
        ),
        Some(g) if g.is_empty() || g.len() > 255 => errors.at(
            &join(path, "group_id"),
            format!("`{path}.group_id` must be 1 to 255 characters"),
        ),
        Some(_) => {}
    }
    if let Some(c) = &t.client_id
        && (c.is_empty() || c.len() > 255)
    {
        errors.at(
            &join(path, "client_id"),
            format!("`{path}.client_id` must be 1 to 255 characters"),
        );
    }
    if !(1..=200).contains(&t.workers) {
        errors.at(
            &join(path, "workers"),
            format!("`{path}.workers` is {}; it must be 1 to 200", t.workers),
        );
    }
    if t.serde_format == SerdeFormat::Avro {
        errors.at(
            &join(path, "serde_format"),
            format!(
                "`{path}.serde_format: avro` needs a schema registry, which sluice cannot \
                 reach; decode the records with a `deserializer` plugin"
            ),
        );
    }
    for (key, value) in [
        ("commit_interval", t.commit_interval),
        ("session_timeout", t.session_timeout),
        ("heart_beat_interval", t.heart_beat_interval),
        ("connections_max_idle", t.connections_max_idle),
    ] {
        if value < Duration::from_secs(1) {
            errors.at(
                &join(path, key),
                format!("`{path}.{key}` is {value:?}; it must be at least `1s`"),
            );
        }
    }
    if t.max_poll_interval < t.session_timeout {
        errors.at(
            &join(path, "max_poll_interval"),
            format!(
                "`{path}.max_poll_interval` ({:?}) is less than `session_timeout` ({:?}); Kafka \
                 clients refuse that: raise it",
                t.max_poll_interval, t.session_timeout
            ),
        );
    }
    if t.fetch_max_bytes.bytes() < 1000 {
        errors.at(
            &join(path, "fetch_max_bytes"),
            format!("`{path}.fetch_max_bytes` must be at least `1000b`"),
        );
    }
    if t.consumer_max_poll_records == 0 {
        errors.at(
            &join(path, "consumer_max_poll_records"),
            format!("`{path}.consumer_max_poll_records` must be at least 1"),
        );
    }
    if t.fetch_max_wait == 0 {
        errors.at(
            &join(path, "fetch_max_wait"),
            format!("`{path}.fetch_max_wait` must be at least 1 (milliseconds)"),
        );
    }
    if t.fetch_min_bytes.bytes() == 0 {
        errors.at(
            &join(path, "fetch_min_bytes"),
            format!("`{path}.fetch_min_bytes` must be at least `1b`"),
        );
    }
    let most = ByteSize::mib(50);
    if t.fetch_max_bytes.bytes() > most.bytes() {
        errors.at(
            &join(path, "fetch_max_bytes"),
            format!("`{path}.fetch_max_bytes` must be at most `50mb`"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Resolve as _;

    fn parse(source: &str) -> Result<KafkaSource, String> {
        let indented: String = source.lines().map(|l| format!("      {l}\n")).collect();
        let text = format!("p:\n  source:\n    kafka:\n{indented}  sink: [stdout]\n");
        crate::parse("t.yaml", &text, crate::Context::default())
            .map(|mut c| match c.pipelines.remove(0).source {
                super::super::Source::Kafka(k) => *k,
                other => panic!("{other:?}"),
            })
            .map_err(|e| e.to_string())
    }

    #[test]
    fn data_preppers_keys_set_the_consumers_settings() {
        let k = parse(
            "bootstrap_servers: [127.0.0.1:9092]\n\
             client_dns_lookup: use_all_dns_ips\n\
             topics:\n\
             - name: logs.v1\n  group_id: g\n  workers: 3\n  commit_interval: PT5S\n  \
             session_timeout: PT45S\n  heart_beat_interval: 3s\n  fetch_max_bytes: 10mb\n  \
             fetch_max_wait: 100\n  fetch_min_bytes: 1b\n  max_partition_fetch_bytes: 2mb\n  \
             isolation_level: read_committed\n  consumer_max_poll_records: 200\n  \
             auto_commit: false\n  thread_waiting_time: PT1S\n  key_mode: include_as_metadata",
        )
        .unwrap();
        let s = k.resolve("p").unwrap();
        let t = &s.topics[0];
        assert_eq!((t.workers, t.max_poll_records, t.group_id.as_str()), (3, 200, "g"));
        assert_eq!(t.metric_prefix, "kafka_topic_logs_v1");
        assert_eq!(t.key_mode, KeyMode::IncludeAsMetadata);
        let p = &t.consumer_properties;
        for (k, v) in [
            ("heartbeat.interval.ms", "3000"),
            ("fetch.max.bytes", "10485760"),
            ("fetch.wait.max.ms", "100"),
            ("max.partition.fetch.bytes", "2097152"),
            ("isolation.level", "read_committed"),
            ("client.dns.lookup", "use_all_dns_ips"),
        ] {
            assert_eq!(p.get(k).map(String::as_str), Some(v), "{k}");
        }
        assert!(s.tls.is_none(), "plaintext without `encryption`");
    }

    #[test]
    fn serde_format_picks_the_built_in_deserializer() {
        let k = parse("bootstrap_servers: [b:9092]\ntopics: [{name: t, group_id: g}]").unwrap();
        let d = k.deserializer();
        assert_eq!(d.name, "plain");
        let k = parse("bootstrap_servers: [b:9092]\ntopics: [{name: t, group_id: g, serde_format: json}]")
            .unwrap();
        assert_eq!(k.deserializer().name, "json");
    }

    #[test]
    fn what_sluice_cannot_do_is_refused_by_name() {
        for (source, want) in [
            ("bootstrap_servers: [b:9092]\ntopics: [{name: t}]", "needs `group_id`"),
            ("bootstrap_servers: [b:9092]\ntopics: []", "list 1 to 10"),
            (
                "bootstrap_servers: [b:9092]\ntopics: [{name: t, group_id: g}]\nschema: {type: confluent, registry_url: 'http://r:8081'}",
                "the confluent schema registry at http://r:8081, which sluice cannot reach",
            ),
            (
                "bootstrap_servers: [b:9092]\ntopics: [{name: t, group_id: g, serde_format: avro}]",
                "needs a schema registry",
            ),
            (
                "bootstrap_servers: [b:9092]\ntopics: [{name: t, group_id: g, workers: 201}]",
                "it must be 1 to 200",
            ),
            (
                "bootstrap_servers: [b:9092]\ntopics: [{name: t, group_id: g, commit_interval: 500ms}]",
                "it must be at least `1s`",
            ),
            (
                "bootstrap_servers: [b:9092]\ntopics: [{name: a, group_id: g, serde_format: json}, {name: b, group_id: g}]",
                "different `serde_format`s",
            ),
            (
                "bootstrap_servers: [b:9092]\ntopics: [{name: t, group_id: g}]\nconsumer_properties: {enable.auto.commit: true}",
                "is set by sluice",
            ),
        ] {
            let err = parse(source).unwrap_err();
            assert!(err.contains(want), "{source}:\n{err}");
        }
    }
}
