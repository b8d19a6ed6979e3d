//! Processors that keep events past their batch hold those events' acknowledgements: spans
//! waiting in `otel_traces` for their root keep the Kafka buffer from committing them, so a
//! kill -9 while they wait loses none (they are read again), and a graceful stop lets them go
//! through the sinks before the last commit. `aggregate`'s open groups do the same.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::{Sluice, committed_and_end, json_lines, kafka_bootstrap, unique};

fn span(trace: usize, id: &str, parent: &str) -> Value {
    json!({
        "traceId": format!("trace-{trace}"), "spanId": format!("{trace}-{id}"),
        "parentSpanId": if parent.is_empty() { String::new() } else { format!("{trace}-{parent}") },
        "name": format!("{id}-of-{trace}"), "endTime": "2026-12-05T00:00:00Z",
        "durationInNanos": 1000, "status.code": 0
    })
}

fn post(s: &Sluice, spans: Vec<Value>) {
    assert_eq!(
        s.post("/log/ingest", Value::Array(spans).to_string().as_bytes()),
        200,
        "{}",
        s.log()
    );
}

#[test]
fn spans_waiting_for_their_root_survive_a_kill_9_and_a_stop_lets_them_go() {
    let bootstrap = kafka_bootstrap();
    let topic = unique("stateful-traces");
    let group = format!("{topic}-g");
    let yaml = format!(
        "traces:\n  delay: 20ms\n  source:\n    http:\n      port: {{port}}\n  buffer:\n    kafka:\n      bootstrap_servers: [{bootstrap}]\n      topics:\n        - name: {topic}\n          group_id: {group}\n          create_topic: true\n          commit_interval: 200ms\n  processor:\n    - otel_traces:\n        trace_flush_interval: 600\n  sink:\n    - file:\n        path: {{dir}}/spans.jsonl\n"
    );
    let mut s = Sluice::start(&yaml);
    // The children of ten traces, without their roots: all held.
    post(
        &s,
        (0..10)
            .flat_map(|t| [span(t, "a", "root"), span(t, "b", "a")])
            .collect(),
    );
    let lag = || -> i64 {
        committed_and_end(&bootstrap, &topic, &group)
            .iter()
            .map(|(_, committed, end)| end - committed)
            .sum()
    };
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        json_lines(&s.path("spans.jsonl")).is_empty(),
        "nothing leaves before its root"
    );
    assert!(lag() > 0, "held spans are not committed:\n{}", s.log());

    s.kill9();
    s.restart(&[]);
    // Five roots: their children, read again after the kill, leave with them, filled.
    post(&s, (0..5).map(|t| span(t, "root", "")).collect());
    let file = s.path("spans.jsonl");
    let spans = || json_lines(&file);
    s.wait_for("five whole traces", Duration::from_secs(60), || {
        spans().len() >= 15
    });
    let got = spans();
    assert_eq!(got.len(), 15, "{got:#?}");
    for e in &got {
        let trace = e["traceId"].as_str().unwrap();
        let t = trace.strip_prefix("trace-").unwrap();
        assert_eq!(e["traceGroup"], json!(format!("root-of-{t}")), "{e}");
        assert_eq!(
            e["traceGroupFields"],
            json!({"endTime": "2026-12-05T00:00:00Z", "durationInNanos": 1000, "statusCode": 0})
        );
    }

    // A stop lets the five traces still waiting go (without a trace group), then commits.
    assert_eq!(s.terminate(), 0, "{}", s.log());
    let got = spans();
    let ids: BTreeSet<&str> = got.iter().map(|e| e["spanId"].as_str().unwrap()).collect();
    assert_eq!(got.len(), 25, "each span once: {got:#?}");
    assert_eq!(ids.len(), 25);
    let orphans: Vec<&Value> = got
        .iter()
        .filter(|e| e.get("traceGroup").is_none())
        .collect();
    assert_eq!(orphans.len(), 10, "{orphans:#?}");
    assert_eq!(lag(), 0, "everything committed after the stop");
}

/// `aggregate` holds each event's acknowledgement in its group until the group concludes: a
/// kill -9 while groups are open loses no event (they are read again into new groups), and each
/// key's count comes out whole.
#[test]
fn aggregate_groups_open_at_a_kill_9_are_counted_whole_after_it() {
    let bootstrap = kafka_bootstrap();
    let topic = unique("stateful-aggregate");
    let yaml = format!(
        "counts:\n  delay: 20ms\n  source:\n    http:\n      port: {{port}}\n  buffer:\n    kafka:\n      bootstrap_servers: [{bootstrap}]\n      topics:\n        - name: {topic}\n          group_id: {topic}-g\n          create_topic: true\n          commit_interval: 200ms\n  processor:\n    - aggregate:\n        identification_keys: [sourceIp]\n        group_duration: 3s\n        action:\n          count:\n            output_format: raw\n  sink:\n    - file:\n        path: {{dir}}/counts.jsonl\n"
    );
    let mut s = Sluice::start(&yaml);
    let events: Vec<Value> = (0..30)
        .map(|n| json!({"sourceIp": format!("10.0.0.{}", n % 3), "n": n}))
        .collect();
    post(&s, events);
    // Killed while the three groups are open.
    s.kill9();
    s.restart(&[]);
    let file = s.path("counts.jsonl");
    s.wait_for("a count per address", Duration::from_secs(60), || {
        json_lines(&file).len() >= 3
    });
    let mut counts: Vec<(String, u64)> = json_lines(&file)
        .iter()
        .map(|c| {
            (
                c["sourceIp"].as_str().unwrap().to_owned(),
                c["aggr._count"].as_u64().unwrap(),
            )
        })
        .collect();
    counts.sort();
    assert_eq!(
        counts,
        [
            ("10.0.0.0".to_owned(), 10),
            ("10.0.0.1".to_owned(), 10),
            ("10.0.0.2".to_owned(), 10)
        ],
        "{}",
        s.log()
    );
    assert_eq!(s.terminate(), 0, "{}", s.log());
}
