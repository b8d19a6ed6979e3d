//! The Kafka buffer: sources produce raw records to a topic; workers consume them back in
//! batches through a consumer group; offsets are committed only for batches the pipeline
//! acknowledged (after the sinks took their events), so an accepted record survives a crash
//! and is delivered at least once.
//!
//! # Layout
//! - [`KafkaBufferConfig`]: what the buffer needs (the YAML model lives in `sluice-config`).
//! - [`KafkaBuffer`]: the [`Buffer`]: a shared idempotent producer and one consumer per reader.
//! - `envelope`: the record headers that carry metadata through Kafka.
//!
//! Write path: `send_result` (a full local queue is backpressure: wait, never drop), then the
//! delivery report; `write` resolves only when Kafka has every record (acks=all, idempotent).
//! Read path: a reader polls up to `batch_size` records or `delay`; acknowledging a batch
//! stores the next offset of each partition it covered; stored offsets are committed at most
//! every `commit_interval`, and synchronously when the buffer closes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{CommitMode, Consumer, StreamConsumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use sluice_buffer::{
    Acknowledgement, Batch, Buffer, BufferReader, BufferWriter, Record, WriteError,
};
use tokio::sync::Notify;

/// Settings of the Kafka buffer.
#[derive(Debug, Clone)]
pub struct KafkaBufferConfig {
    /// `bootstrap.servers`, e.g. `127.0.0.1:9092`.
    pub bootstrap_servers: Vec<String>,
    /// The buffer topic.
    pub topic: String,
    /// The consumer group.
    pub group_id: String,
    /// Most records per batch.
    pub batch_size: usize,
    /// How long a reader waits for a batch to fill.
    pub delay: Duration,
    /// How often stored offsets are committed.
    pub commit_interval: Duration,
    /// `earliest` or `latest`.
    pub auto_offset_reset: String,
    /// How long a write waits for Kafka's acknowledgement before it fails.
    pub delivery_timeout: Duration,
    /// Extra librdkafka producer properties (already checked against the keys sluice owns).
    pub producer_properties: BTreeMap<String, String>,
    /// Extra librdkafka consumer properties (likewise).
    pub consumer_properties: BTreeMap<String, String>,
}

/// Why the Kafka buffer could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum KafkaBufferError {
    #[error("cannot create the kafka {role} for `{servers}`: {source}")]
    Client {
        role: &'static str,
        servers: String,
        source: KafkaError,
    },
}

/// The Kafka buffer. Clones share the producer.
#[derive(Clone)]
pub struct KafkaBuffer {
    config: Arc<KafkaBufferConfig>,
    producer: FutureProducer,
    closed: Arc<AtomicBool>,
    closing: Arc<Notify>,
}

impl KafkaBuffer {
    /// Creates the producer. Consumers are created per reader.
    pub fn new(config: KafkaBufferConfig) -> Result<Self, KafkaBufferError> {
        let mut client = ClientConfig::new();
        client
            .set("bootstrap.servers", config.bootstrap_servers.join(","))
            .set("acks", "all")
            .set("enable.idempotence", "true")
            .set(
                "message.timeout.ms",
                config.delivery_timeout.as_millis().to_string(),
            );
        for (k, v) in &config.producer_properties {
            client.set(k, v);
        }
        let producer = client.create().map_err(|source| KafkaBufferError::Client {
            role: "producer",
            servers: config.bootstrap_servers.join(","),
            source,
        })?;
        Ok(Self {
            config: Arc::new(config),
            producer,
            closed: Arc::new(AtomicBool::new(false)),
            closing: Arc::new(Notify::new()),
        })
    }

    fn consumer(&self) -> Result<StreamConsumer, KafkaBufferError> {
        let c = &self.config;
        let mut client = ClientConfig::new();
        client
            .set("bootstrap.servers", c.bootstrap_servers.join(","))
            .set("group.id", &c.group_id)
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", &c.auto_offset_reset);
        for (k, v) in &c.consumer_properties {
            client.set(k, v);
        }
        let consumer: StreamConsumer =
            client.create().map_err(|source| KafkaBufferError::Client {
                role: "consumer",
                servers: c.bootstrap_servers.join(","),
                source,
            })?;
        consumer
            .subscribe(&[&c.topic])
            .map_err(|source| KafkaBufferError::Client {
                role: "consumer",
                servers: c.bootstrap_servers.join(","),
                source,
            })?;
        Ok(consumer)
    }

    /// A reader with its own consumer in the group.
    pub fn try_reader(&self) -> Result<KafkaReader, KafkaBufferError> {
        Ok(KafkaReader {
            buffer: self.clone(),
            consumer: Arc::new(self.consumer()?),
            last_commit: Instant::now(),
        })
    }
}

/// Header names of the envelope (format version 1).
mod envelope {
    pub(crate) const VERSION: &str = "sluice-envelope";
    pub(crate) const RECEIVED_AT: &str = "sluice-received-at-ms";
    pub(crate) const ORIGIN: &str = "sluice-origin";
}

impl Buffer for KafkaBuffer {
    fn writer(&self) -> Arc<dyn BufferWriter> {
        Arc::new(self.clone())
    }

    /// Panics if the consumer cannot be created; use [`KafkaBuffer::try_reader`] to handle it.
    fn reader(&self) -> Box<dyn BufferReader> {
        Box::new(self.try_reader().expect("creating a kafka consumer"))
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.closing.notify_waiters();
    }
}

#[async_trait::async_trait]
impl BufferWriter for KafkaBuffer {
    async fn write(&self, records: Vec<Record>, timeout: Duration) -> Result<(), WriteError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(WriteError::Closed);
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let mut deliveries = Vec::with_capacity(records.len());
        for record in &records {
            let received = record.received_at_ms.to_string();
            let headers = OwnedHeaders::new()
                .insert(Header {
                    key: envelope::VERSION,
                    value: Some("1"),
                })
                .insert(Header {
                    key: envelope::RECEIVED_AT,
                    value: Some(&received),
                })
                .insert(Header {
                    key: envelope::ORIGIN,
                    value: Some(&record.origin),
                });
            let mut future = FutureRecord::<[u8], [u8]>::to(&self.config.topic)
                .payload(&record.payload)
                .headers(headers)
                .timestamp(record.received_at_ms as i64);
            if let Some(key) = &record.key {
                future = future.key(key);
            }
            loop {
                match self.producer.send_result(future) {
                    Ok(delivery) => {
                        deliveries.push(delivery);
                        break;
                    }
                    // The local queue is full: backpressure. Wait for room, up to the deadline.
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                        if tokio::time::Instant::now() >= deadline {
                            return Err(WriteError::Full(timeout));
                        }
                        future = back;
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    Err((e, _)) => return Err(WriteError::Unavailable(e.to_string())),
                }
            }
        }
        for delivery in deliveries {
            match tokio::time::timeout_at(deadline, delivery).await {
                Ok(Ok(Ok(_))) => {}
                Ok(Ok(Err((e, _)))) => {
                    return Err(WriteError::Unavailable(format!(
                        "kafka did not take the record: {e}"
                    )));
                }
                Ok(Err(_)) => {
                    return Err(WriteError::Unavailable(
                        "the producer was dropped".to_owned(),
                    ));
                }
                Err(_) => {
                    return Err(WriteError::Unavailable(format!(
                        "no delivery report from kafka within {timeout:?}"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// One consumer of the group; one per worker.
pub struct KafkaReader {
    buffer: KafkaBuffer,
    consumer: Arc<StreamConsumer>,
    last_commit: Instant,
}

impl KafkaReader {
    fn commit(&mut self, mode: CommitMode) {
        match self.consumer.commit_consumer_state(mode) {
            Ok(()) => {}
            // Nothing stored since the last commit.
            Err(KafkaError::ConsumerCommit(RDKafkaErrorCode::NoOffset)) => {}
            Err(e) => {
                tracing::warn!(error = %e, "committing offsets failed; they will be committed later")
            }
        }
        self.last_commit = Instant::now();
    }
}

#[async_trait::async_trait]
impl BufferReader for KafkaReader {
    async fn read(&mut self) -> Option<Batch> {
        let config = self.buffer.config.clone();
        if self.last_commit.elapsed() >= config.commit_interval {
            self.commit(CommitMode::Async);
        }
        let mut records = Vec::new();
        // Next offset per partition.
        let mut next: BTreeMap<i32, i64> = BTreeMap::new();
        let mut filled_by: Option<tokio::time::Instant> = None;
        while records.len() < config.batch_size {
            // Created before the flag is checked, so a close in between still wakes us.
            let closing = self.buffer.closing.notified();
            if self.buffer.closed.load(Ordering::SeqCst) {
                break;
            }
            let message = async {
                match filled_by {
                    Some(at) => tokio::time::timeout_at(at, self.consumer.recv()).await.ok(),
                    None => Some(self.consumer.recv().await),
                }
            };
            let received = tokio::select! {
                m = message => m,
                _ = closing => break,
            };
            let Some(result) = received else { break };
            match result {
                Ok(m) => {
                    let received_at_ms = header(&m, envelope::RECEIVED_AT)
                        .and_then(|v| v.parse().ok())
                        .unwrap_or_else(|| m.timestamp().to_millis().unwrap_or(0).max(0) as u64);
                    records.push(Record {
                        payload: m.payload().unwrap_or_default().to_vec(),
                        key: m.key().map(<[u8]>::to_vec),
                        received_at_ms,
                        origin: format!("{}/{}@{}", m.topic(), m.partition(), m.offset()),
                    });
                    next.insert(m.partition(), m.offset() + 1);
                    filled_by.get_or_insert_with(|| tokio::time::Instant::now() + config.delay);
                }
                Err(e) => {
                    tracing::warn!(error = %e, topic = %config.topic, "kafka poll failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        if records.is_empty() {
            // Closed: commit what was acknowledged, and end.
            self.commit(CommitMode::Sync);
            return None;
        }
        let consumer = self.consumer.clone();
        let topic = config.topic.clone();
        let ack = Acknowledgement::new(move || {
            for (partition, offset) in next {
                if let Err(e) = consumer.store_offset(&topic, partition, offset) {
                    tracing::warn!(error = %e, partition, offset, "storing an acknowledged offset failed");
                }
            }
        });
        Some(Batch { records, ack })
    }
}

fn header<'a>(m: &'a rdkafka::message::BorrowedMessage<'_>, name: &str) -> Option<&'a str> {
    m.headers()?
        .iter()
        .find(|h| h.key == name)
        .and_then(|h| h.value)
        .and_then(|v| std::str::from_utf8(v).ok())
}
