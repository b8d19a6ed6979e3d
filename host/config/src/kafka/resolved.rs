//! The kafka buffer as it runs: its [`Resolve`](crate::Resolve) turns the validated file shape into
//! [`KafkaSettings`], once, at startup: the one topic (not a list), SASL as an enum with the
//! password's `${env:..}`/`${file:..}` reference resolved, TLS only when it is on, the
//! encryption key decoded (or read from `key_file`) into 32 bytes, and the metric prefix
//! defaulted. Validation checks the same key text with [`decode_key`], so a file that passes
//! `sluice validate` resolves unless a secret it references is missing.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use zeroize::Zeroizing;

use super::{AutoOffsetReset, KafkaBuffer, TransitType};
use crate::units::ByteSize;

/// The kafka buffer's settings, resolved.
#[derive(Debug, Clone)]
pub struct KafkaSettings {
    /// `host:port` of each bootstrap broker.
    pub bootstrap_servers: Vec<String>,
    pub topic: Topic,
    pub drain_timeout: Duration,
    pub max_request_size: ByteSize,
    pub produce_timeout: Duration,
    pub sasl: Option<Sasl>,
    /// TLS to the brokers, when `encryption_in_transit.type` is `ssl`.
    pub tls: Option<Tls>,
    pub encryption: Option<Encryption>,
    pub producer_properties: BTreeMap<String, String>,
    pub consumer_properties: BTreeMap<String, String>,
    /// The start of the buffer's metric names: `custom_metric_prefix`, else `kafka_buffer`.
    pub metric_prefix: String,
}

/// The buffer topic and how this process consumes it.
#[derive(Debug, Clone)]
pub struct Topic {
    pub name: String,
    pub group_id: String,
    /// Consumers this process runs in the group.
    pub workers: usize,
    /// Create the topic when it is missing, with (partitions, replication factor).
    pub create: Option<NewTopic>,
    pub auto_offset_reset: AutoOffsetReset,
    pub commit_interval: Duration,
    pub max_poll_records: usize,
    pub session_timeout: Duration,
    pub max_poll_interval: Duration,
    pub membership: Membership,
}

/// How a topic is created when `create_topic` is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewTopic {
    pub partitions: i32,
    pub replication_factor: i32,
}

/// Consumer group membership.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Membership {
    /// Dynamic: a restarted process rejoins as a new member.
    Dynamic,
    /// Static (KIP-345) with this `group_instance_id`, or `None` for the host's default.
    Static { instance_id: Option<String> },
}

/// SASL authentication, one variant per mechanism.
#[derive(Clone)]
pub enum Sasl {
    Plain { username: String, password: String },
    ScramSha256 { username: String, password: String },
    ScramSha512 { username: String, password: String },
}

impl Sasl {
    /// librdkafka's `sasl.mechanism`.
    pub fn mechanism(&self) -> &'static str {
        match self {
            Sasl::Plain { .. } => "PLAIN",
            Sasl::ScramSha256 { .. } => "SCRAM-SHA-256",
            Sasl::ScramSha512 { .. } => "SCRAM-SHA-512",
        }
    }

    /// The user name and the (resolved) password.
    pub fn credentials(&self) -> (&str, &str) {
        match self {
            Sasl::Plain { username, password }
            | Sasl::ScramSha256 { username, password }
            | Sasl::ScramSha512 { username, password } => (username, password),
        }
    }
}

impl std::fmt::Debug for Sasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sasl")
            .field("mechanism", &self.mechanism())
            .field("username", &self.credentials().0)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// TLS to the brokers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    /// The CA that signs the brokers' certificates (`None`: the system's CAs).
    pub ca: Option<PathBuf>,
    /// Skip verifying the brokers' certificates (tests only).
    pub insecure: bool,
}

/// Encryption of records at rest.
#[derive(Debug, Clone)]
pub enum Encryption {
    /// One static AES-256 key (`key` or `key_file`).
    StaticKey(StaticKey),
    /// Data keys from AWS KMS.
    Kms(Kms),
}

/// 32 key bytes, wiped on drop, never printed.
#[derive(Clone)]
pub struct StaticKey(Zeroizing<[u8; 32]>);

impl StaticKey {
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl std::fmt::Debug for StaticKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaticKey(<redacted>)")
    }
}

/// `encryption.kms`, resolved.
#[derive(Debug, Clone)]
pub struct Kms {
    pub key_id: String,
    pub region: String,
    pub endpoint: Option<String>,
    pub encryption_context: BTreeMap<String, String>,
    pub data_key_lifetime: Duration,
}

/// Why a static key's text is not a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyError {
    NotBase64,
    /// It decodes to this many bytes, not 32.
    Length(usize),
}

/// Decodes a static key written in base64 (surrounding whitespace ignored). The one place
/// key text is decoded: validation words its errors, its `Resolve` keeps the key.
pub fn decode_key(text: &str) -> Result<StaticKey, KeyError> {
    use base64::Engine as _;
    let bytes = Zeroizing::new(
        base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|_| KeyError::NotBase64)?,
    );
    key_of(&bytes)
}

fn key_of(bytes: &[u8]) -> Result<StaticKey, KeyError> {
    let key: [u8; 32] = bytes
        .try_into()
        .map_err(|_| KeyError::Length(bytes.len()))?;
    Ok(StaticKey(Zeroizing::new(key)))
}

/// Why the kafka buffer's settings could not be resolved at startup; the words follow
/// `pipeline ... : kafka buffer:`.
#[derive(Debug, thiserror::Error)]
pub enum KafkaResolveError {
    #[error("authentication: {0}")]
    Secret(#[from] super::SecretError),
    #[error("{}", key_error(.0.clone()))]
    Key(KeyError),
    #[error("`key_file` {}: the key is not base64", .path.display())]
    KeyFileNotBase64 { path: PathBuf },
    #[error("cannot read `key_file` {}: {source}", .path.display())]
    KeyFileUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no topic (the file was not validated)")]
    NoTopic,
    #[error("no key given")]
    NoKey,
}

/// The words startup uses for a key error (those of the crypt crate's `StaticKey`).
fn key_error(e: KeyError) -> String {
    match e {
        KeyError::NotBase64 => "the key is not base64".to_owned(),
        KeyError::Length(n) => format!("invalid key: an AES-256 key is 32 bytes, this one is {n}"),
    }
}

impl crate::Resolve for KafkaBuffer {
    type Settings = KafkaSettings;
    type Error = KafkaResolveError;
    /// The settings the buffer runs with. Call on a validated buffer (exactly one topic, one
    /// SASL mechanism, one key source). The error is the reason that startup prints after
    /// `pipeline ... : kafka buffer:`.
    fn resolve(&self, _pipeline: &str) -> Result<KafkaSettings, KafkaResolveError> {
        let t = self.topics.first().ok_or(KafkaResolveError::NoTopic)?;
        let topic = Topic {
            name: t.name.clone(),
            group_id: t.group_id.clone(),
            workers: t.workers,
            create: t.create_topic.then_some(NewTopic {
                partitions: t.number_of_partitions,
                replication_factor: t.replication_factor,
            }),
            auto_offset_reset: t.auto_offset_reset,
            commit_interval: t.commit_interval,
            max_poll_records: t.max_poll_records,
            session_timeout: t.session_timeout,
            max_poll_interval: t.max_poll_interval,
            membership: if t.static_membership {
                Membership::Static {
                    instance_id: t.group_instance_id.clone(),
                }
            } else {
                Membership::Dynamic
            },
        };
        let sasl = resolve_sasl(self.authentication.as_ref())?;
        let tls = resolve_tls(self.in_transit().as_ref());
        let encryption = match self.at_rest() {
            None => None,
            Some(e) => Some(match (&e.kms, &e.key, &e.key_file) {
                (Some(kms), _, _) => Encryption::Kms(Kms {
                    key_id: kms.key_id.clone(),
                    region: kms.region.clone(),
                    endpoint: kms.endpoint.clone(),
                    encryption_context: kms.encryption_context.clone(),
                    data_key_lifetime: kms.data_key_lifetime,
                }),
                (None, Some(key), _) => {
                    Encryption::StaticKey(decode_key(&key.0).map_err(KafkaResolveError::Key)?)
                }
                (None, None, Some(path)) => {
                    let raw = Zeroizing::new(std::fs::read(path).map_err(|source| {
                        KafkaResolveError::KeyFileUnreadable {
                            path: path.clone(),
                            source,
                        }
                    })?);
                    let key = if raw.len() == 32 {
                        key_of(&raw)
                    } else {
                        decode_key(&String::from_utf8_lossy(&raw))
                    };
                    Encryption::StaticKey(key.map_err(|e| match e {
                        KeyError::NotBase64 => {
                            KafkaResolveError::KeyFileNotBase64 { path: path.clone() }
                        }
                        e => KafkaResolveError::Key(e),
                    })?)
                }
                (None, None, None) => return Err(KafkaResolveError::NoKey),
            }),
        };
        Ok(KafkaSettings {
            bootstrap_servers: self.bootstrap_servers.clone(),
            topic,
            drain_timeout: self.drain_timeout,
            max_request_size: self.max_request_size,
            produce_timeout: self.produce_timeout,
            sasl,
            tls,
            encryption,
            producer_properties: self.producer_properties.clone(),
            consumer_properties: self.consumer_properties.clone(),
            metric_prefix: self.metric_prefix(),
        })
    }
}

/// SASL as it runs, with the password resolved (the first mechanism given: validation requires one).
pub fn resolve_sasl(
    authentication: Option<&super::KafkaAuthentication>,
) -> Result<Option<Sasl>, super::SecretError> {
    let Some((mechanism, c)) = authentication
        .and_then(|a| a.sasl.as_ref())
        .and_then(|s| s.mechanism())
    else {
        return Ok(None);
    };
    let (username, password) = (c.username.clone(), c.resolved_password()?);
    Ok(Some(match mechanism {
        "SCRAM-SHA-256" => Sasl::ScramSha256 { username, password },
        "SCRAM-SHA-512" => Sasl::ScramSha512 { username, password },
        _ => Sasl::Plain { username, password },
    }))
}

/// TLS as it runs: only when `type` is `ssl`.
pub fn resolve_tls(transit: Option<&super::InTransit>) -> Option<Tls> {
    transit.filter(|t| t.kind == TransitType::Ssl).map(|t| Tls {
        ca: t.certificate.clone(),
        insecure: t.insecure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Buffer, Context, Resolve as _, parse};

    /// The kafka buffer of a one-pipeline file whose buffer settings are `kafka` (YAML,
    /// indented for the `kafka:` key).
    fn kafka(kafka: &str) -> KafkaBuffer {
        let text = format!(
            "p:\n  source:\n    http:\n  buffer:\n    kafka:\n{kafka}\n  sink:\n    - stdout:\n"
        );
        let config = parse("p.yaml", &text, Context::default()).unwrap();
        match config.pipelines.into_iter().next().unwrap().buffer {
            Buffer::Builtin(crate::Tier::Kafka(k)) => k,
            _ => panic!("not a kafka buffer"),
        }
    }

    const BASE: &str = "      bootstrap_servers: [127.0.0.1:9092]\n      topics:\n        - name: t\n          group_id: g\n";

    #[test]
    fn the_one_topic_and_the_defaults_are_resolved() {
        let s = kafka(BASE).resolve("p").unwrap();
        assert_eq!(
            (s.topic.name.as_str(), s.topic.group_id.as_str()),
            ("t", "g")
        );
        assert_eq!(s.topic.workers, 2);
        assert_eq!(s.topic.create, None);
        assert_eq!(s.topic.membership, Membership::Static { instance_id: None });
        assert_eq!(s.metric_prefix, "kafka_buffer");
        assert!(s.sasl.is_none() && s.tls.is_none() && s.encryption.is_none());
    }

    #[test]
    fn data_preppers_encryption_type_is_tls_to_the_brokers_not_at_rest() {
        let ssl = kafka(&format!(
            "{BASE}      encryption:\n        type: ssl\n        insecure: true\n"
        ))
        .resolve("p")
        .unwrap();
        assert!(ssl.encryption.is_none());
        let tls = ssl.tls.expect("type: ssl is TLS");
        assert!(tls.insecure && tls.ca.is_none());
        let none = kafka(&format!("{BASE}      encryption:\n        type: none\n"))
            .resolve("p")
            .unwrap();
        assert!(none.encryption.is_none() && none.tls.is_none());
        // Data Prepper's type defaults to ssl.
        let implied = kafka(&format!(
            "{BASE}      encryption:\n        certificate: ca.pem\n"
        ))
        .resolve("p")
        .unwrap();
        assert_eq!(implied.tls.unwrap().ca, Some(PathBuf::from("ca.pem")));
    }

    #[test]
    fn sasl_becomes_its_mechanism_with_the_password_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("password");
        std::fs::write(&secret, "s3cret\nignored\n").unwrap();
        let yaml = format!(
            "{BASE}      authentication:\n        sasl:\n          scram_sha_512:\n            username: u\n            password: ${{file:{}}}\n",
            secret.display()
        );
        let sasl = kafka(&yaml).resolve("p").unwrap().sasl.unwrap();
        assert_eq!(sasl.mechanism(), "SCRAM-SHA-512");
        assert_eq!(sasl.credentials(), ("u", "s3cret"));
        assert!(
            !format!("{sasl:?}").contains("s3cret"),
            "Debug hides the password"
        );

        let missing = format!(
            "{BASE}      authentication:\n        sasl:\n          plain:\n            username: u\n            password: ${{env:SLUICE_TEST_RESOLVE_UNSET}}\n"
        );
        assert_eq!(
            kafka(&missing).resolve("p").unwrap_err().to_string(),
            "authentication: the environment variable `SLUICE_TEST_RESOLVE_UNSET` is not set"
        );
    }

    #[test]
    fn a_key_file_holds_raw_bytes_or_base64_and_a_wrong_length_is_named() {
        use base64::Engine as _;
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("raw.key");
        std::fs::write(&raw, [7u8; 32]).unwrap();
        let b64 = dir.path().join("b64.key");
        std::fs::write(
            &b64,
            format!(
                "{}\n",
                base64::engine::general_purpose::STANDARD.encode([9u8; 32])
            ),
        )
        .unwrap();
        let short = dir.path().join("short.key");
        std::fs::write(
            &short,
            base64::engine::general_purpose::STANDARD.encode([1u8; 16]),
        )
        .unwrap();
        let with_file = |path: &std::path::Path| {
            kafka(&format!(
                "{BASE}      encryption:\n        key_file: {}\n",
                path.display()
            ))
            .resolve("p")
        };
        let key = |s: KafkaSettings| match s.encryption {
            Some(Encryption::StaticKey(k)) => *k.bytes(),
            other => panic!("not a static key: {other:?}"),
        };
        assert_eq!(key(with_file(&raw).unwrap()), [7u8; 32]);
        assert_eq!(key(with_file(&b64).unwrap()), [9u8; 32]);
        assert_eq!(
            with_file(&short).unwrap_err().to_string(),
            "invalid key: an AES-256 key is 32 bytes, this one is 16"
        );
        let missing = dir.path().join("missing.key");
        assert!(
            with_file(&missing)
                .unwrap_err()
                .to_string()
                .starts_with(&format!("cannot read `key_file` {}", missing.display()))
        );
    }

    #[test]
    fn an_inline_key_is_decoded_once_and_never_printed() {
        use base64::Engine as _;
        let text = base64::engine::general_purpose::STANDARD.encode([5u8; 32]);
        let s = kafka(&format!("{BASE}      encryption:\n        key: {text}\n"))
            .resolve("p")
            .unwrap();
        let printed = format!("{s:?}");
        assert!(printed.contains("StaticKey(<redacted>)"), "{printed}");
        assert_eq!(decode_key(" \n").unwrap_err(), KeyError::Length(0));
        assert_eq!(decode_key("not base64!").unwrap_err(), KeyError::NotBase64);
    }

    #[test]
    fn static_membership_off_is_dynamic_and_tls_only_when_ssl() {
        let yaml = "      bootstrap_servers: [127.0.0.1:9092]\n      topics:\n        - name: t\n          group_id: g\n          static_membership: false\n          create_topic: true\n          number_of_partitions: 3\n      encryption_in_transit:\n        type: none\n      custom_metric_prefix: orders\n";
        let s = kafka(yaml).resolve("p").unwrap();
        assert_eq!(s.topic.membership, Membership::Dynamic);
        assert_eq!(
            s.topic.create,
            Some(NewTopic {
                partitions: 3,
                replication_factor: 1
            })
        );
        assert!(s.tls.is_none());
        assert_eq!(s.metric_prefix, "orders");
    }
}
