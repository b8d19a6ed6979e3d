//! The `deserializer-plugin` world of contract 0.2 (`wit/v0.2/deserializer.wit`): the same job
//! as 0.1.0's `deserializer`, with one buffer plus spans per call. Each batch is staged once
//! (every payload and key copied into one buffer); a plugin's events are spans into that buffer
//! or into its reply's own bytes, read in place by the pipeline ([`Events`]).
//!
//! The pipeline reaches it through [`crate::Decoder`], which picks this adapter or 0.1.0's by
//! the plugin's world.

use std::sync::Arc;

use wasmtime::Store;

use crate::batch::BatchWorld;
use crate::engine::HostState;
use crate::events::{Events, Side};
use crate::worlds::deserializer::RawRecord;
use crate::worlds::spans::{self, Entry, Reply, Writer};
use crate::worlds::{Descriptor, PluginKind, no_host_imports};

bindings!("../../wit/v0.2", "deserializer-plugin", additional_derives: [PartialEq, Eq]);

pub(crate) use bindings::exports::sluice::plugin::configure::{self, OptionEntry};
use bindings::exports::sluice::plugin::deserializer::{self, EventRef, Outcome, RawRecord as Meta};
use bindings::sluice::plugin::types::Span;

/// The world on the list of `crate::worlds`.
pub(crate) static DESCRIPTOR: Descriptor = Descriptor {
    interface: "sluice:plugin/deserializer@0.2.0",
    world: "sluice:plugin/deserializer-plugin@0.2.0",
    kind: PluginKind::Deserializer,
    host_imports: &[],
    add_to_linker: no_host_imports,
    identify,
};

fn span((offset, len): (u32, u32)) -> Span {
    Span { offset, len }
}

impl Entry for Meta {
    fn spans(&self) -> impl Iterator<Item = (u32, u32)> {
        [Some(self.payload), self.key]
            .into_iter()
            .flatten()
            .map(|s| (s.offset, s.len))
    }

    fn rebased(&self, by: u32) -> Self {
        let rebase = |s: Span| span((s.offset - by, s.len));
        Meta {
            payload: rebase(self.payload),
            key: self.key.map(rebase),
            ..*self
        }
    }
}

/// A batch as the plugin gets it, staged once per [`crate::Decoder::decode`]: every payload
/// and key in one buffer, and the batch's distinct content types (records point at them by
/// index).
pub(crate) type Staged = spans::Staged<Meta, Vec<String>>;

/// One record of a staged batch.
pub(crate) type Input = spans::Input<Meta, Vec<String>>;

/// Stages `batch`; `content_types` has one entry per record, or none at all.
pub(crate) fn stage(batch: &[RawRecord], content_types: &[Option<String>]) -> Staged {
    let size = batch
        .iter()
        .map(|r| r.payload.len() + r.key.as_ref().map_or(0, Vec::len))
        .sum();
    let mut writer = Writer::with_capacity(size);
    let mut types: Vec<String> = Vec::new();
    let records = batch
        .iter()
        .enumerate()
        .map(|(i, r)| Meta {
            payload: span(writer.push(&r.payload)),
            key: r.key.as_deref().map(|k| span(writer.push(k))),
            received_at_ms: r.received_at_ms,
            content_type: content_types.get(i).and_then(Option::as_deref).map(|t| {
                let at = types
                    .iter()
                    .position(|known| known == t)
                    .unwrap_or_else(|| {
                        types.push(t.to_owned());
                        types.len() - 1
                    });
                at as u16
            }),
        })
        .collect();
    let origins = batch.iter().map(|r| r.origin.as_str()).collect();
    Staged::new(writer, records, types, origins)
}

/// What became of one record, as the plugin said.
pub(crate) enum Output {
    Events(Events),
    Malformed(String),
}

/// The 0.2 deserializer world on the generic host.
pub(crate) struct DeserializerV2;

configured_world!(deserializer, DeserializerV2, Deserializer);

impl BatchWorld for DeserializerV2 {
    const CALL: &'static str = "deserialize";
    type Input = Input;
    type Output = Output;

    fn origin(input: &Input) -> &str {
        input.origin()
    }

    async fn call(
        guest: &deserializer::Guest,
        store: &mut Store<HostState>,
        batch: &[Input],
    ) -> wasmtime::Result<Vec<Output>> {
        let Some(call) = spans::view(batch) else {
            return Ok(Vec::new());
        };
        let reply = guest
            .call_deserialize(&mut *store, &call.data, &call.entries, &call.staged.shared)
            .await?;
        outputs(call.data, reply, batch.len()).map_err(wasmtime::Error::msg)
    }
}

/// The reply as one [`Output`] per record, after checking it: one outcome per record, exactly
/// as many events as the outcomes claim, every span inside its buffer. Anything else is a
/// plugin fault, treated as a trap.
fn outputs(
    input: Arc<Vec<u8>>,
    reply: deserializer::Reply,
    records: usize,
) -> Result<Vec<Output>, String> {
    let claimed: u64 = reply
        .outcomes
        .iter()
        .map(|o| match o {
            Outcome::Events(n) => u64::from(*n),
            Outcome::Malformed(_) => 0,
        })
        .sum();
    let refs = reply
        .events
        .iter()
        .map(|e| match e {
            EventRef::Input(s) => (Side::Input, s.offset, s.len),
            EventRef::Output(s) => (Side::Output, s.offset, s.len),
        })
        .collect();
    let mut events = Reply::check(
        input,
        reply.data,
        refs,
        reply.outcomes.len(),
        records,
        claimed,
        "outcomes",
        "records",
    )?;
    Ok(reply
        .outcomes
        .into_iter()
        .map(|o| match o {
            Outcome::Events(n) => Output::Events(events.take(n)),
            Outcome::Malformed(reason) => Output::Malformed(reason),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(payload: &str, origin: &str) -> RawRecord {
        RawRecord {
            payload: payload.as_bytes().to_vec(),
            key: None,
            received_at_ms: 7,
            origin: origin.to_owned(),
        }
    }

    fn span(offset: u32, len: u32) -> Span {
        super::span((offset, len))
    }

    fn texts(output: &Output) -> Result<Vec<String>, String> {
        match output {
            Output::Events(e) => Ok(e
                .iter()
                .map(|b| String::from_utf8_lossy(b).into())
                .collect()),
            Output::Malformed(reason) => Err(reason.clone()),
        }
    }

    #[test]
    fn staging_puts_every_payload_in_one_buffer_and_numbers_the_content_types() {
        let batch = [record("{}", "a"), record("[1]", "b"), record("x", "c")];
        let types = [
            Some("application/json".into()),
            None,
            Some("application/json".into()),
        ];
        let staged = stage(&batch, &types);
        assert_eq!(&staged.data[..], b"{}[1]x");
        assert_eq!(staged.entries[1].payload, span(2, 3));
        assert_eq!(staged.shared, vec!["application/json".to_owned()]);
        let indexes: Vec<_> = staged.entries.iter().map(|r| r.content_type).collect();
        assert_eq!(indexes, vec![Some(0), None, Some(0)]);
    }

    #[test]
    fn a_part_of_the_batch_is_rebased_onto_its_own_bytes() {
        let batch = [record("aa", "a"), record("bbb", "b"), record("c", "c")];
        let inputs = stage(&batch, &[]).inputs();
        let call = spans::view(&inputs[1..3]).unwrap();
        let (data, records) = (call.data, call.entries);
        assert_eq!(&data[..], b"bbbc");
        assert_eq!(records[0].payload, span(0, 3));
        assert_eq!(records[1].payload, span(3, 1));
    }

    #[test]
    fn a_reply_becomes_one_output_per_record_reading_both_buffers() {
        let input = Arc::new(br#"[{"a":1}]"#.to_vec());
        let reply = deserializer::Reply {
            data: br#"{"b":2}"#.to_vec(),
            events: vec![EventRef::Input(span(1, 7)), EventRef::Output(span(0, 7))],
            outcomes: vec![
                Outcome::Events(2),
                Outcome::Malformed("no".into()),
                Outcome::Events(0),
            ],
        };
        let out = outputs(input, reply, 3).unwrap();
        assert_eq!(
            texts(&out[0]),
            Ok(vec![r#"{"a":1}"#.into(), r#"{"b":2}"#.into()])
        );
        assert_eq!(texts(&out[1]), Err("no".into()));
        assert_eq!(texts(&out[2]), Ok(vec![]));
    }

    #[test]
    fn a_reply_that_lies_is_a_fault() {
        let input = Arc::new(b"{}".to_vec());
        let reply = |events: Vec<EventRef>, outcomes: Vec<Outcome>| deserializer::Reply {
            data: Vec::new(),
            events,
            outcomes,
        };
        let fault = |r| outputs(input.clone(), r, 1).err().unwrap();
        assert_eq!(
            fault(reply(vec![], vec![])),
            "the plugin returned 0 outcomes for 1 records"
        );
        assert_eq!(
            fault(reply(vec![], vec![Outcome::Events(1)])),
            "the plugin's outcomes claim 1 events but it returned 0"
        );
        assert_eq!(
            fault(reply(
                vec![EventRef::Input(span(1, 5))],
                vec![Outcome::Events(1)]
            )),
            "event 0 points at bytes 1..6 of a 2-byte buffer"
        );
        assert_eq!(
            fault(reply(
                vec![EventRef::Output(span(0, 1))],
                vec![Outcome::Events(1)]
            )),
            "event 0 points at bytes 0..1 of a 0-byte buffer"
        );
    }
}
