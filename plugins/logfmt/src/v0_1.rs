//! Contract 0.1.0: one call per batch, each payload and each event its own allocation.

use crate::exports::sluice::plugin::raw_byte_handler::{Guest, Outcome, RawRecord};

impl Guest for crate::Logfmt {
    fn deserialize_batch(batch: Vec<RawRecord>) -> Vec<Outcome> {
        batch
            .iter()
            .map(|record| match crate::parse(&record.payload) {
                Ok(events) => Outcome::Events(
                    events
                        .into_iter()
                        .map(|e| serde_json::Value::Object(e).to_string())
                        .collect(),
                ),
                Err(reason) => Outcome::Malformed(reason),
            })
            .collect()
    }
}
