//! The real binary with the kafka buffer against a real broker: HTTP in, Kafka in between,
//! the json plugin, a file sink out. Round trip, crashes, a broker outage, a failing sink, and
//! two processes sharing a group. Each test runs twice (`builtin::…` and `policy::…`): with the
//! built-in `kafka` buffer, and with `passthrough_buffer`, a buffer policy component over one
//! `kafka` tier, which must pass every Kafka buffer test (issue 14).

/// `builtin::TEST` and `policy::TEST` for each `TEST(via: Via)` named.
macro_rules! both_buffers {
    ($($test:ident),* $(,)?) => {
        mod builtin {
            $( #[test] fn $test() { super::$test(super::Via::Builtin) } )*
        }
        mod policy {
            $( #[test] fn $test() { super::$test(super::Via::Policy("passthrough_buffer")) } )*
        }
    };
}

mod crash;
mod security;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use sluice_tests::{Broker, Sluice, committed_and_end, json_lines, kafka_bootstrap, unique};

/// Which buffer a pipeline runs.
#[derive(Clone, Copy, Debug)]
enum Via {
    /// `buffer: { kafka: {...} }`.
    Builtin,
    /// `buffer: { NAME: { tiers: [ - kafka: {...} ] } }`: the same Kafka keys as the one tier
    /// of the buffer policy component NAME (`passthrough_buffer` places every record there).
    Policy(&'static str),
}

#[derive(Clone)]
struct Setup<'a> {
    via: Via,
    bootstrap: &'a str,
    topic: &'a str,
    group: &'a str,
    partitions: u32,
    /// `None`: `{dir}/out/events.jsonl`.
    sink: Option<&'a Path>,
    /// `custom_metric_prefix`, if any.
    prefix: Option<&'a str>,
    /// More keys of the kafka block (`encryption`, `authentication`, `encryption_in_transit`),
    /// as YAML lines starting at column 0.
    extra: String,
}

impl<'a> Setup<'a> {
    /// A plain setup: the default sink, no metric prefix, no encryption.
    fn new(via: Via, bootstrap: &'a str, topic: &'a str, group: &'a str, partitions: u32) -> Self {
        Self {
            via,
            bootstrap,
            topic,
            group,
            partitions,
            sink: None,
            prefix: None,
            extra: String::new(),
        }
    }
}

fn pipeline(s: &Setup<'_>) -> String {
    let sink = s.sink.map_or("{dir}/out/events.jsonl".to_owned(), |p| {
        p.display().to_string()
    });
    let kafka = format!(
        r#"bootstrap_servers: [{bootstrap}]
produce_timeout: 3s
drain_timeout: 10s
{prefix}
{extra}
topics:
  - name: {topic}
    group_id: {group}
    create_topic: true
    number_of_partitions: {partitions}
    commit_interval: 500ms
    session_timeout: 6s
    max_poll_records: 50
"#,
        bootstrap = s.bootstrap,
        topic = s.topic,
        group = s.group,
        partitions = s.partitions,
        prefix = s
            .prefix
            .map_or(String::new(), |p| format!("custom_metric_prefix: {p}")),
        extra = s.extra,
    );
    let policy = match s.via {
        Via::Builtin => None,
        Via::Policy(name) => Some(name),
    };
    format!(
        r#"
kafka-pipeline:
  workers: 2
  delay: 20ms
  source:
    http:
      port: {{port}}
      request_timeout: 5s
  buffer:
{buffer}  sink:
    - file:
        path: {sink}
  dlq_path: {{dir}}/dlq.jsonl
"#,
        buffer = sluice_tests::kafka_buffer_yaml(&kafka, policy),
    )
}

/// A JSON array of events with ids `prefix-first..prefix-(first+n)`.
fn events(prefix: &str, first: usize, n: usize) -> (Vec<u8>, Vec<String>) {
    let ids: Vec<String> = (first..first + n)
        .map(|i| format!("{prefix}-{i}"))
        .collect();
    let body: Vec<_> = ids.iter().map(|id| json!({"id": id, "log": "x"})).collect();
    (serde_json::to_vec(&body).unwrap(), ids)
}

/// How many times each id is in the sink file(s).
fn id_counts(paths: &[PathBuf]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for path in paths {
        for v in json_lines(path) {
            *counts
                .entry(v["id"].as_str().unwrap_or_default().to_owned())
                .or_insert(0) += 1;
        }
    }
    counts
}

fn foreign_record(bootstrap: &str, topic: &str) {
    use rdkafka::message::{Header, OwnedHeaders};
    use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
    let producer: ThreadedProducer<DefaultProducerContext> = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let headers = OwnedHeaders::new().insert(Header {
        key: "sluice-envelope",
        value: Some("9"),
    });
    producer
        .send(
            BaseRecord::<(), _>::to(topic)
                .payload("{\"id\":\"from-the-future\"}")
                .headers(headers),
        )
        .map_err(|(e, _)| e)
        .unwrap();
    producer.flush(Duration::from_secs(10)).unwrap();
}

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until every id in `want` is in the sinks; returns (missing, duplicates).
fn wait_for_ids(paths: &[PathBuf], want: &[String], timeout: Duration) -> (Vec<String>, usize) {
    let started = Instant::now();
    loop {
        let counts = id_counts(paths);
        let missing: Vec<String> = want
            .iter()
            .filter(|id| !counts.contains_key(*id))
            .cloned()
            .collect();
        let duplicates = counts.values().map(|c| c - 1).sum();
        if missing.is_empty() || started.elapsed() > timeout {
            return (missing, duplicates);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn every_accepted_event_reaches_the_sink_once_and_offsets_are_committed_to_the_end(via: Via) {
    let bootstrap = kafka_bootstrap();
    let (topic, group) = (unique("rt"), unique("g"));
    let setup = Setup::new(via, &bootstrap, &topic, &group, 2);
    let mut s = Sluice::start(&pipeline(&setup));
    let mut want = Vec::new();
    for i in 0..20 {
        let (body, ids) = events("small", i * 5, 5);
        assert_eq!(s.post("/log/ingest", &body), 200, "{}", s.log());
        want.extend(ids);
    }
    // 3 MB: more than `max_request_size` (1mb), so split into several Kafka records.
    let (big, ids) = events(&format!("big-{}", "p".repeat(1000)), 0, 3000);
    assert!(big.len() > 3_000_000);
    assert_eq!(s.post("/log/ingest", &big), 200, "{}", s.log());
    want.extend(ids);
    // Too large and not an array: cannot be split.
    let huge_object = serde_json::to_vec(&json!({"log": "y".repeat(2 << 20)})).unwrap();
    assert_eq!(s.post("/log/ingest", &huge_object), 413);
    // Accepted, then dead-lettered by the json plugin.
    assert_eq!(s.post("/log/ingest", b"{\"oops\": "), 200);
    assert_eq!(s.post("/log/ingest", b"not json at all"), 200);

    // A record of an envelope version this build cannot read, written by another producer.
    foreign_record(&bootstrap, &topic);

    let sink = vec![s.path("out/events.jsonl")];
    let (missing, _) = wait_for_ids(&sink, &want, Duration::from_secs(90));
    assert!(
        missing.is_empty(),
        "{} events missing:\n{}",
        missing.len(),
        s.log()
    );
    wait_until("3 dead letters", Duration::from_secs(30), || {
        json_lines(&s.path("dlq.jsonl")).len() == 3
    });
    // The metrics endpoint counts what this test did (all of it was consumed by now).
    let (status, _) = s.get_metrics_server("/health");
    assert_eq!(status, 200, "/health once every pipeline is ready");
    let records: i64 = committed_and_end(&bootstrap, &topic, &group)
        .iter()
        .map(|(_, _, end)| end)
        .sum();
    let p = "kafka-pipeline";
    let metric = |name: &str| s.metric(name, p);
    wait_until(
        "the consumed counter to reach the end offsets",
        Duration::from_secs(10),
        || metric("kafka_buffer_numberOfRecordsConsumed") == Some(records as f64),
    );
    assert_eq!(
        metric("kafka_buffer_numberOfRecordsFailedToParse"),
        Some(2.0),
        "2 malformed bodies"
    );
    assert_eq!(
        metric("kafka_buffer_numberOfRecordsUnreadable"),
        Some(1.0),
        "1 foreign envelope"
    );
    assert_eq!(
        metric("kafka_buffer_numberOfBufferSizeOverflows"),
        Some(1.0),
        "the 413"
    );
    assert_eq!(
        metric("kafka_buffer_recordsWritten"),
        Some((records - 1) as f64),
        "every record but the foreign one came through the http source"
    );
    assert_eq!(metric("sluice_eventsWritten"), Some(want.len() as f64));
    assert!(metric("kafka_buffer_numberOfBytesConsumed").is_some_and(|b| b > 3_000_000.0));
    assert!(metric("kafka_buffer_numberOfPositiveAcknowledgements").is_some_and(|n| n >= 1.0));
    assert_eq!(
        metric("kafka_buffer_numberOfNegativeAcknowledgements"),
        Some(0.0)
    );
    let (_, text) = s.get_metrics_server("/metrics");
    let calls = sluice_tests::prometheus_value(
        &text,
        "sluice_plugin_calls",
        &[("pipeline", p), ("plugin", "json")],
    );
    assert!(
        calls.is_some_and(|c| c >= 1.0),
        "plugin calls: {calls:?}\n{text}"
    );
    assert_eq!(s.terminate(), 0, "{}", s.log());

    let counts = id_counts(&sink);
    assert_eq!(counts.len(), want.len());
    assert!(
        counts.values().all(|c| *c == 1),
        "an event was delivered twice without a crash"
    );
    let dlq = json_lines(&s.path("dlq.jsonl"));
    assert!(
        dlq.iter().any(|d| d["reason"]
            .as_str()
            .unwrap()
            .contains("unknown sluice envelope version `9`")),
        "{dlq:?}"
    );
    assert!(
        dlq.iter().all(|d| d["origin"]
            .as_str()
            .unwrap()
            .contains(&format!("kafka:{topic}/"))),
        "{dlq:?}"
    );
    let offsets = committed_and_end(&bootstrap, &topic, &group);
    for (partition, committed, end) in &offsets {
        assert_eq!(
            committed, end,
            "partition {partition}: committed {committed} of {end}"
        );
    }
    // The buffer's counters (logged at shutdown) match what Kafka holds.
    let records: i64 = offsets.iter().map(|(_, _, end)| end).sum();
    let log = s.log();
    for counter in ["records_consumed", "records_committed"] {
        assert_eq!(
            logged(&log, counter),
            Some(records),
            "{counter} in the shutdown summary:\n{log}"
        );
    }
    assert_eq!(logged(&log, "negative_acknowledgements"), Some(0));
}

fn a_broker_outage_gives_503_in_bounded_time_and_ingestion_resumes_without_loss(via: Via) {
    let mut broker = Broker::start();
    let bootstrap = broker.bootstrap();
    let (topic, group) = (unique("outage"), unique("g"));
    let setup = Setup::new(via, &bootstrap, &topic, &group, 1);
    let mut s = Sluice::start(&pipeline(&setup));
    let mut acked = Vec::new();
    let (body, ids) = events("before", 0, 5);
    assert_eq!(s.post("/log/ingest", &body), 200, "{}", s.log());
    acked.extend(ids);

    broker.stop();
    let started = Instant::now();
    let (body, _) = events("during", 0, 5);
    let status = s.try_post("/log/ingest", &body, Duration::from_secs(30));
    let took = started.elapsed();
    assert_eq!(status, Ok(503), "with the broker down:\n{}", s.log());
    // produce_timeout is 3s: the answer must not hang much past it.
    assert!(took < Duration::from_secs(10), "503 took {took:?}");

    broker.resume();
    let mut n = 0;
    wait_until(
        "a 200 after the broker came back",
        Duration::from_secs(60),
        || {
            let (body, ids) = events("after", n, 5);
            n += 5;
            let ok = s.try_post("/log/ingest", &body, Duration::from_secs(10)) == Ok(200);
            if ok {
                acked.extend(ids);
            }
            ok
        },
    );
    for _ in 0..5 {
        let (body, ids) = events("after", n, 5);
        n += 5;
        assert_eq!(s.post("/log/ingest", &body), 200);
        acked.extend(ids);
    }
    let sink = vec![s.path("out/events.jsonl")];
    let (missing, _) = wait_for_ids(&sink, &acked, Duration::from_secs(60));
    assert!(missing.is_empty(), "lost {missing:?}:\n{}", s.log());
    assert_eq!(s.terminate(), 0, "{}", s.log());
}

fn a_failing_sink_holds_commits_back_and_loses_nothing_when_it_recovers(via: Via) {
    let bootstrap = kafka_bootstrap();
    let (topic, group) = (unique("sinkfail"), unique("g"));
    let sink_dir = tempfile::tempdir().unwrap();
    let sink_path = sink_dir.path().join("events.jsonl");
    // Every write fails (ENOSPC) until the link is replaced by a real file.
    std::os::unix::fs::symlink("/dev/full", &sink_path).unwrap();
    let setup = Setup {
        sink: Some(&sink_path),
        prefix: Some("dns"),
        ..Setup::new(via, &bootstrap, &topic, &group, 1)
    };
    let mut s = Sluice::start(&pipeline(&setup));
    let mut want = Vec::new();
    for i in 0..4 {
        let (body, ids) = events("held", i * 5, 5);
        assert_eq!(s.post("/log/ingest", &body), 200, "{}", s.log());
        want.extend(ids);
    }
    // Several commit intervals pass while the sink fails: nothing may be committed.
    std::thread::sleep(Duration::from_secs(4));
    let offsets = committed_and_end(&bootstrap, &topic, &group);
    assert_eq!(
        offsets,
        vec![(0, 0, 4)],
        "(partition, committed, end) while the sink fails"
    );

    std::fs::remove_file(&sink_path).unwrap();
    let sink = vec![sink_path.clone()];
    let (missing, duplicates) = wait_for_ids(&sink, &want, Duration::from_secs(60));
    assert!(missing.is_empty(), "lost {missing:?}:\n{}", s.log());
    assert_eq!(duplicates, 0);
    let started = Instant::now();
    let mut offsets = Vec::new();
    while offsets != vec![(0, 4, 4)] && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(200));
        offsets = committed_and_end(&bootstrap, &topic, &group);
    }
    assert_eq!(
        offsets,
        vec![(0, 4, 4)],
        "after the sink recovered:\n{}",
        s.log()
    );
    // `custom_metric_prefix` names the buffer's metrics.
    assert_eq!(
        s.metric("dns_numberOfRecordsCommitted", "kafka-pipeline"),
        Some(4.0)
    );
    assert_eq!(
        s.metric("kafka_buffer_numberOfRecordsCommitted", "kafka-pipeline"),
        None
    );
    assert_eq!(s.terminate(), 0, "{}", s.log());
}

/// The partitions of the last assignment a process logged.
fn last_assignment(log: &str) -> Option<String> {
    log.lines()
        .rfind(|l| l.contains("partitions assigned"))
        .and_then(|l| l.split("partitions=").nth(1))
        .map(|rest| rest.split(']').next().unwrap_or_default().to_owned() + "]")
}

fn two_processes_in_one_group_split_the_partitions_and_deliver_everything_once(via: Via) {
    let bootstrap = kafka_bootstrap();
    let (topic, group) = (unique("scale"), unique("g"));
    let setup = Setup::new(via, &bootstrap, &topic, &group, 4);
    let mut a = Sluice::start(&pipeline(&setup));
    let mut b = Sluice::start(&pipeline(&setup));
    // Both consumers of both processes have joined and split the 4 partitions.
    wait_until(
        "both processes to be assigned partitions",
        Duration::from_secs(90),
        || {
            let (la, lb) = (a.log(), b.log());
            let parts: BTreeSet<String> = [&la, &lb]
                .iter()
                .flat_map(|log| {
                    log.lines()
                        .filter(|l| l.contains("partitions assigned"))
                        .filter_map(|l| l.split("partitions=[").nth(1))
                        .map(|r| r.split(']').next().unwrap_or_default().to_owned())
                        .collect::<Vec<_>>()
                })
                .collect();
            !parts.is_empty()
                && last_assignment(&la).is_some_and(|p| p != "[]")
                && last_assignment(&lb).is_some_and(|p| p != "[]")
        },
    );
    let mut want = Vec::new();
    for i in 0..40 {
        let (body, ids) = events("scale", i * 5, 5);
        let target = if i % 2 == 0 { &a } else { &b };
        assert_eq!(target.post("/log/ingest", &body), 200);
        want.extend(ids);
    }
    let sinks = vec![a.path("out/events.jsonl"), b.path("out/events.jsonl")];
    let (missing, duplicates) = wait_for_ids(&sinks, &want, Duration::from_secs(90));
    assert!(
        missing.is_empty(),
        "lost {}:\n{}\n{}",
        missing.len(),
        a.log(),
        b.log()
    );
    assert_eq!(duplicates, 0, "an event was delivered twice");
    let (in_a, in_b) = (json_lines(&sinks[0]).len(), json_lines(&sinks[1]).len());
    assert!(
        in_a > 0 && in_b > 0,
        "one process did all the work: {in_a} vs {in_b}"
    );
    assert_eq!(a.terminate(), 0);
    assert_eq!(b.terminate(), 0);
}

#[test]
fn a_pull_source_with_the_kafka_buffer_fails_validate_and_run() {
    let file =
        sluice_tests::root().join("tests/fixtures/config/invalid/17-pull-source-with-kafka.yaml");
    let expected = "source `file` pulls its data and cannot use the kafka buffer; use bounded_blocking, or a push source such as http";
    for command in ["validate", "run"] {
        let out = std::process::Command::new(sluice_tests::sluice_bin())
            .arg(command)
            .arg(&file)
            .args(if command == "run" {
                &["--metrics-addr", "127.0.0.1:0"][..]
            } else {
                &[]
            })
            .arg("--plugin-cache")
            .arg(sluice_tests::plugin_cache())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "sluice {command}: {stderr}");
        assert!(stderr.contains(expected), "sluice {command}: {stderr}");
        assert!(stderr.contains("line 6"), "sluice {command}: {stderr}");
    }
}

/// A `key=value` number from the `kafka buffer stopped` log line.
fn logged(log: &str, key: &str) -> Option<i64> {
    let line = log.lines().find(|l| l.contains("kafka buffer stopped"))?;
    let rest = line.split(&format!(" {key}=")).nth(1)?;
    rest.split_whitespace().next()?.parse().ok()
}

both_buffers!(
    every_accepted_event_reaches_the_sink_once_and_offsets_are_committed_to_the_end,
    a_broker_outage_gives_503_in_bounded_time_and_ingestion_resumes_without_loss,
    a_failing_sink_holds_commits_back_and_loses_nothing_when_it_recovers,
    two_processes_in_one_group_split_the_partitions_and_deliver_everything_once,
);
