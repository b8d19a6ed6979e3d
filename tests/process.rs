//! Processors: the example `redact` (contract 0.2) and `tagger` (0.3, with event metadata)
//! components, built from `plugins/`, through the real host's processor adapter.

use sluice_plugin::{
    Decoder, Event, EventMetadata, Events, Limits, PluginError, PluginHost, Processed, Processor,
};
use sluice_tests::plugin_dir;

const SECS_30: std::time::Duration = std::time::Duration::from_secs(30);
const SECS_60: std::time::Duration = std::time::Duration::from_secs(60);

fn plugin(name: &str) -> sluice_plugin::Plugin {
    PluginHost::new(None)
        .unwrap()
        .load_file(&plugin_dir().join(format!("{name}.wasm")))
        .unwrap()
}

fn redact(keys: &str) -> Result<Processor, PluginError> {
    Processor::new(
        plugin("redact"),
        vec![("keys".to_owned(), keys.to_owned())],
        Limits::default(),
    )
}

fn event(body: &str) -> Event<'_> {
    Event {
        body: body.as_bytes(),
        received_at_ms: 1,
        origin: "test",
        metadata: None,
    }
}

#[test]
fn redact_masks_named_keys_keeps_the_rest_and_fails_what_is_not_an_object() {
    let mut p = redact(r#"["password"]"#).unwrap();
    assert_eq!(p.plugin().world(), "sluice:plugin/processor-plugin@0.2.0");
    let out = p.process(&[
        event(r#"{"user":"ann","password":"hunter2"}"#),
        event(r#"{"user":"bob"}"#),
        event("[1,2]"),
    ]);
    assert_eq!(
        out,
        vec![
            Processed::Replace(
                Events::from(vec![r#"{"password":"***","user":"ann"}"#.to_owned()]),
                None
            ),
            Processed::Keep(None),
            Processed::Failed(
                "not a JSON object: invalid type: sequence, expected a map at line 1 column 0"
                    .to_owned()
            ),
        ]
    );
    assert_eq!(p.stats().calls, 1, "one call for the whole batch");
}

/// A 0.3 processor reads each event's metadata and sets new metadata for some, keeping every
/// event's text (nothing is copied back); a host that passes no metadata shows it an `EVENT`.
#[test]
fn tagger_reads_the_tags_an_event_came_with_and_sets_tags_and_attributes() {
    let options = [
        ("tags", r#"["seen"]"#),
        ("tag_from_key", "level"),
        ("attributes_from_keys", r#"["tenant"]"#),
        ("count_tags_into", "before"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()));
    let mut p = Processor::new(plugin("tagger"), options.to_vec(), Limits::default()).unwrap();
    assert_eq!(p.plugin().world(), "sluice:plugin/processor-plugin@0.3.0");
    assert!(p.sees_metadata());
    let came_with = EventMetadata {
        event_type: "LOG".into(),
        tags: vec!["seen".into(), "_grokparsefailure".into()],
        attributes: r#"{"tenant":"old","x":1}"#.into(),
    };
    let with = |body, metadata| Event {
        metadata,
        ..event(body)
    };
    let out = p.process(&[
        with(r#"{"level":"error","tenant":"db"}"#, Some(&came_with)),
        with(r#"{"level":5}"#, None),
        with("[1]", None),
    ]);
    assert_eq!(
        out,
        vec![
            Processed::Keep(Some(EventMetadata {
                event_type: "LOG".into(),
                tags: vec!["seen".into(), "_grokparsefailure".into(), "error".into()],
                attributes: r#"{"before":2,"tenant":"db","x":1}"#.into(),
            })),
            Processed::Keep(Some(EventMetadata {
                event_type: "EVENT".into(),
                tags: vec!["seen".into()],
                attributes: r#"{"before":0}"#.into(),
            })),
            Processed::Failed(
                "not a JSON object: invalid type: sequence, expected a map at line 1 column 0"
                    .to_owned()
            ),
        ]
    );
    // 0.2 processors see no metadata and set none.
    assert!(!redact(r#"["a"]"#).unwrap().sees_metadata());
}

#[test]
fn redact_refuses_missing_or_malformed_options_by_name() {
    let err = |r: Result<Processor, PluginError>| r.err().unwrap().to_string();
    assert_eq!(
        err(redact("password")),
        "plugin `redact` refused its options: `keys` must be a list of key names, got `password`"
    );
    let none = Processor::new(plugin("redact"), vec![], Limits::default());
    assert_eq!(
        err(none),
        "plugin `redact` refused its options: `keys` is required: the keys whose values to mask"
    );
}

#[test]
fn a_plugin_of_one_kind_is_refused_where_another_is_expected() {
    let as_decoder = Decoder::new(plugin("redact"), vec![], Limits::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        as_decoder
            .contains("it is a `sluice:plugin/processor-plugin@0.2.0` plugin, not a deserializer"),
        "{as_decoder}"
    );
    let as_processor = Processor::new(plugin("json"), vec![], Limits::default())
        .err()
        .unwrap()
        .to_string();
    assert!(as_processor.contains("not a processor"), "{as_processor}");
}

const PIPELINE: &str = r#"
p:
  delay: 20ms
  source:
    http:
      port: {port}
  buffer:
    bounded_blocking:
      batch_size: 8
  processor:
    - redact:
        keys: ["password"]
    - redact:
        keys: ["token"]
  sink:
    - file:
        path: {dir}/out/events.jsonl
  dlq_path: {dir}/dlq.jsonl
"#;

#[test]
fn a_pipeline_runs_its_processors_in_order_and_dead_letters_what_one_fails() {
    let s = sluice_tests::Sluice::start(PIPELINE);
    let body = serde_json::json!([
        {"user": "ann", "password": "hunter2"},
        {"user": "bob", "token": "t0k"},
        {"user": "cy"},
        {"user": "dee", "password": {"nested": true}},
    ]);
    assert_eq!(s.post("/log/ingest", body.to_string().as_bytes()), 200);
    s.wait_for("3 events written, 1 dead-lettered", SECS_30, || {
        s.metric("sluice_eventsWritten", "p") == Some(3.0)
            && s.metric("sluice_recordsDeadLettered", "p") == Some(1.0)
    });
    let events = sluice_tests::json_lines(&s.path("out/events.jsonl"));
    assert_eq!(
        events,
        vec![
            serde_json::json!({"user": "ann", "password": "***"}),
            serde_json::json!({"user": "bob", "token": "***"}),
            serde_json::json!({"user": "cy"}),
        ]
    );
    let dead = sluice_tests::json_lines(&s.path("dlq.jsonl"));
    assert_eq!(dead.len(), 1);
    assert_eq!(
        dead[0]["reason"],
        "processor `redact` failed: `password` holds an object or a list; redact masks single values only"
    );
    assert_eq!(s.metric("sluice_eventsFailedInProcessors", "p"), Some(1.0));
    assert_eq!(
        s.metric("bounded_blocking_numberOfRecordsFailedToParse", "p"),
        Some(0.0),
        "the record parsed; one of its events failed later"
    );
}

/// `component` with a custom section appended: the same behaviour, another sha256 (a "new
/// version" for the catalog).
fn with_custom_section(mut component: Vec<u8>, note: &str) -> Vec<u8> {
    let name = b"sluice-test";
    let payload_len = 1 + name.len() + note.len();
    assert!(
        payload_len < 128 && name.len() < 128,
        "one-byte LEB128 sizes"
    );
    component.extend_from_slice(&[0, payload_len as u8, name.len() as u8]);
    component.extend_from_slice(name);
    component.extend_from_slice(note.as_bytes());
    component
}

#[test]
fn a_processor_follows_new_versions_between_batches_and_keeps_one_that_cannot_start() {
    let plugins = tempfile::tempdir().unwrap();
    let redact = std::fs::read(plugin_dir().join("redact.wasm")).unwrap();
    let file = plugins.path().join("redact.wasm");
    std::fs::write(&file, &redact).unwrap();
    let replace = |bytes: &[u8]| {
        let tmp = plugins.path().join("redact.tmp");
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, &file).unwrap();
    };
    let plugin_arg = plugins.path().to_str().unwrap();
    let s = sluice_tests::Sluice::start_with(
        PIPELINE,
        &["--plugins", plugin_arg, "--reload-interval", "100ms"],
    );
    let post = |n: usize| {
        let body = serde_json::json!([{"n": n, "password": "p"}]).to_string();
        assert_eq!(s.post("/log/ingest", body.as_bytes()), 200);
    };
    let wait = |what: &str, check: &dyn Fn() -> bool| s.wait_for(what, SECS_60, check);
    post(0);
    // A new version (same code, another hash): both stages switch at their next batch.
    replace(&with_custom_section(redact.clone(), "v2"));
    let mut n = 1;
    wait("the switch to the new version", &|| {
        post(n);
        s.log()
            .matches("switched to the new processor version")
            .count()
            >= 2
    });
    // A "new version" that is no processor: refused, the running one carries on.
    n += 100;
    replace(&std::fs::read(plugin_dir().join("json.wasm")).unwrap());
    wait("the refusal", &|| {
        post(n);
        s.log()
            .contains("the new processor version cannot start here; keeping the running one")
    });
    post(n + 1);
    wait("every event written", &|| {
        sluice_tests::json_lines(&s.path("out/events.jsonl"))
            .last()
            .is_some_and(|e| e["n"] == n + 1)
    });
    let events = sluice_tests::json_lines(&s.path("out/events.jsonl"));
    assert!(
        events.iter().all(|e| e["password"] == "***"),
        "every event was redacted, before, during and after the switches: {events:?}"
    );
}

#[test]
fn inspect_runs_a_processor_on_sample_events() {
    let dir = tempfile::tempdir().unwrap();
    let sample = dir.path().join("events.jsonl");
    std::fs::write(
        &sample,
        "{\"user\":\"a\",\"password\":\"x\"}\n{\"user\":\"b\"}\n",
    )
    .unwrap();
    let out = std::process::Command::new(sluice_tests::sluice_bin())
        .args(["plugins", "inspect"])
        .arg(plugin_dir().join("redact.wasm"))
        .arg("--sample")
        .arg(&sample)
        .args(["--lines", "--option", r#"keys=["password"]"#])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("world    sluice:plugin/processor-plugin@0.2.0"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "event {}:1: replaced by 1 event(s)\n    {{\"password\":\"***\",\"user\":\"a\"}}",
            sample.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("event {}:2: kept", sample.display())),
        "{stdout}"
    );
}

/// `inspect` shows the metadata a 0.3 processor sets on sample events.
#[test]
fn inspect_shows_the_metadata_a_processor_sets() {
    let dir = tempfile::tempdir().unwrap();
    let sample = dir.path().join("events.jsonl");
    std::fs::write(&sample, "{\"level\":\"warn\"}\n").unwrap();
    let out = std::process::Command::new(sluice_tests::sluice_bin())
        .args(["plugins", "inspect"])
        .arg(plugin_dir().join("tagger.wasm"))
        .arg("--sample")
        .arg(&sample)
        .args(["--lines", "--option", "tag_from_key=level"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("world    sluice:plugin/processor-plugin@0.3.0"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "event {}:1: kept\n  metadata: event type EVENT, tags [\"warn\"], attributes {{}}",
            sample.display()
        )),
        "{stdout}"
    );
}

#[test]
fn a_processor_that_traps_spins_or_lies_loses_only_those_events() {
    let yaml = r#"
p:
  delay: 20ms
  source:
    http:
      port: {port}
  processor:
    - hostile_processor:
        timeout: 300ms
  sink:
    - file:
        path: {dir}/out/events.jsonl
  dlq_path: {dir}/dlq.jsonl
"#;
    let s = sluice_tests::Sluice::start(yaml);
    let body = serde_json::json!([
        {"n": 0},
        {"n": 1, "cmd": "panic"},
        {"n": 2},
        {"n": 3, "cmd": "loop"},
        {"n": 4, "cmd": "lie"},
        {"n": 5},
    ]);
    assert_eq!(s.post("/log/ingest", body.to_string().as_bytes()), 200);
    s.wait_for("the batch acknowledged", SECS_60, || {
        s.metric("sluice_batchesAcknowledged", "p") == Some(1.0)
    });
    let events = sluice_tests::json_lines(&s.path("out/events.jsonl"));
    assert_eq!(
        events,
        vec![
            serde_json::json!({"n": 0}),
            serde_json::json!({"n": 2}),
            serde_json::json!({"n": 5}),
        ],
        "every event the processor did not fail on went on"
    );
    let dead = sluice_tests::json_lines(&s.path("dlq.jsonl"));
    let reasons: Vec<&str> = dead.iter().map(|d| d["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    for r in &reasons {
        assert!(
            r.starts_with("processor `hostile_processor` trapped: "),
            "{r}"
        );
    }
    assert!(reasons[0].contains("panic"), "{}", reasons[0]);
    // The block's `timeout` is the processor's deadline (the default is 1s).
    assert!(
        reasons[1].contains("exceeded the deadline of 300ms per call"),
        "{}",
        reasons[1]
    );
    assert!(
        reasons[2].contains("claim 1 events but it returned 0"),
        "{}",
        reasons[2]
    );
    assert_eq!(s.metric("sluice_eventsFailedInProcessors", "p"), Some(3.0));
    // The processor has its own series, apart from the deserializer's.
    let (_, metrics) = s.get_metrics_server("/metrics");
    let of = |name: &str, plugin: &str, kind: &str| {
        let labels = [("pipeline", "p"), ("plugin", plugin), ("kind", kind)];
        sluice_tests::prometheus_value(&metrics, name, &labels)
            .unwrap_or_else(|| panic!("no {name}{labels:?}:\n{metrics}"))
    };
    let processor = |name: &str| of(name, "hostile_processor", "processor");
    assert!(processor("sluice_plugin_calls") >= 4.0, "{metrics}");
    assert!(processor("sluice_plugin_traps") >= 3.0, "{metrics}");
    assert!(processor("sluice_plugin_deadline_hits") >= 1.0, "{metrics}");
    assert!(processor("sluice_plugin_instances_recycled") >= 0.0);
    assert!(
        processor("sluice_worker_stalls") >= 1.0,
        "the spin held the batch past 300ms: {metrics}"
    );
    assert_eq!(of("sluice_plugin_traps", "json", "deserializer"), 0.0);
    assert_eq!(of("sluice_worker_stalls", "json", "deserializer"), 0.0);
}
