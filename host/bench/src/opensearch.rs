//! `sluice-bench opensearch`: events through HTTP → kafka buffer → json → the `opensearch` sink
//! (index `bench`, `flush_timeout: 1000`, the default `bulk_size` of 5 MiB, gzip) into the
//! OpenSearch test server (`sluice_tests::OpenSearch`, in this process on its own thread),
//! against a plain bulk client posting the same documents, in the same NDJSON, to a fresh
//! test server: the action line with the `_id` the sink chooses in front of each document,
//! as many documents per request as the sink's requests held on average in the same round,
//! gzipped, one request at a time (the sink's one staging task sends one request at a time),
//! the same `filter_path`, the answer read and checked for `errors`. Then what exactly once
//! costs: the sink as it ships (`_id`s from buffer positions) against `exactly_once: false`
//! (ids chosen by OpenSearch). Each side in turn in every round, in one run on one machine.
//!
//! Two figures for sluice, both printed, since the plain client does only the sink's part:
//!
//! - end to end: from the first POST until the server holds every event (its bulk items);
//!   the HTTP source and the Kafka buffer are in that time and the plain client does neither;
//! - the sink's own rate, which issue 44's ≥ 0.8 applies to: the documents answered after the
//!   first bulk answer, over the time from the first bulk answer to the last, as the server
//!   saw them (polled every millisecond). The plain client is measured the same way, and its
//!   whole time (first POST to last answer) is printed beside it.
//!
//! Each run checks that the buffer committed everything and that the server holds every
//! document once (by the events' own `id` field; with exactly once, under the buffer's ids).

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure};
use sluice_tests::{OpenSearch, Sluice, committed_and_end, unique};

use crate::sinks::{body, post, wait};

#[derive(clap::Args, Clone)]
pub(crate) struct Args {
    /// The broker, `host:port`.
    #[arg(long)]
    bootstrap: String,
    /// Request bodies posted to sluice (300,000 events by default: about ten bulk requests of
    /// 5 MiB, so the time between the first answer and the last spans several).
    #[arg(long, default_value_t = 3_000)]
    requests: usize,
    /// JSON events per request body.
    #[arg(long, default_value_t = 100)]
    events: usize,
    /// Concurrent HTTP clients posting to sluice.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// The plugin folder (`plugins/target/wasm32-wasip2/release`).
    #[arg(long)]
    plugins: PathBuf,
    /// Times each run is repeated (in turn); the best of each is reported.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
}

/// The index every run writes.
const INDEX: &str = "bench";

/// What the sink sends `_bulk` to (`host/pipeline/src/sink/opensearch/mod.rs`, `bulk`).
const BULK_PATH: &str =
    "/_bulk?filter_path=errors,took,items.*.error,items.*.status,items.*._index,items.*._id";

/// How one run went, as the server saw its bulk answers.
#[derive(Clone, Copy)]
struct Took {
    /// From the first POST (to sluice or to the server) until the server held every event.
    all: Duration,
    /// Documents answered after the first bulk answer, and the time from it to the last.
    steady: (usize, Duration),
    /// Bulk requests made.
    requests: usize,
}

/// When each bulk answer came (polled), from the clock's start.
type Answers = Vec<Duration>;

impl Took {
    const NONE: Took = Took {
        all: Duration::MAX,
        steady: (0, Duration::MAX),
        requests: 0,
    };

    /// Documents per second between the first bulk answer and the last.
    fn steady_rate(&self) -> f64 {
        self.steady.0 as f64 / self.steady.1.as_secs_f64()
    }

    /// The faster whole time, and separately the faster steady rate.
    fn best(self, other: Took) -> Took {
        let steady = if other.steady_rate() > self.steady_rate() {
            other.steady
        } else {
            self.steady
        };
        Took {
            all: self.all.min(other.all),
            steady,
            requests: if self.requests == 0 {
                other.requests
            } else {
                self.requests
            },
        }
    }
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (bodies, events): (Vec<Vec<u8>>, Vec<Vec<Vec<u8>>>) =
        (0..args.requests).map(|r| body(r, args.events)).unzip();
    let events: Vec<Vec<u8>> = events.into_iter().flatten().collect();
    let n = events.len();
    let bytes: usize = events.iter().map(|e| e.len() + 1).sum();
    println!(
        "payload set: {} requests x {} events = {n} events ({:.1} MB as JSON lines), {} clients",
        args.requests,
        args.events,
        bytes as f64 / 1e6,
        args.clients,
    );
    let [mut once, mut least, mut plain, mut plain_no_ids] = [Took::NONE; 4];
    let mut per_request = 0;
    for round in 1..=args.rounds {
        println!("round {round} of {}", args.rounds);
        let this = through_sluice(args, &bodies, n, true)?;
        // The plain client's requests hold as many documents as the sink's did (the last
        // request of a run is partly filled: flushed after `flush_timeout`).
        per_request = n.div_ceil(this.requests);
        once = once.best(this);
        least = least.best(through_sluice(args, &bodies, n, false)?);
        plain = plain.best(plain_client(&events, args.events, per_request, true)?);
        plain_no_ids = plain_no_ids.best(plain_client(&events, args.events, per_request, false)?);
    }
    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    println!(
        "best of {} rounds (sink's requests: {} for {n} documents; the plain client's: {per_request} documents each):",
        args.rounds, once.requests
    );
    println!(
        "{:<52} {:>8} {:>11}   {:>22}",
        "", "all", "events/s", "first to last answer"
    );
    for (what, took) in [
        ("plain bulk client (ureq, gzip, one at a time)", plain),
        (
            "plain bulk client, no `_id` (the server chooses)",
            plain_no_ids,
        ),
        ("sluice → opensearch sink (exactly once, the default)", once),
        ("sluice → opensearch sink (exactly_once: false)", least),
    ] {
        println!(
            "{what:<52} {:>6.2} s {:>11.0}   {:>6.2} s {:>9.0} docs/s",
            took.all.as_secs_f64(),
            rate(took.all),
            took.steady.1.as_secs_f64(),
            took.steady_rate()
        );
    }
    println!(
        "ratio sink / plain bulk client, first to last answer (issue 44's target, ≥ 0.8): {:.2} (exactly_once: false: {:.2})",
        once.steady_rate() / plain.steady_rate(),
        least.steady_rate() / plain.steady_rate()
    );
    println!(
        "ratio sluice end to end (HTTP source and Kafka buffer included) / plain bulk client: {:.2}",
        rate(once.all) / rate(plain.all)
    );
    println!(
        "exactly once / exactly_once: false (target ≥ 0.95): sink {:.2}    end to end {:.2}",
        once.steady_rate() / least.steady_rate(),
        rate(once.all) / rate(least.all)
    );
    println!(
        "the test server's part of it: plain client with `_id`s / without: {:.2}",
        plain.steady_rate() / plain_no_ids.steady_rate()
    );
    Ok(())
}

/// Polls the server's bulk answers every millisecond from `started` until it has answered
/// `base + n` items; returns how the run went.
fn watch(
    server: &OpenSearch,
    base: (usize, usize),
    n: usize,
    started: Instant,
) -> anyhow::Result<(Took, Answers)> {
    let within = Duration::from_secs(600);
    let mut answers = Answers::new();
    let mut seen = 0;
    // (time since `started`, items answered since `base`) at each first and last answer.
    let mut first: Option<(Duration, usize)> = None;
    loop {
        let (requests, items) = server.bulk_counts();
        let (requests, items) = (requests - base.0, items - base.1);
        let at = started.elapsed();
        if requests > seen {
            seen = requests;
            answers.push(at);
        }
        if items > 0 && first.is_none() {
            first = Some((at, items));
        }
        if items >= n {
            let (first_at, first_items) = first.expect("set above");
            // One bulk request held every document (a smoke run's sizes): nothing to time
            // between answers, so the whole time stands in.
            let steady = match first_at < at {
                true => (items - first_items, at - first_at),
                false => (items, at),
            };
            let took = Took {
                all: at,
                steady,
                requests,
            };
            return Ok((took, answers));
        }
        ensure!(at < within, "not done within {within:?}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `1.23 1.80 ... s`.
fn seconds(times: &[Duration]) -> String {
    let times: Vec<String> = times
        .iter()
        .map(|t| format!("{:.2}", t.as_secs_f64()))
        .collect();
    format!("{} s", times.join(" "))
}

/// Posts `bodies` to sluice with `args.clients` clients, into a fresh test server, until the
/// server has answered every event; then checks the buffer committed everything and the
/// server holds each event once.
fn through_sluice(
    args: &Args,
    bodies: &[Vec<u8>],
    n: usize,
    exactly_once: bool,
) -> anyhow::Result<Took> {
    // A fresh server for each run (each keeps its documents until the bench ends).
    let server = OpenSearch::start();
    let (buffer, group) = (unique("bench-os-buf"), unique("bench-os-g"));
    let yaml = format!(
        r#"bench-opensearch:
  workers: 2
  delay: 20ms
  source:
    http:
      port: {{port}}
  buffer:
    kafka:
      bootstrap_servers: [{bootstrap}]
      topics:
        - name: {buffer}
          group_id: {group}
          create_topic: true
          number_of_partitions: 2
          max_poll_records: 500
          commit_interval: 200ms
  sink:
    - opensearch:
        hosts: ["{url}"]
        index: {INDEX}
        flush_timeout: 1000
        exactly_once: {exactly_once}
  dlq_path: {{dir}}/dlq.jsonl
"#,
        bootstrap = args.bootstrap,
        url = server.url(),
    );
    let plugins = tempfile::tempdir()?;
    std::fs::copy(
        args.plugins.join("json.wasm"),
        plugins.path().join("json.wasm"),
    )?;
    let plugin_dir = plugins.path().display().to_string();
    let process = Sluice::start_with_env_and_args(&yaml, &[], &["--plugins", &plugin_dir]);
    let url = format!("http://127.0.0.1:{}/log/ingest", process.port);
    // Seconds the sink spent in its bulk calls (gzip, request, answer), from its histogram.
    let busy = || {
        let (_, text) = process.get_metrics_server("/metrics");
        sluice_tests::prometheus_value(
            &text,
            "sluice_opensearch_bulkRequestLatency_sum",
            &[("pipeline", "bench-opensearch")],
        )
        .unwrap_or(0.0)
    };
    // Warm up with events of their own (not counted), so the consumers have joined, the index
    // is set up and the sink is connected before the clock starts.
    let (warm_body, warm_events) = body(usize::MAX, args.events);
    post(&url, &[warm_body], 1)?;
    wait(
        &|| server.bulk_counts().1 >= warm_events.len(),
        Duration::from_secs(120),
    )?;
    let (base, busy_before) = (server.bulk_counts(), busy());
    let started = Instant::now();
    let took = std::thread::scope(|s| {
        let posting = s.spawn(|| {
            post(&url, bodies, args.clients)?;
            anyhow::Ok(started.elapsed())
        });
        let took = watch(&server, base, n, started);
        let posted = posting.join().expect("posting thread")?;
        let (took, answers) = took?;
        println!(
            "  (sluice, exactly_once: {exactly_once}: every request answered after {:.2} s, every event in the server after {:.2} s; {} bulk requests, {:.2} s of them in the sink's bulk calls; answers at {})",
            posted.as_secs_f64(),
            took.all.as_secs_f64(),
            took.requests,
            busy() - busy_before,
            seconds(&answers),
        );
        anyhow::Ok(took)
    })?;
    // Offsets are committed after the sink took the events (not timed: the commit interval).
    wait(
        &|| {
            committed_and_end(&args.bootstrap, &buffer, &group)
                .iter()
                .all(|(_, committed, end)| committed == end)
        },
        Duration::from_secs(120),
    )?;
    let id_prefix = exactly_once.then(|| format!("{buffer}/"));
    check(&server, n + warm_events.len(), id_prefix.as_deref())
        .map_err(|e| e.context(process.log()))?;
    Ok(took)
}

/// The server holds `expected` documents in the index, each event (its `id` field) once, each
/// under an `_id` starting with `id_prefix` when given.
fn check(server: &OpenSearch, expected: usize, id_prefix: Option<&str>) -> anyhow::Result<()> {
    server.assert_understood();
    let documents = server.documents(INDEX);
    let events: BTreeSet<&str> = documents
        .values()
        .filter_map(|d| d.source["id"].as_str())
        .collect();
    ensure!(
        documents.len() == expected && events.len() == expected,
        "the server holds {} documents of {} events, expected {expected}",
        documents.len(),
        events.len()
    );
    if let Some(prefix) = id_prefix
        && let Some(id) = documents.keys().find(|id| !id.starts_with(prefix))
    {
        bail!("the document `{id}` is not named from its buffer position ({prefix}...)");
    }
    Ok(())
}

/// The same documents as sluice's exactly-once run sends, in the same NDJSON, posted to a
/// fresh server by one client, one request at a time, `per_request` documents each, gzipped.
/// `events_per_body`: events per HTTP body (one buffer record) in sluice's run, for the ids;
/// without `ids`, as `exactly_once: false` sends them (the server chooses).
fn plain_client(
    events: &[Vec<u8>],
    events_per_body: usize,
    per_request: usize,
    ids: bool,
) -> anyhow::Result<Took> {
    let server = OpenSearch::start();
    let url = format!("{}{BULK_PATH}", server.url());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    // The `_id` the sink gives the event at `i`: `<topic>/<partition>/<offset>/<rank>`, each
    // body one record, the records spread over two partitions.
    let topic = unique("bench-os-buf");
    let numbered: Vec<(Option<String>, &[u8])> = events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let (record, rank) = (i / events_per_body, i % events_per_body);
            let id = format!("{topic}/{}/{}/{rank}", record % 2, record / 2);
            (ids.then_some(id), &e[..])
        })
        .collect();
    // Warm up (not counted) as sluice's run does: the connection made, the index created.
    let (_, warm) = body(usize::MAX, events_per_body);
    let warm: Vec<(Option<String>, &[u8])> = warm
        .iter()
        .enumerate()
        .map(|(rank, e)| (ids.then(|| format!("warm/0/0/{rank}")), &e[..]))
        .collect();
    send(&agent, &url, &warm)?;
    let base = server.bulk_counts();
    let started = Instant::now();
    let took = std::thread::scope(|s| {
        let posting = s.spawn(|| {
            for chunk in numbered.chunks(per_request) {
                send(&agent, &url, chunk)?;
            }
            anyhow::Ok(())
        });
        let took = watch(&server, base, numbered.len(), started);
        posting.join().expect("posting thread")?;
        let (took, answers) = took?;
        println!(
            "  (plain client, ids: {ids}: {} bulk requests; answers at {})",
            took.requests,
            seconds(&answers)
        );
        anyhow::Ok(took)
    })?;
    check(&server, events.len() + warm.len(), None)?;
    Ok(took)
}

/// One `_bulk` request as the sink makes it: `{"index":{"_index":..,"_id":..}}` (no `_id`:
/// `exactly_once: false`) and the
/// document on the next line, gzipped (`flate2` fast, as the sink's `codec::gzip`), the answer
/// read whole and checked.
fn send(
    agent: &ureq::Agent,
    url: &str,
    documents: &[(Option<String>, &[u8])],
) -> anyhow::Result<()> {
    let mut ndjson = Vec::new();
    for (id, document) in documents {
        let action = match id {
            Some(id) => serde_json::json!({"index": {"_index": INDEX, "_id": id}}),
            None => serde_json::json!({"index": {"_index": INDEX}}),
        };
        serde_json::to_writer(&mut ndjson, &action)?;
        ndjson.push(b'\n');
        ndjson.extend_from_slice(document);
        ndjson.push(b'\n');
    }
    let mut gz = flate2::write::GzEncoder::new(
        Vec::with_capacity(ndjson.len() / 4),
        flate2::Compression::fast(),
    );
    gz.write_all(&ndjson)?;
    let payload = gz.finish()?;
    let mut answer = agent
        .post(url)
        .header("content-type", "application/x-ndjson")
        .header("content-encoding", "gzip")
        .send(&payload[..])?;
    let status = answer.status().as_u16();
    let text = answer
        .body_mut()
        .with_config()
        .limit(u64::MAX)
        .read_to_vec()?;
    ensure!(status == 200, "the server answered {status}");
    let parsed: serde_json::Value = serde_json::from_slice(&text)?;
    ensure!(
        parsed["errors"] == serde_json::Value::Bool(false),
        "the bulk answer has errors: {}",
        String::from_utf8_lossy(&text[..text.len().min(500)])
    );
    Ok(())
}
