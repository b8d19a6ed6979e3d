//! `plain`: each record is one event `{"message": "<the record as text>"}`, Data Prepper's
//! `format: plain` (the file source's default there). With the option `format: json`, a record
//! that is a JSON object is that object, and any other record is still `{"message": ...}`, as
//! Data Prepper's `format: json` reads a line it cannot parse ("assuming plain text"). Bytes
//! that are not UTF-8 become U+FFFD, as Java's reader decodes them. A record is never malformed.

wit_bindgen::generate!({ world: "deserializer-plugin", path: "../../wit/v0.2" });

use std::sync::atomic::{AtomicBool, Ordering};

use exports::sluice::plugin::configure::Guest as Configure;
use exports::sluice::plugin::deserializer::{Guest, Outcome, RawRecord, Reply};
use sluice::plugin::types::{EventRef, OptionEntry, Span};

/// `format: json`: pass JSON objects through.
static JSON: AtomicBool = AtomicBool::new(false);

struct Plain;

impl Guest for Plain {
    fn deserialize(data: Vec<u8>, records: Vec<RawRecord>, _: Vec<String>) -> Reply {
        let json = JSON.load(Ordering::Relaxed);
        let mut out = Vec::new();
        let mut events = Vec::with_capacity(records.len());
        let outcomes = records
            .iter()
            .map(|r| {
                let payload = &data[r.payload.offset as usize..][..r.payload.len as usize];
                let event = match json.then(|| object(payload)).flatten() {
                    Some((offset, len)) => EventRef::Input(Span {
                        offset: r.payload.offset + offset,
                        len,
                    }),
                    None => EventRef::Output(message(payload, &mut out)),
                };
                events.push(event);
                Outcome::Events(1)
            })
            .collect();
        Reply {
            data: out,
            events,
            outcomes,
        }
    }
}

/// Where the JSON object `payload` holds is (offset and length, without the white space
/// around it), if it is one.
fn object(payload: &[u8]) -> Option<(u32, u32)> {
    sluice_scan::object(payload).map(|at| (at.start as u32, at.len() as u32))
}

/// Writes `{"message": <payload as a JSON string>}` to `out`; its span there. Text that is
/// UTF-8 (nearly all) is checked by the standard library's word-at-a-time check; other text
/// has each bad sequence replaced.
fn message(payload: &[u8], out: &mut Vec<u8>) -> Span {
    let start = out.len();
    out.extend_from_slice(b"{\"message\":");
    match std::str::from_utf8(payload) {
        Ok(text) => sluice_scan::write_string(out, text),
        Err(_) => sluice_scan::write_string(out, &String::from_utf8_lossy(payload)),
    }
    out.push(b'}');
    Span {
        offset: start as u32,
        len: (out.len() - start) as u32,
    }
}

impl Configure for Plain {
    fn configure(options: Vec<OptionEntry>) -> Result<(), String> {
        let mut json = false;
        for o in options {
            match (o.key.as_str(), o.value.as_str()) {
                ("format", "plain") => json = false,
                ("format", "json") => json = true,
                ("format", other) => {
                    return Err(format!(
                        "option `format` is `{other}`: write `plain` (each record is \
                         `{{\"message\": ...}}`) or `json` (JSON objects as they are)"
                    ));
                }
                (key, _) => {
                    return Err(format!(
                        "unknown option `{key}`: the plain deserializer takes `format` \
                         (`plain` or `json`)"
                    ));
                }
            }
        }
        JSON.store(json, Ordering::Relaxed);
        Ok(())
    }
}

export!(Plain);
