//! `sluice-bench pull`: the `kafka` source against raw librdkafka reading the same records.
//! One topic is filled once by a producer (as any application writes it); then, in turn,
//! 1. raw librdkafka: a group consumer per partition, each value written as a line to a file,
//!    committing every 1000 records, until every record is read;
//! 2. sluice: `kafka` source (`serde_format: json`) → the file sink (exactly once, its default),
//!    in a fresh group, timed from the pipeline's start until the file holds every event.
//!
//! It prints both throughputs and their ratio (target ≥ 0.8). Not a test: compare figures only
//! within one run.

use std::io::{BufRead as _, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer as _};
use rdkafka::message::Message as _;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer as _, ThreadedProducer};
use sluice_tests::{Sluice, create_topic, unique};

#[derive(clap::Args, Clone)]
pub(crate) struct Args {
    /// The broker, `host:port`.
    #[arg(long)]
    bootstrap: String,
    /// Records (one JSON event each) in the topic.
    #[arg(long, default_value_t = 200_000)]
    records: usize,
    /// Bytes of text per event.
    #[arg(long, default_value_t = 200)]
    event_bytes: usize,
    /// Partitions of the topic; consumers on each side.
    #[arg(long, default_value_t = 2)]
    partitions: i32,
    /// Times each side runs (in turn); the best of each is reported.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let topic = unique("bench-pull");
    let runtime = tokio::runtime::Runtime::new()?;
    runtime
        .block_on(create_topic(&args.bootstrap, &topic, args.partitions))
        .map_err(anyhow::Error::msg)?;
    fill(args, &topic)?;
    let (mut raw, mut sluice) = (Duration::MAX, Duration::MAX);
    for _ in 0..args.rounds {
        raw = raw.min(raw_consumers(args, &topic)?);
        sluice = sluice.min(sluice_source(args, &topic)?);
    }
    let rate = |took: Duration| args.records as f64 / took.as_secs_f64();
    println!(
        "kafka source: {} records of {} bytes, {} partitions, best of {}",
        args.records, args.event_bytes, args.partitions, args.rounds
    );
    println!(
        "  raw librdkafka to a file:     {:>9.0} records/s",
        rate(raw)
    );
    println!(
        "  sluice kafka → json → file:   {:>9.0} records/s",
        rate(sluice)
    );
    println!(
        "  ratio sluice / raw: {:.2} (target ≥ 0.8)",
        raw.as_secs_f64() / sluice.as_secs_f64()
    );
    Ok(())
}

/// Writes the records, as an application would (batched, acks=all).
fn fill(args: &Args, topic: &str) -> anyhow::Result<()> {
    let producer: ThreadedProducer<DefaultProducerContext> = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", &args.bootstrap)
        .set("linger.ms", "20")
        .create()?;
    let text = "x".repeat(args.event_bytes);
    for i in 0..args.records {
        let value = format!(r#"{{"id":{i},"host":"h{}","message":"{text}"}}"#, i % 16);
        let mut record = Some(BaseRecord::<(), _>::to(topic).payload(&value));
        while let Some(r) = record.take() {
            if let Err((_, back)) = producer.send(r) {
                record = Some(back);
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
    producer.flush(Duration::from_secs(120))?;
    Ok(())
}

/// One consumer per partition in a fresh group, each writing values as lines to its file.
fn raw_consumers(args: &Args, topic: &str) -> anyhow::Result<Duration> {
    let dir = tempfile::tempdir()?;
    let group = unique("bench-pull-raw");
    let read = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let threads: Vec<_> = (0..args.partitions)
        .map(|i| {
            let consumer: BaseConsumer = rdkafka::ClientConfig::new()
                .set("bootstrap.servers", &args.bootstrap)
                .set("group.id", &group)
                .set("enable.auto.commit", "false")
                .set("auto.offset.reset", "earliest")
                .create()?;
            consumer.subscribe(&[topic])?;
            let mut out = std::io::BufWriter::new(std::fs::File::create(
                dir.path().join(format!("raw-{i}.jsonl")),
            )?);
            let (read, want) = (read.clone(), args.records);
            Ok(std::thread::spawn(move || {
                let mut since_commit = 0;
                while read.load(Ordering::SeqCst) < want
                    && started.elapsed() < Duration::from_secs(600)
                {
                    match consumer.poll(Duration::from_millis(100)) {
                        Some(Ok(m)) => {
                            let _ = out.write_all(m.payload().unwrap_or_default());
                            let _ = out.write_all(b"\n");
                            read.fetch_add(1, Ordering::SeqCst);
                            since_commit += 1;
                            if since_commit >= 1000 {
                                let _ = consumer.commit_consumer_state(CommitMode::Async);
                                since_commit = 0;
                            }
                        }
                        Some(Err(e)) => eprintln!("raw consumer: {e}"),
                        None => {}
                    }
                }
                let _ = out.flush();
                let _ = consumer.commit_consumer_state(CommitMode::Sync);
            }))
        })
        .collect::<anyhow::Result<_>>()?;
    for t in threads {
        let _ = t.join();
    }
    ensure!(
        read.load(Ordering::SeqCst) >= args.records,
        "the raw consumers did not read every record"
    );
    Ok(started.elapsed())
}

/// sluice reading the topic in a fresh group into its file sink; the time from its start
/// until the file holds every event.
fn sluice_source(args: &Args, topic: &str) -> anyhow::Result<Duration> {
    let yaml = format!(
        r#"
bench-pull:
  workers: {partitions}
  source:
    kafka:
      bootstrap_servers: [{bootstrap}]
      topics:
        - name: {topic}
          group_id: {group}
          workers: {partitions}
          serde_format: json
  sink:
    - file:
        path: "{{dir}}/events.jsonl"
"#,
        partitions = args.partitions,
        bootstrap = args.bootstrap,
        group = unique("bench-pull-sluice"),
    );
    let plugins = tempfile::tempdir()?;
    let cache = sluice_tests::plugin_cache().display().to_string();
    let plugin_dir = plugins.path().display().to_string();
    let started = Instant::now();
    let sluice = Sluice::start_without_listener_with(
        &yaml,
        &["--plugins", &plugin_dir, "--plugin-cache", &cache],
    );
    let path = sluice.path("events.jsonl");
    let mut lines = 0;
    let mut reader = None;
    while lines < args.records {
        ensure!(
            started.elapsed() < Duration::from_secs(600),
            "sluice did not read every record within 600 s"
        );
        if reader.is_none() && path.is_file() {
            reader = Some(std::io::BufReader::new(
                std::fs::File::open(&path).context("the sink's file")?,
            ));
        }
        if let Some(r) = reader.as_mut() {
            let mut line = Vec::new();
            while r.read_until(b'\n', &mut line)? > 0 {
                if line.ends_with(b"\n") {
                    lines += 1;
                    line.clear();
                }
            }
            if !line.is_empty() {
                // A line cut short: read it again whole next time.
                r.seek_relative(-(line.len() as i64))?;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(started.elapsed())
}
