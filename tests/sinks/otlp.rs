//! The otlp sink in the real binary. Into a receiver written on the `opentelemetry-proto`
//! Python package (`tests/otlp/receive.py`), over OTLP/gRPC and OTLP/HTTP: every span, log
//! record and metric data point a client sent through sluice's `otlp` source arrives with
//! every field as sent, retried while the receiver refuses. Into sluice's own OTLP sources
//! (Data Prepper's `opensearch` shape at both ends): the events a second sluice makes of what
//! the sink sent are the events the first one had.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_tests::{Sluice, free_ports, json_lines, otel_python, root};

/// `receive.py` running: its port and what it received.
struct Receiver {
    child: Child,
    dir: tempfile::TempDir,
    port: u16,
}

impl Receiver {
    /// A receiver speaking `mode` (`grpc` or `http`) that refuses its first `fail` requests.
    fn start(mode: &str, fail: usize) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port_file = dir.path().join("port");
        let child = Command::new(otel_python())
            .arg(root().join("tests/otlp/receive.py"))
            .args([mode, &port_file.display().to_string()])
            .arg(dir.path().join("requests.jsonl"))
            .arg(fail.to_string())
            .stderr(std::fs::File::create(dir.path().join("receiver.log")).unwrap())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                break text.trim().parse().unwrap();
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the receiver did not start: {}",
                std::fs::read_to_string(dir.path().join("receiver.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        Self { child, dir, port }
    }

    fn requests(&self) -> Vec<Value> {
        json_lines(&self.dir.path().join("requests.jsonl"))
    }

    /// The items of the requests it took, in a canonical order.
    fn items(&self) -> Vec<Value> {
        let mut items: Vec<Value> = self
            .requests()
            .into_iter()
            .filter(|r| r.get("refused").is_none())
            .flat_map(|r| r["items"].as_array().unwrap().clone())
            .collect();
        items.sort_by_key(Value::to_string);
        items
    }

    /// Waits until it took `n` items, then returns them.
    fn wait_items(&self, n: usize, s: &Sluice) -> Vec<Value> {
        s.wait_for(&format!("{n} items"), Duration::from_secs(90), || {
            self.items().len() >= n
        });
        self.items()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `send_items.py`'s requests to the otlp source of `s` (gRPC); the items it sent, in a
/// canonical order.
fn send_items(s: &Sluice) -> Vec<Value> {
    let expected = s.path("expected.json");
    let out = Command::new(otel_python())
        .arg(root().join("tests/otlp/send_items.py"))
        .arg(format!("127.0.0.1:{}", s.port))
        .arg(&expected)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "send_items.py: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.log()
    );
    let text = std::fs::read_to_string(expected).unwrap();
    let mut items: Vec<Value> = serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_array()
        .unwrap()
        .clone();
    items.sort_by_key(Value::to_string);
    items
}

/// Asserts the items are the same, naming the first that differs.
fn assert_same_items(got: &[Value], want: &[Value]) {
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g, w, "an item differs:\n got {g}\nwant {w}");
    }
    assert_eq!(got.len(), want.len(), "as many items as were sent");
}

/// `otlp` source (the `otel` shape) → `sinks`.
fn otlp_in(sinks: &str) -> String {
    format!(
        "otlp-in:\n  delay: 20ms\n  source:\n    otlp:\n      port: {{port}}\n      ssl: false\n  \
         sink:\n{sinks}  dlq_path: {{dir}}/dlq.jsonl\n"
    )
}

#[test]
fn otlp_grpc_receiver_gets_every_span_log_and_metric_point_as_sent_after_a_refusal() {
    let receiver = Receiver::start("grpc", 1);
    let s = Sluice::start(&otlp_in(&format!(
        "    - otlp:\n        endpoint: http://127.0.0.1:{}\n        protocol: grpc\n        \
         additional_headers:\n          X-Tenant: acme\n        threshold:\n          \
         flush_timeout: 50ms\n",
        receiver.port
    )));
    let sent = send_items(&s);
    assert_eq!(
        sent.len(),
        2 + 2 + 6,
        "2 spans, 2 log records, 6 data points"
    );
    let got = receiver.wait_items(sent.len(), &s);
    assert_same_items(&got, &sent);
    let requests = receiver.requests();
    assert!(
        requests.iter().any(|r| r.get("refused").is_some()),
        "the first request was refused, and retried: {requests:?}"
    );
    // (grpcio hides `grpc-encoding` from the metadata it shows; the second sluice below, whose
    // sources take gzip only with `compression: gzip`, shows the sink compresses by default.)
    for r in &requests {
        assert_eq!(r["headers"]["x-tenant"], "acme", "{r}");
    }
    assert!(json_lines(&s.path("dlq.jsonl")).is_empty(), "{}", s.log());
}

#[test]
fn otlp_http_receiver_gets_each_signal_at_its_path_through_data_preppers_routes() {
    let receiver = Receiver::start("http", 0);
    let base = format!("http://127.0.0.1:{}", receiver.port);
    // Data Prepper's README example: one sink per signal, picked by `getEventType()`.
    let yaml = otlp_in(&format!(
        "    - otlp:\n        endpoint: {base}/v1/traces\n        routes: [traces]\n\
         \x20   - otlp:\n        endpoint: {base}/v1/logs\n        routes: [logs]\n        \
         compression: none\n\
         \x20   - otlp:\n        endpoint: {base}/v1/metrics\n        routes: [metrics]\n        \
         threshold:\n          max_events: 2\n"
    ))
    .replace(
        "  sink:\n",
        "  routes:\n    - logs: 'getEventType() == \"LOG\"'\n    - traces: 'getEventType() == \
         \"TRACE\"'\n    - metrics: 'getEventType() == \"METRIC\"'\n  sink:\n",
    );
    let s = Sluice::start(&yaml);
    let sent = send_items(&s);
    let got = receiver.wait_items(sent.len(), &s);
    assert_same_items(&got, &sent);
    let requests = receiver.requests();
    for r in &requests {
        let encoding = r["headers"].get("content-encoding").and_then(Value::as_str);
        let want = if r["signal"] == "logs" {
            None
        } else {
            Some("gzip")
        };
        assert_eq!(encoding, want, "{r}");
    }
    let metric_requests: Vec<usize> = requests
        .iter()
        .filter(|r| r["signal"] == "metrics")
        .map(|r| r["items"].as_array().unwrap().len())
        .collect();
    assert!(
        metric_requests.len() >= 3 && metric_requests.iter().all(|&n| n <= 2),
        "max_events: 2 cuts the 6 points into requests of at most 2: {metric_requests:?}"
    );
}

/// Data Prepper's OTLP sources (the `opensearch` shape), one pipeline per signal on `ports`,
/// each writing its events to `<signal>.jsonl`, and with `sink` (YAML, `{signal}` and `{port}`
/// filled in per pipeline) besides.
fn three_sources(ports: &[u16; 3], sink: &str) -> String {
    let mut yaml = String::new();
    for ((signal, source, method), port) in [
        ("traces", "otel_trace_source", "trace.v1.TraceService"),
        ("logs", "otel_logs_source", "logs.v1.LogsService"),
        (
            "metrics",
            "otel_metrics_source",
            "metrics.v1.MetricsService",
        ),
    ]
    .iter()
    .zip(ports)
    {
        let extra = sink
            .replace("{signal}", signal)
            .replace("{method}", method)
            .replace("{i}", &port.to_string());
        yaml.push_str(&format!(
            "{signal}:\n  delay: 20ms\n  source:\n    {source}:\n      port: {port}\n      \
             ssl: false\n      unframed_requests: true\n      compression: gzip\n  sink:\n    - file:\n        path: \
             {{dir}}/{signal}.jsonl\n{extra}"
        ));
    }
    yaml
}

#[test]
fn a_second_sluice_makes_the_same_events_of_what_the_sink_sent() {
    let b_ports: [u16; 3] = free_ports(3).try_into().unwrap();
    let b = Sluice::start_without_listener(&three_sources(&b_ports, ""));
    let a_ports: [u16; 3] = free_ports(3).try_into().unwrap();
    // Traces and metrics over gRPC; logs over OTLP/HTTP at the gRPC method's path (Data
    // Prepper's unframed requests).
    let sinks = "    - otlp:\n        endpoint: ENDPOINT\n        PROTOCOL\n        threshold:\n          \
         flush_timeout: 50ms\n";
    let mut yaml = three_sources(&a_ports, sinks);
    for (signal, port) in ["traces", "logs", "metrics"].iter().zip(b_ports) {
        let (endpoint, protocol) = if *signal == "logs" {
            (
                format!(
                    "http://127.0.0.1:{port}/opentelemetry.proto.collector.logs.v1.LogsService/Export"
                ),
                "protocol: http",
            )
        } else {
            (format!("http://127.0.0.1:{port}"), "protocol: grpc")
        };
        yaml = yaml
            .replacen("ENDPOINT", &endpoint, 1)
            .replacen("PROTOCOL", protocol, 1);
    }
    let a = Sluice::start_without_listener(&yaml);
    for (script, port, n) in [
        ("send_traces.py", a_ports[0], 3),
        ("send_logs.py", a_ports[1], 4),
        ("send_metrics.py", a_ports[2], 2),
    ] {
        let out = Command::new(otel_python())
            .arg(root().join("tests/otlp").join(script))
            .arg(format!("http://127.0.0.1:{port}"))
            .arg(n.to_string())
            .env("OTLP_TRANSPORT", "grpc")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{script}: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            a.log()
        );
    }
    // Each trace is two spans; send_metrics.py's points: a counter's, a histogram's, a gauge's.
    for (signal, n) in [("traces", 6), ("logs", 4), ("metrics", 3)] {
        let file = |s: &Sluice| -> PathBuf { s.path(&format!("{signal}.jsonl")) };
        let sorted = |s: &Sluice| {
            let mut events = json_lines(&file(s));
            // A histogram's `buckets` are derived by the deserializer from the bounds (which
            // are compared); their outer bound ±Float.MAX_VALUE read back differing in its
            // last digit between the two files, which is not what this test is about.
            for e in &mut events {
                if let Some(o) = e.as_object_mut() {
                    o.remove("buckets");
                }
            }
            events.sort_by_key(Value::to_string);
            events
        };
        a.wait_for(&format!("{signal} in A"), Duration::from_secs(60), || {
            json_lines(&file(&a)).len() >= n
        });
        let want = sorted(&a);
        let started = Instant::now();
        while json_lines(&file(&b)).len() < want.len() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{signal}: B has {:?}\nA's log:\n{}\nB's log:\n{}",
                json_lines(&file(&b)).len(),
                a.log(),
                b.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let got = sorted(&b);
        assert_same_items(&got, &want);
    }
}
