//! `ndjson`: newline-delimited JSON, one event per non-empty line. A line that is not a JSON
//! object makes the whole record malformed, naming the line, so a record is never half-delivered.

wit_bindgen::generate!({ world: "deserializer", path: "../../wit" });

use exports::sluice::plugin::raw_byte_handler::{Guest, Outcome, RawRecord};
use serde_json::Value;

struct Ndjson;

impl Guest for Ndjson {
    fn deserialize_batch(batch: Vec<RawRecord>) -> Vec<Outcome> {
        batch.iter().map(|record| parse(&record.payload)).collect()
    }
}

fn parse(payload: &[u8]) -> Outcome {
    let mut events = Vec::new();
    for (i, line) in payload.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(value @ Value::Object(_)) => events.push(value.to_string()),
            Ok(_) => return Outcome::Malformed(format!("line {}: not a JSON object", i + 1)),
            Err(e) => return Outcome::Malformed(format!("line {}: {e}", i + 1)),
        }
    }
    Outcome::Events(events)
}

export!(Ndjson);
