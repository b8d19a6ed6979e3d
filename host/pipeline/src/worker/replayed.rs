//! Records that `sluice dlq replay` sent back from the dead-letter file. They carry why they were
//! dead-lettered before (`Record::dead_lettered`), which a new dead-letter entry keeps. An entry
//! that held an event, not raw bytes (a processor failed it), comes back as a record of that
//! event's JSON with the content type [`EVENT`]: it skips the deserializer and joins the
//! processors at the one that failed it (`processor=K`).
//!
//! Nothing here runs for a batch without replayed records.

use serde_json::Value;
use sluice_plugin::{Decoded, Decoder, RawRecord};

use crate::sink::dlq;

/// The content type of a replayed event: one JSON object, for the processors from index `K`
/// on (`application/vnd.sluice.event+json; processor=K`).
pub const EVENT: &str = "application/vnd.sluice.event+json";

/// The content type of an event replayed into the processors from index `processor` on.
pub fn event_content_type(processor: usize) -> String {
    format!("{EVENT}; processor={processor}")
}

/// The processor index a replayed event's content type names; `None` for any other record.
fn event_start(content_type: Option<&str>) -> Option<usize> {
    let rest = content_type?.strip_prefix(EVENT)?;
    let rest = rest.trim_start_matches(';').trim();
    if rest.is_empty() {
        return Some(0);
    }
    rest.strip_prefix("processor=")?.trim().parse().ok()
}

/// The replayed records of a batch.
pub(crate) struct Replayed {
    /// Per record, the reasons it was dead-lettered before (empty: not replayed).
    earlier: Vec<Vec<String>>,
    /// Per record, the first processor of a replayed event; `None` for a record of bytes.
    starts: Vec<Option<usize>>,
}

impl Replayed {
    /// `None` when no record of `records` was replayed: the common case.
    pub(crate) fn of(records: &[sluice_buffer::Record]) -> Option<Self> {
        if records.iter().all(|r| r.dead_lettered.is_empty()) {
            return None;
        }
        Some(Self {
            earlier: records.iter().map(|r| r.dead_lettered.clone()).collect(),
            starts: records
                .iter()
                .map(|r| {
                    (!r.dead_lettered.is_empty())
                        .then(|| event_start(r.content_type.as_deref()))
                        .flatten()
                })
                .collect(),
        })
    }

    /// Each record's outcome: a replayed event is its own one event, checked as the
    /// deserializer's are; the other records go to the deserializer `d`, in one call.
    pub(crate) fn decode(
        &self,
        d: &mut Decoder,
        records: &[RawRecord],
        content_types: &[Option<String>],
    ) -> Vec<Decoded> {
        let (mut raw, mut types) = (Vec::new(), Vec::new());
        for (i, record) in records.iter().enumerate() {
            if self.starts[i].is_none() {
                raw.push(record.clone());
                types.push(content_types[i].clone());
            }
        }
        let mut decoded = if raw.is_empty() {
            Vec::new()
        } else {
            d.decode_typed(&raw, &types)
        }
        .into_iter();
        records
            .iter()
            .zip(&self.starts)
            .map(|(record, start)| match start {
                None => decoded
                    .next()
                    .unwrap_or_else(|| Decoded::Trapped("the deserializer lost a record".into())),
                Some(_) => match String::from_utf8(record.payload.clone()) {
                    Ok(text) => Decoded::Events(vec![text].into()),
                    Err(_) => Decoded::Malformed("a replayed event that is not UTF-8".to_owned()),
                },
            })
            .collect()
    }

    /// The index of the first processor each record's events go through (0 for all but
    /// replayed events).
    pub(crate) fn starts(&self) -> Vec<usize> {
        self.starts.iter().map(|s| s.unwrap_or(0)).collect()
    }

    /// Adds to each dead-letter entry (by record index) why its record was dead-lettered before.
    pub(crate) fn add_reasons(&self, dead: &mut [(usize, Value)]) {
        for (owner, entry) in dead {
            if let Some(earlier) = self.earlier.get(*owner) {
                dlq::add_earlier_reasons(entry, earlier);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_content_type_names_the_first_processor() {
        assert_eq!(event_start(Some(&event_content_type(2))), Some(2));
        assert_eq!(event_start(Some(EVENT)), Some(0));
        assert_eq!(event_start(Some("application/json")), None);
        assert_eq!(event_start(None), None);
    }

    #[test]
    fn only_a_batch_with_replayed_records_is_looked_at() {
        let plain = sluice_buffer::Record {
            content_type: Some(event_content_type(1)),
            ..Default::default()
        };
        assert!(Replayed::of(std::slice::from_ref(&plain)).is_none());
        let replayed = sluice_buffer::Record {
            dead_lettered: vec!["bad".to_owned()],
            ..plain.clone()
        };
        let r = Replayed::of(&[plain, replayed]).unwrap();
        // A record that merely looks like an event but was not replayed stays a record.
        assert_eq!(r.starts(), [0, 1]);
        assert_eq!(r.starts, [None, Some(1)]);
        let mut dead = vec![(1, serde_json::json!({"reason": "again"}))];
        r.add_reasons(&mut dead);
        assert_eq!(dead[0].1["earlier_reasons"], serde_json::json!(["bad"]));
    }
}
