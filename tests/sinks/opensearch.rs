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
        "        username: admin\n        password: ${env:OS_PASSWORD}\n        index: app-%{yyyy.MM.dd}\n        bulk_size: 1\n        exclude_keys: [host]\n",
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
    assert!(
        docs.iter()
            .all(|(_, _, source)| source.get("host").is_none() && source["message"].is_string()),
        "exclude_keys shapes the documents"
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

    // The cluster takes it now; sluice stopped, `dlq replay` indexes the document.
    let mut sluice = sluice;
    sluice.terminate();
    server.faults(|f| f.unmappable = None);
    let out = std::process::Command::new(sluice_tests::sluice_bin())
        .args(["dlq", "replay", "sink-pipeline", "-f"])
        .arg(sluice.path("pipelines.yaml"))
        .arg("--data-dir")
        .arg(sluice.path("data"))
        .env("OS_PASSWORD", "s3cret")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("replayed 1 of 1 chosen entries: 1 to the sink opensearch:"),
        "{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replayed = stored_ids(&server);
    assert_eq!(
        replayed
            .iter()
            .filter(|id| id.starts_with("poison"))
            .count(),
        1
    );
    server.assert_understood();
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
        || {
            // `/health` says which sink fails and why, and stays 200: the buffer takes events.
            let (status, health) = sluice.get_metrics_server("/health");
            assert_eq!(status, 200, "{health}");
            assert!(
                health.contains("\"degraded\"")
                    && health.contains("opensearch:")
                    && health.contains("503"),
                "{health}"
            );
            server.faults(|f| f.requests.clear());
        },
    );
    assert_all_once(&counts(stored_ids(&server)), &ids, 0);
    server.assert_understood();
    let (_, health) = sluice.get_metrics_server("/health");
    assert!(health.contains("\"ready\""), "{health}");
}

/// A memory buffer in front of a cluster that is down: once the buffer is full the source
/// answers 503, the clients send again, and when the cluster is back every event is indexed
/// once.
#[test]
fn a_cluster_down_behind_a_full_memory_buffer_makes_the_source_answer_503() {
    let server = OpenSearch::start();
    server.faults(|f| f.requests = std::iter::repeat_n(503, 100_000).collect());
    let yaml = format!(
        r#"
sink-pipeline:
  workers: 1
  source:
    http:
      port: {{port}}
      request_timeout: 1s
  buffer:
    bounded_blocking:
      buffer_size: 8
      batch_size: 2
  sink:
{}
"#,
        opensearch_sink(&server, "        index: events\n")
    );
    let sluice = Sluice::start(&yaml);
    // The first request fails and is retried: the sink holds its events and takes no more.
    let mut ids = post_events(&sluice, "first", 10, 10);
    wait_until(
        "the sink to retry",
        Duration::from_secs(30),
        &sluice,
        || sink_metric(&sluice, "sluice_sink_retries") >= 1.0,
    );
    let mut refused = 0;
    let mut pending = Vec::new();
    for i in 0..20 {
        let (body, batch) = super::events("m", i * 10, 10);
        if sluice.post("/log/ingest", &body) == 200 {
            ids.extend(batch);
        } else {
            refused += 1;
            pending.push((body, batch));
        }
    }
    assert!(
        refused > 0,
        "the full buffer refused nothing:\n{}",
        sluice.log()
    );
    server.faults(|f| f.requests.clear());
    for (body, batch) in pending {
        wait_until(
            "the source to take a post again",
            Duration::from_secs(60),
            &sluice,
            || sluice.post("/log/ingest", &body) == 200,
        );
        ids.extend(batch);
    }
    wait_until(
        "every event indexed",
        Duration::from_secs(60),
        &sluice,
        || server.documents("events").len() >= ids.len(),
    );
    assert_all_once(&counts(stored_ids(&server)), &ids, 0);
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
    kill_before_the_commit(&mut b, &a, (&buffer, &group), &mut ids, |n| {
        server.documents("events").len() >= n
    });
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

/// A pipeline with a memory buffer in front of `sinks` (YAML list items, indented for
/// `sink:`): for what does not need the kafka buffer.
fn in_memory(sinks: &str) -> String {
    format!(
        "sink-pipeline:\n  source:\n    http:\n      port: {{port}}\n  sink:\n{sinks}  dlq_path: {{dir}}/dlq.jsonl\n"
    )
}

/// Amazon OpenSearch Service and Serverless: every request signed with SigV4 (service `es`,
/// `aoss` with the content hash), credentials from the standard AWS chain, checked by the
/// server with a verifier written apart from the signer.
#[test]
fn requests_to_amazon_opensearch_are_signed_with_sigv4() {
    for (service, aws) in [
        ("es", "{region: eu-west-1}"),
        ("aoss", "{region: eu-west-1, serverless: true}"),
    ] {
        let server =
            OpenSearch::start_with_sigv4("AKIDSLUICETEST", "s3cr3t/key", "eu-west-1", service);
        let sink = opensearch_sink(
            &server,
            &format!("        aws: {aws}\n        index: signed\n"),
        );
        let sluice = Sluice::start_with_env(
            &in_memory(&sink),
            &[
                ("AWS_ACCESS_KEY_ID", "AKIDSLUICETEST"),
                ("AWS_SECRET_ACCESS_KEY", "s3cr3t/key"),
                ("AWS_SESSION_TOKEN", ""),
                ("AWS_PROFILE", "sluice-none"),
                ("AWS_EC2_METADATA_DISABLED", "true"),
            ],
        );
        let ids = post_events(&sluice, service, 30, 10);
        wait_until(
            "the documents indexed",
            Duration::from_secs(60),
            &sluice,
            || server.documents("signed").len() == ids.len(),
        );
        assert_eq!(
            server.signature_failures(),
            0,
            "{service}: {}",
            sluice.log()
        );
        server.assert_understood();
    }
}

/// `query_lookup`, as the docs page's example: events whose condition holds are looked up by
/// `query_term` first, and one already indexed is dropped.
#[test]
fn query_lookup_drops_documents_already_indexed() {
    let server = OpenSearch::start();
    server.seed(
        "events",
        "old-1",
        serde_json::json!({"document_id": "d1", "v": 0}),
    );
    server.seed(
        "events",
        "old-2",
        serde_json::json!({"document_id": "d2", "v": 0}),
    );
    let sink = opensearch_sink(
        &server,
        "        index: events\n        query_lookup:\n          query_when: '/maybe_duplicate == true'\n          query_term: document_id\n          query_duration: PT5M\n",
    );
    let sluice = Sluice::start(&in_memory(&sink));
    let events = serde_json::json!([
        {"id": "a", "document_id": "d1", "maybe_duplicate": true},
        {"id": "b", "document_id": "d3", "maybe_duplicate": true},
        {"id": "c", "document_id": "d2", "maybe_duplicate": false},
        {"id": "d", "document_id": "d2", "maybe_duplicate": true},
    ]);
    assert_eq!(
        sluice.post("/log/ingest", events.to_string().as_bytes()),
        200
    );
    wait_until(
        "the lookups and writes",
        Duration::from_secs(60),
        &sluice,
        || {
            sink_metric(
                &sluice,
                "sluice_opensearch_eventsDroppedAndReleasedAfterQuery",
            ) >= 2.0
                && sink_metric(&sluice, "sluice_opensearch_documentsSuccess") >= 2.0
        },
    );
    let mut indexed = stored_ids(&server);
    indexed.sort();
    // `a` and `d` were found (d1, d2) and dropped; `b` was not found, `c` not looked for.
    assert_eq!(
        indexed,
        ["?", "?", "b", "c"],
        "the two seeded have no id field"
    );
    assert!(server.searches() >= 1);
    server.assert_understood();
}

/// `custom` with Data Prepper's index management keys: the policy from `ism_policy_file`, the
/// composable template from `template_file` with `number_of_shards`, then `<index>-000001`
/// behind the write alias, before the first document; on an ISM that refuses `ism_template`,
/// the policy goes without it and the template names it.
#[test]
fn a_custom_index_is_set_up_from_the_template_and_policy_files_first() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("template.json");
    std::fs::write(
        &template,
        r#"{"version": 2, "template": {"mappings": {"properties": {"message": {"type": "text"}}}}}"#,
    )
    .unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(
        &policy,
        r#"{"policy": {"description": "app", "default_state": "hot", "states": [{"name": "hot", "actions": [{"rollover": {"min_size": "1gb"}}]}], "ism_template": {"index_patterns": ["x-*"]}}}"#,
    )
    .unwrap();
    for old_ism in [false, true] {
        let server = OpenSearch::start();
        server.cluster(|c| c.ism_template_unsupported = old_ism);
        let sink = opensearch_sink(
            &server,
            &format!(
                "        index: app\n        template_type: index-template\n        template_file: {}\n        ism_policy_file: {}\n        number_of_shards: 3\n",
                template.display(),
                policy.display()
            ),
        );
        let sluice = Sluice::start(&in_memory(&sink));
        let ids = post_events(&sluice, "m", 20, 10);
        wait_until(
            "the documents indexed",
            Duration::from_secs(60),
            &sluice,
            || server.documents("app-000001").len() == ids.len(),
        );
        server.assert_understood();
        let t = &server.index_templates()["app-index-template"];
        assert_eq!(t["index_patterns"], serde_json::json!(["app-*"]), "{t}");
        let settings = &t["template"]["settings"];
        assert_eq!(settings["number_of_shards"], 3, "{t}");
        assert_eq!(
            settings["opendistro.index_state_management.rollover_alias"], "app",
            "{t}"
        );
        let stored = &server.policies()["app-policy"];
        if old_ism {
            assert!(stored["policy"].get("ism_template").is_none(), "{stored}");
            assert_eq!(
                settings["opendistro.index_state_management.policy_id"],
                "app-policy"
            );
        } else {
            assert_eq!(
                stored["policy"]["ism_template"]["index_patterns"],
                serde_json::json!(["app-*"]),
                "{stored}"
            );
        }
        assert_eq!(
            server.aliases()["app"]["app-000001"]["is_write_index"],
            true
        );
    }
}

/// Two hosts, one not listening: requests go to the other. Answers cut off mid-body and
/// answers slower than `socket_timeout` are sent again; from the kafka buffer the ids are
/// chosen, so what the server had already stored is overwritten, not doubled.
#[test]
fn a_dead_host_a_cut_answer_and_a_slow_one_lose_and_double_nothing() {
    let server = OpenSearch::start();
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = dead.local_addr().unwrap().port();
    drop(dead);
    server.faults(|f| f.close_mid_response = 3);
    let (buffer, group) = names("ohost");
    let sinks = format!(
        "    - opensearch:\n        hosts: [\"http://127.0.0.1:{dead_port}\", \"{}\"]\n        flush_timeout: 300\n        socket_timeout: 1000\n        index: events\n",
        server.url()
    );
    let sluice = Sluice::start(&pipeline(&buffer, &group, &sinks));
    let mut ids = post_events(&sluice, "cut", 100, 20);
    wait_until(
        "the cut answers retried",
        Duration::from_secs(60),
        &sluice,
        || committed_to_end(&buffer, &group),
    );
    server.faults(|f| f.slow = Some(Duration::from_secs(3)));
    ids.extend(post_events(&sluice, "slow", 40, 20));
    wait_until(
        "a slow answer timed out",
        Duration::from_secs(60),
        &sluice,
        || sink_metric(&sluice, "sluice_sink_retries") >= 6.0,
    );
    server.faults(|f| f.slow = None);
    wait_until(
        "every batch acknowledged",
        Duration::from_secs(60),
        &sluice,
        || committed_to_end(&buffer, &group),
    );
    assert_all_once(&counts(stored_ids(&server)), &ids, 0);
    assert_eq!(server.documents("events").len(), ids.len());
    server.assert_understood();
}

/// `aws.sts_role_arn` with `sts_external_id` and `sts_header_overrides`: the role is assumed
/// through STS with the headers on the `AssumeRole` request, and every request to the cluster
/// is signed with the role's temporary credentials.
#[test]
fn a_role_is_assumed_with_the_header_overrides_and_its_credentials_sign() {
    let (sts_port, sts_seen) = sluice_tests::sts::fake_sts("ASIASLUICESTS", "sts/secret");
    let server = OpenSearch::start_with_sigv4("ASIASLUICESTS", "sts/secret", "eu-west-1", "es");
    let sink = opensearch_sink(
        &server,
        "        aws:\n          region: eu-west-1\n          sts_role_arn: arn:aws:iam::123456789012:role/ingest\n          sts_external_id: tenant-7\n          sts_header_overrides:\n            x-sluice-tenant: acme\n        index: assumed\n",
    );
    let sluice = Sluice::start_with_env(
        &in_memory(&sink),
        &[
            ("AWS_ACCESS_KEY_ID", "AKIDSLUICEBASE"),
            ("AWS_SECRET_ACCESS_KEY", "base/secret"),
            ("AWS_PROFILE", "sluice-none"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
            (
                "AWS_ENDPOINT_URL_STS",
                &format!("http://127.0.0.1:{sts_port}"),
            ),
        ],
    );
    let ids = post_events(&sluice, "role", 20, 10);
    wait_until(
        "the documents indexed",
        Duration::from_secs(60),
        &sluice,
        || server.documents("assumed").len() == ids.len(),
    );
    assert_eq!(server.signature_failures(), 0, "{}", sluice.log());
    let seen = sts_seen.lock().unwrap();
    let header = |name: &str| seen.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    assert_eq!(
        header("x-sluice-tenant").as_deref(),
        Some("acme"),
        "{seen:?}"
    );
    let body = header("body").unwrap();
    assert!(
        body.contains("Action=AssumeRole")
            && body.contains("RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fingest")
            && body.contains("ExternalId=tenant-7"),
        "{body}"
    );
    assert!(
        header("authorization").is_some_and(|a| a.contains("Credential=AKIDSLUICEBASE/")),
        "the AssumeRole call is signed with the chain's credentials: {seen:?}"
    );
}
