//! `otlp`: an OTLP export request, as an OTLP/HTTP client posts it (`application/x-protobuf`,
//! or OTLP/JSON with `application/json`), to one event per log record, span or metric data
//! point, in Data Prepper's `opensearch` output format (the shapes its `otel_logs_source`, `otel_trace_source` and
//! `otel_metrics_source` write; see `logs.rs`, `traces.rs`, `metrics.rs`). A request that is
//! not one is malformed whole, with the reason.
//!
//! Option `signal`: `logs` (default), `traces` or `metrics`, the kind of request the source
//! receives.
//!
//! ```yaml
//! source:
//!   http:
//!     path: /v1/traces
//!     deserializer:
//!       name: otlp
//!       options: {signal: traces}
//! ```

wit_bindgen::generate!({ world: "deserializer-plugin", path: "../../wit/v0.2" });

mod common;
mod logs;
mod metrics;
mod traces;

use std::cell::Cell;

use exports::sluice::plugin::configure::Guest as Configure;
use exports::sluice::plugin::deserializer::{Guest, Outcome, RawRecord, Reply};
use sluice::plugin::types::{EventRef, OptionEntry, Span};

struct Otlp;

/// What the source receives.
#[derive(Clone, Copy)]
enum Signal {
    Logs,
    Traces,
    Metrics,
}

thread_local! {
    static SIGNAL: Cell<Signal> = const { Cell::new(Signal::Logs) };
}

impl Guest for Otlp {
    fn deserialize(data: Vec<u8>, records: Vec<RawRecord>, content_types: Vec<String>) -> Reply {
        let mut out = Vec::new();
        let mut events = Vec::new();
        let outcomes = records
            .iter()
            .map(|r| {
                let payload = &data[r.payload.offset as usize..][..r.payload.len as usize];
                let content_type = r
                    .content_type
                    .and_then(|i| content_types.get(usize::from(i)))
                    .map(String::as_str);
                // OTLP/HTTP: `application/json` is OTLP/JSON, anything else protobuf.
                let json = content_type.is_some_and(|t| t.starts_with("application/json"));
                let parsed = match SIGNAL.with(Cell::get) {
                    Signal::Logs => logs::events(payload, json),
                    Signal::Traces => traces::events(payload, json),
                    Signal::Metrics => metrics::events(payload, json),
                };
                match parsed {
                    Ok(list) => {
                        for event in &list {
                            let start = out.len();
                            serde_json::to_writer(&mut out, event).expect("a JSON value");
                            events.push(EventRef::Output(Span {
                                offset: start as u32,
                                len: (out.len() - start) as u32,
                            }));
                        }
                        Outcome::Events(list.len() as u32)
                    }
                    Err(reason) => Outcome::Malformed(reason),
                }
            })
            .collect();
        Reply {
            data: out,
            events,
            outcomes,
        }
    }
}

impl Configure for Otlp {
    fn configure(options: Vec<OptionEntry>) -> Result<(), String> {
        let mut signal = Signal::Logs;
        for o in options {
            match (o.key.as_str(), o.value.as_str()) {
                ("signal", "logs") => signal = Signal::Logs,
                ("signal", "traces") => signal = Signal::Traces,
                ("signal", "metrics") => signal = Signal::Metrics,
                ("signal", other) => {
                    return Err(format!(
                        "option `signal` must be `logs`, `traces` or `metrics`, got `{other}`"
                    ));
                }
                (other, _) => {
                    return Err(format!(
                        "unknown option `{other}`: the otlp deserializer takes `signal`"
                    ));
                }
            }
        }
        SIGNAL.with(|s| s.set(signal));
        Ok(())
    }
}

export!(Otlp);
