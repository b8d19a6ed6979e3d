//! The `processor-plugin` world of contract 0.3 (`wit/v0.3/processor.wit`): 0.2's processor
//! plus each event's Data Prepper metadata (event type, tags, attributes), which the plugin
//! reads and may set. Its `bindgen!`, recognising it, staging a batch with its metadata, and
//! the reply read into the outputs both contracts share; the typed front is
//! [`crate::Processor`], which picks this world for a 0.3 plugin.

use wasmtime::Store;

use crate::batch::BatchWorld;
use crate::engine::HostState;
use crate::events::Side;
use crate::worlds::processor::{Event, EventMetadata, Output, Said, outputs};
use crate::worlds::spans::{self, Entry, Writer};
use crate::worlds::{Descriptor, PluginKind, no_host_imports};

bindings!("../../wit/v0.3", "processor-plugin");

pub(crate) use bindings::exports::sluice::plugin::configure::{self, OptionEntry};
use bindings::exports::sluice::plugin::processor::{self, Event as Meta, Metadata, Verdict};
use bindings::sluice::plugin::types::{EventRef, Span};

/// The world on the list of `crate::worlds`.
pub(crate) static DESCRIPTOR: Descriptor = Descriptor {
    interface: "sluice:plugin/processor@0.3.0",
    world: "sluice:plugin/processor-plugin@0.3.0",
    kind: PluginKind::Processor,
    host_imports: &[],
    add_to_linker: no_host_imports,
    identify,
};

impl Entry for Meta {
    fn spans(&self) -> impl Iterator<Item = (u32, u32)> {
        std::iter::once((self.body.offset, self.body.len))
    }

    fn rebased(&self, by: u32) -> Self {
        Meta {
            body: Span {
                offset: self.body.offset - by,
                len: self.body.len,
            },
            received_at_ms: self.received_at_ms,
            metadata: self.metadata.clone(),
        }
    }
}

/// One event of a staged batch.
pub(crate) type Input = spans::Input<Meta>;

/// The 0.3 processor world on the generic host.
pub(crate) struct ProcessorV3World;

configured_world!(processor, ProcessorV3World, Processor);

impl From<Verdict> for Said {
    fn from(v: Verdict) -> Self {
        match v {
            Verdict::Keep => Said::Keep,
            Verdict::Drop => Said::Drop,
            Verdict::Replace(k) => Said::Replace(k),
            Verdict::Failed(reason) => Said::Failed(reason),
        }
    }
}

impl From<Metadata> for EventMetadata {
    fn from(m: Metadata) -> Self {
        EventMetadata {
            event_type: m.event_type,
            tags: m.tags,
            attributes: m.attributes,
        }
    }
}

impl BatchWorld for ProcessorV3World {
    const CALL: &'static str = "process";
    type Input = Input;
    type Output = Output;

    fn origin(input: &Input) -> &str {
        input.origin()
    }

    async fn call(
        guest: &processor::Guest,
        store: &mut Store<HostState>,
        batch: &[Input],
    ) -> wasmtime::Result<Vec<Output>> {
        let Some(call) = spans::view(batch) else {
            return Ok(Vec::new());
        };
        let reply = guest
            .call_process(&mut *store, &call.data, &call.entries)
            .await?;
        let refs = reply
            .events
            .iter()
            .map(|e| match e {
                EventRef::Input(s) => (Side::Input, s.offset, s.len),
                EventRef::Output(s) => (Side::Output, s.offset, s.len),
            })
            .collect();
        let said = reply.verdicts.into_iter().map(Said::from).collect();
        let metadata = reply
            .metadata
            .into_iter()
            .map(|(index, m)| (index, m.into()))
            .collect();
        outputs(call.data, reply.data, refs, said, metadata, batch.len())
            .map_err(wasmtime::Error::msg)
    }
}

/// `events` staged for one call, each with its metadata (an `EVENT` with none when the caller
/// gave none).
pub(crate) fn stage(events: &[Event<'_>]) -> spans::Staged<Meta> {
    let mut writer = Writer::with_capacity(events.iter().map(|e| e.body.len()).sum());
    let metas = events
        .iter()
        .map(|e| {
            let (offset, len) = writer.push(e.body);
            let m = e.metadata.cloned().unwrap_or_default();
            Meta {
                body: Span { offset, len },
                received_at_ms: e.received_at_ms,
                metadata: Metadata {
                    event_type: m.event_type,
                    tags: m.tags,
                    attributes: m.attributes,
                },
            }
        })
        .collect();
    let origins = events.iter().map(|e| e.origin).collect();
    spans::Staged::new(writer, metas, (), origins)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_goes_to_its_event_and_a_bad_index_is_a_fault() {
        let tagged = EventMetadata {
            event_type: "LOG".into(),
            tags: vec!["error".into()],
            attributes: r#"{"team":"db"}"#.into(),
        };
        let staged = stage(&[
            Event {
                body: b"{}",
                received_at_ms: 1,
                origin: "test",
                metadata: Some(&tagged),
            },
            Event {
                body: br#"{"a":1}"#,
                received_at_ms: 2,
                origin: "test",
                metadata: None,
            },
        ]);
        assert_eq!(staged.entries[0].metadata.tags, ["error"]);
        assert_eq!(staged.entries[1].metadata.event_type, "EVENT");
        assert_eq!(staged.entries[1].metadata.attributes, "{}");
        let input = staged.data.clone();
        let check = |metadata: Vec<(u32, EventMetadata)>| {
            outputs(
                input.clone(),
                Vec::new(),
                vec![(Side::Input, 2, 7)],
                vec![Said::Keep, Said::Replace(1)],
                metadata,
                2,
            )
        };
        let out = check(vec![(1, tagged.clone())]).unwrap();
        assert!(matches!(out[0], Output::Keep(None)));
        assert!(matches!(&out[1], Output::Replace(_, Some(m)) if *m == tagged));
        assert_eq!(
            check(vec![(2, tagged.clone())]).err().unwrap(),
            "the plugin set the metadata of event 2 of 2"
        );
        assert_eq!(
            check(vec![(0, tagged.clone()), (0, tagged.clone())])
                .err()
                .unwrap(),
            "the plugin set the metadata of event 0 twice"
        );
    }
}
