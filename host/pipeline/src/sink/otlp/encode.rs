//! Events back to OTLP: a span, log record or metric data point event, in either shape sluice's
//! OTLP sources (the `otlp` deserializer) and Data Prepper's write them, becomes one
//! `ResourceSpans`, `ResourceLogs` or `ResourceMetrics` holding that one item with its resource
//! and scope (as Data Prepper's `OTelProtoStandardCodec.OTelProtoEncoder` does, one per event).
//!
//! The two shapes: `otel` keeps attributes as maps (`attributes`, `resource: {attributes,
//! schemaUrl, ...}`, `instrumentationScope: {...}`); `opensearch` flattens them into prefixed
//! keys with dots written `@` (`span.attributes.http@method`, `resource.attributes.*`,
//! `instrumentationScope.name`). An event is read as `otel` when its `resource` is an object.
//! What the `opensearch` shape wrote as JSON text (array and map attributes) goes back as that
//! text, a string: the shape does not say it was anything else.

use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, ExponentialHistogram, ExponentialHistogramDataPoint, Gauge,
    Histogram, HistogramDataPoint, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
    Summary, SummaryDataPoint, exemplar, exponential_histogram_data_point, metric,
    number_data_point, summary_data_point,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::{Event as SpanEvent, Link, SpanKind};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use serde_json::{Map, Value};

/// Why an event cannot be made into its OTLP item (it goes to the dead-letter file).
pub(crate) type Refusal = String;

/// Which of the two shapes an event has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Otel,
    Opensearch,
}

/// A span event as one `ResourceSpans`.
pub(crate) fn span(e: &Map<String, Value>) -> Result<ResourceSpans, Refusal> {
    let shape = shape(e);
    let trace_id = id(e, "traceId", 16)?;
    let span_id = id(e, "spanId", 8)?;
    if trace_id.is_empty() || span_id.is_empty() {
        return Err("a span needs `traceId` and `spanId`".into());
    }
    let status = match shape {
        Shape::Otel => e.get("status").and_then(Value::as_object).map(|s| Status {
            code: int(s, "code") as i32,
            message: text(s, "message"),
        }),
        Shape::Opensearch => Some(Status {
            code: int(e, "status.code") as i32,
            message: text(e, "status.message"),
        }),
    };
    let events = list(e, "events")
        .map(|ev| {
            Ok(SpanEvent {
                name: text(ev, "name"),
                time_unix_nano: time(ev, "time")?,
                attributes: map_attributes(ev.get("attributes"), "", shape),
                dropped_attributes_count: int(ev, "droppedAttributesCount") as u32,
            })
        })
        .collect::<Result<_, Refusal>>()?;
    let links = list(e, "links")
        .map(|l| {
            Ok(Link {
                trace_id: id(l, "traceId", 16)?,
                span_id: id(l, "spanId", 8)?,
                trace_state: text(l, "traceState"),
                attributes: map_attributes(l.get("attributes"), "", shape),
                dropped_attributes_count: int(l, "droppedAttributesCount") as u32,
                ..Default::default()
            })
        })
        .collect::<Result<_, Refusal>>()?;
    let span = Span {
        trace_id,
        span_id,
        trace_state: text(e, "traceState"),
        parent_span_id: id(e, "parentSpanId", 8)?,
        flags: int(e, "flags") as u32,
        name: text(e, "name"),
        kind: e
            .get("kind")
            .and_then(Value::as_str)
            .and_then(SpanKind::from_str_name)
            .map_or(0, |k| k as i32),
        start_time_unix_nano: time(e, "startTime")?,
        end_time_unix_nano: time(e, "endTime")?,
        attributes: attributes(e, "span.attributes.", shape),
        dropped_attributes_count: int(e, "droppedAttributesCount") as u32,
        events,
        dropped_events_count: int(e, "droppedEventsCount") as u32,
        links,
        dropped_links_count: int(e, "droppedLinksCount") as u32,
        status,
    };
    let origin = origin(e, shape);
    Ok(ResourceSpans {
        resource: origin.resource,
        scope_spans: vec![ScopeSpans {
            scope: origin.scope,
            spans: vec![span],
            schema_url: origin.scope_schema_url,
        }],
        schema_url: origin.resource_schema_url,
    })
}

/// A log record event as one `ResourceLogs`.
pub(crate) fn log(e: &Map<String, Value>) -> Result<ResourceLogs, Refusal> {
    let shape = shape(e);
    let record = LogRecord {
        time_unix_nano: time(e, "time")?,
        observed_time_unix_nano: time(e, "observedTimestamp")?,
        severity_number: int(e, "severityNumber") as i32,
        severity_text: text(e, "severityText"),
        body: e.get("body").filter(|b| !b.is_null()).map(any),
        attributes: attributes(e, "log.attributes.", shape),
        dropped_attributes_count: int(e, "droppedAttributesCount") as u32,
        flags: int(e, "flags") as u32,
        trace_id: id(e, "traceId", 16)?,
        span_id: id(e, "spanId", 8)?,
        ..Default::default()
    };
    let origin = origin(e, shape);
    Ok(ResourceLogs {
        resource: origin.resource,
        scope_logs: vec![ScopeLogs {
            scope: origin.scope,
            log_records: vec![record],
            schema_url: origin.scope_schema_url,
        }],
        schema_url: origin.resource_schema_url,
    })
}

/// A metric data point event (`kind`: `GAUGE`, `SUM`, `HISTOGRAM`, `SUMMARY`,
/// `EXPONENTIAL_HISTOGRAM`) as one `ResourceMetrics`.
pub(crate) fn metric(e: &Map<String, Value>) -> Result<ResourceMetrics, Refusal> {
    let shape = shape(e);
    let attributes = attributes(e, "metric.attributes.", shape);
    let (start_time_unix_nano, time_unix_nano) = (time(e, "startTime")?, time(e, "time")?);
    let flags = int(e, "flags") as u32;
    let exemplars = list(e, "exemplars")
        .map(|x| {
            Ok(opentelemetry_proto::tonic::metrics::v1::Exemplar {
                filtered_attributes: map_attributes(
                    x.get("attributes"),
                    "exemplar.attributes.",
                    shape,
                ),
                time_unix_nano: time(x, "time")?,
                span_id: id(x, "spanId", 8)?,
                trace_id: id(x, "traceId", 16)?,
                value: x.get("value").and_then(Value::as_f64).map(exemplar::Value::AsDouble),
            })
        })
        .collect::<Result<Vec<_>, Refusal>>()?;
    let temporality = e
        .get("aggregationTemporality")
        .and_then(Value::as_str)
        .and_then(AggregationTemporality::from_str_name)
        .map_or(0, |t| t as i32);
    let kind = e.get("kind").and_then(Value::as_str).unwrap_or_default();
    let data = match kind {
        "GAUGE" | "SUM" => {
            let points = vec![NumberDataPoint {
                attributes,
                start_time_unix_nano,
                time_unix_nano,
                exemplars,
                flags,
                value: e
                    .get("value")
                    .and_then(Value::as_f64)
                    .map(number_data_point::Value::AsDouble),
            }];
            if kind == "GAUGE" {
                metric::Data::Gauge(Gauge {
                    data_points: points,
                })
            } else {
                metric::Data::Sum(Sum {
                    data_points: points,
                    aggregation_temporality: temporality,
                    is_monotonic: e.get("isMonotonic").and_then(Value::as_bool) == Some(true),
                })
            }
        }
        "HISTOGRAM" => metric::Data::Histogram(Histogram {
            data_points: vec![HistogramDataPoint {
                attributes,
                start_time_unix_nano,
                time_unix_nano,
                count: int(e, "count") as u64,
                sum: e.get("sum").and_then(Value::as_f64),
                bucket_counts: numbers(e, "bucketCountsList", Value::as_u64),
                explicit_bounds: numbers(e, "explicitBounds", Value::as_f64),
                exemplars,
                flags,
                min: e.get("min").and_then(Value::as_f64),
                max: e.get("max").and_then(Value::as_f64),
            }],
            aggregation_temporality: temporality,
        }),
        "SUMMARY" => metric::Data::Summary(Summary {
            data_points: vec![SummaryDataPoint {
                attributes,
                start_time_unix_nano,
                time_unix_nano,
                count: int(e, "count") as u64,
                sum: e.get("sum").and_then(Value::as_f64).unwrap_or(0.0),
                quantile_values: list(e, "quantiles")
                    .map(|q| summary_data_point::ValueAtQuantile {
                        quantile: q.get("quantile").and_then(Value::as_f64).unwrap_or(0.0),
                        value: q.get("value").and_then(Value::as_f64).unwrap_or(0.0),
                    })
                    .collect(),
                flags,
            }],
        }),
        "EXPONENTIAL_HISTOGRAM" => {
            let buckets = |counts: &str, offset: &str| {
                let bucket_counts = numbers(e, counts, Value::as_u64);
                let offset = int(e, offset) as i32;
                (!bucket_counts.is_empty() || offset != 0).then_some(
                    exponential_histogram_data_point::Buckets {
                        offset,
                        bucket_counts,
                    },
                )
            };
            metric::Data::ExponentialHistogram(ExponentialHistogram {
                data_points: vec![ExponentialHistogramDataPoint {
                    attributes,
                    start_time_unix_nano,
                    time_unix_nano,
                    count: int(e, "count") as u64,
                    sum: e.get("sum").and_then(Value::as_f64),
                    scale: int(e, "scale") as i32,
                    zero_count: int(e, "zeroCount") as u64,
                    positive: buckets("positive", "positiveOffset"),
                    negative: buckets("negative", "negativeOffset"),
                    flags,
                    exemplars,
                    min: e.get("min").and_then(Value::as_f64),
                    max: e.get("max").and_then(Value::as_f64),
                    zero_threshold: e
                        .get("zeroThreshold")
                        .and_then(Value::as_f64)
                        .unwrap_or(0.0),
                }],
                aggregation_temporality: temporality,
            })
        }
        other => {
            return Err(format!(
                "a metric's `kind` is `{other}`; expected GAUGE, SUM, HISTOGRAM, SUMMARY or \
                 EXPONENTIAL_HISTOGRAM"
            ));
        }
    };
    let metric = Metric {
        name: text(e, "name"),
        description: text(e, "description"),
        unit: text(e, "unit"),
        metadata: map_attributes(e.get("metadata"), "", shape),
        data: Some(data),
    };
    let origin = origin(e, shape);
    Ok(ResourceMetrics {
        resource: origin.resource,
        scope_metrics: vec![ScopeMetrics {
            scope: origin.scope,
            metrics: vec![metric],
            schema_url: origin.scope_schema_url,
        }],
        schema_url: origin.resource_schema_url,
    })
}

fn shape(e: &Map<String, Value>) -> Shape {
    if e.get("resource").is_some_and(Value::is_object) {
        Shape::Otel
    } else {
        Shape::Opensearch
    }
}

/// An item's resource and scope, with their schema URLs.
struct Origin {
    resource: Option<Resource>,
    resource_schema_url: String,
    scope: Option<InstrumentationScope>,
    scope_schema_url: String,
}

fn origin(e: &Map<String, Value>, shape: Shape) -> Origin {
    match shape {
        Shape::Otel => {
            let r = e.get("resource").and_then(Value::as_object);
            let s = e.get("instrumentationScope").and_then(Value::as_object);
            Origin {
                resource: r.map(|r| Resource {
                    attributes: map_attributes(r.get("attributes"), "", shape),
                    dropped_attributes_count: int(r, "droppedAttributesCount") as u32,
                    ..Default::default()
                }),
                resource_schema_url: r.map(|r| text(r, "schemaUrl")).unwrap_or_default(),
                scope: s.map(|s| InstrumentationScope {
                    name: text(s, "name"),
                    version: text(s, "version"),
                    attributes: map_attributes(s.get("attributes"), "", shape),
                    dropped_attributes_count: int(s, "droppedAttributesCount") as u32,
                }),
                scope_schema_url: text(e, "schemaUrl"),
            }
        }
        Shape::Opensearch => {
            let mut resource = flat(e, "resource.attributes.");
            // `serviceName` is the resource's `service.name`; kept if only it is left.
            if let Some(name) = e.get("serviceName").filter(|v| !v.is_null())
                && !resource.iter().any(|kv| kv.key == "service.name")
            {
                resource.push(KeyValue {
                    key: "service.name".into(),
                    value: Some(any(name)),
                    ..Default::default()
                });
            }
            let scope = InstrumentationScope {
                name: text(e, "instrumentationScope.name"),
                version: text(e, "instrumentationScope.version"),
                attributes: flat(e, "instrumentationScope.attributes."),
                dropped_attributes_count: 0,
            };
            let empty = scope == InstrumentationScope::default();
            Origin {
                resource: Some(Resource {
                    attributes: resource,
                    ..Default::default()
                }),
                resource_schema_url: text(e, "schemaUrl"),
                scope: (!empty).then_some(scope),
                scope_schema_url: String::new(),
            }
        }
    }
}

/// An item's own attributes: the map `attributes` (`otel`), or the keys under `prefix`.
fn attributes(e: &Map<String, Value>, prefix: &str, shape: Shape) -> Vec<KeyValue> {
    match shape {
        Shape::Otel => map_attributes(e.get("attributes"), "", shape),
        Shape::Opensearch => flat(e, prefix),
    }
}

/// The keys of `e` under `prefix`, the prefix taken off and `@` written `.` again.
fn flat(e: &Map<String, Value>, prefix: &str) -> Vec<KeyValue> {
    e.iter()
        .filter_map(|(k, v)| {
            let key = k.strip_prefix(prefix)?;
            Some(KeyValue {
                key: key.replace('@', "."),
                value: Some(any(v)),
                ..Default::default()
            })
        })
        .collect()
}

/// Attributes kept as a map; in the `opensearch` shape its keys may carry `prefix` and `@`.
fn map_attributes(map: Option<&Value>, prefix: &str, shape: Shape) -> Vec<KeyValue> {
    let Some(map) = map.and_then(Value::as_object) else {
        return Vec::new();
    };
    map.iter()
        .map(|(k, v)| KeyValue {
            key: match shape {
                Shape::Otel => k.clone(),
                Shape::Opensearch => k.strip_prefix(prefix).unwrap_or(k).replace('@', "."),
            },
            value: Some(any(v)),
            ..Default::default()
        })
        .collect()
}

/// A JSON value as an OTLP value: integers as ints, other numbers as doubles, arrays and
/// objects nested, `null` as an empty value.
fn any(v: &Value) -> AnyValue {
    let value = match v {
        Value::Null => None,
        Value::Bool(b) => Some(Any::BoolValue(*b)),
        Value::Number(n) => Some(match n.as_i64() {
            Some(i) => Any::IntValue(i),
            None => Any::DoubleValue(n.as_f64().unwrap_or(0.0)),
        }),
        Value::String(s) => Some(Any::StringValue(s.clone())),
        Value::Array(a) => Some(Any::ArrayValue(ArrayValue {
            values: a.iter().map(any).collect(),
        })),
        Value::Object(o) => Some(Any::KvlistValue(KeyValueList {
            values: o
                .iter()
                .map(|(k, v)| KeyValue {
                    key: k.clone(),
                    value: Some(any(v)),
                    ..Default::default()
                })
                .collect(),
        })),
    };
    AnyValue { value }
}

fn text(e: &Map<String, Value>, key: &str) -> String {
    e.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn int(e: &Map<String, Value>, key: &str) -> i64 {
    e.get(key).and_then(Value::as_i64).unwrap_or(0)
}

fn list<'a>(e: &'a Map<String, Value>, key: &str) -> impl Iterator<Item = &'a Map<String, Value>> {
    e.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
}

fn numbers<T>(e: &Map<String, Value>, key: &str, read: fn(&Value) -> Option<T>) -> Vec<T> {
    e.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(read)
        .collect()
}

/// An id written in hex (`traceId`: 16 bytes, `spanId`: 8); empty when absent or `""`.
fn id(e: &Map<String, Value>, key: &str, len: usize) -> Result<Vec<u8>, Refusal> {
    let Some(text) = e.get(key).and_then(Value::as_str).filter(|t| !t.is_empty()) else {
        return Ok(Vec::new());
    };
    match hex::decode(text) {
        Ok(bytes) if bytes.len() == len => Ok(bytes),
        _ => Err(format!("`{key}` `{text}` is not {len} bytes in hex")),
    }
}

/// A time as Data Prepper writes it (`2024-05-06T07:08:09.123Z`) in nanoseconds since the
/// epoch; 0 when absent (OTLP's "unknown"), refused when it is not a time.
fn time(e: &Map<String, Value>, key: &str) -> Result<u64, Refusal> {
    let Some(v) = e.get(key).filter(|v| !v.is_null()) else {
        return Ok(0);
    };
    let parsed = v
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .and_then(|t| t.timestamp_nanos_opt())
        .and_then(|n| u64::try_from(n).ok());
    parsed.ok_or_else(|| format!("`{key}` is `{v}`, not an ISO-8601 time after 1970"))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn an_opensearch_span_keeps_its_ids_times_attributes_and_resource() {
        let e = object(json!({
            "traceId": "0102030405060708090a0b0c0d0e0f10",
            "spanId": "0102030405060708",
            "parentSpanId": "",
            "name": "GET /",
            "kind": "SPAN_KIND_SERVER",
            "startTime": "2023-11-14T22:13:20.123456789Z",
            "endTime": "2023-11-14T22:13:21Z",
            "span.attributes.http@method": "GET",
            "span.attributes.retries": 3,
            "resource.attributes.service@name": "checkout",
            "serviceName": "checkout",
            "instrumentationScope.name": "lib",
            "status.code": 2,
            "status.message": "boom",
            "events": [{"name": "ev", "time": "2023-11-14T22:13:20.5Z",
                        "attributes": {"k@1": "v"}, "droppedAttributesCount": 1}],
        }));
        let rs = span(&e).unwrap();
        let s = &rs.scope_spans[0].spans[0];
        assert_eq!(s.trace_id, (1..=16).collect::<Vec<u8>>());
        assert_eq!(s.start_time_unix_nano, 1_700_000_000_123_456_789);
        assert_eq!(s.end_time_unix_nano, 1_700_000_001_000_000_000);
        assert_eq!(s.kind, SpanKind::Server as i32);
        assert!(s.parent_span_id.is_empty());
        let keys: Vec<_> = s.attributes.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(keys, ["http.method", "retries"]);
        assert_eq!(
            s.attributes[1].value.as_ref().unwrap().value,
            Some(Any::IntValue(3))
        );
        assert_eq!(s.status.as_ref().unwrap().code, 2);
        assert_eq!(s.status.as_ref().unwrap().message, "boom");
        assert_eq!(s.events[0].attributes[0].key, "k.1");
        assert_eq!(s.events[0].dropped_attributes_count, 1);
        let resource = rs.resource.unwrap();
        assert_eq!(resource.attributes.len(), 1, "serviceName is not added twice");
        assert_eq!(resource.attributes[0].key, "service.name");
        assert_eq!(rs.scope_spans[0].scope.as_ref().unwrap().name, "lib");
    }

    #[test]
    fn an_otel_log_keeps_nested_values_and_both_schema_urls() {
        let e = object(json!({
            "time": "2023-11-14T22:13:20Z",
            "observedTimestamp": "2023-11-14T22:13:20.001Z",
            "severityNumber": 9,
            "severityText": "INFO",
            "body": {"msg": ["a", 1, 2.5, true]},
            "attributes": {"user.id": 42},
            "schemaUrl": "https://scope",
            "resource": {"attributes": {"service.name": "svc"}, "schemaUrl": "https://res",
                         "droppedAttributesCount": 2},
            "instrumentationScope": {"name": "s", "version": "1", "droppedAttributesCount": 0},
            "traceId": "",
            "spanId": "",
        }));
        let rl = log(&e).unwrap();
        assert_eq!(rl.schema_url, "https://res");
        assert_eq!(rl.scope_logs[0].schema_url, "https://scope");
        assert_eq!(rl.resource.as_ref().unwrap().dropped_attributes_count, 2);
        let r = &rl.scope_logs[0].log_records[0];
        assert_eq!(r.severity_number, 9);
        assert_eq!(r.observed_time_unix_nano, 1_700_000_000_001_000_000);
        let Some(Any::KvlistValue(body)) = &r.body.as_ref().unwrap().value else {
            panic!("body is a map: {:?}", r.body)
        };
        let Some(Any::ArrayValue(a)) = &body.values[0].value.as_ref().unwrap().value else {
            panic!("an array")
        };
        assert_eq!(
            a.values.iter().map(|v| v.value.clone().unwrap()).collect::<Vec<_>>(),
            [
                Any::StringValue("a".into()),
                Any::IntValue(1),
                Any::DoubleValue(2.5),
                Any::BoolValue(true)
            ]
        );
        assert_eq!(r.attributes[0].key, "user.id");
    }

    #[test]
    fn a_histogram_point_keeps_its_buckets() {
        let e = object(json!({
            "name": "latency", "unit": "ms", "kind": "HISTOGRAM",
            "time": "2023-11-14T22:13:20Z", "startTime": "2023-11-14T22:13:10Z",
            "sum": 12.5, "count": 3, "bucketCountsList": [1, 2, 0],
            "explicitBounds": [1.0, 10.0],
            "aggregationTemporality": "AGGREGATION_TEMPORALITY_CUMULATIVE",
            "metric.attributes.route": "/a",
            "exemplars": [],
        }));
        let rm = metric(&e).unwrap();
        let m = &rm.scope_metrics[0].metrics[0];
        let Some(metric::Data::Histogram(h)) = &m.data else {
            panic!("a histogram")
        };
        assert_eq!(h.aggregation_temporality, 2);
        let p = &h.data_points[0];
        assert_eq!((p.count, p.sum), (3, Some(12.5)));
        assert_eq!(p.bucket_counts, [1, 2, 0]);
        assert_eq!(p.explicit_bounds, [1.0, 10.0]);
        assert_eq!(p.attributes[0].key, "route");
    }

    #[test]
    fn what_is_no_item_is_refused_with_the_reason() {
        assert!(span(&object(json!({"name": "x"}))).unwrap_err().contains("traceId"));
        let bad = json!({"traceId": "zz", "spanId": "0102030405060708"});
        assert!(span(&object(bad)).unwrap_err().contains("`traceId` `zz`"));
        let when = json!({"time": "yesterday"});
        assert!(log(&object(when)).unwrap_err().contains("`time`"));
        assert!(metric(&object(json!({"kind": "BAR"}))).unwrap_err().contains("BAR"));
    }
}
