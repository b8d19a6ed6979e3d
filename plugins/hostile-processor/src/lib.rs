//! `hostile_processor`: a processor for the sandbox tests. It keeps every event except those
//! whose text contains a command: `"panic"` traps (a Rust panic), `"loop"` spins until the
//! deadline stops it, `"lie"` claims an event it does not return.

wit_bindgen::generate!({ world: "processor-plugin", path: "../../wit/v0.2" });

use exports::sluice::plugin::configure::Guest as Configure;
use exports::sluice::plugin::processor::{Event, Guest, Reply, Verdict};
use sluice::plugin::types::OptionEntry;

struct Hostile;

impl Configure for Hostile {
    fn configure(_: Vec<OptionEntry>) -> Result<(), String> {
        Ok(())
    }
}

impl Guest for Hostile {
    fn process(data: Vec<u8>, events: Vec<Event>) -> Reply {
        let mut verdicts = Vec::with_capacity(events.len());
        for e in &events {
            let body = &data[e.body.offset as usize..][..e.body.len as usize];
            let has = |word: &str| body.windows(word.len()).any(|w| w == word.as_bytes());
            if has("\"panic\"") {
                panic!("asked to panic");
            }
            if has("\"loop\"") {
                #[allow(clippy::empty_loop)]
                loop {}
            }
            verdicts.push(if has("\"lie\"") {
                Verdict::Replace(1)
            } else {
                Verdict::Keep
            });
        }
        Reply {
            data: Vec::new(),
            events: Vec::new(),
            verdicts,
        }
    }
}

export!(Hostile);
