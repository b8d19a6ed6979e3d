//! `tail_sampler` (Data Prepper's `TailSamplerAggregateAction`): a group (a trace) keeps its
//! events until none came for `wait_period` (whole seconds; `group_duration` does not apply).
//! Then all of them go on, unchanged, if one matched `condition` (an error) or, otherwise,
//! with a chance of `percent` in 100; else all are dropped.

use std::time::{Duration, Instant};

use sluice_config::processor::aggregate as config;
use sluice_event::{Event, Expression};

use super::{Action, Handled, Identification};

/// `tail_sampler`.
pub(super) struct TailSampler {
    wait_period: Duration,
    percent: u32,
    condition: Option<Expression>,
}

impl TailSampler {
    pub(super) fn new(config: &config::TailSampler) -> Self {
        Self {
            wait_period: config.wait_period,
            percent: u32::try_from(config.percent).unwrap_or(0),
            condition: config.condition.clone(),
        }
    }
}

/// A group's events, and whether one of them is an error.
#[derive(Default)]
pub(super) struct Held {
    events: Vec<Event>,
    error: bool,
}

impl Action for TailSampler {
    type State = Held;

    fn handle(
        &mut self,
        held: &mut Held,
        event: Event,
        _keys: &Identification,
        _now: Instant,
    ) -> Handled {
        if let Some(condition) = &self.condition {
            // A condition that cannot be evaluated on the event does not make it an error.
            held.error |= crate::when("aggregate", Some(condition), &event);
        }
        held.events.push(event);
        Handled::Folded
    }

    fn conclude(&mut self, held: Held, _keys: &Identification) -> Vec<Event> {
        if held.error || fastrand::u32(0..100) < self.percent {
            held.events
        } else {
            Vec::new()
        }
    }

    fn quiet_period(&self) -> Option<Duration> {
        Some(self.wait_period)
    }

    fn holds_events(&self) -> bool {
        true
    }
}
