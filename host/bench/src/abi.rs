//! `sluice-bench abi`: the candidate batch ABIs for contract 0.2's deserializer
//! (`host/bench/wit/abi.wit`), measured in one run on one guest (`plugins/bench-abi`: the json
//! deserializer behind each ABI) and one engine, each against the same parsing compiled
//! natively with the same owned outputs:
//!
//! - `by-record` (0.1.0 today): a list of records in, a list of strings per record out.
//!   Native: `parse.rs` → `Vec<String>` per record.
//! - B `flat-in`: the payloads in one buffer plus spans; strings out. Native: as above.
//! - A `flat`: flat in, and out only spans (`input` spans point into the batch's buffer, so a
//!   pass-through parser copies nothing back). Native: `spans.rs` → the same spans.
//!
//! Every wasm figure includes what the host must do around the call (staging the flat buffer,
//! lifting the reply). The `+ check` columns add the host's check of each event (a JSON object
//! on one line) and its copy into the sinks' line buffer, which the pipeline does after either.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use serde_json::value::RawValue;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

mod bindings {
    wasmtime::component::bindgen!({ path: "wit", world: "abi-bench", additional_derives: [PartialEq] });
}

use bindings::exports::sluice::abi_bench::designs::{
    EventRef, Outcome, OutcomeStrings, RawMeta, RawRecord, Span,
};

// The guest's parsers, compiled natively.
use crate::wasm::{json_native as parse, json_spans as spans};

#[derive(clap::Args, Clone)]
pub(crate) struct Args {
    /// The built `plugins/bench-abi` component (scripts/bench builds it).
    #[arg(long)]
    component: PathBuf,
    /// Records per measurement (each batch size processes this many records in all).
    #[arg(long, default_value_t = 20_000)]
    records: usize,
    /// Only design A, batches of 100, for this many passes over the records (to profile it:
    /// `SLUICE_PERFMAP=1 perf record -g sluice-bench abi ...`).
    #[arg(long)]
    profile_passes: Option<usize>,
}

struct Host {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for Host {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// What design A hands the pipeline: the staged input (events may point into it), the reply's
/// own bytes, and the spans.
#[derive(Default)]
struct Flat {
    input: Vec<u8>,
    metas: Vec<RawMeta>,
    output: Vec<u8>,
    events: Vec<EventRef>,
    outcomes: Vec<Outcome>,
}

impl Flat {
    fn stage(&mut self, batch: &[RawRecord]) {
        self.input.clear();
        self.metas.clear();
        for r in batch {
            let offset = self.input.len() as u32;
            self.input.extend_from_slice(&r.payload);
            self.metas.push(RawMeta {
                payload: Span {
                    offset,
                    len: r.payload.len() as u32,
                },
                key: None,
                received_at_ms: r.received_at_ms,
            });
        }
    }

    fn event(&self, e: &EventRef) -> &[u8] {
        let (data, s) = match e {
            EventRef::Input(s) => (&self.input, s),
            EventRef::Output(s) => (&self.output, s),
        };
        &data[s.offset as usize..][..s.len as usize]
    }
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    if std::env::var_os("SLUICE_PERFMAP").is_some() {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    let engine = w(Engine::new(&config))?;
    let mut linker = Linker::<Host>::new(&engine);
    w(wasmtime_wasi::p2::add_to_linker_sync(&mut linker))?;
    let file = &args.component;
    let component = w(Component::from_file(&engine, file))
        .with_context(|| format!("loading {}", file.display()))?;
    let host = Host {
        wasi: WasiCtxBuilder::new().build(),
        table: ResourceTable::new(),
    };
    let mut store = Store::new(&engine, host);
    store.set_epoch_deadline(u64::MAX / 2);
    let guest = w(bindings::AbiBench::instantiate(
        &mut store, &component, &linker,
    ))?;
    let designs = guest.sluice_abi_bench_designs();

    let records: Vec<RawRecord> = (0..args.records)
        .map(crate::wasm::json_record)
        .map(|r| RawRecord {
            payload: r.payload,
            key: r.key,
            received_at_ms: r.received_at_ms,
            origin: r.origin,
        })
        .collect();
    let mut flat = Flat::default();
    if let Some(passes) = args.profile_passes {
        for _ in 0..passes {
            for chunk in records.chunks(100) {
                measure(3, chunk, designs, &mut store, &mut flat);
            }
        }
        return Ok(());
    }
    println!(
        "abi: json, {} records of ~{} bytes; each wasm figure includes staging and lifting",
        records.len(),
        records.iter().map(|r| r.payload.len()).sum::<usize>() / records.len().max(1)
    );
    println!(
        "{:>6}  {:>12} {:>12} {:>12} {:>12} {:>12}  {:>7} {:>7} {:>7}   {:>13} {:>13}",
        "batch",
        "native str/s",
        "native spn/s",
        "today/s",
        "B flat-in/s",
        "A flat/s",
        "today",
        "B",
        "A",
        "today+check/s",
        "A+check/s"
    );
    println!(
        "{:>6}  {:>12} {:>12} {:>12} {:>12} {:>12}  {:>7} {:>7} {:>7}",
        "", "", "", "", "", "", "/str", "/str", "/spans"
    );
    for batch in [1, 10, 100, 1000] {
        // Same verdicts from every design, or the comparison means nothing.
        let sample = &records[..batch.min(records.len())];
        let want: Vec<OutcomeStrings> = sample.iter().map(|r| native_strings(&r.payload)).collect();
        ensure!(
            w(designs.call_by_record(&mut store, sample))? == want,
            "by-record disagrees"
        );
        flat.stage(sample);
        ensure!(
            w(designs.call_flat_in(&mut store, &flat.input, &flat.metas))? == want,
            "flat-in disagrees"
        );
        let reply = w(designs.call_flat(&mut store, &flat.input, &flat.metas))?;
        flat.output = reply.data;
        let mut events = reply.events.iter();
        let got: Vec<OutcomeStrings> = reply
            .outcomes
            .iter()
            .map(|o| match o {
                Outcome::Events(n) => OutcomeStrings::Events(
                    events
                        .by_ref()
                        .take(*n as usize)
                        .map(|e| String::from_utf8_lossy(flat.event(e)).into_owned())
                        .collect(),
                ),
                Outcome::Malformed(reason) => OutcomeStrings::Malformed(reason.clone()),
            })
            .collect();
        ensure!(got == want, "flat disagrees");

        let mut best = [Duration::MAX; 7];
        for _ in 0..5 {
            for (case, best) in best.iter_mut().enumerate() {
                let took = time(&mut || {
                    for chunk in records.chunks(batch) {
                        measure(case, chunk, designs, &mut store, &mut flat);
                    }
                });
                *best = (*best).min(took);
            }
        }
        let rate = |d: Duration| records.len() as f64 / d.as_secs_f64();
        let [native, today, b, a, native_spans, today_check, a_check] = best;
        println!(
            "{batch:>6}  {:>12.0} {:>12.0} {:>12.0} {:>12.0} {:>12.0}  {:>7.2} {:>7.2} {:>7.2}   {:>13.0} {:>13.0}",
            rate(native),
            rate(native_spans),
            rate(today),
            rate(b),
            rate(a),
            native.as_secs_f64() / today.as_secs_f64(),
            native.as_secs_f64() / b.as_secs_f64(),
            native_spans.as_secs_f64() / a.as_secs_f64(),
            rate(today_check),
            rate(a_check),
        );
    }
    println!(
        "  today and B against native code making strings; A against native code making the same spans"
    );
    Ok(())
}

/// One batch through case `case`: 0 native strings, 1 today, 2 B, 3 A, 4 native spans,
/// 5 today + host check, 6 A + host check.
fn measure(
    case: usize,
    chunk: &[RawRecord],
    designs: &bindings::exports::sluice::abi_bench::designs::Guest,
    store: &mut Store<Host>,
    flat: &mut Flat,
) {
    match case {
        0 => {
            let out: Vec<OutcomeStrings> =
                chunk.iter().map(|r| native_strings(&r.payload)).collect();
            std::hint::black_box(out);
        }
        1 => {
            std::hint::black_box(
                designs
                    .call_by_record(&mut *store, chunk)
                    .expect("by-record"),
            );
        }
        2 => {
            flat.stage(chunk);
            let out = designs.call_flat_in(&mut *store, &flat.input, &flat.metas);
            std::hint::black_box(out.expect("flat-in"));
        }
        3 => {
            flat.stage(chunk);
            let reply = designs
                .call_flat(&mut *store, &flat.input, &flat.metas)
                .expect("flat");
            flat.output = reply.data;
            flat.events = reply.events;
            flat.outcomes = reply.outcomes;
            std::hint::black_box(&flat.events);
        }
        4 => {
            // The same owned outputs as design A: spans and one outcome per record.
            let mut spans = Vec::new();
            let outcomes: Vec<Result<usize, String>> = chunk
                .iter()
                .map(|r| {
                    let before = spans.len();
                    spans::parse(&r.payload, &mut spans).map(|()| spans.len() - before)
                })
                .collect();
            std::hint::black_box((spans, outcomes));
        }
        5 => {
            let mut lines = Vec::new();
            for o in designs
                .call_by_record(&mut *store, chunk)
                .expect("by-record")
            {
                if let OutcomeStrings::Events(events) = o {
                    for e in &events {
                        check_owned(e, &mut lines);
                    }
                }
            }
            std::hint::black_box(lines);
        }
        _ => {
            let mut lines = Vec::new();
            flat.stage(chunk);
            let reply = designs
                .call_flat(&mut *store, &flat.input, &flat.metas)
                .expect("flat");
            flat.output = reply.data;
            for e in &reply.events {
                check_borrowed(flat.event(e), &mut lines);
            }
            std::hint::black_box(lines);
        }
    }
}

fn native_strings(payload: &[u8]) -> OutcomeStrings {
    match parse::parse(payload) {
        Ok(events) => OutcomeStrings::Events(events),
        Err(reason) => OutcomeStrings::Malformed(reason),
    }
}

/// Today's host check: each event string parsed into an owned raw value, then copied.
fn check_owned(text: &str, lines: &mut Vec<u8>) {
    let raw: Box<RawValue> = serde_json::from_str(text).expect("valid");
    lines.extend_from_slice(raw.get().as_bytes());
    lines.push(b'\n');
}

/// One pass over borrowed bytes: check, then copy into the line buffer.
fn check_borrowed(bytes: &[u8], lines: &mut Vec<u8>) {
    let raw: &RawValue = serde_json::from_slice(bytes).expect("valid");
    lines.extend_from_slice(raw.get().as_bytes());
    lines.push(b'\n');
}

/// wasmtime's error as anyhow's.
fn w<T>(result: wasmtime::Result<T>) -> anyhow::Result<T> {
    result.map_err(|e| anyhow::anyhow!("{e:#}"))
}

fn time(f: &mut dyn FnMut()) -> Duration {
    let started = Instant::now();
    f();
    started.elapsed()
}
