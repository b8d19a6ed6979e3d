//! `count` (Data Prepper's `CountAggregateAction`): one event per group, made when it
//! concludes, with how many events it had (or, with `unique_keys`, how many distinct
//! combinations of those keys' values) and the time they span: from each event's
//! `start_time_key` and `end_time_key` when it has them, else the time it was handled.
//!
//! - `otel_metrics`: an OpenTelemetry `SUM` metric event (`value` the count as a double,
//!   `startTime`, `time`, one exemplar: the first event), the identification keys under
//!   `attributes` (Data Prepper 2.1 on; the docs' example shows them at the top level).
//! - `raw`: the identification keys, `count_key`, `start_time_key` (written
//!   `yyyy-MM-dd'T'HH:mm:ss.SSSXXX`) and, as Data Prepper leaves it there, `__exemplar`.

use std::collections::HashSet;
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sluice_config::processor::aggregate::{self as config, OutputFormat};
use sluice_event::{Event, Key};

use super::{
    Action, Handled, Identification, Span, canonical, exemplar, instant_text, new_event, raw_text,
};

/// `count`.
pub(super) struct Count {
    count_key: String,
    start_time_key: String,
    /// The two time keys, to read from events (the end is not written: Data Prepper removes
    /// it).
    start: Key,
    end: Key,
    format: OutputFormat,
    metric_name: String,
    /// `unique_keys`, as written and read.
    unique_keys: Option<Vec<(String, Key)>>,
}

impl Count {
    pub(super) fn new(config: &config::Count) -> Self {
        Self {
            count_key: config.count_key.clone(),
            start_time_key: config.start_time_key.clone(),
            start: Key::unchecked(&config.start_time_key),
            end: Key::unchecked(&config.end_time_key),
            format: config.output_format,
            metric_name: config.metric_name.clone(),
            unique_keys: config.unique_keys.as_ref().map(|keys| {
                keys.iter()
                    .map(|name| (name.clone(), Key::unchecked(name)))
                    .collect()
            }),
        }
    }
}

/// A group's count.
#[derive(Default)]
pub(super) struct Counted {
    count: i64,
    /// The distinct `unique_keys` values seen (canonical text).
    unique: HashSet<String>,
    span: Span,
    /// The first event, as the metric's exemplar.
    exemplar: Option<Value>,
}

impl Action for Count {
    type State = Counted;

    fn handle(
        &mut self,
        counted: &mut Counted,
        event: Event,
        _keys: &Identification,
        _now: Instant,
    ) -> Handled {
        let times = match Span::of(&event, &self.start, &self.end) {
            Ok(times) => times,
            Err(e) => {
                tracing::debug!(error = %e, "aggregate count: the event goes on unaggregated");
                return Handled::Pass(event);
            }
        };
        if counted.exemplar.is_none() {
            counted.exemplar = Some(exemplar(super::data_map(&event), 1.0));
        }
        counted.span.add(times);
        counted.count = match &self.unique_keys {
            Some(keys) => {
                let values: Identification = keys
                    .iter()
                    .map(|(name, key)| {
                        (name.clone(), event.get(key).cloned().unwrap_or(Value::Null))
                    })
                    .collect();
                counted.unique.insert(canonical(&values));
                counted.unique.len() as i64
            }
            None => counted.count + 1,
        };
        Handled::Folded
    }

    fn conclude(&mut self, counted: Counted, keys: &Identification) -> Vec<Event> {
        let (Some(start), Some(end)) = (counted.span.start, counted.span.end) else {
            return Vec::new();
        };
        let exemplar = counted.exemplar.unwrap_or(Value::Null);
        vec![match self.format {
            OutputFormat::Raw => self.raw(keys, counted.count, start, exemplar),
            OutputFormat::OtelMetrics => self.sum(keys, counted.count, start, end, exemplar),
        }]
    }
}

impl Count {
    /// The `raw` event.
    fn raw(
        &self,
        keys: &Identification,
        count: i64,
        start: DateTime<Utc>,
        exemplar: Value,
    ) -> Event {
        let mut data = keys.clone();
        data.insert(self.count_key.clone(), json!(count));
        data.insert(self.start_time_key.clone(), json!(raw_text(start)));
        data.insert("__exemplar".to_owned(), exemplar);
        new_event(data, "event")
    }

    /// The `otel_metrics` event: Data Prepper's `JacksonSum`, attributes not flattened.
    fn sum(
        &self,
        keys: &Identification,
        count: i64,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        exemplar: Value,
    ) -> Event {
        let data = json!({
            "name": self.metric_name,
            "description": "Number of events",
            "startTime": instant_text(start),
            "time": instant_text(end),
            "isMonotonic": true,
            "unit": "1",
            "aggregationTemporality": "AGGREGATION_TEMPORALITY_DELTA",
            "value": count as f64,
            "exemplars": [exemplar],
            "attributes": keys,
            "kind": "SUM",
        });
        let Value::Object(map) = data else {
            unreachable!("an object");
        };
        new_event(map, "METRIC")
    }
}
