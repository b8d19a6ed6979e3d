//! `aggregate`: Data Prepper's `AggregateProcessor`. Events are grouped by the values of
//! `identification_keys` (a missing key is `null`); each group has the action's state, made
//! on the group's first event and concluded `group_duration` after it (`tail_sampler`:
//! `wait_period`, in whole seconds, after the group's last event). Whether groups are due is
//! checked at the start of every `process` and `flush` call, as Data Prepper checks on every
//! `doExecute`; what concluded groups make leaves first, then what the batch's events make,
//! in order.
//!
//! Per event (Data Prepper's `handleEvent`) the action lets it go on now (`remove_duplicates`'
//! first event, a sampler's pick: tagged with `aggregated_events_tag`), folds it into the
//! group (`put_all`, `count`, `histogram`, `append`, `tail_sampler`) or drops it. With
//! `output_unaggregated_events` every event also goes on as it came.
//!
//! Acknowledgements: an event folded into a group keeps its [`Share`] in the group until the
//! group concludes, then the shares of all its events go with what it made (unless
//! `disable_group_acknowledgments`: then at once, except `tail_sampler`'s, whose group holds
//! the events themselves). An event that goes on or is dropped at once releases at once.
//!
//! Where sluice differs from Data Prepper:
//! - `aggregate_when`: an event it does not select goes on unchanged, as the docs say and as
//!   Data Prepper's peer-forwarding wrapper does (the processor itself drops it, which Data
//!   Prepper shows only with `local_mode: true`).
//! - `max_held_events` (sluice's): past it the oldest groups conclude early.
//! - `rate_limiter` with `when_exceeds: block` does not hold every worker for as long as the
//!   rate asks: see [`rate_limiter`].
//! - `histogram` without `record_minmax` concludes with no exemplars (Data Prepper fails there
//!   and never concludes the group); its min and max exemplars are each group's own.
//! - `append` keeps appending past a key's second value (Data Prepper's list of two is fixed
//!   in size: a third value fails and that event goes on unaggregated).
//! - Times the `raw` formats write in the JVM's zone are written in UTC.

mod append;
mod count;
mod histogram;
mod percent_sampler;
mod put_all;
mod rate_limiter;
mod remove_duplicates;
mod tail_sampler;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value};
use sluice_buffer::Share;
use sluice_config::processor::aggregate::{self as config, Action as ActionConfig};
use sluice_event::{Event, Expression, Key, Metadata};

use crate::{BuildError, BuildStateful, Released, Stateful};

/// The longest one `process` call waits for `rate_limiter`'s `block` (see [`rate_limiter`]).
const MAX_BLOCK: Duration = Duration::from_secs(1);

/// What an action did with an event.
#[allow(
    clippy::large_enum_variant,
    reason = "made and taken apart once per event; the event is moved on, never stored so"
)]
pub(super) enum Handled {
    /// It goes on now: the event itself (or, when the action failed on it, unchanged, as
    /// Data Prepper lets it go on to the rest of the pipeline).
    Pass(Event),
    /// It is in the group's state now.
    Folded,
    /// It is dropped.
    Dropped,
}

/// A group's identification: each identification key as written and its value in the
/// group's events (`null` when they have none). What `count` and `histogram` write.
pub(super) type Identification = Map<String, Value>;

/// One of Data Prepper's `AggregateAction`s: what a group keeps and makes.
pub(super) trait Action: Send + 'static {
    /// What a group keeps (Data Prepper's `GroupState`), empty when the group starts.
    type State: Default + Send;

    /// Takes one event of the group whose state is `state` (Data Prepper's `handleEvent`).
    fn handle(
        &mut self,
        state: &mut Self::State,
        event: Event,
        keys: &Identification,
        now: Instant,
    ) -> Handled;

    /// The events a concluding group makes (Data Prepper's `concludeGroup`); may be none.
    fn conclude(&mut self, state: Self::State, keys: &Identification) -> Vec<Event>;

    /// When set, a group concludes this long after its last event (whole seconds), not
    /// `group_duration` after its first (`tail_sampler`).
    fn quiet_period(&self) -> Option<Duration> {
        None
    }

    /// Whether the group keeps the events themselves, to let them go on when it concludes
    /// (`tail_sampler`): their shares stay with them whatever the acknowledgement options.
    fn holds_events(&self) -> bool {
        false
    }

    /// How long the last calls asked to wait (`rate_limiter`'s `block`), reset to zero.
    fn take_wait(&mut self) -> Duration {
        Duration::ZERO
    }
}

/// The processor's options, read once.
struct Options {
    /// The identification keys, as written and read.
    identification: Vec<(String, Key)>,
    /// `aggregate_when`.
    when: Option<Expression>,
    /// `group_duration`.
    group_duration: Duration,
    /// `output_unaggregated_events`.
    unaggregated: bool,
    /// `aggregated_events_tag`.
    tag: Option<String>,
    /// Not `disable_group_acknowledgments`: folded events' shares wait for their group.
    group_acknowledgments: bool,
    /// `max_held_events`.
    max_held: usize,
}

impl Options {
    /// The identification of `event`'s group.
    fn identify(&self, event: &Event) -> Identification {
        self.identification
            .iter()
            .map(|(name, key)| (name.clone(), event.get(key).cloned().unwrap_or(Value::Null)))
            .collect()
    }

    /// Adds `aggregated_events_tag` to an event the action made.
    fn tag(&self, event: &mut Event) {
        if let Some(tag) = &self.tag {
            event.metadata.add_tag(tag);
        }
    }
}

/// The `aggregate` processor with action `A`.
pub(super) struct Aggregate<A: Action> {
    options: Options,
    groups: Mutex<Groups<A>>,
}

/// The open groups, and the action (whose own state, `rate_limiter`'s, is for all groups).
struct Groups<A: Action> {
    action: A,
    /// By identification (its canonical JSON text).
    groups: HashMap<String, Group<A::State>>,
    /// The groups by when they conclude: by their first event's time, or by their last's
    /// (with a quiet period); the number breaks ties in the order they were put.
    order: BTreeMap<(Instant, u64), String>,
    /// The next tie-breaking number.
    next: u64,
    /// Events folded into open groups.
    held: usize,
    /// What counts against `max_held_events`: each open group's folded events, at least one.
    weight: usize,
}

/// One open group.
struct Group<S> {
    keys: Identification,
    state: S,
    /// Its entry in [`Groups::order`].
    at: (Instant, u64),
    /// The shares of its folded events.
    shares: Vec<Share>,
    /// How many events it folded.
    folded: usize,
}

impl<A: Action> Aggregate<A> {
    fn new(options: Options, action: A) -> Self {
        Self {
            options,
            groups: Mutex::new(Groups {
                action,
                groups: HashMap::new(),
                order: BTreeMap::new(),
                next: 0,
                held: 0,
                weight: 0,
            }),
        }
    }

    /// The groups, even after a worker panicked holding them.
    fn lock(&self) -> MutexGuard<'_, Groups<A>> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<A: Action> Stateful for Aggregate<A> {
    fn name(&self) -> &'static str {
        "aggregate"
    }

    fn process(&self, events: Vec<(Event, Share)>, now: Instant) -> Released {
        let options = &self.options;
        let mut out = Released::default();
        let wait = {
            let mut groups = self.lock();
            groups.conclude_due(now, options, &mut out);
            for (event, share) in events {
                if !crate::when(self.name(), options.when.as_ref(), &event) {
                    out.events.push(event);
                    out.done.push(share);
                    continue;
                }
                groups.take(event, share, now, options, &mut out);
                while groups.weight > options.max_held {
                    groups.conclude_first(options, &mut out);
                }
            }
            groups.action.take_wait()
        };
        if !wait.is_zero() {
            // Outside the lock: the other workers and the flusher go on meanwhile.
            std::thread::sleep(wait.min(MAX_BLOCK));
        }
        out
    }

    fn flush(&self, now: Instant, all: bool) -> Released {
        let mut out = Released::default();
        let mut groups = self.lock();
        groups.conclude_due(now, &self.options, &mut out);
        if all {
            while !groups.order.is_empty() {
                groups.conclude_first(&self.options, &mut out);
            }
        }
        out
    }

    fn held(&self) -> usize {
        self.lock().held
    }
}

impl<A: Action> Groups<A> {
    /// Hands `event` to its group's action (making the group if it has none) and puts what
    /// comes of it, and of its share, in `out`.
    fn take(
        &mut self,
        event: Event,
        share: Share,
        now: Instant,
        options: &Options,
        out: &mut Released,
    ) {
        let keys = options.identify(&event);
        let id = canonical(&keys);
        let original = options.unaggregated.then(|| event.clone());
        if !self.groups.contains_key(&id) {
            let at = self.enter(now, &id);
            let group = Group {
                keys,
                state: A::State::default(),
                at,
                shares: Vec::new(),
                folded: 0,
            };
            self.groups.insert(id.clone(), group);
            self.weight += 1;
        } else if self.action.quiet_period().is_some() {
            // Its time is its last event's.
            let old = self.groups[&id].at;
            self.order.remove(&old);
            let at = self.enter(now, &id);
            if let Some(group) = self.groups.get_mut(&id) {
                group.at = at;
            }
        }
        let Some(group) = self.groups.get_mut(&id) else {
            unreachable!("the group was just made");
        };
        match self
            .action
            .handle(&mut group.state, event, &group.keys, now)
        {
            Handled::Pass(mut event) => {
                options.tag(&mut event);
                if options.unaggregated {
                    // Data Prepper's response and its record are the same event.
                    out.events.push(event.clone());
                }
                out.events.push(event);
                out.done.push(share);
            }
            Handled::Dropped => {
                if original.is_none() {
                    out.dropped += 1;
                }
                out.events.extend(original);
                out.done.push(share);
            }
            Handled::Folded => {
                if group.folded > 0 {
                    self.weight += 1;
                }
                group.folded += 1;
                self.held += 1;
                let share = match original {
                    Some(original) => {
                        out.events.push(original);
                        out.done.push(share.share());
                        share
                    }
                    None => share,
                };
                if options.group_acknowledgments || self.action.holds_events() {
                    group.shares.push(share);
                } else {
                    out.done.push(share);
                }
            }
        }
    }

    /// A new entry in [`Self::order`] for group `id` at `now`.
    fn enter(&mut self, now: Instant, id: &str) -> (Instant, u64) {
        let at = (now, self.next);
        self.next += 1;
        self.order.insert(at, id.to_owned());
        at
    }

    /// Concludes the groups whose time came at `now`, oldest first.
    fn conclude_due(&mut self, now: Instant, options: &Options, out: &mut Released) {
        let wait = match self.action.quiet_period() {
            // `Duration.toSeconds()` on both sides: whole seconds.
            Some(quiet) => Duration::from_secs(quiet.as_secs()),
            None => options.group_duration,
        };
        while let Some((&(since, _), _)) = self.order.first_key_value() {
            if now.saturating_duration_since(since) < wait {
                break;
            }
            self.conclude_first(options, out);
        }
    }

    /// Concludes the group first in [`Self::order`]: what it makes and the shares of its
    /// events go in `out`.
    fn conclude_first(&mut self, options: &Options, out: &mut Released) {
        let Some((_, id)) = self.order.pop_first() else {
            return;
        };
        let Some(group) = self.groups.remove(&id) else {
            return;
        };
        self.held -= group.folded;
        self.weight -= group.folded.max(1);
        let made = self.action.conclude(group.state, &group.keys);
        if made.is_empty() {
            // Nothing came of the group's events (a tail sample not taken).
            out.dropped += group.folded as u64;
        }
        for mut event in made {
            options.tag(&mut event);
            out.events.push(event);
        }
        out.done.extend(group.shares);
    }
}

/// A group's identity: its identification values as JSON text, objects' keys sorted, so that
/// equal values (as Java's `equals` on maps sees them) give equal text.
fn canonical(keys: &Identification) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                out.push('{');
                for (i, (k, v)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(v, out);
                }
                out.push('}');
            }
            Value::Array(list) => {
                out.push('[');
                for (i, v) in list.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(v, out);
                }
                out.push(']');
            }
            scalar => out.push_str(&scalar.to_string()),
        }
    }
    let mut out = String::new();
    for value in keys.values() {
        write(value, &mut out);
        out.push('\u{0}');
    }
    out
}

/// A new event the action made, of Data Prepper's type `event_type` (`event`, `METRIC`),
/// received now.
pub(super) fn new_event(data: Map<String, Value>, event_type: &'static str) -> Event {
    let now = u64::try_from(Utc::now().timestamp_millis()).unwrap_or(0);
    Event::new(Value::Object(data), Metadata::new(event_type, now))
}

/// A time as Java's `Instant.toString()` writes it (`2022-12-02T19:29:51.245358486Z`: as
/// many fraction digits as it needs, in threes).
pub(super) fn instant_text(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// A time as Data Prepper's `raw` formats write it, `yyyy-MM-dd'T'HH:mm:ss.SSSXXX`, in UTC
/// (Data Prepper: the JVM's zone).
pub(super) fn raw_text(time: DateTime<Utc>) -> String {
    time.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// Nanoseconds since the epoch (Data Prepper's `getTimeNanos`).
pub(super) fn nanos(time: DateTime<Utc>) -> i64 {
    time.timestamp_nanos_opt().unwrap_or(i64::MAX)
}

/// An event's time as Data Prepper's `convertObjectToInstant` reads it: ISO-8601 text,
/// integer seconds (milliseconds past 10^10), fractional seconds.
pub(super) fn event_time(value: &Value) -> Result<DateTime<Utc>, String> {
    let invalid = || format!("Invalid format for time {value}");
    match value {
        Value::String(text) => DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| invalid()),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                let time = if i as f64 > 1e10 {
                    DateTime::from_timestamp_millis(i)
                } else {
                    DateTime::from_timestamp(i, 0)
                };
                time.ok_or_else(invalid)
            } else {
                let f = n.as_f64().ok_or_else(invalid)?;
                let seconds = f.trunc();
                let nanos = ((f - seconds) * 1e9) as i64;
                DateTime::from_timestamp(seconds as i64, 0)
                    .and_then(|t| t.checked_add_signed(chrono::Duration::nanoseconds(nanos)))
                    .ok_or_else(invalid)
            }
        }
        _ => Err(invalid()),
    }
}

/// A group's start and end as `count` and `histogram` keep them: from the events'
/// `start_key` and `end_key` when they have them, else the time each was handled.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Span {
    pub(super) start: Option<DateTime<Utc>>,
    pub(super) end: Option<DateTime<Utc>>,
}

impl Span {
    /// The event's start and end, or why they cannot be read.
    pub(super) fn of(
        event: &Event,
        start_key: &Key,
        end_key: &Key,
    ) -> Result<(DateTime<Utc>, DateTime<Utc>), String> {
        let now = Utc::now();
        let read = |key: &Key| match event.get(key) {
            None | Some(Value::Null) => Ok(now),
            Some(value) => event_time(value),
        };
        Ok((read(start_key)?, read(end_key)?))
    }

    /// Widens the span to an event's.
    pub(super) fn add(&mut self, (start, end): (DateTime<Utc>, DateTime<Utc>)) {
        self.start = Some(self.start.map_or(start, |s| s.min(start)));
        self.end = Some(self.end.map_or(end, |e| e.max(end)));
    }
}

/// Data Prepper's `DefaultExemplar` as an event holds it: `attributes` an event's data.
pub(super) fn exemplar(attributes: Map<String, Value>, value: f64) -> Value {
    serde_json::json!({
        "time": instant_text(Utc::now()),
        "value": value,
        "attributes": attributes,
        "spanId": null,
        "traceId": null,
    })
}

/// An event's data as a map (Data Prepper's `event.toMap()`).
pub(super) fn data_map(event: &Event) -> Map<String, Value> {
    match &event.data {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    }
}

impl BuildStateful for config::Aggregate {
    fn build(&self) -> Result<Box<dyn Stateful>, BuildError> {
        let identification = self
            .identification_keys
            .iter()
            .map(|name| {
                Key::parse(name)
                    .map(|key| (name.clone(), key))
                    .map_err(|e| BuildError {
                        key: "identification_keys".to_owned(),
                        message: e.to_string(),
                    })
            })
            .collect::<Result<_, _>>()?;
        let options = Options {
            identification,
            when: self.aggregate_when.clone(),
            group_duration: self.group_duration,
            unaggregated: self.output_unaggregated_events,
            tag: self.aggregated_events_tag.clone(),
            group_acknowledgments: !self.disable_group_acknowledgments,
            max_held: self.max_held_events.max(1),
        };
        fn boxed<A: Action>(options: Options, action: A) -> Box<dyn Stateful> {
            Box::new(Aggregate::new(options, action))
        }
        Ok(match &self.action {
            ActionConfig::PutAll => boxed(options, put_all::PutAll),
            ActionConfig::RemoveDuplicates => boxed(options, remove_duplicates::RemoveDuplicates),
            ActionConfig::Count(c) => boxed(options, count::Count::new(c)),
            ActionConfig::Histogram(h) => boxed(options, histogram::Histogram::new(h)),
            ActionConfig::RateLimiter(r) => boxed(options, rate_limiter::RateLimiter::new(r)),
            ActionConfig::PercentSampler(p) => {
                boxed(options, percent_sampler::PercentSampler::new(p))
            }
            ActionConfig::TailSampler(t) => boxed(options, tail_sampler::TailSampler::new(t)),
            ActionConfig::Append(a) => boxed(options, append::Append::new(a)),
        })
    }
}

#[cfg(test)]
mod tests;
