//! `put_all` (Data Prepper's `PutAllAggregateAction`): a group's events' top-level keys merged
//! into one event, a later event's value replacing an earlier one's, made when the group
//! concludes; the events themselves are dropped.

use std::time::Instant;

use serde_json::{Map, Value};
use sluice_event::Event;

use super::{Action, Handled, Identification, new_event};

/// `put_all`.
pub(super) struct PutAll;

impl Action for PutAll {
    /// The merged keys.
    type State = Map<String, Value>;

    fn handle(
        &mut self,
        state: &mut Self::State,
        event: Event,
        _keys: &Identification,
        _now: Instant,
    ) -> Handled {
        if let Value::Object(map) = event.data {
            state.extend(map);
        }
        Handled::Folded
    }

    fn conclude(&mut self, state: Self::State, _keys: &Identification) -> Vec<Event> {
        vec![new_event(state, "event")]
    }
}
