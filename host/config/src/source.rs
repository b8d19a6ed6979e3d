//! The `source` of a pipeline: its shape (`http`, `file`, and the `deserializer` each names)
//! and its rules.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use crate::error::{Errors, closest};
use crate::explain::list;
use crate::http::{Authentication, Compression, Tls, check_authentication, check_tls};
use crate::location::join;
use crate::otlp::{OtlpKind, OtlpSource, Signal};
use crate::parse::Context;
use crate::units::{self, ByteSize};

/// A source: one key naming the plugin.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Source {
    /// Accepts HTTP POST requests; each request body is one record.
    Http(Box<HttpSource>),
    /// Reads a file, one record per line (a pull source).
    File(FileSource),
    /// OTLP logs over gRPC (and OTLP/HTTP); Data Prepper's newer name `otlp_logs` too.
    #[serde(alias = "otlp_logs")]
    OtelLogsSource(Box<OtlpSource>),
    /// OTLP traces over gRPC (and OTLP/HTTP); Data Prepper's newer name `otlp_traces` too.
    #[serde(alias = "otlp_traces")]
    OtelTraceSource(Box<OtlpSource>),
    /// OTLP metrics over gRPC (and OTLP/HTTP); Data Prepper's newer name `otlp_metrics` too.
    #[serde(alias = "otlp_metrics")]
    OtelMetricsSource(Box<OtlpSource>),
    /// OTLP logs, traces and metrics on one port.
    Otlp(Box<OtlpSource>),
}

/// Whether a source is pushed data by clients or pulls it itself. Only push sources may use the
/// kafka buffer: a pull source can re-read its input, and writing it to Kafka only to read it
/// back adds a copy without adding durability (Data Prepper has the same rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    Push,
    Pull,
}

impl Source {
    /// The deserializer that turns this source's raw records into events.
    pub fn deserializer(&self) -> Cow<'_, DeserializerConfig> {
        match self {
            Source::Http(http) => Cow::Borrowed(&http.deserializer),
            Source::File(file) => Cow::Borrowed(&file.deserializer),
            _ => {
                let (kind, otlp) = self.otlp().expect("the other sources are OTLP");
                Cow::Owned(otlp.deserializer(kind))
            }
        }
    }

    /// The OTLP source this is, if it is one.
    pub fn otlp(&self) -> Option<(OtlpKind, &OtlpSource)> {
        match self {
            Source::Http(_) | Source::File(_) => None,
            Source::OtelLogsSource(o) => Some((OtlpKind::One(Signal::Logs), o)),
            Source::OtelTraceSource(o) => Some((OtlpKind::One(Signal::Traces), o)),
            Source::OtelMetricsSource(o) => Some((OtlpKind::One(Signal::Metrics), o)),
            Source::Otlp(o) => Some((OtlpKind::All, o)),
        }
    }

    /// The plugin name, as written in the file (the OTLP sources by Data Prepper's older
    /// names).
    pub fn plugin_name(&self) -> &'static str {
        match self {
            Source::Http(_) => "http",
            Source::File(_) => "file",
            _ => self.otlp().map_or("otlp", |(kind, _)| kind.plugin_name()),
        }
    }

    /// Push or pull.
    pub fn kind(&self) -> SourceKind {
        match self {
            Source::File(_) => SourceKind::Pull,
            _ => SourceKind::Push,
        }
    }

    /// The TCP port a push source listens on.
    pub fn port(&self) -> Option<u16> {
        match self {
            Source::Http(http) => Some(http.port),
            Source::File(_) => None,
            _ => self.otlp().map(|(kind, otlp)| otlp.port(kind)),
        }
    }
}

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
    /// The largest accepted request body; larger ones get 413. Default `10mb`.
    #[serde(default = "default_max_request_length")]
    pub max_request_length: ByteSize,
    /// How long a request may wait for room in the buffer before it is refused with 503 and
    /// `Retry-After`. Default `10s`.
    #[serde(
        default = "default_request_timeout",
        deserialize_with = "units::duration"
    )]
    pub request_timeout: Duration,
    /// The most connections open at once; one more is answered 503 with `Retry-After` and
    /// closed. Default `500`.
    #[serde(default = "default_max_connection_count")]
    pub max_connection_count: usize,
    /// How long a client has to send a request's line and headers, counted from when it
    /// connects or from the first byte of a following request; then the connection is closed.
    /// Default `10s`.
    #[serde(
        default = "default_header_read_timeout",
        deserialize_with = "units::duration"
    )]
    pub header_read_timeout: Duration,
    /// How long a connection may stay silent while sluice waits for it: a keep-alive
    /// connection between requests, or a request body that stops arriving; then the connection
    /// is closed. Default `75s`.
    #[serde(default = "default_idle_timeout", deserialize_with = "units::duration")]
    pub idle_timeout: Duration,
    /// Data Prepper's size of the thread pool that handles requests. Accepted so Data Prepper
    /// files load unchanged; sluice handles requests on its async runtime, so it has no effect
    /// (`max_pending_requests` and `max_connection_count` bound the work in progress).
    /// Default `200`.
    #[serde(default = "default_thread_count")]
    pub thread_count: usize,
    /// The most requests being handled at once (reading their body or waiting for the buffer);
    /// one more is answered 429 with `Retry-After` at once. Default `1024`, as Data Prepper.
    #[serde(default = "default_max_pending_requests")]
    pub max_pending_requests: usize,
    /// Serve HTTPS with `ssl_certificate_file` and `ssl_key_file` (PEM). Default false.
    #[serde(default)]
    pub ssl: bool,
    /// The certificate chain, PEM, server certificate first. Required with `ssl: true`.
    #[serde(default)]
    pub ssl_certificate_file: Option<PathBuf>,
    /// The certificate's private key, PEM (PKCS#8, PKCS#1 or SEC1). Required with `ssl: true`.
    #[serde(default)]
    pub ssl_key_file: Option<PathBuf>,
    /// How clients authenticate: `http_basic: {username, password}` or `unauthenticated:`.
    /// Default unauthenticated.
    #[serde(default)]
    pub authentication: Option<Authentication>,
    /// `none` or `gzip`: which request bodies are decompressed (by `Content-Encoding`).
    /// Default `none`.
    #[serde(default)]
    pub compression: Compression,
    /// Answer `GET /health` on this port (200 while the source takes requests). Default false.
    #[serde(default)]
    pub health_check_service: bool,
    /// The health check answers without credentials. Default false.
    #[serde(default)]
    pub unauthenticated_health_check: bool,
}

impl HttpSource {
    /// The listener's TLS, if `ssl` is on.
    pub fn tls(&self) -> Option<Tls> {
        match (self.ssl, &self.ssl_certificate_file, &self.ssl_key_file) {
            (true, Some(certificate_file), Some(key_file)) => Some(Tls {
                certificate_file: certificate_file.clone(),
                key_file: key_file.clone(),
            }),
            _ => None,
        }
    }
}

/// Data Prepper's http source port.
const fn default_http_port() -> u16 {
    2021
}

fn default_http_path() -> String {
    "/log/ingest".to_owned()
}

/// Data Prepper's http source `max_request_length` default.
pub(crate) const fn default_max_request_length() -> ByteSize {
    ByteSize::mib(10)
}

/// Data Prepper's http source `request_timeout` default.
pub(crate) const fn default_request_timeout() -> Duration {
    Duration::from_secs(10)
}

/// Data Prepper's http source `thread_count` default.
pub(crate) const fn default_thread_count() -> usize {
    200
}

/// Data Prepper's http source `max_pending_requests` default.
pub(crate) const fn default_max_pending_requests() -> usize {
    1024
}

/// Data Prepper's http source `max_connection_count` default.
pub(crate) const fn default_max_connection_count() -> usize {
    500
}

/// Data Prepper has no such key. A client sends its request head in one go, so 10 s is
/// plenty even on a slow link, and short enough that idle sockets cannot pile up.
pub(crate) const fn default_header_read_timeout() -> Duration {
    Duration::from_secs(10)
}

/// Data Prepper has no such key. nginx's `keepalive_timeout` default: longer than the 60 s a
/// load balancer such as AWS's ALB keeps an idle connection, so the balancer closes first and
/// never sends a request on a connection sluice is closing.
pub(crate) const fn default_idle_timeout() -> Duration {
    Duration::from_secs(75)
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
    /// Its sandbox limits, as a processor's or a buffer policy's block holds them.
    pub fn limits(&self) -> crate::PluginLimits {
        crate::PluginLimits {
            max_memory: self.max_memory,
            timeout: self.timeout,
            recycle_after: self.recycle_after,
        }
    }

    /// The options as the plugin's `configure` receives them: scalars as their text, lists and
    /// maps as JSON text.
    pub fn option_pairs(&self) -> Vec<(String, String)> {
        self.options
            .iter()
            .map(|(k, v)| (k.clone(), option_text(v)))
            .collect()
    }
}

/// An option's value as a plugin's `configure` receives it: scalars as their text, lists and
/// maps as JSON text.
pub(crate) fn option_text(value: &serde_yaml::Value) -> String {
    match value {
        serde_yaml::Value::String(s) => s.clone(),
        serde_yaml::Value::Bool(b) => b.to_string(),
        serde_yaml::Value::Number(n) => n.to_string(),
        serde_yaml::Value::Null => String::new(),
        other => serde_json::to_string(other).unwrap_or_default(),
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

/// The http source's rules; `path` is its key path (`<pipeline>.source.http`). The port's
/// uniqueness across pipelines is checked by `validate`.
pub(crate) fn check_http(http: &HttpSource, path: &str, errors: &mut Errors, context: Context<'_>) {
    if !http.path.starts_with('/') {
        errors.at(
            &join(path, "path"),
            format!("`{path}.path` must start with `/`, e.g. `/log/ingest`"),
        );
    }
    if http.max_pending_requests == 0 {
        errors.at(
            &join(path, "max_pending_requests"),
            format!("`{path}.max_pending_requests` must be at least 1"),
        );
    }
    if http.max_connection_count == 0 {
        errors.at(
            &join(path, "max_connection_count"),
            format!("`{path}.max_connection_count` must be at least 1"),
        );
    }
    for (key, value) in [
        ("header_read_timeout", http.header_read_timeout),
        ("idle_timeout", http.idle_timeout),
    ] {
        if value.is_zero() {
            errors.at(
                &join(path, key),
                format!("`{path}.{key}` must be more than zero"),
            );
        }
    }
    check_tls(
        http.ssl,
        http.ssl_certificate_file.as_ref(),
        http.ssl_key_file.as_ref(),
        path,
        errors,
    );
    if let Some(auth) = &http.authentication {
        check_authentication(auth, path, errors);
    }
    check_deserializer(
        &http.deserializer,
        &join(path, "deserializer"),
        errors,
        context,
    );
}
