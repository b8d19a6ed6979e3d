//! `sluice-bench pull`: the `kafka` source against raw librdkafka reading the same records.
//! One topic is filled once by a producer (as any application writes it); then, in turn,
//! 1. raw librdkafka: a group consumer per partition, each value written as a line to a file,
//!    committing every 1000 records, until every record is read;
//! 2. sluice: `kafka` source (`serde_format: json`) → the file sink (exactly once, its default),
//!    in a fresh group, timed from the pipeline being ready until the file holds every event.
//!
//! It prints both throughputs and their ratio (target ≥ 0.8) from each side's first record to
//! its last, and with the time to join the group (each start pays it once). Not a test:
//! compare figures only within one run.

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
    /// Extra lines for sluice's topic (e.g. `consumer_max_poll_records: 1000`), for
    /// experiments; the defaults are what is reported.
    #[arg(long, default_value = "")]
    topic_yaml: String,
    /// Extra lines for sluice's file sink (e.g. `exactly_once: false`), likewise.
    #[arg(long, default_value = "")]
    file_yaml: String,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let topic = unique("bench-pull");
    let runtime = tokio::runtime::Runtime::new()?;
    runtime
        .block_on(create_topic(&args.bootstrap, &topic, args.partitions))
        .map_err(anyhow::Error::msg)?;
    fill(args, &topic)?;
    let best = |a: Option<Times>, b: Times| match a {
        Some(a) => Times {
            total: a.total.min(b.total),
            steady: a.steady.min(b.steady),
        },
        None => b,
    };
    let (mut raw, mut sluice) = (None, None);
    for _ in 0..args.rounds {
        raw = Some(best(raw, raw_consumers(args, &topic)?));
        sluice = Some(best(sluice, sluice_source(args, &topic)?));
    }
    let (raw, sluice) = (raw.expect("a round"), sluice.expect("a round"));
    let rate = |took: Duration| args.records as f64 / took.as_secs_f64();
    println!(
        "kafka source: {} records of {} bytes, {} partitions, best of {}",
        args.records, args.event_bytes, args.partitions, args.rounds
    );
    println!(
        "  raw librdkafka to a file:     {:>9.0} records/s first to last ({:>9.0} with the join)",
        rate(raw.steady),
        rate(raw.total)
    );
    println!(
        "  sluice kafka → json → file:   {:>9.0} records/s first to last ({:>9.0} with the join)",
        rate(sluice.steady),
        rate(sluice.total)
    );
    println!(
        "  ratio sluice / raw: {:.2} first to last (target ≥ 0.8); {:.2} with the group join",
        raw.steady.as_secs_f64() / sluice.steady.as_secs_f64(),
        raw.total.as_secs_f64() / sluice.total.as_secs_f64()
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
fn raw_consumers(args: &Args, topic: &str) -> anyhow::Result<Times> {
    let dir = tempfile::tempdir()?;
    let group = unique("bench-pull-raw");
    let read = Arc::new(AtomicUsize::new(0));
    let first = Arc::new(std::sync::OnceLock::new());
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
            let (read, want, first) = (read.clone(), args.records, first.clone());
            Ok(std::thread::spawn(move || {
                let mut since_commit = 0;
                while read.load(Ordering::SeqCst) < want
                    && started.elapsed() < Duration::from_secs(600)
                {
                    match consumer.poll(Duration::from_millis(100)) {
                        Some(Ok(m)) => {
                            let _ = out.write_all(m.payload().unwrap_or_default());
                            let _ = out.write_all(b"\n");
                            first.get_or_init(Instant::now);
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
    let first = *first.get().expect("records were read");
    Ok(Times {
        total: started.elapsed(),
        steady: first.elapsed(),
    })
}

/// A run's time from its start (consumers created, or sluice ready) to the last record, and
/// from its first record to its last: the second leaves out joining the group, which both
/// sides pay once per start.
#[derive(Clone, Copy)]
struct Times {
    total: Duration,
    steady: Duration,
}

/// sluice reading the topic in a fresh group into its file sink; the time from its being
/// ready until the file holds every event.
fn sluice_source(args: &Args, topic: &str) -> anyhow::Result<Times> {
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
{topic_yaml}
  sink:
    - file:
        path: "{{dir}}/events.jsonl"
{file_yaml}
"#,
        topic_yaml = indent(&args.topic_yaml, 10),
        file_yaml = indent(&args.file_yaml, 8),
        partitions = args.partitions,
        bootstrap = args.bootstrap,
        group = unique("bench-pull-sluice"),
    );
    let plugins = tempfile::tempdir()?;
    let cache = sluice_tests::plugin_cache().display().to_string();
    let plugin_dir = plugins.path().display().to_string();
    // From the moment it is ready (connected, its group not yet joined), as the raw side is
    // timed from its consumers' creation: `sluice-bench startup` measures the start itself.
    let sluice = Sluice::start_without_listener_with(
        &yaml,
        &["--plugins", &plugin_dir, "--plugin-cache", &cache],
    );
    let started = Instant::now();
    let path = sluice.path("events.jsonl");
    let mut lines = 0;
    let mut first = None;
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
                    first.get_or_insert_with(Instant::now);
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
    let first = first.expect("lines were read");
    Ok(Times {
        total: started.elapsed(),
        steady: first.elapsed(),
    })
}

/// `text`'s lines, each indented by `n` spaces.
fn indent(text: &str, n: usize) -> String {
    text.lines()
        .map(|l| format!("{}{l}\n", " ".repeat(n)))
        .collect()
}
