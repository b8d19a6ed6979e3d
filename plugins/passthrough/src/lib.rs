//! `passthrough`: the smallest processor. It keeps every event, so nothing is copied back: what
//! a processor stage costs by itself (`sluice-bench kafka` chains three of them).

wit_bindgen::generate!({ world: "processor-plugin", path: "../../wit/v0.2" });

use exports::sluice::plugin::configure::Guest as Configure;
use exports::sluice::plugin::processor::{Event, Guest, Reply, Verdict};
use sluice::plugin::types::OptionEntry;

struct Passthrough;

impl Configure for Passthrough {
    fn configure(options: Vec<OptionEntry>) -> Result<(), String> {
        match options.first() {
            None => Ok(()),
            Some(o) => Err(format!("unknown option `{}`: passthrough takes none", o.key)),
        }
    }
}

impl Guest for Passthrough {
    fn process(_: Vec<u8>, events: Vec<Event>) -> Reply {
        Reply {
            data: Vec::new(),
            events: Vec::new(),
            verdicts: vec![Verdict::Keep; events.len()],
        }
    }
}

export!(Passthrough);
