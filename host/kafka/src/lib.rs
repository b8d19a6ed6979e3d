//! The Kafka buffer: sources produce raw records to a topic; consumers of a group read them
//! back in batches; offsets are committed only for records whose batch the pipeline
//! acknowledged (after the sinks took the events), so an accepted record survives a crash of
//! sluice and is delivered at least once.
//!
//! # Layout
//! - this file: [`KafkaBufferConfig`] and the librdkafka settings it makes (every key sluice
//!   owns is set here), [`KafkaBuffer`] (connect, create the topic, close).
//! - `produce`: the write path. `send_result` (a full local queue is backpressure: wait, never
//!   drop), then the delivery report; a write resolves only when Kafka has every record
//!   (acks=all, idempotent).
//! - `consume`: one thread per consumer. It polls, hands batches to the pipeline's workers over
//!   a bounded channel, pauses its partitions (but keeps polling, so it stays in the group)
//!   while the workers are behind, and commits what was acknowledged.
//! - `commit`: per-partition tracking of acknowledged ranges; only gap-free prefixes commit.
//! - `envelope`: the record headers that carry metadata (format version, receive time, origin).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{FutureProducer, Producer};
use sluice_buffer::{Batch, Buffer, BufferReader, BufferWriter, Count};
use tokio::sync::{Mutex, Notify, mpsc};

mod commit;
mod consume;
mod envelope;
mod produce;

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
    /// How often acknowledged offsets are committed (also on revoke and close).
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
    /// Create the topic with (partitions, replication factor) if it does not exist.
    pub create_topic: Option<(i32, i32)>,
    /// SASL (mechanism, username, password).
    pub sasl: Option<(String, String, String)>,
    /// TLS to the brokers: the CA file (else the system's), and whether to skip verification.
    pub tls: Option<(Option<std::path::PathBuf>, bool)>,
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
            .field(
                "sasl",
                &self.sasl.as_ref().map(|(m, u, _)| (m, u, "<redacted>")),
            )
            .finish_non_exhaustive()
    }
}

impl KafkaBufferConfig {
    /// Settings shared by the producer, consumers and admin client: the user's `extra`
    /// properties first, then what sluice owns, so that on the same key sluice's value wins
    /// even if validation (`sluice_config::kafka`, which refuses these keys) was skipped.
    fn client(&self, extra: &BTreeMap<String, String>) -> ClientConfig {
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
        if let Some((mechanism, username, password)) = &self.sasl {
            client
                .set("sasl.mechanism", mechanism)
                .set("sasl.username", username)
                .set("sasl.password", password);
        }
        if let Some((ca, insecure)) = &self.tls {
            if let Some(ca) = ca {
                client.set("ssl.ca.location", ca.display().to_string());
            }
            if *insecure {
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
        consumer
            .set("group.id", &self.group_id)
            .set("client.id", format!("sluice-{}-{index}", self.group_id))
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

    fn servers(&self) -> String {
        self.bootstrap_servers.join(",")
    }

    /// What to check besides the address, for connection errors.
    fn security_hint(&self) -> String {
        let mut hint = String::new();
        if let Some((mechanism, username, _)) = &self.sasl {
            hint.push_str(&format!(
                ", and the SASL {mechanism} credentials of user `{username}`"
            ));
        }
        if let Some((ca, _)) = &self.tls {
            hint.push_str(&match ca {
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

/// Why the Kafka buffer could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum KafkaBufferError {
    #[error("cannot create the kafka {role} for `{servers}`: {error}")]
    Client {
        role: &'static str,
        servers: String,
        error: KafkaError,
    },
    #[error(
        "cannot reach kafka at `{servers}` within {timeout:?}: {error}; check \
         `bootstrap_servers`, that the brokers are up{hint}"
    )]
    Unreachable {
        servers: String,
        timeout: Duration,
        error: KafkaError,
        hint: String,
    },
    #[error("encryption: {0}")]
    Encryption(#[from] sluice_crypt::CryptError),
    #[error("cannot create topic `{topic}` on `{servers}`: {reason}")]
    CreateTopic {
        topic: String,
        servers: String,
        reason: String,
    },
}

/// Counts of one Kafka buffer. Exported as `<prefix>_<name>{pipeline}` with Data Prepper's
/// names; the prefix is `custom_metric_prefix`, by default `kafka_buffer`.
#[derive(Debug)]
pub struct KafkaStats {
    /// numberOfRecordsProduced: records Kafka acknowledged to the producer.
    pub records_written: Count,
    /// numberOfWriteFailures: writes Kafka refused or did not acknowledge in time.
    pub write_failures: Count,
    /// numberOfProducerQueueFull: writes refused because the producer's local queue stayed full.
    pub write_timeouts: Count,
    /// numberOfRecordsConsumed.
    pub records_consumed: Count,
    /// numberOfBytesConsumed (payload bytes).
    pub bytes_consumed: Count,
    /// numberOfRecordsCommitted: offsets moved by commits.
    pub records_committed: Count,
    /// numberOfPositiveAcknowledgements: batches the pipeline acknowledged.
    pub positive_acknowledgements: Count,
    /// numberOfNegativeAcknowledgements: batches dropped unacknowledged (their offsets are
    /// not committed; they are read again after a restart or rebalance).
    pub negative_acknowledgements: Count,
    /// numberOfPollErrors: poll and client errors (broker down, ...).
    pub poll_errors: Count,
    /// numberOfPollAuthErrors.
    pub poll_auth_errors: Count,
    /// numberOfPartitionsRevoked.
    pub partitions_revoked: Count,
    /// numberOfRecordsUnreadable: records whose envelope this build cannot open.
    pub records_unreadable: Count,
    /// numberOfRecordsFailedToDecrypt: sealed records that did not open (wrong key or
    /// context, a changed byte, KMS refused), or that this buffer has no key for.
    pub decrypt_failures: Count,
    /// recordsInFlight: records handed to the workers and not yet acknowledged.
    pub(crate) in_flight: metrics::Gauge,
    prefix: String,
    pipeline: String,
}

impl KafkaStats {
    /// Registers the metrics of `pipeline`'s buffer under `prefix`.
    pub fn new(prefix: &str, pipeline: &str) -> Self {
        let count = |name: &str| Count::new(&format!("{prefix}_{name}"), pipeline);
        Self {
            records_written: count("numberOfRecordsProduced"),
            write_failures: count("numberOfWriteFailures"),
            write_timeouts: count("numberOfProducerQueueFull"),
            records_consumed: count("numberOfRecordsConsumed"),
            bytes_consumed: count("numberOfBytesConsumed"),
            records_committed: count("numberOfRecordsCommitted"),
            positive_acknowledgements: count("numberOfPositiveAcknowledgements"),
            negative_acknowledgements: count("numberOfNegativeAcknowledgements"),
            poll_errors: count("numberOfPollErrors"),
            poll_auth_errors: count("numberOfPollAuthErrors"),
            partitions_revoked: count("numberOfPartitionsRevoked"),
            records_unreadable: count("numberOfRecordsUnreadable"),
            decrypt_failures: count("numberOfRecordsFailedToDecrypt"),
            in_flight: metrics::gauge!(format!("{prefix}_recordsInFlight"), "pipeline" => pipeline.to_owned()),
            prefix: prefix.to_owned(),
            pipeline: pipeline.to_owned(),
        }
    }

    /// Sets the lag gauge of one partition.
    pub(crate) fn consumer_lag(&self, partition: i32, lag: i64) {
        metrics::gauge!(
            format!("{}_consumerLag", self.prefix),
            "pipeline" => self.pipeline.clone(),
            "partition" => partition.to_string()
        )
        .set(lag as f64);
    }
}

/// The Kafka buffer: a shared idempotent producer, and `consumers` consumer threads feeding
/// one bounded channel of batches that every reader takes from.
#[derive(Clone)]
pub struct KafkaBuffer {
    inner: Arc<Inner>,
}

struct Inner {
    config: KafkaBufferConfig,
    producer: FutureProducer,
    sealer: Option<sluice_crypt::Sealer>,
    stats: Arc<KafkaStats>,
    closed: Arc<AtomicBool>,
    closing: Arc<Notify>,
    batches: Arc<Mutex<mpsc::Receiver<Batch>>>,
    threads: std::sync::Mutex<Vec<std::thread::JoinHandle<()>>>,
}

impl KafkaBuffer {
    /// Connects (fails within `produce_timeout` if no broker answers), creates the topic when
    /// asked, and starts the consumers.
    pub async fn connect(config: KafkaBufferConfig) -> Result<Self, KafkaBufferError> {
        let producer: FutureProducer =
            config
                .producer_client_config()
                .create()
                .map_err(|error| KafkaBufferError::Client {
                    role: "producer",
                    servers: config.servers(),
                    error,
                })?;
        check_reachable(&producer, &config).await?;
        if let Some((partitions, replication)) = config.create_topic {
            create_topic(&config, partitions, replication).await?;
        }
        let sealer = match &config.encryption {
            Some(e) => {
                let sealer = sluice_crypt::Sealer::new(e.keys.clone(), e.data_key_lifetime);
                sealer.warm_up().await?;
                Some(sealer)
            }
            None => None,
        };

        let stats = Arc::new(KafkaStats::new(&config.metric_prefix, &config.pipeline));
        let closed = Arc::new(AtomicBool::new(false));
        // Room for one waiting batch per consumer: enough to keep workers busy, small enough
        // that a stalled sink holds at most `consumers` batches in memory beyond the workers'.
        let (tx, rx) = mpsc::channel(config.consumers.max(1));
        let mut threads = Vec::new();
        for i in 0..config.consumers {
            let opener = config.encryption.as_ref().map(|e| {
                sluice_crypt::Opener::new(e.keys.clone(), tokio::runtime::Handle::current())
            });
            let consumer = consume::Consumer::new(
                &config,
                i,
                tx.clone(),
                stats.clone(),
                closed.clone(),
                opener,
            )?;
            let handle = std::thread::Builder::new()
                .name(format!("kafka-consumer-{i}"))
                .spawn(move || consumer.run())
                .expect("spawning a consumer thread");
            threads.push(handle);
        }
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                producer,
                sealer,
                stats,
                closed,
                closing: Arc::new(Notify::new()),
                batches: Arc::new(Mutex::new(rx)),
                threads: std::sync::Mutex::new(threads),
            }),
        })
    }

    /// The buffer's counters.
    pub fn stats(&self) -> Arc<KafkaStats> {
        self.inner.stats.clone()
    }
}

async fn check_reachable(
    producer: &FutureProducer,
    config: &KafkaBufferConfig,
) -> Result<(), KafkaBufferError> {
    let producer = producer.clone();
    let timeout = config.produce_timeout;
    // Metadata of every topic, not of ours: asking for a missing topic would auto-create it
    // with the broker's defaults before `create_topic` could set its partitions.
    let result = tokio::task::spawn_blocking(move || {
        producer.client().fetch_metadata(None, timeout).map(|_| ())
    })
    .await
    .expect("metadata fetch does not panic");
    result.map_err(|error| KafkaBufferError::Unreachable {
        servers: config.servers(),
        timeout,
        error,
        hint: config.security_hint(),
    })
}

async fn create_topic(
    config: &KafkaBufferConfig,
    partitions: i32,
    replication: i32,
) -> Result<(), KafkaBufferError> {
    let admin: AdminClient<DefaultClientContext> = config
        .client(&BTreeMap::new())
        .create()
        .map_err(|error| KafkaBufferError::Client {
            role: "admin client",
            servers: config.servers(),
            error,
        })?;
    let topic = NewTopic::new(
        &config.topic,
        partitions,
        TopicReplication::Fixed(replication),
    );
    let options = AdminOptions::new().operation_timeout(Some(config.produce_timeout));
    let fail = |reason: String| KafkaBufferError::CreateTopic {
        topic: config.topic.clone(),
        servers: config.servers(),
        reason,
    };
    let results = tokio::time::timeout(
        config.produce_timeout,
        admin.create_topics([&topic], &options),
    )
    .await
    .map_err(|_| fail(format!("no answer within {:?}", config.produce_timeout)))?
    .map_err(|e| fail(e.to_string()))?;
    for result in results {
        match result {
            Ok(_) => tracing::info!(topic = %config.topic, partitions, "created the buffer topic"),
            Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((_, code)) => return Err(fail(code.to_string())),
        }
    }
    Ok(())
}

#[async_trait::async_trait]
impl Buffer for KafkaBuffer {
    fn writer(&self) -> Arc<dyn BufferWriter> {
        Arc::new(self.clone())
    }

    fn reader(&self) -> Box<dyn BufferReader> {
        Box::new(Reader {
            batches: self.inner.batches.clone(),
        })
    }

    fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        self.inner.closing.notify_waiters();
    }

    /// Waits (off the reactor) for the consumer threads to finish their last commit and leave
    /// the group, then flushes the producer. Call after [`Buffer::close`] and after the readers
    /// returned `None`.
    async fn join(&self) {
        let threads = std::mem::take(&mut *self.inner.threads.lock().expect("not poisoned"));
        let _ = tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        })
        .await;
        let producer = self.inner.producer.clone();
        let _ = tokio::task::spawn_blocking(move || producer.flush(Duration::from_secs(5))).await;
    }

    /// `drain_timeout`: the Kafka buffer may need longer than the default for its batches.
    fn drain_timeout(&self) -> Option<Duration> {
        Some(self.inner.config.drain_timeout)
    }

    fn log_summary(&self) {
        let s = &self.inner.stats;
        tracing::info!(
            pipeline = %self.inner.config.pipeline,
            records_written = s.records_written.get(),
            write_failures = s.write_failures.get(),
            records_consumed = s.records_consumed.get(),
            records_committed = s.records_committed.get(),
            positive_acknowledgements = s.positive_acknowledgements.get(),
            negative_acknowledgements = s.negative_acknowledgements.get(),
            "kafka buffer stopped"
        );
    }
}

/// A pipeline worker's end: takes the next batch any consumer produced.
struct Reader {
    batches: Arc<Mutex<mpsc::Receiver<Batch>>>,
}

#[async_trait::async_trait]
impl BufferReader for Reader {
    async fn read(&mut self) -> Option<Batch> {
        self.batches.lock().await.recv().await
    }
}
