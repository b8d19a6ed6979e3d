//! The `kafka` source: the buffer's consumers (`consume`: groups, rebalances, commits only of
//! what the pipeline acknowledged, the commit schedule, lag) over topics other producers
//! write, one set of consumers per topic, all feeding one bounded channel of batches. It is
//! the pipeline's read side in place of a buffer: it writes to no topic and needs no producer
//! (a reader's credentials may not allow writing); its own writer refuses (the pipeline puts
//! an in-memory buffer for replays beside it).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer as _};
use sluice_buffer::{Batch, Buffer, BufferReader, BufferWriter, Record, WriteError};
use tokio::sync::{Mutex, mpsc};

use crate::{KafkaBufferConfig, KafkaBufferError, KafkaStats, consume};

/// Consumers of the topics of one `kafka` source.
#[derive(Clone)]
pub struct KafkaSource {
    inner: Arc<Inner>,
}

struct Inner {
    /// Each topic's settings and counts.
    topics: Vec<(KafkaBufferConfig, Arc<KafkaStats>)>,
    closed: Arc<AtomicBool>,
    batches: Arc<Mutex<mpsc::Receiver<Batch>>>,
    threads: std::sync::Mutex<Vec<std::thread::JoinHandle<()>>>,
}

impl KafkaSource {
    /// Checks that the brokers answer (within the first topic's `produce_timeout`), warns of
    /// topics not there yet, and starts each topic's consumers. At most `queued` batches wait
    /// for the workers: what the source holds in memory ahead of them is bounded.
    pub async fn connect(
        topics: Vec<KafkaBufferConfig>,
        queued: usize,
    ) -> Result<Self, KafkaBufferError> {
        let Some(first) = topics.first() else {
            return Err(KafkaBufferError::History {
                topic: String::new(),
                servers: String::new(),
                reason: "the kafka source lists no topic".to_owned(),
            });
        };
        let names = metadata_topics(first).await?;
        for t in &topics {
            if !names.contains(&t.topic) {
                tracing::warn!(pipeline = %t.pipeline, topic = %t.topic, servers = %t.servers(),
                    "the topic does not exist (yet); the source reads it once it does");
            }
        }
        let closed = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel(queued.max(1));
        let mut threads = Vec::new();
        let mut with_stats = Vec::new();
        for config in topics {
            let stats = Arc::new(KafkaStats::new(&config.metric_prefix, &config.pipeline));
            for i in 0..config.consumers {
                let consumer = consume::Consumer::new(
                    &config,
                    i,
                    tx.clone(),
                    stats.clone(),
                    closed.clone(),
                    None,
                )?
                .keeping_headers();
                threads.push(consume::spawn(consumer, format!("kafka-source-{i}")));
            }
            tracing::info!(pipeline = %config.pipeline, topic = %config.topic, group_id = %config.group_id,
                consumers = config.consumers, "kafka source reading");
            with_stats.push((config, stats));
        }
        Ok(Self {
            inner: Arc::new(Inner {
                topics: with_stats,
                closed,
                batches: Arc::new(Mutex::new(rx)),
                threads: std::sync::Mutex::new(threads),
            }),
        })
    }
}

/// The names of the topics the cluster of `config` has; fails when no broker answers.
async fn metadata_topics(config: &KafkaBufferConfig) -> Result<Vec<String>, KafkaBufferError> {
    let client = config.client(&config.consumer_properties);
    let consumer: BaseConsumer = client.create().map_err(|error| KafkaBufferError::Client {
        role: "consumer",
        servers: config.servers(),
        error,
    })?;
    let timeout = config.produce_timeout;
    let result = tokio::task::spawn_blocking(move || {
        consumer.fetch_metadata(None, timeout).map(|m| {
            m.topics()
                .iter()
                .map(|t| t.name().to_owned())
                .collect::<Vec<_>>()
        })
    })
    .await
    .expect("metadata fetch does not panic");
    result.map_err(|error| config.unreachable(error))
}

/// What a source that reads topics itself answers a write (`sluice dlq replay`).
struct Unwritable {
    topics: String,
}

#[async_trait::async_trait]
impl BufferWriter for Unwritable {
    async fn write(&self, _: Vec<Record>, _: Duration) -> Result<(), WriteError> {
        Err(WriteError::Unavailable(format!(
            "the pipeline reads kafka topic(s) {} itself and has no buffer to write to; write \
             the records to a topic it reads",
            self.topics
        )))
    }
}

#[async_trait::async_trait]
impl Buffer for KafkaSource {
    fn writer(&self) -> Arc<dyn BufferWriter> {
        let topics: Vec<&str> = self
            .inner
            .topics
            .iter()
            .map(|(c, _)| c.topic.as_str())
            .collect();
        Arc::new(Unwritable {
            topics: topics.join(", "),
        })
    }

    fn reader(&self) -> Box<dyn BufferReader> {
        Box::new(crate::Reader {
            batches: self.inner.batches.clone(),
        })
    }

    fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
    }

    /// Waits (off the reactor) for the consumers' last commit and leaving their groups.
    async fn join(&self) {
        consume::join(&self.inner.threads).await;
    }

    fn drain_timeout(&self) -> Option<Duration> {
        self.inner.topics.iter().map(|(c, _)| c.drain_timeout).max()
    }

    fn log_summary(&self) {
        for (config, s) in &self.inner.topics {
            tracing::info!(
                pipeline = %config.pipeline,
                topic = %config.topic,
                records_consumed = s.records_consumed.get(),
                records_committed = s.records_committed.get(),
                positive_acknowledgements = s.positive_acknowledgements.get(),
                negative_acknowledgements = s.negative_acknowledgements.get(),
                "kafka source stopped"
            );
        }
    }

    /// Not a tier: a buffer policy cannot sit over a source's topics (validation refuses it).
    fn tier_state(&self) -> sluice_buffer::TierState {
        let lag = self.inner.topics.iter().map(|(_, s)| s.lag()).sum();
        sluice_buffer::TierState {
            name: "kafka source".to_owned(),
            durable: true,
            available: !self.inner.closed.load(Ordering::SeqCst),
            held: lag,
            capacity: None,
            lag,
        }
    }
}
