//! `rate_limiter`, as Data Prepper's `RateLimiterProcessor`: the events `limit_when` selects
//! (all, without it) are counted per second of the clock; past `events_per_second` in a second,
//! an event is dropped (`when_exceeds: drop`, counted in `sluice_eventsDropped`) or the worker
//! waits for the next second with room (`hold`), holding its thread as Data Prepper's does.
//!
//! One count for the pipeline: its workers share it, so the pipeline passes at most
//! `events_per_second` (Data Prepper makes one processor per worker, each with its own count,
//! so its pipeline passes up to `workers` times that). Only the current second's count is kept
//! (`counter_retention` has nothing to bound).

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_config::processor::rate_limiter::{self as config, WhenExceeds};
use sluice_event::{Event, Expression};

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// `rate_limiter`, built: its limit and the current second's count.
pub struct RateLimiter {
    per_second: u32,
    hold: bool,
    /// The second (since the epoch) counted, and how many passed in it. A std mutex: held for
    /// a comparison and an increment, never across a wait.
    count: Mutex<(u64, u32)>,
    /// The clock, milliseconds since the epoch (a test's own clock).
    now_ms: fn() -> u64,
}

impl BuildProcessor for config::RateLimiter {
    type Processor = RateLimiter;

    fn when(&self) -> Option<&Expression> {
        self.limit_when.as_ref()
    }

    fn build(&self) -> Result<RateLimiter, BuildError> {
        Ok(RateLimiter {
            per_second: self.events_per_second,
            hold: self.when_exceeds == WhenExceeds::Hold,
            count: Mutex::new((0, 0)),
            now_ms: clock,
        })
    }
}

fn clock() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl RateLimiter {
    /// Counts one event in the second of `now_ms` if it has room: whether it had.
    fn take(&self, now_ms: u64) -> bool {
        let second = now_ms / 1000;
        let mut count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        if count.0 != second {
            *count = (second, 0);
        }
        if count.1 < self.per_second {
            count.1 += 1;
            true
        } else {
            false
        }
    }
}

impl Apply for RateLimiter {
    fn apply(&self, _: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        loop {
            let now = (self.now_ms)();
            if self.take(now) {
                return Ok(Fate::Keep);
            }
            if !self.hold {
                return Ok(Fate::Drop);
            }
            // Until the next second, as Data Prepper's `1000 - now % 1000`.
            std::thread::sleep(Duration::from_millis(1000 - now % 1000));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;

    use crate::Fate;
    use crate::testing::{invalid, processor, run};

    #[test]
    fn drops_what_passes_the_seconds_count() {
        fn in_second_five() -> u64 {
            5_500
        }
        let p = super::RateLimiter {
            per_second: 2,
            hold: false,
            count: std::sync::Mutex::new((0, 0)),
            now_ms: in_second_five,
        };
        let fates: Vec<Fate> = (0..4)
            .map(|_| {
                let mut event =
                    sluice_event::Event::new(json!({}), sluice_event::Metadata::new("LOG", 0));
                crate::Apply::apply(&p, &mut event, "rate_limiter").unwrap()
            })
            .collect();
        assert_eq!(fates, [Fate::Keep, Fate::Keep, Fate::Drop, Fate::Drop]);
        assert!(p.take(6_000), "a new second has room again");
        assert!(p.take(6_999) && !p.take(6_999));
    }

    #[test]
    fn the_pipeline_drops_past_the_limit_and_limit_when_selects() {
        let p =
            processor("rate_limiter:\n  events_per_second: 3\n  limit_when: '/limited == true'");
        // Within one second of the clock (retried if the clock's second turns meanwhile).
        let kept = loop {
            let second = super::clock() / 1000;
            let kept = (0..10)
                .filter(|_| run(&*p, json!({"limited": true})).is_some())
                .count();
            if super::clock() / 1000 == second {
                break kept;
            }
        };
        assert!(kept <= 3, "{kept}");
        for _ in 0..10 {
            assert_eq!(
                run(&*p, json!({"limited": false})),
                Some(json!({"limited": false}))
            );
        }
    }

    #[test]
    fn hold_waits_for_the_next_second() {
        let p = processor("rate_limiter:\n  events_per_second: 1\n  when_exceeds: HOLD");
        let start = Instant::now();
        for _ in 0..3 {
            let mut event =
                sluice_event::Event::new(json!({}), sluice_event::Metadata::new("LOG", 0));
            assert_eq!(p.process(&mut event), Fate::Keep);
        }
        // Three events at one a second: the third waits for the second after next.
        assert!(
            start.elapsed() >= Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn the_limit_is_checked() {
        let e = invalid("rate_limiter:\n  when_exceeds: drop");
        assert!(e.contains("missing field `events_per_second`"), "{e}");
        let e = invalid("rate_limiter:\n  events_per_second: 0");
        assert!(e.contains("rate_limiter.events_per_second` is 0"), "{e}");
        let e = invalid("rate_limiter:\n  events_per_second: 1\n  when_exceeds: block");
        assert!(e.contains("when_exceeds"), "{e}");
    }
}
