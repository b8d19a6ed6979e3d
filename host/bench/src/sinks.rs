//! `sluice-bench sinks`: events through HTTP → kafka buffer → json → the s3 sink (SeaweedFS)
//! and → the kafka sink, each against doing the sink's part directly: the same objects put
//! with aws-sdk-s3, the same events produced with raw librdkafka (idempotent, acks=all), in
//! one run on one machine. sluice's time runs from the first POST until the sink reports
//! holding every event (`sluice_sink_eventsWritten`: Kafka acknowledged, the object complete);
//! then the run checks that the buffer committed everything and the sink has every event.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure};
use rdkafka::producer::{FutureProducer, FutureRecord};
use sluice_tests::{S3Store, Sluice, committed_and_end, unique};

#[derive(clap::Args, Clone)]
pub(crate) struct Args {
    /// The broker, `host:port`.
    #[arg(long)]
    bootstrap: String,
    /// Request bodies posted to sluice.
    #[arg(long, default_value_t = 1_000)]
    requests: usize,
    /// JSON events per request body.
    #[arg(long, default_value_t = 100)]
    events: usize,
    /// Concurrent HTTP clients posting to sluice.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Events per S3 object (the s3 sink's `threshold.event_count`).
    #[arg(long, default_value_t = 10_000)]
    object_events: usize,
    /// The plugin folder (`plugins/target/wasm32-wasip2/release`).
    #[arg(long)]
    plugins: PathBuf,
    /// Times each run is repeated (in turn); the best of each is reported.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
}

/// The events of one request body.
fn body(request: usize, events: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
    let events: Vec<Vec<u8>> = (0..events)
        .map(|i| {
            serde_json::to_vec(&serde_json::json!({
                "id": format!("r{request}-e{i}"),
                "host": format!("host-{}", i % 8),
                "message": "GET /index.html 200 1043 0.012 Mozilla/5.0 (X11; Linux x86_64)",
            }))
            .expect("serializes")
        })
        .collect();
    let mut array = b"[".to_vec();
    array.extend(events.join(&b","[..]));
    array.push(b']');
    (array, events)
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (bodies, events): (Vec<Vec<u8>>, Vec<Vec<Vec<u8>>>) =
        (0..args.requests).map(|r| body(r, args.events)).unzip();
    let events: Vec<Vec<u8>> = events.into_iter().flatten().collect();
    let n = events.len();
    let bytes: usize = events.iter().map(|e| e.len() + 1).sum();
    println!(
        "payload set: {} requests x {} events = {n} events ({:.1} MB as JSON lines), {} clients, {} events per object",
        args.requests,
        args.events,
        bytes as f64 / 1e6,
        args.clients,
        args.object_events
    );
    let runtime = tokio::runtime::Runtime::new()?;
    let store = S3Store::start();
    let (mut direct_s3, mut sluice_s3) = (Duration::MAX, Duration::MAX);
    let (mut raw_kafka, mut sluice_kafka) = (Duration::MAX, Duration::MAX);
    for round in 1..=args.rounds {
        println!("round {round} of {}", args.rounds);
        direct_s3 =
            direct_s3.min(runtime.block_on(put_directly(&store, &events, args.object_events))?);
        sluice_s3 = sluice_s3.min(through_sluice(
            args,
            &bodies,
            n,
            Sink::S3(&store),
            &runtime,
        )?);
        raw_kafka = raw_kafka.min(runtime.block_on(produce_directly(&args.bootstrap, &events))?);
        sluice_kafka = sluice_kafka.min(through_sluice(args, &bodies, n, Sink::Kafka, &runtime)?);
    }
    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    println!("best of {} rounds:", args.rounds);
    for (what, took) in [
        ("aws-sdk-s3 PutObject of the same objects", direct_s3),
        ("sluice http → kafka buffer → s3 sink", sluice_s3),
        ("raw librdkafka produce of the same events", raw_kafka),
        ("sluice http → kafka buffer → kafka sink", sluice_kafka),
    ] {
        println!(
            "{what:<44} {:>6.2} s  {:>9.0} events/s",
            took.as_secs_f64(),
            rate(took)
        );
    }
    println!(
        "ratio s3 sink / direct aws-sdk-s3: {:.2}    kafka sink / raw librdkafka: {:.2}",
        rate(sluice_s3) / rate(direct_s3),
        rate(sluice_kafka) / rate(raw_kafka)
    );
    Ok(())
}

/// The sink a sluice run writes to.
enum Sink<'a> {
    S3(&'a S3Store),
    Kafka,
}

/// The objects the s3 sink makes of `events` (ndjson, `per` events each), put one after the
/// other, as the sink does.
async fn put_directly(store: &S3Store, events: &[Vec<u8>], per: usize) -> anyhow::Result<Duration> {
    let bucket = unique("bench-direct").to_lowercase().replace('_', "-");
    store.create_bucket(&bucket).await;
    let client = store.client(sluice_tests::s3::S3_SECRET_KEY).await;
    let objects: Vec<Vec<u8>> = events
        .chunks(per)
        .map(|chunk| {
            let mut body = Vec::new();
            for e in chunk {
                body.extend_from_slice(e);
                body.push(b'\n');
            }
            body
        })
        .collect();
    let started = Instant::now();
    for (i, body) in objects.into_iter().enumerate() {
        client
            .put_object()
            .bucket(&bucket)
            .key(format!("direct/events-{i}.ndjson"))
            .content_type("application/x-ndjson")
            .body(body.into())
            .send()
            .await
            .map_err(|e| anyhow::anyhow!("{}", aws_sdk_s3::error::DisplayErrorContext(e)))?;
    }
    Ok(started.elapsed())
}

/// Every event produced to a fresh topic by an idempotent acks=all producer; the time until
/// every delivery is acknowledged.
async fn produce_directly(bootstrap: &str, events: &[Vec<u8>]) -> anyhow::Result<Duration> {
    let topic = unique("bench-raw-sink");
    sluice_tests::create_topic(bootstrap, &topic, 2)
        .await
        .map_err(anyhow::Error::msg)?;
    let producer: FutureProducer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .create()?;
    let started = Instant::now();
    let mut deliveries = Vec::with_capacity(events.len());
    for e in events {
        let mut record = FutureRecord::<(), [u8]>::to(&topic).payload(&e[..]);
        loop {
            match producer.send_result(record) {
                Ok(d) => break deliveries.push(d),
                Err((_, back)) => {
                    record = back;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        }
    }
    for d in deliveries {
        d.await?.map_err(|(e, _)| e)?;
    }
    Ok(started.elapsed())
}

/// Posts `bodies` to sluice with `args.clients` clients and waits until the buffer group has
/// committed everything (the sink holds every event); checks the sink got `n` events.
fn through_sluice(
    args: &Args,
    bodies: &[Vec<u8>],
    n: usize,
    sink: Sink<'_>,
    runtime: &tokio::runtime::Runtime,
) -> anyhow::Result<Duration> {
    let (buffer, group) = (unique("bench-sink-buf"), unique("bench-sink-g"));
    let out_topic = unique("bench-sink-out");
    let bucket = unique("bench-sluice").to_lowercase().replace('_', "-");
    let sink_yaml = match sink {
        Sink::S3(store) => {
            runtime.block_on(store.create_bucket(&bucket));
            format!(
                "    - s3:\n        aws:\n          region: us-east-1\n          endpoint: {}\n        bucket: {bucket}\n        threshold:\n          event_count: {}\n          event_collect_timeout: 2s\n",
                store.endpoint(),
                args.object_events
            )
        }
        Sink::Kafka => format!(
            "    - kafka:\n        bootstrap_servers: [{}]\n        topic:\n          name: {out_topic}\n          create_topic: true\n          number_of_partitions: 2\n",
            args.bootstrap
        ),
    };
    let yaml = format!(
        r#"bench-sinks:
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
{sink_yaml}  dlq_path: {{dir}}/dlq.jsonl
"#,
        bootstrap = args.bootstrap,
    );
    let plugins = tempfile::tempdir()?;
    std::fs::copy(
        args.plugins.join("json.wasm"),
        plugins.path().join("json.wasm"),
    )?;
    let env: Vec<(&str, &str)> = match sink {
        Sink::S3(store) => store.env().to_vec(),
        Sink::Kafka => Vec::new(),
    };
    let plugin_dir = plugins.path().display().to_string();
    let process = Sluice::start_with_env_and_args(&yaml, &env, &["--plugins", &plugin_dir]);
    let url = format!("http://127.0.0.1:{}/log/ingest", process.port);
    let committed = || {
        committed_and_end(&args.bootstrap, &buffer, &group)
            .iter()
            .all(|(_, committed, end)| committed == end)
    };
    // What the sink reports holding (Kafka acknowledged, the object complete).
    let written = || {
        let (_, text) = process.get_metrics_server("/metrics");
        sluice_tests::prometheus_value(
            &text,
            "sluice_sink_eventsWritten",
            &[("pipeline", "bench-sinks")],
        )
        .unwrap_or(0.0) as usize
    };
    // Warm up with events of its own (not counted), so the consumers have joined and the
    // sink is connected before the clock starts.
    let (warm_body, warm_events) = body(usize::MAX, args.events);
    post(&url, &[warm_body], 1)?;
    wait(&|| written() == warm_events.len(), Duration::from_secs(120))?;
    let started = Instant::now();
    post(&url, bodies, args.clients)?;
    let posted = started.elapsed();
    wait(
        &|| written() >= warm_events.len() + n,
        Duration::from_secs(600),
    )?;
    let took = started.elapsed();
    println!(
        "  (sluice: every request answered after {:.2} s, every event in the sink after {:.2} s)",
        posted.as_secs_f64(),
        took.as_secs_f64()
    );
    // Offsets are committed after the sink took the events (not timed: the commit interval).
    wait(&committed, Duration::from_secs(120))?;
    let delivered = match sink {
        Sink::S3(store) => runtime
            .block_on(store.objects(&bucket))
            .iter()
            .map(|(_, _, body)| body.iter().filter(|b| **b == b'\n').count())
            .sum::<usize>(),
        Sink::Kafka => committed_and_end(&args.bootstrap, &out_topic, &group)
            .iter()
            .map(|(_, _, end)| *end as usize)
            .sum(),
    };
    ensure!(
        delivered == n + warm_events.len(),
        "the sink holds {delivered} events, expected {}:\n{}",
        n + warm_events.len(),
        process.log()
    );
    Ok(took)
}

fn wait(done: &dyn Fn() -> bool, within: Duration) -> anyhow::Result<()> {
    let started = Instant::now();
    while !done() {
        ensure!(started.elapsed() < within, "not done within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Posts every body once, from `clients` threads.
fn post(url: &str, bodies: &[Vec<u8>], clients: usize) -> anyhow::Result<()> {
    let next = Arc::new(AtomicUsize::new(0));
    let shared = Arc::new(bodies.to_vec());
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let (next, bodies, url) = (next.clone(), shared.clone(), url.to_owned());
            std::thread::spawn(move || -> anyhow::Result<()> {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .build()
                    .into();
                while let Some(body) = bodies.get(next.fetch_add(1, Ordering::SeqCst)) {
                    loop {
                        match agent
                            .post(&url)
                            .header("Content-Type", "application/json")
                            .send(&body[..])?
                            .status()
                            .as_u16()
                        {
                            200 => break,
                            429 | 503 => std::thread::sleep(Duration::from_millis(10)),
                            other => bail!("sluice answered {other}"),
                        }
                    }
                }
                Ok(())
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client thread")?;
    }
    Ok(())
}
