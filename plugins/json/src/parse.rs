//! The `json` deserializer's parsing, with no bindings: the plugin calls it once per record,
//! and `sluice-bench wasm` compiles this same file natively (`#[path]`) as the baseline.

use serde_json::Value;
use serde_json::value::RawValue;

/// Validates without building a tree: each object's text is returned as it was sent (same key
/// order and spelling), which is also much cheaper than parsing into `Value`s and printing
/// them again.
pub(crate) fn parse(payload: &[u8]) -> Result<Vec<String>, String> {
    let text =
        std::str::from_utf8(payload).map_err(|e| format!("invalid JSON: not UTF-8 ({e})"))?;
    match text.trim_start().as_bytes().first() {
        Some(b'{') => match serde_json::from_str::<&RawValue>(text) {
            Ok(object) => Ok(vec![object.get().to_owned()]),
            Err(e) => Err(format!("invalid JSON: {e}")),
        },
        Some(b'[') => match serde_json::from_str::<Vec<&RawValue>>(text) {
            Ok(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match raw_kind(item) {
                    "an object" => Ok(item.get().to_owned()),
                    other => Err(format!(
                        "element {i} of the array is {other}, not an object"
                    )),
                })
                .collect(),
            Err(e) => Err(format!("invalid JSON: {e}")),
        },
        // Not an object or array: say what it is (this path is rare, so a full parse is fine).
        _ => match serde_json::from_str::<Value>(text) {
            Ok(other) => Err(format!(
                "expected a JSON object or array of objects, got {}",
                kind(&other)
            )),
            Err(e) => Err(format!("invalid JSON: {e}")),
        },
    }
}

/// What a (valid) raw JSON value is, from its first character.
pub(crate) fn raw_kind(value: &RawValue) -> &'static str {
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
