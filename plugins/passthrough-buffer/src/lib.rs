//! `passthrough_buffer`: the smallest buffer policy. Every record goes to the first tier with
//! its own key; workers read the tiers in turn. With one `kafka` tier it behaves as the built-in
//! `kafka` buffer, and what it costs on top is the cost of a policy call.
//!
//! ```yaml
//! buffer:
//!   passthrough_buffer:
//!     tiers:
//!       - kafka: { bootstrap_servers: [127.0.0.1:9092], topics: [{ name: logs, group_id: sluice }] }
//! ```

wit_bindgen::generate!({ world: "buffer-plugin", path: "../../wit/v0.2" });

use exports::sluice::plugin::buffer_policy::{
    Guest, Incoming, Move, Placement, PolicyInfo, Refusal,
};
use exports::sluice::plugin::configure::Guest as Configure;
use sluice::plugin::types::OptionEntry;

struct Passthrough;

impl Configure for Passthrough {
    fn configure(options: Vec<OptionEntry>) -> Result<(), String> {
        match options.first() {
            None => Ok(()),
            Some(o) => Err(format!(
                "unknown option `{}`: passthrough_buffer takes none",
                o.key
            )),
        }
    }
}

impl Guest for Passthrough {
    fn describe() -> PolicyInfo {
        PolicyInfo { headers: vec![] }
    }

    fn on_write(records: Vec<Incoming>) -> Result<Vec<Placement>, Refusal> {
        Ok(records.iter().map(|_| Placement::Tier((0, None))).collect())
    }

    fn next_read(_worker: u32) -> Option<u8> {
        None
    }

    fn tick() -> Vec<Move> {
        Vec::new()
    }
}

export!(Passthrough);
