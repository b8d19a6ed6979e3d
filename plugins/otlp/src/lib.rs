//! `otlp`: an OTLP export request, as an OTLP/HTTP client posts it (`application/x-protobuf`,
//! or OTLP/JSON with `application/json`), to one event per log record, span or metric data
//! point, in one of Data Prepper's output formats (the shapes its `otel_logs_source`,
//! `otel_trace_source` and `otel_metrics_source` write; see `logs.rs`, `traces.rs`,
//! `metrics.rs`). A request that is not one is malformed whole, with the reason.
//!
//! Options:
//! - `signal`: `logs` (default), `traces` or `metrics`, the kind of request the source
//!   receives. A record whose content type has the parameter `otlp=logs|traces|metrics`
//!   (`application/x-protobuf; otlp=traces`) is that kind whatever the option says, so one
//!   source can receive all three; another value of `otlp` makes the record malformed.
//! - `logs_output_format`, `traces_output_format`, `metrics_output_format`: one signal's
//!   format, over `output_format` (the `otlp` source's keys of those names).
//! - `output_format`: `opensearch` (default; Data Prepper's default for those sources) or
//!   `otel`, as Data Prepper's option of that name:
//!   - `opensearch`: attributes flattened into the event, keys prefixed and dots written `@`
//!     (`log.attributes.http@method`, `resource.attributes.service@name`,
//!     `instrumentationScope.name`), arrays and maps as JSON text, and `serviceName`; spans
//!     with `traceGroup`, `traceGroupFields` and `status.code`.
//!   - `otel`: attributes as OpenTelemetry has them, nested (`attributes: {"http.method":
//!     "GET"}`), `resource: {attributes, droppedAttributesCount, schemaUrl}`,
//!     `instrumentationScope: {name, version, droppedAttributesCount, attributes}`, `schemaUrl`
//!     the scope's; no `serviceName` and no trace group; spans with `status: {code, message}`
//!     and `flags`; metric points with `metadata`, histograms with `min` and `max`,
//!     exponential histograms with `zeroThreshold`, `positiveBuckets` and `negativeBuckets`.
//!
//! ```yaml
//! source:
//!   http:
//!     path: /v1/traces
//!     deserializer:
//!       name: otlp
//!       options: {signal: traces, output_format: otel}
//! ```
//!
//! # Layout
//! - `media.rs`: the record's content type (JSON or protobuf, the `otlp` parameter).
//! - `common.rs`: decoding, ids and times, `Format` and the `opensearch` shape of attributes,
//!   resource and scope; `otel.rs` the `otel` shape of those.
//! - `logs.rs`, `traces.rs`, `metrics.rs`: each signal's events, in both formats.

wit_bindgen::generate!({ world: "deserializer-plugin", path: "../../wit/v0.2" });

mod common;
mod logs;
mod media;
mod metrics;
mod otel;
mod traces;
mod write;

#[cfg(test)]
mod golden;
/// The events as this component built them before it wrote them directly: a
/// `serde_json::Value` tree per event, serialized. The golden test compares the two.
#[cfg(test)]
mod tree;

use std::cell::Cell;

use common::Format;
use exports::sluice::plugin::configure::Guest as Configure;
use exports::sluice::plugin::deserializer::{Guest, Outcome, RawRecord, Reply};
use sluice::plugin::types::{EventRef, OptionEntry, Span};
use write::Events;

struct Otlp;

/// What a request holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Signal {
    Logs,
    Traces,
    Metrics,
}

impl Signal {
    /// The signal called `name` (`logs`, `traces`, `metrics`), as the option and the content
    /// type's `otlp` parameter name it.
    fn named(name: &str) -> Option<Signal> {
        match name {
            "logs" => Some(Signal::Logs),
            "traces" => Some(Signal::Traces),
            "metrics" => Some(Signal::Metrics),
            _ => None,
        }
    }
}

/// The options, as `configure` validated them.
#[derive(Clone, Copy)]
struct Config {
    signal: Signal,
    format: Format,
    /// `logs_output_format`, `traces_output_format`, `metrics_output_format`: a signal's own
    /// format, over `format`.
    formats: [Option<Format>; 3],
}

impl Config {
    /// Without options: logs, in the `opensearch` format.
    const DEFAULT: Config = Config {
        signal: Signal::Logs,
        format: Format::Opensearch,
        formats: [None; 3],
    };

    /// The format of `signal`'s events.
    fn format(&self, signal: Signal) -> Format {
        self.formats[signal as usize].unwrap_or(self.format)
    }
}

/// An `output_format` option's value.
fn format(key: &str, value: &str) -> Result<Format, String> {
    match value {
        "opensearch" => Ok(Format::Opensearch),
        "otel" => Ok(Format::Otel),
        other => Err(format!(
            "option `{key}` must be `opensearch` or `otel`, got `{other}`"
        )),
    }
}

thread_local! {
    static CONFIG: Cell<Config> = const { Cell::new(Config::DEFAULT) };
}

/// Writes the events of one record with content type `content_type` into `events`: how many,
/// or why it has none (then nothing is written).
fn record_events(
    payload: &[u8],
    content_type: Option<&str>,
    config: Config,
    events: &mut Events,
) -> Result<u32, String> {
    let content_type = content_type.unwrap_or("");
    let signal = match media::parameter(content_type, "otlp") {
        None => config.signal,
        Some(name) => Signal::named(name).ok_or_else(|| {
            format!(
                "content type `{content_type}`: parameter `otlp` must be `logs`, `traces` or `metrics`, got `{name}`"
            )
        })?,
    };
    // OTLP/HTTP: `application/json` is OTLP/JSON, anything else protobuf.
    let json = media::is_json(content_type);
    let format = config.format(signal);
    match signal {
        Signal::Logs => logs::events(payload, json, format, events),
        Signal::Traces => traces::events(payload, json, format, events),
        Signal::Metrics => metrics::events(payload, json, format, events),
    }
}

impl Guest for Otlp {
    fn deserialize(data: Vec<u8>, records: Vec<RawRecord>, content_types: Vec<String>) -> Reply {
        let config = CONFIG.with(Cell::get);
        let mut events = Events::default();
        let outcomes = records
            .iter()
            .map(|r| {
                let payload = &data[r.payload.offset as usize..][..r.payload.len as usize];
                let content_type = r
                    .content_type
                    .and_then(|i| content_types.get(usize::from(i)))
                    .map(String::as_str);
                match record_events(payload, content_type, config, &mut events) {
                    Ok(count) => Outcome::Events(count),
                    Err(reason) => Outcome::Malformed(reason),
                }
            })
            .collect();
        Reply {
            data: events.out,
            events: events
                .spans
                .iter()
                .map(|&(offset, len)| {
                    EventRef::Output(Span {
                        offset: offset as u32,
                        len: len as u32,
                    })
                })
                .collect(),
            outcomes,
        }
    }
}

impl Configure for Otlp {
    fn configure(options: Vec<OptionEntry>) -> Result<(), String> {
        let mut config = Config::DEFAULT;
        for o in options {
            match (o.key.as_str(), o.value.as_str()) {
                ("signal", name) => {
                    config.signal = Signal::named(name).ok_or_else(|| {
                        format!(
                            "option `signal` must be `logs`, `traces` or `metrics`, got `{name}`"
                        )
                    })?;
                }
                ("output_format", value) => config.format = format(&o.key, value)?,
                ("logs_output_format", value) => {
                    config.formats[Signal::Logs as usize] = Some(format(&o.key, value)?);
                }
                ("traces_output_format", value) => {
                    config.formats[Signal::Traces as usize] = Some(format(&o.key, value)?);
                }
                ("metrics_output_format", value) => {
                    config.formats[Signal::Metrics as usize] = Some(format(&o.key, value)?);
                }
                (other, _) => {
                    return Err(format!(
                        "unknown option `{other}`: the otlp deserializer takes `signal`, \
                         `output_format`, `logs_output_format`, `traces_output_format` and \
                         `metrics_output_format`"
                    ));
                }
            }
        }
        CONFIG.with(|c| c.set(config));
        Ok(())
    }
}

export!(Otlp);

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    use opentelemetry_proto::tonic::common::v1::{
        AnyValue, ArrayValue, InstrumentationScope, KeyValue,
    };
    use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
    use opentelemetry_proto::tonic::metrics::v1::{
        AggregationTemporality, Histogram, HistogramDataPoint, Metric, ResourceMetrics,
        ScopeMetrics, metric,
    };
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status, span};
    use prost::Message;
    use serde_json::{Value, json};

    use std::cell::Cell;

    use super::{CONFIG, Config, Configure, Format, OptionEntry, Otlp, Signal, record_events};

    const OTEL_LOGS: Config = Config {
        signal: Signal::Logs,
        format: Format::Otel,
        formats: [None; 3],
    };

    fn kv(key: &str, value: Any) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue { value: Some(value) }),
            ..Default::default()
        }
    }

    fn text(s: &str) -> Any {
        Any::StringValue(s.into())
    }

    fn resource() -> Option<Resource> {
        Some(Resource {
            attributes: vec![kv("service.name", text("checkout"))],
            ..Default::default()
        })
    }

    fn scope() -> Option<InstrumentationScope> {
        Some(InstrumentationScope {
            name: "io.opentelemetry.jdbc".into(),
            version: "1.0".into(),
            ..Default::default()
        })
    }

    fn logs() -> Vec<u8> {
        ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                resource: resource(),
                scope_logs: vec![ScopeLogs {
                    scope: scope(),
                    log_records: vec![LogRecord {
                        time_unix_nano: 1_700_000_000_123_000_000,
                        severity_number: 9,
                        severity_text: "INFO".into(),
                        body: Some(AnyValue {
                            value: Some(text("hello")),
                        }),
                        attributes: vec![
                            kv("http.method", text("GET")),
                            kv(
                                "tags",
                                Any::ArrayValue(ArrayValue {
                                    values: vec![AnyValue {
                                        value: Some(Any::IntValue(1)),
                                    }],
                                }),
                            ),
                        ],
                        trace_id: vec![0xab; 16],
                        ..Default::default()
                    }],
                    schema_url: "https://scope".into(),
                }],
                schema_url: "https://resource".into(),
            }],
        }
        .encode_to_vec()
    }

    /// The events of one record, read back from what the component wrote.
    fn values(
        payload: &[u8],
        content_type: Option<&str>,
        config: Config,
    ) -> Result<Vec<Value>, String> {
        let mut events = crate::write::Events::default();
        let count = record_events(payload, content_type, config, &mut events)?;
        assert_eq!(count as usize, events.spans.len());
        Ok(events
            .spans
            .iter()
            .map(|&(offset, len)| serde_json::from_slice(&events.out[offset..][..len]).unwrap())
            .collect())
    }

    fn one(payload: &[u8], content_type: Option<&str>, config: Config) -> Value {
        let mut list = values(payload, content_type, config).expect("events");
        assert_eq!(list.len(), 1);
        list.remove(0)
    }

    #[test]
    fn an_otel_log_nests_attributes_resource_and_scope() {
        let event = one(&logs(), Some("application/x-protobuf"), OTEL_LOGS);
        assert_eq!(
            event,
            json!({
                "time": "2023-11-14T22:13:20.123Z",
                "observedTimestamp": "1970-01-01T00:00:00Z",
                "schemaUrl": "https://scope",
                "flags": 0,
                "traceId": "abababababababababababababababab",
                "spanId": "",
                "severityNumber": 9,
                "severityText": "INFO",
                "droppedAttributesCount": 0,
                "body": "hello",
                "attributes": {"http.method": "GET", "tags": [1]},
                "resource": {
                    "attributes": {"service.name": "checkout"},
                    "droppedAttributesCount": 0,
                    "schemaUrl": "https://resource",
                },
                "instrumentationScope": {
                    "name": "io.opentelemetry.jdbc",
                    "version": "1.0",
                    "droppedAttributesCount": 0,
                },
            })
        );
    }

    #[test]
    fn the_opensearch_log_is_flat() {
        let config = Config {
            format: Format::Opensearch,
            ..OTEL_LOGS
        };
        let event = one(&logs(), None, config);
        assert_eq!(event["log.attributes.http@method"], "GET");
        assert_eq!(event["log.attributes.tags"], "[1]");
        assert_eq!(event["resource.attributes.service@name"], "checkout");
        assert_eq!(event["instrumentationScope.name"], "io.opentelemetry.jdbc");
        assert_eq!(event["serviceName"], "checkout");
        assert_eq!(event["schemaUrl"], "https://resource");
        assert!(event.get("attributes").is_none() && event.get("resource").is_none());
    }

    #[test]
    fn an_otel_span_has_a_status_object_and_no_trace_group() {
        let request = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: resource(),
                scope_spans: vec![ScopeSpans {
                    scope: None,
                    spans: vec![Span {
                        trace_id: vec![1; 16],
                        span_id: vec![2; 8],
                        name: "GET /cart".into(),
                        kind: span::SpanKind::Server as i32,
                        start_time_unix_nano: 1_000,
                        end_time_unix_nano: 3_500,
                        attributes: vec![kv("http.status_code", Any::IntValue(200))],
                        events: vec![span::Event {
                            time_unix_nano: 2_000,
                            name: "retry".into(),
                            attributes: vec![kv("attempt.n", Any::IntValue(2))],
                            dropped_attributes_count: 0,
                        }],
                        status: Some(Status {
                            message: "fine".into(),
                            code: 1,
                        }),
                        flags: 0x100,
                        ..Default::default()
                    }],
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        };
        // The content type's `otlp` parameter overrides `signal: logs`.
        let event = one(
            &request.encode_to_vec(),
            Some("application/x-protobuf; otlp=traces"),
            OTEL_LOGS,
        );
        assert_eq!(
            event,
            json!({
                "traceId": "01010101010101010101010101010101",
                "spanId": "0202020202020202",
                "parentSpanId": "",
                "traceState": "",
                "name": "GET /cart",
                "kind": "SPAN_KIND_SERVER",
                "startTime": "1970-01-01T00:00:00.000001Z",
                "endTime": "1970-01-01T00:00:00.000003500Z",
                "durationInNanos": 2_500,
                "droppedAttributesCount": 0,
                "events": [{
                    "name": "retry",
                    "time": "1970-01-01T00:00:00.000002Z",
                    "attributes": {"attempt.n": 2},
                    "droppedAttributesCount": 0,
                }],
                "droppedEventsCount": 0,
                "links": [],
                "droppedLinksCount": 0,
                "status": {"code": 1, "message": "fine"},
                "flags": 256,
                "schemaUrl": "",
                "attributes": {"http.status_code": 200},
                "resource": {
                    "attributes": {"service.name": "checkout"},
                    "droppedAttributesCount": 0,
                    "schemaUrl": "",
                },
                "instrumentationScope": {"droppedAttributesCount": 0},
            })
        );
    }

    #[test]
    fn an_otel_histogram_point_has_metadata_min_max_and_buckets() {
        let request = ExportMetricsServiceRequest {
            resource_metrics: vec![ResourceMetrics {
                resource: None,
                scope_metrics: vec![ScopeMetrics {
                    scope: scope(),
                    metrics: vec![Metric {
                        name: "latency".into(),
                        unit: "ms".into(),
                        metadata: vec![kv("origin", text("sdk"))],
                        data: Some(metric::Data::Histogram(Histogram {
                            aggregation_temporality: AggregationTemporality::Delta as i32,
                            data_points: vec![HistogramDataPoint {
                                time_unix_nano: 1_000_000_000,
                                count: 3,
                                sum: Some(7.5),
                                bucket_counts: vec![1, 2],
                                explicit_bounds: vec![5.0],
                                min: Some(0.5),
                                attributes: vec![kv("route.name", text("/cart"))],
                                ..Default::default()
                            }],
                        })),
                        ..Default::default()
                    }],
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        };
        // OTLP/JSON with parameters is still JSON.
        let body = serde_json::to_vec(&request).unwrap();
        let config = Config {
            signal: Signal::Metrics,
            format: Format::Otel,
            formats: [None; 3],
        };
        let event = one(&body, Some("Application/JSON; charset=utf-8"), config);
        let float_max = 3.402_823_466_385_288_6e38;
        assert_eq!(
            event,
            json!({
                "name": "latency",
                "description": "",
                "unit": "ms",
                "kind": "HISTOGRAM",
                "startTime": "1970-01-01T00:00:00Z",
                "time": "1970-01-01T00:00:01Z",
                "schemaUrl": "",
                "flags": 0,
                "exemplars": [],
                "metadata": {"origin": "sdk"},
                "attributes": {"route.name": "/cart"},
                "resource": {"attributes": {}, "droppedAttributesCount": 0, "schemaUrl": ""},
                "instrumentationScope": {
                    "name": "io.opentelemetry.jdbc",
                    "version": "1.0",
                    "droppedAttributesCount": 0,
                },
                "sum": 7.5,
                "count": 3,
                "min": 0.5,
                "max": 0.0,
                "aggregationTemporality": "AGGREGATION_TEMPORALITY_DELTA",
                "bucketCounts": 2,
                "bucketCountsList": [1, 2],
                "explicitBoundsCount": 1,
                "explicitBounds": [5.0],
                "buckets": [
                    {"min": -float_max, "max": 5.0, "count": 1},
                    {"min": 5.0, "max": float_max, "count": 2},
                ],
            })
        );
    }

    #[test]
    fn an_unknown_otlp_parameter_makes_the_record_malformed() {
        let err = values(
            &logs(),
            Some("application/x-protobuf; OTLP=spans"),
            OTEL_LOGS,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "content type `application/x-protobuf; OTLP=spans`: parameter `otlp` must be \
             `logs`, `traces` or `metrics`, got `spans`"
        );
    }

    #[test]
    fn configure_refuses_unknown_values_naming_the_option() {
        let option = |key: &str, value: &str| OptionEntry {
            key: key.into(),
            value: value.into(),
        };
        assert_eq!(
            Otlp::configure(vec![option("output_format", "otel")]),
            Ok(())
        );
        assert!(CONFIG.with(Cell::get).format == Format::Otel);
        assert_eq!(
            Otlp::configure(vec![option("output_format", "json")]),
            Err("option `output_format` must be `opensearch` or `otel`, got `json`".into())
        );
        assert_eq!(
            Otlp::configure(vec![option("signal", "spans")]),
            Err("option `signal` must be `logs`, `traces` or `metrics`, got `spans`".into())
        );
        assert_eq!(
            Otlp::configure(vec![option("format", "otel")]),
            Err(
                "unknown option `format`: the otlp deserializer takes `signal`, `output_format`, \
                 `logs_output_format`, `traces_output_format` and `metrics_output_format`"
                    .into()
            )
        );
        // A signal's own format wins over `output_format`, for that signal only.
        Otlp::configure(vec![
            option("output_format", "otel"),
            option("traces_output_format", "opensearch"),
        ])
        .unwrap();
        let config = CONFIG.with(Cell::get);
        assert!(matches!(config.format(Signal::Traces), Format::Opensearch));
        assert!(matches!(config.format(Signal::Logs), Format::Otel));
        assert_eq!(
            Otlp::configure(vec![option("metrics_output_format", "json")]),
            Err("option `metrics_output_format` must be `opensearch` or `otel`, got `json`".into())
        );
    }
}
