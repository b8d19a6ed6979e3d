//! `json`: a JSON array of objects is one event per object; a single object is one event.
//! Anything else is malformed. This is the body Data Prepper's http source takes:
//! `[{"log": "..."}, ...]`.

wit_bindgen::generate!({ world: "configurable-deserializer", path: "../../wit" });

use exports::sluice::plugin::configure::{Guest as Configure, OptionEntry};
use exports::sluice::plugin::raw_byte_handler::{Guest, Outcome, RawRecord};
use serde_json::Value;

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
            Some(o) => Err(format!("unknown option `{}`: the json deserializer takes no options", o.key)),
        }
    }
}

fn parse(payload: &[u8]) -> Outcome {
    match serde_json::from_slice::<Value>(payload) {
        Ok(Value::Object(object)) => Outcome::Events(vec![Value::Object(object).to_string()]),
        Ok(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Object(_) => Ok(item.to_string()),
                other => Err(format!("element {i} of the array is {}, not an object", kind(&other))),
            })
            .collect::<Result<_, _>>()
            .map_or_else(Outcome::Malformed, Outcome::Events),
        Ok(other) => Outcome::Malformed(format!("expected a JSON object or array of objects, got {}", kind(&other))),
        Err(e) => Outcome::Malformed(format!("invalid JSON: {e}")),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

export!(Json);
