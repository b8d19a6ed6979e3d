//! The `source` of a pipeline: the one list of source kinds ([`for_each_source!`](crate::for_each_source)), which
//! generates [`Source`], its deserialization from the one-key map, its names, its rules'
//! dispatch and (in the pipeline crate) its runtime builder; the `http` and `file` sources'
//! shapes, rules and resolved settings (the OTLP sources' are in [`crate::otlp`], the
//! listener's keys the push sources share in [`crate::listener`]); and the `deserializer`
//! each source names.
//!
//! Adding a source: its config type implements [`SourceConfig`] (and the crate's
//! `CheckSource`), one line in [`for_each_source!`](crate::for_each_source), and the pipeline crate's builder for its
//! settings; nothing compiles until each is there.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, VariantAccess, Visitor,
};

use crate::context::Context;
use crate::error::{Errors, closest};
use crate::explain::list;
use crate::listener::{ListenerSettings, TlsWording, check_listener, listener_source};
use crate::location::join;
use crate::otlp::{OtlpKind, OtlpSource};
use crate::secret::SecretError;
use crate::units::{self, ByteSize};

/// The source kinds, each once: calls `$callback!` with one `Variant(ConfigType),` per kind,
/// each with its documentation. [`Source`] is generated from it here (a variant per kind, its
/// deserialization, names and rules), and the pipeline crate generates its builder from it,
/// so a kind cannot be added without each of them. Each config type implements
/// [`SourceConfig`].
#[macro_export]
macro_rules! for_each_source {
    ($callback:ident) => {
        $callback! {
            /// Accepts HTTP POST requests; each request body is one record.
            Http($crate::source::HttpSource),
            /// Reads a file, one record per line (a pull source).
            File($crate::source::FileSource),
            /// OTLP over gRPC (and OTLP/HTTP): `otel_logs_source`, `otel_trace_source`,
            /// `otel_metrics_source` (Data Prepper's newer names `otlp_logs`, `otlp_traces`,
            /// `otlp_metrics` too), one signal each, and `otlp`, all three on one port.
            Otlp($crate::otlp::Otlp),
            /// What other pipelines send with their `pipeline` sinks (Data Prepper's
            /// `pipeline` source).
            Pipeline($crate::connection::PipelineSource),
        }
    };
}

/// What each kind of source in [`for_each_source!`](crate::for_each_source) is: the keys it is written under, its
/// names, and (through [`Resolve`](crate::Resolve)) its settings resolved for the runtime.
pub trait SourceConfig: Sized + crate::Resolve<Error = SecretError> {
    /// The keys the source is written under (`http`; `otel_logs_source` or `otlp_logs`, ...),
    /// in the order messages list them.
    const KEYS: &'static [&'static str];
    /// Push or pull.
    const KIND: SourceKind;
    /// Its records are events with the metadata they had upstream (the `pipeline` source),
    /// read natively, not by a deserializer.
    const CARRIES_EVENTS: bool = false;
    /// Reads the settings written under `key`, one of [`Self::KEYS`].
    fn read<'de, D: Deserializer<'de>>(key: &'static str, d: D) -> Result<Self, D::Error>;
    /// The key it is written under.
    fn key(&self) -> &'static str;
    /// The plugin name, for messages and logs (the OTLP sources by Data Prepper's older names,
    /// whichever they are written under).
    fn plugin_name(&self) -> &'static str;
    /// The TCP port a push source listens on.
    fn port(&self) -> Option<u16>;
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

/// [`Source`] and what dispatches on it, from the list.
macro_rules! source_enum {
    ($( $(#[$doc:meta])* $variant:ident($config:ty), )*) => {
        /// A source: one key naming the plugin, its settings the key's value.
        #[derive(Debug, Clone)]
        pub enum Source {
            $( $(#[$doc])* $variant(Box<$config>), )*
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
                    LazyLock::new(|| [$( <$config as SourceConfig>::KEYS, )*].concat());
                KEYS.as_slice()
            }

            /// The variant `key` names, and the key as the list spells it.
            fn tag(key: &str) -> Option<(Tag, &'static str)> {
                $(
                    if let Some(known) =
                        <$config as SourceConfig>::KEYS.iter().find(|k| **k == key)
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
                    $( Source::$variant(c) => c.plugin_name(), )*
                }
            }

            /// The key the source is written under.
            pub fn key(&self) -> &'static str {
                match self {
                    $( Source::$variant(c) => c.key(), )*
                }
            }

            /// Whether its records are events with their upstream metadata (the `pipeline`
            /// source), read natively, not by a deserializer.
            pub fn carries_events(&self) -> bool {
                match self {
                    $( Source::$variant(_) => <$config as SourceConfig>::CARRIES_EVENTS, )*
                }
            }

            /// Push or pull.
            pub fn kind(&self) -> SourceKind {
                match self {
                    $( Source::$variant(_) => <$config as SourceConfig>::KIND, )*
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
                    $( Tag::$variant => Source::$variant(Box::new(<$config>::read(key, d)?)), )*
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
            Some((OtlpKind::One(crate::otlp::Signal::Traces), _)) => "TRACE",
            Some((OtlpKind::One(crate::otlp::Signal::Metrics), _)) => "METRIC",
            // `otlp` takes all three: each record's content type says which it holds.
            _ => "LOG",
        }
    }

    /// The OTLP source this is, if it is one.
    pub fn otlp(&self) -> Option<(OtlpKind, &OtlpSource)> {
        match self {
            Source::Otlp(o) => Some((o.kind, &o.config)),
            Source::Http(_) | Source::File(_) | Source::Pipeline(_) => None,
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

/// The `file` source: reads a file line by line, each line one record, then (with `tail`)
/// waits for more lines.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSource {
    /// The file to read. Required.
    pub path: PathBuf,
    /// Keep reading lines appended after the end, like `tail -f`. Default false: stop at the end.
    #[serde(default)]
    pub tail: bool,
    /// The deserializer for each line. Default `json`.
    #[serde(default, deserialize_with = "deserializer_name_or_map")]
    pub deserializer: DeserializerConfig,
}

/// What the `file` source reads.
#[derive(Debug, Clone)]
pub struct FileSettings {
    /// The file to read.
    pub path: PathBuf,
    /// Keep reading lines appended after the end.
    pub tail: bool,
}

impl SourceConfig for FileSource {
    const KEYS: &'static [&'static str] = &["file"];
    const KIND: SourceKind = SourceKind::Pull;
    fn read<'de, D: Deserializer<'de>>(_: &'static str, d: D) -> Result<Self, D::Error> {
        Self::deserialize(d)
    }
    fn key(&self) -> &'static str {
        "file"
    }
    fn plugin_name(&self) -> &'static str {
        "file"
    }
    fn port(&self) -> Option<u16> {
        None
    }
    fn deserializer(&self) -> Cow<'_, DeserializerConfig> {
        Cow::Borrowed(&self.deserializer)
    }
}

impl crate::Resolve for FileSource {
    type Settings = FileSettings;
    type Error = SecretError;
    fn resolve(&self, _pipeline: &str) -> Result<FileSettings, SecretError> {
        Ok(FileSettings {
            path: self.path.clone(),
            tail: self.tail,
        })
    }
}

impl CheckSource for FileSource {
    fn check(&self, path: &str, errors: &mut Errors, context: Context<'_>) {
        check_deserializer(
            &self.deserializer,
            &join(path, "deserializer"),
            errors,
            context,
        );
    }
}

listener_source! {
    /// The `http` source, compatible with Data Prepper's.
    #[derive(Debug, Clone, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct HttpSource {
        /// The TCP port to listen on (all interfaces). Default 2021.
        #[serde(default = "default_http_port")]
        pub port: u16,
        /// The URL path that accepts POST requests. Default `/log/ingest`.
        #[serde(default = "default_http_path")]
        pub path: String,
        /// The deserializer plugin for request bodies: a name (`json`), or a map with `name`,
        /// `options`, `max_memory` and `timeout`. Default `json`.
        #[serde(default, deserialize_with = "deserializer_name_or_map")]
        pub deserializer: DeserializerConfig,
        ..listener,
    }
}

/// What the `http` source serves, its defaults resolved.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// The URL path that accepts POST requests.
    pub path: String,
    /// The port and how it is served.
    pub listener: ListenerSettings,
}

impl SourceConfig for HttpSource {
    const KEYS: &'static [&'static str] = &["http"];
    const KIND: SourceKind = SourceKind::Push;
    fn read<'de, D: Deserializer<'de>>(_: &'static str, d: D) -> Result<Self, D::Error> {
        Self::deserialize(d)
    }
    fn key(&self) -> &'static str {
        "http"
    }
    fn plugin_name(&self) -> &'static str {
        "http"
    }
    fn port(&self) -> Option<u16> {
        Some(self.port)
    }
    fn deserializer(&self) -> Cow<'_, DeserializerConfig> {
        Cow::Borrowed(&self.deserializer)
    }
}

impl crate::Resolve for HttpSource {
    type Settings = HttpSettings;
    type Error = SecretError;
    fn resolve(&self, _pipeline: &str) -> Result<HttpSettings, SecretError> {
        Ok(HttpSettings {
            path: self.path.clone(),
            listener: self.listener().settings(self.port)?,
        })
    }
}

/// The http source's rules. The port's uniqueness across pipelines is checked by `validate`.
impl CheckSource for HttpSource {
    fn check(&self, path: &str, errors: &mut Errors, context: Context<'_>) {
        if !self.path.starts_with('/') {
            errors.at(
                &join(path, "path"),
                format!("`{path}.path` must start with `/`, e.g. `/log/ingest`"),
            );
        }
        let tls = TlsWording {
            certificate: "ssl_certificate_file",
            key: "ssl_key_file",
            on_by_default: false,
            serves: "HTTPS",
        };
        check_listener(&self.listener(), tls, path, errors);
        check_deserializer(
            &self.deserializer,
            &join(path, "deserializer"),
            errors,
            context,
        );
    }
}

/// Data Prepper's http source port.
const fn default_http_port() -> u16 {
    2021
}

fn default_http_path() -> String {
    "/log/ingest".to_owned()
}

/// Which deserializer plugin a source uses, with its options and sandbox limits.
///
/// Written either as a plugin name (`deserializer: ndjson`) or as a map:
/// ```yaml
/// deserializer:
///   name: csv
///   options: {delimiter: ";"}
///   max_memory: 128mb
///   timeout: 2s
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeserializerConfig {
    /// The plugin's name: the file stem of its `.wasm` file, or a built-in (`json`, `ndjson`).
    pub name: String,
    /// Options passed to the plugin's `configure` export once per instance.
    #[serde(default)]
    pub options: BTreeMap<String, serde_yaml::Value>,
    /// The most linear memory one plugin instance may use. Default `64mb`.
    #[serde(default = "default_max_memory")]
    pub max_memory: ByteSize,
    /// The longest one batch call may run before the instance is stopped. Default `1s`.
    #[serde(
        default = "default_plugin_timeout",
        deserialize_with = "units::duration"
    )]
    pub timeout: Duration,
    /// Replace each worker's plugin instance with a fresh one after this many batches, which
    /// returns the memory a guest heap kept (Python and JavaScript heaps never shrink). `0`
    /// recycles only after a trap. Default `10000`.
    #[serde(default = "default_recycle_after")]
    pub recycle_after: u64,
}

pub(crate) const fn default_recycle_after() -> u64 {
    10_000
}

pub(crate) const fn default_max_memory() -> ByteSize {
    ByteSize::mib(64)
}

pub(crate) const fn default_plugin_timeout() -> Duration {
    Duration::from_secs(1)
}

impl DeserializerConfig {
    /// The deserializer resolved, as the pipeline starts it (its limits as a processor's or a
    /// buffer policy's block holds them).
    pub fn settings(&self) -> crate::limits::PluginSettings {
        let limits = crate::PluginLimits {
            max_memory: self.max_memory,
            timeout: self.timeout,
            recycle_after: self.recycle_after,
        };
        crate::limits::PluginSettings::new(&self.name, &self.options, limits)
    }
}

impl Default for DeserializerConfig {
    fn default() -> Self {
        Self {
            name: "json".to_owned(),
            options: BTreeMap::new(),
            max_memory: default_max_memory(),
            timeout: default_plugin_timeout(),
            recycle_after: default_recycle_after(),
        }
    }
}

/// `deserializer: json` or `deserializer: {name: json, ...}`. A hand-written visitor rather
/// than `#[serde(untagged)]`, so errors inside the map still name the field.
pub(crate) fn deserializer_name_or_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<DeserializerConfig, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = DeserializerConfig;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a plugin name such as `json`, or a map with `name` and `options`")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(DeserializerConfig {
                name: v.to_owned(),
                ..DeserializerConfig::default()
            })
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            DeserializerConfig::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(V)
}

/// The deserializer's own rules, and that it names a loaded plugin (when `context` knows them).
pub(crate) fn check_deserializer(
    d: &DeserializerConfig,
    path: &str,
    errors: &mut Errors,
    context: Context<'_>,
) {
    if d.timeout.is_zero() {
        errors.at(
            &join(path, "timeout"),
            format!("`{path}.timeout` must be more than zero"),
        );
    }
    if d.max_memory.bytes() < 1 << 20 {
        errors.at(
            &join(path, "max_memory"),
            format!("`{path}.max_memory` must be at least `1mb`"),
        );
    }
    let Some(known) = context.deserializers else {
        return;
    };
    if known.contains(&d.name) {
        return;
    }
    let names: Vec<&str> = known.iter().map(String::as_str).collect();
    let hint = match closest(&d.name, names.iter().copied()) {
        Some(best) => format!(", did you mean `{best}`?"),
        None if names.is_empty() => {
            "; no deserializer plugins are loaded (see `sluice plugins list`)".to_owned()
        }
        None => format!("; the loaded deserializers are {}", list(&names)),
    };
    errors.at(
        path,
        format!("unknown deserializer `{}` in `{path}`{hint}", d.name),
    );
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{HttpSource, Source, SourceKind};
    use crate::Resolve as _;
    use crate::otlp::{Otlp, OtlpKind, OtlpSource};
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
        before.push("pipeline");
        assert_eq!(Source::keys(), before);
        assert_eq!(before[2..4], ["otel_logs_source", "otlp_logs"]);
        // `pipeline` reads only beside the pipeline that sends to it (the chain fixtures).
        for key in Source::keys().iter().filter(|k| **k != "pipeline") {
            let settings = match *key {
                "file" => "{path: x}",
                "http" => "{}",
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
                (Source::Http(_) | Source::File(_), None) => {
                    assert_eq!(source.plugin_name(), *key);
                }
                other => panic!("`{key}` read as {other:?}"),
            }
            let kind = if *key == "file" {
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
