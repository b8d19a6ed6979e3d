//! `json`: a JSON array of objects is one event per object; a single object is one event.
//! Anything else is malformed. This is the body Data Prepper's http source takes:
//! `[{"log": "..."}, ...]`.
//!
//! Contract 0.2: every event is a span into the batch's own bytes, so nothing is copied back
//! to the host; the host checks each one.

wit_bindgen::generate!({ world: "deserializer-plugin", path: "../../wit/v0.2" });

use exports::sluice::plugin::configure::Guest as Configure;
use exports::sluice::plugin::deserializer::{Guest, Outcome, RawRecord, Reply};
use sluice::plugin::types::{EventRef, OptionEntry, Span};

// The parsing itself, free of bindings: `sluice-bench wasm` and `sluice-bench abi` compile
// these same files natively to measure what the Wasm boundary costs.
mod parse;
mod spans;

struct Json;

impl Guest for Json {
    fn deserialize(data: Vec<u8>, records: Vec<RawRecord>, _: Vec<String>) -> Reply {
        let mut found = Vec::new();
        let mut events = Vec::with_capacity(records.len());
        let outcomes = records
            .iter()
            .map(|r| {
                let payload = &data[r.payload.offset as usize..][..r.payload.len as usize];
                found.clear();
                match spans::parse(payload, &mut found) {
                    Ok(()) => {
                        events.extend(found.iter().map(|&(offset, len)| {
                            EventRef::Input(Span {
                                offset: r.payload.offset + offset,
                                len,
                            })
                        }));
                        Outcome::Events(found.len() as u32)
                    }
                    Err(reason) => Outcome::Malformed(reason),
                }
            })
            .collect();
        Reply {
            data: Vec::new(),
            events,
            outcomes,
        }
    }
}

impl Configure for Json {
    fn configure(options: Vec<OptionEntry>) -> Result<(), String> {
        match options.first() {
            None => Ok(()),
            Some(o) => Err(format!(
                "unknown option `{}`: the json deserializer takes no options",
                o.key
            )),
        }
    }
}

export!(Json);
