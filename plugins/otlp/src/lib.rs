//! `otlp`: an OTLP export request, as an OTLP/HTTP client posts it (`application/x-protobuf`),
//! to one event per log record, in Data Prepper's `opensearch` output format (the shape its
//! `otel_logs_source` writes: `time`, `observedTimestamp`, `severityText`, `body`,
//! `log.attributes.*`, `resource.attributes.*`, ...; see `logs.rs`). A request that is not
//! one is malformed whole, with the reason.
//!
//! Built so far: logs over protobuf. OTLP/JSON bodies, traces and metrics are refused with a
//! reason naming what is missing (issue 15 continues).
//!
//! ```yaml
//! source:
//!   http:
//!     path: /v1/logs
//!     deserializer: otlp
//! ```

wit_bindgen::generate!({ world: "deserializer-plugin", path: "../../wit/v0.2" });

mod common;
mod logs;

use exports::sluice::plugin::configure::Guest as Configure;
use exports::sluice::plugin::deserializer::{Guest, Outcome, RawRecord, Reply};
use sluice::plugin::types::{EventRef, OptionEntry, Span};

struct Otlp;

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
                if content_type.is_some_and(|t| t.starts_with("application/json")) {
                    return Outcome::Malformed(
                        "OTLP/JSON is not supported yet: send application/x-protobuf".into(),
                    );
                }
                match logs::events(payload) {
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
        match options.first() {
            None => Ok(()),
            Some(o) => Err(format!(
                "unknown option `{}`: the otlp deserializer takes no options",
                o.key
            )),
        }
    }
}

export!(Otlp);
