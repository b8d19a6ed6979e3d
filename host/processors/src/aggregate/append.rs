//! `append` (Data Prepper's `AppendAggregateAction`): a group's first event, with the values of
//! its later events appended under `keys_to_append` (all keys when none are given), made when
//! the group concludes. A key's value becomes a list when a later event has another value
//! (`200` then `503`: `[200, 503]`); a list gets the later values (a later list's items one
//! by one); keys the first event does not have are not added.
//!
//! Data Prepper's list of a key's first two values is of fixed size: a third value fails
//! there and that event goes on unaggregated. sluice appends it, as the docs show
//! (`[200, 503, 400]`).

use std::time::Instant;

use serde_json::{Map, Value};
use sluice_config::processor::aggregate as config;
use sluice_event::Event;

use super::{Action, Handled, Identification, new_event};

/// `append`.
pub(super) struct Append {
    /// `keys_to_append`; empty: all keys.
    keys: Vec<String>,
}

impl Append {
    pub(super) fn new(config: &config::Append) -> Self {
        Self {
            keys: config.keys_to_append.clone().unwrap_or_default(),
        }
    }
}

impl Action for Append {
    /// The first event's keys, appended to.
    type State = Map<String, Value>;

    fn handle(
        &mut self,
        state: &mut Self::State,
        event: Event,
        _keys: &Identification,
        _now: Instant,
    ) -> Handled {
        let Value::Object(map) = event.data else {
            return Handled::Folded;
        };
        if state.is_empty() {
            *state = map;
            return Handled::Folded;
        }
        for (key, value) in map {
            if !self.keys.is_empty() && !self.keys.contains(&key) {
                continue;
            }
            let Some(kept) = state.get_mut(&key) else {
                continue;
            };
            match (kept, value) {
                (Value::Array(list), Value::Array(more)) => list.extend(more),
                (Value::Array(list), value) => list.push(value),
                (kept, value) if *kept != value => {
                    let first = kept.take();
                    *kept = Value::Array(vec![first, value]);
                }
                _ => {}
            }
        }
        Handled::Folded
    }

    fn conclude(&mut self, state: Self::State, _keys: &Identification) -> Vec<Event> {
        if state.is_empty() {
            return Vec::new();
        }
        vec![new_event(state, "event")]
    }
}
