//! The real binary with real plugin components: hot reload of the plugin folder, and hostile
//! plugins contained while another pipeline keeps flowing.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_tests::{Sluice, free_port, json_lines, plugin_dir, prometheus_value};

/// Waits until `check` holds, or fails with the log.
fn wait_for(s: &Sluice, what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}:\n{}",
            s.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
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
fn hostile_plugins_are_contained_and_another_pipeline_keeps_flowing() {
    let port2 = free_port();
    let yaml = format!(
        r#"
hostile:
  delay: 10ms
  source:
    http:
      port: {{port}}
      deserializer:
        name: hostile
        timeout: 200ms
        max_memory: 32mb
  buffer:
    bounded_blocking:
      batch_size: 16
  sink:
    - file:
        path: {{dir}}/hostile.jsonl
  dlq_path: {{dir}}/hostile-dlq.jsonl
healthy:
  delay: 10ms
  source:
    http:
      port: {port2}
  sink:
    - file:
        path: {{dir}}/healthy.jsonl
  dlq_path: {{dir}}/healthy-dlq.jsonl
"#
    );
    let s = Sluice::start_with_env(&yaml, &[("SLUICE_SECRET", "do-not-leak")]);
    let sneaky_port = free_port();
    let listener = std::net::TcpListener::bind(("127.0.0.1", sneaky_port)).unwrap();
    listener.set_nonblocking(true).unwrap();
    let hostile: Vec<String> = vec![
        "loop".into(),
        "alloc".into(),
        "recurse".into(),
        "panic".into(),
        format!("read-file {}", s.path("pipelines.yaml").display()),
        "read-file /etc/hostname".into(),
        format!("connect 127.0.0.1:{sneaky_port}"),
        "env".into(),
    ];
    // Each hostile body, with a well-behaved one after it, while the other pipeline flows.
    let healthy = |i: usize| {
        let url = format!("http://127.0.0.1:{port2}/log/ingest");
        let agent: ureq::Agent = ureq::Agent::config_builder().build().into();
        let status = agent
            .post(&url)
            .send(format!("{{\"i\": {i}}}").as_bytes())
            .unwrap()
            .status();
        assert_eq!(status, 200);
    };
    for (i, body) in hostile.iter().enumerate() {
        assert_eq!(s.post("/log/ingest", body.as_bytes()), 200, "{body}");
        assert_eq!(s.post("/log/ingest", format!("fine {i}").as_bytes()), 200);
        healthy(i);
    }
    wait_for(&s, "every hostile record dead-lettered", || {
        json_lines(&s.path("hostile-dlq.jsonl")).len() == hostile.len()
            && json_lines(&s.path("hostile.jsonl")).len() == hostile.len()
            && json_lines(&s.path("healthy.jsonl")).len() == hostile.len()
    });
    assert!(
        listener.accept().is_err(),
        "the plugin opened a connection to the test's listener"
    );

    // The reason for each, in the order they were sent.
    let dlq = json_lines(&s.path("hostile-dlq.jsonl"));
    let reasons: BTreeMap<String, String> = dlq
        .iter()
        .map(|d| {
            let payload = base64_decode(d["payload"].as_str().unwrap());
            (payload, d["reason"].as_str().unwrap().to_owned())
        })
        .collect();
    eprintln!("dead-letter reasons: {reasons:#?}");
    let reason = |body: &str| {
        reasons
            .get(body)
            .unwrap_or_else(|| panic!("{body} not dead-lettered: {reasons:?}"))
    };
    assert!(
        reason("loop").contains("exceeded the deadline of 200ms"),
        "{reasons:?}"
    );
    assert!(
        reason("alloc").contains("exceeded the memory limit of 32 MiB"),
        "{reasons:?}"
    );
    assert!(reason("recurse").contains("stack overflow"), "{reasons:?}");
    assert!(reason("panic").contains("unreachable"), "{reasons:?}");
    for body in &hostile[4..6] {
        assert!(
            reason(body).starts_with(&format!("{body}: ")),
            "{reasons:?}"
        );
    }
    assert!(reason(&hostile[6]).starts_with(&hostile[6]), "{reasons:?}");
    assert_eq!(reason("env"), "env: no variables visible");

    // Nothing got out, every well-behaved record made it, once.
    let events = json_lines(&s.path("hostile.jsonl"));
    assert!(
        events.iter().all(|e| e.get("leaked").is_none()),
        "{events:?}"
    );
    let mut echoed: Vec<&str> = events.iter().map(|e| e["echo"].as_str().unwrap()).collect();
    echoed.sort();
    let mut want: Vec<String> = (0..hostile.len()).map(|i| format!("fine {i}")).collect();
    want.sort();
    assert_eq!(echoed, want);
    assert!(json_lines(&s.path("healthy-dlq.jsonl")).is_empty());

    // Counted: 8 failed to parse, 4 of them traps (loop, alloc, recurse, panic).
    assert_eq!(
        s.metric("bounded_blocking_numberOfRecordsFailedToParse", "hostile"),
        Some(8.0)
    );
    let (_, metrics) = s.get_metrics_server("/metrics");
    let traps =
        prometheus_value(&metrics, "sluice_plugin_traps", &[("pipeline", "hostile")]).unwrap();
    assert!(traps >= 4.0, "{metrics}");
    let deadline = prometheus_value(
        &metrics,
        "sluice_plugin_deadline_hits",
        &[("pipeline", "hostile")],
    )
    .unwrap();
    assert!(deadline >= 1.0, "{metrics}");
    assert_eq!(
        s.metric("sluice_eventsWritten", "healthy"),
        Some(hostile.len() as f64)
    );
}

/// A plugin that waits inside a WASI call (sleep, `poll`, stdin) or exits: each record ends at
/// the per-call deadline and is dead-lettered with the reason, the next good record follows
/// within a few deadlines, and while a worker is stuck past its deadline `/health` says so,
/// naming the pipeline.
#[test]
fn a_plugin_waiting_in_a_host_call_is_stopped_at_the_deadline_and_health_shows_the_stall() {
    let yaml = r#"
waiting:
  delay: 10ms
  source:
    http:
      port: {port}
      deserializer:
        name: hostile
        timeout: 1s
  buffer:
    bounded_blocking:
      batch_size: 16
  sink:
    - file:
        path: {dir}/out.jsonl
  dlq_path: {dir}/dlq.jsonl
"#;
    let s = Sluice::start(yaml);
    assert_eq!(s.get_metrics_server("/health").0, 200);
    // Watch /health from the side the whole time, as a load balancer would.
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (stop, port) = (stop.clone(), s.metrics_port);
        std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into();
            let mut stalled_bodies = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                if let Ok(mut r) = agent.get(&format!("http://127.0.0.1:{port}/health")).call()
                    && r.status() == 503
                {
                    stalled_bodies.push(r.body_mut().read_to_string().unwrap_or_default());
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            stalled_bodies
        })
    };

    let waits = ["sleep 30", "poll", "stdin", "exit 3"];
    let mut stalls = Vec::new();
    for (i, body) in waits.iter().enumerate() {
        let started = Instant::now();
        assert_eq!(s.post("/log/ingest", body.as_bytes()), 200, "{body}");
        assert_eq!(s.post("/log/ingest", format!("fine {i}").as_bytes()), 200);
        wait_for(&s, &format!("the good record after `{body}`"), || {
            json_lines(&s.path("out.jsonl"))
                .iter()
                .any(|e| e["echo"] == format!("fine {i}"))
        });
        let took = started.elapsed();
        stalls.push((body, took));
        // One deadline for the batch, one for the record alone, with room for a loaded machine
        // (before the fix, `sleep 30` held the pipeline for a minute).
        assert!(
            took < Duration::from_secs(10),
            "`{body}` held the pipeline for {took:?}:\n{}",
            s.log()
        );
    }
    eprintln!("pipeline stalled by each waiting record: {stalls:?}");
    wait_for(&s, "every waiting record dead-lettered", || {
        json_lines(&s.path("dlq.jsonl")).len() == waits.len()
    });
    stop.store(true, Ordering::SeqCst);
    let stalled_bodies = watcher.join().unwrap();

    let reasons: BTreeMap<String, String> = json_lines(&s.path("dlq.jsonl"))
        .iter()
        .map(|d| {
            let payload = base64_decode(d["payload"].as_str().unwrap());
            (payload, d["reason"].as_str().unwrap().to_owned())
        })
        .collect();
    for body in &waits[..3] {
        assert!(
            reasons[*body].contains("exceeded the deadline of 1s per call"),
            "{body}: {reasons:?}"
        );
    }
    assert!(
        reasons["exit 3"].contains("plugin called exit(3)"),
        "{reasons:?}"
    );
    let events = json_lines(&s.path("out.jsonl"));
    assert!(
        events.iter().all(|e| e.get("leaked").is_none()),
        "a waiting record produced events: {events:?}"
    );
    assert_eq!(events.len(), waits.len(), "{events:?}");

    // While the worker was past its deadline, /health said so and named the pipeline.
    assert!(
        stalled_bodies
            .iter()
            .any(|b| b.contains("\"pipeline\":\"waiting\"") && b.contains("\"plugin\":\"hostile\"")),
        "/health never reported the stall: {stalled_bodies:?}"
    );
    // And it is ready again now, with the stalls counted.
    assert_eq!(s.get_metrics_server("/health").0, 200);
    let (_, metrics) = s.get_metrics_server("/metrics");
    let stalls = prometheus_value(&metrics, "sluice_worker_stalls", &[("pipeline", "waiting")])
        .unwrap_or(0.0);
    assert!(stalls >= 3.0, "{metrics}");
    // The gauge of workers stalled right now (sampled every second) goes back to 0.
    wait_for(&s, "sluice_workers_stalled to read 0", || {
        let (_, metrics) = s.get_metrics_server("/metrics");
        prometheus_value(
            &metrics,
            "sluice_workers_stalled",
            &[("pipeline", "waiting")],
        ) == Some(0.0)
    });
}

fn base64_decode(text: &str) -> String {
    use base64::Engine as _;
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap(),
    )
    .unwrap()
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
