//! The `kafka` source: its consumers ([`sluice_kafka::KafkaSource`], the kafka buffer's) are
//! the pipeline's read side, connected by `connect` in place of its buffer
//! (`crate::buffer::build`); the source itself runs nothing. Each event of a record gets Data
//! Prepper's metadata attributes (`Topics::decorate`): `kafka_topic`, `kafka_partition`,
//! `kafka_timestamp`, `kafka_headers`, and the key by the topic's `key_mode`. What
//! `sluice dlq replay` sends back goes to a small in-memory buffer beside the topics
//! (`Pulled`), which the same workers read.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};
use sluice_config::source::kafka::{KafkaSourceSettings, KeyMode};
use tokio::sync::watch;

use super::pulled::Pulled;
use super::{Build, Decorate, Decoration, Source, SourceContext, SourceError};
use crate::buffer::kafka::{default_instance_id, sasl, tls};

/// The source: nothing to run, its consumers read for the pipeline.
struct Consumed;

impl Build for KafkaSourceSettings {
    async fn build(self, _: SourceContext) -> Result<Box<dyn Source>, SourceError> {
        Ok(Box::new(Consumed))
    }
}

#[async_trait::async_trait]
impl Source for Consumed {
    async fn run(self: Box<Self>, mut stop: watch::Receiver<bool>) {
        let _ = stop.wait_for(|s| *s).await;
    }
}

/// Connects the consumers of pipeline `p`'s kafka source, beside an in-memory buffer for
/// replayed records of `buffer` (its `bounded_blocking`). At most `queued` batches of the
/// topics wait for the workers.
pub(crate) async fn connect(
    p: &sluice_config::Pipeline,
    s: KafkaSourceSettings,
    queued: usize,
    buffer: &sluice_config::BoundedBlocking,
    data_dir: &Path,
) -> Result<Pulled, sluice_kafka::KafkaBufferError> {
    let configs = s
        .topics
        .into_iter()
        .enumerate()
        .map(|(i, t)| sluice_kafka::KafkaBufferConfig {
            bootstrap_servers: s.bootstrap_servers.clone(),
            // One id per topic (`-t<i>`): two topics of one source may share a group.
            group_instance_id: match t.membership {
                sluice_config::kafka::resolved::Membership::Dynamic => None,
                sluice_config::kafka::resolved::Membership::Static { instance_id } => {
                    let id = instance_id.unwrap_or_else(|| default_instance_id(&p.name, data_dir));
                    Some(format!("{id}-t{i}"))
                }
            },
            topic: t.name,
            group_id: t.group_id,
            consumers: t.workers,
            batch_size: t.max_poll_records,
            delay: p.delay,
            commit_interval: t.commit_interval,
            auto_offset_reset: t.auto_offset_reset.as_str().to_owned(),
            session_timeout: t.session_timeout,
            max_poll_interval: t.max_poll_interval,
            // How long the brokers have to answer at start.
            produce_timeout: std::time::Duration::from_secs(10),
            drain_timeout: s.drain_timeout,
            max_request_size: 0,
            create_topic: None,
            sasl: s.sasl.clone().map(sasl),
            tls: s.tls.clone().map(tls),
            producer_properties: BTreeMap::new(),
            consumer_properties: t.consumer_properties,
            encryption: None,
            pipeline: p.name.clone(),
            metric_prefix: t.metric_prefix,
        })
        .collect();
    let topics = sluice_kafka::KafkaSource::connect(configs, queued).await?;
    Ok(Pulled::new(p, Box::new(topics), buffer))
}

/// Each topic's `key_mode`, for `Topics::decorate`.
#[derive(Debug, Clone)]
pub struct Topics {
    key_modes: BTreeMap<String, KeyMode>,
    /// The records are read as `json` (where `include_as_field` applies).
    json: bool,
}

impl Topics {
    /// The topics of `source`, if it is a kafka source.
    pub(crate) fn of(source: &sluice_config::Source) -> Option<Arc<dyn Decorate>> {
        let sluice_config::Source::Kafka(k) = source else {
            return None;
        };
        Some(Arc::new(Self {
            key_modes: k.topics.iter().map(|t| (t.name.clone(), t.key_mode)).collect(),
            json: source.deserializer().name == "json",
        }))
    }

}

impl Decorate for Topics {
    /// The metadata attributes of `record`'s events, and the `kafka_key` field to set on them
    /// (`include_as_field`, `json` records with a key).
    fn decorate(&self, record: &sluice_buffer::Record) -> Arc<Decoration> {
        let mut attributes = Map::new();
        let key = record
            .key
            .as_deref()
            .map(|k| Value::String(String::from_utf8_lossy(k).into_owned()));
        let mut field = None;
        if let Some(position) = &record.position {
            attributes.insert("kafka_topic".to_owned(), position.topic.to_string().into());
            attributes.insert(
                "kafka_partition".to_owned(),
                position.partition.to_string().into(),
            );
            match self.key_modes.get(&*position.topic) {
                Some(KeyMode::IncludeAsMetadata) => {
                    if let Some(key) = &key {
                        attributes.insert("kafka_key".to_owned(), key.clone());
                    }
                }
                Some(KeyMode::IncludeAsField) if self.json => field = key,
                _ => {}
            }
        }
        attributes.insert("kafka_timestamp".to_owned(), record.received_at_ms.into());
        let headers: Map<String, Value> = record
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        attributes.insert("kafka_headers".to_owned(), Value::Object(headers));
        Arc::new(Decoration {
            attributes,
            fields: field
                .map(|key| (vec!["kafka_key".to_owned()], key))
                .into_iter()
                .collect(),
        })
    }
}
