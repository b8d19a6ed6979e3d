//! `remove_duplicates` (Data Prepper's `RemoveDuplicatesAggregateAction`): a group's first
//! event goes on at once, its later events are dropped until the group concludes (which
//! makes nothing).

use std::time::Instant;

use sluice_event::Event;

use super::{Action, Handled, Identification};

/// `remove_duplicates`.
pub(super) struct RemoveDuplicates;

impl Action for RemoveDuplicates {
    /// Whether the group let its first event go.
    type State = bool;

    fn handle(
        &mut self,
        seen: &mut bool,
        event: Event,
        _keys: &Identification,
        _now: Instant,
    ) -> Handled {
        if *seen {
            Handled::Dropped
        } else {
            *seen = true;
            Handled::Pass(event)
        }
    }

    fn conclude(&mut self, _seen: bool, _keys: &Identification) -> Vec<Event> {
        Vec::new()
    }
}
