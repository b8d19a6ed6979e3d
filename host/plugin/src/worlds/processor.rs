//! The `processor-plugin` world of contract 0.2 (`wit/v0.2/processor.wit`): a batch of events
//! in, one verdict per event out (keep, drop, replace by zero or more events, failed). Its
//! `bindgen!`, recognising it, and [`Processor`], the typed front a pipeline's processor stage
//! calls. Retry, isolation and recycling are the generic runner's, as for deserializers.
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
use crate::worlds::spans::{self, Entry, Reply, Writer};
use crate::worlds::{Descriptor, PluginKind, no_host_imports};

bindings!("../../wit/v0.2", "processor-plugin");

use bindings::exports::sluice::plugin::configure::{self, OptionEntry};
use bindings::exports::sluice::plugin::processor::{self, Event as Meta, Reply as Answer, Verdict};
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
}

/// What became of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Processed {
    /// Unchanged: the caller keeps the event it passed.
    Keep,
    /// Filtered out on purpose.
    Drop,
    /// Replaced by these events (none: removed).
    Replace(Events),
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

/// What the plugin said of one event (before the batch policy adds traps).
pub(crate) enum Output {
    Keep,
    Drop,
    Replace(Events),
    Failed(String),
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
        outputs(call.data, reply, batch.len()).map_err(wasmtime::Error::msg)
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
    let origins = events.iter().map(|e| e.origin.to_owned()).collect();
    spans::Staged::new(writer, metas, (), origins)
}

/// The reply as one [`Output`] per event, after checking it: one verdict per event, exactly
/// as many events as the verdicts claim, every span inside its buffer. Anything else is a
/// plugin fault, treated as a trap.
fn outputs(input: Arc<Vec<u8>>, reply: Answer, n: usize) -> Result<Vec<Output>, String> {
    let claimed: u64 = reply
        .verdicts
        .iter()
        .map(|v| match v {
            Verdict::Replace(k) => u64::from(*k),
            _ => 0,
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
        reply.verdicts.len(),
        n,
        claimed,
        "verdicts",
        "events",
    )?;
    Ok(reply
        .verdicts
        .into_iter()
        .map(|v| match v {
            Verdict::Keep => Output::Keep,
            Verdict::Drop => Output::Drop,
            Verdict::Replace(k) => Output::Replace(events.take(k)),
            Verdict::Failed(reason) => Output::Failed(reason),
        })
        .collect())
}

/// Counters of one processor, for metrics and tests.
pub type ProcessorStats = CallStats;

/// A processor instance plus the call policy. Not shared: each worker owns one.
pub struct Processor {
    runner: Runner<ProcessorWorld>,
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
        let options = option_entries(options, |key, value| OptionEntry { key, value });
        Ok(Self {
            runner: Runner::new(plugin, options, limits)?,
        })
    }

    /// The plugin this processor runs.
    pub fn plugin(&self) -> &Plugin {
        self.runner.plugin()
    }

    /// Counters since this processor was made.
    pub fn stats(&self) -> ProcessorStats {
        self.runner.stats()
    }

    /// Processes `events`: exactly one [`Processed`] per event, in order. Blocks: call it off
    /// the async reactor.
    pub fn process(&mut self, events: &[Event<'_>]) -> Vec<Processed> {
        let inputs = stage(events).inputs();
        self.runner
            .run(&inputs)
            .into_iter()
            .map(|result| match result {
                Ok(Output::Keep) => Processed::Keep,
                Ok(Output::Drop) => Processed::Drop,
                Ok(Output::Replace(events)) => Processed::Replace(events),
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
        }
    }

    fn reply(data: &str, events: Vec<EventRef>, verdicts: Vec<Verdict>) -> Answer {
        Answer {
            data: data.as_bytes().to_vec(),
            events,
            verdicts,
        }
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
        let out = outputs(staged.data.clone(), r, 4).unwrap();
        assert!(matches!(out[0], Output::Keep));
        let Output::Replace(events) = &out[1] else {
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
        let fault = |r| outputs(data_all.clone(), r, 1).err().unwrap();
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
