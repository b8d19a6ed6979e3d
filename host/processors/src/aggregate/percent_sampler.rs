//! `percent_sampler` (Data Prepper's `PercentSamplerAggregateAction`): of each group's events,
//! the n-th goes on at once when `(allowed + 1) / n <= percent / 100` (so at 50%: the 2nd,
//! 4th, ...), the others are dropped. The counts start again when the group concludes
//! (`group_duration` after its first event; the docs' "one-second interval" is not what Data
//! Prepper does).

use std::time::Instant;

use sluice_config::processor::aggregate as config;
use sluice_event::Event;

use super::{Action, Handled, Identification};

/// `percent_sampler`.
pub(super) struct PercentSampler {
    /// `percent` / 100.
    fraction: f64,
}

impl PercentSampler {
    pub(super) fn new(config: &config::PercentSampler) -> Self {
        Self {
            fraction: config.percent / 100.0,
        }
    }
}

/// A group's counts (`total_events`, `total_allowed_events`).
#[derive(Default)]
pub(super) struct Counts {
    total: u64,
    allowed: u64,
}

impl Action for PercentSampler {
    type State = Counts;

    fn handle(
        &mut self,
        counts: &mut Counts,
        event: Event,
        _keys: &Identification,
        _now: Instant,
    ) -> Handled {
        counts.total += 1;
        if (counts.allowed + 1) as f64 / counts.total as f64 <= self.fraction {
            counts.allowed += 1;
            Handled::Pass(event)
        } else {
            Handled::Dropped
        }
    }

    fn conclude(&mut self, _counts: Counts, _keys: &Identification) -> Vec<Event> {
        Vec::new()
    }
}
