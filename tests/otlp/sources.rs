//! The OTLP sources, with the OpenTelemetry Python SDK's gRPC and HTTP exporters: each request's
//! bytes through the Kafka buffer, one event per record, span or data point; TLS and
//! credentials; gzip; retryable errors (never success) while the broker is down.

use std::time::Duration;

use serde_json::Value;
use sluice_tests::{Broker, Sluice, json_lines, kafka_bootstrap, test_certificates};

use super::{OTLP_JSON_LOGS, export, start_source as start};

/// Sends with `script`, asserting the exporter's exports were all accepted.
fn send_ok(s: &Sluice, script: &str, endpoint: &str, n: usize, env: &[(&str, &str)]) {
    let out = export(script, endpoint, n, env);
    assert!(
        out.status.success(),
        "{script} {env:?} was refused: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.log()
    );
}

/// Waits until the sink has `n` events, then returns them (asserting there are no more).
fn events(s: &Sluice, n: usize) -> Vec<Value> {
    let out = s.path("out/events.jsonl");
    s.wait_for(&format!("{n} events"), Duration::from_secs(60), || {
        json_lines(&out).len() >= n
    });
    std::thread::sleep(Duration::from_millis(300));
    let events = json_lines(&out);
    assert_eq!(events.len(), n, "each once: {events:?}");
    events
}

const GRPC: (&str, &str) = ("OTLP_TRANSPORT", "grpc");
const GZIP: (&str, &str) = ("OTLP_GZIP", "1");

#[test]
fn otel_trace_source_takes_grpc_with_gzip_and_unframed_otlp_http_on_data_preppers_path() {
    let s = start(
        "otel_trace_source:\n  port: {port}\n  ssl: false\n  compression: gzip\n  unframed_requests: true\n  \
         health_check_service: true\n",
        &kafka_bootstrap(),
    );
    // The health checks: gRPC's and HTTP's.
    let health = std::process::Command::new(sluice_tests::otel_python())
        .arg(sluice_tests::root().join("tests/otlp/health.py"))
        .arg(format!("127.0.0.1:{}", s.port))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&health.stdout).trim(),
        "0801",
        "SERVING: {}",
        String::from_utf8_lossy(&health.stderr)
    );
    let body = ureq::get(&format!("http://127.0.0.1:{}/health", s.port))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    assert_eq!(body.trim(), r#"{"healthy":true}"#);
    let grpc = format!("http://127.0.0.1:{}", s.port);
    send_ok(&s, "send_traces.py", &grpc, 3, &[GRPC, GZIP]);
    // OTLP/HTTP (protobuf, gzip) at the gRPC method's path, as Data Prepper's unframed requests.
    let unframed = format!(
        "http://127.0.0.1:{}/opentelemetry.proto.collector.trace.v1.TraceService/Export",
        s.port
    );
    send_ok(&s, "send_traces.py", &unframed, 2, &[GZIP]);
    let events = events(&s, 10);
    let roots: Vec<&Value> = events.iter().filter(|e| e["parentSpanId"] == "").collect();
    assert_eq!(roots.len(), 5, "{events:?}");
    let mut orders: Vec<i64> = roots
        .iter()
        .map(|r| r["span.attributes.order@id"].as_i64().unwrap())
        .collect();
    orders.sort_unstable();
    assert_eq!(orders, [0, 0, 1, 1, 2], "3 over gRPC, 2 over HTTP");
    // Data Prepper's `opensearch` shape, the single-signal sources' default.
    assert_eq!(roots[0]["traceGroup"], "POST /orders", "{}", roots[0]);
    assert_eq!(roots[0]["serviceName"], "checkout", "{}", roots[0]);
    assert!(json_lines(&s.path("dlq.jsonl")).is_empty());
}

#[test]
fn the_otlp_source_takes_all_three_signals_on_one_port_in_the_otel_shape() {
    let s = start(
        "otlp:\n  port: {port}\n  ssl: false\n  unframed_requests: true\n  compression: gzip\n",
        &kafka_bootstrap(),
    );
    let grpc = format!("http://127.0.0.1:{}", s.port);
    send_ok(&s, "send_logs.py", &grpc, 4, &[GRPC]);
    send_ok(&s, "send_traces.py", &grpc, 2, &[GRPC]);
    let metrics = format!(
        "http://127.0.0.1:{}/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
        s.port
    );
    send_ok(&s, "send_metrics.py", &metrics, 2, &[]);
    send_ok(&s, "send_metrics.py", &grpc, 2, &[GRPC, GZIP]);
    // OTLP/JSON (no SDK exports it): the specification's example, answered in JSON.
    let json = ureq::post(&format!(
        "http://127.0.0.1:{}/opentelemetry.proto.collector.logs.v1.LogsService/Export",
        s.port
    ))
    .header("Content-Type", "application/json")
    .send(OTLP_JSON_LOGS)
    .unwrap()
    .body_mut()
    .read_to_string()
    .unwrap();
    assert_eq!(json, "{}", "an empty ExportLogsServiceResponse");
    let events = events(&s, 4 + 1 + 4 + 3 + 3);
    let logs: Vec<&Value> = events.iter().filter(|e| e.get("body").is_some()).collect();
    let spans: Vec<&Value> = events
        .iter()
        .filter(|e| e.get("spanId").is_some() && e.get("body").is_none())
        .collect();
    let points: Vec<&Value> = events
        .iter()
        .filter(|e| {
            e.get("kind")
                .is_some_and(|k| !k.as_str().unwrap_or("").starts_with("SPAN_KIND"))
        })
        .collect();
    assert_eq!(
        (logs.len(), spans.len(), points.len()),
        (5, 4, 6),
        "{events:?}"
    );
    // Data Prepper's `otel` shape, the `otlp` source's default: attributes nested, as named.
    let example = logs
        .iter()
        .find(|e| e["body"] == "Example log record")
        .unwrap();
    assert_eq!(example["attributes"]["int.attribute"], 10, "{example}");
    assert_eq!(
        example["resource"]["attributes"]["service.name"], "my.service",
        "{example}"
    );
    let log = logs
        .iter()
        .find(|e| e["body"] != "Example log record")
        .unwrap();
    assert_eq!(
        log["resource"]["attributes"]["service.name"], "checkout",
        "{log}"
    );
    assert_eq!(log["attributes"]["region"], "eu-west", "{log}");
    assert_eq!(log["instrumentationScope"]["name"], "shop", "{log}");
    assert!(log.get("serviceName").is_none(), "{log}");
    let root = spans.iter().find(|e| e["parentSpanId"] == "").unwrap();
    assert_eq!(root["attributes"]["http.method"], "POST", "{root}");
    assert!(root["status"]["code"].is_number(), "{root}");
    assert!(root.get("traceGroup").is_none(), "{root}");
    let gauge = points.iter().find(|e| e["name"] == "queue.depth").unwrap();
    assert_eq!(gauge["kind"], "GAUGE", "{gauge}");
    assert_eq!(gauge["attributes"]["queue"], "payments", "{gauge}");
}

#[test]
fn otel_logs_source_serves_tls_and_basic_auth_to_grpc_and_its_http_path() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = test_certificates(dir.path());
    let s = start(
        &format!(
            "otel_logs_source:\n  port: {{port}}\n  sslKeyCertChainFile: {}\n  sslKeyFile: {}\n  \
             http_path: /v1/logs\n  compression: gzip\n  authentication:\n    http_basic:\n      \
             username: shop\n      password: s3cret\n",
            cert.display(),
            key.display()
        ),
        &kafka_bootstrap(),
    );
    let ca = ca.display().to_string();
    // `shop:s3cret`, and a wrong password.
    let good = ("OTLP_HEADERS", "authorization=Basic c2hvcDpzM2NyZXQ=");
    let bad = ("OTLP_HEADERS", "authorization=Basic c2hvcDp3cm9uZw==");
    let tls = ("OTLP_CA", ca.as_str());
    let grpc = format!("https://127.0.0.1:{}", s.port);
    let http = format!("https://127.0.0.1:{}/v1/logs", s.port);
    send_ok(&s, "send_logs.py", &grpc, 3, &[GRPC, GZIP, tls, good]);
    send_ok(&s, "send_logs.py", &http, 2, &[GZIP, tls, good]);
    for env in [[GRPC, tls, bad], [GZIP, tls, bad]] {
        let refused = export(
            "send_logs.py",
            if env[0] == GRPC { &grpc } else { &http },
            1,
            &env,
        );
        assert!(!refused.status.success(), "{env:?} got in:\n{}", s.log());
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.contains("UNAUTHENTICATED") || stderr.contains("401"),
            "{env:?}: {stderr}"
        );
    }
    let events = events(&s, 5);
    assert!(
        events.iter().all(|e| e["serviceName"] == "checkout"),
        "{events:?}"
    );
}

#[test]
fn while_the_broker_is_down_otlp_clients_get_retryable_errors_never_success() {
    let mut broker = Broker::start();
    let s = start(
        "otel_trace_source:\n  port: {port}\n  ssl: false\n  unframed_requests: true\n  \
         request_timeout: 3s\n",
        &broker.bootstrap(),
    );
    let grpc = format!("http://127.0.0.1:{}", s.port);
    let path = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
    send_ok(&s, "send_traces.py", &grpc, 1, &[GRPC]);
    events(&s, 2);

    broker.stop();
    // The client waits long enough for the source's 3 s `request_timeout` answer on a loaded
    // machine (sooner it would see its own DEADLINE_EXCEEDED, not the source's UNAVAILABLE).
    let refused = export("send_traces.py", &grpc, 1, &[GRPC, ("OTLP_TIMEOUT", "15")]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success(),
        "accepted with the broker down:\n{stderr}"
    );
    assert!(
        stderr.contains("Transient error StatusCode.UNAVAILABLE"),
        "a retryable UNAVAILABLE: {stderr}"
    );
    // OTLP/HTTP: 503 with Retry-After (an empty but valid protobuf request would not be written,
    // so send a span's worth of bytes: field 1, an empty ResourceSpans).
    let (status, retry_after) = s.post_full(
        path,
        &[("Content-Type", "application/x-protobuf")],
        &[0x0a, 0x00],
    );
    assert_eq!(status, 503, "{}", s.log());
    assert!(retry_after.is_some(), "Retry-After");

    broker.resume();
    s.wait_for("an export accepted again", Duration::from_secs(60), || {
        export("send_traces.py", &grpc, 1, &[GRPC]).status.success()
    });
    // Everything acknowledged arrived; what was refused may arrive too (at least once).
    let out = s.path("out/events.jsonl");
    s.wait_for(
        "the spans after the outage",
        Duration::from_secs(60),
        || {
            json_lines(&out)
                .iter()
                .filter(|e| e.get("spanId").is_some())
                .count()
                >= 4
        },
    );
}
