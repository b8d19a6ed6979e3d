//! The `kafka` sink: each event one record of the topic, its JSON text (whatever the
//! `serde_format`, as in Data Prepper), keyed by `partition_key`. A record is taken once Kafka acknowledged it
//! (acks=all, idempotent producer); records Kafka refuses for good (too large, invalid) go to
//! the dead-letter file, the rest of a failed send is sent again. From a Kafka buffer, each
//! record carries where its event came from as headers (`sluice_kafka::Origin`), so a
//! consumer can drop what a crash made the sink produce twice.

use std::sync::Arc;

use bytes::Bytes;
use sluice_config::sink::kafka::KafkaSinkSettings;
use sluice_config::sink::template::Template;
use sluice_kafka::{
    CreateTopic, KafkaBufferError, KafkaSinkConfig, KafkaSinkProducer, Origin, Outgoing,
};

use super::{Output, Provenance, SendError};

pub struct KafkaSink {
    producer: KafkaSinkProducer,
    key: Option<Template>,
}

/// Connects to the brokers (failing if none answers within `produce_timeout`).
impl super::BuildOutput for KafkaSinkSettings {
    type Error = KafkaBufferError;
    async fn build(
        self,
        _: &str,
        cx: &super::SinkBuild<'_>,
    ) -> Result<Arc<dyn Output>, KafkaBufferError> {
        let settings = self;
        let producer = KafkaSinkProducer::connect(KafkaSinkConfig {
            bootstrap_servers: settings.bootstrap_servers,
            topic: settings.topic,
            sasl: settings.sasl.map(crate::buffer::kafka::sasl),
            tls: settings.tls.map(crate::buffer::kafka::tls),
            producer_properties: settings.producer_properties,
            produce_timeout: settings.produce_timeout,
            max_request_size: settings.max_request_size,
            create_topic: settings.create_topic.map(|c| CreateTopic {
                partitions: c.partitions,
                replication_factor: c.replication_factor,
            }),
            pipeline: cx.pipeline.to_owned(),
        })
        .await?;
        Ok(Arc::new(KafkaSink {
            producer,
            key: settings.partition_key,
        }))
    }
}

impl KafkaSink {
    /// The record key of one event, if `partition_key` is set.
    fn key(&self, event: &Bytes) -> Option<Vec<u8>> {
        let template = self.key.as_ref()?;
        let value = serde_json::from_slice::<serde_json::Value>(event).ok()?;
        Some(template.render(&value).into_bytes())
    }
}

#[async_trait::async_trait]
impl Output for KafkaSink {
    /// Each record carries its event's buffer position as headers (`sluice_kafka::Origin`):
    /// the test broker refuses transactions, so this is how a consumer drops what a crash
    /// made the sink produce again (`docs/design/exactly-once.md`).
    async fn send(&self, events: &[Bytes], from: &Provenance) -> Result<(), SendError> {
        let keys: Vec<_> = events.iter().map(|e| self.key(e)).collect();
        let records: Vec<Outgoing<'_>> = keys
            .iter()
            .zip(events)
            .enumerate()
            .map(|(i, (k, e))| Outgoing {
                key: k.as_deref(),
                payload: e,
                origin: from
                    .at
                    .get(i)
                    .and_then(Option::as_ref)
                    .map(|(p, index)| Origin {
                        topic: &p.topic,
                        partition: p.partition,
                        offset: p.offset,
                        index: *index,
                    }),
            })
            .collect();
        let failed = self.producer.send(&records).await;
        if failed.is_empty() {
            return Ok(());
        }
        let mut rejected = Vec::new();
        let mut retry = Vec::new();
        let mut reason = String::new();
        for f in failed {
            if f.retryable {
                reason = f.reason;
                retry.push(f.index);
            } else {
                rejected.push((f.index, f.reason));
            }
        }
        if rejected.is_empty() && retry.len() == events.len() {
            return Err(SendError::Retry(reason));
        }
        Err(SendError::Partial {
            rejected,
            retry,
            reason,
        })
    }
}
