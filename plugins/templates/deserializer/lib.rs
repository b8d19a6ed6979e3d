//! `{{name}}`: one event `{"message": line}` per non-empty line; a record that is not UTF-8 is
//! malformed. Build: `sluice plugins build .`
//!
//! Contract 0.2 (`wit/`): the batch's payloads arrive in one buffer (`data`) with a span per
//! record; events go back written into the reply's `data`, one span each, and one outcome per
//! record says how many of them are its.

wit_bindgen::generate!({ world: "deserializer-plugin", path: "wit" });

use exports::sluice::plugin::configure::Guest as Configure;
use exports::sluice::plugin::deserializer::{Guest, Outcome, RawRecord, Reply};
use sluice::plugin::types::{EventRef, OptionEntry, Span};

struct Plugin;

impl Configure for Plugin {
    fn configure(options: Vec<OptionEntry>) -> Result<(), String> {
        match options.first() {
            None => Ok(()),
            Some(o) => Err(format!("unknown option `{}`: {{name}} takes no options", o.key)),
        }
    }
}

impl Guest for Plugin {
    fn deserialize(data: Vec<u8>, records: Vec<RawRecord>, _content_types: Vec<String>) -> Reply {
        let mut out = Vec::new();
        let mut events = Vec::new();
        let outcomes = records
            .iter()
            .map(|r| {
                let payload = &data[r.payload.offset as usize..][..r.payload.len as usize];
                let Ok(text) = std::str::from_utf8(payload) else {
                    return Outcome::Malformed("not UTF-8".into());
                };
                let mut count = 0;
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    let offset = out.len() as u32;
                    let event = serde_json::json!({ "message": line });
                    serde_json::to_writer(&mut out, &event).expect("a map serializes");
                    let len = out.len() as u32 - offset;
                    events.push(EventRef::Output(Span { offset, len }));
                    count += 1;
                }
                Outcome::Events(count)
            })
            .collect();
        Reply {
            data: out,
            events,
            outcomes,
        }
    }
}

export!(Plugin);
