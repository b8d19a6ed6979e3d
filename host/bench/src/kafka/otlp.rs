//! `sluice-bench otlp`: spans through OTLP/HTTP → kafka buffer → otlp component → file, against
//! the same export requests' protobuf produced straight to Kafka with librdkafka and consumed
//! back (all at once, and with each client's request acknowledged before its next, as the
//! source must), on one broker, in one run.

use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message as _;
use sluice_plugin::{Decoded, Decoder, Limits, PluginHost, RawRecord};

use crate::otlp_native::common::Format;
use crate::otlp_native::{traces, write::Events};

use super::raw::raw_librdkafka;
use super::sluice::{Ingest, Shape, sluice_end_to_end};

#[derive(clap::Args, Clone)]
pub(crate) struct Args {
    #[command(flatten)]
    runs: super::Runs,
    /// Spans per export request (the SDK's batch span processor exports up to 512).
    #[arg(long, default_value_t = 100)]
    spans: usize,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (runs, spans) = (&args.runs, args.spans);
    let bodies = requests(runs.requests, spans);
    component(args, &bodies)?;
    let bytes: usize = bodies.iter().map(Vec::len).sum();
    println!(
        "payload set: {} OTLP trace export requests x {} spans ({:.1} MB protobuf), {} partitions, {} clients",
        runs.requests,
        spans,
        bytes as f64 / 1e6,
        runs.partitions,
        runs.clients,
    );
    let kafka = runs.kafka(spans);
    let runtime = tokio::runtime::Runtime::new()?;
    let (mut raw, mut acked, mut sluice) = (Duration::MAX, Duration::MAX, Duration::MAX);
    let shape = Shape {
        ingest: Ingest::OtlpTraces,
        ..Shape::default()
    };
    for round in 1..=runs.rounds {
        println!("round {round} of {}", runs.rounds);
        raw = raw.min(runtime.block_on(raw_librdkafka(&kafka, &bodies, None))?);
        // What the source must do: each client's request acknowledged before its next.
        acked = acked.min(runtime.block_on(raw_librdkafka(&kafka, &bodies, Some(runs.clients)))?);
        sluice = sluice.min(sluice_end_to_end(&kafka, &bodies, shape)?.took);
    }
    let spans = (runs.requests * spans) as f64;
    println!("best of {} rounds:", runs.rounds);
    println!(
        "{:<44} {:>6.2} s  {:>9.0} spans/s",
        "raw librdkafka produce+consume (protobuf)",
        raw.as_secs_f64(),
        spans / raw.as_secs_f64()
    );
    println!(
        "{:<44} {:>6.2} s  {:>9.0} spans/s",
        "raw, each request acked before the next",
        acked.as_secs_f64(),
        spans / acked.as_secs_f64()
    );
    println!(
        "{:<44} {:>6.2} s  {:>9.0} spans/s",
        "sluice OTLP/HTTP→kafka→otlp→file",
        sluice.as_secs_f64(),
        spans / sluice.as_secs_f64()
    );
    println!(
        "ratio sluice/raw spans/s: {:.2}",
        raw.as_secs_f64() / sluice.as_secs_f64()
    );
    println!(
        "ratio sluice/raw acknowledged per request: {:.2}",
        acked.as_secs_f64() / sluice.as_secs_f64()
    );
    Ok(())
}

/// Export requests of `spans` spans each, as the OpenTelemetry SDKs make them: one service,
/// one scope, server spans with a few attributes.
pub(super) fn requests(n: usize, spans: usize) -> Vec<Vec<u8>> {
    let text = |s: &str| AnyValue {
        value: Some(Value::StringValue(s.to_owned())),
    };
    let attribute = |key: &str, value: AnyValue| KeyValue {
        key: key.to_owned(),
        value: Some(value),
        ..KeyValue::default()
    };
    (0..n)
        .map(|r| {
            let spans = (0..spans)
                .map(|i| {
                    let id = (r * spans + i) as u64;
                    Span {
                        trace_id: [id.to_be_bytes(), (!id).to_be_bytes()].concat(),
                        span_id: id.to_be_bytes().to_vec(),
                        name: "GET /api/orders/{id}".to_owned(),
                        kind: SpanKind::Server as i32,
                        start_time_unix_nano: 1_700_000_000_000_000_000 + id * 1_000,
                        end_time_unix_nano: 1_700_000_000_000_000_000 + id * 1_000 + 250_000,
                        attributes: vec![
                            attribute("http.request.method", text("GET")),
                            attribute("url.path", text(&format!("/api/orders/{id}"))),
                            attribute(
                                "http.response.status_code",
                                AnyValue {
                                    value: Some(Value::IntValue(200)),
                                },
                            ),
                        ],
                        ..Span::default()
                    }
                })
                .collect();
            ExportTraceServiceRequest {
                resource_spans: vec![ResourceSpans {
                    resource: Some(Resource {
                        attributes: vec![attribute("service.name", text("checkout"))],
                        ..Resource::default()
                    }),
                    scope_spans: vec![ScopeSpans {
                        scope: Some(InstrumentationScope {
                            name: "shop".to_owned(),
                            version: "1.2.3".to_owned(),
                            ..InstrumentationScope::default()
                        }),
                        spans,
                        schema_url: String::new(),
                    }],
                    schema_url: String::new(),
                }],
            }
            .encode_to_vec()
        })
        .collect()
}

/// The otlp component alone, through the host as a worker calls it (10 requests a batch),
/// against the same code compiled natively writing into one buffer: what the Wasm boundary
/// and the Wasm code cost it. Both give the same bytes (checked on the first batch).
fn component(args: &Args, bodies: &[Vec<u8>]) -> anyhow::Result<()> {
    const BATCH: usize = 10;
    let host = PluginHost::new(None)?;
    let plugin = host.load_file(&args.runs.plugins.join("otlp.wasm"))?;
    let limits = Limits {
        timeout: Duration::from_secs(30),
        recycle_after: 0,
        ..Limits::default()
    };
    let options = vec![("signal".to_owned(), "traces".to_owned())];
    let mut decoder = Decoder::new(plugin, options, limits)?;
    let records: Vec<RawRecord> = bodies
        .iter()
        .map(|body| RawRecord {
            payload: body.clone(),
            key: None,
            received_at_ms: 0,
            origin: "bench".to_owned(),
        })
        .collect();
    let native = |batch: &[Vec<u8>], events: &mut Events| {
        for body in batch {
            traces::events(body, false, Format::Opensearch, events).expect("a valid request");
        }
    };
    // The same events, byte for byte.
    let mut expected = Events::default();
    native(&bodies[..BATCH], &mut expected);
    let mut got = Vec::new();
    for outcome in decoder.decode(&records[..BATCH]) {
        let Decoded::Events(events) = outcome else {
            anyhow::bail!("the component refused a request: {outcome:?}");
        };
        got.extend(events.iter().map(<[u8]>::to_vec));
    }
    let want: Vec<Vec<u8>> = expected
        .spans
        .iter()
        .map(|&(offset, len)| expected.out[offset..][..len].to_vec())
        .collect();
    anyhow::ensure!(got == want, "the component and its native build disagree");

    let (mut wasm, mut natively) = (Duration::MAX, Duration::MAX);
    for _ in 0..args.runs.rounds.max(3) {
        let started = std::time::Instant::now();
        for batch in bodies.chunks(BATCH) {
            let mut events = Events::default();
            native(batch, &mut events);
            std::hint::black_box(&events);
        }
        natively = natively.min(started.elapsed());
        let started = std::time::Instant::now();
        for batch in records.chunks(BATCH) {
            std::hint::black_box(decoder.decode(batch));
        }
        wasm = wasm.min(started.elapsed());
    }
    let spans = (bodies.len() * args.spans) as f64;
    println!("the otlp component alone ({BATCH} requests a batch, opensearch format, best of 3):");
    println!(
        "  native build of its code  {:>9.0} spans/s\n  component through the host {:>8.0} spans/s\n  ratio component/native: {:.2}",
        spans / natively.as_secs_f64(),
        spans / wasm.as_secs_f64(),
        natively.as_secs_f64() / wasm.as_secs_f64()
    );
    Ok(())
}
