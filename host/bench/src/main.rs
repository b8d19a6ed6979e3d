//! `sluice-bench kafka`: on one broker, in one run, the same payload set through
//! 1. raw librdkafka: an idempotent acks=all producer and a group consumer committing every
//!    1000 records, running at once, until the consumer has every record;
//! 2. sluice end to end: HTTP POSTs (concurrent clients) → kafka buffer → json plugin → file
//!    sink, until the file holds every event.
//! It prints both throughputs and their ratio (target ≥ 0.8). Not a test: figures depend on
//! the machine; compare them only within one run.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use clap::Parser;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};

#[derive(Parser)]
#[command(about = "sluice end to end against raw librdkafka, as a ratio measured in one run")]
struct Args {
    /// The broker, `host:port`.
    #[arg(long)]
    bootstrap: String,
    /// Request bodies (= Kafka records) in the payload set.
    #[arg(long, default_value_t = 20_000)]
    requests: usize,
    /// JSON events per request body.
    #[arg(long, default_value_t = 10)]
    events: usize,
    /// Bytes of text per event.
    #[arg(long, default_value_t = 100)]
    event_bytes: usize,
    /// Concurrent HTTP clients posting to sluice.
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// Partitions of each topic (and consumers of each side).
    #[arg(long, default_value_t = 2)]
    partitions: i32,
    /// The plugin folder for sluice (`plugins/target/wasm32-wasip2/release`).
    #[arg(long)]
    plugins: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let bodies = payloads(&args);
    let bytes: usize = bodies.iter().map(Vec::len).sum();
    println!(
        "payload set: {} requests x {} events ({:.1} MB), {} partitions, {} HTTP clients, {} cores",
        args.requests,
        args.events,
        bytes as f64 / 1e6,
        args.partitions,
        args.clients,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let runtime = tokio::runtime::Runtime::new()?;
    let raw = runtime.block_on(raw_librdkafka(&args, &bodies))?;
    println!(
        "raw librdkafka produce+consume: {:>8.2} s  {:>9.0} records/s  {:>9.0} events/s",
        raw.as_secs_f64(),
        args.requests as f64 / raw.as_secs_f64(),
        (args.requests * args.events) as f64 / raw.as_secs_f64()
    );
    let sluice = sluice_end_to_end(&args, &bodies)?;
    println!(
        "sluice http→kafka→json→file:    {:>8.2} s  {:>9.0} records/s  {:>9.0} events/s",
        sluice.as_secs_f64(),
        args.requests as f64 / sluice.as_secs_f64(),
        (args.requests * args.events) as f64 / sluice.as_secs_f64()
    );
    println!(
        "ratio sluice/raw throughput: {:.2} (target >= 0.80)",
        raw.as_secs_f64() / sluice.as_secs_f64()
    );
    Ok(())
}

/// Request bodies: JSON arrays of `events` objects of about `event_bytes` each.
fn payloads(args: &Args) -> Vec<Vec<u8>> {
    let text = "x".repeat(args.event_bytes);
    (0..args.requests)
        .map(|r| {
            let events: Vec<_> = (0..args.events)
                .map(|e| serde_json::json!({"request": r, "event": e, "message": text}))
                .collect();
            serde_json::to_vec(&events).expect("serializable")
        })
        .collect()
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{prefix}-{}-{nanos}", std::process::id())
}

async fn create_topic(bootstrap: &str, topic: &str, partitions: i32) -> anyhow::Result<()> {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    let admin: AdminClient<_> = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()?;
    let topics = [NewTopic::new(topic, partitions, TopicReplication::Fixed(1))];
    for result in admin.create_topics(&topics, &AdminOptions::new()).await? {
        result.map_err(|(t, e)| anyhow::anyhow!("creating {t}: {e}"))?;
    }
    Ok(())
}

/// Produces every body while a group consumer reads them; the time until it has all.
async fn raw_librdkafka(args: &Args, bodies: &[Vec<u8>]) -> anyhow::Result<Duration> {
    let topic = unique("bench-raw");
    create_topic(&args.bootstrap, &topic, args.partitions).await?;
    let producer: FutureProducer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", &args.bootstrap)
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .create()?;
    let want = bodies.len() + WARM_UP;
    let consumed = Arc::new(AtomicUsize::new(0));
    let mut consumers = Vec::new();
    let group = unique("bench-raw-group");
    for _ in 0..args.partitions {
        let consumer: BaseConsumer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", &args.bootstrap)
            .set("group.id", &group)
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .create()?;
        consumer.subscribe(&[&topic])?;
        let consumed = consumed.clone();
        consumers.push(std::thread::spawn(move || {
            let mut since_commit = 0;
            let started = Instant::now();
            while consumed.load(Ordering::SeqCst) < want
                && started.elapsed() < Duration::from_secs(600)
            {
                match consumer.poll(Duration::from_millis(100)) {
                    Some(Ok(_)) => {
                        consumed.fetch_add(1, Ordering::SeqCst);
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
            let _ = consumer.commit_consumer_state(CommitMode::Sync);
        }));
    }
    // Warm up until the consumers have joined and read, as sluice's have before its clock
    // starts.
    for body in &bodies[..WARM_UP] {
        let record = FutureRecord::<(), [u8]>::to(&topic).payload(body.as_slice());
        producer
            .send(record, Duration::from_secs(30))
            .await
            .map_err(|(e, _)| e)?;
    }
    let warm = Instant::now();
    while consumed.load(Ordering::SeqCst) < WARM_UP {
        ensure!(
            warm.elapsed() < Duration::from_secs(120),
            "raw consumers did not warm up"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = Instant::now();
    let mut deliveries = Vec::with_capacity(bodies.len());
    for body in bodies {
        let mut record = FutureRecord::<(), [u8]>::to(&topic).payload(body.as_slice());
        loop {
            match producer.send_result(record) {
                Ok(d) => {
                    deliveries.push(d);
                    break;
                }
                Err((_, back)) => {
                    record = back;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        }
    }
    for d in deliveries {
        d.await?.map_err(|(e, _)| e)?;
    }
    tokio::task::block_in_place(|| {
        for c in consumers {
            let _ = c.join();
        }
    });
    let took = started.elapsed();
    ensure!(
        consumed.load(Ordering::SeqCst) >= want,
        "the raw consumer did not read every record"
    );
    Ok(took)
}

/// Records sent before the clock starts, so both sides are measured with every consumer
/// joined and assigned.
const WARM_UP: usize = 50;

struct Sluice(Child);

impl Drop for Sluice {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sluice_end_to_end(args: &Args, bodies: &[Vec<u8>]) -> anyhow::Result<Duration> {
    let dir = tempfile::tempdir()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let sink = dir.path().join("events.jsonl");
    let topic = unique("bench-sluice");
    let yaml = format!(
        r#"bench-pipeline:
  workers: 2
  delay: 20ms
  source:
    http:
      port: {port}
  buffer:
    kafka:
      bootstrap_servers: [{bootstrap}]
      topics:
        - name: {topic}
          group_id: {topic}-group
          create_topic: true
          number_of_partitions: {partitions}
          workers: {partitions}
          max_poll_records: 500
  sink:
    - file:
        path: {sink}
  dlq_path: {dlq}
"#,
        bootstrap = args.bootstrap,
        partitions = args.partitions,
        sink = sink.display(),
        dlq = dir.path().join("dlq.jsonl").display(),
    );
    let file = dir.path().join("bench.yaml");
    std::fs::write(&file, yaml)?;
    let bin = std::env::current_exe()?
        .parent()
        .context("the bench binary has a folder")?
        .join("sluice");
    let log = dir.path().join("sluice.log");
    let child = Command::new(&bin)
        .arg("run")
        .arg(&file)
        .arg("--plugins")
        .arg(&args.plugins)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let _sluice = Sluice(child);
    let ready = Instant::now();
    let url = format!("http://127.0.0.1:{port}/log/ingest");
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if ready.elapsed() > Duration::from_secs(60) {
            bail!(
                "sluice did not listen within 60 s:\n{}",
                std::fs::read_to_string(&log)?
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Warm up until every consumer has joined and read, as the raw run does.
    for body in &bodies[..WARM_UP] {
        ensure!(
            ureq::post(&url).send(&body[..])?.status() == 200,
            "warm-up request refused"
        );
    }
    let warmed = wait_for_lines(&sink, WARM_UP * args.events, Duration::from_secs(120))?;

    let want_events = bodies.len() * args.events;
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let clients: Vec<_> = (0..args.clients)
        .map(|_| {
            let next = next.clone();
            let bodies = bodies.to_vec();
            let url = url.clone();
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
                        let status = agent.post(&url).send(&body[..])?.status().as_u16();
                        match status {
                            200 => break,
                            503 => std::thread::sleep(Duration::from_millis(10)),
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
    let lines = wait_for_lines(&sink, warmed + want_events, Duration::from_secs(600))?;
    let took = started.elapsed();
    println!(
        "  (sluice: every request answered 200 after {:.2} s, every event in the file after {:.2} s)",
        posted.as_secs_f64(),
        took.as_secs_f64()
    );
    ensure!(
        lines == warmed + want_events,
        "the sink has {} events, expected {want_events}",
        lines - warmed
    );
    Ok(took)
}

/// Counts lines as the file grows until it has `want`.
fn wait_for_lines(path: &Path, want: usize, timeout: Duration) -> anyhow::Result<usize> {
    let started = Instant::now();
    let mut lines = 0;
    let mut offset = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    while lines < want {
        ensure!(
            started.elapsed() < timeout,
            "the sink had {lines} of {want} events after {timeout:?}"
        );
        if let Ok(mut f) = std::fs::File::open(path) {
            f.seek(SeekFrom::Start(offset))?;
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                offset += n as u64;
                lines += buf[..n].iter().filter(|b| **b == b'\n').count();
            }
        }
        if lines < want {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    Ok(lines)
}
