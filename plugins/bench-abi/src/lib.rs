//! Not a plugin: the `json` deserializer behind each candidate batch ABI of contract 0.2
//! (`host/bench/wit/abi.wit`), so `sluice-bench abi` can measure the ABIs on one guest.

wit_bindgen::generate!({ world: "abi-bench", path: "../../host/bench/wit" });

use exports::sluice::abi_bench::designs::{
    EventRef, Guest, Outcome, OutcomeStrings, RawMeta, RawRecord, Reply, Span,
};

// The parsers, free of bindings: `sluice-bench abi` compiles these files natively too.
#[path = "../../json/src/parse.rs"]
mod parse;
#[path = "../../json/src/spans.rs"]
mod spans;

struct Bench;

fn strings(payload: &[u8]) -> OutcomeStrings {
    match parse::parse(payload) {
        Ok(events) => OutcomeStrings::Events(events),
        Err(reason) => OutcomeStrings::Malformed(reason),
    }
}

fn slice(data: &[u8], span: Span) -> &[u8] {
    &data[span.offset as usize..][..span.len as usize]
}

impl Guest for Bench {
    fn by_record(batch: Vec<RawRecord>) -> Vec<OutcomeStrings> {
        batch.iter().map(|r| strings(&r.payload)).collect()
    }

    fn flat_in(data: Vec<u8>, records: Vec<RawMeta>) -> Vec<OutcomeStrings> {
        records
            .iter()
            .map(|r| strings(slice(&data, r.payload)))
            .collect()
    }

    fn flat(data: Vec<u8>, records: Vec<RawMeta>) -> Reply {
        let mut found = Vec::new();
        let mut events = Vec::with_capacity(records.len());
        let outcomes = records
            .iter()
            .map(|r| {
                found.clear();
                match spans::parse(slice(&data, r.payload), &mut found) {
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

export!(Bench);
