//! The Kafka buffer's settings ([`KafkaBufferConfig`]) and the librdkafka client settings
//! they make: every key sluice owns is set here, after the user's `*_properties`, so that
//! sluice's value wins on the same key.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rdkafka::config::ClientConfig;

/// Settings of the Kafka buffer.
#[derive(Clone)]
pub struct KafkaBufferConfig {
    /// `bootstrap.servers`, e.g. `127.0.0.1:9092`.
    pub bootstrap_servers: Vec<String>,
    /// The buffer topic.
    pub topic: String,
    /// The consumer group.
    pub group_id: String,
    /// Consumers this process runs in the group (each on its own thread).
    pub consumers: usize,
    /// Most records per batch.
    pub batch_size: usize,
    /// How long a consumer waits for a batch to fill once it has a record.
    pub delay: Duration,
    /// How often acknowledged offsets are committed once a partition has been read for one
    /// `commit_interval`; before that (after a start or an assignment) each acknowledged batch
    /// is committed at once, so a crash loop still moves forward. Also on revoke and close.
    pub commit_interval: Duration,
    /// `earliest` or `latest`.
    pub auto_offset_reset: String,
    /// `session.timeout.ms`.
    pub session_timeout: Duration,
    /// `max.poll.interval.ms`.
    pub max_poll_interval: Duration,
    /// Static membership: this process's `group.instance.id` (consumer `i` uses `<id>-<i>`), or
    /// `None` for dynamic membership.
    pub group_instance_id: Option<String>,
    /// How long a write waits for Kafka's acknowledgement (`message.timeout.ms`).
    pub produce_timeout: Duration,
    /// How long close waits for read batches to be acknowledged before the last commit.
    pub drain_timeout: Duration,
    /// The largest Kafka record written (payload, key and envelope headers).
    pub max_request_size: usize,
    /// Create the topic if it does not exist.
    pub create_topic: Option<CreateTopic>,
    /// SASL authentication to the brokers.
    pub sasl: Option<Sasl>,
    /// TLS to the brokers.
    pub tls: Option<Tls>,
    /// Extra librdkafka producer properties (already checked against the keys sluice owns).
    pub producer_properties: BTreeMap<String, String>,
    /// Extra librdkafka consumer properties (likewise).
    pub consumer_properties: BTreeMap<String, String>,
    /// Seal records at rest (AES-256-GCM envelopes).
    pub encryption: Option<Encryption>,
    /// The pipeline, for metric labels.
    pub pipeline: String,
    /// The start of this buffer's metric names (`kafka_buffer` unless configured).
    pub metric_prefix: String,
}

/// How to create the buffer topic when it is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateTopic {
    pub partitions: i32,
    pub replication_factor: i32,
}

/// SASL credentials (`sasl.mechanism`, `sasl.username`, `sasl.password`).
#[derive(Clone)]
pub struct Sasl {
    /// librdkafka's name: `PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512`.
    pub mechanism: String,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Sasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sasl")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// TLS to the brokers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    /// The CA file that signs the brokers' certificates (`None`: the system's CAs).
    pub ca: Option<std::path::PathBuf>,
    /// Skip certificate and host name verification (tests only).
    pub insecure: bool,
}

/// Where the buffer's data keys come from, and how long each seals records.
#[derive(Clone)]
pub struct Encryption {
    pub keys: Arc<dyn sluice_crypt::KeySource>,
    pub data_key_lifetime: Duration,
}

impl std::fmt::Debug for KafkaBufferConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaBufferConfig")
            .field("bootstrap_servers", &self.bootstrap_servers)
            .field("topic", &self.topic)
            .field("group_id", &self.group_id)
            .field("consumers", &self.consumers)
            .field("batch_size", &self.batch_size)
            .field("sasl", &self.sasl)
            .finish_non_exhaustive()
    }
}

impl KafkaBufferConfig {
    /// Settings shared by the producer, consumers and admin client: the user's `extra`
    /// properties first, then what sluice owns, so that on the same key sluice's value wins
    /// even if validation (`sluice_config::kafka`, which refuses these keys) was skipped.
    pub(crate) fn client(&self, extra: &BTreeMap<String, String>) -> ClientConfig {
        let mut client = ClientConfig::new();
        for (k, v) in extra {
            client.set(k, v);
        }
        client.set("bootstrap.servers", self.bootstrap_servers.join(","));
        let protocol = match (&self.sasl, &self.tls) {
            (None, None) => "PLAINTEXT",
            (Some(_), None) => "SASL_PLAINTEXT",
            (None, Some(_)) => "SSL",
            (Some(_), Some(_)) => "SASL_SSL",
        };
        client.set("security.protocol", protocol);
        if let Some(sasl) = &self.sasl {
            client
                .set("sasl.mechanism", &sasl.mechanism)
                .set("sasl.username", &sasl.username)
                .set("sasl.password", &sasl.password);
        }
        if let Some(tls) = &self.tls {
            if let Some(ca) = &tls.ca {
                client.set("ssl.ca.location", ca.display().to_string());
            }
            if tls.insecure {
                client
                    .set("enable.ssl.certificate.verification", "false")
                    .set("ssl.endpoint.identification.algorithm", "none");
            }
        }
        client
    }

    /// The producer's librdkafka settings: `producer_properties`, then every key sluice owns.
    /// Public so a test can check that each key set here is refused in `producer_properties`.
    pub fn producer_client_config(&self) -> ClientConfig {
        let mut producer = self.client(&self.producer_properties);
        producer
            .set("acks", "all")
            .set("enable.idempotence", "true")
            .set(
                "message.timeout.ms",
                self.produce_timeout.as_millis().to_string(),
            )
            // Room for the envelope headers and the protocol overhead over the payload limit.
            .set(
                "message.max.bytes",
                (self.max_request_size + 64 * 1024).to_string(),
            );
        producer
    }

    /// Consumer `index`'s librdkafka settings: `consumer_properties`, then every key sluice
    /// owns. Public so a test can check that each key set here is refused in
    /// `consumer_properties`.
    pub fn consumer_client_config(&self, index: usize) -> ClientConfig {
        let mut consumer = self.client(&self.consumer_properties);
        // The `kafka` source's `client_id` comes as `client.id` (the buffer refuses the key).
        let client_id = match self.consumer_properties.get("client.id") {
            Some(id) => format!("{id}-{index}"),
            None => format!("sluice-{}-{index}", self.group_id),
        };
        consumer
            .set("group.id", &self.group_id)
            .set("client.id", client_id)
            .set("statistics.interval.ms", "5000")
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", &self.auto_offset_reset)
            .set(
                "session.timeout.ms",
                self.session_timeout.as_millis().to_string(),
            )
            .set(
                "max.poll.interval.ms",
                self.max_poll_interval.as_millis().to_string(),
            );
        if let Some(id) = &self.group_instance_id {
            // KIP-345: a restart with the same id takes this consumer's partitions back
            // without waiting for the session of the process that died to expire.
            consumer.set("group.instance.id", format!("{id}-{index}"));
        }
        consumer
    }

    pub(crate) fn servers(&self) -> String {
        self.bootstrap_servers.join(",")
    }

    /// What to check besides the address, for connection errors.
    pub(crate) fn security_hint(&self) -> String {
        let mut hint = String::new();
        if let Some(Sasl {
            mechanism,
            username,
            ..
        }) = &self.sasl
        {
            hint.push_str(&format!(
                ", and the SASL {mechanism} credentials of user `{username}`"
            ));
        }
        if let Some(tls) = &self.tls {
            hint.push_str(&match &tls.ca {
                Some(ca) => format!(
                    ", and that the brokers' TLS certificates are signed by {}",
                    ca.display()
                ),
                None => ", and that the brokers' TLS certificates are trusted".to_owned(),
            });
        }
        hint
    }
}
