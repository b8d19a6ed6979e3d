//! `sluice-bench sinks`: events through HTTP → kafka buffer → json → the s3 sink (SeaweedFS)
//! and → the kafka sink, each against doing the sink's part directly: the same objects put
//! with aws-sdk-s3, the same events produced with raw librdkafka (idempotent, acks=all), in
//! one run on one machine. sluice's time runs from the first POST until the sink reports
//! holding every event (`sluice_sink_eventsWritten`: Kafka acknowledged, the object complete);
//! then the run checks that the buffer committed everything and the sink has every event.
//!
//! Then what exactly once costs (`docs/design/exactly-once.md`), each side by side in the same
//! run: the s3 sink's offset-named objects against `exactly_once: false`, the http sink's
//! (into an endpoint the bench runs) likewise, and raw librdkafka producing with the origin
//! header the kafka sink adds against without. For the sinks, both the sustained rate
//! (until 95 % of the events are in the sink) and the whole run (until the last one is: an
//! exactly-once object of a partition that went quiet waits `delay` + 1 s longer).

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

/// How long a sluice run took: until 95 % of the events were in the sink, and until all.
#[derive(Clone, Copy)]
struct Took {
    most: Duration,
    all: Duration,
}

impl Took {
    const NONE: Took = Took {
        most: Duration::MAX,
        all: Duration::MAX,
    };

    fn best(self, other: Took) -> Took {
        Took {
            most: self.most.min(other.most),
            all: self.all.min(other.all),
        }
    }
}

/// The events of one request body.
pub(crate) fn body(request: usize, events: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
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
    let endpoint = Endpoint::start()?;
    let (mut direct_s3, mut raw_kafka, mut raw_headers) =
        (Duration::MAX, Duration::MAX, Duration::MAX);
    let [
        mut s3_once,
        mut s3_least,
        mut kafka,
        mut http_once,
        mut http_least,
    ] = [Took::NONE; 5];
    for round in 1..=args.rounds {
        println!("round {round} of {}", args.rounds);
        direct_s3 =
            direct_s3.min(runtime.block_on(put_directly(&store, &events, args.object_events))?);
        let sluice = |sink| through_sluice(args, &bodies, n, sink, &runtime);
        s3_once = s3_once.best(sluice(Sink::S3(&store, true))?);
        s3_least = s3_least.best(sluice(Sink::S3(&store, false))?);
        raw_kafka =
            raw_kafka.min(runtime.block_on(produce_directly(&args.bootstrap, &events, false))?);
        raw_headers =
            raw_headers.min(runtime.block_on(produce_directly(&args.bootstrap, &events, true))?);
        kafka = kafka.best(sluice(Sink::Kafka)?);
        http_once = http_once.best(sluice(Sink::Http(&endpoint, true))?);
        http_least = http_least.best(sluice(Sink::Http(&endpoint, false))?);
    }
    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    println!("best of {} rounds:", args.rounds);
    for (what, took) in [
        ("aws-sdk-s3 PutObject of the same objects", direct_s3),
        ("raw librdkafka produce of the same events", raw_kafka),
        ("raw librdkafka, with the origin header", raw_headers),
    ] {
        println!(
            "{what:<48} {:>6.2} s  {:>9.0} events/s",
            took.as_secs_f64(),
            rate(took)
        );
    }
    for (what, took) in [
        ("sluice → s3 sink (exactly once, the default)", s3_once),
        ("sluice → s3 sink (exactly_once: false)", s3_least),
        ("sluice → kafka sink", kafka),
        ("sluice → http sink (exactly once, the default)", http_once),
        ("sluice → http sink (exactly_once: false)", http_least),
    ] {
        println!(
            "{what:<48} {:>6.2} s  {:>9.0} events/s  (95 %: {:.2} s, {:.0} events/s)",
            took.all.as_secs_f64(),
            rate(took.all),
            took.most.as_secs_f64(),
            0.95 * rate(took.most)
        );
    }
    println!(
        "ratio s3 sink (exactly_once: false) / direct aws-sdk-s3: {:.2}    kafka sink / raw librdkafka: {:.2} (/ raw with the origin header: {:.2})",
        rate(s3_least.all) / rate(direct_s3),
        rate(kafka.all) / rate(raw_kafka),
        rate(kafka.all) / rate(raw_headers)
    );
    println!(
        "exactly once / at least once, sustained (95 %): s3 {:.2}  http {:.2}    whole run: s3 {:.2}  http {:.2}",
        rate(s3_once.most) / rate(s3_least.most),
        rate(http_once.most) / rate(http_least.most),
        rate(s3_once.all) / rate(s3_least.all),
        rate(http_once.all) / rate(http_least.all),
    );
    println!(
        "raw librdkafka with the origin header / without: {:.2}",
        rate(raw_headers) / rate(raw_kafka)
    );
    Ok(())
}

/// The sink a sluice run writes to; `bool`: `exactly_once`.
#[derive(Clone, Copy)]
enum Sink<'a> {
    S3(&'a S3Store, bool),
    Kafka,
    Http(&'a Endpoint, bool),
}

/// An HTTP endpoint that takes every request (200) and counts the lines of the bodies.
struct Endpoint {
    port: u16,
    lines: Arc<AtomicUsize>,
}

impl Endpoint {
    fn start() -> anyhow::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let lines = Arc::new(AtomicUsize::new(0));
        let counted = lines.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let counted = counted.clone();
                std::thread::spawn(move || serve(conn, &counted));
            }
        });
        Ok(Self { port, lines })
    }
}

/// Answers 200 to each request of one connection, counting its body's lines.
fn serve(mut conn: std::net::TcpStream, lines: &AtomicUsize) {
    use std::io::{Read as _, Write as _};
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + length {
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = &buf[head_end..head_end + length];
        let n = body.iter().filter(|b| **b == b'\n').count()
            + usize::from(body.last().is_some_and(|b| *b != b'\n'));
        lines.fetch_add(n, Ordering::SeqCst);
        buf.drain(..head_end + length);
        if conn
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            .is_err()
        {
            return;
        }
    }
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
async fn produce_directly(
    bootstrap: &str,
    events: &[Vec<u8>],
    origin_headers: bool,
) -> anyhow::Result<Duration> {
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
    for (i, e) in events.iter().enumerate() {
        let mut record = FutureRecord::<(), [u8]>::to(&topic).payload(&e[..]);
        if origin_headers {
            // What the kafka sink adds to each record (`sluice_kafka::Origin`).
            let origin = format!("{topic}/0/{}/{}", i / 100, i % 100);
            record = record.headers(rdkafka::message::OwnedHeaders::new().insert(
                rdkafka::message::Header {
                    key: "sluice-origin",
                    value: Some(origin.as_str()),
                },
            ));
        }
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
) -> anyhow::Result<Took> {
    let (buffer, group) = (unique("bench-sink-buf"), unique("bench-sink-g"));
    let out_topic = unique("bench-sink-out");
    let bucket = unique("bench-sluice").to_lowercase().replace('_', "-");
    let sink_yaml = match sink {
        Sink::S3(store, exactly_once) => {
            runtime.block_on(store.create_bucket(&bucket));
            format!(
                "    - s3:\n        aws:\n          region: us-east-1\n          endpoint: {}\n        bucket: {bucket}\n        threshold:\n          event_count: {}\n          event_collect_timeout: 2s\n        exactly_once: {exactly_once}\n",
                store.endpoint(),
                args.object_events
            )
        }
        Sink::Http(endpoint, exactly_once) => format!(
            "    - http:\n        url: http://127.0.0.1:{}/ingest\n        threshold:\n          max_events: {}\n          flush_timeout: 2s\n        exactly_once: {exactly_once}\n",
            endpoint.port, args.object_events
        ),
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
        Sink::S3(store, _) => store.env().to_vec(),
        Sink::Kafka | Sink::Http(..) => Vec::new(),
    };
    let lines_before = match sink {
        Sink::Http(endpoint, _) => endpoint.lines.load(Ordering::SeqCst),
        _ => 0,
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
        &|| written() >= warm_events.len() + n * 95 / 100,
        Duration::from_secs(600),
    )?;
    let most = started.elapsed();
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
        Sink::Http(endpoint, _) => endpoint.lines.load(Ordering::SeqCst) - lines_before,
        Sink::S3(store, _) => runtime
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
    Ok(Took { most, all: took })
}

pub(crate) fn wait(done: &dyn Fn() -> bool, within: Duration) -> anyhow::Result<()> {
    let started = Instant::now();
    while !done() {
        ensure!(started.elapsed() < within, "not done within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Posts every body once, from `clients` threads.
pub(crate) fn post(url: &str, bodies: &[Vec<u8>], clients: usize) -> anyhow::Result<()> {
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
