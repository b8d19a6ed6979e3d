//! `sluice-bench wasm`: what the Wasm boundary costs, in one run on one machine.
//!
//! 1. The `json` deserializer (contract 0.2) as a component through the host (`Decoder::decode`,
//!    exactly what a worker calls: staging, the call, checking the reply) against the same Rust
//!    source compiled natively with the same owned outputs (`plugins/json/src/spans.rs`, included
//!    here by path: the events' spans and one outcome per record), over batches of 1, 10, 100
//!    and 1000 records of about 1 KB. Native code making one string per event (`parse.rs`, what
//!    0.1.0 returned) is shown beside it.
//! 2. The logfmt deserializer in Rust, Python and JavaScript on the same input.
//! 3. The processor template (`sluice plugins new --kind processor`) in Rust, Python and
//!    JavaScript on the same events, built with `sluice plugins build` as an author would.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use sluice_plugin::{Decoded, Decoder, Event, Limits, PluginHost, Processed, Processor, RawRecord};

/// The json plugin's parsing, compiled natively.
#[path = "../../../plugins/json/src/parse.rs"]
#[allow(dead_code, reason = "the plugin's file, used here only for `parse`")]
pub(crate) mod json_native;
/// Where the json plugin finds events, compiled natively (it finds `parse` beside it).
#[path = "../../../plugins/json/src/spans.rs"]
pub(crate) mod json_spans;
use json_native as parse;

#[derive(clap::Args, Clone)]
pub(crate) struct Args {
    /// The folder of built plugins (`plugins/target/wasm32-wasip2/release`).
    #[arg(long)]
    plugins: PathBuf,
    /// Records per measurement (each batch size processes this many records in all).
    #[arg(long, default_value_t = 20_000)]
    records: usize,
    /// Where compiled components are cached (the Python and JavaScript ones take seconds).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Only the json comparison (for profiling the host side).
    #[arg(long)]
    json_only: bool,
    /// Only the json component, batches of 100, for this many passes over the records (to
    /// profile the Wasm side alone: `SLUICE_PERFMAP=1 perf record -g sluice-bench wasm ...`).
    #[arg(long)]
    profile_passes: Option<usize>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let host = PluginHost::new(args.cache.clone())?;
    let records: Vec<RawRecord> = (0..args.records).map(json_record).collect();
    let bytes: usize = records.iter().map(|r| r.payload.len()).sum();
    println!(
        "json: {} records of {} bytes on average, {} cores",
        records.len(),
        bytes / records.len().max(1),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let json = host.load_file(&args.plugins.join("json.wasm"))?;
    if let Some(passes) = args.profile_passes {
        let mut decoder = Decoder::new(json, vec![], limits())?;
        for _ in 0..passes {
            for chunk in records.chunks(100) {
                std::hint::black_box(decoder.decode(chunk));
            }
        }
        return Ok(());
    }
    println!(
        "{:>6}  {:>16}  {:>14}  {:>14}  {:>12}",
        "batch", "native strings/s", "native rec/s", "wasm rec/s", "wasm/native"
    );
    for batch in [1, 10, 100, 1000] {
        let mut decoder = Decoder::new(json.clone(), vec![], limits())?;
        // Same outcomes, or the comparison means nothing.
        let check: Vec<Decoded> = decoder.decode(&records[..batch.min(records.len())]);
        let native: Vec<Decoded> = records[..batch.min(records.len())]
            .iter()
            .map(|r| native_outcome(&r.payload))
            .collect();
        anyhow::ensure!(check == native, "wasm and native json disagree");
        // Alternate them, best of five each: the least disturbed by the rest of the machine.
        let (mut strings, mut native, mut wasm) = (Duration::MAX, Duration::MAX, Duration::MAX);
        for _ in 0..5 {
            strings = strings.min(time(|| {
                for chunk in records.chunks(batch) {
                    let out: Vec<Decoded> =
                        chunk.iter().map(|r| native_outcome(&r.payload)).collect();
                    std::hint::black_box(out);
                }
            }));
            native = native.min(time(|| {
                let mut spans = Vec::new();
                for chunk in records.chunks(batch) {
                    spans.clear();
                    let outcomes: Vec<Result<usize, String>> = chunk
                        .iter()
                        .map(|r| {
                            let before = spans.len();
                            json_spans::parse(&r.payload, &mut spans).map(|()| spans.len() - before)
                        })
                        .collect();
                    std::hint::black_box((&spans, outcomes));
                }
            }));
            wasm = wasm.min(time(|| {
                for chunk in records.chunks(batch) {
                    std::hint::black_box(decoder.decode(chunk));
                }
            }));
        }
        let rate = |d: Duration| records.len() as f64 / d.as_secs_f64();
        println!(
            "{batch:>6}  {:>16.0}  {:>14.0}  {:>14.0}  {:>12.2}{}",
            rate(strings),
            rate(native),
            rate(wasm),
            native.as_secs_f64() / wasm.as_secs_f64(),
            if batch >= 100 {
                "  (target >= 0.80)"
            } else {
                ""
            }
        );
    }

    host_check(&records)?;
    if args.json_only {
        return Ok(());
    }
    let lines: Vec<RawRecord> = (0..args.records / 4).map(logfmt_record).collect();
    println!(
        "logfmt: {} records of {} bytes (8 lines each), batches of 100",
        lines.len(),
        lines.iter().map(|r| r.payload.len()).sum::<usize>() / lines.len().max(1)
    );
    let empty: Vec<RawRecord> = (0..lines.len()).map(|i| raw(Vec::new(), i)).collect();
    let mut baseline = None;
    for (name, lang) in [
        ("logfmt", "Rust"),
        ("logfmt_python", "Python"),
        ("logfmt_js", "JavaScript"),
    ] {
        let started = Instant::now();
        let plugin = host
            .load_file(&args.plugins.join(format!("{name}.wasm")))
            .with_context(|| format!("loading {name}"))?;
        let loaded = started.elapsed();
        let started = Instant::now();
        let mut decoder = Decoder::new(plugin.clone(), vec![], limits())?;
        let instantiated = started.elapsed();
        let took = best_of(3, || {
            time(|| {
                for chunk in lines.chunks(100) {
                    std::hint::black_box(decoder.decode(chunk));
                }
            })
        });
        let rate = lines.len() as f64 / took.as_secs_f64();
        let costs = Costs {
            size: plugin.size(),
            loaded,
            instantiated,
            peak_memory: decoder.stats().peak_memory,
        };
        costs.print(lang, rate, *baseline.get_or_insert(rate), "records");
        // The same number of empty records: the call and turning the batch into the language's
        // objects and the reply back, with next to no parsing.
        let floor = best_of(3, || {
            time(|| {
                for chunk in empty.chunks(100) {
                    std::hint::black_box(decoder.decode(chunk));
                }
            })
        });
        print_floor(floor, took, empty.len(), "records");
    }

    // 3. The processor template, as `sluice plugins new --kind processor` writes it and
    //    `sluice plugins build` builds it, on the json events (each edited: tag and time added).
    let bodies: Vec<Vec<u8>> = records.iter().map(|r| r.payload.clone()).collect();
    let events: Vec<Event<'_>> = bodies
        .iter()
        .map(|body| Event {
            body,
            received_at_ms: 1_764_000_000_000,
            origin: "bench",
            metadata: None,
        })
        .collect();
    println!(
        "processor template (`plugins new --kind processor`, option tag): {} events of {} bytes, batches of 100",
        events.len(),
        bytes / events.len().max(1)
    );
    let tagged = vec![
        Event {
            body: br#"{"tag":"bench"}"#,
            ..events[0]
        };
        events.len()
    ];
    let mut baseline = None;
    for (lang, label) in [("rust", "Rust"), ("python", "Python"), ("js", "JavaScript")] {
        let file = sluice_tests::built_template("processor", "stamp", lang);
        let started = Instant::now();
        let plugin = host.load_file(&file)?;
        let loaded = started.elapsed();
        let started = Instant::now();
        let options = vec![("tag".to_owned(), "bench".to_owned())];
        let mut processor = Processor::new(plugin.clone(), options, limits())?;
        let instantiated = started.elapsed();
        let first = processor.process(&events[..1]);
        anyhow::ensure!(
            matches!(&first[..], [Processed::Replace(e, _)] if e.len() == 1),
            "{label} processor: expected one edited event, got {first:?}"
        );
        let took = best_of(3, || {
            time(|| {
                for chunk in events.chunks(100) {
                    std::hint::black_box(processor.process(chunk));
                }
            })
        });
        let rate = events.len() as f64 / took.as_secs_f64();
        // And once more, checked: a component that traps (memory cap, say) is not fast.
        let edited = events
            .chunks(100)
            .flat_map(|chunk| processor.process(chunk))
            .filter(|p| matches!(p, Processed::Replace(e, _) if e.len() == 1))
            .count();
        anyhow::ensure!(
            edited == events.len(),
            "{label} processor: {edited} of {} events edited",
            events.len()
        );
        let costs = Costs {
            size: plugin.size(),
            loaded,
            instantiated,
            peak_memory: processor.stats().peak_memory,
        };
        costs.print(label, rate, *baseline.get_or_insert(rate), "events");
        // As many events that already carry the tag (kept: nothing parsed beyond 14 bytes,
        // nothing written back): the call and the conversion of the batch alone.
        let floor = best_of(3, || {
            time(|| {
                for chunk in tagged.chunks(100) {
                    std::hint::black_box(processor.process(chunk));
                }
            })
        });
        print_floor(floor, took, tagged.len(), "events");
    }
    Ok(())
}

/// What one language's component costs besides its rate.
struct Costs {
    size: u64,
    loaded: Duration,
    instantiated: Duration,
    peak_memory: u64,
}

impl Costs {
    fn print(&self, lang: &str, rate: f64, rust: f64, unit: &str) {
        println!(
            "  {lang:<10} {rate:>9.0} {unit}/s  {:>5.2} of Rust  component {:>5.1} MiB, load {:>8.2?}, instantiate {:>8.2?}, linear memory peak {:>5.1} MiB",
            rate / rust,
            self.size as f64 / f64::from(1 << 20),
            self.loaded,
            self.instantiated,
            self.peak_memory as f64 / f64::from(1 << 20),
        );
    }
}

/// The floor under a plugin's rate: items/s when the plugin has next to nothing to do, and the
/// share of the real run's time that is the plugin's own work above that floor.
fn print_floor(floor: Duration, took: Duration, items: usize, unit: &str) {
    println!(
        "  {:<10} {:>9.0} {unit}/s  call and conversion alone (nothing to parse): the plugin's own work is {:.0} % of its time",
        "",
        items as f64 / floor.as_secs_f64(),
        100.0 * (1.0 - floor.as_secs_f64() / took.as_secs_f64()).max(0.0)
    );
}

fn limits() -> Limits {
    Limits {
        // The bench measures throughput, not the deadline.
        timeout: Duration::from_secs(30),
        recycle_after: 0,
        ..Limits::default()
    }
}

/// The pipeline's check of each event a plugin returns (one JSON object), on the json records
/// as events: serde_json borrowing each (what the pipeline did before) against the scan it
/// does now, agreeing on each.
fn host_check(records: &[RawRecord]) -> anyhow::Result<()> {
    let serde_check = |text: &[u8]| {
        serde_json::from_slice::<&serde_json::value::RawValue>(text)
            .is_ok_and(|raw| raw.get().starts_with('{'))
    };
    for r in records {
        anyhow::ensure!(
            serde_check(&r.payload) == sluice_scan::object(&r.payload).is_some(),
            "the scan and serde_json disagree on a record"
        );
    }
    let (mut serde, mut scan) = (Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        serde = serde.min(time(|| {
            for r in records {
                std::hint::black_box(serde_check(&r.payload));
            }
        }));
        scan = scan.min(time(|| {
            for r in records {
                std::hint::black_box(sluice_scan::object(&r.payload));
            }
        }));
    }
    let rate = |d: Duration| records.len() as f64 / d.as_secs_f64();
    println!(
        "host check of each event: serde_json {:.0}/s, scan {:.0}/s ({:.1} times as fast)",
        rate(serde),
        rate(scan),
        serde.as_secs_f64() / scan.as_secs_f64()
    );
    Ok(())
}

fn native_outcome(payload: &[u8]) -> Decoded {
    match json_native::parse(payload) {
        Ok(events) => Decoded::Events(events.into()),
        Err(reason) => Decoded::Malformed(reason),
    }
}

/// One JSON object of about 1 KB, shaped like a log event.
pub(crate) fn json_record(i: usize) -> RawRecord {
    let message = format!(
        "GET /api/v1/items/{i} 200 {}",
        "lorem ipsum dolor sit amet ".repeat(30)
    );
    let payload = serde_json::json!({
        "time": "2026-12-02T10:00:00.000Z",
        "level": if i.is_multiple_of(10) { "warn" } else { "info" },
        "host": format!("web-{}", i % 16),
        "request_id": format!("{i:016x}"),
        "latency_ms": i % 250,
        "tags": ["http", "api", "v1"],
        "message": message,
    })
    .to_string();
    raw(payload.into_bytes(), i)
}

/// Eight logfmt lines of about 128 bytes each.
fn logfmt_record(i: usize) -> RawRecord {
    let lines: Vec<String> = (0..8)
        .map(|j| {
            format!(
                "ts=2026-12-02T10:00:{:02}Z level=info host=web-{} req={i:08x}-{j} msg=\"GET /api/items/{j} ok\" took=12ms cached",
                j * 7 % 60,
                i % 16
            )
        })
        .collect();
    raw(lines.join("\n").into_bytes(), i)
}

fn raw(payload: Vec<u8>, i: usize) -> RawRecord {
    RawRecord {
        payload,
        key: None,
        received_at_ms: 1_764_000_000_000,
        origin: format!("bench/0@{i}"),
    }
}

fn time(f: impl FnOnce()) -> Duration {
    let started = Instant::now();
    f();
    started.elapsed()
}

/// The fastest of `n` runs: the least disturbed by the rest of the machine.
fn best_of(n: usize, mut f: impl FnMut() -> Duration) -> Duration {
    (0..n).map(|_| f()).min().unwrap_or_default()
}
