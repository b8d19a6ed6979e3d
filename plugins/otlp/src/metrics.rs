//! An `ExportMetricsServiceRequest` to one event per data point, as Data Prepper's
//! `otel_metrics_source` writes them in its `opensearch` format (`JacksonGauge`, `JacksonSum`,
//! `JacksonHistogram`, `JacksonSummary`, `JacksonExponentialHistogram`).

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as Number;
use opentelemetry_proto::tonic::metrics::v1::{AggregationTemporality, Exemplar, exemplar, metric};
use serde_json::{Map, Value, json};

use crate::common::{decode, flatten, hex, iso_time, resource_and_scope, service_name};

/// Data Prepper's bounds for the first and last histogram buckets (Java's `Float.MAX_VALUE`).
const FLOAT_MAX: f64 = 3.402_823_466_385_288_6e38;

/// The events of one request (protobuf, or OTLP/JSON when `json`), or why it is not one.
pub fn events(payload: &[u8], json: bool) -> Result<Vec<Value>, String> {
    let request: ExportMetricsServiceRequest = decode(payload, json, "metrics")?;
    let mut events = Vec::new();
    for rm in &request.resource_metrics {
        let resource = rm.resource.as_ref();
        let service = service_name(resource);
        for sm in &rm.scope_metrics {
            for m in &sm.metrics {
                // The fields every data point of this metric shares.
                let point = |kind: &str,
                             start: u64,
                             time: u64,
                             flags: u32,
                             attributes: &[KeyValue],
                             exemplars: &[Exemplar]| {
                    let mut e = Map::new();
                    e.insert("name".into(), m.name.clone().into());
                    e.insert("description".into(), m.description.clone().into());
                    e.insert("unit".into(), m.unit.clone().into());
                    e.insert("kind".into(), kind.into());
                    e.insert("startTime".into(), iso_time(start).into());
                    e.insert("time".into(), iso_time(time).into());
                    e.insert("serviceName".into(), service.clone());
                    e.insert("schemaUrl".into(), rm.schema_url.clone().into());
                    e.insert("flags".into(), flags.into());
                    e.insert(
                        "exemplars".into(),
                        exemplars.iter().map(exemplar_json).collect(),
                    );
                    flatten(&mut e, "metric.attributes.", attributes);
                    resource_and_scope(&mut e, resource, sm.scope.as_ref());
                    e
                };
                match &m.data {
                    None => {}
                    Some(metric::Data::Gauge(g)) => {
                        for p in &g.data_points {
                            let mut e = point(
                                "GAUGE",
                                p.start_time_unix_nano,
                                p.time_unix_nano,
                                p.flags,
                                &p.attributes,
                                &p.exemplars,
                            );
                            e.insert("value".into(), number(p.value.as_ref()));
                            events.push(Value::Object(e));
                        }
                    }
                    Some(metric::Data::Sum(s)) => {
                        for p in &s.data_points {
                            let mut e = point(
                                "SUM",
                                p.start_time_unix_nano,
                                p.time_unix_nano,
                                p.flags,
                                &p.attributes,
                                &p.exemplars,
                            );
                            e.insert("value".into(), number(p.value.as_ref()));
                            e.insert("isMonotonic".into(), s.is_monotonic.into());
                            e.insert(
                                "aggregationTemporality".into(),
                                temporality(s.aggregation_temporality),
                            );
                            events.push(Value::Object(e));
                        }
                    }
                    Some(metric::Data::Histogram(h)) => {
                        for p in &h.data_points {
                            let mut e = point(
                                "HISTOGRAM",
                                p.start_time_unix_nano,
                                p.time_unix_nano,
                                p.flags,
                                &p.attributes,
                                &p.exemplars,
                            );
                            e.insert("sum".into(), p.sum.unwrap_or(0.0).into());
                            e.insert("count".into(), p.count.into());
                            e.insert(
                                "aggregationTemporality".into(),
                                temporality(h.aggregation_temporality),
                            );
                            e.insert("bucketCounts".into(), p.bucket_counts.len().into());
                            e.insert("bucketCountsList".into(), p.bucket_counts.clone().into());
                            e.insert("explicitBoundsCount".into(), p.explicit_bounds.len().into());
                            e.insert("explicitBounds".into(), p.explicit_bounds.clone().into());
                            e.insert(
                                "buckets".into(),
                                buckets(&p.bucket_counts, &p.explicit_bounds),
                            );
                            events.push(Value::Object(e));
                        }
                    }
                    Some(metric::Data::Summary(s)) => {
                        for p in &s.data_points {
                            let mut e = point(
                                "SUMMARY",
                                p.start_time_unix_nano,
                                p.time_unix_nano,
                                p.flags,
                                &p.attributes,
                                &[],
                            );
                            e.insert("sum".into(), p.sum.into());
                            e.insert("count".into(), p.count.into());
                            e.insert(
                                "quantiles".into(),
                                p.quantile_values
                                    .iter()
                                    .map(|q| json!({"quantile": q.quantile, "value": q.value}))
                                    .collect(),
                            );
                            e.insert("quantileValuesCount".into(), p.quantile_values.len().into());
                            events.push(Value::Object(e));
                        }
                    }
                    Some(metric::Data::ExponentialHistogram(h)) => {
                        for p in &h.data_points {
                            let mut e = point(
                                "EXPONENTIAL_HISTOGRAM",
                                p.start_time_unix_nano,
                                p.time_unix_nano,
                                p.flags,
                                &p.attributes,
                                &p.exemplars,
                            );
                            e.insert("sum".into(), p.sum.unwrap_or(0.0).into());
                            e.insert("count".into(), p.count.into());
                            e.insert("scale".into(), p.scale.into());
                            e.insert("zeroCount".into(), p.zero_count.into());
                            let (pos, neg) = (p.positive.as_ref(), p.negative.as_ref());
                            e.insert(
                                "positive".into(),
                                pos.map_or(Vec::new(), |b| b.bucket_counts.clone()).into(),
                            );
                            e.insert(
                                "negative".into(),
                                neg.map_or(Vec::new(), |b| b.bucket_counts.clone()).into(),
                            );
                            e.insert("positiveOffset".into(), pos.map_or(0, |b| b.offset).into());
                            e.insert("negativeOffset".into(), neg.map_or(0, |b| b.offset).into());
                            e.insert(
                                "aggregationTemporality".into(),
                                temporality(h.aggregation_temporality),
                            );
                            events.push(Value::Object(e));
                        }
                    }
                }
            }
        }
    }
    Ok(events)
}

/// A number data point's value as a double (integers converted), as Data Prepper keeps it.
fn number(v: Option<&Number>) -> Value {
    match v {
        Some(Number::AsDouble(d)) => Value::from(*d),
        Some(Number::AsInt(i)) => Value::from(*i as f64),
        None => Value::Null,
    }
}

fn temporality(t: i32) -> Value {
    AggregationTemporality::try_from(t)
        .map_or("AGGREGATION_TEMPORALITY_UNSPECIFIED", |t| t.as_str_name())
        .into()
}

/// `[{min, max, count}]` per bucket, the outer bounds ±`Float.MAX_VALUE`.
fn buckets(counts: &[u64], bounds: &[f64]) -> Value {
    counts
        .iter()
        .enumerate()
        .map(|(i, count)| {
            let min = if i == 0 {
                -FLOAT_MAX
            } else {
                bounds.get(i - 1).copied().unwrap_or(FLOAT_MAX)
            };
            let max = bounds.get(i).copied().unwrap_or(FLOAT_MAX);
            json!({"min": min, "max": max, "count": count})
        })
        .collect()
}

fn exemplar_json(x: &Exemplar) -> Value {
    let mut attributes = Map::new();
    flatten(
        &mut attributes,
        "exemplar.attributes.",
        &x.filtered_attributes,
    );
    let value = match x.value {
        Some(exemplar::Value::AsDouble(d)) => Value::from(d),
        Some(exemplar::Value::AsInt(i)) => Value::from(i as f64),
        None => Value::Null,
    };
    json!({
        "time": iso_time(x.time_unix_nano),
        "value": value,
        "attributes": attributes,
        "spanId": hex(&x.span_id),
        "traceId": hex(&x.trace_id),
    })
}
