//! `json`: a JSON array of objects is one event per object; a single object is one event.
//! Anything else is malformed. This is the body Data Prepper's http source takes:
//! `[{"log": "..."}, ...]`.

wit_bindgen::generate!({ world: "configurable-deserializer", path: "../../wit" });

use exports::sluice::plugin::configure::{Guest as Configure, OptionEntry};
use exports::sluice::plugin::raw_byte_handler::{Guest, Outcome, RawRecord};
use serde_json::Value;
use serde_json::value::RawValue;

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

/// Validates without building a tree: each object's text is returned as it was sent (same key
/// order and spelling), which is also much cheaper than parsing into `Value`s and printing
/// them again.
fn parse(payload: &[u8]) -> Outcome {
    let text = match std::str::from_utf8(payload) {
        Ok(text) => text,
        Err(e) => return Outcome::Malformed(format!("invalid JSON: not UTF-8 ({e})")),
    };
    match text.trim_start().as_bytes().first() {
        Some(b'{') => match serde_json::from_str::<&RawValue>(text) {
            Ok(object) => Outcome::Events(vec![object.get().to_owned()]),
            Err(e) => Outcome::Malformed(format!("invalid JSON: {e}")),
        },
        Some(b'[') => match serde_json::from_str::<Vec<&RawValue>>(text) {
            Ok(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match raw_kind(item) {
                    "an object" => Ok(item.get().to_owned()),
                    other => Err(format!("element {i} of the array is {other}, not an object")),
                })
                .collect::<Result<_, _>>()
                .map_or_else(Outcome::Malformed, Outcome::Events),
            Err(e) => Outcome::Malformed(format!("invalid JSON: {e}")),
        },
        // Not an object or array: say what it is (this path is rare, so a full parse is fine).
        _ => match serde_json::from_str::<Value>(text) {
            Ok(other) => Outcome::Malformed(format!(
                "expected a JSON object or array of objects, got {}",
                kind(&other)
            )),
            Err(e) => Outcome::Malformed(format!("invalid JSON: {e}")),
        },
    }
}

/// What a (valid) raw JSON value is, from its first character.
fn raw_kind(value: &RawValue) -> &'static str {
    match value.get().as_bytes().first() {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
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
