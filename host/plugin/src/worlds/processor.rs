//! The `processor-plugin` world of contract 0.2 (`wit/v0.2/processor.wit`): a batch of events
//! in, one verdict per event out (keep, drop, replace by zero or more events, failed). Its
//! `bindgen!`, recognising it, the reply's checks both processor contracts share (`outputs`),
//! and [`Processor`], the typed front a pipeline's processor stage calls, for 0.2 or 0.3
//! (`processor_v3`: the same with event metadata). Retry, isolation and recycling are the
//! generic runner's, as for deserializers.
//!
//! Data flow: [`Plugin`] → [`Processor::new`] (instantiate, `configure`) per worker →
//! [`Processor::process`] per batch of events → one [`Processed`] per event.

use std::sync::Arc;

use wasmtime::Store;

use crate::batch::{BatchWorld, Runner};
use crate::engine::{HostState, Plugin};
use crate::error::PluginError;
use crate::events::{Events, Side};
use crate::instance::{CallStats, option_entries};
use crate::sandbox::Limits;
use crate::worlds::processor_v3::{self as v3, ProcessorV3World};
use crate::worlds::spans::{self, Entry, Reply, Writer};
use crate::worlds::{Descriptor, PluginKind, no_host_imports};

bindings!("../../wit/v0.2", "processor-plugin");

use bindings::exports::sluice::plugin::configure::{self, OptionEntry};
use bindings::exports::sluice::plugin::processor::{self, Event as Meta, Verdict};
use bindings::sluice::plugin::types::{EventRef, Span};

/// The world on the list of `crate::worlds`.
pub(crate) static DESCRIPTOR: Descriptor = Descriptor {
    interface: "sluice:plugin/processor@0.2.0",
    world: "sluice:plugin/processor-plugin@0.2.0",
    kind: PluginKind::Processor,
    host_imports: &[],
    add_to_linker: no_host_imports,
    identify,
};

/// One event handed to a processor.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    /// The event: one JSON object as UTF-8 text.
    pub body: &'a [u8],
    /// When the source received the record the event came from (ms since the Unix epoch).
    pub received_at_ms: u64,
    /// Where that record came from, for logs (`http:/log/ingest`).
    pub origin: &'a str,
    /// The event's metadata, for a processor that sees it (contract 0.3:
    /// [`Processor::sees_metadata`]); `None` reads as an `EVENT` with no tags or attributes.
    pub metadata: Option<&'a EventMetadata>,
}

/// Data Prepper's metadata of an event as a 0.3 processor reads and sets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventMetadata {
    /// `LOG`, `TRACE`, `METRIC`, `EVENT`.
    pub event_type: String,
    /// The tags, in order.
    pub tags: Vec<String>,
    /// The attributes: one JSON object as text from the host; from a plugin, text the caller
    /// must check.
    pub attributes: String,
}

impl Default for EventMetadata {
    fn default() -> Self {
        Self {
            event_type: "EVENT".to_owned(),
            tags: Vec::new(),
            attributes: "{}".to_owned(),
        }
    }
}

/// What became of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Processed {
    /// Unchanged: the caller keeps the event it passed, with new metadata if the processor
    /// set some (0.3).
    Keep(Option<EventMetadata>),
    /// Filtered out on purpose.
    Drop,
    /// Replaced by these events (none: removed), each with the metadata of the event it
    /// replaces, or with new metadata if the processor set some (0.3).
    Replace(Events, Option<EventMetadata>),
    /// The processor could not process it, and said why.
    Failed(String),
    /// The processor trapped on this event alone (after a retry on a fresh instance).
    Trapped(String),
}

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
            ..*self
        }
    }
}

/// One event of a staged batch.
pub(crate) type Input = spans::Input<Meta>;

/// The processor world on the generic host.
pub(crate) struct ProcessorWorld;

configured_world!(processor, ProcessorWorld, Processor);

/// What the plugin said of one event (before the batch policy adds traps), whichever its
/// contract (0.2 sets no metadata).
pub(crate) enum Output {
    Keep(Option<EventMetadata>),
    Drop,
    Replace(Events, Option<EventMetadata>),
    Failed(String),
}

/// A verdict as both contracts' bindings say it.
pub(crate) enum Said {
    Keep,
    Drop,
    Replace(u32),
    Failed(String),
}

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

impl BatchWorld for ProcessorWorld {
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
        let refs = reply.events.iter().map(event_ref).collect();
        let said = reply.verdicts.into_iter().map(Said::from).collect();
        outputs(call.data, reply.data, refs, said, Vec::new(), batch.len())
            .map_err(wasmtime::Error::msg)
    }
}

/// Which buffer an event of a reply is in, and where.
fn event_ref(e: &EventRef) -> (Side, u32, u32) {
    match e {
        EventRef::Input(s) => (Side::Input, s.offset, s.len),
        EventRef::Output(s) => (Side::Output, s.offset, s.len),
    }
}

fn stage(events: &[Event<'_>]) -> spans::Staged<Meta> {
    let mut writer = Writer::with_capacity(events.iter().map(|e| e.body.len()).sum());
    let metas = events
        .iter()
        .map(|e| {
            let (offset, len) = writer.push(e.body);
            Meta {
                body: Span { offset, len },
                received_at_ms: e.received_at_ms,
            }
        })
        .collect();
    let origins = events.iter().map(|e| e.origin).collect();
    spans::Staged::new(writer, metas, (), origins)
}

/// A reply (its `data`, events, verdicts and, from 0.3, new metadata by input index) as one
/// [`Output`] per event, after checking it: one verdict per event, exactly as many events as
/// the verdicts claim, every span inside its buffer, new metadata only for input events and
/// once each. Anything else is a plugin fault, treated as a trap.
pub(crate) fn outputs(
    input: Arc<Vec<u8>>,
    data: Vec<u8>,
    refs: Vec<(Side, u32, u32)>,
    verdicts: Vec<Said>,
    metadata: Vec<(u32, EventMetadata)>,
    n: usize,
) -> Result<Vec<Output>, String> {
    let claimed: u64 = verdicts
        .iter()
        .map(|v| match v {
            Said::Replace(k) => u64::from(*k),
            _ => 0,
        })
        .sum();
    let mut events = Reply::check(
        input,
        data,
        refs,
        verdicts.len(),
        n,
        claimed,
        "verdicts",
        "events",
    )?;
    let mut new = vec![None; n];
    for (index, m) in metadata {
        match new.get_mut(index as usize) {
            Some(slot @ None) => *slot = Some(m),
            Some(Some(_)) => {
                return Err(format!(
                    "the plugin set the metadata of event {index} twice"
                ));
            }
            None => {
                return Err(format!(
                    "the plugin set the metadata of event {index} of {n}"
                ));
            }
        }
    }
    Ok(verdicts
        .into_iter()
        .zip(new)
        .map(|(v, metadata)| match v {
            Said::Keep => Output::Keep(metadata),
            Said::Drop => Output::Drop,
            Said::Replace(k) => Output::Replace(events.take(k), metadata),
            Said::Failed(reason) => Output::Failed(reason),
        })
        .collect())
}

/// Counters of one processor, for metrics and tests.
pub type ProcessorStats = CallStats;

/// A processor instance plus the call policy. Not shared: each worker owns one.
pub struct Processor {
    runner: Contract,
}

/// The runner of the plugin's contract.
enum Contract {
    V2(Runner<ProcessorWorld>),
    V3(Runner<ProcessorV3World>),
}

impl Processor {
    /// Instantiates `plugin` and calls its `configure` export with `options`. Fails when the
    /// plugin is not a processor, refuses the options, or cannot start. Blocks: call it off the
    /// async reactor.
    pub fn new(
        plugin: Plugin,
        options: Vec<(String, String)>,
        limits: Limits,
    ) -> Result<Self, PluginError> {
        // Which contract: the world's descriptor (a plugin of another kind is refused by the
        // runner, naming the processor worlds).
        let runner = if std::ptr::eq(plugin.inner.descriptor, &v3::DESCRIPTOR) {
            let options = option_entries(options, |key, value| v3::OptionEntry { key, value });
            Contract::V3(Runner::new(plugin, options, limits)?)
        } else {
            let options = option_entries(options, |key, value| OptionEntry { key, value });
            Contract::V2(Runner::new(plugin, options, limits)?)
        };
        Ok(Self { runner })
    }

    /// The plugin this processor runs.
    pub fn plugin(&self) -> &Plugin {
        match &self.runner {
            Contract::V2(r) => r.plugin(),
            Contract::V3(r) => r.plugin(),
        }
    }

    /// Counters since this processor was made.
    pub fn stats(&self) -> ProcessorStats {
        match &self.runner {
            Contract::V2(r) => r.stats(),
            Contract::V3(r) => r.stats(),
        }
    }

    /// Whether the plugin reads and sets event metadata (contract 0.3), so the caller passes
    /// [`Event::metadata`] and applies what comes back.
    pub fn sees_metadata(&self) -> bool {
        matches!(self.runner, Contract::V3(_))
    }

    /// Processes `events`: exactly one [`Processed`] per event, in order. Blocks: call it off
    /// the async reactor.
    pub fn process(&mut self, events: &[Event<'_>]) -> Vec<Processed> {
        let results = match &mut self.runner {
            Contract::V2(runner) => runner.run(&stage(events).inputs()),
            Contract::V3(runner) => runner.run(&v3::stage(events).inputs()),
        };
        results
            .into_iter()
            .map(|result| match result {
                Ok(Output::Keep(metadata)) => Processed::Keep(metadata),
                Ok(Output::Drop) => Processed::Drop,
                Ok(Output::Replace(events, metadata)) => Processed::Replace(events, metadata),
                Ok(Output::Failed(reason)) => Processed::Failed(reason),
                Err(reason) => Processed::Trapped(reason),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(body: &str) -> Event<'_> {
        Event {
            body: body.as_bytes(),
            received_at_ms: 1,
            origin: "test",
            metadata: None,
        }
    }

    /// A 0.2 reply: its data, events and verdicts.
    type Answer = (&'static str, Vec<EventRef>, Vec<Verdict>);

    fn reply(data: &'static str, events: Vec<EventRef>, verdicts: Vec<Verdict>) -> Answer {
        (data, events, verdicts)
    }

    /// `outputs` of a 0.2 reply to `n` events staged in `input`.
    fn checked(
        input: Arc<Vec<u8>>,
        (data, events, verdicts): Answer,
        n: usize,
    ) -> Result<Vec<Output>, String> {
        let refs = events.iter().map(event_ref).collect();
        let said = verdicts.into_iter().map(Said::from).collect();
        outputs(input, data.as_bytes().to_vec(), refs, said, Vec::new(), n)
    }

    fn span(offset: u32, len: u32) -> Span {
        Span { offset, len }
    }

    #[test]
    fn verdicts_become_outputs_and_replacements_read_either_buffer() {
        let staged = stage(&[
            event(r#"{"a":1}"#),
            event(r#"{"b":2}"#),
            event("{}"),
            event("{}"),
        ]);
        assert_eq!(&staged.data[..], br#"{"a":1}{"b":2}{}{}"#);
        let r = reply(
            r#"{"c":3}"#,
            vec![EventRef::Output(span(0, 7)), EventRef::Input(span(7, 7))],
            vec![
                Verdict::Keep,
                Verdict::Replace(2),
                Verdict::Drop,
                Verdict::Failed("no".into()),
            ],
        );
        let out = checked(staged.data.clone(), r, 4).unwrap();
        assert!(matches!(out[0], Output::Keep(None)));
        let Output::Replace(events, None) = &out[1] else {
            panic!("a replacement")
        };
        assert_eq!(
            events,
            &Events::from(vec![r#"{"c":3}"#.to_owned(), r#"{"b":2}"#.to_owned()])
        );
        assert!(matches!(out[2], Output::Drop));
        assert!(matches!(&out[3], Output::Failed(r) if r == "no"));
    }

    #[test]
    fn a_part_is_rebased_and_a_lying_reply_is_a_fault() {
        let staged = stage(&[event("{}"), event(r#"{"x":1}"#), event("{}")]);
        let data_all = staged.data.clone();
        let inputs = staged.inputs();
        let call = spans::view(&inputs[1..3]).unwrap();
        let (data, metas) = (call.data, call.entries);
        assert_eq!(&data[..], br#"{"x":1}{}"#);
        assert_eq!((metas[1].body.offset, metas[1].body.len), (7, 2));
        let fault = |r| checked(data_all.clone(), r, 1).err().unwrap();
        assert_eq!(
            fault(reply("", vec![], vec![])),
            "the plugin returned 0 verdicts for 1 events"
        );
        assert_eq!(
            fault(reply("", vec![], vec![Verdict::Replace(1)])),
            "the plugin's verdicts claim 1 events but it returned 0"
        );
        assert_eq!(
            fault(reply(
                "",
                vec![EventRef::Output(span(0, 1))],
                vec![Verdict::Replace(1)]
            )),
            "event 0 points at bytes 0..1 of a 0-byte buffer"
        );
    }
}
