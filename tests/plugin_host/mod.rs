//! The real binary with real plugin components: hot reload of the plugin folder, and hostile
//! plugins contained while another pipeline keeps flowing.

mod hostile;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_tests::{Sluice, free_port, json_lines, plugin_dir, prometheus_value};

/// Waits until `check` holds, or fails with the log.
fn wait_for(s: &Sluice, what: &str, check: impl FnMut() -> bool) {
    s.wait_for(what, Duration::from_secs(60), check);
}

/// Replaces `dest` the way a deploy should: write beside it, then rename over it.
fn install(src: &Path, dest: &Path) {
    let tmp = dest.with_extension("tmp");
    std::fs::copy(src, &tmp).unwrap();
    std::fs::rename(&tmp, dest).unwrap();
}

#[test]
fn replacing_a_plugin_while_running_switches_between_batches_and_loses_nothing() {
    let plugins = tempfile::tempdir().unwrap();
    let parse = plugins.path().join("parse.wasm");
    install(&plugin_dir().join("json.wasm"), &parse);
    let yaml = r#"
reload:
  workers: 2
  delay: 10ms
  source:
    http:
      port: {port}
      deserializer:
        name: parse
  buffer:
    bounded_blocking:
      buffer_size: 1000
      batch_size: 8
  sink:
    - file:
        path: {dir}/events.jsonl
  dlq_path: {dir}/dlq.jsonl
"#;
    let plugin_arg = plugins.path().to_str().unwrap();
    let s = Arc::new(Sluice::start_with(
        yaml,
        &["--plugins", plugin_arg, "--reload-interval", "100ms"],
    ));

    // A client posting `{"n": i}` one after another the whole time.
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let poster = {
        let (s, stop, sent) = (s.clone(), stop.clone(), sent.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let body = format!("{{\"n\": {n}}}");
                assert_eq!(s.post("/log/ingest", body.as_bytes()), 200);
                n += 1;
                sent.store(n, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
            n
        })
    };
    wait_for(&s, "100 posts", || sent.load(Ordering::Relaxed) >= 100);

    // v2: the hostile plugin, which echoes what it cannot interpret: `{"echo": "<payload>"}`.
    install(&plugin_dir().join("hostile.wasm"), &parse);
    wait_for(&s, "both workers on the new version", || {
        s.log()
            .matches("switched to the new plugin version")
            .count()
            >= 2
    });
    let switched_at = sent.load(Ordering::Relaxed);

    // v3: a broken file (not written atomically, on purpose): reported, v2 keeps running.
    std::fs::write(&parse, b"\0asm\x0d\0\x01\0 this is not a component").unwrap();
    wait_for(&s, "the bad file reported", || {
        s.log()
            .contains("cannot reload plugin; the previous version keeps running")
    });
    let broken_at = sent.load(Ordering::Relaxed);
    wait_for(&s, "100 more posts", || {
        sent.load(Ordering::Relaxed) >= broken_at + 100
    });
    stop.store(true, Ordering::Relaxed);
    let total = poster.join().unwrap();

    let (_, metrics) = s.get_metrics_server("/metrics");
    assert_eq!(
        prometheus_value(&metrics, "sluice_plugin_reloads", &[("plugin", "parse")]),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        prometheus_value(
            &metrics,
            "sluice_plugin_reload_failures",
            &[("plugin", "parse")]
        ),
        Some(1.0)
    );
    let mut s = Arc::into_inner(s).expect("the poster is done");
    assert_eq!(s.terminate(), 0, "{}", s.log());
    let log = s.log();
    assert!(
        log.contains("parse.wasm") && log.contains("not a valid WebAssembly component"),
        "{log}"
    );

    // Every posted event exactly once, in one form or the other.
    let mut seen: BTreeMap<u64, &str> = BTreeMap::new();
    let events = json_lines(&s.path("events.jsonl"));
    for event in &events {
        let (n, form) = match (&event["n"], &event["echo"]) {
            (Value::Number(n), _) => (n.as_u64().unwrap(), "v1"),
            (_, Value::String(echo)) => {
                let inner: Value = serde_json::from_str(echo).unwrap();
                (inner["n"].as_u64().unwrap(), "v2")
            }
            _ => panic!("unexpected event {event}"),
        };
        assert!(seen.insert(n, form).is_none(), "event {n} delivered twice");
    }
    assert_eq!(
        seen.len() as u64,
        total,
        "lost events: {} of {total} delivered",
        seen.len()
    );
    assert!(json_lines(&s.path("dlq.jsonl")).is_empty());
    // v1 before the swap, v2 after it (in between, one batch per worker may be either), and
    // the broken file changed nothing.
    assert_eq!(seen[&0], "v1");
    assert!(
        seen.range(switched_at..).all(|(_, form)| *form == "v2"),
        "{seen:?}"
    );
    assert_eq!(seen[&(total - 1)], "v2");
}

#[test]
fn a_new_version_that_refuses_the_options_is_not_switched_to() {
    use sluice_plugin::testing::hostile_component;
    let plugins = tempfile::tempdir().unwrap();
    let parse = plugins.path().join("parse.wasm");
    // v1 exports `configure` and takes the option; v2 has no `configure`, so it cannot take it.
    std::fs::write(&parse, hostile_component(true)).unwrap();
    let yaml = r#"
opts:
  delay: 10ms
  source:
    http:
      port: {port}
      deserializer:
        name: parse
        options: {good: 1}
  sink:
    - file:
        path: {dir}/events.jsonl
  dlq_path: {dir}/dlq.jsonl
"#;
    let plugin_arg = plugins.path().to_str().unwrap();
    let mut s = Sluice::start_with(
        yaml,
        &["--plugins", plugin_arg, "--reload-interval", "100ms"],
    );
    assert_eq!(s.post("/log/ingest", b"a"), 200);
    let tmp = plugins.path().join("parse.tmp");
    std::fs::write(&tmp, hostile_component(false)).unwrap();
    std::fs::rename(&tmp, &parse).unwrap();
    wait_for(&s, "the new version loaded", || {
        s.log().contains("plugin changed on disk")
    });
    // The switch happens at the next batch: it fails there and the old instance carries on.
    let mut n = 1;
    wait_for(&s, "the worker to refuse the switch", || {
        assert_eq!(s.post("/log/ingest", b"b"), 200);
        n += 1;
        s.log()
            .contains("the new plugin version cannot start here; keeping the running one")
    });
    assert!(s.log().contains("takes no options"), "{}", s.log());
    assert_eq!(s.post("/log/ingest", b"c"), 200);
    n += 1;
    wait_for(&s, "every record through", || {
        json_lines(&s.path("events.jsonl")).len() == n
    });
    assert!(json_lines(&s.path("dlq.jsonl")).is_empty());
    let (_, metrics) = s.get_metrics_server("/metrics");
    assert_eq!(
        prometheus_value(
            &metrics,
            "sluice_plugin_versions_switched",
            &[("pipeline", "opts")]
        ),
        Some(0.0),
        "{metrics}"
    );
    assert_eq!(s.terminate(), 0);
}

#[test]
fn the_python_and_javascript_example_pipelines_run_in_sluice() {
    // The example file as shipped, with free ports and this test's folder for its outputs.
    let example =
        sluice_tests::root().join("examples/pipelines/03-python-and-javascript-plugins.yaml");
    let csv_port = free_port();
    let yaml = std::fs::read_to_string(example)
        .unwrap()
        .replace("port: 2031", &format!("port: {csv_port}"))
        .replace("port: 2032", "port: {port}")
        .replace("path: data/", "path: {dir}/data/");
    // Only the two plugins it names, so the start compiles 30 MB of components, not 60.
    let plugins = tempfile::tempdir().unwrap();
    for name in ["csv", "logfmt_python"] {
        let file = format!("{name}.wasm");
        install(&plugin_dir().join(&file), &plugins.path().join(&file));
    }
    let s = Sluice::start_with(&yaml, &["--plugins", plugins.path().to_str().unwrap()]);
    // `start_with` waits for the logfmt pipeline's port; the csv pipeline may start after it.
    s.wait_for("every pipeline to listen", Duration::from_secs(60), || {
        s.log().contains("all pipelines ready")
    });
    let agent: ureq::Agent = ureq::Agent::config_builder().build().into();
    let status = agent
        .post(&format!("http://127.0.0.1:{csv_port}/csv"))
        .send(&b"ts;level;msg\n1;info;started\n2;warn;\"a;b\""[..])
        .unwrap()
        .status();
    assert_eq!(status, 200);
    assert_eq!(
        s.post("/logfmt", br#"level=warn msg="disk almost full" free=3%"#),
        200
    );
    assert_eq!(s.post("/logfmt", br#"msg="unterminated"#), 200);
    wait_for(&s, "events from both plugins", || {
        json_lines(&s.path("data/out/csv-pipeline.jsonl")).len() == 2
            && json_lines(&s.path("data/out/logfmt-pipeline.jsonl")).len() == 1
            && json_lines(&s.path("data/dlq/logfmt-pipeline.jsonl")).len() == 1
    });
    assert_eq!(
        json_lines(&s.path("data/out/csv-pipeline.jsonl")),
        [
            serde_json::json!({"ts": "1", "level": "info", "msg": "started"}),
            serde_json::json!({"ts": "2", "level": "warn", "msg": "a;b"}),
        ]
    );
    assert_eq!(
        json_lines(&s.path("data/out/logfmt-pipeline.jsonl")),
        [serde_json::json!({"level": "warn", "msg": "disk almost full", "free": "3%"})]
    );
    let dlq = json_lines(&s.path("data/dlq/logfmt-pipeline.jsonl"));
    assert_eq!(
        dlq[0]["reason"],
        "line 1: unterminated quoted value for key `msg`"
    );
}
