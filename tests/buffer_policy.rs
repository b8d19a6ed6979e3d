//! Buffer policies (contract 0.2's `buffer-plugin` world) as real components: through the
//! tiered buffer over memory tiers (`dedup`, `passthrough_buffer` from plugins/), and through
//! the real binary (`buffer: { dedup: { tiers: [...] } }`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_buffer::memory::MemoryBuffer;
use sluice_buffer::tiered::testing::{self, Replay, Report, Rng};
use sluice_buffer::tiered::{State, SystemClock, TieredBuffer};
use sluice_buffer::{Buffer, Record, WriteError};
use sluice_plugin::{BufferPolicy, Limits, PluginHost};
use sluice_tests::{plugin_cache, plugin_dir};

type Dropped = Arc<Mutex<Vec<(Record, String)>>>;

fn record(payload: &str, idempotency_key: Option<&str>) -> Record {
    Record {
        payload: payload.as_bytes().to_vec(),
        key: None,
        received_at_ms: 0,
        origin: "http:/log/ingest".into(),
        content_type: Some("application/json".into()),
        headers: idempotency_key
            .map(|k| vec![("idempotency-key".to_owned(), k.to_owned())])
            .unwrap_or_default(),
        ..Default::default()
    }
}

/// Loads and configures a policy. Blocking (it runs the component): call it from a blocking
/// thread in async tests ([`start`]).
fn policy(name: &str, options: &[(&str, &str)]) -> Result<BufferPolicy, String> {
    let host = PluginHost::new(Some(plugin_cache())).unwrap();
    let plugin = host
        .load_file(&plugin_dir().join(format!("{name}.wasm")))
        .unwrap();
    assert_eq!(plugin.world(), "sluice:plugin/buffer-plugin@0.2.0");
    let options = options
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    BufferPolicy::new(plugin, options, Limits::default()).map_err(|e| e.to_string())
}

/// [`policy`] from async code.
async fn start(
    name: &'static str,
    options: &'static [(&'static str, &'static str)],
) -> BufferPolicy {
    tokio::task::spawn_blocking(move || policy(name, options).unwrap())
        .await
        .unwrap()
}

/// A tiered buffer over one memory tier of `capacity` records, run by `policy`.
fn tiered(policy: BufferPolicy, capacity: usize) -> (TieredBuffer, MemoryBuffer, Dropped) {
    let memory = MemoryBuffer::new("p", capacity, 10, Duration::from_millis(1));
    let dropped: Dropped = Arc::default();
    let sink = dropped.clone();
    let buffer = TieredBuffer::new(
        "p",
        vec![Arc::new(memory.clone()) as Arc<dyn Buffer>],
        Box::new(policy),
        Arc::new(State::new(10_000)),
        Arc::new(SystemClock),
        Arc::new(move |d| {
            sink.lock().unwrap().extend(d);
            Box::pin(async {})
        }),
    );
    (buffer, memory, dropped)
}

const WAIT: Duration = Duration::from_millis(50);

#[tokio::test(flavor = "multi_thread")]
async fn dedup_keeps_one_of_three_identical_requests_and_dead_letters_the_rest() {
    let (buffer, memory, dropped) = tiered(start("dedup", &[]).await, 100);
    let writer = buffer.writer();
    for _ in 0..3 {
        writer
            .write(vec![record(r#"{"order":42}"#, None)], WAIT)
            .await
            .unwrap();
    }
    writer
        .write(vec![record(r#"{"order":43}"#, None)], WAIT)
        .await
        .unwrap();
    assert_eq!(memory.used(), 2, "one of the three, and the other order");
    let dropped = dropped.lock().unwrap();
    assert_eq!(dropped.len(), 2);
    assert!(
        dropped[0]
            .1
            .starts_with("duplicate: the same idempotency key was written within 600000 ms"),
        "{}",
        dropped[0].1
    );
    assert_eq!(buffer.stats().records_dropped.get(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn dedup_on_a_header_keys_on_the_header_not_the_bytes() {
    let policy = start("dedup", &[("header", "Idempotency-Key"), ("ttl", "1m")]).await;
    let (buffer, memory, dropped) = tiered(policy, 100);
    assert_eq!(buffer.writer().wanted_headers(), ["idempotency-key"]);
    let writer = buffer.writer();
    // A retry may carry a new timestamp in its body: the header says it is the same request.
    writer
        .write(vec![record(r#"{"t":1}"#, Some("req-1"))], WAIT)
        .await
        .unwrap();
    writer
        .write(vec![record(r#"{"t":2}"#, Some("req-1"))], WAIT)
        .await
        .unwrap();
    // Same bytes, another request.
    writer
        .write(vec![record(r#"{"t":1}"#, Some("req-2"))], WAIT)
        .await
        .unwrap();
    assert_eq!(memory.used(), 2);
    assert_eq!(dropped.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn dedup_keeps_the_retry_of_a_write_the_buffer_could_not_hold() {
    // One record of room: the second write times out (503 to the client), and its retry,
    // once there is room, is kept rather than dropped as a duplicate.
    let (buffer, memory, dropped) = tiered(start("dedup", &[]).await, 1);
    let writer = buffer.writer();
    writer
        .write(vec![record("first", None)], WAIT)
        .await
        .unwrap();
    let err = writer
        .write(vec![record("second", None)], WAIT)
        .await
        .unwrap_err();
    assert_eq!(err, WriteError::Full(WAIT));
    let mut reader = buffer.reader();
    let batch = tokio::time::timeout(Duration::from_secs(5), reader.read())
        .await
        .unwrap()
        .unwrap();
    batch.ack.acknowledge();
    writer
        .write(vec![record("second", None)], WAIT)
        .await
        .unwrap();
    assert_eq!(memory.used(), 1);
    assert!(
        dropped.lock().unwrap().is_empty(),
        "the retry is no duplicate"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn passthrough_buffer_places_every_record_in_the_first_tier() {
    let (buffer, memory, dropped) = tiered(start("passthrough_buffer", &[]).await, 100);
    let records = (0..5)
        .map(|i| record(&format!("{{\"i\":{i}}}"), None))
        .collect();
    buffer.writer().write(records, WAIT).await.unwrap();
    assert_eq!(memory.used(), 5);
    assert!(dropped.lock().unwrap().is_empty());
    assert!(buffer.writer().wanted_headers().is_empty());
}

#[test]
fn a_buffer_policy_refuses_bad_options_naming_them() {
    assert_eq!(
        policy("dedup", &[("ttl", "soon")]).unwrap_err(),
        "plugin `dedup` refused its options: option `ttl` must be a duration such as `10m` or `30s`, got `soon`"
    );
    assert_eq!(
        policy("passthrough_buffer", &[("x", "1")]).unwrap_err(),
        "plugin `passthrough_buffer` refused its options: unknown option `x`: passthrough_buffer takes none"
    );
}

/// The seeded replay of `sluice_buffer::tiered::testing` (random writes, reads, out-of-order
/// acknowledgements, ticks, tier outages, clock jumps) with a real component as the policy:
/// nothing accepted is lost, whatever the policy answers or however it fails.
async fn replay_component(
    name: &'static str,
    options: &'static [(&'static str, &'static str)],
    tiers: usize,
    headers: fn(&mut Rng, u64) -> Vec<(String, String)>,
) -> Vec<Report> {
    let mut reports = Vec::new();
    for seed in [3_u64, 17, 2024] {
        let policy = tokio::task::spawn_blocking(move || {
            let limits = Limits {
                max_memory: 16 << 20,
                timeout: Duration::from_millis(100),
                ..Limits::default()
            };
            let host = PluginHost::new(Some(plugin_cache())).unwrap();
            let plugin = host
                .load_file(&plugin_dir().join(format!("{name}.wasm")))
                .unwrap();
            let options = options
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            BufferPolicy::new(plugin, options, limits).unwrap()
        })
        .await
        .unwrap();
        let replay = Replay {
            seed,
            steps: 300,
            tiers,
            capacity: 40,
            headers,
            repeat_percent: 20,
            wait: WAIT,
        };
        reports.push(testing::replay(&replay, Box::new(policy)).await);
    }
    reports
}

#[tokio::test(flavor = "multi_thread")]
async fn seeded_replays_through_real_policy_components_lose_nothing() {
    // Faults on request: traps, deadlines, the memory cap, a tier that does not exist, too
    // many placements (Rust components unless said).
    let hostile = replay_component("hostile_buffer", &[], 1, |rng, _| {
        let fault = ["trap", "loop", "bomb", "nowhere", "overclaim"];
        match rng.below(40) {
            n if (n as usize) < fault.len() => vec![("x-hostile".into(), fault[n as usize].into())],
            _ => Vec::new(),
        }
    })
    .await;
    assert!(
        hostile.iter().all(|r| r.faults > 0 && r.accepted > 0),
        "{hostile:?}"
    );
    // Repeated payloads are dropped (and dead-lettered) within the TTL.
    let dedup = replay_component("dedup", &[("ttl", "1s")], 1, |_, _| Vec::new()).await;
    assert!(dedup.iter().all(|r| r.dropped > 0), "{dedup:?}");
    // Refusals with the clock moving under them.
    let quota = replay_component(
        "tenant_quota",
        &[("rate", "2"), ("burst", "4")],
        2,
        |_, id| vec![("x-tenant".into(), format!("t{}", id % 3))],
    )
    .await;
    assert!(quota.iter().all(|r| r.refused > 0), "{quota:?}");
    // JavaScript: sheds low priorities while the tiers lag, two lanes.
    let shed = replay_component("priority_shed", &[("max_lag", "5")], 2, |rng, _| {
        vec![("x-priority".into(), rng.below(10).to_string())]
    })
    .await;
    assert!(shed.iter().all(|r| r.dropped > 0), "{shed:?}");
    let passthrough = replay_component("passthrough_buffer", &[], 2, |_, _| Vec::new()).await;
    assert!(
        passthrough.iter().all(|r| r.accepted > 0),
        "{passthrough:?}"
    );
}

const SECS_30: Duration = Duration::from_secs(30);

/// `sluice run` with an http source, the buffer policy `name` (its `block` of options, one
/// `key: value` per line) over one memory tier, a file sink and a dead-letter file.
fn start_sluice(name: &str, block: &str) -> sluice_tests::Sluice {
    sluice_tests::Sluice::start(&pipeline(name, block))
}

/// The pipeline [`start_sluice`] runs.
fn pipeline(name: &str, block: &str) -> String {
    let options: String = block.lines().map(|l| format!("      {l}\n")).collect();
    format!(
        r#"
p:
  delay: 20ms
  source:
    http:
      port: {{port}}
  buffer:
    {name}:
{options}      tiers:
        - bounded_blocking:
            buffer_size: 100
            batch_size: 10
  sink:
    - file:
        path: {{dir}}/out/events.jsonl
  dlq_path: {{dir}}/dlq.jsonl
"#
    )
}

#[test]
fn the_same_request_sent_three_times_through_sluice_is_one_event() {
    let s = start_sluice("dedup", "header: Idempotency-Key\nttl: 10m");
    // A client retrying after a timeout sends the same request again, same key.
    for _ in 0..3 {
        let status = s.post_with(
            "/log/ingest",
            &[("Idempotency-Key", "order-42")],
            br#"[{"order":42}]"#,
        );
        assert_eq!(status, 200);
    }
    let status = s.post_with(
        "/log/ingest",
        &[("Idempotency-Key", "order-43")],
        br#"[{"order":43}]"#,
    );
    assert_eq!(status, 200);
    let (out, dlq) = (s.path("out/events.jsonl"), s.path("dlq.jsonl"));
    s.wait_for("two events and two dead letters", SECS_30, || {
        sluice_tests::json_lines(&out).len() == 2 && sluice_tests::json_lines(&dlq).len() == 2
    });
    assert_eq!(
        sluice_tests::json_lines(&out),
        [
            serde_json::json!({"order": 42}),
            serde_json::json!({"order": 43})
        ]
    );
    for dead in sluice_tests::json_lines(&dlq) {
        let reason = dead["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("dropped by the buffer policy: duplicate: the same idempotency key"),
            "{reason}"
        );
        assert_eq!(dead["pipeline"], "p");
    }
    assert_eq!(s.metric("sluice_buffer_recordsDropped", "p"), Some(2.0));
}

#[test]
fn a_tenant_over_its_rate_gets_429_while_the_others_keep_getting_200() {
    let s = start_sluice("tenant_quota", "rate: 0.5\nburst: 2");
    let post = |tenant: &str, n: u32| {
        s.post_full(
            "/log/ingest",
            &[("X-Tenant", tenant)],
            format!(r#"[{{"tenant":"{tenant}","n":{n}}}]"#).as_bytes(),
        )
    };
    // A burst of 2, refilled at one record per 2 s: the third request of `noisy` is refused.
    assert_eq!(post("noisy", 1).0, 200);
    assert_eq!(post("noisy", 2).0, 200);
    let (status, retry_after) = post("noisy", 3);
    assert_eq!(status, 429);
    let seconds: u64 = retry_after.expect("Retry-After").parse().unwrap();
    assert!((1..=2).contains(&seconds), "Retry-After {seconds}");
    // Another tenant is not held back by the noisy one.
    assert_eq!(post("quiet", 1).0, 200);
    assert_eq!(post("quiet", 2).0, 200);
    let out = s.path("out/events.jsonl");
    s.wait_for("four events", SECS_30, || {
        sluice_tests::json_lines(&out).len() == 4
    });
    let mut got: Vec<String> = sluice_tests::json_lines(&out)
        .iter()
        .map(|e| format!("{}{}", e["tenant"].as_str().unwrap(), e["n"]))
        .collect();
    got.sort();
    assert_eq!(got, ["noisy1", "noisy2", "quiet1", "quiet2"]);
    assert_eq!(s.metric("sluice_buffer_writesRefused", "p"), Some(1.0));
}

#[test]
fn a_buffer_policy_follows_new_versions_and_keeps_running_one_that_cannot_start() {
    let plugins = tempfile::tempdir().unwrap();
    let file = plugins.path().join("gate.wasm");
    let replace = |with: &str| {
        let tmp = plugins.path().join("gate.tmp");
        std::fs::copy(plugin_dir().join(with), &tmp).unwrap();
        std::fs::rename(&tmp, &file).unwrap();
    };
    replace("passthrough_buffer.wasm");
    let s = sluice_tests::Sluice::start_with(
        &pipeline("gate", ""),
        &[
            "--plugins",
            plugins.path().to_str().unwrap(),
            "--reload-interval",
            "100ms",
        ],
    );
    let post = |body: &str| assert_eq!(s.post("/log/ingest", body.as_bytes()), 200);
    // Until the log says so, with a new body each time (so none is a duplicate).
    let mut probe = 0;
    let mut wait_for_log = |what: &str| {
        s.wait_for(what, SECS_30, || {
            probe += 1;
            post(&format!(r#"[{{"probe":{probe}}}]"#));
            s.log().contains(what)
        });
    };
    // passthrough_buffer keeps both.
    post(r#"[{"n":1}]"#);
    post(r#"[{"n":1}]"#);
    // dedup, switched to between calls: one of three.
    replace("dedup.wasm");
    wait_for_log("switched to the new buffer policy version");
    for _ in 0..3 {
        post(r#"[{"n":2}]"#);
    }
    // No buffer policy: refused, dedup keeps running (and remembers what it saw).
    replace("json.wasm");
    wait_for_log("the new buffer policy version cannot start here; keeping the running one");
    for _ in 0..3 {
        post(r#"[{"n":2}]"#);
        post(r#"[{"n":3}]"#);
    }
    let out = s.path("out/events.jsonl");
    let count = |n: u64| {
        sluice_tests::json_lines(&out)
            .iter()
            .filter(|e| e["n"] == n)
            .count()
    };
    s.wait_for("the n=3 event", SECS_30, || count(3) == 1);
    assert_eq!((count(1), count(2), count(3)), (2, 1, 1), "{}", s.log());
    let (_, metrics) = s.get_metrics_server("/metrics");
    let reloads =
        sluice_tests::prometheus_value(&metrics, "sluice_plugin_reloads", &[("plugin", "gate")]);
    assert_eq!(
        reloads,
        Some(2.0),
        "dedup and the json deserializer were loaded"
    );
}

#[test]
fn priority_shed_drops_low_priorities_while_the_buffer_lags_and_keeps_the_rest() {
    // The sink fails (a link to /dev/full) until the test replaces it: records pile up unread.
    let dir = tempfile::tempdir().unwrap();
    let sink = dir.path().join("events.jsonl");
    std::os::unix::fs::symlink("/dev/full", &sink).unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::copy(
        plugin_dir().join("priority_shed.wasm"),
        plugins.join("priority_shed.wasm"),
    )
    .unwrap();
    let yaml = format!(
        r#"
p:
  workers: 1
  delay: 20ms
  source:
    http:
      port: {{port}}
  buffer:
    priority_shed:
      max_lag: 3
      min_priority: 5
      origin_priority: http:/log=6
      tiers:
        - bounded_blocking:
            buffer_size: 100
            batch_size: 1
  sink:
    - file:
        path: {sink}
  dlq_path: {{dir}}/dlq.jsonl
"#,
        sink = sink.display()
    );
    let s = sluice_tests::Sluice::start_with(&yaml, &["--plugins", plugins.to_str().unwrap()]);
    let post = |priority: Option<&str>, n: u32| {
        let headers: Vec<(&str, &str)> = priority.map(|p| ("X-Priority", p)).into_iter().collect();
        s.post_with(
            "/log/ingest",
            &headers,
            format!(r#"[{{"n":{n}}}]"#).as_bytes(),
        )
    };
    // High priorities build the lag (kept whatever it is).
    for n in 0..8 {
        assert_eq!(post(Some("9"), n), 200);
    }
    // Now the buffer lags (one record in the stuck worker, one read ahead, six unread): the low
    // ones are shed, the high ones kept (by header, or without one by the origin's rule, 6);
    // every client hears 200.
    assert_eq!(post(Some("1"), 100), 200);
    assert_eq!(post(Some("0"), 101), 200);
    assert_eq!(post(Some("7"), 200), 200);
    assert_eq!(post(None, 201), 200);
    // The sink recovers (it opens the path afresh): everything kept drains.
    std::fs::remove_file(&sink).unwrap();
    let mut want: Vec<u64> = (0..8).chain([200, 201]).collect();
    s.wait_for("every kept event", SECS_30, || {
        sluice_tests::json_lines(&sink).len() >= want.len()
    });
    let mut got: Vec<u64> = sluice_tests::json_lines(&sink)
        .iter()
        .map(|e| e["n"].as_u64().unwrap())
        .collect();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want, "{}", s.log());
    // Drained: a low priority is kept again.
    assert_eq!(post(Some("1"), 300), 200);
    s.wait_for(
        "the low-priority event once the lag is gone",
        SECS_30,
        || {
            sluice_tests::json_lines(&sink)
                .iter()
                .any(|e| e["n"] == 300)
        },
    );
    let dlq = sluice_tests::json_lines(&s.path("dlq.jsonl"));
    assert_eq!(dlq.len(), 2, "{dlq:?}");
    for d in &dlq {
        let reason = d["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("dropped by the buffer policy: shed: priority ")
                && reason.contains("below min_priority 5 while lag"),
            "{reason}"
        );
    }
    assert_eq!(s.metric("sluice_buffer_recordsDropped", "p"), Some(2.0));
}

/// POSTs `[{"n": N}]` with `X-Hostile: HOSTILE` (what `hostile_buffer` should do with it).
fn post_hostile(s: &sluice_tests::Sluice, hostile: &str, n: u32) -> u16 {
    s.post_with(
        "/log/ingest",
        &[("X-Hostile", hostile)],
        format!(r#"[{{"n":{n}}}]"#).as_bytes(),
    )
}

#[test]
fn a_hostile_buffer_policy_gets_503_for_its_writes_and_the_pipeline_goes_on() {
    let s = start_sluice("hostile_buffer", "timeout: 300ms\nmax_memory: 16mb");
    let post = |hostile: &str, n: u32| post_hostile(&s, hostile, n);
    assert_eq!(post("no", 1), 200);
    // Each fails closed: 503, nothing accepted, the instance replaced.
    for (i, hostile) in ["trap", "loop", "bomb", "nowhere", "overclaim"]
        .iter()
        .enumerate()
    {
        assert_eq!(post(hostile, 10 + i as u32), 503, "{hostile}");
    }
    assert_eq!(post("no", 2), 200);
    let out = s.path("out/events.jsonl");
    s.wait_for("the two accepted events", SECS_30, || {
        sluice_tests::json_lines(&out).len() == 2
    });
    assert_eq!(
        sluice_tests::json_lines(&out),
        [serde_json::json!({"n": 1}), serde_json::json!({"n": 2})],
        "only what was accepted, all of it"
    );
    assert_eq!(s.metric("sluice_buffer_policyFaults", "p"), Some(5.0));
    // The policy's own plugin series: the trap, the deadline and the memory cap.
    let (_, metrics) = s.get_metrics_server("/metrics");
    let policy = |name: &str| {
        let labels = [
            ("pipeline", "p"),
            ("plugin", "hostile_buffer"),
            ("kind", "buffer_policy"),
        ];
        sluice_tests::prometheus_value(&metrics, name, &labels)
            .unwrap_or_else(|| panic!("no {name}{labels:?}:\n{metrics}"))
    };
    assert!(policy("sluice_plugin_calls") >= 7.0, "{metrics}");
    assert!(policy("sluice_plugin_traps") >= 3.0, "{metrics}");
    assert!(policy("sluice_plugin_deadline_hits") >= 1.0, "{metrics}");
    let log = s.log();
    for why in [
        "wasm `unreachable` executed",
        "exceeded the deadline of 300ms per call",
        "exceeded the memory limit of 16 MiB",
        "the policy placed a record in tier 9; the buffer has 1 (0 to 0)",
        "the policy placed 2 records of a write of 1",
    ] {
        assert!(log.contains(why), "the log names `{why}`:\n{log}");
    }
}

#[test]
fn a_policy_that_hoards_state_gets_503_past_max_state_size_and_memory_stays_bounded() {
    let s = start_sluice("hostile_buffer", "max_memory: 64mb\nmax_state_size: 40mb");
    let post = |hostile: &str, n: u32| post_hostile(&s, hostile, n);
    assert_eq!(post("no", 1), 200);
    let baseline = s.rss_mib();
    // Each asks to keep 8 x 16 MiB: past the 40 MiB cap at its third value.
    let hoard = |from: u32| {
        for n in from..from + 16 {
            assert_eq!(post("hoard", n), 503, "hoarding write {n}");
        }
        s.rss_mib()
    };
    let (after_16, after_32) = (hoard(100), hoard(200));
    eprintln!(
        "sluice RSS: {baseline} MiB, after 16 hoarding writes {after_16}, after 32 {after_32}"
    );
    // Before the cap, every write kept 128 MiB: 2 GiB after 16. Now nothing of a refused
    // write is kept, and what one call copied out of the guest goes back to the OS with it.
    assert!(
        after_32.saturating_sub(baseline) < 40,
        "sluice grew by {} MiB past its {baseline} MiB: more than the 40 MiB cap",
        after_32 - baseline
    );
    assert_eq!(post("no", 2), 200, "the pipeline goes on");
    let out = s.path("out/events.jsonl");
    s.wait_for("the two accepted events", SECS_30, || {
        sluice_tests::json_lines(&out).len() == 2
    });
    assert_eq!(
        sluice_tests::json_lines(&out),
        [serde_json::json!({"n": 1}), serde_json::json!({"n": 2})]
    );
    assert_eq!(s.metric("sluice_buffer_policyFaults", "p"), Some(32.0));
    s.wait_for("the state gauge", SECS_30, || {
        s.metric("sluice_buffer_policyStateBytes", "p").is_some()
    });
    assert_eq!(
        s.metric("sluice_buffer_policyStateBytes", "p"),
        Some(0.0),
        "nothing of a refused write is kept"
    );
    let log = s.log();
    assert!(
        log.contains("policy=hostile_buffer")
            && log.contains("would keep more than its `max_state_size` of 41943040 bytes"),
        "the log names the policy and the limit:\n{log}"
    );
}

#[test]
fn a_move_larger_than_its_target_holds_nothing_back_and_shutdown_is_prompt() {
    let mut s = sluice_tests::Sluice::start(
        r#"
p:
  delay: 20ms
  source:
    http:
      port: {port}
  buffer:
    hostile_buffer:
      tiers:
        - bounded_blocking:
            buffer_size: 4
            batch_size: 4
        - bounded_blocking:
            buffer_size: 100
            batch_size: 10
  sink:
    - file:
        path: {dir}/out/events.jsonl
  dlq_path: {dir}/dlq.jsonl
"#,
    );
    // Every tick from the first on asks to move u32::MAX records into a tier of 4.
    for n in 0..19 {
        assert_eq!(post_hostile(&s, "hostage", n), 200);
    }
    let out = s.path("out/events.jsonl");
    s.wait_for(
        "every acknowledged record, while sluice runs",
        SECS_30,
        || sluice_tests::json_lines(&out).len() >= 19,
    );
    let mut seen: Vec<u64> = sluice_tests::json_lines(&out)
        .iter()
        .map(|e| e["n"].as_u64().unwrap())
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..19).collect::<Vec<_>>(), "each once");
    let started = std::time::Instant::now();
    assert_eq!(s.terminate(), 0);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "shutdown took {:?}",
        started.elapsed()
    );
}

#[test]
fn plugins_inspect_shows_a_policy_its_world_its_host_interface_and_the_headers_it_reads() {
    let out = std::process::Command::new(sluice_tests::sluice_bin())
        .args(["plugins", "inspect"])
        .arg(plugin_dir().join("dedup.wasm"))
        .args(["--option", "header=Idempotency-Key"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("world    sluice:plugin/buffer-plugin@0.2.0"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "  ! sluice:plugin/buffer-host@0.2.0: the buffer's tiers, a clock and a key-value state"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("reads    request headers idempotency-key"),
        "{stdout}"
    );
}
