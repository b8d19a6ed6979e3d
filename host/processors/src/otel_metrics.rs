//! `otel_metrics` (`otel_metrics_raw_processor`), as Data Prepper's `OTelMetricsRawProcessor`:
//! each OTLP metric data point as Data Prepper's document (`JacksonGauge`, `JacksonSum`,
//! `JacksonHistogram`, `JacksonSummary`, `JacksonExponentialHistogram`).
//!
//! The `otlp` deserializer (behind `otel_metrics_source`, `otlp`, or an http source) already
//! turned the request into one event per data point; what this processor adds is what Data
//! Prepper's processor decides with its options:
//!
//! - a histogram's `buckets` from `bucketCountsList` and `explicitBounds`
//!   (`createBuckets`), or none (`calculate_histogram_buckets: false`). A point whose counts
//!   do not number its bounds plus one is dropped, as Data Prepper's exception drops it;
//! - an exponential histogram's `positiveBuckets`/`negativeBuckets` from its counts, offsets
//!   and `scale` (`createExponentialBuckets`), or none; with them, a point whose scale is beyond
//!   `exponential_histogram_max_allowed_scale` is dropped (logged, as Data Prepper does);
//! - `flatten_attributes: false`: the attributes gathered in one object at `attributes`.
//!
//! A dropped point counts in the pipeline's `sluice_eventsDropped` (Data Prepper counts the
//! miscounted histogram in `recordsDroppedMetricsRaw`, once for the metric, whose other points
//! its exception drops too; the scale it only logs). An event that is no metric data point (no metric `kind`) goes
//! on unchanged, as Data Prepper passes on other events. One deliberate difference: Data
//! Prepper writes every exponential histogram's `aggregationTemporality` as
//! `AGGREGATION_TEMPORALITY_UNSPECIFIED` (it reads the metric's histogram, not its exponential
//! histogram); the deserializer writes the point's own, and it is kept.

use serde_json::{Map, Value, json};
use sluice_config::processor::otel_metrics as config;
use sluice_event::Event;

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// Data Prepper's outer bounds of a histogram (`±Float.MAX_VALUE`).
const FLOAT_MAX: f64 = f32::MAX as f64;

/// The key prefixes of a document's flattened attributes: the data point's, its resource's
/// and its instrumentation scope's (Data Prepper's `attributes` map, flattened).
const ATTRIBUTE_PREFIXES: [&str; 3] = [
    "metric.attributes.",
    "resource.attributes.",
    "instrumentationScope.",
];

/// `otel_metrics`, built: its config as is.
pub struct OtelMetrics {
    config: config::OtelMetrics,
}

impl BuildProcessor for config::OtelMetrics {
    type Processor = OtelMetrics;

    fn build(&self) -> Result<OtelMetrics, BuildError> {
        Ok(OtelMetrics {
            config: self.clone(),
        })
    }
}

impl Apply for OtelMetrics {
    fn apply(&self, event: &mut Event, name: &'static str) -> Result<Fate, Failure> {
        let Some(data) = event.data.as_object_mut() else {
            return Ok(Fate::Keep);
        };
        let kind = data.get("kind").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "GAUGE" | "SUM" | "SUMMARY" => {}
            "HISTOGRAM" => {
                if self.config.calculate_histogram_buckets {
                    let counts = numbers(data.get("bucketCountsList"));
                    let bounds = numbers(data.get("explicitBounds"));
                    match buckets(&counts, &bounds) {
                        Some(list) => {
                            data.insert("buckets".to_owned(), list);
                        }
                        None => {
                            tracing::warn!(processor = name, metric = ?data.get("name"), counts = counts.len(), bounds = bounds.len(), "histogram data point dropped: it must have one bucket count more than explicit bounds");
                            return Ok(Fate::Drop);
                        }
                    }
                } else {
                    data.remove("buckets");
                }
            }
            "EXPONENTIAL_HISTOGRAM" => {
                if self.config.calculate_exponential_histogram_buckets {
                    let scale = data.get("scale").and_then(Value::as_i64).unwrap_or(0);
                    let max = i64::from(self.config.exponential_histogram_max_allowed_scale);
                    if scale.abs() > max {
                        tracing::error!(processor = name, metric = ?data.get("name"), scale, max, "exponential histogram data point dropped: its scale is beyond `exponential_histogram_max_allowed_scale`");
                        return Ok(Fate::Drop);
                    }
                    for (side, counts, offset) in [
                        ("positiveBuckets", "positive", "positiveOffset"),
                        ("negativeBuckets", "negative", "negativeOffset"),
                    ] {
                        let counts = numbers(data.get(counts));
                        let offset = data.get(offset).and_then(Value::as_i64).unwrap_or(0);
                        let list = exponential_buckets(&counts, offset, scale, name);
                        data.insert(side.to_owned(), list);
                    }
                } else {
                    data.remove("positiveBuckets");
                    data.remove("negativeBuckets");
                }
            }
            // Not a metric data point.
            _ => return Ok(Fate::Keep),
        }
        if !self.config.flatten_attributes {
            gather_attributes(data);
        }
        Ok(Fate::Keep)
    }
}

/// The numbers of a list (counts or bounds); anything else is an empty list.
fn numbers(value: Option<&Value>) -> Vec<f64> {
    value
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

/// `{min, max, count}`; counts are whole numbers in the event.
fn bucket(min: f64, max: f64, count: f64) -> Value {
    json!({"min": min, "max": max, "count": count as u64})
}

/// Data Prepper's `createBuckets`: bucket `i` spans bound `i-1` to bound `i`, the outer bounds
/// ±`Float.MAX_VALUE`; `None` when the counts do not number the bounds plus one (Data Prepper
/// throws, and the point is dropped). No counts: no buckets.
fn buckets(counts: &[f64], bounds: &[f64]) -> Option<Value> {
    if counts.is_empty() {
        return Some(Value::Array(Vec::new()));
    }
    if counts.len() - 1 != bounds.len() {
        return None;
    }
    let list = counts
        .iter()
        .enumerate()
        .map(|(i, &count)| {
            let min = if i == 0 { -FLOAT_MAX } else { bounds[i - 1] };
            let max = bounds.get(i).copied().unwrap_or(FLOAT_MAX);
            bucket(min, max, count)
        })
        .collect();
    Some(Value::Array(list))
}

/// Data Prepper's `createExponentialBuckets`: bucket `i` spans `base^(s·(|offset|+i))` to
/// `base^(s·(|offset|+i+1))`, `base = 2^(2^-scale)`, `s` the offset's sign (with a negative
/// offset the bounds fall, as in Data Prepper). Its table of bounds holds the indices up to
/// `round(ln(Double.MAX_VALUE) / ln(base))`; buckets past it give none (logged).
fn exponential_buckets(counts: &[f64], offset: i64, scale: i64, name: &str) -> Value {
    let base = 2f64.powf(2f64.powf(-(scale as f64)));
    let table = (f64::MAX.ln() / base.ln()).round() + 1.0;
    let skip = offset.unsigned_abs() as f64;
    if counts.len() as f64 + skip >= table {
        tracing::warn!(
            processor = name,
            offset,
            scale,
            "exponential histogram buckets beyond the range of a double; none written"
        );
        return Value::Array(Vec::new());
    }
    let sign = if offset < 0 { -1.0 } else { 1.0 };
    let bound = |k: f64| base.powf(sign * k);
    let list = counts
        .iter()
        .enumerate()
        .map(|(i, &count)| {
            let k = skip + i as f64;
            bucket(bound(k), bound(k + 1.0), count)
        })
        .collect();
    Value::Array(list)
}

/// `flatten_attributes: false`: the document's attribute keys moved, in order, into one
/// object at `attributes` (a document that has one already, the `otel` shape, is left as it
/// is).
fn gather_attributes(data: &mut Map<String, Value>) {
    if data.contains_key("attributes") {
        return;
    }
    let keys: Vec<String> = data
        .keys()
        .filter(|k| ATTRIBUTE_PREFIXES.iter().any(|p| k.starts_with(p)))
        .cloned()
        .collect();
    let mut attributes = Map::new();
    for key in keys {
        if let Some(value) = data.remove(&key) {
            attributes.insert(key, value);
        }
    }
    data.insert("attributes".to_owned(), Value::Object(attributes));
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::testing::{invalid, processor, run};

    /// A histogram data point as the `otlp` deserializer writes it (`opensearch` shape).
    fn histogram() -> Value {
        json!({
            "name": "order.amount", "kind": "HISTOGRAM", "unit": "EUR",
            "sum": 100.0, "count": 4,
            "bucketCounts": 3, "bucketCountsList": [1, 2, 1],
            "explicitBoundsCount": 2, "explicitBounds": [5.0, 10.0],
            "aggregationTemporality": "AGGREGATION_TEMPORALITY_CUMULATIVE",
            "serviceName": "checkout",
            "metric.attributes.region": "eu-west",
            "resource.attributes.service@name": "checkout",
            "instrumentationScope.name": "shop",
        })
    }

    fn exponential(scale: i64) -> Value {
        json!({
            "name": "latency", "kind": "EXPONENTIAL_HISTOGRAM", "scale": scale,
            "sum": 10.0, "count": 6, "zeroCount": 0,
            "positive": [1, 2, 3], "positiveOffset": 1,
            "negative": [1], "negativeOffset": -2,
        })
    }

    #[test]
    fn a_histogram_gets_data_preppers_buckets_from_its_counts_and_bounds() {
        let p = processor("otel_metrics:");
        let out = run(&*p, histogram()).unwrap();
        let max = f64::from(f32::MAX);
        assert_eq!(
            out["buckets"],
            json!([
                {"min": -max, "max": 5.0, "count": 1},
                {"min": 5.0, "max": 10.0, "count": 2},
                {"min": 10.0, "max": max, "count": 1},
            ])
        );
        // Flattened by default: the attributes stay keys of the document.
        assert_eq!(out["metric.attributes.region"], "eu-west");
        assert_eq!(out.get("attributes"), None);
    }

    #[test]
    fn buckets_are_left_out_when_told_and_a_point_with_miscounted_buckets_is_dropped() {
        let p = processor("otel_metrics:\n  calculate_histogram_buckets: false");
        let mut with = histogram();
        with["buckets"] = json!([{"min": 0.0, "max": 1.0, "count": 4}]);
        let out = run(&*p, with).unwrap();
        assert_eq!(out.get("buckets"), None, "{out}");
        assert_eq!(out["bucketCountsList"], json!([1, 2, 1]));

        let p = processor("otel_metrics_raw_processor:");
        let mut wrong = histogram();
        wrong["explicitBounds"] = json!([5.0]);
        assert_eq!(run(&*p, wrong), None);
    }

    #[test]
    fn an_exponential_histogram_gets_bounds_from_its_scale_and_offsets() {
        let p = processor("otel_metrics:");
        let out = run(&*p, exponential(1)).unwrap();
        // scale 1: base √2; positive offset 1: buckets from √2^1.
        let base = std::f64::consts::SQRT_2;
        let positive = out["positiveBuckets"].as_array().unwrap();
        assert_eq!(positive.len(), 3);
        for (i, b) in positive.iter().enumerate() {
            let k = 1.0 + i as f64;
            assert!(
                (b["min"].as_f64().unwrap() - base.powf(k)).abs() < 1e-12,
                "{b}"
            );
            assert!(
                (b["max"].as_f64().unwrap() - base.powf(k + 1.0)).abs() < 1e-12,
                "{b}"
            );
            assert_eq!(b["count"], i as u64 + 1);
        }
        // A negative offset: the bounds fall from base^-2, as in Data Prepper.
        let negative = &out["negativeBuckets"][0];
        assert!(
            (negative["min"].as_f64().unwrap() - 0.5).abs() < 1e-12,
            "{negative}"
        );
        assert!((negative["max"].as_f64().unwrap() - base.powf(-3.0)).abs() < 1e-12);
        assert_eq!(negative["count"], 1);
    }

    #[test]
    fn a_scale_beyond_the_maximum_drops_the_point_unless_no_buckets_are_made() {
        let p = processor("otel_metrics:");
        assert_eq!(run(&*p, exponential(11)), None);
        assert_eq!(run(&*p, exponential(-11)), None);
        assert!(run(&*p, exponential(10)).is_some());
        let p = processor("otel_metrics:\n  exponential_histogram_max_allowed_scale: 12");
        let out = run(&*p, exponential(12)).unwrap();
        assert_eq!(out["positiveBuckets"].as_array().unwrap().len(), 3);
        let p = processor("otel_metrics:\n  calculate_exponential_histogram_buckets: false");
        let mut with = exponential(20);
        with["positiveBuckets"] = json!([]);
        let out = run(&*p, with).unwrap();
        assert_eq!(out.get("positiveBuckets"), None, "{out}");
        assert_eq!(out.get("negativeBuckets"), None, "{out}");
    }

    #[test]
    fn unflattened_attributes_are_gathered_in_one_object() {
        let p = processor("otel_metrics:\n  flatten_attributes: false");
        let out = run(&*p, histogram()).unwrap();
        assert_eq!(
            out["attributes"],
            json!({
                "metric.attributes.region": "eu-west",
                "resource.attributes.service@name": "checkout",
                "instrumentationScope.name": "shop",
            })
        );
        assert_eq!(out.get("metric.attributes.region"), None);
        assert_eq!(out["serviceName"], "checkout", "not an attribute");
        let gauge = json!({"name": "g", "kind": "GAUGE", "value": 1.0, "metric.attributes.a": 1});
        assert_eq!(
            run(&*p, gauge).unwrap(),
            json!({"name": "g", "kind": "GAUGE", "value": 1.0, "attributes": {"metric.attributes.a": 1}})
        );
    }

    #[test]
    fn an_event_that_is_no_data_point_goes_on_unchanged() {
        let p = processor("otel_metrics:\n  flatten_attributes: false");
        let log = json!({"body": "x", "kind": "SPAN_KIND_SERVER", "log.attributes.a": 1});
        assert_eq!(run(&*p, log.clone()), Some(log));
    }

    #[test]
    fn a_negative_maximum_scale_and_unknown_keys_are_refused() {
        let e = invalid("otel_metrics:\n  exponential_histogram_max_allowed_scale: -1");
        assert!(
            e.contains("exponential_histogram_max_allowed_scale` is -1"),
            "{e}"
        );
        let e = invalid("otel_metrics:\n  calculate_histogram_bucket: true");
        assert!(e.contains("calculate_histogram_buckets"), "{e}");
    }
}
