//! The `source` of a pipeline: the one list of sources
//! ([`for_each_source!`](crate::for_each_source)), which generates [`Source`] (its reading from
//! the one-key map, its names, its rules' dispatch), one module per source and (in the
//! pipeline crate) its runtime builder.
//!
//! # Layout
//! - this file: the list, [`SourceConfig`] (what each source's config says of itself) and
//!   [`Source`].
//! - one file per source ([`http`], [`mod@file`], [`otlp`], [`pipeline`]): its config, its
//!   rules and its settings as it runs ([`Resolve`](crate::Resolve)). The push sources'
//!   listener keys are [`crate::listener`]'s.
//! - [`deserializer`]: the `deserializer` a source names.
//!
//! Adding a source: its file here (the serde struct, an `impl` of [`SourceConfig`],
//! `CheckSource` and [`Resolve`](crate::Resolve)), its runtime file in the pipeline crate (an
//! `impl Build` for its settings) and its line in the list; nothing compiles until each is
//! there. `docs/design/components.md` walks through it.

pub mod deserializer;

use std::borrow::Cow;
use std::fmt;
use std::sync::LazyLock;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, VariantAccess, Visitor};

pub use self::deserializer::DeserializerConfig;
use self::otlp::OtlpKind;
use crate::context::Context;
use crate::error::Errors;
use crate::list_modules;
use crate::secret::SecretError;

/// The sources, one line each: `Variant(module::ConfigType) = "name in the file"`, its doc the
/// user doc. This one list makes [`Source`] (its variants, keys and rules) and the module of
/// each source (`source/<module>.rs`, here and in the pipeline crate), and the pipeline
/// crate's builder; adding a source is its config file, its runtime file and a line here. A
/// source written under several keys (the OTLP sources) lists them in
/// [`SourceConfig::KEYS`].
#[macro_export]
macro_rules! for_each_source {
    ($m:ident $($prefix:tt)*) => {
        $m! {
            $($prefix)*
            /// Accepts HTTP POST requests; each request body is one record.
            Http(http::HttpSource) = "http",
            /// Reads a file, one record per line (a pull source).
            File(file::FileSource) = "file",
            /// OTLP over gRPC (and OTLP/HTTP): `otel_logs_source`, `otel_trace_source`,
            /// `otel_metrics_source` (Data Prepper's newer names `otlp_logs`, `otlp_traces`,
            /// `otlp_metrics` too), one signal each, and `otlp`, all three on one port.
            Otlp(otlp::Otlp) = "otlp",
            /// What other pipelines send with their `pipeline` sinks (Data Prepper's
            /// `pipeline` source).
            Pipeline(pipeline::PipelineSource) = "pipeline",
            /// Reads standard input, each line the event `{"message": line}`, to its end; then
            /// the run drains and exits (Data Prepper's `stdin`).
            Stdin(stdin::StdinSource) = "stdin",
            /// Makes one event `{"message": <random UUID>}` every `wait_delay` (Data Prepper's
            /// load generator, `random`).
            Random(random::RandomSource) = "random",
            /// Reads Kafka topics other producers write, each record through the deserializer
            /// (Data Prepper's `kafka` source).
            Kafka(kafka::KafkaSource) = "kafka",
            /// Reads the objects S3 announces on an SQS queue, each line through the
            /// deserializer (Data Prepper's `s3` source).
            S3(s3::S3Source) = "s3",
        }
    };
}

// One module per source of the list: its config, `source/<module>.rs`.
crate::for_each_source!(list_modules);

/// What each source of [`for_each_source!`](crate::for_each_source) says of itself: how it is
/// read, whether it is pushed or pulls, its port and its deserializer; through
/// [`Resolve`](crate::Resolve), its settings resolved for the runtime. What it does not say
/// comes from its line in the list (its name, the one key it is written under).
pub trait SourceConfig: Sized + crate::Resolve<Error = SecretError> {
    /// The keys it is written under when there are several (`otel_logs_source` or
    /// `otlp_logs`, ...), in the order messages list them; empty: its name in the list only.
    const KEYS: &'static [&'static str] = &[];
    /// Push or pull.
    const KIND: SourceKind;
    /// Its records are events with the metadata they had upstream (the `pipeline` source),
    /// read natively, not by a deserializer.
    const CARRIES_EVENTS: bool = false;
    /// Its input ends (`stdin`): once every such source of the run has read to its end, the
    /// run stops as on SIGTERM (drains, commits) and `sluice run` exits 0.
    const ENDS: bool = false;
    /// It reads its input itself (the `kafka` source's consumers, the `s3` source's queue
    /// readers): its readers are the pipeline's read side in place of a buffer, so the
    /// pipeline's buffer must be `bounded_blocking`.
    const READS_ITSELF: bool = false;
    /// Reads the settings written under `key` (its name, or one of [`Self::KEYS`]).
    fn read<'de, D: Deserializer<'de>>(key: &'static str, d: D) -> Result<Self, D::Error>;
    /// The key it is written under, when it has several [`Self::KEYS`].
    fn key(&self) -> Option<&'static str> {
        None
    }
    /// The plugin name for messages and logs, when it is not its name in the list (the OTLP
    /// sources by Data Prepper's older names, whichever they are written under).
    fn plugin_name(&self) -> Option<&'static str> {
        None
    }
    /// The TCP port a push source listens on.
    fn port(&self) -> Option<u16> {
        None
    }
    /// The deserializer that turns the source's raw records into events.
    fn deserializer(&self) -> Cow<'_, DeserializerConfig>;
}

/// A source's own rules; `path` is its key path (`<pipeline>.source.<key>`).
pub(crate) trait CheckSource {
    fn check(&self, path: &str, errors: &mut Errors, context: Context<'_>);
}

/// Whether a source is pushed data by clients or pulls it itself. Only push sources may use the
/// kafka buffer: a pull source can re-read its input, and writing it to Kafka only to read it
/// back adds a copy without adding durability (Data Prepper has the same rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    Push,
    Pull,
}

/// The keys a source of the list is written under: its [`SourceConfig::KEYS`], else its name.
fn keys<C: SourceConfig>(name: &'static [&'static str]) -> &'static [&'static str] {
    if C::KEYS.is_empty() { name } else { C::KEYS }
}

/// [`Source`] and what dispatches on it, from the list.
macro_rules! source_enum {
    ($( $(#[$doc:meta])* $variant:ident($module:ident::$config:ident) = $name:literal, )*) => {
        /// A source: one key naming the plugin, its settings the key's value.
        #[derive(Debug, Clone)]
        pub enum Source {
            $( $(#[$doc])* $variant(Box<$module::$config>), )*
        }

        /// Which variant a key names.
        #[derive(Debug, Clone, Copy)]
        enum Tag {
            $( $variant, )*
        }

        impl Source {
            /// Every key a source may be written under, in the order messages list them.
            pub fn keys() -> &'static [&'static str] {
                static KEYS: LazyLock<Vec<&'static str>> =
                    LazyLock::new(|| [$( keys::<$module::$config>(&[$name]), )*].concat());
                KEYS.as_slice()
            }

            /// The variant `key` names, and the key as the list spells it.
            fn tag(key: &str) -> Option<(Tag, &'static str)> {
                $(
                    if let Some(known) =
                        keys::<$module::$config>(&[$name]).iter().find(|k| **k == key)
                    {
                        return Some((Tag::$variant, known));
                    }
                )*
                None
            }

            /// The plugin name, for messages and logs (the OTLP sources by Data Prepper's
            /// older names).
            pub fn plugin_name(&self) -> &'static str {
                match self {
                    $( Source::$variant(c) => c.plugin_name().unwrap_or($name), )*
                }
            }

            /// The key the source is written under.
            pub fn key(&self) -> &'static str {
                match self {
                    $( Source::$variant(c) => c.key().unwrap_or($name), )*
                }
            }

            /// Whether its records are events with their upstream metadata (the `pipeline`
            /// source), read natively, not by a deserializer.
            pub fn carries_events(&self) -> bool {
                match self {
                    $( Source::$variant(_) => <$module::$config as SourceConfig>::CARRIES_EVENTS, )*
                }
            }

            /// Whether its input ends, and the run with it (see [`SourceConfig::ENDS`]).
            pub fn ends(&self) -> bool {
                match self {
                    $( Source::$variant(_) => <$module::$config as SourceConfig>::ENDS, )*
                }
            }

            /// Whether it reads its input itself (see [`SourceConfig::READS_ITSELF`]).
            pub fn reads_itself(&self) -> bool {
                match self {
                    $( Source::$variant(_) => <$module::$config as SourceConfig>::READS_ITSELF, )*
                }
            }

            /// Push or pull.
            pub fn kind(&self) -> SourceKind {
                match self {
                    $( Source::$variant(_) => <$module::$config as SourceConfig>::KIND, )*
                }
            }

            /// The TCP port a push source listens on.
            pub fn port(&self) -> Option<u16> {
                match self {
                    $( Source::$variant(c) => c.port(), )*
                }
            }

            /// The deserializer that turns this source's raw records into events.
            pub fn deserializer(&self) -> Cow<'_, DeserializerConfig> {
                match self {
                    $( Source::$variant(c) => c.deserializer(), )*
                }
            }

            /// The source's own rules; `path` is its key path (`<pipeline>.source.<key>`).
            pub(crate) fn check(&self, path: &str, errors: &mut Errors, context: Context<'_>) {
                match self {
                    $( Source::$variant(c) => c.check(path, errors, context), )*
                }
            }
        }

        impl<'de> DeserializeSeed<'de> for Keyed {
            type Value = Source;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Source, D::Error> {
                let Keyed(tag, key) = self;
                Ok(match tag {
                    $( Tag::$variant => Source::$variant(Box::new(<$module::$config>::read(key, d)?)), )*
                })
            }
        }
    };
}
crate::for_each_source!(source_enum);

impl Source {
    /// The type of its events, as Data Prepper's sources set it (`getEventType()`): `TRACE`,
    /// `METRIC` for the OTLP trace and metrics sources, `LOG` for the rest.
    pub fn event_type(&self) -> &'static str {
        match self.otlp() {
            Some((OtlpKind::One(otlp::Signal::Traces), _)) => "TRACE",
            Some((OtlpKind::One(otlp::Signal::Metrics), _)) => "METRIC",
            // `otlp` takes all three: each record's content type says which it holds.
            _ => "LOG",
        }
    }

    /// The OTLP source this is, if it is one.
    pub fn otlp(&self) -> Option<(OtlpKind, &otlp::OtlpSource)> {
        match self {
            Source::Otlp(o) => Some((o.kind, &o.config)),
            _ => None,
        }
    }
}

/// A source is a one-key map (`http: {...}`; `parse` hands it over as the YAML tag
/// `!http {...}`, serde_yaml's form of an enum). Read by hand, not derived, because several keys
/// name one variant (the four OTLP sources are `Source::Otlp`, with their kind): the key is read
/// as an enum's variant, so `serde_path_to_error` still puts it in the path, and an unknown key
/// gets serde's own `unknown variant` message listing every key.
impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_enum("Source", Source::keys(), SourceVisitor)
    }
}

struct SourceVisitor;

impl<'de> Visitor<'de> for SourceVisitor {
    type Value = Source;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("enum Source")
    }
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Source, A::Error> {
        let ((tag, key), settings) = data.variant_seed(KeySeed)?;
        settings.newtype_variant_seed(Keyed(tag, key))
    }
}

/// Reads a source's key.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = (Tag, &'static str);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = (Tag, &'static str);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("variant identifier")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Source::tag(v).ok_or_else(|| E::unknown_variant(v, Source::keys()))
    }
}

/// Reads the settings under a key, as the variant it names.
struct Keyed(Tag, &'static str);

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::http::HttpSource;
    use super::otlp::{Otlp, OtlpKind, OtlpSource};
    use super::{Source, SourceKind};
    use crate::Resolve as _;
    use crate::units::ByteSize;

    fn parse(source: &str) -> Result<Source, String> {
        let text = format!("p:\n  source:\n    {source}\n  sink: [stdout]\n");
        crate::parse("t.yaml", &text, crate::Context::default())
            .map(|mut c| c.pipelines.remove(0).source)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn every_key_names_its_source_as_before_the_otlp_sources_were_one_variant() {
        // The order serde's derived enum listed them in (each older OTLP name, then its newer
        // name): messages about an unknown source keep it.
        let mut before = vec!["http", "file"];
        for kind in OtlpKind::ALL {
            before.push(kind.plugin_name());
            if kind.newer_name() != kind.plugin_name() {
                before.push(kind.newer_name());
            }
        }
        before.extend(["pipeline", "stdin", "random", "kafka", "s3"]);
        assert_eq!(Source::keys(), before);
        assert_eq!(before[2..4], ["otel_logs_source", "otlp_logs"]);
        // `pipeline` reads only beside the pipeline that sends to it (the chain fixtures).
        for key in Source::keys().iter().filter(|k| **k != "pipeline") {
            let settings = match *key {
                "file" => "{path: x}",
                "kafka" => "{bootstrap_servers: [b:9092], topics: [{name: t, group_id: g}]}",
                "s3" => {
                    "{codec: {newline: }, sqs: {queue_url: 'http://q/123456789012/q'}, aws: {}}"
                }
                "http" | "stdin" | "random" => "{}",
                _ => "{ssl: false}",
            };
            let source = parse(&format!("{key}: {settings}")).unwrap();
            assert_eq!(source.key(), *key);
            match (&source, OtlpKind::from_key(key)) {
                (Source::Otlp(otlp), Some(kind)) => {
                    assert_eq!(otlp.kind, kind);
                    assert_eq!(source.plugin_name(), kind.plugin_name());
                    assert!([kind.plugin_name(), kind.newer_name()].contains(key));
                }
                (
                    Source::Http(_)
                    | Source::File(_)
                    | Source::Stdin(_)
                    | Source::Random(_)
                    | Source::Kafka(_)
                    | Source::S3(_),
                    None,
                ) => {
                    assert_eq!(source.plugin_name(), *key);
                }
                other => panic!("`{key}` read as {other:?}"),
            }
            let kind = if ["file", "random", "kafka", "s3"].contains(key) {
                SourceKind::Pull
            } else {
                SourceKind::Push
            };
            assert_eq!(source.kind(), kind, "{key}");
        }
        for kind in OtlpKind::ALL {
            for key in [kind.plugin_name(), kind.newer_name()] {
                assert!(<Otlp as super::SourceConfig>::KEYS.contains(&key), "{key}");
            }
        }
    }

    #[test]
    fn each_source_keeps_its_own_listener_defaults() {
        let http: HttpSource = serde_yaml::from_str("{}").unwrap();
        let listener = http.resolve("p").unwrap().listener;
        assert_eq!(listener.port, 2021);
        assert!(
            listener.tls.is_none() && !http.ssl,
            "http: no TLS unless asked"
        );
        assert_eq!(listener.max_request_length, ByteSize::mib(10));
        assert_eq!(listener.request_timeout, Duration::from_secs(10));
        assert_eq!(
            (listener.max_connection_count, listener.max_pending_requests),
            (500, 1024)
        );
        assert_eq!(
            (listener.header_read_timeout, listener.idle_timeout),
            (Duration::from_secs(10), Duration::from_secs(75))
        );
        assert_eq!(http.thread_count, 200);

        let otlp: OtlpSource = serde_yaml::from_str("{}").unwrap();
        assert!(
            otlp.ssl,
            "the OTLP sources serve TLS by default, as Data Prepper"
        );
        for (kind, port) in OtlpKind::ALL.into_iter().zip([21892, 21890, 21891, 21893]) {
            let settings = otlp.settings(kind, "p").unwrap();
            assert_eq!(settings.listener.port, port, "{kind:?}");
            assert_eq!(settings.listener.max_request_length, ByteSize::mib(10));
            assert_eq!(settings.listener.request_timeout, Duration::from_secs(10));
        }
        let otlp: OtlpSource =
            serde_yaml::from_str("{sslKeyCertChainFile: c.pem, sslKeyFile: k.pem}").unwrap();
        let tls = otlp
            .listener()
            .settings(1)
            .unwrap()
            .tls
            .expect("TLS, by the camelCase names");
        assert_eq!(
            (tls.certificate_file.to_str(), tls.key_file.to_str()),
            (Some("c.pem"), Some("k.pem"))
        );
    }

    #[test]
    fn the_listener_rules_are_the_same_for_every_push_source() {
        for source in ["http", "otlp_logs"] {
            let err = parse(&format!("{source}: {{ssl: false, request_timeout: 0}}")).unwrap_err();
            assert!(
                err.contains(&format!(
                    "`p.source.{source}.request_timeout` must be more than zero"
                )),
                "{err}"
            );
        }
    }
}
