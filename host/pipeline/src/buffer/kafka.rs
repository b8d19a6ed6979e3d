//! The `kafka` buffer from its config: the resolved settings (`sluice_config`'s
//! `Resolve` for `KafkaBuffer`) as `sluice_kafka`'s, the envelope-encryption key source (a static
//! key or AWS KMS), and the default static group instance id.

use std::sync::Arc;

use sluice_config::kafka::resolved::{self, KafkaSettings, Membership};
use sluice_kafka::{CreateTopic, Encryption, KafkaBuffer, KafkaBufferConfig, Sasl, Tls};

use super::BufferError;

impl super::BuildBuffer for sluice_config::KafkaBuffer {
    async fn build(
        &self,
        p: &sluice_config::Pipeline,
        data_dir: &std::path::Path,
    ) -> Result<Arc<dyn sluice_buffer::Buffer>, BufferError> {
        Ok(Arc::new(connect(p, self, data_dir).await?))
    }
}

/// Connects the buffer `k` of pipeline `p`: resolves its settings (secrets, key) once, builds
/// the encryption key source, then connects (and creates the topic when asked).
pub async fn connect(
    p: &sluice_config::Pipeline,
    k: &sluice_config::KafkaBuffer,
    data_dir: &std::path::Path,
) -> Result<KafkaBuffer, BufferError> {
    connect_with(p, k, data_dir, None).await
}

/// [`connect`], but only to write: no consumer joins the group (`sluice dlq replay` into the
/// topic of a stopped pipeline).
pub async fn connect_writer(
    p: &sluice_config::Pipeline,
    k: &sluice_config::KafkaBuffer,
    data_dir: &std::path::Path,
) -> Result<KafkaBuffer, BufferError> {
    connect_with(p, k, data_dir, Some(0)).await
}

async fn connect_with(
    p: &sluice_config::Pipeline,
    k: &sluice_config::KafkaBuffer,
    data_dir: &std::path::Path,
    consumers: Option<usize>,
) -> Result<KafkaBuffer, BufferError> {
    let mut config = settings(p, k, data_dir).await?;
    if let Some(consumers) = consumers {
        config.consumers = consumers;
    }
    let (topic, group_id, consumers) = (
        config.topic.clone(),
        config.group_id.clone(),
        config.consumers,
    );
    let kafka = KafkaBuffer::connect(config).await?;
    tracing::info!(pipeline = %p.name, %topic, %group_id, consumers, "kafka buffer connected");
    Ok(kafka)
}

/// The client settings of the buffer `k` of pipeline `p`: its secrets and key resolved, its key
/// source built.
pub async fn settings(
    p: &sluice_config::Pipeline,
    k: &sluice_config::KafkaBuffer,
    data_dir: &std::path::Path,
) -> Result<KafkaBufferConfig, BufferError> {
    let settings = sluice_config::Resolve::resolve(k, &p.name)?;
    let encryption = match &settings.encryption {
        Some(e) => Some(encryption(e).await?),
        None => None,
    };
    Ok(kafka_config(p, settings, encryption, data_dir))
}

/// The key source of the buffer's `encryption`.
async fn encryption(e: &resolved::Encryption) -> Result<Encryption, sluice_crypt::CryptError> {
    Ok(match e {
        resolved::Encryption::Kms(kms) => Encryption {
            keys: Arc::new(
                sluice_crypt::KmsKeys::new(
                    kms.key_id.clone(),
                    kms.region.clone(),
                    kms.endpoint.clone(),
                    kms.encryption_context.clone().into_iter().collect(),
                )
                .await,
            ),
            data_key_lifetime: kms.data_key_lifetime,
        },
        resolved::Encryption::StaticKey(key) => Encryption {
            keys: Arc::new(sluice_crypt::StaticKey::new(key.bytes())?),
            data_key_lifetime: std::time::Duration::from_secs(3600),
        },
    })
}

/// `sluice_kafka`'s settings from the resolved ones. `data_dir` makes the default static
/// group instance id.
fn kafka_config(
    p: &sluice_config::Pipeline,
    k: KafkaSettings,
    encryption: Option<Encryption>,
    data_dir: &std::path::Path,
) -> KafkaBufferConfig {
    let topic = k.topic;
    KafkaBufferConfig {
        bootstrap_servers: k.bootstrap_servers,
        topic: topic.name,
        group_id: topic.group_id,
        consumers: topic.workers,
        batch_size: topic.max_poll_records,
        delay: p.delay,
        commit_interval: topic.commit_interval,
        auto_offset_reset: topic.auto_offset_reset.as_str().to_owned(),
        session_timeout: topic.session_timeout,
        max_poll_interval: topic.max_poll_interval,
        group_instance_id: match topic.membership {
            Membership::Dynamic => None,
            Membership::Static { instance_id } => {
                Some(instance_id.unwrap_or_else(|| default_instance_id(&p.name, data_dir)))
            }
        },
        produce_timeout: k.produce_timeout,
        drain_timeout: k.drain_timeout,
        max_request_size: usize::try_from(k.max_request_size.bytes()).unwrap_or(usize::MAX),
        create_topic: topic.create.map(|c| CreateTopic {
            partitions: c.partitions,
            replication_factor: c.replication_factor,
        }),
        sasl: k.sasl.map(sasl),
        tls: k.tls.map(tls),
        producer_properties: k.producer_properties,
        consumer_properties: k.consumer_properties,
        encryption,
        pipeline: p.name.clone(),
        metric_prefix: k.metric_prefix,
    }
}

/// The default static group instance id: `sluice-<hostname>-<pipeline>-<hash of the data
/// dir>`. Stable across restarts of one process (same host, same data dir); distinct for any
/// other live process, since two processes on one host cannot hold the same data dir (the
/// binary locks it) and other hosts have other names. Only letters, digits, `.`, `_`, `-`.
pub fn default_instance_id(pipeline: &str, data_dir: &std::path::Path) -> String {
    use sha2::Digest as _;
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_owned());
    let dir = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_owned());
    let digest = sha2::Sha256::digest(dir.as_os_str().as_encoded_bytes());
    let clean = |text: &str| -> String {
        text.trim()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .take(60)
            .collect()
    };
    format!(
        "sluice-{}-{}-{}",
        clean(&hostname),
        clean(pipeline),
        hex::encode(&digest[..4])
    )
}

/// SASL settings as the Kafka client takes them (the buffer's and the kafka sink's).
pub(crate) fn sasl(s: resolved::Sasl) -> Sasl {
    let (username, password) = s.credentials();
    Sasl {
        mechanism: s.mechanism().to_owned(),
        username: username.to_owned(),
        password: password.to_owned(),
    }
}

/// TLS settings as the Kafka client takes them.
pub(crate) fn tls(t: resolved::Tls) -> Tls {
    Tls {
        ca: t.ca,
        insecure: t.insecure,
    }
}
