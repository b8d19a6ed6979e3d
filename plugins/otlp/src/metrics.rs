//! An `ExportMetricsServiceRequest` to one event per data point, as Data Prepper's
//! `otel_metrics_source` writes them: `JacksonGauge`, `JacksonSum`, `JacksonHistogram`,
//! `JacksonSummary`, `JacksonExponentialHistogram` (`opensearch`), or their `JacksonStandard*`
//! kin (`otel`: also the metric's `metadata`, histograms' `min` and `max`, exponential
//! histograms' `zeroThreshold` and buckets with bounds; no exemplars on a summary).

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::metrics::v1::exponential_histogram_data_point::Buckets;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as Number;
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, Exemplar, Metric, exemplar, metric,
};

use super::common::{Format, Origin, decode};
use super::write::{Events, Object, Value, array, double, number};

/// Data Prepper's bounds for the first and last histogram buckets (Java's `Float.MAX_VALUE`).
const FLOAT_MAX: f64 = 3.402_823_466_385_288_6e38;

/// The largest exponential histogram scale (either sign) Data Prepper computes buckets for
/// (`DEFAULT_EXPONENTIAL_HISTOGRAM_MAX_ALLOWED_SCALE`).
const MAX_EXPONENTIAL_SCALE: i32 = 10;

/// Something written by a function (a list of exemplars, of buckets).
type Writes<'a> = &'a dyn Fn(&mut Vec<u8>);

/// Writes the events of one request (protobuf, or OTLP/JSON when `json`) into `events`: how
/// many, or why it is not one (then nothing is written).
pub(crate) fn events(
    payload: &[u8],
    json: bool,
    format: Format,
    events: &mut Events,
) -> Result<u32, String> {
    let request: ExportMetricsServiceRequest = decode(payload, json, "metrics")?;
    let mut count = 0;
    for rm in &request.resource_metrics {
        for sm in &rm.scope_metrics {
            let origin = Origin {
                resource: rm.resource.as_ref(),
                resource_schema_url: &rm.schema_url,
                scope: sm.scope.as_ref(),
                scope_schema_url: &sm.schema_url,
            };
            for m in &sm.metrics {
                match &m.data {
                    None => {}
                    Some(metric::Data::Gauge(g)) => {
                        for p in &g.data_points {
                            let ex = |out: &mut Vec<u8>| exemplars(out, &p.exemplars, format);
                            let mut e = Object::new();
                            let (start, time) = (p.start_time_unix_nano, p.time_unix_nano);
                            point(&mut e, m, &origin, format, "GAUGE", (start, time), p.flags, Some(&ex));
                            format.attributes(&mut e, "metric.attributes.", &p.attributes);
                            e.put("value", value(p.value.as_ref()));
                            events.push(e);
                            count += 1;
                        }
                    }
                    Some(metric::Data::Sum(s)) => {
                        for p in &s.data_points {
                            let ex = |out: &mut Vec<u8>| exemplars(out, &p.exemplars, format);
                            let mut e = Object::new();
                            let (start, time) = (p.start_time_unix_nano, p.time_unix_nano);
                            point(&mut e, m, &origin, format, "SUM", (start, time), p.flags, Some(&ex));
                            format.attributes(&mut e, "metric.attributes.", &p.attributes);
                            e.put("value", value(p.value.as_ref()));
                            e.put("isMonotonic", Value::Bool(s.is_monotonic));
                            e.put(
                                "aggregationTemporality",
                                temporality(s.aggregation_temporality),
                            );
                            events.push(e);
                            count += 1;
                        }
                    }
                    Some(metric::Data::Histogram(h)) => {
                        for p in &h.data_points {
                            let ex = |out: &mut Vec<u8>| exemplars(out, &p.exemplars, format);
                            let counts = |out: &mut Vec<u8>| u64s(out, &p.bucket_counts);
                            let bounds = |out: &mut Vec<u8>| f64s(out, &p.explicit_bounds);
                            let list =
                                |out: &mut Vec<u8>| buckets(out, &p.bucket_counts, &p.explicit_bounds);
                            let mut e = Object::new();
                            let (start, time) = (p.start_time_unix_nano, p.time_unix_nano);
                            point(&mut e, m, &origin, format, "HISTOGRAM", (start, time), p.flags, Some(&ex));
                            format.attributes(&mut e, "metric.attributes.", &p.attributes);
                            e.put("sum", Value::F64(p.sum.unwrap_or(0.0)));
                            e.put("count", Value::U64(p.count));
                            e.put(
                                "aggregationTemporality",
                                temporality(h.aggregation_temporality),
                            );
                            e.put("bucketCounts", Value::U64(p.bucket_counts.len() as u64));
                            e.put("bucketCountsList", Value::With(&counts));
                            e.put(
                                "explicitBoundsCount",
                                Value::U64(p.explicit_bounds.len() as u64),
                            );
                            e.put("explicitBounds", Value::With(&bounds));
                            e.put("buckets", Value::With(&list));
                            if format == Format::Otel {
                                // Java's getters: 0.0 when the point has none.
                                e.put("min", Value::F64(p.min.unwrap_or(0.0)));
                                e.put("max", Value::F64(p.max.unwrap_or(0.0)));
                            }
                            events.push(e);
                            count += 1;
                        }
                    }
                    Some(metric::Data::Summary(s)) => {
                        for p in &s.data_points {
                            let quantiles = |out: &mut Vec<u8>| {
                                array(out, &p.quantile_values, |out, q| {
                                    let mut o = Object::new();
                                    o.put("quantile", Value::F64(q.quantile));
                                    o.put("value", Value::F64(q.value));
                                    o.write(out);
                                });
                            };
                            let mut e = Object::new();
                            let (start, time) = (p.start_time_unix_nano, p.time_unix_nano);
                            point(&mut e, m, &origin, format, "SUMMARY", (start, time), p.flags, None);
                            format.attributes(&mut e, "metric.attributes.", &p.attributes);
                            e.put("sum", Value::F64(p.sum));
                            e.put("count", Value::U64(p.count));
                            e.put("quantiles", Value::With(&quantiles));
                            e.put(
                                "quantileValuesCount",
                                Value::U64(p.quantile_values.len() as u64),
                            );
                            events.push(e);
                            count += 1;
                        }
                    }
                    Some(metric::Data::ExponentialHistogram(h)) => {
                        for p in &h.data_points {
                            let (pos, neg) = (p.positive.as_ref(), p.negative.as_ref());
                            let ex = |out: &mut Vec<u8>| exemplars(out, &p.exemplars, format);
                            let positive =
                                |out: &mut Vec<u8>| u64s(out, pos.map_or(&[], |b| &b.bucket_counts));
                            let negative =
                                |out: &mut Vec<u8>| u64s(out, neg.map_or(&[], |b| &b.bucket_counts));
                            let positive_buckets =
                                |out: &mut Vec<u8>| exponential_buckets(out, pos, p.scale);
                            let negative_buckets =
                                |out: &mut Vec<u8>| exponential_buckets(out, neg, p.scale);
                            let mut e = Object::new();
                            let (start, time) = (p.start_time_unix_nano, p.time_unix_nano);
                            point(&mut e, m, &origin, format, "EXPONENTIAL_HISTOGRAM", (start, time), p.flags, Some(&ex));
                            format.attributes(&mut e, "metric.attributes.", &p.attributes);
                            e.put("sum", Value::F64(p.sum.unwrap_or(0.0)));
                            e.put("count", Value::U64(p.count));
                            e.put("scale", Value::I64(p.scale.into()));
                            e.put("zeroCount", Value::U64(p.zero_count));
                            e.put("positive", Value::With(&positive));
                            e.put("negative", Value::With(&negative));
                            e.put("positiveOffset", Value::I64(pos.map_or(0, |b| b.offset).into()));
                            e.put("negativeOffset", Value::I64(neg.map_or(0, |b| b.offset).into()));
                            e.put(
                                "aggregationTemporality",
                                temporality(h.aggregation_temporality),
                            );
                            if format == Format::Otel {
                                e.put("min", Value::F64(p.min.unwrap_or(0.0)));
                                e.put("max", Value::F64(p.max.unwrap_or(0.0)));
                                e.put("zeroThreshold", Value::F64(p.zero_threshold));
                                e.put("positiveBuckets", Value::With(&positive_buckets));
                                e.put("negativeBuckets", Value::With(&negative_buckets));
                            }
                            events.push(e);
                            count += 1;
                        }
                    }
                }
            }
        }
    }
    Ok(count)
}

/// The fields every data point of metric `m` shares. A summary's points have no exemplars
/// (`None`): `[]` in `opensearch`, no key in `otel`.
#[allow(clippy::too_many_arguments, reason = "the fields of a data point, each its own")]
fn point<'a>(
    e: &mut Object<'a>,
    m: &'a Metric,
    origin: &Origin<'a>,
    format: Format,
    kind: &'static str,
    (start, time): (u64, u64),
    flags: u32,
    exemplars: Option<Writes<'a>>,
) {
    e.put("name", Value::Str(&m.name));
    e.put("description", Value::Str(&m.description));
    e.put("unit", Value::Str(&m.unit));
    e.put("kind", Value::Str(kind));
    e.put("startTime", Value::Time(start));
    e.put("time", Value::Time(time));
    e.put("schemaUrl", format.schema_url(origin));
    e.put("flags", Value::U64(flags.into()));
    match exemplars {
        Some(list) => e.put("exemplars", Value::With(list)),
        None if format == Format::Opensearch => e.put("exemplars", Value::Raw(b"[]")),
        None => {}
    }
    if format == Format::Otel {
        e.put("metadata", Value::OtelAttributes(&m.metadata));
    }
    format.origin(e, origin);
}

/// A number data point's value as a double (integers converted), as Data Prepper keeps it.
fn value(v: Option<&Number>) -> Value<'static> {
    match v {
        Some(Number::AsDouble(d)) => Value::F64(*d),
        Some(Number::AsInt(i)) => Value::F64(*i as f64),
        None => Value::Null,
    }
}

fn temporality(t: i32) -> Value<'static> {
    Value::Str(
        AggregationTemporality::try_from(t)
            .map_or("AGGREGATION_TEMPORALITY_UNSPECIFIED", |t| t.as_str_name()),
    )
}

fn u64s(out: &mut Vec<u8>, list: &[u64]) {
    array(out, list, |out, n| number(out, *n));
}

fn f64s(out: &mut Vec<u8>, list: &[f64]) {
    array(out, list, |out, d| double(out, *d));
}

/// `{min, max, count}`.
fn bucket(out: &mut Vec<u8>, min: f64, max: f64, count: u64) {
    let mut o = Object::new();
    o.put("min", Value::F64(min));
    o.put("max", Value::F64(max));
    o.put("count", Value::U64(count));
    o.write(out);
}

/// `[{min, max, count}]` per bucket, the outer bounds ±`Float.MAX_VALUE`.
fn buckets(out: &mut Vec<u8>, counts: &[u64], bounds: &[f64]) {
    let mut i = 0;
    array(out, counts, |out, count| {
        let min = if i == 0 {
            -FLOAT_MAX
        } else {
            bounds.get(i - 1).copied().unwrap_or(FLOAT_MAX)
        };
        let max = bounds.get(i).copied().unwrap_or(FLOAT_MAX);
        bucket(out, min, max, *count);
        i += 1;
    });
}

fn exemplars(out: &mut Vec<u8>, list: &[Exemplar], format: Format) {
    array(out, list, |out, x| {
        let value = match x.value {
            Some(exemplar::Value::AsDouble(d)) => Value::F64(d),
            Some(exemplar::Value::AsInt(i)) => Value::F64(i as f64),
            None => Value::Null,
        };
        let mut o = Object::new();
        o.put("time", Value::Time(x.time_unix_nano));
        o.put("value", value);
        o.put(
            "attributes",
            format.attribute_map("exemplar.attributes.", &x.filtered_attributes),
        );
        o.put("spanId", Value::Hex(&x.span_id));
        o.put("traceId", Value::Hex(&x.trace_id));
        o.write(out);
    });
}

/// An exponential histogram's buckets of one sign, `[{min, max, count}]`, with the bounds
/// Data Prepper gives them (`createExponentialBuckets`): bucket `i` spans
/// `base^(s·(|offset|+i))` to `base^(s·(|offset|+i+1))`, `base = 2^(2^-scale)`, `s` the
/// offset's sign (so with a negative offset the bounds fall, as in Data Prepper). None when
/// the last bound would pass the largest double, or the scale is beyond
/// `MAX_EXPONENTIAL_SCALE` (Data Prepper drops such a point; it is kept here, without buckets).
fn exponential_buckets(out: &mut Vec<u8>, buckets: Option<&Buckets>, scale: i32) {
    let Some(b) = buckets.filter(|_| scale.abs() <= MAX_EXPONENTIAL_SCALE) else {
        return out.extend_from_slice(b"[]");
    };
    let base = 2f64.powf(2f64.powf(-f64::from(scale)));
    // Data Prepper's table of bounds holds indices 0..=last.
    let last = (f64::MAX.ln() / base.ln()).round();
    let skip = f64::from(b.offset.unsigned_abs());
    if b.bucket_counts.len() as f64 + skip >= last + 1.0 {
        return out.extend_from_slice(b"[]");
    }
    let sign = if b.offset < 0 { -1.0 } else { 1.0 };
    let bound = |k: f64| base.powf(sign * k);
    let mut i = 0;
    array(out, &b.bucket_counts, |out, count| {
        let k = skip + f64::from(i);
        bucket(out, bound(k), bound(k + 1.0), *count);
        i += 1;
    });
}
