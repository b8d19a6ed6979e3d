//! Pipelines feeding pipelines, with Data Prepper's `pipeline` sink and source: an entry
//! pipeline with a kafka buffer sends every event to one downstream pipeline (in-memory
//! buffer: the acknowledgement comes back once its sinks took the events) and the routed ones
//! to another (kafka buffer); two kill -9s in the middle lose no accepted event. A stalled sink
//! at the end of a chain holds the whole chain, and nothing is dropped.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::{Sluice, json_lines, kafka_bootstrap, prometheus_value, unique};

use crate::sinks::http::Endpoint;

fn yaml(bootstrap: &str) -> String {
    let topic = |name| {
        let t = unique(name);
        format!(
            "kafka:\n      bootstrap_servers: [{bootstrap}]\n      topics:\n        - name: {t}\n          group_id: {t}-g\n          create_topic: true\n          commit_interval: 300ms"
        )
    };
    format!(
        r#"
entry:
  delay: 20ms
  source:
    http:
      port: {{port}}
  buffer:
    {entry}
  processor:
    - tagger:
        tags: [from_entry]
        tag_from_key: level
    - add_entries:
        entries:
          - metadata_key: hop
            value: entry
  route:
    - errors: '/level == "error"'
  sink:
    - pipeline:
        name: all
    - pipeline:
        name: errors
        routes: [errors]
all:
  delay: 20ms
  source:
    pipeline:
      name: entry
  processor:
    - add_entries:
        entries:
          - key: stage
            value: all
          - key: hop
            value_expression: getMetadata("hop")
  sink:
    - file:
        path: {{dir}}/all.jsonl
errors:
  delay: 20ms
  source:
    pipeline:
      name: entry
  buffer:
    {errors}
  sink:
    - file:
        path: {{dir}}/errors.jsonl
        tags_target_key: tags
"#,
        entry = topic("chain-entry"),
        errors = topic("chain-errors"),
    )
}

fn event(n: usize) -> Value {
    let level = if n.is_multiple_of(3) { "error" } else { "info" };
    json!({"n": n, "level": level})
}

#[test]
fn a_chain_routes_every_event_and_loses_none_across_kill_9s() {
    let mut s = Sluice::start(&yaml(&kafka_bootstrap()));
    let mut accepted = BTreeSet::new();
    for batch in 0..10 {
        let range = batch * 10..batch * 10 + 10;
        let body = Value::Array(range.clone().map(event).collect()).to_string();
        if s.post("/log/ingest", body.as_bytes()) == 200 {
            accepted.extend(range);
        }
        if batch == 3 || batch == 6 {
            // Whatever was accepted is in the entry topic, or already in a downstream one.
            s.kill9();
            s.restart(&[]);
        }
    }
    assert_eq!(accepted.len(), 100, "every post accepted:\n{}", s.log());
    let seen = |file: &str| -> Vec<Value> { json_lines(&s.path(file)) };
    let ids = |events: &[Value]| -> BTreeSet<usize> {
        events
            .iter()
            .map(|e| e["n"].as_u64().unwrap() as usize)
            .collect()
    };
    let errors: BTreeSet<usize> = accepted
        .iter()
        .copied()
        .filter(|n| n.is_multiple_of(3))
        .collect();
    s.wait_for(
        "every event in `all`, every error in `errors`",
        Duration::from_secs(90),
        || ids(&seen("all.jsonl")) == accepted && ids(&seen("errors.jsonl")) == errors,
    );
    let all = seen("all.jsonl");
    for e in &all {
        let mut want = event(e["n"].as_u64().unwrap() as usize);
        want["stage"] = json!("all");
        // An attribute set upstream, read downstream: metadata crosses the connection.
        want["hop"] = json!("entry");
        assert_eq!(
            e, &want,
            "each event as sent, with both pipelines' processors applied"
        );
    }
    for e in seen("errors.jsonl") {
        let mut want = event(e["n"].as_u64().unwrap() as usize);
        want["tags"] = json!(["from_entry", "error"]);
        assert_eq!(e, want, "the tags set upstream, written downstream");
    }
    // At least once: each kill -9 repeats at most what was in flight.
    assert!(all.len() <= 2 * accepted.len(), "{} lines", all.len());
    // Each connection is a sink of the upstream pipeline, with its metrics (since the restart).
    let (_, metrics) = s.get_metrics_server("/metrics");
    let written = |to: &str| {
        prometheus_value(
            &metrics,
            "sluice_sink_eventsWritten",
            &[("pipeline", "entry"), ("sink", to)],
        )
        .unwrap_or(0.0)
    };
    assert!(
        written("pipeline:all") > written("pipeline:errors") && written("pipeline:errors") > 0.0,
        "{metrics}"
    );
    assert_eq!(s.terminate(), 0, "{}", s.log());
}

/// A graceful stop drains the entry pipeline into the next before that one closes: events
/// posted just before the stop all arrive (memory buffers throughout).
#[test]
fn shutdown_drains_a_chain_upstream_first() {
    let yaml = "entry:\n  delay: 20ms\n  source:\n    http:\n      port: {port}\n  sink:\n    - pipeline:\n        name: down\ndown:\n  delay: 20ms\n  source:\n    pipeline:\n      name: entry\n  sink:\n    - file:\n        path: {dir}/down.jsonl\n";
    let mut s = Sluice::start(yaml);
    for batch in 0..5 {
        let body = Value::Array((batch * 20..batch * 20 + 20).map(event).collect()).to_string();
        assert_eq!(s.post("/log/ingest", body.as_bytes()), 200);
    }
    assert_eq!(s.terminate(), 0, "{}", s.log());
    let got: BTreeSet<u64> = json_lines(&s.path("down.jsonl"))
        .iter()
        .map(|e| e["n"].as_u64().unwrap())
        .collect();
    assert_eq!(got, (0..100).collect(), "{}", s.log());
}

/// A chain whose last sink is stalled (its endpoint answers 503): the downstream buffer fills,
/// then the upstream one, and the http source answers 503 rather than drop anything; once the
/// endpoint takes requests again, every accepted event arrives, once (a 503 is not taken).
#[test]
fn a_stalled_sink_at_the_end_of_a_chain_holds_the_chain_and_loses_nothing() {
    let endpoint = Endpoint::start();
    endpoint.state.lock().unwrap().fail_with = Some(503);
    let yaml = format!(
        "entry:\n  delay: 20ms\n  source:\n    http:\n      port: {{port}}\n      request_timeout: 300ms\n  buffer:\n    bounded_blocking:\n      buffer_size: 4\n      batch_size: 2\n  sink:\n    - pipeline:\n        name: down\ndown:\n  delay: 20ms\n  source:\n    pipeline:\n      name: entry\n  buffer:\n    bounded_blocking:\n      buffer_size: 2\n      batch_size: 1\n  sink:\n    - http:\n        url: {}\n        threshold:\n          max_events: 10\n          flush_timeout: 100ms\n        http_retry_interval: 200ms\n",
        endpoint.url()
    );
    let mut s = Sluice::start(&yaml);
    let mut accepted = BTreeSet::new();
    let mut refused = 0;
    for post in 0..30 {
        let range = post * 5..post * 5 + 5;
        let body = Value::Array(range.clone().map(event).collect()).to_string();
        match s.post("/log/ingest", body.as_bytes()) {
            200 => accepted.extend(range),
            503 => refused += 1,
            other => panic!("post {post}: {other}\n{}", s.log()),
        }
    }
    assert!(
        refused > 0,
        "a stalled end of the chain fills both buffers and the source refuses"
    );
    assert!(
        endpoint.state.lock().unwrap().taken.is_empty(),
        "the endpoint took nothing yet"
    );
    endpoint.state.lock().unwrap().fail_with = None;
    let taken = || -> Vec<u64> {
        let state = endpoint.state.lock().unwrap();
        state
            .taken
            .iter()
            .flat_map(|(_, body)| {
                body.split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(|l| {
                        serde_json::from_slice::<Value>(l).unwrap()["n"]
                            .as_u64()
                            .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let want: Vec<u64> = accepted.iter().map(|&n| n as u64).collect();
    s.wait_for(
        "every accepted event at the endpoint",
        Duration::from_secs(60),
        || {
            let mut got = taken();
            got.sort_unstable();
            got == want
        },
    );
    assert_eq!(s.terminate(), 0, "{}", s.log());
}
