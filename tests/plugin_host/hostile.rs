//! Hostile plugins: traps, loops, memory bombs and guests waiting in host calls are contained
//! at their deadline while another pipeline keeps flowing, and `/health` shows the stall.

#[allow(unused_imports, reason = "the parent's imports, taken whole")]
use super::*;

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
    let traps = prometheus_value(
        &metrics,
        "sluice_plugin_traps",
        &[("pipeline", "hostile"), ("kind", "deserializer")],
    )
    .unwrap();
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
        // One deadline (1 s) for the batch, one for the record alone, with room for a loaded
        // machine; still below the 30 s `sleep 30` would hold the pipeline without them (a
        // minute before the fix), and `poll` and `stdin`, for ever.
        assert!(
            took < Duration::from_secs(20),
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

    // While the worker was past its deadline, /health said so and named the pipeline and the
    // stage.
    assert!(
        stalled_bodies
            .iter()
            .any(|b| b.contains("\"pipeline\":\"waiting\"")
                && b.contains("\"plugin\":\"hostile\"")
                && b.contains("\"kind\":\"deserializer\"")),
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
