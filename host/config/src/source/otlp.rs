//! The OTLP sources, with Data Prepper's names and keys: `otel_logs_source`,
//! `otel_trace_source`, `otel_metrics_source` (also under their newer names `otlp_logs`,
//! `otlp_traces`, `otlp_metrics`), each taking one signal, and `otlp`, taking all three.
//! They are one variant of [`crate::Source`], [`Otlp`]: which of the four ([`OtlpKind`], from
//! the key it is written under) and one shape of keys, [`OtlpSource`], for the four (the
//! listener's keys spliced in from [`crate::listener`]). The keys only some of them have are
//! checked here (`path` and `sslKeyCertChainFile` are the single-signal sources', `logs_path`
//! and `ssl_certificate_file` the `otlp` source's), and [`OtlpSource::settings`] resolves the
//! defaults that differ (port, paths, output format) into [`OtlpSettings`].

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::deserializer::{DeserializerConfig, check_deserializer, deserializer_name_or_map};
use super::{CheckSource, SourceConfig, SourceKind};
use crate::context::Context;
use crate::error::Errors;
use crate::listener::{ListenerSettings, TlsWording, check_listener, listener_source};
use crate::location::join;
use crate::secret::SecretError;
use crate::units;

/// An OTLP signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Signal {
    Logs,
    Traces,
    Metrics,
}

impl Signal {
    pub const ALL: [Signal; 3] = [Signal::Logs, Signal::Traces, Signal::Metrics];

    /// The gRPC method clients call: also the path it is served at, unless configured.
    pub fn grpc_path(self) -> &'static str {
        match self {
            Signal::Logs => "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
            Signal::Traces => "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            Signal::Metrics => "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
        }
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Signal::Logs => "logs",
            Signal::Traces => "traces",
            Signal::Metrics => "metrics",
        })
    }
}

/// Which of the four OTLP sources a block configures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpKind {
    /// `otel_logs_source` / `otlp_logs`, `otel_trace_source` / `otlp_traces`,
    /// `otel_metrics_source` / `otlp_metrics`: one signal.
    One(Signal),
    /// `otlp`: all three.
    All,
}

impl OtlpKind {
    /// The four, in the order messages list them.
    pub const ALL: [OtlpKind; 4] = [
        OtlpKind::One(Signal::Logs),
        OtlpKind::One(Signal::Traces),
        OtlpKind::One(Signal::Metrics),
        OtlpKind::All,
    ];

    /// The source written under `key`: its older or its newer name.
    pub fn from_key(key: &str) -> Option<OtlpKind> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.plugin_name() == key || kind.newer_name() == key)
    }

    /// The plugin name, as Data Prepper's files most often write it.
    pub fn plugin_name(self) -> &'static str {
        match self {
            OtlpKind::One(Signal::Logs) => "otel_logs_source",
            OtlpKind::One(Signal::Traces) => "otel_trace_source",
            OtlpKind::One(Signal::Metrics) => "otel_metrics_source",
            OtlpKind::All => "otlp",
        }
    }

    /// Data Prepper's newer name (2.11+): `otlp_logs`, `otlp_traces`, `otlp_metrics`, `otlp`.
    pub fn newer_name(self) -> &'static str {
        match self {
            OtlpKind::One(Signal::Logs) => "otlp_logs",
            OtlpKind::One(Signal::Traces) => "otlp_traces",
            OtlpKind::One(Signal::Metrics) => "otlp_metrics",
            OtlpKind::All => "otlp",
        }
    }

    /// Data Prepper's port.
    fn default_port(self) -> u16 {
        match self {
            OtlpKind::One(Signal::Traces) => 21890,
            OtlpKind::One(Signal::Metrics) => 21891,
            OtlpKind::One(Signal::Logs) => 21892,
            OtlpKind::All => 21893,
        }
    }
}

/// `output_format`: the shape of the events the `otlp` deserializer makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputFormat {
    /// Data Prepper's `opensearch` shape: attributes flattened (`span.attributes.http@method`),
    /// `serviceName`, `traceGroup`. The single-signal sources' default.
    Opensearch,
    /// Data Prepper's `otel` shape: OpenTelemetry's own field names, attributes nested. The
    /// `otlp` source's default.
    Otel,
}

impl OutputFormat {
    fn as_str(self) -> &'static str {
        match self {
            OutputFormat::Opensearch => "opensearch",
            OutputFormat::Otel => "otel",
        }
    }
}

/// `retry_info`: how long refused clients are told to wait (gRPC `RetryInfo`, HTTP
/// `Retry-After`): `min_delay` after the first refusal, doubling with each refusal in a row up to
/// `max_delay`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryInfo {
    /// Default `100ms`.
    #[serde(default = "default_min_delay", deserialize_with = "units::duration")]
    pub min_delay: Duration,
    /// Default `2s`.
    #[serde(default = "default_max_delay", deserialize_with = "units::duration")]
    pub max_delay: Duration,
}

impl Default for RetryInfo {
    fn default() -> Self {
        Self {
            min_delay: default_min_delay(),
            max_delay: default_max_delay(),
        }
    }
}

const fn default_min_delay() -> Duration {
    Duration::from_millis(100)
}

const fn default_max_delay() -> Duration {
    Duration::from_secs(2)
}

listener_source! {
    /// An OTLP source: OTLP/gRPC on HTTP/2 and, where configured, OTLP/HTTP (protobuf or JSON) on
    /// the same port. Each request's bytes go to the buffer whole; the `otlp` deserializer makes
    /// one event per log record, span or metric data point after the buffer.
    #[derive(Debug, Clone, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct OtlpSource {
        /// The TCP port (all interfaces). Default: Data Prepper's, `21892` for logs, `21890` for
        /// traces, `21891` for metrics, `21893` for `otlp`.
        #[serde(default)]
        pub port: Option<u16>,
        /// Single-signal sources: the path the gRPC service (and, with `unframed_requests`,
        /// OTLP/HTTP) is served at instead of the gRPC method's own
        /// (`/opentelemetry.proto.collector.trace.v1.TraceService/Export`). `${pipelineName}` is
        /// replaced by the pipeline's name.
        #[serde(default)]
        pub path: Option<String>,
        /// `otel_logs_source` only: a path for OTLP/HTTP (protobuf or JSON bodies), e.g.
        /// `/v1/logs`. Default: none.
        #[serde(default)]
        pub http_path: Option<String>,
        /// `otlp` only: the path of the logs service. Default: the gRPC method's own.
        #[serde(default)]
        pub logs_path: Option<String>,
        /// `otlp` only: the path of the metrics service. Default: the gRPC method's own.
        #[serde(default)]
        pub metrics_path: Option<String>,
        /// `otlp` only: the path of the traces service. Default: the gRPC method's own.
        #[serde(default)]
        pub traces_path: Option<String>,
        /// Accept OTLP/HTTP (protobuf or JSON, not gRPC-framed) at the gRPC paths too. Default
        /// false.
        #[serde(default)]
        pub unframed_requests: bool,
        /// Default **true**, as Data Prepper: give the certificate and key, or set `ssl: false`.
        ..ssl(default = "crate::listener::default_ssl_on"),
        /// `sslKeyCertChainFile` in the single-signal sources.
        ..ssl_certificate_file(alias = "sslKeyCertChainFile"),
        /// `sslKeyFile` in the single-signal sources.
        ..ssl_key_file(alias = "sslKeyFile"),
        ..authentication,
        ..compression,
        ..max_request_length,
        /// The buffer is given 80% of it (as Data Prepper), so the client hears why before its
        /// own deadline.
        ..request_timeout,
        ..max_connection_count,
        ..max_pending_requests,
        ..header_read_timeout,
        ..idle_timeout,
        ..thread_count,
        ..health_check_service,
        ..unauthenticated_health_check,
        /// Data Prepper's gRPC reflection service (for tools such as grpcurl; OTLP clients do
        /// not use it). sluice does not serve reflection: `true` is accepted, and the source
        /// says at start that it is not served. Default false.
        #[serde(default)]
        pub proto_reflection_service: bool,
        /// How clients are told to back off when refused.
        #[serde(default)]
        pub retry_info: RetryInfo,
        /// Data Prepper 1.x's `record_type` of `otel_trace_source`, `otlp` or `event`:
        /// accepted for its configurations; the records are sluice's events either way.
        #[serde(default)]
        pub record_type: Option<OtelRecordType>,
        /// `opensearch` or `otel`: the shape of the events. Default `opensearch` for the
        /// single-signal sources, `otel` for `otlp`.
        #[serde(default)]
        pub output_format: Option<OutputFormat>,
        /// `otlp` only: the logs' `output_format`, if not the source's.
        #[serde(default)]
        pub logs_output_format: Option<OutputFormat>,
        /// `otlp` only: the metrics' `output_format`, if not the source's.
        #[serde(default)]
        pub metrics_output_format: Option<OutputFormat>,
        /// `otlp` only: the traces' `output_format`, if not the source's.
        #[serde(default)]
        pub traces_output_format: Option<OutputFormat>,
        /// The deserializer that turns each request into events after the buffer. Default
        /// `otlp` (bundled), given the output formats as options.
        #[serde(
            default = "default_otlp_deserializer",
            deserialize_with = "deserializer_name_or_map"
        )]
        pub deserializer: DeserializerConfig,
    }
}

/// Data Prepper 1.x's `record_type` of the trace source (both read as events).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OtelRecordType {
    /// OTLP records.
    Otlp,
    /// Events.
    Event,
}

/// One of the four OTLP sources, as configured: which one, and its keys.
#[derive(Debug, Clone)]
pub struct Otlp {
    /// Which of the four: the key it is written under says.
    pub kind: OtlpKind,
    /// The key it is written under (`otel_logs_source` or `otlp_logs`, ...), for key paths.
    pub key: &'static str,
    /// Its keys.
    pub config: OtlpSource,
}

impl SourceConfig for Otlp {
    const KEYS: &'static [&'static str] = &[
        "otel_logs_source",
        "otlp_logs",
        "otel_trace_source",
        "otlp_traces",
        "otel_metrics_source",
        "otlp_metrics",
        "otlp",
    ];
    const KIND: SourceKind = SourceKind::Push;
    fn read<'de, D: Deserializer<'de>>(key: &'static str, d: D) -> Result<Self, D::Error> {
        let kind = OtlpKind::from_key(key)
            .ok_or_else(|| serde::de::Error::unknown_variant(key, Self::KEYS))?;
        Ok(Otlp {
            kind,
            key,
            config: OtlpSource::deserialize(d)?,
        })
    }
    fn key(&self) -> Option<&'static str> {
        Some(self.key)
    }
    fn plugin_name(&self) -> Option<&'static str> {
        Some(self.kind.plugin_name())
    }
    fn port(&self) -> Option<u16> {
        Some(self.config.port(self.kind))
    }
    fn deserializer(&self) -> Cow<'_, DeserializerConfig> {
        Cow::Owned(self.config.deserializer(self.kind))
    }
}

impl crate::Resolve for Otlp {
    type Settings = OtlpSettings;
    type Error = SecretError;
    fn resolve(&self, pipeline: &str) -> Result<OtlpSettings, SecretError> {
        self.config.settings(self.kind, pipeline)
    }
}

impl CheckSource for Otlp {
    fn check(&self, path: &str, errors: &mut Errors, context: Context<'_>) {
        check_otlp(&self.config, self.kind, path, errors, context);
    }
}

/// What an OTLP source serves, its defaults resolved.
#[derive(Debug, Clone)]
pub struct OtlpSettings {
    /// The plugin name, for logs and messages.
    pub source: &'static str,
    /// Each signal's gRPC path (also unframed OTLP/HTTP's, with `unframed_requests`).
    pub grpc: Vec<(Signal, String)>,
    /// OTLP/HTTP paths (`http_path`).
    pub http: Vec<(Signal, String)>,
    /// Accept OTLP/HTTP at the gRPC paths too.
    pub unframed_requests: bool,
    /// How refused clients are told to back off.
    pub retry_info: RetryInfo,
    /// `proto_reflection_service: true` was asked for (and is not served).
    pub proto_reflection_service: bool,
    /// The port and how it is served.
    pub listener: ListenerSettings,
}

impl OtlpSource {
    /// The defaults that depend on the source, resolved; `pipeline` replaces `${pipelineName}`.
    /// Reads the listener's password.
    pub fn settings(&self, kind: OtlpKind, pipeline: &str) -> Result<OtlpSettings, SecretError> {
        let path = |p: &Option<String>, signal: Signal| {
            p.as_deref().map_or_else(
                || signal.grpc_path().to_owned(),
                |p| p.replace("${pipelineName}", pipeline),
            )
        };
        let (grpc, http) = match kind {
            OtlpKind::One(signal) => (
                vec![(signal, path(&self.path, signal))],
                self.http_path
                    .iter()
                    .map(|p| (signal, p.replace("${pipelineName}", pipeline)))
                    .collect(),
            ),
            OtlpKind::All => (
                vec![
                    (Signal::Logs, path(&self.logs_path, Signal::Logs)),
                    (Signal::Traces, path(&self.traces_path, Signal::Traces)),
                    (Signal::Metrics, path(&self.metrics_path, Signal::Metrics)),
                ],
                Vec::new(),
            ),
        };
        Ok(OtlpSettings {
            source: kind.plugin_name(),
            grpc,
            http,
            unframed_requests: self.unframed_requests,
            proto_reflection_service: self.proto_reflection_service,
            retry_info: self.retry_info,
            listener: self.listener().settings(self.port(kind))?,
        })
    }

    /// The port, its default resolved.
    pub fn port(&self, kind: OtlpKind) -> u16 {
        self.port.unwrap_or(kind.default_port())
    }

    /// The deserializer, given the output formats as options (`output_format`, and
    /// `logs_output_format`... where set) unless its own options set them.
    pub fn deserializer(&self, kind: OtlpKind) -> DeserializerConfig {
        let mut d = self.deserializer.clone();
        let default = match kind {
            OtlpKind::One(_) => OutputFormat::Opensearch,
            OtlpKind::All => OutputFormat::Otel,
        };
        let formats = [
            ("output_format", Some(self.output_format.unwrap_or(default))),
            ("logs_output_format", self.logs_output_format),
            ("metrics_output_format", self.metrics_output_format),
            ("traces_output_format", self.traces_output_format),
        ];
        for (key, format) in formats {
            if let Some(format) = format {
                d.options
                    .entry(key.to_owned())
                    .or_insert_with(|| serde_yaml::Value::String(format.as_str().to_owned()));
            }
        }
        d
    }
}

fn default_otlp_deserializer() -> DeserializerConfig {
    DeserializerConfig {
        name: "otlp".to_owned(),
        options: BTreeMap::new(),
        ..DeserializerConfig::default()
    }
}

/// An OTLP source's rules: the listener's, and those of the keys only OTLP sources have;
/// `path` is its key path (`<pipeline>.source.otlp`).
fn check_otlp(
    otlp: &OtlpSource,
    kind: OtlpKind,
    path: &str,
    errors: &mut Errors,
    context: Context<'_>,
) {
    let name = kind.plugin_name();
    // Keys that belong to the other kind of OTLP source.
    let theirs: &[(&str, bool)] = match kind {
        OtlpKind::One(_) => &[
            ("logs_path", otlp.logs_path.is_some()),
            ("metrics_path", otlp.metrics_path.is_some()),
            ("traces_path", otlp.traces_path.is_some()),
            ("logs_output_format", otlp.logs_output_format.is_some()),
            (
                "metrics_output_format",
                otlp.metrics_output_format.is_some(),
            ),
            ("traces_output_format", otlp.traces_output_format.is_some()),
        ],
        OtlpKind::All => &[("path", otlp.path.is_some())],
    };
    for (key, set) in theirs {
        if *set {
            let hint = match kind {
                OtlpKind::All => {
                    "the `otlp` source takes `logs_path`, `metrics_path` and `traces_path`"
                }
                OtlpKind::One(_) => "it is a key of the `otlp` source; this one takes `path`",
            };
            errors.at(
                &join(path, key),
                format!("`{path}.{key}`: `{name}` has no `{key}` ({hint})"),
            );
        }
    }
    if otlp.http_path.is_some() && kind != OtlpKind::One(Signal::Logs) {
        errors.at(
            &join(path, "http_path"),
            format!(
                "`{path}.http_path`: only `otel_logs_source` has `http_path`; for OTLP/HTTP here, \
                 set `unframed_requests: true` and post to the gRPC path"
            ),
        );
    }
    let mut paths: Vec<(&str, &String)> = Vec::new();
    for (key, value) in [
        ("path", &otlp.path),
        ("http_path", &otlp.http_path),
        ("logs_path", &otlp.logs_path),
        ("metrics_path", &otlp.metrics_path),
        ("traces_path", &otlp.traces_path),
    ] {
        let Some(value) = value else { continue };
        if !value.starts_with('/') {
            errors.at(
                &join(path, key),
                format!("`{path}.{key}` must start with `/`, e.g. `/v1/logs`"),
            );
        }
        if let Some((other, _)) = paths.iter().find(|(_, v)| *v == value) {
            errors.at(
                &join(path, key),
                format!("`{path}.{key}` is the same path as `{other}`; give each its own"),
            );
        }
        paths.push((key, value));
    }
    // The single-signal sources name the TLS files in camelCase, `otlp` in snake_case; both
    // spellings are accepted everywhere, the messages use the source's own.
    let (certificate, key) = match kind {
        OtlpKind::One(_) => ("sslKeyCertChainFile", "sslKeyFile"),
        OtlpKind::All => ("ssl_certificate_file", "ssl_key_file"),
    };
    let tls = TlsWording {
        certificate,
        key,
        on_by_default: true,
    };
    check_listener(&otlp.listener(), tls, path, errors);
    if otlp.retry_info.min_delay.is_zero() {
        errors.at(
            &join(path, "retry_info.min_delay"),
            format!("`{path}.retry_info.min_delay` must be more than zero"),
        );
    }
    if otlp.retry_info.max_delay < otlp.retry_info.min_delay {
        errors.at(
            &join(path, "retry_info.max_delay"),
            format!("`{path}.retry_info.max_delay` must not be less than `min_delay`"),
        );
    }
    check_deserializer(
        &otlp.deserializer,
        &join(path, "deserializer"),
        errors,
        context,
    );
}
