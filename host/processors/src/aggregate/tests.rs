//! `aggregate`'s tests: the documented examples (`conformance/aggregate.json`), when groups
//! conclude, what happens to the shares, the memory bound, and the options' rules.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_buffer::{Acknowledgement, Share};
use sluice_event::{Event, Metadata};

use crate::testing::invalid;
use crate::{Released, Stateful};

/// The `aggregate` processor of a `processor:` list item written in YAML (JSON is YAML).
fn aggregate(yaml: &str) -> Box<dyn Stateful> {
    crate::testing::stateful(yaml)
}

/// A batch's acknowledgement: `acked` once every share of it was released.
struct Batch {
    acked: Arc<AtomicBool>,
    root: Option<Share>,
}

impl Batch {
    fn new() -> Self {
        let acked = Arc::new(AtomicBool::new(false));
        let flag = acked.clone();
        let root = Acknowledgement::new(move || flag.store(true, Ordering::SeqCst)).shared();
        Self {
            acked,
            root: Some(root),
        }
    }

    /// `data` as events of this batch, each with its share.
    fn events(&self, data: &[Value]) -> Vec<(Event, Share)> {
        let root = self.root.as_ref().expect("the batch is still open");
        data.iter()
            .map(|d| (Event::new(d.clone(), Metadata::new("LOG", 0)), root.share()))
            .collect()
    }

    /// The batch itself is done (its events have their own shares).
    fn close(&mut self) {
        if let Some(root) = self.root.take() {
            root.release();
        }
    }

    fn acked(&self) -> bool {
        self.acked.load(Ordering::SeqCst)
    }
}

/// What left, the events' data: the shares of `done` released as the pipeline does once the
/// events are in the sinks.
fn settle(released: Released) -> Vec<Value> {
    for share in released.done {
        share.release();
    }
    released.events.into_iter().map(|e| e.data).collect()
}

/// `value` without what `ignore` points at (`/a/0/b`): set to null where it is, so a missing
/// key still differs.
fn without(mut value: Value, ignore: &[Value]) -> Value {
    for pointer in ignore {
        if let Some(at) = value.pointer_mut(pointer.as_str().unwrap()) {
            *at = Value::Null;
        }
    }
    value
}

#[test]
fn the_documented_examples() {
    let path = crate::conformance("aggregate");
    let cases: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(cases.len() >= 9);
    for case in &cases {
        let id = &case["id"];
        let p = aggregate(&case["processor"].to_string());
        let mut batch = Batch::new();
        let inputs: Vec<Value> = case["inputs"].as_array().unwrap().clone();
        let now = Instant::now();
        let mut out = settle(p.process(batch.events(&inputs), now));
        batch.close();
        out.extend(settle(p.flush(now + Duration::from_secs(86_400), true)));
        assert!(batch.acked(), "{id}: every share released");
        assert_eq!(p.held(), 0, "{id}");
        let ignore = case["ignore"].as_array().unwrap();
        let got: Vec<Value> = out.into_iter().map(|v| without(v, ignore)).collect();
        let expected: Vec<Value> = case["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| without(v.clone(), ignore))
            .collect();
        assert!(
            same(&Value::Array(got.clone()), &Value::Array(expected.clone())),
            "{id}\n  got:      {}\n  expected: {}",
            Value::Array(got),
            Value::Array(expected)
        );
    }
}

/// `a` and `b` are equal, floating-point numbers to within rounding (serde_json reads
/// `3.4028234663852886E38` one unit off), integers and floats told apart.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() && y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[test]
fn a_group_concludes_group_duration_after_its_first_event_and_then_lets_its_shares_go() {
    let p = aggregate(
        "aggregate:\n  identification_keys: [k]\n  group_duration: PT1M\n  action:\n    put_all:",
    );
    let t = Instant::now();
    let mut first = Batch::new();
    assert!(settle(p.process(first.events(&[json!({"k": 1, "a": 1})]), t)).is_empty());
    first.close();
    let mut second = Batch::new();
    let later = t + Duration::from_secs(30);
    let events = second.events(&[json!({"k": 1, "b": 2}), json!({"k": 2, "c": 3})]);
    assert!(settle(p.process(events, later)).is_empty());
    second.close();
    assert_eq!(p.held(), 3);

    // Not yet: later events do not move a group's end.
    assert!(settle(p.flush(t + Duration::from_millis(59_999), false)).is_empty());
    assert!(!first.acked() && !second.acked());

    // Group 1 concludes: batch 1 is done, batch 2 still has an event in group 2.
    let out = settle(p.flush(t + Duration::from_secs(60), false));
    assert_eq!(out, [json!({"k": 1, "a": 1, "b": 2})]);
    assert!(first.acked());
    assert!(!second.acked());
    assert_eq!(p.held(), 1);

    // A process call concludes due groups first, then takes its events.
    let mut third = Batch::new();
    let events = third.events(&[json!({"k": 2, "d": 4})]);
    let out = settle(p.process(events, later + Duration::from_secs(60)));
    third.close();
    assert_eq!(out, [json!({"k": 2, "c": 3})]);
    assert!(second.acked());
    assert!(!third.acked(), "its event opened a new group 2");
    assert_eq!(settle(p.flush(t, true)), [json!({"k": 2, "d": 4})]);
    assert!(third.acked());
}

#[test]
fn events_dropped_or_passed_on_release_their_shares_at_once() {
    let p = aggregate("aggregate:\n  identification_keys: [k]\n  action:\n    remove_duplicates:");
    let mut batch = Batch::new();
    let released = p.process(
        batch.events(&[json!({"k": 1, "n": 1}), json!({"k": 1, "n": 2})]),
        Instant::now(),
    );
    assert_eq!(released.dropped, 1, "the duplicate is counted as dropped");
    let out = settle(released);
    batch.close();
    assert_eq!(out, [json!({"k": 1, "n": 1})]);
    assert!(
        batch.acked(),
        "nothing of the batch is kept, though its group is open"
    );
    assert_eq!(p.held(), 0);
}

#[test]
fn past_max_held_events_the_oldest_groups_conclude() {
    let p = aggregate(
        "aggregate:\n  identification_keys: [k]\n  max_held_events: 3\n  action:\n    count:\n      output_format: raw",
    );
    let t = Instant::now();
    let mut batch = Batch::new();
    let data: Vec<Value> = [1, 1, 2, 3, 3].iter().map(|k| json!({ "k": k })).collect();
    let out = settle(p.process(batch.events(&data), t));
    batch.close();
    // Group 1 (two events) and 2 make three; the fourth event concludes the oldest group.
    assert_eq!(out.len(), 1);
    assert_eq!(
        (&out[0]["k"], &out[0]["aggr._count"]),
        (&json!(1), &json!(2))
    );
    assert_eq!(p.held(), 3);
    let rest = settle(p.flush(t, true));
    let counts: Vec<(Value, Value)> = rest
        .iter()
        .map(|e| (e["k"].clone(), e["aggr._count"].clone()))
        .collect();
    assert_eq!(counts, [(json!(2), json!(1)), (json!(3), json!(2))]);
    assert!(batch.acked());

    // One group alone past the bound concludes early too.
    let mut batch = Batch::new();
    let data: Vec<Value> = (0..7).map(|_| json!({"k": 9})).collect();
    let out = settle(p.process(batch.events(&data), t));
    batch.close();
    // The 4th event takes the group past the bound: it concludes with it.
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["aggr._count"], json!(4));
    assert_eq!(p.held(), 3);
    let rest = settle(p.flush(t, true));
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0]["aggr._count"], json!(3));
    assert!(batch.acked());
}

#[test]
fn flush_all_lets_everything_go() {
    let p = aggregate(
        "aggregate:\n  identification_keys: [trace]\n  action:\n    tail_sampler:\n      wait_period: 10s\n      percent: 1\n      condition: /error == true",
    );
    let mut batch = Batch::new();
    let data = [
        json!({"trace": "a", "error": true}),
        json!({"trace": "b"}),
        json!({"trace": "a"}),
    ];
    let t = Instant::now();
    assert!(settle(p.process(batch.events(&data), t)).is_empty());
    batch.close();
    assert_eq!(p.held(), 3);
    let out = settle(p.flush(t, true));
    // Trace b concludes first (a's last event is later) and goes on 1 time in 100; trace a
    // has an error: it goes on whole.
    assert!(out.len() == 2 || out.len() == 3, "{out:?}");
    assert!(out.ends_with(&[json!({"trace": "a", "error": true}), json!({"trace": "a"})]));
    assert_eq!(p.held(), 0);
    assert!(batch.acked());
}

#[test]
fn a_tail_sampler_group_concludes_wait_period_after_its_last_event() {
    let p = aggregate(
        "aggregate:\n  identification_keys: [trace]\n  action:\n    tail_sampler:\n      wait_period: 10500ms\n      percent: 50\n      condition: /error == true",
    );
    let t = Instant::now();
    let mut batch = Batch::new();
    let _ = settle(p.process(batch.events(&[json!({"trace": "a", "error": true})]), t));
    let _ = settle(p.process(
        batch.events(&[json!({"trace": "a", "n": 2})]),
        t + Duration::from_secs(5),
    ));
    batch.close();
    // Whole seconds: 10s after the last event, not 10.5s, and not 10s after the first.
    assert!(settle(p.flush(t + Duration::from_millis(14_999), false)).is_empty());
    let out = settle(p.flush(t + Duration::from_secs(15), false));
    assert_eq!(out.len(), 2);
    assert!(batch.acked());
}

#[test]
fn events_aggregate_when_does_not_select_go_on_unchanged_at_once() {
    let p = aggregate(
        "aggregate:\n  identification_keys: [k]\n  aggregate_when: /kind == \"x\"\n  action:\n    put_all:",
    );
    let t = Instant::now();
    let mut other = Batch::new();
    let out = settle(p.process(other.events(&[json!({"k": 1, "kind": "y"})]), t));
    other.close();
    assert_eq!(out, [json!({"k": 1, "kind": "y"})]);
    assert!(other.acked());
    let mut selected = Batch::new();
    assert!(settle(p.process(selected.events(&[json!({"k": 1, "kind": "x"})]), t)).is_empty());
    selected.close();
    assert!(!selected.acked());
    assert_eq!(settle(p.flush(t, true)), [json!({"k": 1, "kind": "x"})]);
    assert!(selected.acked());
}

#[test]
fn unaggregated_events_go_on_too_and_what_the_action_makes_is_tagged() {
    let p = aggregate(
        "aggregate:\n  identification_keys: [k]\n  output_unaggregated_events: true\n  aggregated_events_tag: agg\n  action:\n    put_all:",
    );
    let t = Instant::now();
    let mut batch = Batch::new();
    let out = p.process(
        batch.events(&[json!({"k": 1, "a": 1}), json!({"k": 1, "b": 2})]),
        t,
    );
    batch.close();
    let tags: Vec<&Vec<String>> = out.events.iter().map(|e| &e.metadata.tags).collect();
    assert_eq!(tags, [&Vec::<String>::new(), &Vec::new()]);
    assert_eq!(out.events.len(), 2);
    let _ = settle(out);
    assert!(!batch.acked(), "their contribution waits in the group");
    let out = p.flush(t, true);
    assert_eq!(out.events.len(), 1);
    assert_eq!(out.events[0].metadata.tags, ["agg"]);
    assert_eq!(out.events[0].data, json!({"k": 1, "a": 1, "b": 2}));
    let _ = settle(out);
    assert!(batch.acked());

    // An event the action lets go on is the unaggregated one too: twice, tagged.
    let p = aggregate(
        "aggregate:\n  identification_keys: [k]\n  output_unaggregated_events: true\n  aggregated_events_tag: agg\n  action:\n    remove_duplicates:",
    );
    let batch = Batch::new();
    let out = p.process(batch.events(&[json!({"k": 1}), json!({"k": 1})]), t);
    let tags: Vec<&Vec<String>> = out.events.iter().map(|e| &e.metadata.tags).collect();
    assert_eq!(
        tags,
        [
            &vec!["agg".to_owned()],
            &vec!["agg".to_owned()],
            &Vec::new()
        ]
    );
    let _ = settle(out);
}

#[test]
fn disable_group_acknowledgments_releases_folded_events_at_once() {
    let p = aggregate(
        "aggregate:\n  identification_keys: [k]\n  disable_group_acknowledgments: true\n  action:\n    append:",
    );
    let mut batch = Batch::new();
    let t = Instant::now();
    let _ = settle(p.process(
        batch.events(&[json!({"k": 1, "v": 1}), json!({"k": 1, "v": 2})]),
        t,
    ));
    batch.close();
    assert!(batch.acked());
    assert_eq!(p.held(), 2, "still counted against max_held_events");
    assert_eq!(settle(p.flush(t, true)), [json!({"k": 1, "v": [1, 2]})]);
}

#[test]
fn missing_identification_keys_are_null_and_group_together() {
    let p = aggregate(
        "aggregate:\n  identification_keys: [a/b, c]\n  action:\n    count:\n      output_format: raw\n      unique_keys: [u]",
    );
    let batch = Batch::new();
    let data = [
        json!({"x": 1, "u": 1}),
        json!({"a": {"b": null}, "u": 1}),
        json!({"a": {"b": 1}, "c": {"y": 1, "z": 2}, "u": 2}),
        json!({"a": {"b": 1}, "c": {"z": 2, "y": 1}, "u": 3}),
    ];
    let t = Instant::now();
    let _ = settle(p.process(batch.events(&data), t));
    let out = settle(p.flush(t, true));
    let counts: Vec<(Value, Value, Value)> = out
        .iter()
        .map(|e| (e["a/b"].clone(), e["c"].clone(), e["aggr._count"].clone()))
        .collect();
    assert_eq!(
        counts,
        [
            (Value::Null, Value::Null, json!(1)),
            (json!(1), json!({"y": 1, "z": 2}), json!(2)),
        ]
    );
}

#[test]
fn histogram_raw_and_the_events_it_cannot_count() {
    let p = aggregate(
        "aggregate:\n  identification_keys: [k]\n  action:\n    histogram:\n      key: v\n      units: ms\n      buckets: [10, 0]\n      output_format: raw\n      generated_key_prefix: h_",
    );
    let batch = Batch::new();
    let data = [
        json!({"k": 1, "v": 5}),
        json!({"k": 1}),
        json!({"k": 1, "v": "12.5"}),
        json!({"k": 1, "v": "soon"}),
        json!({"k": 1, "v": 10, "h_startTime": "2024-01-01T00:00:00Z", "h_endTime": 1_704_067_260}),
    ];
    let t = Instant::now();
    let now = settle(p.process(batch.events(&data), t));
    assert_eq!(
        now,
        [json!({"k": 1, "v": "soon"})],
        "a value that is no number goes on"
    );
    let out = settle(p.flush(t, true));
    assert_eq!(out.len(), 1);
    let h = &out[0];
    assert_eq!(h["h_count"], json!(3));
    assert_eq!(h["h_sum"], json!(27.5));
    assert_eq!(h["h_bucket_counts"], json!([0, 1, 2]));
    assert_eq!(h["h_buckets"], json!([0.0, 10.0]));
    assert_eq!(h["histogram_key"], json!("v"));
    assert_eq!(h["h_startTime"], json!("2024-01-01T00:00:00.000Z"));
    assert!(h.get("h_min").is_none());
    let end = h["h_endTime"].as_f64().unwrap();
    assert!(end >= 1_704_067_260.0);
}

#[test]
fn count_reads_the_events_times() {
    let p = aggregate("aggregate:\n  identification_keys: [k]\n  action:\n    count:");
    let batch = Batch::new();
    let data = [
        json!({"k": 1, "aggr._start_time": "2024-01-01T00:00:10Z", "aggr._end_time": 1_704_067_260_000_i64}),
        json!({"k": 1, "aggr._start_time": 1_704_067_205.5, "aggr._end_time": "2024-01-01T00:00:30+00:00"}),
        json!({"k": 1, "aggr._start_time": [1]}),
    ];
    let t = Instant::now();
    let now = settle(p.process(batch.events(&data), t));
    assert_eq!(
        now.len(),
        1,
        "a time that cannot be read: the event goes on"
    );
    let out = p.flush(t, true);
    assert_eq!(out.events[0].metadata.event_type, "METRIC");
    let sum = &out.events[0].data;
    assert_eq!(sum["startTime"], json!("2024-01-01T00:00:05.500Z"));
    assert_eq!(sum["time"], json!("2024-01-01T00:01:00Z"));
    assert_eq!(sum["value"], json!(2.0));
    assert_eq!(sum["attributes"], json!({"k": 1}));
    let _ = settle(out);
}

#[test]
fn the_options_rules() {
    let unknown = invalid("aggregate:\n  identification_keys: [k]\n  action:\n    merge:");
    assert!(
        unknown.contains("unknown aggregate action `merge`")
            && unknown.contains("`put_all`")
            && unknown.contains("`percent_sampler`"),
        "{unknown}"
    );
    let sum = invalid("aggregate:\n  identification_keys: [k]\n  action:\n    sum:\n      key: v");
    assert!(sum.contains("not supported by sluice yet"), "{sum}");
    let two =
        invalid("aggregate:\n  identification_keys: [k]\n  action:\n    put_all:\n    count:");
    assert!(two.contains("exactly one action"), "{two}");
    let none = invalid("aggregate:\n  identification_keys: [k]");
    assert!(none.contains("missing field `action`"), "{none}");
    let empty = invalid("aggregate:\n  identification_keys: []\n  action:\n    put_all:");
    assert!(empty.contains("identification_keys` is empty"), "{empty}");
    let tag = invalid(
        "aggregate:\n  identification_keys: [k]\n  output_unaggregated_events: true\n  action:\n    put_all:",
    );
    assert!(
        tag.contains("Aggregated Events Tag must be set when output_unaggregated_events is set"),
        "{tag}"
    );
    for percent in ["0", "100", "-1"] {
        let e = invalid(&format!(
            "aggregate:\n  identification_keys: [k]\n  action:\n    percent_sampler:\n      percent: {percent}"
        ));
        assert!(
            e.contains("Percent value must be greater than 0.0 and less than 100.0"),
            "{e}"
        );
    }
    let wait = invalid(
        "aggregate:\n  identification_keys: [k]\n  action:\n    tail_sampler:\n      wait_period: 500ms\n      percent: 5",
    );
    assert!(wait.contains("wait_period"), "{wait}");
    let buckets = invalid(
        "aggregate:\n  identification_keys: [k]\n  action:\n    histogram:\n      key: v\n      units: s\n      buckets: []",
    );
    assert!(
        buckets.contains("Bucket list must not be empty"),
        "{buckets}"
    );
    let rate = invalid(
        "aggregate:\n  identification_keys: [k]\n  action:\n    rate_limiter:\n      events_per_second: 0",
    );
    assert!(
        rate.contains("events_per_second` must be at least 1"),
        "{rate}"
    );
    let mode = invalid(
        "aggregate:\n  identification_keys: [k]\n  action:\n    rate_limiter:\n      events_per_second: 1\n      when_exceeds: wait",
    );
    assert!(mode.contains("write `block` or `drop`"), "{mode}");
    let duration = invalid(
        "aggregate:\n  identification_keys: [k]\n  group_duration: PT1X\n  action:\n    put_all:",
    );
    assert!(duration.contains("ISO-8601"), "{duration}");
    let unknown_key =
        invalid("aggregate:\n  identification_keys: [k]\n  action:\n    count:\n      count: 1");
    assert!(unknown_key.contains("count"), "{unknown_key}");
}

/// The `aggregate` blocks of Data Prepper's docs (`common-use-cases`, the processor page) as
/// written, each with its action.
#[test]
fn the_documented_blocks_validate() {
    for block in [
        // event-aggregation.md:27
        "aggregate:\n  group_duration: \"30s\"\n  identification_keys: [\"sourceIp\", \"destinationIp\", \"port\"]\n  action:\n    put_all:",
        // event-aggregation.md:108
        "aggregate:\n  identification_keys: [\"clientip\"]\n  action:\n    remove_duplicates:\n  group_duration: \"180s\"",
        // anomaly-detection.md:43, metrics-logs.md:53
        "aggregate:\n  identification_keys: [\"clientip\", \"request\"]\n  action:\n    histogram:\n      key: \"bytes\"\n      record_minmax: true\n      units: \"bytes\"\n      buckets: [0, 25000000, 50000000, 75000000, 100000000]\n  group_duration: \"30s\"",
        // anomaly-detection.md:136, metrics-traces.md:34
        "aggregate:\n  identification_keys: [\"serviceName\"]\n  action:\n    histogram:\n      key: \"durationInNanos\"\n      record_minmax: true\n      units: \"seconds\"\n      buckets: [0, 10000000, 50000000, 100000000]\n  group_duration: \"30s\"",
        // sampling.md:65 (its `...` line left out)
        "aggregate:\n  identification_keys: [\"traceId\"]\n  action:\n    tail_sampler:\n      percent: 20\n      wait_period: \"10s\"\n      condition: \"/status == 2\"",
        // aggregate.md options: ISO-8601 group_duration, the tag options
        "aggregate:\n  identification_keys: [k]\n  group_duration: PT20.345S\n  local_mode: true\n  output_unaggregated_events: true\n  aggregated_events_tag: aggregated\n  acknowledge_on_conclude: true\n  action:\n    count:\n      unique_keys: [u]\n      metric_name: c",
    ] {
        let _ = aggregate(block);
    }
}
