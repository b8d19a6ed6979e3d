//! The Kafka buffer: sources produce raw records to a topic; consumers of a group read them
//! back in batches; offsets are committed only for records whose batch the pipeline
//! acknowledged (after the sinks took the events), so an accepted record survives a crash of
//! sluice and is delivered at least once.
//!
//! # Layout
//! - this file: [`KafkaBuffer`] (connect, create the topic, close, join, summary) and
//!   [`KafkaBufferError`].
//! - `config`: [`KafkaBufferConfig`] and the librdkafka settings it makes (every key sluice
//!   owns is set there).
//! - `stats`: [`KafkaStats`], the counts and gauges with Data Prepper's names.
//! - `produce`: the write path. `send_result` (a full local queue is backpressure: wait, never
//!   drop), then the delivery report; a write resolves only when Kafka has every record
//!   (acks=all, idempotent).
//! - `consume`: one thread per consumer. It polls, hands batches to the pipeline's workers over
//!   a bounded channel, pauses its partitions (but keeps polling, so it stays in the group)
//!   while the workers are behind, and commits what was acknowledged (through its committer,
//!   on schedule; itself, on revoke and close).
//! - `sink`: the `kafka` sink's producer ([`KafkaSinkProducer`]): same client settings, its
//!   own topic, each record acknowledged or reported failed (retryable or not).
//! - `commit`: per-partition tracking of acknowledged ranges; only gap-free prefixes commit.
//! - `committer`: each consumer's committer thread, which makes its scheduled commits (waiting
//!   for the broker, so the consumer thread need not) and reports their results back.
//! - `envelope`: the record headers that carry metadata (format version, receive time, origin).
//! - `source`: the `kafka` source ([`KafkaSource`]): the same consumers over topics other
//!   producers write, as a pipeline's read side.
//! - `rewind`: the buffer's history read again (`sluice buffer replay`) and described
//!   (`sluice buffer status`) by a consumer outside the group that never commits.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{FutureProducer, Producer};
use sluice_buffer::{Batch, Buffer, BufferReader, BufferWriter};
use tokio::sync::{Mutex, Notify, mpsc};

mod commit;
mod committer;
mod config;
mod consume;
mod envelope;
mod produce;
pub mod rewind;
mod sink;
mod source;
mod stats;

pub use config::{CreateTopic, Encryption, KafkaBufferConfig, Sasl, Tls};
pub use sink::{Failed, KafkaSinkConfig, KafkaSinkProducer, Origin, Outgoing};
pub use source::KafkaSource;
pub use stats::KafkaStats;

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
    /// Reading the topic's history (`sluice buffer status|replay`) failed.
    #[error("kafka topic `{topic}` at {servers}: {reason}")]
    History {
        topic: String,
        servers: String,
        reason: String,
    },
}

/// The Kafka buffer: an idempotent producer (shared with the other buffers of the process that
/// have the same producer settings: one produce request per broker for all their topics), and
/// `consumers` consumer threads feeding one bounded channel of batches that every reader takes
/// from.
#[derive(Clone)]
pub struct KafkaBuffer {
    inner: Arc<Inner>,
}

struct Inner {
    config: KafkaBufferConfig,
    producer: Arc<FutureProducer>,
    sealer: Option<sluice_crypt::Sealer>,
    /// The topic's partitions as the default partitioner counts them for a keyed record (read
    /// at connect); `None` if the topic was not found or the producer has another
    /// `partitioner` (see `BufferWriter::partition_of`).
    key_partitions: Option<u32>,
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
        let producer = shared_producer(&config)?;
        check_reachable(&producer, &config).await?;
        if let Some(create) = config.create_topic {
            create_topic(&config, create.partitions, create.replication_factor).await?;
        }
        let key_partitions = key_partitions(&producer, &config).await;
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
            threads.push(consume::spawn(consumer, format!("kafka-consumer-{i}")));
        }
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                producer,
                sealer,
                key_partitions,
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

    /// Whether this buffer and `other` write with one producer: they do when their producer
    /// settings (cluster, security, `producer_properties`, timeouts, sizes) are the same.
    pub fn shares_producer_with(&self, other: &KafkaBuffer) -> bool {
        Arc::ptr_eq(&self.inner.producer, &other.inner.producer)
    }
}

/// A producer's librdkafka settings, sorted.
type Settings = Vec<(String, String)>;

/// The buffers' producers, by their settings, held weakly: a producer goes when the last
/// buffer writing with it does.
static PRODUCERS: std::sync::Mutex<Vec<(Settings, Weak<FutureProducer>)>> =
    std::sync::Mutex::new(Vec::new());

/// The idempotent producer of `config`, shared by every buffer of the process whose producer
/// settings are the same (same cluster, security and `producer_properties`; the topic is not
/// a producer setting). librdkafka's producer is thread-safe and sends what is ready for a
/// broker, whatever the topic, in one request, so N pipelines make one produce request per
/// broker and linger, not N; and each producer costs threads, among them a polling thread that
/// spins for the last millisecond of every 100 ms wait (rust-rdkafka's `poll` rounds the time
/// left down to whole milliseconds), ≈0.8 % of a core per idle pipeline when each had its own.
/// The flip side: pipelines sharing a producer share its local queue and its failures.
#[expect(
    clippy::result_large_err,
    reason = "the crate's setup error, made once at startup"
)]
fn shared_producer(config: &KafkaBufferConfig) -> Result<Arc<FutureProducer>, KafkaBufferError> {
    let client = config.producer_client_config();
    let mut settings: Settings = client
        .config_map()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    settings.sort();
    let mut producers = PRODUCERS.lock().expect("not poisoned");
    producers.retain(|(_, producer)| producer.strong_count() > 0);
    if let Some(producer) = producers
        .iter()
        .find(|(known, _)| *known == settings)
        .and_then(|(_, producer)| producer.upgrade())
    {
        return Ok(producer);
    }
    let producer = Arc::new(create_producer(&client, config)?);
    producers.push((settings, Arc::downgrade(&producer)));
    Ok(producer)
}

/// An idempotent producer of `config` of its own (the `kafka` sink's).
#[expect(
    clippy::result_large_err,
    reason = "the crate's setup error, made once at startup"
)]
pub(crate) fn producer(config: &KafkaBufferConfig) -> Result<FutureProducer, KafkaBufferError> {
    create_producer(&config.producer_client_config(), config)
}

#[expect(
    clippy::result_large_err,
    reason = "the crate's setup error, made once at startup"
)]
fn create_producer(
    client: &rdkafka::ClientConfig,
    config: &KafkaBufferConfig,
) -> Result<FutureProducer, KafkaBufferError> {
    client.create().map_err(|error| KafkaBufferError::Client {
        role: "producer",
        servers: config.servers(),
        error,
    })
}

pub(crate) async fn check_reachable(
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
    result.map_err(|error| config.unreachable(error))
}

impl KafkaBufferConfig {
    /// No broker of these settings answered within `produce_timeout`.
    pub(crate) fn unreachable(&self, error: KafkaError) -> KafkaBufferError {
        KafkaBufferError::Unreachable {
            servers: self.servers(),
            timeout: self.produce_timeout,
            error,
            hint: self.security_hint(),
        }
    }
}

/// How many partitions the topic has, read once at connect, for `BufferWriter::partition_of`.
/// `None` when the topic is not there (it is made on first write with the broker's defaults)
/// or the producer is given a `partitioner` other than librdkafka's default. Partitions added
/// later are seen at the next start; until then, as for any keyed record when partitions are
/// added, a key's new records may go to another partition than its old ones.
async fn key_partitions(producer: &FutureProducer, config: &KafkaBufferConfig) -> Option<u32> {
    if config
        .producer_properties
        .get("partitioner")
        .is_some_and(|p| p != "consistent_random")
    {
        return None;
    }
    let (producer, topic, timeout) = (
        producer.clone(),
        config.topic.clone(),
        config.produce_timeout,
    );
    tokio::task::spawn_blocking(move || {
        // Every topic's, not ours: asking for a missing topic would create it.
        let metadata = producer.client().fetch_metadata(None, timeout).ok()?;
        let topic = metadata.topics().iter().find(|t| t.name() == topic)?;
        u32::try_from(topic.partitions().len())
            .ok()
            .filter(|&n| n > 0)
    })
    .await
    .ok()
    .flatten()
}

pub(crate) async fn create_topic(
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
            Ok(_) => tracing::info!(topic = %config.topic, partitions, "created the topic"),
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
        consume::join(&self.inner.threads).await;
        let producer = self.inner.producer.clone();
        // Shared: this waits for the other pipelines' records in flight too, which is harmless.
        let _ = tokio::task::spawn_blocking(move || producer.flush(Duration::from_secs(5))).await;
    }

    /// As a tier of a tiered buffer: durable; available unless closed or the last produce
    /// failed; `held` and `lag` are the group's lag on the partitions this process reads.
    fn tier_state(&self) -> sluice_buffer::TierState {
        let stats = &self.inner.stats;
        let lag = stats.lag();
        sluice_buffer::TierState {
            name: "kafka".to_owned(),
            durable: true,
            available: !self.inner.closed.load(Ordering::SeqCst)
                && !stats.produce_failing.load(Ordering::Relaxed),
            held: lag,
            capacity: None,
            lag,
        }
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
