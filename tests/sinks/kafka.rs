//! The kafka sink: every event once in the topic, keyed by `partition_key`, as JSON or as its
//! message text; the sink's broker killed and restarted mid-run.

use std::time::Duration;

use sluice_tests::{Broker, Sluice, TopicReader, committed_and_end, kafka_bootstrap, unique};

use super::{
    assert_all_once, committed_to_end, counts, kill_before_the_commit, kill_rounds, names,
    pipeline, post_events, sink_metric, slow_commits, through_an_outage, two_hosts_writing,
    wait_until,
};

/// (key, payload) of every record of `topic`, read from the start until `want` arrived or
/// 60 s passed, then any more already there (duplicates).
fn records(bootstrap: &str, topic: &str, want: usize) -> Vec<(Option<String>, String)> {
    records_with(bootstrap, topic, want, &[])
}

/// [`records`] with more client settings (SASL, TLS).
fn records_with(
    bootstrap: &str,
    topic: &str,
    want: usize,
    settings: &[(&str, &str)],
) -> Vec<(Option<String>, String)> {
    use rdkafka::message::Message;
    let reader = TopicReader::new(bootstrap, topic, settings);
    let mut got = reader.take(want);
    got.extend(reader.rest());
    let text = |b: Option<&[u8]>| b.map(|b| String::from_utf8_lossy(b).into_owned());
    got.iter()
        .map(|m| (text(m.key()), text(m.payload()).unwrap_or_default()))
        .collect()
}

/// The `id` of each record of `topic` (read as [`records`] does) with where the sink said its
/// event came from: the `sluice-origin` header.
fn ids_and_origins(bootstrap: &str, topic: &str, want: usize) -> Vec<(String, Option<String>)> {
    use rdkafka::message::{Headers, Message};
    let reader = TopicReader::new(bootstrap, topic, &[]);
    let mut got = reader.take(want);
    got.extend(reader.rest());
    got.iter()
        .map(|m| {
            let event: serde_json::Value = serde_json::from_slice(m.payload().unwrap()).unwrap();
            let origin = m.headers().map(|h| {
                h.iter()
                    .filter(|h| h.key.starts_with("sluice-"))
                    .map(|h| {
                        format!(
                            "{}={}",
                            h.key,
                            String::from_utf8_lossy(h.value.unwrap_or_default())
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            });
            (event["id"].as_str().unwrap().to_owned(), origin)
        })
        .collect()
}

/// Each origin names one event, and keeping one record per origin keeps each event once:
/// what a consumer that drops duplicates by the headers sees. Returns the records dropped.
fn assert_once_by_origin(records: &[(String, Option<String>)], ids: &[String]) -> usize {
    let mut by_origin: std::collections::BTreeMap<&str, &str> = Default::default();
    for (id, origin) in records {
        let origin = origin.as_deref().expect("every record carries its origin");
        let value = origin
            .strip_prefix("sluice-origin=")
            .unwrap_or_else(|| panic!("{origin}"));
        assert_eq!(
            value.split('/').count(),
            4,
            "topic/partition/offset/index: {origin}"
        );
        let first = by_origin.entry(origin).or_insert(id);
        assert_eq!(first, id, "one origin names one event");
    }
    assert_all_once(&counts(by_origin.values()), ids, 0);
    records.len() - by_origin.len()
}

/// The records `topic` holds, copies included.
fn produced(bootstrap: &str, topic: &str) -> i64 {
    committed_and_end(bootstrap, topic, "none")
        .iter()
        .map(|(_, _, end)| end)
        .sum()
}

/// Once `sluice` committed every record of its buffer: `topic` holds each event of `ids`
/// once after dropping by origin, and there were copies to drop (else the test proved
/// nothing).
fn assert_dropping_by_origin_leaves_each_once(
    sluice: &Sluice,
    (buffer, group): (&str, &str),
    (bootstrap, topic): (&str, &str),
    ids: &[String],
) {
    wait_until(
        "the buffer committed every record",
        Duration::from_secs(90),
        sluice,
        || committed_to_end(buffer, group),
    );
    let got = ids_and_origins(bootstrap, topic, ids.len());
    let dropped = assert_once_by_origin(&got, ids);
    eprintln!(
        "{} events, {} records, {dropped} dropped by origin",
        ids.len(),
        got.len()
    );
    assert!(dropped > 0, "nothing was produced twice: untested");
}

/// The `id` of each record's payload, a JSON event.
fn event_ids(records: &[(Option<String>, String)]) -> Vec<String> {
    records
        .iter()
        .map(|(_, payload)| {
            let event: serde_json::Value = serde_json::from_str(payload).unwrap();
            event["id"].as_str().unwrap().to_owned()
        })
        .collect()
}

fn kafka_sink(bootstrap: &str, topic: &str, extra: &str) -> String {
    format!(
        "    - kafka:\n        bootstrap_servers: [{bootstrap}]\n        produce_timeout: 3s\n        topic:\n          name: {topic}\n          create_topic: true\n          number_of_partitions: 3\n{extra}"
    )
}

#[test]
fn every_event_reaches_the_topic_once_keyed_by_partition_key() {
    let (buffer, group) = names("ks");
    let (json_topic, text_topic) = (unique("sink-json"), unique("sink-text"));
    let bootstrap = kafka_bootstrap();
    let sinks = format!(
        "{}{}",
        kafka_sink(
            &bootstrap,
            &json_topic,
            "        serde_format: json\n        partition_key: ${/host}\n"
        ),
        kafka_sink(&bootstrap, &text_topic, "        serde_format: plaintext\n"),
    );
    let sluice = Sluice::start(&pipeline(&buffer, &group, &sinks));
    let ids = post_events(&sluice, "k", 600, 50);
    wait_until(
        "the buffer committed every record",
        Duration::from_secs(60),
        &sluice,
        || committed_to_end(&buffer, &group),
    );

    let json = records(&bootstrap, &json_topic, ids.len());
    let mut seen = Vec::new();
    for (key, payload) in &json {
        let event: serde_json::Value = serde_json::from_str(payload).unwrap();
        assert_eq!(
            key.as_deref(),
            event["host"].as_str(),
            "the key is the event's host"
        );
        seen.push(event["id"].as_str().unwrap().to_owned());
    }
    assert_all_once(&counts(seen.iter().map(String::as_str)), &ids, 0);

    let text = records(&bootstrap, &text_topic, ids.len());
    assert!(
        text.iter().all(|(k, _)| k.is_none()),
        "no partition_key, no key"
    );
    // As in Data Prepper, `plaintext` writes the event's JSON text too.
    assert_all_once(&counts(event_ids(&text)), &ids, 0);
    assert!(sink_metric(&sluice, "sluice_sink_eventsWritten") >= 1200.0);
}

#[test]
fn the_sinks_broker_down_holds_the_commit_and_the_sink_recovers_without_a_restart() {
    let (buffer, group) = names("kf");
    let topic = unique("sink-out");
    let broker = Broker::start();
    let sinks = kafka_sink(&broker.bootstrap(), &topic, "");
    let sluice = Sluice::start(&pipeline(&buffer, &group, &sinks));
    let broker = std::cell::RefCell::new(broker);
    let ids = through_an_outage(
        &sluice,
        &buffer,
        &group,
        50,
        || broker.borrow_mut().stop(),
        || broker.borrow_mut().resume(),
    );
    let broker = broker.into_inner();
    let got = ids_and_origins(&broker.bootstrap(), &topic, ids.len());
    // A failed send may have reached the broker before it died: at most the batches in flight
    // (2 workers × 100 records) come twice, each with the origin of its first copy.
    assert_all_once(&counts(got.iter().map(|(id, _)| id)), &ids, 200);
    assert_once_by_origin(&got, &ids);
}

/// kill -9 three times, each once the sink produced a round's events and before the buffer
/// committed them all: every event the clients heard 200 for reaches the topic, the restart
/// produces some again, and those copies carry the same origin headers as the first, so
/// dropping by them leaves each event once (the test broker refuses transactions, so a
/// `read_committed` consumer cannot do it: `docs/design/exactly-once.md`).
#[test]
fn after_kill_9s_dropping_records_by_their_origin_headers_leaves_each_event_once() {
    let (buffer, group) = names("kk");
    let topic = unique("sink-kill");
    let bootstrap = kafka_bootstrap();
    let sinks = kafka_sink(&bootstrap, &topic, "");
    let mut sluice = Sluice::start(&slow_commits(&buffer, &group, &sinks, ""));
    let (ids, _) = kill_rounds(&mut sluice, (&buffer, &group), |n| {
        produced(&bootstrap, &topic) >= n as i64
    });
    assert_dropping_by_origin_leaves_each_once(
        &sluice,
        (&buffer, &group),
        (&bootstrap, &topic),
        &ids,
    );
    assert_eq!(sluice.terminate(), 0, "{}", sluice.log());
}

/// Two hosts in one consumer group on a two-partition buffer; one is killed -9 after its sink
/// produced a round's events and before its buffer committed them. The other takes its
/// partitions over and produces what was not committed again, with the same origin headers
/// as the first copies (an origin is the buffer position, whichever host read it): dropping
/// by them leaves each event once.
#[test]
fn two_hosts_one_killed_dropping_by_origin_leaves_each_event_once() {
    let (buffer, group) = names("k2");
    let topic = unique("sink-two");
    let bootstrap = kafka_bootstrap();
    let sinks = kafka_sink(&bootstrap, &topic, "");
    let two = "          number_of_partitions: 2\n          workers: 1\n";
    let yaml = slow_commits(&buffer, &group, &sinks, two);
    let (mut a, mut b, mut ids) = two_hosts_writing(&yaml, &[]);
    // The survivor reads the killed host's partitions again from their last commit.
    kill_before_the_commit(&mut b, &a, (&buffer, &group), &mut ids, |n| {
        produced(&bootstrap, &topic) >= n as i64
    });
    assert_dropping_by_origin_leaves_each_once(&a, (&buffer, &group), (&bootstrap, &topic), &ids);
    assert_eq!(a.terminate(), 0, "{}", a.log());
}

#[test]
fn over_sasl_scram_and_tls_events_reach_the_topic_and_an_oversized_event_is_dead_lettered() {
    let certs = tempfile::tempdir().unwrap();
    let (ca, cert, key) = sluice_tests::test_certificates(certs.path());
    let mut broker = Broker::start();
    broker.create_scram_user("sink-user", "s3cret");
    broker.stop();
    broker.args = vec![
        "--authentication".to_owned(),
        "--cert".to_owned(),
        cert.display().to_string(),
        "--key".to_owned(),
        key.display().to_string(),
    ];
    broker.resume();
    let (buffer, group) = names("ksec");
    let topic = unique("sink-secure");
    let sinks = kafka_sink(
        &broker.bootstrap(),
        &topic,
        &format!(
            "        max_request_size: 1kb\n        authentication:\n          sasl:\n            scram_sha_512: {{username: sink-user, password: \"${{env:SINK_KAFKA_PASSWORD}}\"}}\n        encryption:\n          type: ssl\n          certificate: {}\n",
            ca.display()
        ),
    );
    let sluice = Sluice::start_with_env(
        &pipeline(&buffer, &group, &sinks),
        &[("SINK_KAFKA_PASSWORD", "s3cret")],
    );
    let ids = post_events(&sluice, "sec", 100, 50);
    let big = serde_json::json!([{"id": "big-0", "message": "x".repeat(2000)}]);
    assert_eq!(
        sluice.post("/log/ingest", &serde_json::to_vec(&big).unwrap()),
        200
    );
    wait_until(
        "the buffer committed every record",
        Duration::from_secs(60),
        &sluice,
        || committed_to_end(&buffer, &group),
    );
    let ca_text = ca.display().to_string();
    let got = records_with(
        &broker.bootstrap(),
        &topic,
        ids.len(),
        &[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            ("sasl.username", "sink-user"),
            ("sasl.password", "s3cret"),
            ("ssl.ca.location", &ca_text),
        ],
    );
    assert_all_once(&counts(event_ids(&got)), &ids, 0);
    let dead = sluice_tests::json_lines(&sluice.path("dlq.jsonl"));
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(
        dead[0]["reason"]
            .as_str()
            .unwrap()
            .contains("max_request_size"),
        "{}",
        dead[0]
    );
    assert!(
        !sluice.log().contains("s3cret"),
        "the password is in the log"
    );
}
