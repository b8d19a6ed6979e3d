//! Data Prepper's documented trace analytics pipeline (its "Trace analytics" page, key for key:
//! `entry-pipeline` with `delay: "100"` and `otel_trace_source`, `pipeline` sinks to
//! `raw-trace-pipeline` (`otel_traces`) and `service-map-pipeline` (`service_map`), their
//! `bounded_blocking` buffers) with the entry pipeline's buffer made Kafka and the opensearch
//! sinks made files. Spans from the OpenTelemetry Python SDK in two services, checked span by
//! span, across a kill -9; the entry buffer's records keyed by trace id.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use rdkafka::message::Message;
use serde_json::{Value, json};
use sluice_tests::{Sluice, TopicReader, json_lines, kafka_bootstrap, unique};

use super::export;

fn yaml(bootstrap: &str, topic: &str) -> String {
    format!(
        r#"
entry-pipeline:
  delay: "100"
  source:
    otel_trace_source:
      ssl: false
      port: {{port}}
  buffer:
    kafka:
      bootstrap_servers: [{bootstrap}]
      topics:
        - name: {topic}
          group_id: {topic}-g
          create_topic: true
          number_of_partitions: 3
          commit_interval: 200ms
  sink:
    - pipeline:
        name: raw-trace-pipeline
    - pipeline:
        name: service-map-pipeline
raw-trace-pipeline:
  source:
    pipeline:
      name: entry-pipeline
  buffer:
    bounded_blocking:
      buffer_size: 500000
      batch_size: 10000
  processor:
    - otel_traces:
  sink:
    - file:
        path: {{dir}}/spans.jsonl
service-map-pipeline:
  delay: "100"
  source:
    pipeline:
      name: entry-pipeline
  buffer:
    bounded_blocking:
      buffer_size: 500000
      batch_size: 10000
  processor:
    - service_map:
        window_duration: 1
  sink:
    - file:
        path: {{dir}}/service-map.jsonl
"#
    )
}

/// Sends `n` two-service traces over OTLP/gRPC; returns the spans sent (span id → trace id).
fn send(s: &Sluice, n: usize) -> BTreeMap<String, String> {
    let grpc = format!("http://127.0.0.1:{}", s.port);
    let out = export(
        "send_service_traces.py",
        &grpc,
        n,
        &[("OTLP_TRANSPORT", "grpc")],
    );
    assert!(
        out.status.success(),
        "the exporter was refused: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.log()
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let span: Value = serde_json::from_str(l).unwrap();
            (
                span["spanId"].as_str().unwrap().to_owned(),
                span["traceId"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn data_preppers_trace_analytics_pipeline_loses_no_span_across_a_kill_9() {
    let (bootstrap, topic) = (kafka_bootstrap(), unique("trace-analytics"));
    let mut s = Sluice::start(&yaml(&bootstrap, &topic));
    let mut sent = send(&s, 10);
    // Accepted means in the entry pipeline's Kafka buffer: killed before the chain is through.
    s.kill9();
    s.restart(&[]);
    sent.extend(send(&s, 10));
    assert_eq!(sent.len(), 60, "three spans a trace");

    let spans_file = s.path("spans.jsonl");
    let spans = || json_lines(&spans_file);
    let ids = |spans: &[Value]| -> BTreeSet<String> {
        spans
            .iter()
            .map(|e| e["spanId"].as_str().unwrap().to_owned())
            .collect()
    };
    let want: BTreeSet<String> = sent.keys().cloned().collect();
    s.wait_for(
        "every span sent, with its trace group",
        Duration::from_secs(90),
        || {
            let got = spans();
            ids(&got) == want && got.iter().all(|e| e["traceGroup"] == "GET /buy")
        },
    );
    let got = spans();
    for span in &got {
        let id = span["spanId"].as_str().unwrap();
        assert_eq!(span["traceId"].as_str(), Some(sent[id].as_str()), "{span}");
        let fields = &span["traceGroupFields"];
        assert!(fields["endTime"].is_string(), "{span}");
        assert!(fields["durationInNanos"].as_u64().unwrap() > 0, "{span}");
        assert_eq!(fields["statusCode"], 0, "{span}");
    }
    // At least once: the kill repeats at most what was sent before it.
    assert!(got.len() <= 90, "{} spans written", got.len());

    // The service map: frontend calls checkout, once each way (deduplicated by hashId).
    let map_file = s.path("service-map.jsonl");
    let relationships = || -> BTreeMap<String, Value> {
        json_lines(&map_file)
            .into_iter()
            .map(|r| (r["hashId"].as_str().unwrap().to_owned(), r))
            .collect()
    };
    s.wait_for(
        "the service map's two relationships",
        Duration::from_secs(30),
        || relationships().len() >= 2,
    );
    let mut map: Vec<Value> = relationships()
        .into_values()
        .map(|mut r| {
            r.as_object_mut().unwrap().remove("hashId");
            r
        })
        .collect();
    map.sort_by_key(|r| r["serviceName"].as_str().unwrap().to_owned());
    let call = json!({"resource": "POST /orders", "domain": "checkout"});
    assert_eq!(
        map,
        [
            json!({"serviceName": "checkout", "kind": "SPAN_KIND_SERVER", "destination": null,
                   "target": call, "traceGroupName": "GET /buy"}),
            json!({"serviceName": "frontend", "kind": "SPAN_KIND_CLIENT", "destination": call,
                   "target": null, "traceGroupName": "GET /buy"}),
        ]
    );
    assert_eq!(s.terminate(), 0, "{}", s.log());

    // Several hosts: the entry buffer's records are keyed by trace id, so a trace's spans are
    // on one partition, read by one host of the group.
    let reader = TopicReader::new(&bootstrap, &topic, &[]);
    let mut records = reader.take(60);
    records.extend(reader.rest());
    let traces: BTreeSet<&str> = sent.values().map(String::as_str).collect();
    let mut partition_of: BTreeMap<String, i32> = BTreeMap::new();
    for r in &records {
        let key = String::from_utf8(r.key().expect("keyed").to_vec()).unwrap();
        assert!(traces.contains(key.as_str()), "{key} is a trace sent");
        let p = *partition_of.entry(key.clone()).or_insert(r.partition());
        assert_eq!(
            p,
            r.partition(),
            "every record of trace {key} on one partition"
        );
    }
    assert_eq!(partition_of.len(), 20, "every trace");
    let used: BTreeSet<i32> = partition_of.values().copied().collect();
    assert!(
        used.len() > 1,
        "traces spread over the partitions: {used:?}"
    );
}

/// Two hosts in one consumer group (one consumer each) on a two-partition entry topic: the
/// exports go to one
/// host, the traces are read by both (a trace's records on one partition, so on one host), and
/// every span comes out of one of them with its trace group; without keying, a child read by
/// one host and its root by the other would wait there for `trace_flush_interval` (600 s).
#[test]
fn two_hosts_sharing_the_buffer_each_see_whole_traces() {
    let (bootstrap, topic) = (kafka_bootstrap(), unique("two-hosts"));
    let yaml = format!(
        "traces:\n  delay: 20ms\n  source:\n    otel_trace_source:\n      ssl: false\n      port: {{port}}\n  buffer:\n    kafka:\n      bootstrap_servers: [{bootstrap}]\n      topics:\n        - name: {topic}\n          group_id: {topic}-g\n          create_topic: true\n          number_of_partitions: 2\n          workers: 1\n          commit_interval: 200ms\n  processor:\n    - otel_traces:\n        trace_flush_interval: 600\n  sink:\n    - file:\n        path: {{dir}}/spans.jsonl\n"
    );
    let (a, b) = (Sluice::start(&yaml), Sluice::start(&yaml));
    let (file_a, file_b) = (a.path("spans.jsonl"), b.path("spans.jsonl"));
    let spans = || {
        let mut all = json_lines(&file_a);
        all.extend(json_lines(&file_b));
        all
    };
    let mut sent = BTreeMap::new();
    // Until both hosts have partitions (the group settles after the second one joins).
    for _ in 0..20 {
        sent.extend(send(&a, 5));
        std::thread::sleep(Duration::from_millis(500));
        if !json_lines(&file_a).is_empty() && !json_lines(&file_b).is_empty() {
            break;
        }
    }
    sent.extend(send(&a, 5));
    let want: BTreeSet<String> = sent.keys().cloned().collect();
    let grouped = || -> BTreeSet<String> {
        spans()
            .iter()
            .filter(|e| e["traceGroup"] == "GET /buy")
            .map(|e| e["spanId"].as_str().unwrap().to_owned())
            .collect()
    };
    a.wait_for(
        "every span with its trace group, from one host or the other",
        Duration::from_secs(60),
        || grouped() == want,
    );
    assert!(
        !json_lines(&file_a).is_empty() && !json_lines(&file_b).is_empty(),
        "both hosts read traces:\n{}\n{}",
        a.log(),
        b.log()
    );
}

/// The same documented pipelines, their sinks Data Prepper's as written on its trace analytics
/// page (`opensearch` with `index_type: trace-analytics-raw` and `trace-analytics-service-map`)
/// against the OpenSearch test server: the types' templates, ISM policy and write alias are
/// made before the first document; every span is one document, named `${spanId}`-style as Data
/// Prepper names it, in the span index behind its alias; the service map's relationships are
/// documents named by `hashId`.
#[test]
fn trace_analytics_into_opensearch_makes_the_types_indices_and_one_document_per_span() {
    let server = sluice_tests::OpenSearch::start_with_credentials("admin", "admin");
    let (bootstrap, topic) = (kafka_bootstrap(), unique("trace-os"));
    let sink = |index_type: &str| {
        format!(
            "    - opensearch:\n        hosts: [\"{}\"]\n        insecure: true\n        username: admin\n        password: admin\n        index_type: {index_type}\n        flush_timeout: 200\n",
            server.url()
        )
    };
    let yaml = yaml(&bootstrap, &topic)
        .replace(
            "    - file:\n        path: {dir}/spans.jsonl\n",
            &sink("trace-analytics-raw"),
        )
        .replace(
            "    - file:\n        path: {dir}/service-map.jsonl\n",
            &sink("trace-analytics-service-map"),
        );
    assert!(!yaml.contains("file:"), "{yaml}");
    let s = Sluice::start(&yaml);
    let sent = send(&s, 10);
    let spans = || {
        server
            .documents_any()
            .into_iter()
            .filter(|(index, _, _)| index.starts_with("otel-v1-apm-span"))
            .collect::<Vec<_>>()
    };
    s.wait_for("every span indexed", Duration::from_secs(90), || {
        spans().len() >= sent.len()
    });
    s.wait_for(
        "the service map's relationships indexed",
        Duration::from_secs(60),
        || {
            server
                .documents_any()
                .iter()
                .filter(|(index, _, _)| index == "otel-v1-apm-service-map")
                .count()
                >= 2
        },
    );
    server.assert_understood();
    let got = spans();
    assert_eq!(got.len(), sent.len(), "one document per span");
    for (index, id, span) in &got {
        assert_eq!(
            index, "otel-v1-apm-span-000001",
            "written through the alias"
        );
        let span_id = span["spanId"].as_str().unwrap();
        assert!(id.contains(span_id), "Data Prepper's id for a span: {id}");
        assert_eq!(span["traceId"].as_str(), Some(sent[span_id].as_str()));
        assert_eq!(span["traceGroup"], "GET /buy");
    }
    let aliases = server.aliases();
    assert!(
        aliases.contains_key("otel-v1-apm-span"),
        "the write alias: {aliases:?}"
    );
    let templates = server.templates();
    for name in [
        "otel-v1-apm-span-index-template",
        "otel-v1-apm-service-map-index-template",
    ] {
        assert!(
            templates.contains_key(name),
            "{name}: {:?}",
            templates.keys()
        );
    }
    assert!(
        server.policies().contains_key("raw-span-policy"),
        "{:?}",
        server.policies().keys()
    );
    for (_, id, relationship) in server
        .documents_any()
        .iter()
        .filter(|(index, _, _)| index == "otel-v1-apm-service-map")
    {
        assert_eq!(relationship["hashId"].as_str(), Some(id.as_str()));
    }
}
