//! Data Prepper's processors, built into the host: each reads and changes one [`Event`] at a
//! time (data and metadata), with Data Prepper's options (`sluice_config::processor`). The
//! pipeline runs a run of consecutive built-ins on events parsed once, so twenty processors
//! cost one JSON parse and one serialization per event, not twenty.
//!
//! # Layout
//! - this file: [`Processor`], [`Fate`], [`BuildProcessor`] and [`build`], made from
//!   `sluice_config`'s processor list (one arm per line, generated), and `when`, how every
//!   `*_when` condition is read.
//! - one file per processor, each the runtime of the config type of the same name.
//! - [`java_time`], a folder: Java `DateTimeFormatter` patterns (`date`); `mod.rs` (the public
//!   surface), `zone.rs`, `pattern.rs`, `parse.rs`, `resolve.rs`, `format.rs`, `tests.rs`.
//!
//! Adding a processor: its config file in `sluice-config` (`processor/`), its file here, and
//! its line in `for_each_processor!`. The file imports its config module as `config` and
//! names the runtime type as the config type (`impl BuildProcessor for config::Flatten {
//! type Processor = Flatten; .. }`; configs that share one block share its name, `WithKeys`);
//! the runtime keeps what it uses of the config as is and adds what building derives
//! (regexes, keys). It holds only its own logic ([`Apply`]): [`build`] frames it with the
//! top-level `*_when`, logs each [`Failure`] (`processor` = its name in the file) and adds
//! `tags_on_failure`, both named by the config ([`BuildProcessor`]).

mod add_entries;
mod aggregate;
mod convert_entry_type;
mod copy_values;
mod csv;
mod date;
mod decompress;
mod delay;
mod delete_entries;
mod dissect;
mod drop_events;
mod filter_list;
mod flatten;
mod geoip;
mod grok;
pub mod java_time;
mod key_value;
mod list_to_map;
mod map_to_list;
mod obfuscate;
mod otel_metrics;
mod otel_traces;
mod parse_json;
mod parse_xml;
mod rate_limiter;
mod rename_keys;
mod replace_string;
mod select_entries;
mod service_map;
mod split_event;
mod split_string;
mod string_converter;
mod substitute_string;
mod trace_peer_forwarder;
mod translate;
mod truncate;
mod user_agent;
mod with_keys;
mod wrap_entries;
mod write_json;

use std::time::Instant;

use sluice_buffer::Share;
use sluice_config::BuiltinProcessor;
use sluice_event::{Event, Expression};

/// What becomes of an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Fate {
    /// It goes on (changed or not).
    Keep,
    /// Dropped on purpose (`drop_events`): counted, not dead-lettered.
    Drop,
    /// It goes on after these events made from it (`split_event`), in this order; they belong
    /// to its record and its batch, as Data Prepper adds them to its acknowledgement set.
    Split(Vec<Event>),
}

/// A built-in processor, ready to run: its options read, regexes compiled. Shared by a
/// pipeline's workers.
pub trait Processor: Send + Sync {
    /// Its name in the file (`add_entries`).
    fn name(&self) -> &'static str;

    /// Changes `event` in place, drops it, or splits it. Never fails: what Data Prepper logs
    /// or tags on failure, this does too, and the event goes on.
    fn process(&self, event: &mut Event) -> Fate;

    /// Called once before each batch's events go through it, on the worker's thread (`delay`
    /// waits there, as Data Prepper's waits once per batch). Nothing by default.
    fn batch(&self) {}
}

/// A processor that keeps events past their batch (Data Prepper's stateful processors:
/// `otel_traces` waits for a trace's root span, `service_map` for its window, `aggregate` for
/// its groups). Each event comes with its [`Share`] of its batch's acknowledgement, and the
/// processor keeps the share as long as it keeps the event or what it made of it: the batch is
/// acknowledged (for Kafka: committed) only once the event left and its sinks took it, so a
/// kill -9 while it holds events loses none. Shared by a pipeline's workers; its memory is
/// bounded (past its bound it lets events go early, as Data Prepper's flush would).
pub trait Stateful: Send + Sync {
    /// Its name in the file (`otel_traces`).
    fn name(&self) -> &'static str;

    /// Takes a batch's events, each with its share; returns what leaves now.
    fn process(&self, events: Vec<(Event, Share)>, now: Instant) -> Released;

    /// What leaves because its time came at `now` (a flush interval, a window, a group's
    /// duration), or everything it holds (`all`: shutdown). Called about once a second.
    fn flush(&self, now: Instant, all: bool) -> Released;

    /// How many events it holds now.
    fn held(&self) -> usize;
}

/// What leaves a [`Stateful`] processor: the events that go on to the next stage, and the
/// shares of every event that left it (went on, was dropped, or was folded into an event of
/// `events`), released once `events` are in the sinks.
#[derive(Debug, Default)]
pub struct Released {
    pub events: Vec<Event>,
    pub done: Vec<Share>,
    /// How many events it dropped on purpose (a sampler, a rate limiter, a duplicate), for
    /// the pipeline's count of dropped events.
    pub dropped: u64,
}

impl Released {
    /// Adds what `other` let go.
    pub fn extend(&mut self, other: Released) {
        self.events.extend(other.events);
        self.done.extend(other.done);
        self.dropped += other.dropped;
    }
}

/// A built-in, ready to run.
pub enum Built {
    /// One event at a time, nothing kept.
    Each(Box<dyn Processor>),
    /// Keeps events past their batch.
    Stateful(Box<dyn Stateful>),
}

/// How a built-in's config becomes its processor; each config type of the list implements it
/// (or [`BuildStateful`]) in its file here. What the config's own rules could not check (grok
/// patterns compiled, pattern files read) fails here, and `sluice validate` builds every
/// built-in to report it ([`check`]). The generated [`build`] puts the processor in the frame
/// every built-in shares ([`Apply`]); the provided methods tell the frame what the config says.
pub trait BuildProcessor {
    /// The processor's own logic: the type of the config type's name, in its file.
    type Processor: Apply + 'static;

    /// The processor's top-level `*_when`: the frame gives it only the events this selects.
    /// None by default.
    fn when(&self) -> Option<&Expression> {
        None
    }

    /// `tags_on_failure`: what the frame adds to an event the processor failed on. None by
    /// default.
    fn tags_on_failure(&self) -> &[String] {
        &[]
    }

    /// Whether the frame logs a failure (`handle_failed_events`: not `skip_silently`). Yes by
    /// default.
    fn logs_failures(&self) -> bool {
        true
    }

    /// The processor, its options read and its regexes compiled.
    fn build(&self) -> Result<Self::Processor, BuildError>;
}

/// A built-in processor's own logic, which [`build`] puts in a frame: the frame checks the
/// top-level `*_when` first and, when the logic fails on an event, logs the [`Failure`] and
/// adds `tags_on_failure`; the event goes on ([`Fate::Keep`]).
pub trait Apply: Send + Sync {
    /// Changes `event` in place, or drops it; `Err` when it failed on it (what it did before
    /// the failure stays). `name` is the processor's name in the file (`convert_type` or
    /// `convert_entry_type`), for what it logs and for its entries' conditions.
    fn apply(&self, event: &mut Event, name: &'static str) -> Result<Fate, Failure>;

    /// Called once before each batch ([`Processor::batch`]). Nothing by default.
    fn batch(&self) {}
}

/// Why a processor's own logic failed on an event: the frame logs the reason (with the
/// processor's name) and, unless Data Prepper only logs this one ([`Failure::untagged`]), adds
/// `tags_on_failure`. `?` on a `String` error makes one that tags.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Failure {
    reason: String,
    /// Whether the frame adds `tags_on_failure`.
    tagged: bool,
}

impl Failure {
    /// A failure that tags the event `tags_on_failure`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            tagged: true,
        }
    }

    /// A failure that is logged only, where Data Prepper tags nothing.
    pub fn untagged(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            tagged: false,
        }
    }
}

impl From<String> for Failure {
    fn from(reason: String) -> Self {
        Self::new(reason)
    }
}

/// The failures of a processor that finishes its work after one (`convert_type`'s other keys,
/// `add_entries`' other entries), for one log line and one tagging per event: the first
/// reason and how many followed; tagged if any tags.
#[derive(Debug, Default)]
pub(crate) struct Failures {
    first: Option<Failure>,
    more: usize,
}

impl Failures {
    /// Counts one more; the first reason stays.
    pub(crate) fn add(&mut self, failure: impl Into<Failure>) {
        let failure = failure.into();
        match &mut self.first {
            None => self.first = Some(failure),
            Some(first) => {
                first.tagged |= failure.tagged;
                self.more += 1;
            }
        }
    }

    /// What the processor returns: `Keep`, or the failures as one.
    pub(crate) fn into_result(self) -> Result<Fate, Failure> {
        match self.first {
            None => Ok(Fate::Keep),
            Some(first) if self.more == 0 => Err(first),
            Some(first) => Err(Failure {
                reason: format!("{} (and {} more)", first.reason, self.more),
                tagged: first.tagged,
            }),
        }
    }
}

/// A processor's own logic in the frame every built-in shares (see [`Apply`]).
struct Framed<P> {
    /// What it goes by (`convert_type`, under either of its names).
    name: &'static str,
    /// Its name in the pipeline file (`convert_type` or `convert_entry_type`), for the logs.
    written: &'static str,
    when: Option<Expression>,
    tags_on_failure: Vec<String>,
    logs_failures: bool,
    processor: P,
}

impl<P: Apply> Processor for Framed<P> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn batch(&self) {
        self.processor.batch();
    }

    fn process(&self, event: &mut Event) -> Fate {
        if !when(self.written, self.when.as_ref(), event) {
            return Fate::Keep;
        }
        match self.processor.apply(event, self.written) {
            Ok(fate) => fate,
            Err(failure) => {
                if self.logs_failures {
                    tracing::debug!(processor = self.written, reason = %failure, tagged = failure.tagged, "failed on the event; it goes on");
                }
                if failure.tagged {
                    event.metadata.add_tags(&self.tags_on_failure);
                }
                Fate::Keep
            }
        }
    }
}

/// [`BuildProcessor`] for the processors that keep events ([`Stateful`]).
pub trait BuildStateful {
    fn build(&self) -> Result<Box<dyn Stateful>, BuildError>;
}

/// Either kind of config, for [`build`]: `name` is what the processor goes by, `written` the
/// name the pipeline file gave it (a deprecated one, maybe).
trait Build {
    fn build_any(&self, name: &'static str, written: &'static str) -> Result<Built, BuildError>;
}

impl<C: BuildProcessor> Build for C {
    fn build_any(&self, name: &'static str, written: &'static str) -> Result<Built, BuildError> {
        let processor = BuildProcessor::build(self)?;
        Ok(Built::Each(Box::new(Framed {
            name,
            written,
            when: self.when().cloned(),
            tags_on_failure: self.tags_on_failure().to_vec(),
            logs_failures: self.logs_failures(),
            processor,
        })))
    }
}

/// Why a built-in's config does not make a processor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BuildError {
    /// The key of the processor's block at fault (`match.message`), for the error's path.
    pub key: String,
    pub message: String,
}

macro_rules! build_processor {
    ($( $(#[$doc:meta])* $variant:ident($config:ty) = $name:literal, )*) => {
        /// The processor a built-in's config makes.
        pub fn build(builtin: &BuiltinProcessor) -> Result<Built, BuildError> {
            match *builtin {
                $( BuiltinProcessor::$variant(ref config) => {
                    config.build_any(first_name::<$config>(), $name)
                } )*
            }
        }

        /// The name of a config type's first line in the list, which its processor goes by
        /// under every name ([`Processor::name`]: `convert_entry_type` is `convert_type`).
        fn first_name<C: 'static>() -> &'static str {
            use std::any::TypeId;
            $( if TypeId::of::<C>() == TypeId::of::<$config>() {
                return $name;
            } )*
            unreachable!("only the list's config types are built")
        }
    };
}
sluice_config::for_each_processor!(build_processor);

/// Builds `builtin` to see that it can be: for `sluice_config::Context::builtins`, so
/// `validate` reports what only building finds, at the processor's key.
pub fn check(builtin: &BuiltinProcessor) -> Result<(), (String, String)> {
    build(builtin).map(drop).map_err(|e| (e.key, e.message))
}

/// Whether a `*_when` of the processor named `processor` lets it act on `event`: no condition
/// is yes; a condition that cannot be evaluated (a type mismatch) is no, as Data Prepper's
/// processors skip the event (or the entry).
pub(crate) fn when(processor: &str, condition: Option<&Expression>, event: &Event) -> bool {
    let Some(condition) = condition else {
        return true;
    };
    condition.matches(event).unwrap_or_else(|e| {
        tracing::debug!(processor, condition = condition.source(), error = %e, "condition could not be evaluated; skipped");
        false
    })
}

/// A regular expression that must match a whole key, as Java's `Matcher.matches()` (the
/// `*_regex` options that select keys).
pub(crate) fn whole(regex: &str) -> regex::Regex {
    regex::Regex::new(&format!("^(?:{regex})$")).expect("checked at validate")
}

/// A value as Data Prepper reads it with `event.get(key, String.class)`: text as is, a number
/// or boolean as its text, `null` (or no value) as none; an object or a list cannot be read so
/// (`Err`).
pub(crate) fn java_string(value: Option<&serde_json::Value>) -> Result<Option<String>, ()> {
    use serde_json::Value;
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(Value::Bool(b)) => Ok(Some(b.to_string())),
        Some(Value::Object(_) | Value::Array(_)) => Err(()),
    }
}

/// Data Prepper's `JacksonEventKey.replaceInvalidCharacters` (`normalize_keys`): a key with a
/// character a key cannot have gets `_` for each character outside `A-Za-z0-9._~@/[]()-`
/// (so white space and `$` too); a valid key is kept as is.
pub(crate) fn normalize_key(key: &str) -> String {
    if sluice_event::Key::parse(key).is_ok() {
        return key.to_owned();
    }
    let mut out = String::with_capacity(key.len());
    for c in key.chars() {
        if c.is_ascii_alphanumeric() || "._~@/[]()-".contains(c) {
            out.push(c);
        } else {
            // Java replaces each UTF-16 unit.
            for _ in 0..c.len_utf16() {
                out.push('_');
            }
        }
    }
    out
}

/// `normalize_keys` on an object's keys, and its objects' keys, not into lists (Data
/// Prepper's `JacksonEvent.normalizeKeys`). A later key that normalizes to an earlier one
/// replaces its value.
pub(crate) fn normalize_keys(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (normalize_key(&k), normalize_keys(v)))
                .collect(),
        ),
        other => other,
    }
}

/// Puts each entry of `map` at the key its name spells (`a/b` nests), every name checked first
/// so the event gets all of them or none; `what` says whose keys they are in the error
/// (`flattened`).
pub(crate) fn put_all(
    event: &mut Event,
    map: serde_json::Map<String, serde_json::Value>,
    what: &str,
) -> Result<(), String> {
    let keys = map
        .keys()
        .map(|k| match sluice_event::Key::parse(k) {
            Ok(key) if key.is_root() => Err(format!("{what} key `{k}` is empty")),
            Ok(key) => Ok(key),
            Err(e) => Err(e.to_string()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (key, (_, value)) in keys.iter().zip(map) {
        event.put(key, value).map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod testing {
    use serde_json::Value;
    use sluice_event::{Event, Metadata};

    use super::{Fate, Processor};

    /// A pipeline file whose one processor is the `processor:` list item `yaml`.
    fn pipeline(yaml: &str) -> String {
        format!(
            "p:\n  source:\n    http:\n  processor:\n    - {}\n  sink:\n    - stdout:\n",
            yaml.replace('\n', "\n      ")
        )
    }

    /// The processor of a `processor:` list item written in YAML.
    pub(crate) fn processor(yaml: &str) -> Box<dyn Processor> {
        let mut config = sluice_config::parse("t.yaml", &pipeline(yaml), Default::default())
            .unwrap_or_else(|e| panic!("{e}"));
        match config.pipelines.remove(0).processor.remove(0) {
            sluice_config::Processor::Builtin(b) => match super::build(&b).unwrap() {
                super::Built::Each(p) => p,
                super::Built::Stateful(p) => panic!("`{}` keeps events", p.name()),
            },
            sluice_config::Processor::Plugin(p) => panic!("`{}` is not built in", p.name),
        }
    }

    /// The stateful processor of a `processor:` list item written in YAML.
    pub(crate) fn stateful(yaml: &str) -> Box<dyn super::Stateful> {
        let mut config = sluice_config::parse("t.yaml", &pipeline(yaml), Default::default())
            .unwrap_or_else(|e| panic!("{e}"));
        match config.pipelines.remove(0).processor.remove(0) {
            sluice_config::Processor::Builtin(b) => match super::build(&b).unwrap() {
                super::Built::Stateful(p) => p,
                super::Built::Each(_) => panic!("`{yaml}` keeps no events"),
            },
            sluice_config::Processor::Plugin(p) => panic!("`{}` is not built in", p.name),
        }
    }

    /// The errors `sluice validate` gives for a `processor:` list item written in YAML (serde's,
    /// the processor's own rules, and what only building finds), which must not be accepted.
    pub(crate) fn invalid(yaml: &str) -> String {
        let context = sluice_config::Context {
            builtins: Some(super::check),
            ..Default::default()
        };
        match sluice_config::parse("t.yaml", &pipeline(yaml), context) {
            Ok(_) => panic!("`{yaml}` is valid"),
            Err(e) => e.to_string(),
        }
    }

    /// The event after `processor`, or `None` if dropped.
    pub(crate) fn run(processor: &dyn Processor, data: Value) -> Option<Value> {
        let mut event = Event::new(data, Metadata::new("LOG", 0));
        match processor.process(&mut event) {
            Fate::Keep => Some(event.data),
            Fate::Drop => None,
            Fate::Split(_) => panic!("split: use `run_all`"),
        }
    }

    /// Every event's data after `processor`, in order (those it split off, then the event;
    /// none if dropped).
    pub(crate) fn run_all(processor: &dyn Processor, data: Value) -> Vec<Value> {
        let mut event = Event::new(data, Metadata::new("LOG", 0));
        match processor.process(&mut event) {
            Fate::Keep => vec![event.data],
            Fate::Drop => Vec::new(),
            Fate::Split(before) => before
                .into_iter()
                .map(|e| e.data)
                .chain([event.data])
                .collect(),
        }
    }

    /// The event, data and metadata, after `processor` (which must keep it).
    pub(crate) fn run_event(processor: &dyn Processor, data: Value) -> Event {
        let mut event = Event::new(data, Metadata::new("LOG", 0));
        assert_eq!(processor.process(&mut event), Fate::Keep);
        event
    }

    /// The event's data and tags after `processor` (which must keep it).
    pub(crate) fn tagged(processor: &dyn Processor, data: Value) -> (Value, Vec<String>) {
        let event = run_event(processor, data);
        (event.data, event.metadata.tags)
    }
}

/// The documented examples (`tests/data/dataprepper/conformance`) of the processors whose
/// list and key options are built here, run through each processor alone (the binary's
/// conformance test runs every processor's through a pipeline).
#[cfg(test)]
mod documented {
    use serde_json::Value;

    use crate::testing::{processor, run};

    #[test]
    fn the_documented_examples_of_the_mutate_processors_and_date() {
        let mut ran = 0;
        for name in [
            "add_entries",
            "delete_entries",
            "rename_keys",
            "copy_values",
            "date",
        ] {
            let text = std::fs::read_to_string(crate::conformance(name)).unwrap();
            let cases: Vec<Value> = serde_json::from_str(&text).unwrap();
            for case in cases {
                let left_out = case["notes"]
                    .as_str()
                    .is_some_and(|n| n.contains("nondeterministic"))
                    || case
                        .get("doc_suspect")
                        .is_some_and(|s| !s.is_null() && s != false);
                if left_out || !case["processor"].is_object() || !case["output"].is_object() {
                    continue;
                }
                // JSON is YAML.
                let p = processor(&case["processor"].to_string());
                let out = run(&*p, case["input"].clone());
                assert_eq!(out.as_ref(), Some(&case["output"]), "{}", case["id"]);
                ran += 1;
            }
        }
        assert!(ran >= 10, "only {ran} cases ran");
    }
}

/// The stateful processors' configs, for [`build`].
macro_rules! stateful {
    ($($config:ty),* $(,)?) => {
        $(impl Build for $config {
            // A stateful processor names itself.
            fn build_any(&self, _: &'static str, _: &'static str) -> Result<Built, BuildError> {
                BuildStateful::build(self).map(Built::Stateful)
            }
        })*
    };
}
stateful!(
    sluice_config::processor::otel_traces::OtelTraces,
    sluice_config::processor::service_map::ServiceMap,
    sluice_config::processor::aggregate::Aggregate,
);

/// Data Prepper's documented cases `tests/data/dataprepper/conformance/{name}.json`, found at
/// run time (cargo sets `CARGO_MANIFEST_DIR` for a test): a test binary that a shared target
/// folder kept from another checkout of the tree would read that checkout's files through a
/// path built in with `env!`.
#[cfg(test)]
fn conformance(name: &str) -> std::path::PathBuf {
    let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("run by cargo test");
    std::path::Path::new(&crate_dir).join(format!(
        "../../tests/data/dataprepper/conformance/{name}.json"
    ))
}
