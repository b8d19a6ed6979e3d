//! `rate_limiter`: lets at most so many events a second through, dropping or holding the rest,
//! as Data Prepper's `RateLimiterProcessorConfig` (the processor, not `aggregate`'s action of
//! the same name).

use std::time::Duration;

use serde::Deserialize;
use sluice_event::Expression;

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - rate_limiter:
///     events_per_second: 100
///     when_exceeds: drop
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimiter {
    /// How many events may pass each second (of the clock), for the whole pipeline: its
    /// workers share the count. At least 1. Required.
    pub events_per_second: u32,
    /// What becomes of an event past the second's count: `drop` (the default: dropped, counted
    /// in `sluice_eventsDropped`) or `hold` (the worker waits for the next second).
    #[serde(default)]
    pub when_exceeds: WhenExceeds,
    /// Limit only the events for which this condition is true; the others pass and are not
    /// counted. Default: every event.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub limit_when: Option<Expression>,
    /// How long Data Prepper keeps the count of a past second (default `60s`). Accepted for
    /// its configs; sluice keeps only the current second's count, the only one either reads.
    #[serde(default = "sixty_seconds", deserialize_with = "crate::units::duration")]
    pub counter_retention: Duration,
}

/// Data Prepper's `RateLimiterMode`; it reads the names in any case.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WhenExceeds {
    #[default]
    #[serde(alias = "DROP", alias = "Drop")]
    Drop,
    #[serde(alias = "HOLD", alias = "Hold")]
    Hold,
}

/// Data Prepper's default: `Duration.ofSeconds(60)`.
const fn sixty_seconds() -> Duration {
    Duration::from_secs(60)
}

impl ProcessorConfig for RateLimiter {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.events_per_second == 0 {
            let key = join(path, "events_per_second");
            errors.at(
                &key,
                format!(
                    "`{key}` is 0; it must be at least 1 (to drop every event use `drop_events`)"
                ),
            );
        }
    }
}
