//! The kafka, s3 and http sinks in the real binary, behind the kafka buffer, against real
//! servers: the broker, SeaweedFS (signature-checking S3) and an HTTP endpoint the test runs.
//! Every accepted event arrives once; while a sink's server is down the buffer's commit is
//! held and the source keeps accepting; the sink recovers without a restart.

pub(crate) mod http;
mod kafka;
mod noop;
mod opensearch;
mod otlp;
mod s3;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::json;
use sluice_tests::{Sluice, committed_and_end, kafka_bootstrap, unique};

/// A pipeline: http source → kafka buffer (its own topic and group) → `sinks` (YAML list
/// items, indented for `sink:`), dead letters in `{dir}/dlq.jsonl`.
fn pipeline(topic: &str, group: &str, sinks: &str) -> String {
    format!(
        r#"
sink-pipeline:
  workers: 2
  source:
    http:
      port: {{port}}
      request_timeout: 5s
  buffer:
    kafka:
      bootstrap_servers: [{bootstrap}]
      produce_timeout: 5s
      drain_timeout: 20s
      topics:
        - name: {topic}
          group_id: {group}
          create_topic: true
          commit_interval: 300ms
          session_timeout: 6s
          max_poll_records: 100
  sink:
{sinks}
  dlq_path: {{dir}}/dlq.jsonl
"#,
        bootstrap = kafka_bootstrap(),
    )
}

/// The kill tests' `commit_interval`: long enough that a round of events is posted, delivered
/// and killed before the next scheduled commit, even on a loaded 2-core machine.
const SLOW_COMMIT: Duration = Duration::from_secs(10);

/// The pipeline of the kill tests, its buffer topic with `topic_lines` more. It commits every
/// [`SLOW_COMMIT`] once a start's (or an assignment's) eager first interval is over, and at
/// once for the first acknowledgement after a quiet interval: the rest of a round waits up to
/// that long, and a kill right after the sink produced it comes first. Batches of 5 records (requests) fill at
/// once; a partial one waits 100 ms (`delay`), so that a quiet partition's last object (S3)
/// or request (HTTP), which waits `delay` + 1 s more, still comes before the next commit.
fn slow_commits(buffer: &str, group: &str, sinks: &str, topic_lines: &str) -> String {
    let yaml = pipeline(buffer, group, sinks)
        .replace("  workers: 2\n", "  workers: 2\n  delay: 100ms\n")
        .replace(
            "commit_interval: 300ms",
            &format!("commit_interval: {}s", SLOW_COMMIT.as_secs()),
        )
        .replace("max_poll_records: 100", "max_poll_records: 5")
        .replace(
            "create_topic: true\n          commit_interval",
            &format!("create_topic: true\n{topic_lines}          commit_interval"),
        );
    assert!(
        yaml.contains(&format!("commit_interval: {}s", SLOW_COMMIT.as_secs()))
            && yaml.contains("max_poll_records: 5")
            && yaml.contains("delay: 100ms")
    );
    yaml
}

/// Two hosts of `yaml` (with `env`) in one group, once both write to their sinks (the group
/// settles after the second one joins), and past the eager commits of their new assignments,
/// so that the next round is left uncommitted by a kill: the first acknowledgement after the
/// quiet interval is committed at once, the rest wait [`SLOW_COMMIT`]. Returns the hosts
/// and the ids posted meanwhile.
fn two_hosts_writing(yaml: &str, env: &[(&str, &str)]) -> (Sluice, Sluice, Vec<String>) {
    let (a, b) = (
        Sluice::start_with_env(yaml, env),
        Sluice::start_with_env(yaml, env),
    );
    let mut ids = Vec::new();
    // The group settles within a few rebalances; on a loaded broker they take longer.
    let started = Instant::now();
    for round in 0.. {
        ids.extend(post_events(&a, &format!("join{round}"), 20, 5));
        std::thread::sleep(Duration::from_millis(500));
        if sink_metric(&a, "sluice_sink_eventsWritten") > 0.0
            && sink_metric(&b, "sluice_sink_eventsWritten") > 0.0
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the second host got no partition within 120 s:\n{}",
            b.log()
        );
    }
    std::thread::sleep(SLOW_COMMIT + Duration::from_millis(300));
    (a, b, ids)
}

/// Rounds of events, each followed by a `kill -9` and a restart once the sink holds the
/// round (`holds(n)`: it holds at least `n` events, copies included). The process is frozen
/// (SIGSTOP) the moment the sink holds the round, so the look at the buffer's commit sees what
/// the kill leaves. Each round begins past the start's eager commits, so the kill usually
/// comes before the buffer commits the end of the round; on a loaded machine the commit may
/// still come first, so rounds go on past [`KILL_ROUNDS`] until a kill found the buffer not
/// committed to its end (at most [`MOST_KILL_ROUNDS`]). Returns the ids posted and how many
/// kills found it so (a test of what a re-read does needs at least one).
fn kill_rounds(
    sluice: &mut Sluice,
    (buffer, group): (&str, &str),
    holds: impl Fn(usize) -> bool,
) -> (Vec<String>, usize) {
    let mut ids = Vec::new();
    let mut uncommitted = 0;
    for round in 0..MOST_KILL_ROUNDS {
        if round >= KILL_ROUNDS && uncommitted > 0 {
            break;
        }
        ids.extend(post_events(sluice, &format!("early{round}"), 20, 20));
        std::thread::sleep(SLOW_COMMIT + Duration::from_millis(300));
        ids.extend(post_events(sluice, &format!("kill{round}"), 300, 20));
        wait_until(
            "the sink to hold the round's events",
            Duration::from_secs(60),
            sluice,
            || holds(ids.len()),
        );
        sluice.freeze();
        uncommitted += usize::from(!committed_to_end(buffer, group));
        sluice.kill9();
        sluice.restart(&[]);
    }
    (ids, uncommitted)
}

/// How many kills [`kill_rounds`] makes at least, and at most while every kill came after
/// the commit.
const KILL_ROUNDS: usize = 3;
const MOST_KILL_ROUNDS: usize = 8;

/// Posts a round of 300 events to `survivor` and, once the sinks hold them (`holds(n)`, as in
/// [`kill_rounds`]), freezes `killed` and looks at the buffer's commit: when it is not at
/// the end, kills `killed` -9 and waits until `survivor` took its partitions over and
/// committed them. When the commit came first (a loaded machine), both go on and another
/// round is posted, up to 5; a kill after the commit proves nothing. `ids` gets the ids
/// posted.
fn kill_before_the_commit(
    killed: &mut Sluice,
    survivor: &Sluice,
    (buffer, group): (&str, &str),
    ids: &mut Vec<String>,
    holds: impl Fn(usize) -> bool,
) {
    for round in 0..5 {
        ids.extend(post_events(survivor, &format!("kill{round}"), 300, 5));
        wait_until(
            "the sinks to hold the round's events",
            Duration::from_secs(60),
            survivor,
            || holds(ids.len()),
        );
        killed.freeze();
        if !committed_to_end(buffer, group) {
            killed.kill9();
            wait_until(
                "the buffer committed every record",
                Duration::from_secs(90),
                survivor,
                || committed_to_end(buffer, group),
            );
            return;
        }
        killed.thaw();
        std::thread::sleep(SLOW_COMMIT + Duration::from_millis(300));
    }
    panic!("in 5 rounds every kill would have come after the commit: untested");
}

/// A JSON array of `n` events with ids `prefix-first..`, and the ids.
fn events(prefix: &str, first: usize, n: usize) -> (Vec<u8>, Vec<String>) {
    let ids: Vec<String> = (first..first + n)
        .map(|i| format!("{prefix}-{i}"))
        .collect();
    let body: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| json!({"id": id, "host": format!("h{}", i % 3), "message": format!("line {id}")}))
        .collect();
    (serde_json::to_vec(&body).unwrap(), ids)
}

/// Posts `n` events in requests of `per` and returns their ids; every post must be accepted.
fn post_events(sluice: &Sluice, prefix: &str, n: usize, per: usize) -> Vec<String> {
    let mut all = Vec::new();
    for first in (0..n).step_by(per) {
        let (body, ids) = events(prefix, first, per.min(n - first));
        assert_eq!(sluice.post("/log/ingest", &body), 200, "{}", sluice.log());
        all.extend(ids);
    }
    all
}

/// Counts of each id among `ids`.
fn counts(ids: impl IntoIterator<Item = impl AsRef<str>>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for id in ids {
        *out.entry(id.as_ref().to_owned()).or_insert(0) += 1;
    }
    out
}

/// Asserts every id of `want` is in `got` and that at most `max_duplicates` are there twice.
fn assert_all_once(got: &BTreeMap<String, usize>, want: &[String], max_duplicates: usize) {
    let missing: Vec<_> = want.iter().filter(|id| !got.contains_key(*id)).collect();
    assert!(
        missing.is_empty(),
        "{} events missing, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    let duplicates: usize = got.values().map(|c| c - 1).sum();
    assert!(
        duplicates <= max_duplicates,
        "{duplicates} duplicates (at most {max_duplicates} allowed)"
    );
    assert_eq!(got.len(), want.len(), "no events that were not sent");
}

/// Polls `check` until it holds or `within` passed.
fn wait_until(what: &str, within: Duration, sluice: &Sluice, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(
            started.elapsed() < within,
            "timed out waiting for {what}:\n{}",
            sluice.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Whether the buffer group has committed everything written to its topic.
fn committed_to_end(topic: &str, group: &str) -> bool {
    committed_and_end(&kafka_bootstrap(), topic, group)
        .iter()
        .all(|(_, committed, end)| committed == end)
}

/// A sink metric of the pipeline, summed over its sinks.
fn sink_metric(sluice: &Sluice, name: &str) -> f64 {
    let (_, text) = sluice.get_metrics_server("/metrics");
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains("pipeline=\"sink-pipeline\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn names(prefix: &str) -> (String, String) {
    (
        unique(&format!("{prefix}-buf")),
        unique(&format!("{prefix}-g")),
    )
}

/// The fault test every remote sink runs: events flow; `down` takes the sink's server away;
/// more events are posted and accepted (the Kafka buffer holds them); the sink retries and the
/// buffer commits nothing past what the sink holds; `up` brings the server back and every
/// batch is committed, without restarting sluice. Returns the ids posted.
fn through_an_outage(
    sluice: &Sluice,
    buffer: &str,
    group: &str,
    per_request: usize,
    down: impl FnOnce(),
    up: impl FnOnce(),
) -> Vec<String> {
    let mut ids = post_events(sluice, "before", 3 * per_request, per_request);
    wait_until(
        "the first events delivered",
        Duration::from_secs(60),
        sluice,
        || committed_to_end(buffer, group),
    );
    down();
    ids.extend(post_events(sluice, "during", 3 * per_request, per_request));
    wait_until("the sink to retry", Duration::from_secs(60), sluice, || {
        sink_metric(sluice, "sluice_sink_retries") >= 1.0
    });
    assert!(
        !committed_to_end(buffer, group),
        "the buffer must not commit what the sink does not hold"
    );
    up();
    wait_until(
        "the buffer to commit everything once the server is back",
        Duration::from_secs(120),
        sluice,
        || committed_to_end(buffer, group),
    );
    ids
}
