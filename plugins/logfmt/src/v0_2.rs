//! Contract 0.2: the batch's payloads in one buffer; events written into the reply's `data`.

use crate::exports::sluice::plugin::configure::Guest as Configure;
use crate::exports::sluice::plugin::deserializer::{Guest, Outcome, RawRecord, Reply};
use crate::sluice::plugin::types::{EventRef, OptionEntry, Span};

impl Guest for crate::Logfmt {
    fn deserialize(data: Vec<u8>, records: Vec<RawRecord>, _: Vec<String>) -> Reply {
        let mut out = Vec::new();
        let mut events = Vec::new();
        let outcomes = records
            .iter()
            .map(|r| {
                let payload = &data[r.payload.offset as usize..][..r.payload.len as usize];
                match crate::parse(payload) {
                    Ok(parsed) => {
                        for event in &parsed {
                            let offset = out.len() as u32;
                            serde_json::to_writer(&mut out, event).expect("a map serializes");
                            let len = out.len() as u32 - offset;
                            events.push(EventRef::Output(Span { offset, len }));
                        }
                        Outcome::Events(parsed.len() as u32)
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

impl Configure for crate::Logfmt {
    fn configure(options: Vec<OptionEntry>) -> Result<(), String> {
        match options.first() {
            None => Ok(()),
            Some(o) => Err(format!(
                "unknown option `{}`: the logfmt deserializer takes no options",
                o.key
            )),
        }
    }
}
