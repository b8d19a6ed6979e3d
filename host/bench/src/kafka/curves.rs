//! `sluice-bench curves`: how sluice's cost grows with the work. Each point of each curve is
//! sluice end to end (HTTP → kafka buffer → deserializer → file) and raw librdkafka producing
//! and consuming the same records, measured side by side in one run on one broker:
//!
//! - events/s against workers (consumer threads of the topic and the pipeline's workers),
//! - against event size (100 B to 64 KB, request bodies of about 64 KB each),
//! - against partitions (one consumer for each),
//! - against pipelines in one process (each its own topic, port and file), with the peak RSS
//!   and the time from `sluice run` to every source listening,
//! - spans/s against OTLP export requests of 1 to 1,000 spans.
//!
//! Each curve is printed as a table with the ratio sluice/raw at every point and drawn as an
//! SVG chart (`--charts`). Not a test: figures depend on the machine; compare them only
//! within one run.

use std::path::PathBuf;
use std::time::Duration;

use crate::chart::{Axis, Series, line_chart};

use super::raw::raw_librdkafka;
use super::sluice::{E2e, Ingest, Shape, sluice_end_to_end};

#[derive(clap::Args, Clone)]
pub(crate) struct Args {
    /// The broker, `host:port`.
    #[arg(long)]
    bootstrap: String,
    /// The plugin folder for sluice (`plugins/target/wasm32-wasip2/release`).
    #[arg(long)]
    plugins: PathBuf,
    /// Request bodies (= Kafka records) at each point of the workers, partitions and
    /// pipelines curves, of `--events` events of 100 bytes each.
    #[arg(long, default_value_t = 5_000)]
    requests: usize,
    /// Events per request body in those curves.
    #[arg(long, default_value_t = 100)]
    events: usize,
    /// Request bodies of about 64 KB at each point of the event-size curve.
    #[arg(long, default_value_t = 800)]
    size_requests: usize,
    /// Spans at each point of the OTLP curve (at most `--requests` export requests).
    #[arg(long, default_value_t = 100_000)]
    spans_total: usize,
    /// Concurrent HTTP clients.
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// The workers curve (4 partitions).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 2, 4])]
    workers: Vec<usize>,
    /// The event-size curve, bytes of text per event.
    #[arg(long, value_delimiter = ',', default_values_t = [100usize, 1_000, 4_000, 16_000, 65_536])]
    sizes: Vec<usize>,
    /// The partitions curve.
    #[arg(long, value_delimiter = ',', default_values_t = [1i32, 2, 4, 8, 12])]
    partitions: Vec<i32>,
    /// The pipelines-in-one-process curve.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 10, 50])]
    pipelines: Vec<usize>,
    /// The OTLP curve, spans per export request.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 10, 100, 1_000])]
    spans: Vec<usize>,
    /// Times each point is measured (in turn); the best is kept.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// The folder the charts (SVG) are written to.
    #[arg(long)]
    charts: PathBuf,
}

/// One point of a curve: the parameter, and both sides' items per second.
struct Point {
    x: f64,
    raw: f64,
    sluice: f64,
    /// Peak RSS of sluice, MiB.
    rss: f64,
    /// From `sluice run` to every source listening, seconds.
    start: f64,
}

impl Args {
    /// The end-to-end settings of one point, before the curve changes its parameter: at least
    /// twice the warm-up's requests.
    fn point(&self, requests: usize, events: usize) -> super::Args {
        super::Args {
            requests: requests.max(2 * super::WARM_UP),
            events,
            event_bytes: 100,
            ..super::Args::base(&self.bootstrap, &self.plugins, self.clients, self.rounds)
        }
    }
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.charts)?;
    let runtime = tokio::runtime::Runtime::new()?;
    // Both sides of one point, best of `rounds`: items (events or spans) per second.
    let measure = |x: f64, point: &super::Args, bodies: &[Vec<u8>], shape: Shape<'_>| {
        let (mut raw, mut sluice) = (Duration::MAX, None::<E2e>);
        for _ in 0..args.rounds.max(1) {
            raw = raw.min(runtime.block_on(raw_librdkafka(point, bodies, None))?);
            let run = sluice_end_to_end(point, bodies, shape)?;
            if sluice.as_ref().is_none_or(|best| run.took < best.took) {
                sluice = Some(run);
            }
        }
        let sluice = sluice.expect("one round");
        let items = (bodies.len() * point.events) as f64;
        anyhow::Ok(Point {
            x,
            raw: items / raw.as_secs_f64(),
            sluice: items / sluice.took.as_secs_f64(),
            rss: super::mib(sluice.peak_rss),
            start: sluice.started_in.as_secs_f64(),
        })
    };
    // A curve of JSON events: each point's bodies made from its settings.
    let json_curve = |points: Vec<(f64, super::Args)>| -> anyhow::Result<Vec<Point>> {
        points
            .iter()
            .map(|(x, point)| measure(*x, point, &super::payloads(point), Shape::default()))
            .collect()
    };

    println!(
        "== events/s against workers (4 partitions, {} requests x {} events of 100 B)",
        args.requests, args.events
    );
    let curve = json_curve(
        (args.workers.iter())
            .map(|&workers| {
                let point = super::Args {
                    partitions: 4,
                    workers: Some(workers),
                    ..args.point(args.requests, args.events)
                };
                (workers as f64, point)
            })
            .collect(),
    )?;
    report(
        args,
        "workers",
        ("workers", Axis::Linear),
        "events/s",
        &curve,
    )?;

    println!(
        "== events/s against event size (request bodies of about 64 KB, {} of them)",
        args.size_requests
    );
    let curve = json_curve(
        (args.sizes.iter())
            .map(|&size| {
                let point = super::Args {
                    event_bytes: size,
                    ..args.point(args.size_requests, (65_536 / size).max(1))
                };
                (size as f64, point)
            })
            .collect(),
    )?;
    report(
        args,
        "event-size",
        ("bytes per event", Axis::Log),
        "events/s",
        &curve,
    )?;

    println!("== events/s against partitions (one consumer each)");
    let curve = json_curve(
        (args.partitions.iter())
            .map(|&partitions| {
                let point = super::Args {
                    partitions,
                    ..args.point(args.requests, args.events)
                };
                (f64::from(partitions), point)
            })
            .collect(),
    )?;
    report(
        args,
        "partitions",
        ("partitions", Axis::Linear),
        "events/s",
        &curve,
    )?;

    println!(
        "== events/s against pipelines in one process (each 1 partition, 1 worker; the requests spread over them)"
    );
    let curve = json_curve(
        (args.pipelines.iter())
            .map(|&pipelines| {
                let point = super::Args {
                    partitions: 1,
                    workers: Some(1),
                    pipelines,
                    ..args.point(args.requests, args.events)
                };
                (pipelines as f64, point)
            })
            .collect(),
    )?;
    report(
        args,
        "pipelines",
        ("pipelines in one process", Axis::Log),
        "events/s",
        &curve,
    )?;
    for (name, y_label, value) in [
        (
            "pipelines-rss",
            "peak RSS, MiB",
            (|p: &Point| p.rss) as fn(&Point) -> f64,
        ),
        (
            "pipelines-start",
            "seconds to every source listening",
            |p: &Point| p.start,
        ),
    ] {
        let path = args.charts.join(format!("{name}.svg"));
        let points = curve.iter().map(|p| (p.x, value(p))).collect();
        line_chart(
            &path,
            y_label,
            ("pipelines in one process", Axis::Log),
            y_label,
            &[Series {
                label: "sluice",
                points,
            }],
        )?;
        println!("chart: {}", path.display());
    }

    println!("== spans/s against spans per OTLP export request (OTLP/HTTP → kafka → otlp → file)");
    let otlp = Shape {
        ingest: Ingest::OtlpTraces,
        ..Shape::default()
    };
    let mut curve = Vec::new();
    for &spans in &args.spans {
        let point = args.point((args.spans_total / spans).min(args.requests), spans);
        let bodies = super::otlp::requests(point.requests, spans);
        curve.push(measure(spans as f64, &point, &bodies, otlp)?);
    }
    report(
        args,
        "otlp-spans",
        ("spans per export request", Axis::Log),
        "spans/s",
        &curve,
    )
}

/// Prints a curve as a table and draws it (`CHARTS/NAME.svg`): raw and sluice against x.
fn report(
    args: &Args,
    name: &str,
    x: (&str, Axis),
    unit: &str,
    curve: &[Point],
) -> anyhow::Result<()> {
    println!(
        "{:>10}  {:>14}  {:>14}  {:>11}  {:>9}  {:>8}",
        x.0.split(' ').next().unwrap_or(x.0),
        format!("raw {unit}"),
        format!("sluice {unit}"),
        "sluice/raw",
        "RSS MiB",
        "start s"
    );
    for p in curve {
        println!(
            "{:>10}  {:>14.0}  {:>14.0}  {:>11.2}  {:>9.0}  {:>8.2}",
            p.x,
            p.raw,
            p.sluice,
            p.sluice / p.raw,
            p.rss,
            p.start
        );
    }
    let path = args.charts.join(format!("{name}.svg"));
    let series = [
        Series {
            label: "raw librdkafka",
            points: curve.iter().map(|p| (p.x, p.raw)).collect(),
        },
        Series {
            label: "sluice",
            points: curve.iter().map(|p| (p.x, p.sluice)).collect(),
        },
    ];
    line_chart(&path, &format!("{unit} against {}", x.0), x, unit, &series)?;
    println!("chart: {}", path.display());
    Ok(())
}
