//! `ndjson`: newline-delimited JSON, one event per non-empty line. A line that is not a JSON
//! object makes the whole record malformed, naming the line, so a record is never half-delivered.
//!
//! Contract 0.2: each event is a span of the line in the batch's own bytes (the object's text as
//! sent, without the line's surrounding whitespace), so nothing is copied back.

wit_bindgen::generate!({ world: "deserializer-plugin", path: "../../wit/v0.2" });

use exports::sluice::plugin::configure::Guest as Configure;
use exports::sluice::plugin::deserializer::{Guest, Outcome, RawRecord, Reply};
use serde_json::value::RawValue;
use sluice::plugin::types::{EventRef, OptionEntry, Span};

struct Ndjson;

impl Guest for Ndjson {
    fn deserialize(data: Vec<u8>, records: Vec<RawRecord>, _: Vec<String>) -> Reply {
        let mut events = Vec::new();
        let outcomes = records
            .iter()
            .map(|r| {
                let payload = &data[r.payload.offset as usize..][..r.payload.len as usize];
                let mark = events.len();
                match parse(payload, r.payload.offset, &mut events) {
                    Ok(()) => Outcome::Events((events.len() - mark) as u32),
                    Err(reason) => {
                        events.truncate(mark);
                        Outcome::Malformed(reason)
                    }
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

impl Configure for Ndjson {
    fn configure(options: Vec<OptionEntry>) -> Result<(), String> {
        match options.first() {
            None => Ok(()),
            Some(o) => Err(format!(
                "unknown option `{}`: the ndjson deserializer takes no options",
                o.key
            )),
        }
    }
}

/// Appends a span (offset by `base`, the payload's place in the batch) per line's object.
fn parse(payload: &[u8], base: u32, events: &mut Vec<EventRef>) -> Result<(), String> {
    let mut start = 0;
    for (i, line) in payload.split(|&b| b == b'\n').enumerate() {
        let at = start;
        start += line.len() + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = std::str::from_utf8(line).map_err(|e| format!("line {}: {e}", i + 1))?;
        let raw: &RawValue =
            serde_json::from_str(text).map_err(|e| format!("line {}: {e}", i + 1))?;
        let object = raw.get();
        if !object.starts_with('{') {
            return Err(format!("line {}: not a JSON object", i + 1));
        }
        let offset = at + (object.as_ptr() as usize - text.as_ptr() as usize);
        events.push(EventRef::Input(Span {
            offset: base + offset as u32,
            len: object.len() as u32,
        }));
    }
    Ok(())
}

export!(Ndjson);
