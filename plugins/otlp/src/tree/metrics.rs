//! An `ExportMetricsServiceRequest` to one event per data point, as Data Prepper's
//! `otel_metrics_source` writes them: `JacksonGauge`, `JacksonSum`, `JacksonHistogram`,
//! `JacksonSummary`, `JacksonExponentialHistogram` (`opensearch`), or their `JacksonStandard*`
//! kin (`otel`: also the metric's `metadata`, histograms' `min` and `max`, exponential
//! histograms' `zeroThreshold` and buckets with bounds; no exemplars on a summary).

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::exponential_histogram_data_point::Buckets;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as Number;
use opentelemetry_proto::tonic::metrics::v1::{AggregationTemporality, Exemplar, exemplar, metric};
use serde_json::{Map, Value, json};

use super::common::{Format, Origin, decode, hex, iso_time};
use super::otel;

/// Data Prepper's bounds for the first and last histogram buckets (Java's `Float.MAX_VALUE`).
const FLOAT_MAX: f64 = 3.402_823_466_385_288_6e38;

/// The largest exponential histogram scale (either sign) Data Prepper computes buckets for
/// (`DEFAULT_EXPONENTIAL_HISTOGRAM_MAX_ALLOWED_SCALE`).
const MAX_EXPONENTIAL_SCALE: i32 = 10;

/// The events of one request (protobuf, or OTLP/JSON when `json`), or why it is not one.
pub fn events(payload: &[u8], json: bool, format: Format) -> Result<Vec<Value>, String> {
    let request: ExportMetricsServiceRequest = decode(payload, json, "metrics")?;
    let mut events = Vec::new();
    for rm in &request.resource_metrics {
        for sm in &rm.scope_metrics {
            let origin = Origin {
                resource: rm.resource.as_ref(),
                resource_schema_url: &rm.schema_url,
                scope: sm.scope.as_ref(),
                scope_schema_url: &sm.schema_url,
            };
            for m in &sm.metrics {
                // The fields every data point of this metric shares. A summary's points have
                // no exemplars (`None`): `[]` in `opensearch`, no key in `otel`.
                let point = |kind: &str,
                             start: u64,
                             time: u64,
                             flags: u32,
                             attributes: &[KeyValue],
                             exemplars: Option<&[Exemplar]>| {
                    let mut e = Map::new();
                    e.insert("name".into(), m.name.clone().into());
                    e.insert("description".into(), m.description.clone().into());
                    e.insert("unit".into(), m.unit.clone().into());
                    e.insert("kind".into(), kind.into());
                    e.insert("startTime".into(), iso_time(start).into());
                    e.insert("time".into(), iso_time(time).into());
                    e.insert("schemaUrl".into(), format.schema_url(&origin));
                    e.insert("flags".into(), flags.into());
                    if exemplars.is_some() || format == Format::Opensearch {
                        let list = exemplars.unwrap_or_default();
                        let list = list.iter().map(|x| exemplar_json(x, format)).collect();
                        e.insert("exemplars".into(), list);
                    }
                    if format == Format::Otel {
                        e.insert("metadata".into(), otel::attributes(&m.metadata));
                    }
                    format.attributes(&mut e, "metric.attributes.", attributes);
                    format.origin(&mut e, &origin);
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
                                Some(&p.exemplars),
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
                                Some(&p.exemplars),
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
                                Some(&p.exemplars),
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
                            if format == Format::Otel {
                                // Java's getters: 0.0 when the point has none.
                                e.insert("min".into(), p.min.unwrap_or(0.0).into());
                                e.insert("max".into(), p.max.unwrap_or(0.0).into());
                            }
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
                                None,
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
                                Some(&p.exemplars),
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
                            if format == Format::Otel {
                                e.insert("min".into(), p.min.unwrap_or(0.0).into());
                                e.insert("max".into(), p.max.unwrap_or(0.0).into());
                                e.insert("zeroThreshold".into(), p.zero_threshold.into());
                                e.insert(
                                    "positiveBuckets".into(),
                                    exponential_buckets(pos, p.scale),
                                );
                                e.insert(
                                    "negativeBuckets".into(),
                                    exponential_buckets(neg, p.scale),
                                );
                            }
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

fn exemplar_json(x: &Exemplar, format: Format) -> Value {
    let value = match x.value {
        Some(exemplar::Value::AsDouble(d)) => Value::from(d),
        Some(exemplar::Value::AsInt(i)) => Value::from(i as f64),
        None => Value::Null,
    };
    json!({
        "time": iso_time(x.time_unix_nano),
        "value": value,
        "attributes": format.attribute_map("exemplar.attributes.", &x.filtered_attributes),
        "spanId": hex(&x.span_id),
        "traceId": hex(&x.trace_id),
    })
}

/// An exponential histogram's buckets of one sign, `[{min, max, count}]`, with the bounds
/// Data Prepper gives them (`createExponentialBuckets`): bucket `i` spans
/// `base^(s·(|offset|+i))` to `base^(s·(|offset|+i+1))`, `base = 2^(2^-scale)`, `s` the
/// offset's sign (so with a negative offset the bounds fall, as in Data Prepper). None when
/// the last bound would pass the largest double, or the scale is beyond
/// `MAX_EXPONENTIAL_SCALE` (Data Prepper drops such a point; it is kept here, without buckets).
fn exponential_buckets(buckets: Option<&Buckets>, scale: i32) -> Value {
    let Some(b) = buckets.filter(|_| scale.abs() <= MAX_EXPONENTIAL_SCALE) else {
        return json!([]);
    };
    let base = 2f64.powf(2f64.powf(-f64::from(scale)));
    // Data Prepper's table of bounds holds indices 0..=last.
    let last = (f64::MAX.ln() / base.ln()).round();
    let skip = f64::from(b.offset.unsigned_abs());
    if b.bucket_counts.len() as f64 + skip >= last + 1.0 {
        return json!([]);
    }
    let sign = if b.offset < 0 { -1.0 } else { 1.0 };
    let bound = |k: f64| base.powf(sign * k);
    b.bucket_counts
        .iter()
        .enumerate()
        .map(|(i, count)| {
            let k = skip + i as f64;
            json!({"min": bound(k), "max": bound(k + 1.0), "count": count})
        })
        .collect()
}
