//! The producer of the `kafka` sink: events to a topic, each record acknowledged by Kafka
//! (acks=all, idempotent) before the sink reports it taken. The client settings (SASL, TLS,
//! `producer_properties`, the keys sluice owns) are the buffer's, from the same code.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer as _};

use crate::{CreateTopic, KafkaBufferConfig, KafkaBufferError, Sasl, Tls};

/// Settings of a `kafka` sink.
#[derive(Debug, Clone)]
pub struct KafkaSinkConfig {
    pub bootstrap_servers: Vec<String>,
    pub topic: String,
    pub sasl: Option<Sasl>,
    pub tls: Option<Tls>,
    pub producer_properties: BTreeMap<String, String>,
    /// How long a record may wait for Kafka's acknowledgement (`message.timeout.ms`).
    pub produce_timeout: Duration,
    /// The largest record (`message.max.bytes`); larger events are refused, not retried.
    pub max_request_size: usize,
    pub create_topic: Option<CreateTopic>,
    /// For metric labels.
    pub pipeline: String,
}

impl KafkaSinkConfig {
    /// The buffer's settings with this sink's connection, so both make their clients the same way.
    fn client(&self) -> KafkaBufferConfig {
        KafkaBufferConfig {
            bootstrap_servers: self.bootstrap_servers.clone(),
            topic: self.topic.clone(),
            group_id: String::new(),
            consumers: 0,
            batch_size: 0,
            delay: Duration::ZERO,
            commit_interval: Duration::ZERO,
            auto_offset_reset: String::new(),
            session_timeout: Duration::ZERO,
            max_poll_interval: Duration::ZERO,
            group_instance_id: None,
            produce_timeout: self.produce_timeout,
            drain_timeout: Duration::ZERO,
            max_request_size: self.max_request_size,
            create_topic: self.create_topic,
            sasl: self.sasl.clone(),
            tls: self.tls.clone(),
            producer_properties: self.producer_properties.clone(),
            consumer_properties: BTreeMap::new(),
            encryption: None,
            pipeline: self.pipeline.clone(),
            metric_prefix: String::new(),
        }
    }
}

/// One record to produce.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    pub key: Option<&'a [u8]>,
    pub payload: &'a [u8],
    /// Where the event came from in the pipeline's Kafka buffer, sent as headers.
    pub origin: Option<Origin<'a>>,
}

/// Where an event came from in the pipeline's Kafka buffer: the header `sluice-origin`,
/// `<topic>/<partition>/<offset>/<index>` (decimal numbers; a topic name has no `/`), which
/// names the event. A consumer that keeps the ones it saw drops what a crash made the sink
/// produce again. One header, not four: a broker may spend time per header (Nisshi: about
/// 16 µs of CPU per header per record, `docs/performance.md` §12).
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
    /// The event's rank among the events of its buffer record.
    pub index: u32,
}

impl Origin<'_> {
    fn headers(&self) -> rdkafka::message::OwnedHeaders {
        let value = format!(
            "{}/{}/{}/{}",
            self.topic, self.partition, self.offset, self.index
        );
        rdkafka::message::OwnedHeaders::new_with_capacity(1).insert(rdkafka::message::Header {
            key: "sluice-origin",
            value: Some(&value),
        })
    }
}

/// One record the sink did not get into Kafka.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    /// The index of the record in the send.
    pub index: usize,
    /// Whether sending again may help (a timeout, a broker down) or not (too large, invalid).
    pub retryable: bool,
    pub reason: String,
}

/// The sink's producer.
pub struct KafkaSinkProducer {
    producer: FutureProducer,
    config: KafkaBufferConfig,
}

impl KafkaSinkProducer {
    /// Connects (fails within `produce_timeout` if no broker answers) and creates the topic
    /// when asked.
    pub async fn connect(config: KafkaSinkConfig) -> Result<Self, KafkaBufferError> {
        let config = config.client();
        let producer = crate::producer(&config)?;
        crate::check_reachable(&producer, &config).await?;
        if let Some(create) = config.create_topic {
            crate::create_topic(&config, create.partitions, create.replication_factor).await?;
        }
        Ok(Self { producer, config })
    }

    pub fn topic(&self) -> &str {
        &self.config.topic
    }

    /// Produces `records` and waits for every acknowledgement. Returns the records Kafka did
    /// not take; empty when all are in the topic.
    pub async fn send(&self, records: &[Outgoing<'_>]) -> Vec<Failed> {
        let mut failed = Vec::new();
        let mut deliveries = Vec::with_capacity(records.len());
        let too_large = self.config.max_request_size;
        for (
            index,
            Outgoing {
                key,
                payload,
                origin,
            },
        ) in records.iter().enumerate()
        {
            let size = payload.len() + key.map_or(0, <[u8]>::len);
            if size > too_large {
                failed.push(Failed {
                    index,
                    retryable: false,
                    reason: format!(
                        "the record is {size} bytes, over the sink's max_request_size of {too_large}"
                    ),
                });
                continue;
            }
            let mut record = FutureRecord::<[u8], [u8]>::to(&self.config.topic).payload(*payload);
            if let Some(key) = key {
                record = record.key(*key);
            }
            if let Some(origin) = origin {
                record = record.headers(origin.headers());
            }
            loop {
                match self.producer.send_result(record) {
                    Ok(delivery) => {
                        deliveries.push((index, delivery));
                        break;
                    }
                    // The local queue is full: wait for room.
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                        record = back;
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    Err((e, _)) => {
                        failed.push(classify(index, &e));
                        break;
                    }
                }
            }
        }
        for (index, delivery) in deliveries {
            match delivery.await {
                Ok(Ok(_)) => {}
                Ok(Err((e, _))) => failed.push(classify(index, &e)),
                Err(_) => failed.push(Failed {
                    index,
                    retryable: true,
                    reason: "the producer was dropped".to_owned(),
                }),
            }
        }
        failed.sort_by_key(|f| f.index);
        failed
    }

    /// Waits (off the reactor) for records still queued.
    pub async fn flush(&self) {
        let producer = self.producer.clone();
        let _ = tokio::task::spawn_blocking(move || producer.flush(Duration::from_secs(5))).await;
    }
}

fn classify(index: usize, e: &KafkaError) -> Failed {
    use RDKafkaErrorCode as C;
    let permanent = matches!(
        e.rdkafka_error_code(),
        Some(
            C::MessageSizeTooLarge
                | C::InvalidMessageSize
                | C::InvalidMessage
                | C::InvalidRecord
                | C::InvalidRequiredAcks
                | C::UnsupportedForMessageFormat
        )
    );
    Failed {
        index,
        retryable: !permanent,
        reason: format!("kafka did not take the record: {e}"),
    }
}
