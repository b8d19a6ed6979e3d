//! The kafka buffer's rules: what serde cannot check (exactly one topic, `host:port` servers,
//! one SASL mechanism, a 32-byte key, properties sluice owns, Kafka's own constraints).

use super::properties::{KafkaClient, owned_property};
use super::resolved::{KeyError, decode_key};
use super::{KafkaAuthentication, KafkaBuffer};
use crate::error::Errors;
use crate::location::join;

impl crate::buffer::BufferConfig for KafkaBuffer {
    fn check(&self, path: &str, errors: &mut Errors) {
        check_kafka(self, path, errors);
    }
    fn metric_prefix(&self) -> String {
        KafkaBuffer::metric_prefix(self)
    }
    /// See [`crate::SourceKind`].
    fn takes_pull_sources(&self) -> bool {
        false
    }
    fn durable(&self) -> bool {
        true
    }
    fn partitions_by_key(&self) -> bool {
        true
    }
}

/// The kafka buffer's rules; `path` is its key path (`<pipeline>.buffer.kafka`).
fn check_kafka(kafka: &KafkaBuffer, path: &str, errors: &mut Errors) {
    check_servers(&kafka.bootstrap_servers, path, errors);
    if kafka.topics.len() != 1 {
        errors.at(
            &join(path, "topics"),
            format!(
                "the kafka buffer takes exactly one topic, `{path}.topics` has {}; write \
                 `topics: [{{name: ..., group_id: ...}}]`",
                kafka.topics.len()
            ),
        );
    }
    check_authentication(kafka.authentication.as_ref(), path, errors);
    if let Some(e) = kafka.encryption.as_ref().filter(|e| e.is_in_transit()) {
        let at = join(path, "encryption");
        if e.kms.is_some() || e.key.is_some() || e.key_file.is_some() {
            errors.at(
                &at,
                format!(
                    "`{at}` has both Data Prepper's TLS keys (`type`, `certificate`, `insecure`) \
                     and keys for encryption at rest (`kms`, `key`, `key_file`); write TLS as \
                     `encryption_in_transit` and keep `encryption` for the records"
                ),
            );
        }
        if kafka.encryption_in_transit.is_some() {
            errors.at(
                &at,
                format!(
                    "`{at}` with `type` is Data Prepper's TLS to the brokers, and \
                     `encryption_in_transit` is given too; keep one"
                ),
            );
        }
    }
    if let Some(e) = kafka.at_rest() {
        let at = join(path, "encryption");
        let given = [e.kms.is_some(), e.key.is_some(), e.key_file.is_some()]
            .iter()
            .filter(|g| **g)
            .count();
        if given != 1 {
            errors.at(
                &at,
                format!("`{at}` needs exactly one of `kms`, `key` or `key_file`, got {given}"),
            );
        }
        if let Some(key) = &e.key {
            match decode_key(&key.0) {
                Ok(_) => {}
                Err(KeyError::Length(n)) => errors.at(
                    &join(&at, "key"),
                    format!(
                        "`{at}.key` decodes to {n} bytes; an AES-256 key is 32 (e.g. `openssl rand -base64 32`)"
                    ),
                ),
                Err(KeyError::NotBase64) => errors.at(
                    &join(&at, "key"),
                    format!("`{at}.key` is not base64; write 32 random bytes in base64 (e.g. `openssl rand -base64 32`)"),
                ),
            }
        }
        if let Some(kms) = &e.kms
            && kms.data_key_lifetime.is_zero()
        {
            errors.at(
                &join(&at, "kms.data_key_lifetime"),
                format!("`{at}.kms.data_key_lifetime` must be more than zero"),
            );
        }
    }
    if kafka.max_request_size.bytes() < 1024 {
        errors.at(
            &join(path, "max_request_size"),
            format!("`{path}.max_request_size` must be at least `1kb`"),
        );
    }
    if kafka.produce_timeout.is_zero() {
        errors.at(
            &join(path, "produce_timeout"),
            format!("`{path}.produce_timeout` must be more than zero"),
        );
    }
    for (i, topic) in kafka.topics.iter().enumerate() {
        let at = format!("{path}.topics[{i}]");
        if topic.max_poll_interval < topic.session_timeout {
            errors.at(
                &join(&at, "max_poll_interval"),
                format!(
                    "`{at}.max_poll_interval` ({}) must be at least `session_timeout` ({}), as Kafka requires",
                    humantime::format_duration(topic.max_poll_interval),
                    humantime::format_duration(topic.session_timeout)
                ),
            );
        }
        if let Some(id) = &topic.group_instance_id {
            let at = join(&at, "group_instance_id");
            if !topic.static_membership {
                errors.at(
                    &at,
                    format!("`{at}` is set but `static_membership` is false; remove one of them"),
                );
            } else if id.is_empty()
                || id.len() > 200
                || !id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
            {
                errors.at(
                    &at,
                    format!(
                        "`{at}` is `{id}`; write 1 to 200 letters, digits, `.`, `_` or `-` (e.g. the pod name)"
                    ),
                );
            }
        }
        for (field, value) in [("name", &topic.name), ("group_id", &topic.group_id)] {
            if value.trim().is_empty() {
                errors.at(
                    &join(&at, field),
                    format!("`{at}.{field}` must not be empty"),
                );
            }
        }
        for (field, value) in [
            ("workers", topic.workers as i64),
            (
                "number_of_partitions",
                i64::from(topic.number_of_partitions),
            ),
            ("replication_factor", i64::from(topic.replication_factor)),
            ("max_poll_records", topic.max_poll_records as i64),
        ] {
            if value < 1 {
                errors.at(
                    &join(&at, field),
                    format!("`{at}.{field}` must be at least 1"),
                );
            }
        }
    }
    for (field, properties, client) in [
        (
            "producer_properties",
            &kafka.producer_properties,
            KafkaClient::Producer,
        ),
        (
            "consumer_properties",
            &kafka.consumer_properties,
            KafkaClient::Consumer,
        ),
    ] {
        check_properties(client, properties, path, field, errors);
    }
}

/// Checks the librdkafka settings under `path.field` for `client`: none of the keys sluice
/// sets itself.
pub(crate) fn check_properties(
    client: KafkaClient,
    properties: &std::collections::BTreeMap<String, String>,
    path: &str,
    field: &str,
    errors: &mut Errors,
) {
    for key in properties.keys() {
        if let Some(instead) = owned_property(client, key) {
            errors.at(
                &join(path, field),
                format!(
                    "`{key}` in `{path}.{field}` is set by sluice and cannot be overridden: \
                     {instead}; remove it"
                ),
            );
        }
    }
}

/// Checks `bootstrap_servers` at `path`: at least one, each `host:port`.
pub(crate) fn check_servers(servers: &[String], path: &str, errors: &mut Errors) {
    if servers.is_empty() {
        errors.at(
            &join(path, "bootstrap_servers"),
            format!("`{path}.bootstrap_servers` is empty; list at least one broker, e.g. `[127.0.0.1:9092]`"),
        );
    }
    for (i, server) in servers.iter().enumerate() {
        let at = format!("{path}.bootstrap_servers[{i}]");
        let port_ok = server
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !port_ok {
            errors.at(
                &at,
                format!("`{at}` is `{server}`; write `host:port`, e.g. `127.0.0.1:9092`"),
            );
        }
    }
}

/// Checks `authentication` at `path`: `sasl` with exactly one mechanism.
pub(crate) fn check_authentication(
    authentication: Option<&KafkaAuthentication>,
    path: &str,
    errors: &mut Errors,
) {
    if let Some(KafkaAuthentication { sasl: Some(sasl) }) = authentication
        && sasl.count() != 1
    {
        errors.at(
            &join(path, "authentication.sasl"),
            format!(
                "`{path}.authentication.sasl` needs exactly one of `plain` (or `plaintext`), \
                 `scram`, `scram_sha_256` or `scram_sha_512`, got {}",
                sasl.count()
            ),
        );
    }
    if let Some(KafkaAuthentication { sasl: Some(sasl) }) = authentication
        && let Some(scram) = &sasl.scram
        && scram.mechanism().is_none()
    {
        errors.at(
            &join(path, "authentication.sasl.scram.mechanism"),
            format!(
                "`{path}.authentication.sasl.scram.mechanism` is `{}`; use `SCRAM-SHA-256` or \
                 `SCRAM-SHA-512`",
                scram.mechanism
            ),
        );
    }
    if let Some(KafkaAuthentication { sasl: None }) = authentication {
        errors.at(
            &join(path, "authentication"),
            format!(
                "`{path}.authentication` needs `sasl`, e.g. \
                 `authentication: {{sasl: {{plain: {{username: ..., password: ...}}}}}}`"
            ),
        );
    }
}
