//! sluice end to end (HTTP → kafka buffer → json → file) and the stalled-sink run.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure};
use sluice_tests::{Sluice, unique};

use super::Args;
use crate::measure::{Cpu, peak_rss, rss, wait_for_lines};

/// A fixed key for the benchmark only (32 zero bytes).
pub(super) const BENCH_ENCRYPTION: &str =
    "encryption: {key: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=}";

/// A running `sluice run` on kafka-buffered pipelines, each writing to its own file (the
/// harness's process: killed when dropped).
struct Running {
    _process: Sluice,
    pid: u32,
    /// Where each pipeline's source listens, in pipeline order.
    urls: Vec<String>,
    /// From `sluice run` to every source listening.
    started_in: Duration,
    _plugins: tempfile::TempDir,
    /// `sluice tap` at the shape's tap point, its output in `tap.jsonl` of the process's folder.
    tap: Option<std::process::Child>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(tap) = &mut self.tap {
            let _ = tap.kill();
            let _ = tap.wait();
        }
    }
}

/// What clients send and which source takes it.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Ingest {
    /// JSON arrays to the http source, the json deserializer.
    #[default]
    Json,
    /// OTLP/HTTP trace exports (protobuf) to `otel_trace_source` (unframed requests at the gRPC
    /// method's path), the otlp deserializer.
    OtlpTraces,
}

impl Ingest {
    fn source_yaml(self) -> &'static str {
        match self {
            Ingest::Json => "http:\n      port: {port}",
            Ingest::OtlpTraces => {
                "otel_trace_source:\n      port: {port}\n      ssl: false\n      unframed_requests: true"
            }
        }
    }

    fn deserializer(self) -> &'static str {
        match self {
            Ingest::Json => "json.wasm",
            Ingest::OtlpTraces => "otlp.wasm",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Ingest::Json => "/log/ingest",
            Ingest::OtlpTraces => "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Ingest::Json => "application/json",
            Ingest::OtlpTraces => "application/x-protobuf",
        }
    }
}

/// The shape of one benchmark pipeline.
#[derive(Clone, Copy, Default)]
pub(crate) struct Shape<'a> {
    /// A line more in the `kafka:` block (e.g. [`BENCH_ENCRYPTION`]).
    pub(super) extra: &'a str,
    /// A chain of this many `passthrough` processors.
    pub(super) processors: usize,
    /// A `processor:` list in YAML flow style, instead of the passthrough chain.
    pub(super) processor_list: Option<&'a str>,
    /// The `kafka` block as the one tier of this buffer policy component (from the plugin
    /// folder) instead of the built-in buffer.
    pub(super) policy: Option<&'a str>,
    /// A second pipeline after this one, fed by a `pipeline` sink, with its in-memory buffer
    /// and this `processor:` list (flow style); it writes the file instead.
    pub(super) then: Option<&'a str>,
    /// The source and what clients send it.
    pub(crate) ingest: Ingest,
    /// The file sink's `exactly_once: false`: at least once, no record of offsets.
    pub(super) at_least_once: bool,
    /// `sluice tap` listening at this point (`--stage` words) while the run goes.
    pub(super) tap: Option<&'a [&'a str]>,
    /// Events the sink gets for each event posted, when the processors make more than one
    /// (`split_event`); 0 means 1.
    pub(super) out_per_event: usize,
}

/// Starts sluice with `args.pipelines` benchmark pipelines of this `shape` (the first one's
/// file sink at `sink`, `None`: in its temporary folder); returns once every source listens,
/// with each pipeline's file, in pipeline order.
fn start_sluice(
    args: &Args,
    shape: Shape<'_>,
    sink: Option<&Path>,
) -> anyhow::Result<(Running, Vec<PathBuf>)> {
    ensure!(
        args.pipelines >= 1 && (args.pipelines == 1 || shape.then.is_none()),
        "one pipeline or more, and a chain (`then`) only after one"
    );
    // `{port}` and `{dir}` are filled in by the harness: the first pipeline listens on
    // `{port}`, the others on ports picked here; each writes its file in `{dir}` unless the
    // first one's is given.
    let other_ports = sluice_tests::free_ports(args.pipelines - 1);
    let events_file = |i: usize| format!("events-{i}.jsonl");
    let mut yaml = String::new();
    for i in 0..args.pipelines {
        let port = match i {
            0 => "{port}".to_owned(),
            _ => other_ports[i - 1].to_string(),
        };
        let sink_yaml = match sink {
            Some(p) if i == 0 => p.display().to_string(),
            _ => format!("{{dir}}/{}", events_file(i)),
        };
        yaml += &pipeline_yaml(args, shape, i, &port, &sink_yaml);
    }
    // Only the plugin the pipeline uses: compiling the 12-18 MB Python and JavaScript
    // components of the folder would dominate the start and the peak RSS.
    let plugins = tempfile::tempdir()?;
    let policy = shape.policy.map(|p| format!("{p}.wasm"));
    for plugin in [shape.ingest.deserializer(), "passthrough.wasm"]
        .into_iter()
        .chain(policy.as_deref())
    {
        std::fs::copy(args.plugins.join(plugin), plugins.path().join(plugin))?;
    }
    let plugin_dir = plugins.path().display().to_string();
    // Compiled plugins kept between runs (`run` would use a cache in its fresh data dir): a
    // run measures the optimized code a pipeline runs after its first seconds, not a cold
    // start with Cranelift compiling beside it (`sluice-bench startup` measures that).
    let cache = sluice_tests::plugin_cache().display().to_string();
    let admin = [
        "--admin",
        "--metrics-username",
        "bench",
        "--metrics-password",
        "bench",
    ];
    let mut run_args = vec!["--plugins", plugin_dir.as_str(), "--plugin-cache", &cache];
    if shape.tap.is_some() {
        run_args.extend(admin);
    }
    let spawned = Instant::now();
    let process = Sluice::start_with(&yaml, &run_args);
    let ports: Vec<u16> = std::iter::once(process.port)
        .chain(other_ports.iter().copied())
        .collect();
    for port in &ports[1..] {
        while std::net::TcpStream::connect(("127.0.0.1", *port)).is_err() {
            ensure!(
                spawned.elapsed() < Duration::from_secs(120),
                "pipeline on port {port} did not listen within 120 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let started_in = spawned.elapsed();
    let tap = match shape.tap {
        None => None,
        Some(stage) => Some(
            Command::new(sluice_tests::sluice_bin())
                .args(["tap", "bench-pipeline", "--stage"])
                .args(stage)
                .arg("--data-dir")
                .arg(process.path("data"))
                .args(["--username", "bench", "--password", "bench"])
                .stdout(std::fs::File::create(process.path("tap.jsonl"))?)
                .spawn()?,
        ),
    };
    let sinks: Vec<PathBuf> = (0..args.pipelines)
        .map(|i| match sink {
            Some(p) if i == 0 => p.to_owned(),
            _ => process.path(&events_file(i)),
        })
        .collect();
    let (pid, urls) = (
        process.child.id(),
        ports
            .iter()
            .map(|port| format!("http://127.0.0.1:{port}{}", shape.ingest.path()))
            .collect(),
    );
    Ok((
        Running {
            _process: process,
            pid,
            urls,
            started_in,
            _plugins: plugins,
            tap,
        },
        sinks,
    ))
}

/// The YAML of benchmark pipeline `i` (`bench-pipeline`, then `bench-pipeline-1`, ...) with
/// its own topic, its source on `port`, its file sink at `sink`.
fn pipeline_yaml(args: &Args, shape: Shape<'_>, i: usize, port: &str, sink: &str) -> String {
    let topic = unique("bench-sluice");
    let name = if i == 0 {
        "bench-pipeline".to_owned()
    } else {
        format!("bench-pipeline-{i}")
    };
    let workers = args.consumers();
    let kafka = format!(
        r#"bootstrap_servers: [{bootstrap}]
{kafka_yaml}
{extra}
topics:
  - name: {topic}
    group_id: {topic}-group
    create_topic: true
    number_of_partitions: {partitions}
    workers: {workers}
    max_poll_records: 500
"#,
        bootstrap = args.bootstrap,
        kafka_yaml = args.kafka_yaml,
        extra = shape.extra,
        partitions = args.partitions,
    );
    let file_sink = format!(
        "    - file:\n        path: {sink}\n{}",
        if shape.at_least_once {
            "        exactly_once: false\n"
        } else {
            ""
        }
    );
    let (sink_block, next) = match shape.then {
        None => (file_sink, String::new()),
        Some(processors) => (
            "    - pipeline:\n        name: bench-next\n".to_owned(),
            format!(
                "bench-next:\n  workers: 2\n  delay: 20ms\n  source:\n    pipeline:\n      name: bench-pipeline\n  processor: [{processors}]\n  sink:\n{file_sink}  dlq_path: {{dir}}/dlq-next.jsonl\n"
            ),
        ),
    };
    format!(
        r#"{name}:
  workers: {pipeline_workers}
  delay: 20ms
  source:
    {source}
  buffer:
{buffer}  processor: [{chain}]
  sink:
{sink_block}  dlq_path: {{dir}}/dlq-{i}.jsonl
{next}"#,
        pipeline_workers = args.workers.unwrap_or(2),
        source = shape.ingest.source_yaml().replace("{port}", port),
        buffer = sluice_tests::kafka_buffer_yaml(&kafka, shape.policy),
        chain = shape.processor_list.map_or_else(
            || vec!["passthrough"; shape.processors].join(", "),
            str::to_owned
        ),
    )
}

/// What one end-to-end run measured.
pub(crate) struct E2e {
    pub(crate) took: Duration,
    /// Peak resident memory of the sluice process (VmHWM), bytes.
    pub(super) peak_rss: u64,
    /// Events `sluice tap` printed during the run.
    pub(super) tapped: usize,
    /// From `sluice run` to every pipeline's source listening.
    pub(super) started_in: Duration,
}

pub(crate) fn sluice_end_to_end(
    args: &Args,
    bodies: &[Vec<u8>],
    shape: Shape<'_>,
) -> anyhow::Result<E2e> {
    let (running, sinks) = start_sluice(args, shape, None)?;
    let (sluice_pid, urls) = (running.pid, Arc::new(running.urls.clone()));
    let n = urls.len();
    let content_type = shape.ingest.content_type();
    // Warm up until every consumer has joined and read, as the raw run does; body `i` goes
    // to pipeline `i % n`, in the measured run too.
    let warm_up = args.warm_up();
    for (i, body) in bodies[..warm_up].iter().enumerate() {
        ensure!(
            ureq::post(&urls[i % n])
                .header("Content-Type", content_type)
                .send(&body[..])?
                .status()
                == 200,
            "warm-up request refused"
        );
    }
    // Events each pipeline gets from `count` bodies sent in turn.
    let share = |count: usize, k: usize| {
        (count / n + usize::from(k < count % n)) * args.events * shape.out_per_event.max(1)
    };
    let mut warmed = Vec::with_capacity(n);
    for (k, sink) in sinks.iter().enumerate() {
        warmed.push(wait_for_lines(
            sink,
            share(warm_up, k),
            Duration::from_secs(120),
        )?);
    }

    let next = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let cpu = Cpu::start(Some(sluice_pid));
    let shared = Arc::new(bodies.to_vec());
    let started = Instant::now();
    let clients: Vec<_> = (0..args.clients)
        .map(|_| {
            let (next, refused) = (next.clone(), refused.clone());
            let (bodies, urls) = (shared.clone(), urls.clone());
            std::thread::spawn(move || -> anyhow::Result<()> {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .build()
                    .into();
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(body) = bodies.get(i) else {
                        return Ok(());
                    };
                    loop {
                        let status = agent
                            .post(&urls[i % urls.len()])
                            .header("Content-Type", content_type)
                            .send(&body[..])?
                            .status()
                            .as_u16();
                        match status {
                            200 => break,
                            429 | 503 => {
                                refused.fetch_add(1, Ordering::Relaxed);
                                std::thread::sleep(Duration::from_millis(10));
                            }
                            other => bail!("sluice answered {other}"),
                        }
                    }
                }
            })
        })
        .collect();
    for c in clients {
        c.join().expect("client thread")?;
    }
    let posted = started.elapsed();
    let mut lines = Vec::with_capacity(n);
    for (k, sink) in sinks.iter().enumerate() {
        let want = warmed[k] + share(bodies.len(), k);
        lines.push(wait_for_lines(sink, want, Duration::from_secs(600))?);
    }
    let took = started.elapsed();
    println!(
        "  (sluice: every request answered 200 after {:.2} s ({} answers 429 or 503, each retried after 10 ms), every event in the file after {:.2} s; {})",
        posted.as_secs_f64(),
        refused.load(Ordering::Relaxed),
        took.as_secs_f64(),
        cpu.report()
    );
    for (k, lines) in lines.into_iter().enumerate() {
        let want = share(bodies.len(), k);
        ensure!(
            lines == warmed[k] + want,
            "the sink of pipeline {k} has {} events, expected {want}",
            lines - warmed[k]
        );
    }
    let tapped = std::fs::read_to_string(running._process.path("tap.jsonl"))
        .map_or(0, |text| text.lines().count());
    Ok(E2e {
        took,
        peak_rss: peak_rss(sluice_pid),
        tapped,
        started_in: running.started_in,
    })
}

/// The sink stalls for `stall` (a FIFO nobody reads) while clients keep posting: sluice must
/// keep answering (Kafka holds the records) with bounded memory, then deliver every event once
/// the sink drains. Returns (requests accepted during the stall, peak RSS during it, events
/// delivered after it).
pub(super) fn stalled_sink(
    args: &Args,
    bodies: &[Vec<u8>],
    stall: Duration,
) -> anyhow::Result<(usize, u64, usize)> {
    let fifo_dir = tempfile::tempdir()?;
    let fifo = fifo_dir.path().join("events.fifo");
    let status = Command::new("mkfifo").arg(&fifo).status()?;
    ensure!(status.success(), "mkfifo failed");
    let (running, _) = start_sluice(args, Shape::default(), Some(&fifo))?;
    let (pid, url) = (running.pid, running.urls[0].clone());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let started = Instant::now();
    let mut accepted = 0;
    let mut peak = 0;
    let mut next_sample = Instant::now();
    while started.elapsed() < stall {
        let body = &bodies[accepted % bodies.len()];
        match agent.post(&url).send(&body[..])?.status().as_u16() {
            200 => accepted += 1,
            503 => std::thread::sleep(Duration::from_millis(10)),
            other => bail!("sluice answered {other} while the sink stalled"),
        }
        if Instant::now() >= next_sample {
            peak = peak.max(rss(pid));
            next_sample += Duration::from_millis(100);
        }
    }
    peak = peak.max(rss(pid));
    // Drain: read the FIFO until every accepted event has come out.
    let want = accepted * args.events;
    let reader = std::fs::File::open(&fifo)?;
    let drained = std::thread::spawn(move || -> anyhow::Result<usize> {
        let mut lines = 0;
        let mut reader = std::io::BufReader::with_capacity(1 << 20, reader);
        let mut buf = vec![0u8; 1 << 20];
        let started = Instant::now();
        while lines < want && started.elapsed() < Duration::from_secs(600) {
            let n = reader.read(&mut buf)?;
            if n == 0 {
                break;
            }
            lines += buf[..n].iter().filter(|b| **b == b'\n').count();
        }
        Ok(lines)
    });
    let delivered = drained.join().expect("fifo reader")?;
    drop(running);
    Ok((accepted, peak, delivered))
}
