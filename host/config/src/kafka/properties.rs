//! The librdkafka settings sluice owns. `producer_properties` and `consumer_properties` pass
//! other keys to librdkafka as written; a key sluice sets itself, or one that would change what
//! it relies on (how it connects and authenticates, that a write is acknowledged by every
//! replica, that offsets are committed only after the sinks took the events), is refused at
//! validation naming the field to use instead. A user setting therefore never silently
//! overrides sluice's. `tests/config_errors.rs` builds the kafka buffer's client settings with
//! every option on and checks that each key it sets is refused here.
//!
//! librdkafka matches names exactly, but it also takes aliases (`metadata.broker.list` for
//! `bootstrap.servers`, `request.required.acks` for `acks`, `delivery.timeout.ms` for
//! `message.timeout.ms`) and any topic-level property with a `topic.` prefix (`topic.acks`);
//! these are refused too. Refusing an alias is not tidiness: rdkafka hands librdkafka its
//! settings from a hash map, in no fixed order, so `request.required.acks: 1` next to sluice's
//! `acks: all` would win or lose by chance. (Names and aliases from librdkafka 2.12's
//! `src/rdkafka_conf.c`, the version rdkafka-sys builds.)

/// Which client a property is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KafkaClient {
    /// `producer_properties`.
    Producer,
    /// `consumer_properties`.
    Consumer,
}

/// Why `key` cannot be set in `client`'s properties (the field to use instead, or what sluice
/// does), or `None` if it is passed through to librdkafka.
pub fn owned_property(client: KafkaClient, key: &str) -> Option<&'static str> {
    owned(client, key).or_else(|| key.strip_prefix("topic.").and_then(|k| owned(client, k)))
}

fn owned(client: KafkaClient, key: &str) -> Option<&'static str> {
    let side = match client {
        KafkaClient::Producer => PRODUCER,
        KafkaClient::Consumer => CONSUMER,
    };
    if let Some((_, why)) = BOTH.iter().chain(side).find(|(k, _)| *k == key) {
        return Some(why);
    }
    if key.starts_with("sasl.") {
        return Some(AUTHENTICATION);
    }
    if (key.starts_with("ssl.") || key.starts_with("ssl_")) && !CLIENT_CERTIFICATE.contains(&key) {
        return Some(TLS);
    }
    None
}

const AUTHENTICATION: &str = "set `authentication`";
const TLS: &str =
    "set `encryption_in_transit` (`certificate` for the CA, `insecure` to skip verification)";

/// Set by sluice on every client (`bootstrap.servers`, `security.protocol` and the SASL and TLS
/// settings), with `sasl.*` and `ssl.*` refused by prefix.
const BOTH: &[(&str, &str)] = &[
    ("bootstrap.servers", "set `bootstrap_servers`"),
    ("metadata.broker.list", "set `bootstrap_servers`"),
    (
        "security.protocol",
        "sluice chooses it from `authentication` and `encryption_in_transit`",
    ),
    ("enable.ssl.certificate.verification", TLS),
    ("enable.sasl.oauthbearer.unsecure.jwt", AUTHENTICATION),
];

/// A client certificate is not something sluice sets, and there is no field for one, so these
/// pass through (for brokers that require mutual TLS, with `encryption_in_transit` on). The
/// trust settings (CA, verification, host name check) stay sluice's.
const CLIENT_CERTIFICATE: &[&str] = &[
    "ssl.certificate.location",
    "ssl.certificate.pem",
    "ssl.key.location",
    "ssl.key.password",
    "ssl.key.pem",
    "ssl.keystore.location",
    "ssl.keystore.password",
];

const PRODUCER: &[(&str, &str)] = &[
    ("acks", "sluice always writes with `acks=all`"),
    (
        "request.required.acks",
        "sluice always writes with `acks=all`",
    ),
    ("enable.idempotence", "sluice always writes idempotently"),
    ("message.timeout.ms", "set `produce_timeout`"),
    ("delivery.timeout.ms", "set `produce_timeout`"),
    ("message.max.bytes", "set `max_request_size`"),
    (
        "transactional.id",
        "the kafka buffer does not use transactions",
    ),
];

const CONSUMER: &[(&str, &str)] = &[
    ("group.id", "set the topic's `group_id`"),
    ("group.instance.id", "set the topic's `group_instance_id`"),
    (
        "client.id",
        "sluice names each consumer `sluice-<group_id>-<n>`",
    ),
    (
        "statistics.interval.ms",
        "sluice reads librdkafka's statistics every 5s for the consumer lag metric",
    ),
    (
        "enable.auto.commit",
        "offsets are committed only after the sinks take the events",
    ),
    (
        "auto.commit.enable",
        "offsets are committed only after the sinks take the events",
    ),
    (
        "enable.auto.offset.store",
        "offsets are stored only after the sinks take the events",
    ),
    (
        "offset.store.method",
        "offsets are committed to the consumer group on the brokers",
    ),
    ("auto.offset.reset", "set the topic's `auto_offset_reset`"),
    ("session.timeout.ms", "set the topic's `session_timeout`"),
    (
        "max.poll.interval.ms",
        "set the topic's `max_poll_interval`",
    ),
];

#[cfg(test)]
mod tests {
    use super::KafkaClient::{Consumer, Producer};
    use super::*;

    #[test]
    fn aliases_and_topic_prefixed_names_are_refused() {
        for key in [
            "acks",
            "request.required.acks",
            "topic.acks",
            "topic.request.required.acks",
            "delivery.timeout.ms",
            "topic.message.timeout.ms",
            "metadata.broker.list",
        ] {
            assert!(owned_property(Producer, key).is_some(), "{key}");
        }
        for key in [
            "enable.auto.commit",
            "topic.auto.commit.enable",
            "topic.auto.offset.reset",
            "group.instance.id",
        ] {
            assert!(owned_property(Consumer, key).is_some(), "{key}");
        }
    }

    #[test]
    fn sasl_and_tls_trust_are_refused_but_a_client_certificate_passes() {
        for client in [Producer, Consumer] {
            for key in [
                "security.protocol",
                "sasl.jaas.config",
                "sasl.oauthbearer.method",
                "ssl.ca.location",
                "ssl.ca.pem",
                "ssl.endpoint.identification.algorithm",
                "ssl.engine.location",
                "ssl_ca",
                "enable.ssl.certificate.verification",
            ] {
                assert!(owned_property(client, key).is_some(), "{key}");
            }
            for key in [
                "ssl.key.location",
                "ssl.certificate.location",
                "linger.ms",
                "compression.type",
                "fetch.wait.max.ms",
                "topic.metadata.refresh.interval.ms",
            ] {
                assert_eq!(owned_property(client, key), None, "{key}");
            }
        }
    }

    #[test]
    fn each_side_owns_its_own_keys() {
        assert_eq!(owned_property(Producer, "group.id"), None);
        assert_eq!(owned_property(Consumer, "acks"), None);
    }
}
