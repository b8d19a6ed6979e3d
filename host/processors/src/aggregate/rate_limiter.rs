//! `rate_limiter` (Data Prepper's `RateLimiterAggregateAction`): at most `events_per_second`
//! events go on, for all groups together (one limiter for the processor, as Data Prepper's
//! one Guava `RateLimiter` per action); a group concludes making nothing.
//!
//! The limiter is Guava's `SmoothBursty` (what `RateLimiter.create` makes): a permit every
//! `1 / events_per_second`, and up to one second of permits saved while idle. It starts with
//! the first event (Guava's starts when the pipeline does: after a quiet start Data Prepper
//! may let one second's worth more through at first).
//!
//! - `drop`: an event without a permit now is dropped (`tryAcquire`).
//! - `block`: Data Prepper waits for the event's permit holding the processor's lock, so
//!   every worker waits. sluice reserves the permit the same way and lets the event go on,
//!   then the call waits until the batch's last permit is due, outside the lock and at most
//!   one second a call. So the rate holds while batches are small enough for their permits
//!   to come within a second; past that, events go on faster than the rate rather than
//!   stalling the pipeline (its flusher and shutdown) for longer.

use std::time::{Duration, Instant};

use sluice_config::processor::aggregate::{self as config, WhenExceeds};
use sluice_event::Event;

use super::{Action, Handled, Identification};

/// `rate_limiter`.
pub(super) struct RateLimiter {
    /// `when_exceeds: drop`.
    drop: bool,
    /// The time between two permits.
    interval: Duration,
    /// The most permits saved (one second's).
    max_stored: f64,
    /// The permits saved while idle.
    stored: f64,
    /// When the next permit is free; none before the first event.
    next_free: Option<Instant>,
    /// How long the calls since the last [`Action::take_wait`] asked to wait (`block`).
    wait: Duration,
}

impl RateLimiter {
    pub(super) fn new(config: &config::RateLimiter) -> Self {
        let rate = f64::from(config.events_per_second.max(1));
        Self {
            drop: config.when_exceeds == WhenExceeds::Drop,
            interval: Duration::from_secs_f64(1.0 / rate),
            max_stored: rate,
            stored: 0.0,
            next_free: None,
            wait: Duration::ZERO,
        }
    }

    /// Guava's `resync`: the permits saved since the next permit was free.
    fn resync(&mut self, now: Instant) -> Instant {
        match self.next_free {
            Some(free) if now <= free => free,
            Some(free) => {
                let idle = now.duration_since(free).as_secs_f64() / self.interval.as_secs_f64();
                self.stored = (self.stored + idle).min(self.max_stored);
                self.next_free = Some(now);
                now
            }
            None => {
                self.next_free = Some(now);
                now
            }
        }
    }

    /// Takes a permit (Guava's `reserveEarliestAvailable`): when it is due.
    fn reserve(&mut self, now: Instant) -> Instant {
        let due = self.resync(now);
        let saved = self.stored.min(1.0);
        self.stored -= saved;
        self.next_free = Some(due + self.interval.mul_f64(1.0 - saved));
        due
    }

    /// Takes a permit if one is free now (`tryAcquire()`).
    fn try_acquire(&mut self, now: Instant) -> bool {
        if self.next_free.is_some_and(|free| free > now) {
            return false;
        }
        self.reserve(now);
        true
    }
}

impl Action for RateLimiter {
    type State = ();

    fn handle(
        &mut self,
        _: &mut (),
        event: Event,
        _keys: &Identification,
        now: Instant,
    ) -> Handled {
        if self.drop {
            if self.try_acquire(now) {
                Handled::Pass(event)
            } else {
                Handled::Dropped
            }
        } else {
            let due = self.reserve(now);
            self.wait = self.wait.max(due.saturating_duration_since(now));
            Handled::Pass(event)
        }
    }

    fn conclude(&mut self, _: (), _keys: &Identification) -> Vec<Event> {
        Vec::new()
    }

    fn take_wait(&mut self) -> Duration {
        std::mem::take(&mut self.wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(rate: u32, when_exceeds: WhenExceeds) -> RateLimiter {
        RateLimiter::new(&config::RateLimiter {
            events_per_second: rate,
            when_exceeds,
        })
    }

    #[test]
    fn drop_lets_one_permit_an_interval_and_saves_up_to_a_second_of_them() {
        let mut r = limiter(2, WhenExceeds::Drop);
        let t = Instant::now();
        assert!(r.try_acquire(t));
        assert!(!r.try_acquire(t));
        assert!(!r.try_acquire(t + Duration::from_millis(400)));
        assert!(r.try_acquire(t + Duration::from_millis(500)));
        // Ten seconds idle: one second's permits (2) saved, and the next is free at once.
        let later = t + Duration::from_secs(10);
        assert_eq!(
            (0..5).filter(|_| r.try_acquire(later)).count(),
            3,
            "two saved, one fresh"
        );
    }

    #[test]
    fn block_reserves_permits_ahead_and_says_how_long_to_wait() {
        let mut r = limiter(4, WhenExceeds::Block);
        let t = Instant::now();
        for _ in 0..3 {
            assert!(matches!(
                r.handle(&mut (), sample(), &Identification::new(), t),
                Handled::Pass(_)
            ));
        }
        assert_eq!(r.take_wait(), Duration::from_millis(500));
        assert_eq!(r.take_wait(), Duration::ZERO);
    }

    fn sample() -> Event {
        Event::new(serde_json::json!({}), sluice_event::Metadata::new("LOG", 0))
    }
}
