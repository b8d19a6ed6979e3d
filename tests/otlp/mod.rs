//! OTLP through sluice with real OpenTelemetry clients (issue 15): here the Python SDK's OTLP/HTTP
//! exporters post protobuf to an http source, the requests' bytes go through the Kafka buffer,
//! and the `otlp` deserializer component turns each log record, span or data point into one
//! event in Data Prepper's `opensearch` shape; [`sources`] does the same through the OTLP
//! sources, over gRPC and HTTP.

use std::process::Command;
use std::time::Duration;

use sluice_tests::{Sluice, json_lines, kafka_bootstrap, root, unique};

mod otel_metrics;
mod sources;
mod trace_analytics;

/// An http source on `path` with the otlp deserializer (`options`), the Kafka buffer, a file sink.
fn start(path: &str, options: &str) -> Sluice {
    let source = format!(
        "http:\n  port: {{port}}\n  path: {path}\n  deserializer:\n    name: otlp\n    \
         options: {{{options}}}\n"
    );
    start_source(&source, &kafka_bootstrap())
}

/// A pipeline with `source` (YAML from column 0), the Kafka buffer on `bootstrap`, a file sink
/// at `out/events.jsonl` and the dead letters in `dlq.jsonl`.
fn start_source(source: &str, bootstrap: &str) -> Sluice {
    let topic = unique("otlp");
    Sluice::start(&format!(
        r#"
otel:
  delay: 20ms
  source:
{source}
  buffer:
    kafka:
      bootstrap_servers: [{bootstrap}]
      produce_timeout: 2s
      topics:
        - name: {topic}
          group_id: {topic}-g
          create_topic: true
  sink:
    - file:
        path: {{dir}}/out/events.jsonl
  dlq_path: {{dir}}/dlq.jsonl
"#,
        source = sluice_tests::indent(source, 4)
    ))
}

/// Runs `script` (in tests/otlp) against `s`'s `path`, sending `n`; asserts every export was
/// accepted.
fn send(s: &Sluice, script: &str, path: &str, n: usize) {
    let endpoint = format!("http://127.0.0.1:{}{path}", s.port);
    let sent = export(script, &endpoint, n, &[]);
    assert!(
        sent.status.success(),
        "the exporter was refused: {}\n{}",
        String::from_utf8_lossy(&sent.stderr),
        s.log()
    );
}

/// Runs `script` (in tests/otlp) against `endpoint`, sending `n`, with `env` choosing the
/// exporter (client.py: `OTLP_TRANSPORT`, `OTLP_GZIP`, `OTLP_CA`, ...).
fn export(script: &str, endpoint: &str, n: usize, env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(sluice_tests::otel_python());
    command
        .arg(root().join("tests/otlp").join(script))
        .arg(endpoint)
        .arg(n.to_string());
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().unwrap()
}

#[test]
fn logs_from_the_opentelemetry_python_sdk_arrive_once_each_in_data_preppers_shape() {
    let s = start("/v1/logs", "");
    send(&s, "send_logs.py", "/v1/logs", 20);
    let out = s.path("out/events.jsonl");
    s.wait_for("20 log events", Duration::from_secs(60), || {
        json_lines(&out).len() >= 20
    });
    let events = json_lines(&out);
    assert_eq!(events.len(), 20, "each record once");
    let mut orders: Vec<i64> = events
        .iter()
        .map(|e| e["log.attributes.order@id"].as_i64().unwrap())
        .collect();
    orders.sort_unstable();
    assert_eq!(orders, (0..20).collect::<Vec<_>>());
    let e = &events[0];
    let n = e["log.attributes.order@id"].as_i64().unwrap();
    assert_eq!(e["body"], format!("order {n} placed"), "{e}");
    assert_eq!(e["severityText"], "WARN", "{e}");
    assert_eq!(e["severityNumber"], 13, "{e}");
    assert_eq!(e["serviceName"], "checkout", "{e}");
    assert_eq!(e["resource.attributes.service@name"], "checkout", "{e}");
    assert_eq!(
        e["resource.attributes.deployment@environment"], "test",
        "{e}"
    );
    assert_eq!(e["log.attributes.region"], "eu-west", "{e}");
    assert_eq!(e["instrumentationScope.name"], "shop", "{e}");
    let time = e["time"].as_str().unwrap();
    assert!(
        time.len() >= 20 && time.ends_with('Z') && time.as_bytes()[10] == b'T',
        "an ISO-8601 instant: {time}"
    );
    assert!(
        e["observedTimestamp"].as_str().unwrap().ends_with('Z'),
        "{e}"
    );
    assert!(json_lines(&s.path("dlq.jsonl")).is_empty());
    // A body that is no OTLP request is dead-lettered whole, with the reason.
    assert_eq!(
        s.post_with(
            "/v1/logs",
            &[("Content-Type", "application/x-protobuf")],
            b"\xff\xff\xff not protobuf"
        ),
        200
    );
    s.wait_for("the dead letter", Duration::from_secs(30), || {
        json_lines(&s.path("dlq.jsonl")).len() == 1
    });
    let dlq = json_lines(&s.path("dlq.jsonl"));
    assert!(
        dlq[0]["reason"]
            .as_str()
            .unwrap()
            .contains("not an OTLP logs export request (protobuf)"),
        "{dlq:?}"
    );
}

#[test]
fn spans_from_the_opentelemetry_python_sdk_arrive_once_each_in_data_preppers_shape() {
    let s = start("/v1/traces", "signal: traces");
    send(&s, "send_traces.py", "/v1/traces", 5);
    let out = s.path("out/events.jsonl");
    s.wait_for("10 span events", Duration::from_secs(60), || {
        json_lines(&out).len() >= 10
    });
    let events = json_lines(&out);
    assert_eq!(events.len(), 10, "each span once");
    let roots: Vec<_> = events.iter().filter(|e| e["parentSpanId"] == "").collect();
    assert_eq!(roots.len(), 5);
    for root in &roots {
        assert_eq!(root["name"], "POST /orders", "{root}");
        assert_eq!(root["kind"], "SPAN_KIND_SERVER", "{root}");
        assert_eq!(root["traceGroup"], "POST /orders", "{root}");
        assert_eq!(root["serviceName"], "checkout", "{root}");
        assert_eq!(root["span.attributes.http@method"], "POST", "{root}");
        assert_eq!(root["instrumentationScope.name"], "shop", "{root}");
        assert_eq!(root["instrumentationScope.version"], "1.2.3", "{root}");
        assert_eq!(root["traceId"].as_str().unwrap().len(), 32, "{root}");
        assert_eq!(root["spanId"].as_str().unwrap().len(), 16, "{root}");
        assert!(root["durationInNanos"].as_u64().unwrap() > 0, "{root}");
        assert_eq!(
            root["traceGroupFields"]["durationInNanos"], root["durationInNanos"],
            "{root}"
        );
        // Its child: same trace, parent = the root, the event with its attributes.
        let child = events
            .iter()
            .find(|e| e["parentSpanId"] == root["spanId"])
            .unwrap_or_else(|| panic!("the child of {root}"));
        assert_eq!(child["traceId"], root["traceId"]);
        assert_eq!(child["kind"], "SPAN_KIND_CLIENT", "{child}");
        assert_eq!(child["traceGroup"], serde_json::Value::Null, "{child}");
        assert_eq!(child["events"][0]["name"], "card accepted", "{child}");
        assert_eq!(
            child["events"][0]["attributes"]["card@brand"], "visa",
            "{child}"
        );
    }
    let mut orders: Vec<i64> = roots
        .iter()
        .map(|r| r["span.attributes.order@id"].as_i64().unwrap())
        .collect();
    orders.sort_unstable();
    assert_eq!(orders, [0, 1, 2, 3, 4]);
}

#[test]
fn metrics_from_the_opentelemetry_python_sdk_arrive_one_event_per_data_point() {
    let s = start("/v1/metrics", "signal: metrics");
    send(&s, "send_metrics.py", "/v1/metrics", 4);
    let out = s.path("out/events.jsonl");
    s.wait_for("3 metric events", Duration::from_secs(60), || {
        json_lines(&out).len() >= 3
    });
    let events = json_lines(&out);
    assert_eq!(events.len(), 3, "one per data point: {events:?}");
    let by_name = |name: &str| {
        events
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("no `{name}` in {events:?}"))
    };
    let orders = by_name("orders");
    assert_eq!(orders["kind"], "SUM", "{orders}");
    assert_eq!(orders["value"], 4.0, "{orders}");
    assert_eq!(orders["isMonotonic"], true, "{orders}");
    assert_eq!(
        orders["aggregationTemporality"], "AGGREGATION_TEMPORALITY_CUMULATIVE",
        "{orders}"
    );
    assert_eq!(orders["metric.attributes.region"], "eu-west", "{orders}");
    assert_eq!(orders["serviceName"], "checkout", "{orders}");
    assert_eq!(orders["description"], "orders placed", "{orders}");
    let amounts = by_name("order.amount");
    assert_eq!(amounts["kind"], "HISTOGRAM", "{amounts}");
    assert_eq!(amounts["count"], 4, "{amounts}");
    assert_eq!(amounts["sum"], 100.0, "{amounts}");
    assert_eq!(amounts["unit"], "EUR", "{amounts}");
    let counts: Vec<u64> = amounts["bucketCountsList"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert_eq!(counts.iter().sum::<u64>(), 4, "{amounts}");
    assert_eq!(amounts["bucketCounts"], counts.len(), "{amounts}");
    assert_eq!(
        amounts["buckets"].as_array().unwrap().len(),
        counts.len(),
        "{amounts}"
    );
    let depth = by_name("queue.depth");
    assert_eq!(depth["kind"], "GAUGE", "{depth}");
    assert_eq!(depth["value"], 7.0, "{depth}");
    assert_eq!(depth["metric.attributes.queue"], "payments", "{depth}");
}

#[test]
fn an_otlp_json_body_gives_the_same_shape_as_protobuf() {
    // The OpenTelemetry Python SDK exports protobuf only: this is the OTLP specification's own
    // OTLP/JSON logs example (ids in hex, 64-bit integers as strings).
    let body = OTLP_JSON_LOGS;
    let s = start("/v1/logs", "");
    assert_eq!(
        s.post_with("/v1/logs", &[("Content-Type", "application/json")], body),
        200
    );
    let out = s.path("out/events.jsonl");
    s.wait_for("the log event", Duration::from_secs(60), || {
        json_lines(&out).len() == 1
    });
    let e = &json_lines(&out)[0];
    assert_eq!(e["time"], "2018-12-13T14:51:00.300Z", "{e}");
    assert_eq!(e["traceId"], "5b8efff798038103d269b633813fc60c", "{e}");
    assert_eq!(e["spanId"], "eee19b7ec3c1b174", "{e}");
    assert_eq!(e["body"], "Example log record", "{e}");
    assert_eq!(e["severityNumber"], 10, "{e}");
    assert_eq!(e["serviceName"], "my.service", "{e}");
    assert_eq!(e["log.attributes.int@attribute"], 10, "{e}");
    assert_eq!(
        e["log.attributes.array@attribute"], r#"["many","values"]"#,
        "{e}"
    );
    assert_eq!(e["instrumentationScope.version"], "1.0.0", "{e}");
}

/// The OTLP specification's OTLP/JSON logs example.
pub(crate) const OTLP_JSON_LOGS: &[u8] = br#"{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"my.service"}}]},"scopeLogs":[{"scope":{"name":"my.library","version":"1.0.0"},"logRecords":[{"timeUnixNano":"1544712660300000000","observedTimeUnixNano":"1544712660300000000","severityNumber":10,"severityText":"Information","traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"EEE19B7EC3C1B174","body":{"stringValue":"Example log record"},"attributes":[{"key":"string.attribute","value":{"stringValue":"some string"}},{"key":"int.attribute","value":{"intValue":"10"}},{"key":"array.attribute","value":{"arrayValue":{"values":[{"stringValue":"many"},{"stringValue":"values"}]}}}]}]}]}]}"#;
