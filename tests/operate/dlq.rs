use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::ok;
use serde_json::Value;
use sluice_tests::{Sluice, json_lines, kafka_bootstrap, plugin_dir, sluice_bin, unique};

/// http → kafka buffer → the deserializer `parse` (a plugin of the test's folder) → a file.
fn pipeline(topic: &str, group: &str) -> String {
    format!(
        r#"
ops:
  delay: 20ms
  source:
    http:
      port: {{port}}
      deserializer:
        name: parse
{buffer}  sink:
    - file:
        path: "{{dir}}/out/events.jsonl"
  dlq_path: "{{dir}}/dlq.jsonl"
"#,
        buffer = super::kafka_buffer(topic, group, 2)
    )
}

/// A plugin folder whose `parse.wasm` is the `json` deserializer, and how to swap it for the
/// `logfmt` one (the fix), which the running process picks up by hot reload.
struct Plugins(tempfile::TempDir);

impl Plugins {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(
            plugin_dir().join("json.wasm"),
            dir.path().join("parse.wasm"),
        )
        .unwrap();
        Self(dir)
    }

    fn fix(&self) {
        let tmp = self.0.path().join("parse.tmp");
        std::fs::copy(plugin_dir().join("logfmt.wasm"), &tmp).unwrap();
        std::fs::rename(&tmp, self.0.path().join("parse.wasm")).unwrap();
    }

    fn arg(&self) -> &str {
        self.0.path().to_str().unwrap()
    }
}

/// `sluice dlq ARGS -f <pipelines.yaml> --data-dir <data>` of `s`'s folder.
fn dlq(dir: &Path, args: &[&str]) -> Output {
    Command::new(sluice_bin())
        .arg("dlq")
        .args(args)
        .arg("-f")
        .arg(dir.join("pipelines.yaml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .output()
        .unwrap()
}

/// The dead-letter entries (mark lines left out).
fn entries(path: &Path) -> Vec<Value> {
    json_lines(path)
        .into_iter()
        .filter(|e| e.get("replayed").is_none())
        .collect()
}

fn wait(what: &str, s: &Sluice, mut check: impl FnMut() -> bool) {
    s.wait_for(what, Duration::from_secs(60), &mut check);
}

/// How many events of each `id` the sink holds.
fn ids(path: &Path) -> HashMap<String, usize> {
    let mut ids = HashMap::new();
    for e in json_lines(path) {
        *ids.entry(e["id"].as_str().unwrap_or_default().to_owned())
            .or_default() += 1;
    }
    ids
}

const ADMIN: [&str; 5] = [
    "--admin",
    "--metrics-username",
    "op",
    "--metrics-password",
    "${env:SLUICE_TEST_ADMIN_PASSWORD}",
];

#[test]
fn dead_letters_of_a_failing_plugin_are_replayed_through_the_running_process_once_it_is_fixed() {
    let plugins = Plugins::new();
    let (topic, group) = (unique("ops"), unique("g"));
    let mut args = vec!["--plugins", plugins.arg(), "--reload-interval", "100ms"];
    args.extend(ADMIN);
    let s = Sluice::start_with_env_and_args(
        &pipeline(&topic, &group),
        &[("SLUICE_TEST_ADMIN_PASSWORD", "s3cret")],
        &args,
    );
    let (sink, dead) = (s.path("out/events.jsonl"), s.path("dlq.jsonl"));
    for i in 0..3 {
        let json = format!(r#"{{"id": "j{i}"}}"#);
        assert_eq!(s.post("/log/ingest", json.as_bytes()), 200);
        let logfmt = format!("id=l{i} msg=hello");
        assert_eq!(s.post("/log/ingest", logfmt.as_bytes()), 200);
    }
    wait("3 events and 3 dead letters", &s, || {
        ids(&sink).len() == 3 && entries(&dead).len() == 3
    });
    let listed = ok(&dlq(s.dir.path(), &["list", "ops"]));
    assert!(listed.contains("3 entries, 0 replayed"), "{listed}");
    assert!(
        listed.contains("deserializer  http:/log/ingest"),
        "grouped by stage and origin, without the buffer position: {listed}"
    );
    let shown = ok(&dlq(s.dir.path(), &["show", "ops", "2"]));
    assert!(shown.starts_with("#2  "), "{shown}");
    assert!(
        shown.contains("  payload: id=l") && shown.contains(" msg=hello\n"),
        "the payload as text: {shown}"
    );

    // Wrong credentials, or none: refused, nothing replayed or marked.
    let pass = |password: &str| {
        vec![
            "replay".to_owned(),
            "ops".to_owned(),
            "--username".to_owned(),
            "op".to_owned(),
            "--password".to_owned(),
            password.to_owned(),
        ]
    };
    let refused = dlq(s.dir.path(), &args_of(&pass("wrong")));
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("refused the credentials (401"), "{said}");
    let anonymous = dlq(s.dir.path(), &["replay", "ops"]);
    assert!(String::from_utf8_lossy(&anonymous.stderr).contains("refused the credentials"));
    assert_eq!(
        json_lines(&dead).len(),
        3,
        "no mark: {:?}",
        json_lines(&dead)
    );

    // Entry 1 replayed before the fix: dead-lettered anew, with both reasons, its receive
    // time and where it came from.
    let mut one = pass("s3cret");
    one.push("1".to_owned());
    let said = ok(&dlq(s.dir.path(), &args_of(&one)));
    assert!(
        said.contains("replayed 1 of 1 chosen entries: 1 into the buffer"),
        "{said}"
    );
    wait("entry 1 dead-lettered again", &s, || {
        entries(&dead).len() == 4
    });
    let all = entries(&dead);
    let (first, again) = (&all[0], &all[3]);
    assert_eq!(again["payload"], first["payload"]);
    assert_eq!(again["received_at_ms"], first["received_at_ms"]);
    assert_eq!(
        again["earlier_reasons"],
        serde_json::json!([first["reason"]])
    );
    let source = |e: &Value| {
        e["origin"]
            .as_str()
            .unwrap()
            .split(" via ")
            .next()
            .unwrap()
            .to_owned()
    };
    assert_eq!(source(again), "http:/log/ingest");
    assert_eq!(source(again), source(first));
    let shown = ok(&dlq(s.dir.path(), &["show", "ops", "4"]));
    assert!(shown.contains("  earlier: "), "both reasons shown: {shown}");

    // The fix, then the rest: entries 2, 3 and 4 (1 is marked replayed).
    plugins.fix();
    // Workers switch to it before their next batch.
    wait("the fixed plugin loaded", &s, || {
        s.log().contains("new version compiled and checked")
    });
    let dry = ok(&dlq(
        s.dir.path(),
        &args_of(&[pass("s3cret"), vec!["--dry-run".into()]].concat()),
    ));
    assert!(dry.contains("would replay 3 of 3"), "{dry}");
    let said = ok(&dlq(s.dir.path(), &args_of(&pass("s3cret"))));
    assert!(said.contains("replayed 3 of 3"), "{said}");
    wait("the replayed events in the sink", &s, || {
        ids(&sink).len() == 6
    });
    let got = ids(&sink);
    for i in 0..3 {
        assert_eq!(got[&format!("l{i}")], 1, "{got:?}");
    }
    // Nothing is replayed twice by accident; `--again` on purpose.
    let said = ok(&dlq(s.dir.path(), &args_of(&pass("s3cret"))));
    assert!(said.contains("replayed 0 of 0"), "{said}");
    let listed = ok(&dlq(s.dir.path(), &["list", "ops", "--again"]));
    assert!(listed.contains("4 entries, 4 replayed"), "{listed}");
    let mut again = pass("s3cret");
    again.extend([
        "--again".into(),
        "--dry-run".into(),
        "--reason".into(),
        "^invalid JSON".into(),
    ]);
    let said = ok(&dlq(s.dir.path(), &args_of(&again)));
    assert!(said.contains("would replay 4 of 4"), "{said}");
}

fn args_of(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn a_replay_into_a_stopped_pipeline_killed_midway_and_run_again_loses_nothing() {
    let plugins = Plugins::new();
    let (topic, group) = (unique("ops"), unique("g"));
    let args = ["--plugins", plugins.arg(), "--reload-interval", "100ms"];
    let mut s = Sluice::start_with(&pipeline(&topic, &group), &args);
    let dead = s.path("dlq.jsonl");
    const N: usize = 3000;
    produce_logfmt(&topic, N);
    wait("every record dead-lettered", &s, || {
        entries(&dead).len() == N
    });
    s.terminate();

    // Stopped: the replay writes into the topic itself. Killed once its first chunk is marked.
    let mut replay = Command::new(sluice_bin())
        .args(["dlq", "replay", "ops", "-f"])
        .arg(s.path("pipelines.yaml"))
        .arg("--data-dir")
        .arg(s.path("data"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let marked = || -> usize {
        json_lines(&dead)
            .iter()
            .filter_map(|l| l["replayed"].as_array().map(Vec::len))
            .sum()
    };
    while marked() == 0 {
        assert!(started.elapsed() < Duration::from_secs(60), "no mark");
        assert!(
            replay.try_wait().unwrap().is_none(),
            "the replay ended before a mark"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    sluice_tests::close(&mut replay, sluice_tests::Signal::Kill);
    let cut_at = marked();
    assert!(cut_at < N, "killed mid-way: {cut_at} of {N} marked");

    // Again: the rest (what was sent and not marked is sent twice: at least once).
    let said = ok(&dlq(s.dir.path(), &["replay", "ops"]));
    assert!(
        said.contains(&format!("of {} chosen", N - cut_at)),
        "{said}"
    );
    assert_eq!(marked(), N);

    // The fixed plugin: every record reaches the sink.
    plugins.fix();
    s.restart(&args);
    let sink = s.path("out/events.jsonl");
    wait("every replayed record in the sink", &s, || {
        ids(&sink).len() == N
    });
    let got = ids(&sink);
    assert!((0..N).all(|i| got.get(&format!("l{i}")).is_some_and(|&n| n >= 1)));
    let twice = got.values().filter(|&&n| n > 1).count();
    assert!(
        twice <= 200,
        "at most the chunk cut short came twice: {twice}"
    );
}

/// `n` logfmt records (`id=l<i>`), straight into the topic, as another producer would.
fn produce_logfmt(topic: &str, n: usize) {
    use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
    let producer: ThreadedProducer<DefaultProducerContext> = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", kafka_bootstrap())
        .create()
        .unwrap();
    for i in 0..n {
        let payload = format!("id=l{i} msg=hello");
        loop {
            match producer.send(BaseRecord::<(), _>::to(topic).payload(&payload)) {
                Ok(()) => break,
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    }
    producer.flush(Duration::from_secs(30)).unwrap();
}

/// A processor's dead letter is the event as that processor got it: replayed, it skips the
/// deserializer and the processors before that one (`add_entries` appends on a second pass, so
/// it would show), and, failed again, is dead-lettered anew with both reasons.
#[test]
fn an_event_a_processor_failed_comes_back_to_that_processor_only() {
    let (topic, group) = (unique("ops"), unique("g"));
    let yaml = format!(
        r#"
ops:
  delay: 20ms
  source:
    http:
      port: {{port}}
{buffer}  processor:
    - add_entries:
        entries:
          - key: hops
            value: add
            append_if_key_exists: true
    - redact:
        keys: ["password"]
  sink:
    - file:
        path: "{{dir}}/out/events.jsonl"
  dlq_path: "{{dir}}/dlq.jsonl"
"#,
        buffer = super::kafka_buffer(&topic, &group, 1)
    );
    let s =
        Sluice::start_with_env_and_args(&yaml, &[("SLUICE_TEST_ADMIN_PASSWORD", "s3cret")], &ADMIN);
    let dead = s.path("dlq.jsonl");
    let body =
        r#"[{"user": "ann", "password": "x"}, {"user": "dee", "password": {"nested": true}}]"#;
    assert_eq!(s.post("/log/ingest", body.as_bytes()), 200);
    wait("one event dead-lettered by redact", &s, || {
        entries(&dead).len() == 1
    });
    let first = entries(&dead).remove(0);
    assert_eq!(first["stage"], "processor");
    assert_eq!(
        (
            first["processor"].as_str(),
            first["processor_index"].as_u64()
        ),
        (Some("redact"), Some(1))
    );
    let said = ok(&dlq(
        s.dir.path(),
        &["replay", "ops", "--username", "op", "--password", "s3cret"],
    ));
    assert!(
        said.contains("replayed 1 of 1 chosen entries: 1 into the buffer"),
        "{said}"
    );
    wait("the event dead-lettered again", &s, || {
        entries(&dead).len() == 2
    });
    let again = entries(&dead).remove(1);
    assert_eq!(again["stage"], "processor");
    assert_eq!(again["processor_index"], 1);
    assert_eq!(
        again["earlier_reasons"],
        serde_json::json!([first["reason"]])
    );
    let b64 = |e: &Value| {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(e["payload"].as_str().unwrap())
            .unwrap();
        serde_json::from_slice::<Value>(&bytes).unwrap()
    };
    assert_eq!(b64(&first)["hops"], "add");
    assert_eq!(
        b64(&again),
        b64(&first),
        "add_entries did not run on it again (it would append): the same event came to redact"
    );
    assert_eq!(again["received_at_ms"], first["received_at_ms"]);
}
