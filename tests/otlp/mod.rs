//! OTLP through sluice with real OpenTelemetry clients (issue 15, first part): the Python SDK's
//! OTLP/HTTP log exporter posts protobuf to an http source, the request's bytes go through the
//! Kafka buffer, and the `otlp` deserializer component turns each log record into one event
//! in Data Prepper's `opensearch` shape.

use std::process::Command;
use std::time::Duration;

use sluice_tests::{Sluice, json_lines, kafka_bootstrap, root, unique};

#[test]
fn logs_from_the_opentelemetry_python_sdk_arrive_once_each_in_data_preppers_shape() {
    let topic = unique("otlp-logs");
    let s = Sluice::start(&format!(
        r#"
otel-logs:
  delay: 20ms
  source:
    http:
      port: {{port}}
      path: /v1/logs
      deserializer: otlp
  buffer:
    kafka:
      bootstrap_servers: [{}]
      topics:
        - name: {topic}
          group_id: {topic}-g
          create_topic: true
  sink:
    - file:
        path: {{dir}}/out/events.jsonl
  dlq_path: {{dir}}/dlq.jsonl
"#,
        kafka_bootstrap()
    ));
    let sent = Command::new(sluice_tests::otel_python())
        .arg(root().join("tests/otlp/send_logs.py"))
        .arg(format!("http://127.0.0.1:{}/v1/logs", s.port))
        .arg("20")
        .output()
        .unwrap();
    assert!(
        sent.status.success(),
        "the exporter was refused: {}\n{}",
        String::from_utf8_lossy(&sent.stderr),
        s.log()
    );
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
