//! The `kafka` sink, in Data Prepper's shape:
//! ```yaml
//! sink:
//!   - kafka:
//!       bootstrap_servers: [127.0.0.1:9092]
//!       topic:
//!         name: enriched-logs
//!       serde_format: json
//!       partition_key: ${/host}
//! ```
//! Authentication, TLS and `producer_properties` take the kafka buffer's keys and rules.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::template::Template;
use crate::error::Errors;
use crate::kafka::resolved::{NewTopic, Sasl, Tls};
use crate::kafka::{
    InTransit, KafkaAuthentication, KafkaClient, check_authentication, check_properties,
    check_servers,
};
use crate::location::join;
use crate::units::{self, ByteSize};

/// The `kafka` sink.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaSink {
    /// The brokers to bootstrap from, `host:port` each. Required.
    pub bootstrap_servers: Vec<String>,
    /// The topic events go to. Required.
    pub topic: SinkTopic,
    /// How an event becomes a record: `plaintext` (the default), `json` or `bytes`. As in
    /// Data Prepper, each writes the event as its JSON text (they differ only in the Java
    /// serializer Data Prepper uses); `avro` is not supported.
    #[serde(default)]
    pub serde_format: SerdeFormat,
    /// The record key, so that events with the same key land in the same partition: text with
    /// `${/field}` references to event fields (JSON pointers), e.g. `${/host}`. A missing field
    /// makes an empty reference. Default: no key (records are spread over the partitions).
    #[serde(default)]
    pub partition_key: Option<String>,
    /// SASL credentials for the brokers, as the kafka buffer's. Default: none.
    #[serde(default)]
    pub authentication: Option<KafkaAuthentication>,
    /// TLS to the brokers, as the kafka buffer's `encryption_in_transit`. Data Prepper's
    /// `encryption: {type: ssl}` is accepted as `encryption`. Default: none (plaintext).
    #[serde(default, alias = "encryption")]
    pub encryption_in_transit: Option<InTransit>,
    /// Extra librdkafka producer settings, passed through as written (e.g. `linger.ms: 5`,
    /// `compression.type: lz4`). Keys sluice sets itself are refused.
    #[serde(default, deserialize_with = "units::properties")]
    pub producer_properties: BTreeMap<String, String>,
    /// How long a record may wait for Kafka's acknowledgement before it is sent again
    /// (`message.timeout.ms`). Default `30s`.
    #[serde(
        default = "default_produce_timeout",
        deserialize_with = "units::duration"
    )]
    pub produce_timeout: Duration,
    /// The largest record; larger events go to the dead-letter file. Default `1mb`.
    #[serde(default = "default_max_request_size")]
    pub max_request_size: ByteSize,
    /// Data Prepper's wait for its send thread at shutdown; accepted so its files load, no
    /// effect (sluice's shutdown waits for every acknowledgement, within `drain_timeout`).
    #[serde(default, deserialize_with = "units::optional_duration")]
    pub thread_wait_time: Option<Duration>,
}

/// `topic` of the kafka sink.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SinkTopic {
    /// The topic's name. Required.
    pub name: String,
    /// Create the topic at startup if it does not exist. Default false.
    #[serde(default)]
    pub create_topic: bool,
    /// Partitions of a topic created by `create_topic`. Default 1.
    #[serde(default = "one")]
    pub number_of_partitions: i32,
    /// Replication factor of a topic created by `create_topic`. Default 1.
    #[serde(default = "one")]
    pub replication_factor: i32,
    /// Data Prepper's value serializer; accepted (`plaintext`, `json`, `bytes`) so its files
    /// load. The record is the event's JSON text either way.
    #[serde(default)]
    pub serde_format: Option<SerdeFormat>,
}

/// `serde_format` of the kafka sink.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SerdeFormat {
    #[default]
    Plaintext,
    Json,
    Bytes,
}

const fn one() -> i32 {
    1
}

const fn default_produce_timeout() -> Duration {
    Duration::from_secs(30)
}

const fn default_max_request_size() -> ByteSize {
    ByteSize::mib(1)
}

/// The kafka sink as it runs (passwords read, the key template parsed).
#[derive(Debug, Clone)]
pub struct KafkaSinkSettings {
    pub bootstrap_servers: Vec<String>,
    pub topic: String,
    /// Create the topic at startup if missing, with these partitions and replicas.
    pub create_topic: Option<NewTopic>,
    /// The record key of an event.
    pub partition_key: Option<Template>,
    pub sasl: Option<Sasl>,
    pub tls: Option<Tls>,
    pub producer_properties: BTreeMap<String, String>,
    pub produce_timeout: Duration,
    /// The largest record, in bytes.
    pub max_request_size: usize,
}

/// Why the kafka sink's settings could not be resolved at startup.
#[derive(Debug, thiserror::Error)]
pub enum KafkaSinkResolveError {
    /// A password given as `${env:...}` or `${file:...}` could not be read.
    #[error("authentication: {0}")]
    Secret(#[from] crate::secret::SecretError),
    /// `partition_key` is not a valid template (validation says so first).
    #[error("partition_key: {0}")]
    PartitionKey(String),
}

impl crate::Resolve for KafkaSink {
    type Settings = KafkaSinkSettings;
    type Error = KafkaSinkResolveError;
    /// Reads the password.
    fn resolve(&self, _pipeline: &str) -> Result<KafkaSinkSettings, KafkaSinkResolveError> {
        Ok(KafkaSinkSettings {
            bootstrap_servers: self.bootstrap_servers.clone(),
            topic: self.topic.name.clone(),
            create_topic: self.topic.create_topic.then_some(NewTopic {
                partitions: self.topic.number_of_partitions,
                replication_factor: self.topic.replication_factor,
            }),
            partition_key: self
                .partition_key
                .as_deref()
                .map(Template::parse)
                .transpose()
                .map_err(KafkaSinkResolveError::PartitionKey)?,
            sasl: crate::kafka::resolved::resolve_sasl(self.authentication.as_ref())?,
            tls: crate::kafka::resolved::resolve_tls(self.encryption_in_transit.as_ref()),
            producer_properties: self.producer_properties.clone(),
            produce_timeout: self.produce_timeout,
            max_request_size: usize::try_from(self.max_request_size.bytes()).unwrap_or(usize::MAX),
        })
    }
}

impl super::SinkConfig for KafkaSink {
    fn check(&self, path: &str, errors: &mut Errors) {
        check(self, path, errors);
    }

    fn name(&self) -> String {
        format!("kafka:{}", self.topic.name)
    }
}

fn check(k: &KafkaSink, path: &str, errors: &mut Errors) {
    check_servers(&k.bootstrap_servers, path, errors);
    check_authentication(k.authentication.as_ref(), path, errors);
    if k.topic.name.trim().is_empty() {
        errors.at(
            &join(path, "topic.name"),
            format!("`{path}.topic.name` must not be empty"),
        );
    }
    for (field, value) in [
        ("number_of_partitions", k.topic.number_of_partitions),
        ("replication_factor", k.topic.replication_factor),
    ] {
        if value < 1 {
            errors.at(
                &join(path, &format!("topic.{field}")),
                format!("`{path}.topic.{field}` must be at least 1"),
            );
        }
    }
    if let Some(key) = &k.partition_key
        && let Err(reason) = Template::parse(key)
    {
        errors.at(
            &join(path, "partition_key"),
            format!("`{path}.partition_key`: {reason}"),
        );
    }
    if k.produce_timeout.is_zero() {
        errors.at(
            &join(path, "produce_timeout"),
            format!("`{path}.produce_timeout` must be more than zero"),
        );
    }
    if k.max_request_size.bytes() < 1024 {
        errors.at(
            &join(path, "max_request_size"),
            format!("`{path}.max_request_size` must be at least `1kb`"),
        );
    }
    check_properties(
        KafkaClient::Producer,
        &k.producer_properties,
        path,
        "producer_properties",
        errors,
    );
}
