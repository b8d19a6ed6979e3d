//! A Data Prepper style pipeline end to end, event by event: Apache log lines posted to the
//! http source and log records from the OpenTelemetry Python SDK to `otel_logs_source`, each
//! through the Kafka buffer, then `grok`, `date`, `drop_events`, `add_entries`, and routes to
//! sinks (one of them `_default`, one route no sink takes); kill -9 in the middle.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::{Sluice, free_port, json_lines, kafka_bootstrap, otel_python, root, unique};

const VERBS: [&str; 4] = ["GET", "POST", "HEAD", "GET"];
const STATUSES: [u16; 5] = [200, 404, 500, 301, 503];

/// Line `i`: an Apache access log line, or (every 7th) one no pattern matches.
fn line(i: usize) -> String {
    if i % 7 == 6 {
        return format!("garbage line {i}");
    }
    format!(
        r#"10.0.0.{} - u{i} [10/Oct/2000:13:{:02}:36 -0700] "{} /item/{i} HTTP/1.1" {} {}"#,
        i % 250,
        i % 60,
        VERBS[i % 4],
        STATUSES[i % 5],
        100 + i
    )
}

/// Where line `i` must end: `None` when dropped (HEAD) or routed to no sink (301).
fn expected_sink(i: usize) -> Option<&'static str> {
    if i % 7 == 6 {
        return Some("rest");
    }
    if VERBS[i % 4] == "HEAD" {
        return None;
    }
    match STATUSES[i % 5] {
        500 | 503 => Some("errors"),
        404 => Some("client"),
        301 => None,
        _ => Some("rest"),
    }
}

fn yaml(bootstrap: &str, otlp_port: u16) -> String {
    let (http_topic, otlp_topic) = (unique("dp-http"), unique("dp-otlp"));
    format!(
        r#"
apache:
  delay: 20ms
  source:
    http:
      port: {{port}}
  buffer:
    kafka:
      bootstrap_servers: [{bootstrap}]
      topics:
        - name: {http_topic}
          group_id: {http_topic}-g
          create_topic: true
          commit_interval: 500ms
  processor:
    - grok:
        match:
          log: ['%{{IPORHOST:client}} %{{USER:ident}} %{{USER:auth}} \[%{{HTTPDATE:timestamp}}\] "%{{WORD:verb}} %{{NOTSPACE:request}} HTTP/%{{NUMBER:httpversion}}" %{{NUMBER:response:int}} %{{NUMBER:bytes:int}}']
        tags_on_match_failure: [_grokparsefailure]
    - date:
        match:
          - key: timestamp
            patterns: ['dd/MMM/yyyy:HH:mm:ss Z']
        destination: '@timestamp'
    - drop_events:
        drop_when: '/verb == "HEAD"'
    - add_entries:
        entries:
          - key: kind
            value_expression: getEventType()
          - key: class
            format: '${{/verb}} ${{/response}}'
            add_when: '/response != null'
  route:
    - errors: '/response >= 500'
    - client: '/response >= 400 and /response < 500'
    - moved: '/response == 301'
  sink:
    - file:
        path: {{dir}}/errors.jsonl
        routes: [errors]
    - file:
        path: {{dir}}/client.jsonl
        routes: [client]
        exclude_keys: [ident]
    - file:
        path: {{dir}}/rest.jsonl
        routes: [_default]
        tags_target_key: tags
  dlq_path: {{dir}}/apache-dlq.jsonl
otlp:
  delay: 20ms
  source:
    otel_logs_source:
      port: {otlp_port}
      ssl: false
  buffer:
    kafka:
      bootstrap_servers: [{bootstrap}]
      topics:
        - name: {otlp_topic}
          group_id: {otlp_topic}-g
          create_topic: true
          commit_interval: 500ms
  processor:
    - grok:
        match:
          body: ['order %{{INT:order:int}} placed']
    - drop_events:
        drop_when: '/order % 4 == 0'
    - add_entries:
        entries:
          - key: kind
            value_expression: getEventType()
  routes:
    - even: '/order % 2 == 0'
  sink:
    - file:
        path: {{dir}}/even.jsonl
        routes: [even]
    - file:
        path: {{dir}}/odd.jsonl
        routes: [_default]
  dlq_path: {{dir}}/otlp-dlq.jsonl
"#
    )
}

/// Posts lines `range` as `[{{"log": ...}}]`; true if accepted.
fn post(s: &Sluice, range: std::ops::Range<usize>) -> bool {
    let body: Vec<Value> = range.map(|i| json!({"log": line(i), "n": i})).collect();
    s.try_post(
        "/log/ingest",
        &serde_json::to_vec(&body).unwrap(),
        Duration::from_secs(10),
    ) == Ok(200)
}

#[test]
fn apache_and_otlp_logs_are_parsed_dropped_enriched_and_routed_event_by_event_across_a_kill_9() {
    let otlp_port = free_port();
    let mut s = Sluice::start(&yaml(&kafka_bootstrap(), otlp_port));
    let mut accepted: BTreeSet<usize> = BTreeSet::new();
    for batch in 0..12 {
        let range = batch * 10..batch * 10 + 10;
        if post(&s, range.clone()) {
            accepted.extend(range);
        }
        if batch == 5 {
            // Mid-stream: whatever was accepted is in Kafka and must come out once restarted.
            s.kill9();
            s.restart(&[]);
        }
    }
    assert_eq!(accepted.len(), 120, "every post accepted:\n{}", s.log());
    let sent = std::process::Command::new(otel_python())
        .arg(root().join("tests/otlp/send_logs.py"))
        .arg(format!("http://127.0.0.1:{otlp_port}"))
        .arg("12")
        .env("OTLP_TRANSPORT", "grpc")
        .output()
        .unwrap();
    assert!(
        sent.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&sent.stderr),
        s.log()
    );

    // Apache: every accepted line in its sink (at least once: kill -9 may repeat a batch),
    // in no other.
    let sinks = ["errors", "client", "rest"];
    let expected: BTreeMap<&str, BTreeSet<usize>> = sinks
        .iter()
        .map(|&sink| {
            let ids = accepted
                .iter()
                .copied()
                .filter(|&i| expected_sink(i) == Some(sink));
            (sink, ids.collect())
        })
        .collect();
    let seen = |sink: &str| -> BTreeSet<usize> {
        json_lines(&s.path(&format!("{sink}.jsonl")))
            .iter()
            .map(|e| e["n"].as_u64().unwrap() as usize)
            .collect()
    };
    s.wait_for(
        "every apache line in its sink",
        Duration::from_secs(90),
        || sinks.iter().all(|sink| seen(sink) == expected[sink]),
    );
    for event in json_lines(&s.path("errors.jsonl")) {
        let i = event["n"].as_u64().unwrap() as usize;
        assert_eq!(event["response"], STATUSES[i % 5], "{event}");
        assert_eq!(event["bytes"], 100 + i, "typed by grok: {event}");
        assert_eq!(event["kind"], "LOG", "{event}");
        assert_eq!(
            event["class"],
            format!("{} {}", VERBS[i % 4], STATUSES[i % 5]),
            "{event}"
        );
        assert_eq!(
            event["@timestamp"],
            format!("2000-10-10T20:{:02}:36.000Z", i % 60),
            "{event}"
        );
        assert!(
            event.get("tags").is_none(),
            "only the rest sink writes tags: {event}"
        );
    }
    for event in json_lines(&s.path("client.jsonl")) {
        assert!(event.get("ident").is_none(), "exclude_keys: {event}");
        assert_eq!(event["response"], 404, "{event}");
    }
    for event in json_lines(&s.path("rest.jsonl")) {
        let i = event["n"].as_u64().unwrap() as usize;
        if i % 7 == 6 {
            assert_eq!(event["tags"], json!(["_grokparsefailure"]), "{event}");
            assert!(event.get("class").is_none(), "add_when: {event}");
        } else {
            assert_eq!(event["tags"], json!([]), "{event}");
            assert_eq!(event["response"], 200, "{event}");
        }
    }
    let moved = accepted
        .iter()
        .filter(|&&i| i % 7 != 6 && VERBS[i % 4] != "HEAD" && STATUSES[i % 5] == 301)
        .count();
    assert!(moved > 0);
    s.wait_for("301s counted as unrouted", Duration::from_secs(10), || {
        s.metric("sluice_eventsUnrouted", "apache").unwrap_or(0.0) >= moved as f64
    });

    // OTLP: orders 0..12, every fourth dropped, even ones to `even`, odd to `_default`.
    let orders = |sink: &str| -> Vec<i64> {
        let mut o: Vec<i64> = json_lines(&s.path(&format!("{sink}.jsonl")))
            .iter()
            .map(|e| {
                assert_eq!(e["kind"], "LOG", "{e}");
                e["order"].as_i64().unwrap()
            })
            .collect();
        o.sort_unstable();
        o
    };
    s.wait_for(
        "the otlp events in their sinks",
        Duration::from_secs(60),
        || orders("even") == [2, 6, 10] && orders("odd") == [1, 3, 5, 7, 9, 11],
    );
    assert!(json_lines(&s.path("apache-dlq.jsonl")).is_empty());
    assert_eq!(s.terminate(), 0, "{}", s.log());
}

/// A component in the plugin folder named like a built-in (`uppercase_string.wasm`, here the
/// example `redact` processor) replaces the built-in: its block is the plugin's options, and
/// the start says so.
#[test]
fn a_plugin_with_a_built_in_processors_name_replaces_it() {
    let plugins = tempfile::tempdir().unwrap();
    for (from, to) in [("json", "json"), ("redact", "uppercase_string")] {
        std::fs::copy(
            sluice_tests::plugin_dir().join(format!("{from}.wasm")),
            plugins.path().join(format!("{to}.wasm")),
        )
        .unwrap();
    }
    let yaml = "p:\n  delay: 20ms\n  source:\n    http:\n      port: {port}\n  processor:\n    - uppercase_string:\n        keys: [password]\n    - lowercase_string:\n        with_keys: [user]\n  sink:\n    - file:\n        path: {dir}/out.jsonl\n";
    let dir = plugins.path().display().to_string();
    let mut s = Sluice::start_with(yaml, &["--plugins", &dir]);
    assert_eq!(
        s.post(
            "/log/ingest",
            br#"[{"user": "ANA", "password": "hunter2"}]"#
        ),
        200
    );
    s.wait_for("the event", Duration::from_secs(30), || {
        !json_lines(&s.path("out.jsonl")).is_empty()
    });
    assert_eq!(
        json_lines(&s.path("out.jsonl")),
        [json!({"user": "ana", "password": "***"})],
        "the plugin masked, the built-in lowercased"
    );
    assert!(
        s.log().contains(
            "the plugin in the plugin folder replaces the built-in processor of that name"
        ),
        "{}",
        s.log()
    );
    assert_eq!(s.terminate(), 0, "{}", s.log());
}

/// An event that is a JSON object but holds a number no value can (`1e400`) is dead-lettered
/// with the reason when built-in processors must read it; the rest of its batch goes on.
#[test]
fn an_event_the_processors_cannot_read_is_dead_lettered_and_the_rest_go_on() {
    let yaml = "p:\n  delay: 20ms\n  source:\n    http:\n      port: {port}\n  processor:\n    - drop_events:\n        drop_when: '/b == 1'\n  sink:\n    - file:\n        path: {dir}/out.jsonl\n  dlq_path: {dir}/dlq.jsonl\n";
    let mut s = Sluice::start(yaml);
    assert_eq!(s.post("/log/ingest", br#"[{"a": 1e400}, {"b": 2}]"#), 200);
    s.wait_for(
        "the good event and the dead letter",
        Duration::from_secs(30),
        || {
            !json_lines(&s.path("out.jsonl")).is_empty()
                && !json_lines(&s.path("dlq.jsonl")).is_empty()
        },
    );
    assert_eq!(json_lines(&s.path("out.jsonl")), [json!({"b": 2})]);
    let dead = json_lines(&s.path("dlq.jsonl"));
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(
        dead[0]["reason"]
            .as_str()
            .unwrap()
            .contains("cannot be read for the processors"),
        "{}",
        dead[0]
    );
    assert_eq!(
        s.post("/log/ingest", br#"[{"b": 3}]"#),
        200,
        "still running"
    );
    s.wait_for("the next event", Duration::from_secs(30), || {
        json_lines(&s.path("out.jsonl")).len() == 2
    });
    assert_eq!(s.terminate(), 0, "{}", s.log());
}

/// A processor component of contract 0.3 (the example `tagger`) reads the tags a built-in set
/// before it and adds its own and metadata attributes; routes (`hasTags`), conditions
/// (`getMetadata`) and a sink's `tags_target_key` read them after it. A 0.2 component in the
/// same list (`redact`) leaves them as they were.
#[test]
fn a_component_processor_reads_and_sets_tags_and_attributes_that_routes_read() {
    let yaml = r#"p:
  delay: 20ms
  source:
    http:
      port: {port}
  processor:
    - grok:
        match:
          message: ['%{WORD:level} %{GREEDYDATA:text}']
        tags_on_match_failure: [unparsed]
    - tagger:
        tags: [seen]
        tag_from_key: level
        attributes_from_keys: [tenant]
        count_tags_into: tags_before
    - redact:
        keys: [secret]
    - add_entries:
        entries:
          - key: tenant_seen
            value_expression: getMetadata("tenant")
            add_when: 'getMetadata("tags_before") == 1'
          - key: tags_before
            value_expression: getMetadata("tags_before")
  route:
    - errors: 'hasTags("error")'
    - unparsed: 'hasTags("unparsed")'
  sink:
    - file:
        path: {dir}/errors.jsonl
        routes: [errors]
        tags_target_key: tags
    - file:
        path: {dir}/unparsed.jsonl
        routes: [unparsed]
        tags_target_key: tags
    - file:
        path: {dir}/rest.jsonl
        routes: [_default]
  dlq_path: {dir}/dlq.jsonl
"#;
    let mut s = Sluice::start(yaml);
    assert_eq!(
        s.post(
            "/log/ingest",
            br#"[{"message": "error disk full", "tenant": "db", "secret": "x"},
                 {"message": "info all good", "tenant": "web"},
                 {"message": "!!", "tenant": "db"}]"#
        ),
        200
    );
    let all = || {
        ["errors", "unparsed", "rest"]
            .map(|f| json_lines(&s.path(&format!("{f}.jsonl"))).len())
            .iter()
            .sum::<usize>()
    };
    s.wait_for("the three events", Duration::from_secs(30), || all() == 3);
    assert_eq!(
        json_lines(&s.path("errors.jsonl")),
        [
            json!({"message": "error disk full", "level": "error", "text": "disk full",
                "tenant": "db", "secret": "***", "tags_before": 0,
                "tags": ["seen", "error"]})
        ],
        "tagged by the component, masked by the 0.2 one, routed on the tag"
    );
    assert_eq!(
        json_lines(&s.path("unparsed.jsonl")),
        [
            json!({"message": "!!", "tenant": "db", "tenant_seen": "db", "tags_before": 1,
                "tags": ["unparsed", "seen"]})
        ],
        "the component saw grok's tag, kept it and set the attributes conditions read"
    );
    assert_eq!(
        json_lines(&s.path("rest.jsonl")),
        [
            json!({"message": "info all good", "level": "info", "text": "all good",
                "tenant": "web", "tags_before": 0})
        ]
    );
    assert_eq!(s.terminate(), 0, "{}", s.log());
}
