//! `json`: a JSON array of objects is one event per object; a single object is one event.
//! Anything else is malformed. This is the body Data Prepper's http source takes:
//! `[{"log": "..."}, ...]`.

wit_bindgen::generate!({ world: "configurable-deserializer", path: "../../wit" });

use exports::sluice::plugin::configure::{Guest as Configure, OptionEntry};
use exports::sluice::plugin::raw_byte_handler::{Guest, Outcome, RawRecord};

// The parsing itself, free of bindings: `sluice-bench wasm` compiles this same file natively to
// measure what the Wasm boundary costs.
mod parse;

struct Json;

impl Guest for Json {
    fn deserialize_batch(batch: Vec<RawRecord>) -> Vec<Outcome> {
        batch.iter().map(|record| parse(&record.payload)).collect()
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

fn parse(payload: &[u8]) -> Outcome {
    match parse::parse(payload) {
        Ok(events) => Outcome::Events(events),
        Err(reason) => Outcome::Malformed(reason),
    }
}

export!(Json);
