//! The `kafka` buffer from its config: the librdkafka-facing settings of `sluice_kafka`
//! (topic, group, SASL, TLS, properties), the envelope-encryption key source (a static key
//! or AWS KMS), and the default static group instance id.

use std::sync::Arc;
use std::time::Duration;

use sluice_kafka::{CreateTopic, Encryption, KafkaBuffer, KafkaBufferConfig, Sasl, Tls};

use super::BufferError;

/// Connects the buffer `k` of pipeline `p`: resolves the SASL password and the encryption key
/// source, then connects (and creates the topic when asked).
pub async fn connect(
    p: &sluice_config::Pipeline,
    k: &sluice_config::KafkaBuffer,
    data_dir: &std::path::Path,
) -> Result<KafkaBuffer, BufferError> {
    let mut config = kafka_config(p, k, data_dir);
    if let Some((mechanism, c)) = k
        .authentication
        .as_ref()
        .and_then(|a| a.sasl.as_ref())
        .and_then(|sasl| sasl.mechanism())
    {
        let password = c
            .resolved_password()
            .map_err(|reason| BufferError::KafkaSecurity(format!("authentication: {reason}")))?;
        config.sasl = Some(Sasl {
            mechanism: mechanism.to_owned(),
            username: c.username.clone(),
            password,
        });
    }
    config.encryption = encryption(k).await.map_err(BufferError::KafkaSecurity)?;
    let kafka = KafkaBuffer::connect(config).await?;
    tracing::info!(pipeline = %p.name, topic = %k.topics[0].name, group_id = %k.topics[0].group_id, consumers = k.topics[0].workers, "kafka buffer connected");
    Ok(kafka)
}

/// The key source of the kafka buffer's `encryption`, if any.
async fn encryption(k: &sluice_config::KafkaBuffer) -> Result<Option<Encryption>, String> {
    use base64::Engine as _;
    let Some(e) = &k.encryption else {
        return Ok(None);
    };
    let decode = |text: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|_| "the key is not base64".to_owned())
    };
    let (keys, lifetime): (Arc<dyn sluice_crypt::KeySource>, Duration) = if let Some(kms) = &e.kms {
        let keys = sluice_crypt::KmsKeys::new(
            kms.key_id.clone(),
            kms.region.clone(),
            kms.endpoint.clone(),
            kms.encryption_context.clone().into_iter().collect(),
        )
        .await;
        (Arc::new(keys), kms.data_key_lifetime)
    } else {
        let bytes = match (&e.key, &e.key_file) {
            (Some(key), _) => decode(&key.0)?,
            (None, Some(path)) => {
                let raw = std::fs::read(path)
                    .map_err(|err| format!("cannot read `key_file` {}: {err}", path.display()))?;
                if raw.len() == 32 {
                    raw
                } else {
                    decode(&String::from_utf8_lossy(&raw))
                        .map_err(|err| format!("`key_file` {}: {err}", path.display()))?
                }
            }
            (None, None) => return Err("no key given".to_owned()),
        };
        let key = sluice_crypt::StaticKey::new(&bytes).map_err(|err| err.to_string())?;
        (Arc::new(key), Duration::from_secs(3600))
    };
    Ok(Some(Encryption {
        keys,
        data_key_lifetime: lifetime,
    }))
}

/// The kafka buffer's settings from the pipeline file. `data_dir` makes the default static
/// group instance id.
fn kafka_config(
    p: &sluice_config::Pipeline,
    k: &sluice_config::KafkaBuffer,
    data_dir: &std::path::Path,
) -> KafkaBufferConfig {
    let topic = &k.topics[0];
    KafkaBufferConfig {
        bootstrap_servers: k.bootstrap_servers.clone(),
        topic: topic.name.clone(),
        group_id: topic.group_id.clone(),
        consumers: topic.workers,
        batch_size: topic.max_poll_records,
        delay: p.delay,
        commit_interval: topic.commit_interval,
        auto_offset_reset: topic.auto_offset_reset.as_str().to_owned(),
        session_timeout: topic.session_timeout,
        max_poll_interval: topic.max_poll_interval,
        group_instance_id: topic.static_membership.then(|| {
            topic
                .group_instance_id
                .clone()
                .unwrap_or_else(|| default_instance_id(&p.name, data_dir))
        }),
        produce_timeout: k.produce_timeout,
        drain_timeout: k.drain_timeout,
        max_request_size: usize::try_from(k.max_request_size.bytes()).unwrap_or(usize::MAX),
        create_topic: topic.create_topic.then_some(CreateTopic {
            partitions: topic.number_of_partitions,
            replication_factor: topic.replication_factor,
        }),
        sasl: None,
        tls: k
            .encryption_in_transit
            .as_ref()
            .filter(|t| t.kind == sluice_config::TransitType::Ssl)
            .map(|t| Tls {
                ca: t.certificate.clone(),
                insecure: t.insecure,
            }),
        producer_properties: k.producer_properties.clone(),
        consumer_properties: k.consumer_properties.clone(),
        encryption: None,
        pipeline: p.name.clone(),
        metric_prefix: super::metric_prefix(&p.buffer),
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
