//! The opensearch sink in the real binary, behind the kafka buffer, against the strict
//! OpenSearch test server (`sluice_tests::OpenSearch`; no OpenSearch can be installed here):
//! documents land once each, by id and by content, through partial bulk failures, an outage,
//! kill -9s and a host of the group killed; refused documents are dead-lettered with the
//! item's error; the log analytics pipeline of Data Prepper's docs (http → grok →
//! opensearch) runs unchanged.

use std::collections::BTreeMap;
use std::time::Duration;

use sluice_tests::{OpenSearch, Sluice};

use super::{
    assert_all_once, committed_to_end, counts, kill_before_the_commit, kill_rounds, names,
    pipeline, post_events, sink_metric, slow_commits, through_an_outage, two_hosts_writing,
    wait_until,
};

fn opensearch_sink(server: &OpenSearch, extra: &str) -> String {
    format!(
        "    - opensearch:\n        hosts: [\"{}\"]\n        flush_timeout: 500\n{extra}",
        server.url()
    )
}

/// Every stored document's `id` field (the event's id), over all indices, and how many
/// documents there are.
fn stored_ids(server: &OpenSearch) -> Vec<String> {
    server
        .documents_any()
        .into_iter()
        .map(|(_, _, source)| source["id"].as_str().unwrap_or("?").to_owned())
        .collect()
}

#[test]
fn documents_land_once_and_refused_ones_are_dead_lettered_with_the_items_error() {
    let server = OpenSearch::start_with_credentials("admin", "s3cret");
    server.faults(|f| {
        f.rejected_items = 7;
        f.unmappable = Some("poison".into());
    });
    let (buffer, group) = names("os");
    let sinks = opensearch_sink(
        &server,
        "        username: admin\n        password: ${env:OS_PASSWORD}\n        index: app-%{yyyy.MM.dd}\n        bulk_size: 1\n",
    );
    let sluice = Sluice::start_with_env(
        &pipeline(&buffer, &group, &sinks),
        &[("OS_PASSWORD", "s3cret")],
    );
    let mut ids = post_events(&sluice, "ok", 200, 50);
    post_events(&sluice, "poison", 1, 1);
    ids.extend(post_events(&sluice, "after", 50, 25));
    wait_until(
        "every batch acknowledged",
        Duration::from_secs(90),
        &sluice,
        || committed_to_end(&buffer, &group),
    );
    server.assert_understood();
    let docs = server.documents_any();
    assert!(
        docs.iter().all(|(index, id, _)| index.starts_with("app-20")
            && index.len() == "app-2026.12.07".len()
            && id.starts_with(&format!("{buffer}/0/"))),
        "the index's date pattern is filled, ids are buffer positions: {:?}",
        &docs[..2.min(docs.len())]
    );
    // The 429s were retried alone and taken; the poison document is not indexed.
    assert_all_once(&counts(stored_ids(&server)), &ids, 0);
    let dead = sluice_tests::json_lines(&sluice.path("dlq.jsonl"));
    assert_eq!(dead.len(), 1, "{dead:?}");
    let reason = dead[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("400 mapper_parsing_exception"),
        "the item's status, type and reason: {reason}"
    );
    assert!(sink_metric(&sluice, "sluice_sink_retries") >= 1.0);
    assert_eq!(
        sink_metric(&sluice, "sluice_opensearch_documentErrors"),
        1.0
    );
    assert_eq!(
        sink_metric(&sluice, "sluice_opensearch_documentsSuccess"),
        ids.len() as f64
    );
}

#[test]
fn a_cluster_down_holds_the_commit_and_nothing_is_lost_or_doubled() {
    let server = OpenSearch::start();
    let (buffer, group) = names("od");
    let sinks = opensearch_sink(&server, "        index: events\n");
    let sluice = Sluice::start(&pipeline(&buffer, &group, &sinks));
    let ids = through_an_outage(
        &sluice,
        &buffer,
        &group,
        50,
        || server.faults(|f| f.requests = std::iter::repeat_n(503, 100_000).collect()),
        || server.faults(|f| f.requests.clear()),
    );
    assert_all_once(&counts(stored_ids(&server)), &ids, 0);
    server.assert_understood();
}

#[test]
fn a_request_too_large_is_split_and_a_document_too_large_dead_lettered() {
    let server = OpenSearch::start();
    server.faults(|f| f.max_content_length = Some(6_000));
    let (buffer, group) = names("o413");
    let sinks = opensearch_sink(&server, "        index: events\n");
    let sluice = Sluice::start(&pipeline(&buffer, &group, &sinks));
    let ids = post_events(&sluice, "small", 100, 50);
    let big = serde_json::json!([{"id": "big", "message": "x".repeat(8_000)}]);
    assert_eq!(sluice.post("/log/ingest", big.to_string().as_bytes()), 200);
    wait_until(
        "every batch acknowledged",
        Duration::from_secs(60),
        &sluice,
        || committed_to_end(&buffer, &group),
    );
    assert_all_once(&counts(stored_ids(&server)), &ids, 0);
    let dead = sluice_tests::json_lines(&sluice.path("dlq.jsonl"));
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(
        dead[0]["reason"].as_str().unwrap().contains("413"),
        "{}",
        dead[0]
    );
}

/// Killed -9 three times after the sink indexed a round and before the buffer committed it:
/// the batches read again carry the same ids and overwrite, so each event is one document.
#[test]
fn after_kill_9s_each_event_is_one_document() {
    let server = OpenSearch::start();
    let (buffer, group) = names("ok9");
    // A request per batch (`-1`), so a round is acknowledged batch by batch and the kill
    // finds most of it uncommitted.
    let sinks = opensearch_sink(&server, "        index: events\n")
        .replace("flush_timeout: 500", "flush_timeout: -1");
    let mut sluice = Sluice::start(&slow_commits(&buffer, &group, &sinks, ""));
    let (ids, uncommitted) = kill_rounds(&mut sluice, (&buffer, &group), |n| {
        server.bulk_counts().1 >= n
    });
    wait_until(
        "the buffer committed every record",
        Duration::from_secs(90),
        &sluice,
        || committed_to_end(&buffer, &group),
    );
    assert!(
        uncommitted > 0,
        "every kill came after the commit: untested"
    );
    let (_, items) = server.bulk_counts();
    eprintln!("{} events, {items} bulk items indexed", ids.len());
    assert!(items > ids.len(), "no batch was read again: untested");
    let docs = server.documents("events");
    assert_eq!(docs.len(), ids.len(), "one document per event, by id");
    assert_all_once(&counts(stored_ids(&server)), &ids, 0);
    let rewritten = docs.values().filter(|d| d.version > 1).count();
    eprintln!("{rewritten} documents overwritten by a re-read");
    assert_eq!(sluice.terminate(), 0, "{}", sluice.log());
}

/// With `action: create`, a batch read again is answered 409 on the ids sluice chose: taken as
/// already indexed, not dead-lettered.
#[test]
fn with_create_a_conflict_on_a_chosen_id_is_already_indexed() {
    let server = OpenSearch::start();
    let (buffer, group) = names("oc");
    let sinks = opensearch_sink(&server, "        index: events\n        action: create\n");
    let two = "          number_of_partitions: 2\n          workers: 1\n";
    let yaml = slow_commits(&buffer, &group, &sinks, two);
    let (a, mut b, mut ids) = two_hosts_writing(&yaml, &[]);
    ids.extend(post_events(&a, "kill", 300, 5));
    wait_until(
        "the sinks to index the round",
        Duration::from_secs(60),
        &a,
        || server.documents("events").len() >= ids.len(),
    );
    kill_before_the_commit(&mut b, &a, (&buffer, &group));
    assert_all_once(&counts(stored_ids(&server)), &ids, 0);
    assert!(
        !a.path("dlq.jsonl").exists() || sluice_tests::json_lines(&a.path("dlq.jsonl")).is_empty(),
        "a conflict on a chosen id is not a dead letter"
    );
}

/// Data Prepper's log analytics pipeline as the OpenSearch docs' use-case page writes it
/// (http with basic auth → grok `COMMONAPACHELOG` → opensearch `apache_logs`, its comments
/// kept), with three changes: no TLS files on the source, a port the test chooses, and the
/// kafka buffer.
#[test]
fn the_log_analytics_pipeline_of_the_docs_indexes_grokked_lines() {
    let server = OpenSearch::start_with_credentials("admin", "admin");
    let (buffer, group) = names("ola");
    let yaml = format!(
        r#"
log-pipeline:
  source:
    http:
      port: {{port}}
      authentication:
        http_basic:
          username: "myuser"
          password: "mys3cret"
  buffer:
    kafka:
      bootstrap_servers: [{bootstrap}]
      topics:
        - name: {buffer}
          group_id: {group}
          create_topic: true
  processor:
    - grok:
        match:
          # This will match logs with a "log" key against the COMMONAPACHELOG pattern (ex: {{ "log": "actual apache log..." }} )
          # You should change this to match what your logs look like. See the grok documenation to get started.
          log: [ "%{{COMMONAPACHELOG}}" ]
  sink:
    - opensearch:
        hosts: [ "{url}" ]
        # Change to your credentials
        username: "admin"
        password: "admin"
        # Add a certificate file if you are accessing an OpenSearch cluster with a self-signed certificate
        #cert: /path/to/cert
        # If you are connecting to an Amazon OpenSearch Service domain without
        # Fine-Grained Access Control, enable these settings. Comment out the
        # username and password above.
        #aws_sigv4: true
        #aws_region: us-east-1
        # Since we are grok matching for apache logs, it makes sense to send them to an OpenSearch index named apache_logs.
        # You should change this to correspond with how your OpenSearch indexes are set up.
        index: apache_logs
"#,
        bootstrap = sluice_tests::kafka_bootstrap(),
        url = server.url(),
    );
    let sluice = Sluice::start(&yaml);
    let lines: Vec<serde_json::Value> = (0..20)
        .map(|i| serde_json::json!({"log": format!("127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] \"GET /page{i}.gif HTTP/1.0\" 200 {}", 1000 + i)}))
        .collect();
    let auth = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            "myuser:mys3cret"
        )
    );
    assert_eq!(
        sluice.post_with(
            "/log/ingest",
            &[("Authorization", auth.as_str())],
            serde_json::to_string(&lines).unwrap().as_bytes()
        ),
        200
    );
    // Data Prepper's default flush_timeout is a minute; the batch's documents wait for it.
    wait_until(
        "the documents indexed",
        Duration::from_secs(120),
        &sluice,
        || server.documents("apache_logs").len() == 20,
    );
    server.assert_understood();
    let docs: BTreeMap<_, _> = server.documents("apache_logs");
    let requests: Vec<&str> = docs
        .values()
        .filter_map(|d| d.source["request"].as_str())
        .collect();
    assert_eq!(requests.len(), 20, "grok's fields are in the documents");
    assert!(docs.values().all(|d| d.source["response"] == "200"));
}
