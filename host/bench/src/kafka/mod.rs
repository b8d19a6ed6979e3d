//! `sluice-bench kafka`: on one broker, in one run, the same payload set through
//! 1. raw librdkafka: an idempotent acks=all producer and a group consumer committing every
//!    1000 records, running at once, until the consumer has every record;
//! 2. sluice end to end: HTTP POSTs (concurrent clients) → kafka buffer → json plugin → file
//!    sink, until the file holds every event, plain, with encryption, with 3 pass-through
//!    processors, and with the `passthrough_buffer` policy component in front of Kafka.
//!
//! It prints the throughputs and their ratio (target ≥ 0.8), and a line that explains the gap:
//! raw librdkafka with the HTTP source's pattern (each of `clients` senders waits for its
//! record's acknowledgement before the next, as a client of a source that answers only once
//! Kafka has the record must). CPU seconds per process show where the machine went. Then the
//! peak RSS of those runs, and a run with the sink stalled. Not a test: figures depend on the
//! machine; compare them only within one run.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::ensure;

pub(crate) mod curves;
pub(crate) mod otlp;
pub(crate) mod processors;
pub(crate) mod pull;
mod raw;
mod sluice;

use raw::raw_librdkafka;
use sluice::{BENCH_ENCRYPTION, E2e, Shape, sluice_end_to_end, stalled_sink};

/// Records sent before the clock starts, so both sides are measured with every consumer
/// joined and assigned (at least one for each pipeline: see [`Args::warm_up`]).
const WARM_UP: usize = 50;

#[derive(clap::Args, Clone)]
pub(crate) struct Args {
    /// The broker, `host:port`.
    #[arg(long)]
    bootstrap: String,
    /// Request bodies (= Kafka records) in the payload set.
    #[arg(long, default_value_t = 5_000)]
    requests: usize,
    /// JSON events per request body (log shippers batch: Fluent Bit sends hundreds).
    #[arg(long, default_value_t = 100)]
    events: usize,
    /// Bytes of text per event.
    #[arg(long, default_value_t = 100)]
    event_bytes: usize,
    /// Concurrent HTTP clients posting to sluice.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Partitions of each topic (and consumers of each side).
    #[arg(long, default_value_t = 2)]
    partitions: i32,
    /// Consumers of each side: the topic's `workers` and the pipeline's `workers` for sluice,
    /// consumer threads in one group for raw librdkafka (default: one per partition, the
    /// pipeline's `workers: 2`).
    #[arg(long)]
    workers: Option<usize>,
    /// Pipelines in one sluice process, each with its own topic, port and file, the payload set
    /// spread over them in turn (raw librdkafka: as many topics, each with its consumers).
    #[arg(long, default_value_t = 1)]
    pipelines: usize,
    /// Extra lines for sluice's `kafka:` block, e.g. `producer_properties: {linger.ms: 20}`
    /// (for experiments; the defaults are what is reported).
    #[arg(long, default_value = "")]
    kafka_yaml: String,
    /// The plugin folder for sluice (`plugins/target/wasm32-wasip2/release`).
    #[arg(long)]
    plugins: PathBuf,
    /// Times each of the seven runs is repeated (in turn); the best of each is reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// How long the stalled-sink run keeps the sink blocked while clients post.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    stall: Duration,
}

/// What the benches of their own payloads (`otlp`, `processors`) share: the broker, the
/// sizes and the rounds of their end-to-end runs.
#[derive(clap::Args, Clone)]
pub(crate) struct Runs {
    /// The broker, `host:port`.
    #[arg(long)]
    bootstrap: String,
    /// Request bodies (= Kafka records) in the payload set.
    #[arg(long, default_value_t = 2_000)]
    requests: usize,
    /// Concurrent HTTP clients.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Partitions of each topic (and consumers of each side).
    #[arg(long, default_value_t = 2)]
    partitions: i32,
    /// The plugin folder for sluice (`plugins/target/wasm32-wasip2/release`).
    #[arg(long)]
    plugins: PathBuf,
    /// Times each run is repeated (in turn); the best of each is reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Extra lines for sluice's `kafka:` block, as `sluice-bench kafka --kafka-yaml`.
    #[arg(long, default_value = "")]
    kafka_yaml: String,
}

impl Args {
    /// The settings other benches (`otlp`, `processors`, `curves`) run end to end with: their
    /// broker, plugins, clients and rounds; one pipeline on 2 partitions, a consumer for each;
    /// no stalled-sink run. The caller sets the payload.
    fn base(bootstrap: &str, plugins: &std::path::Path, clients: usize, rounds: usize) -> Self {
        Args {
            bootstrap: bootstrap.to_owned(),
            requests: 0,
            events: 0,
            event_bytes: 0,
            clients,
            partitions: 2,
            workers: None,
            pipelines: 1,
            kafka_yaml: String::new(),
            plugins: plugins.to_owned(),
            rounds,
            stall: Duration::ZERO,
        }
    }

    /// Consumer threads of each topic.
    fn consumers(&self) -> usize {
        self.workers
            .unwrap_or_else(|| usize::try_from(self.partitions).unwrap_or(1))
    }

    /// Records sent before the clock starts: [`WARM_UP`], or one for each pipeline.
    fn warm_up(&self) -> usize {
        WARM_UP.max(self.pipelines)
    }
}

impl Runs {
    /// The end-to-end runs' settings for bodies of `events` events each.
    fn kafka(&self, events: usize) -> Args {
        Args {
            requests: self.requests,
            events,
            partitions: self.partitions,
            kafka_yaml: self.kafka_yaml.clone(),
            ..Args::base(&self.bootstrap, &self.plugins, self.clients, self.rounds)
        }
    }
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let args = args.clone();
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
    // The seven runs, `rounds` times in turn; each figure is the best of its rounds, the one
    // least disturbed by the rest of a shared machine.
    let (mut raw, mut acked) = (Duration::MAX, Duration::MAX);
    let (mut sluice, mut sealed, mut chained, mut policy, mut once) = (
        None::<E2e>,
        None::<E2e>,
        None::<E2e>,
        None::<E2e>,
        None::<E2e>,
    );
    let best = |current: Option<E2e>, new: E2e| match current {
        Some(c) if c.took <= new.took => Some(E2e {
            peak_rss: c.peak_rss.max(new.peak_rss),
            ..c
        }),
        Some(c) => Some(E2e {
            peak_rss: c.peak_rss.max(new.peak_rss),
            ..new
        }),
        None => Some(new),
    };
    for round in 1..=args.rounds {
        println!("round {round} of {}", args.rounds);
        raw = raw.min(runtime.block_on(raw_librdkafka(&args, &bodies, None))?);
        acked = acked.min(runtime.block_on(raw_librdkafka(&args, &bodies, Some(args.clients)))?);
        let plain = Shape::default();
        sluice = best(sluice, sluice_end_to_end(&args, &bodies, plain)?);
        // Every record sealed (AES-256-GCM; a static key, so KMS is not measured: with KMS it
        // is one call per data-key lifetime).
        let encrypted = Shape {
            extra: BENCH_ENCRYPTION,
            ..plain
        };
        sealed = best(sealed, sluice_end_to_end(&args, &bodies, encrypted)?);
        // Three processors that keep every event: what the processor stages cost by themselves.
        let processors = Shape {
            processors: 3,
            ..plain
        };
        chained = best(chained, sluice_end_to_end(&args, &bodies, processors)?);
        // The same Kafka block as the one tier of a buffer policy component that places every
        // record there: what a policy call per write costs.
        let through_policy = Shape {
            policy: Some("passthrough_buffer"),
            ..plain
        };
        policy = best(policy, sluice_end_to_end(&args, &bodies, through_policy)?);
        // The plain run's file sink writes each event once (its record of offsets); the same
        // at least once: what exactly-once costs the file sink.
        let at_least_once = Shape {
            at_least_once: true,
            ..plain
        };
        once = best(once, sluice_end_to_end(&args, &bodies, at_least_once)?);
    }
    let once = once.expect("one round");
    let (sluice, sealed) = (sluice.expect("one round"), sealed.expect("one round"));
    let (chained, policy) = (chained.expect("one round"), policy.expect("one round"));
    println!("best of {} rounds:", args.rounds);
    throughput("raw librdkafka produce+consume", raw, &args);
    let label = format!("raw, {} senders each awaiting its ack", args.clients);
    throughput(&label, acked, &args);
    throughput("sluice http→kafka→json→file", sluice.took, &args);
    throughput("sluice with encryption", sealed.took, &args);
    throughput("sluice + 3 pass-through processors", chained.took, &args);
    throughput("sluice, passthrough_buffer over kafka", policy.took, &args);
    throughput("sluice, file sink at least once", once.took, &args);
    println!(
        "ratio sluice/raw throughput: {:.2} (target >= 0.80)",
        raw.as_secs_f64() / sluice.took.as_secs_f64()
    );
    println!(
        "ratio sluice/raw with the same acknowledged-per-request pattern: {:.2}",
        acked.as_secs_f64() / sluice.took.as_secs_f64()
    );
    println!(
        "ratio encryption on/off: {:.2}; ratio sluice with encryption/raw: {:.2}",
        sluice.took.as_secs_f64() / sealed.took.as_secs_f64(),
        raw.as_secs_f64() / sealed.took.as_secs_f64()
    );
    println!(
        "ratio with 3 pass-through processors/without: {:.2}",
        sluice.took.as_secs_f64() / chained.took.as_secs_f64()
    );
    println!(
        "ratio through the passthrough_buffer policy/the built-in kafka buffer: {:.2} (target >= 0.90)",
        sluice.took.as_secs_f64() / policy.took.as_secs_f64()
    );
    println!(
        "ratio file sink exactly once/at least once: {:.2} (goal >= 0.90)",
        once.took.as_secs_f64() / sluice.took.as_secs_f64()
    );
    println!(
        "peak RSS of sluice: {:.0} MiB (plain runs), {:.0} MiB (encrypted runs)",
        mib(sluice.peak_rss),
        mib(sealed.peak_rss)
    );
    let (accepted, peak, delivered) = stalled_sink(&args, &bodies, args.stall)?;
    println!(
        "sink stalled {:?}: {accepted} requests accepted meanwhile (Kafka holds them), peak RSS {:.0} MiB; after the stall {delivered} of {} events delivered",
        args.stall,
        mib(peak),
        accepted * args.events
    );
    ensure!(
        delivered == accepted * args.events,
        "events lost after the stalled sink drained"
    );
    Ok(())
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

/// One result line: time, records/s and events/s over the whole payload set.
fn throughput(label: &str, took: Duration, args: &Args) {
    let secs = took.as_secs_f64();
    println!(
        "{label:<40} {secs:>6.2} s  {:>9.0} records/s  {:>9.0} events/s",
        args.requests as f64 / secs,
        (args.requests * args.events) as f64 / secs
    );
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
