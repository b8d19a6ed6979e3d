//! `histogram` (Data Prepper's `HistogramAggregateAction`): one event per group, made when it
//! concludes, with the count, sum and bucket counts of the group's numbers at `key` (and their
//! least and greatest with `record_minmax`). The bounds are `buckets`, sorted, between
//! `-Float.MAX_VALUE` and `Float.MAX_VALUE`; a number equal to a bound counts in the bucket
//! that starts there. An event without a number at `key` is dropped, uncounted; one whose
//! value is no number (or outside the float range) goes on unaggregated, as Data Prepper's
//! failing `handleEvent` lets it.
//!
//! - `otel_metrics`: an OpenTelemetry `HISTOGRAM` metric event, the identification keys,
//!   `<metric_name>_key` (`key`) and `<prefix>duration` (nanoseconds) under `attributes`
//!   (the docs' example shows them at the top level, the key attribute as `key`).
//! - `raw`: the identification keys and `<prefix>sum`, `count`, `bucket_counts`, `buckets`,
//!   `min`, `max`, `startTime` (`yyyy-MM-dd'T'HH:mm:ss.SSSXXX`), `endTime` (seconds since the
//!   epoch, as Jackson writes an `Instant`), `duration`, and `<metric_name>_key`.
//!
//! Exemplars are the group's least and greatest event (Data Prepper keeps one pair for all
//! groups); without `record_minmax` there are none (Data Prepper fails to conclude there).

use std::time::Instant;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use sluice_config::processor::aggregate::{self as config, OutputFormat};
use sluice_event::{Event, Key};

use super::{
    Action, Handled, Identification, Span, data_map, exemplar, instant_text, nanos, new_event,
    raw_text,
};

/// `histogram`.
pub(super) struct Histogram {
    /// `key`, as written and read.
    name: String,
    key: Key,
    units: String,
    /// The sorted bounds with the two sentinels: bucket `i` is `[bounds[i], bounds[i + 1])`.
    bounds: Vec<f64>,
    record_minmax: bool,
    prefix: String,
    metric_name: String,
    format: OutputFormat,
    /// `<prefix>startTime` and `<prefix>endTime`, read from events.
    start: Key,
    end: Key,
}

impl Histogram {
    pub(super) fn new(config: &config::Histogram) -> Self {
        let limit = f64::from(f32::MAX);
        let mut bounds = vec![-limit];
        bounds.extend(&config.buckets);
        bounds.push(limit);
        bounds.sort_by(f64::total_cmp);
        let prefix = config.generated_key_prefix.clone();
        Self {
            name: config.key.clone(),
            key: Key::unchecked(&config.key),
            units: config.units.clone(),
            bounds,
            record_minmax: config.record_minmax,
            start: Key::unchecked(&format!("{prefix}startTime")),
            end: Key::unchecked(&format!("{prefix}endTime")),
            prefix,
            metric_name: config.metric_name.clone(),
            format: config.output_format,
        }
    }

    /// The number at `key`: `None` when there is none, `Err` when it is no number.
    fn value(&self, event: &Event) -> Result<Option<f64>, String> {
        match event.get(&self.key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            // Jackson reads a number from text.
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| format!("`{}` is no number: {s:?}", self.name)),
            Some(other) => Err(format!("`{}` is no number: {other}", self.name)),
        }
    }

    /// The bucket of `value` (Java's `Arrays.binarySearch`, then the bucket starting there).
    fn bucket(&self, value: f64) -> Result<usize, String> {
        let at = self.bounds.partition_point(|b| *b <= value);
        match at.checked_sub(1) {
            Some(i) if i < self.bounds.len() - 1 => Ok(i),
            _ => Err(format!("{value} is outside the histogram's range")),
        }
    }
}

/// A group's histogram.
#[derive(Default)]
pub(super) struct Counts {
    count: i64,
    sum: f64,
    /// Empty before the group's first number.
    buckets: Vec<i64>,
    /// The least and greatest value and their event's data (with `record_minmax`).
    min: Option<(f64, Map<String, Value>)>,
    max: Option<(f64, Map<String, Value>)>,
    span: Span,
}

impl Action for Histogram {
    type State = Counts;

    fn handle(
        &mut self,
        counts: &mut Counts,
        event: Event,
        _keys: &Identification,
        _now: Instant,
    ) -> Handled {
        let read = self.value(&event).and_then(|value| match value {
            None => Ok(None),
            Some(value) => {
                let bucket = self.bucket(value)?;
                let times = Span::of(&event, &self.start, &self.end)?;
                Ok(Some((value, bucket, times)))
            }
        });
        let (value, bucket, times) = match read {
            Ok(Some(read)) => read,
            Ok(None) => return Handled::Dropped,
            Err(e) => {
                tracing::debug!(error = %e, "aggregate histogram: the event goes on unaggregated");
                return Handled::Pass(event);
            }
        };
        if counts.buckets.is_empty() {
            counts.buckets = vec![0; self.bounds.len() - 1];
        }
        counts.buckets[bucket] += 1;
        counts.count += 1;
        counts.sum += value;
        counts.span.add(times);
        if self.record_minmax {
            if counts.min.as_ref().is_none_or(|(min, _)| value < *min) {
                counts.min = Some((value, data_map(&event)));
            }
            if counts.max.as_ref().is_none_or(|(max, _)| value > *max) {
                counts.max = Some((value, data_map(&event)));
            }
        }
        Handled::Folded
    }

    fn conclude(&mut self, counts: Counts, keys: &Identification) -> Vec<Event> {
        let (Some(start), Some(end)) = (counts.span.start, counts.span.end) else {
            return Vec::new();
        };
        if counts.buckets.is_empty() {
            return Vec::new();
        }
        vec![match self.format {
            OutputFormat::Raw => self.raw(keys, counts, start, end),
            OutputFormat::OtelMetrics => self.metric(keys, counts, start, end),
        }]
    }
}

impl Histogram {
    /// The bounds the user gave, sorted (without the sentinels).
    fn explicit_bounds(&self) -> &[f64] {
        &self.bounds[1..self.bounds.len() - 1]
    }

    /// `<metric_name>_key`.
    fn key_attribute(&self) -> String {
        format!("{}_key", self.metric_name)
    }

    /// The `raw` event.
    fn raw(
        &self,
        keys: &Identification,
        counts: Counts,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Event {
        let p = &self.prefix;
        let mut data = keys.clone();
        data.insert(format!("{p}sum"), json!(counts.sum));
        data.insert(format!("{p}count"), json!(counts.count));
        data.insert(format!("{p}bucket_counts"), json!(counts.buckets));
        if let (Some((min, _)), Some((max, _))) = (&counts.min, &counts.max) {
            data.insert(format!("{p}min"), json!(min));
            data.insert(format!("{p}max"), json!(max));
        }
        data.insert(format!("{p}startTime"), json!(raw_text(start)));
        let seconds = end.timestamp() as f64 + f64::from(end.timestamp_subsec_nanos()) / 1e9;
        data.insert(format!("{p}endTime"), json!(seconds));
        data.insert(format!("{p}duration"), json!(nanos(end) - nanos(start)));
        data.insert(format!("{p}buckets"), json!(self.explicit_bounds()));
        data.insert(self.key_attribute(), json!(self.name));
        new_event(data, "event")
    }

    /// The `otel_metrics` event: Data Prepper's `JacksonHistogram`, attributes not flattened.
    fn metric(
        &self,
        keys: &Identification,
        counts: Counts,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Event {
        let bounds = self.explicit_bounds();
        let buckets: Vec<Value> = counts
            .buckets
            .iter()
            .enumerate()
            .map(|(i, count)| json!({"min": self.bounds[i], "max": self.bounds[i + 1], "count": count}))
            .collect();
        let mut attributes = keys.clone();
        attributes.insert(self.key_attribute(), json!(self.name));
        attributes.insert(
            format!("{}duration", self.prefix),
            json!(nanos(end) - nanos(start)),
        );
        let mut data = Map::new();
        let mut put = |key: &str, value: Value| {
            data.insert(key.to_owned(), value);
        };
        put("name", json!(self.metric_name));
        put(
            "description",
            json!(format!("Histogram of {} in the events", self.name)),
        );
        put("startTime", json!(instant_text(start)));
        put("time", json!(instant_text(end)));
        put("unit", json!(self.units));
        put("sum", json!(counts.sum));
        let mut exemplars = Vec::new();
        if let (Some((min, min_event)), Some((max, max_event))) = (counts.min, counts.max) {
            put("min", json!(min));
            put("max", json!(max));
            for (id, value, mut event) in [("min", min, min_event), ("max", max, max_event)] {
                event.insert("exemplarId".to_owned(), json!(id));
                exemplars.push(exemplar(event, value));
            }
        }
        put("count", json!(counts.count));
        put("bucketCounts", json!(counts.buckets.len()));
        put("explicitBoundsCount", json!(bounds.len()));
        put(
            "aggregationTemporality",
            json!("AGGREGATION_TEMPORALITY_DELTA"),
        );
        put("buckets", Value::Array(buckets));
        put("bucketCountsList", json!(counts.buckets));
        put("explicitBounds", json!(bounds));
        put("exemplars", Value::Array(exemplars));
        put("attributes", Value::Object(attributes));
        put("kind", json!("HISTOGRAM"));
        new_event(data, "METRIC")
    }
}
