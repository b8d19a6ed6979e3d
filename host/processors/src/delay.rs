//! `delay`, as Data Prepper's `DelayProcessor`: the worker waits `for` once per batch before the
//! batch's events go through it (not once per event), and the events go on unchanged. It holds
//! the worker's thread as Data Prepper's `Thread.sleep` holds its worker: a pipeline with
//! `workers: n` passes at most n batches per `for`. Meant for testing and debugging.

use std::time::Duration;

use sluice_config::processor::delay as config;
use sluice_event::Event;

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// `delay`, built: how long it waits.
pub struct Delay {
    wait: Duration,
}

impl BuildProcessor for config::Delay {
    type Processor = Delay;

    fn build(&self) -> Result<Delay, BuildError> {
        tracing::info!(delay = ?self.delay_for, "the delay processor waits this long before each batch; meant for testing or debugging");
        Ok(Delay {
            wait: self.delay_for,
        })
    }
}

impl Apply for Delay {
    fn batch(&self) {
        std::thread::sleep(self.wait);
    }

    fn apply(&self, _: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        Ok(Fate::Keep)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;

    use crate::testing::{invalid, processor, run};

    #[test]
    fn waits_once_per_batch_and_leaves_the_events() {
        let p = processor("delay:\n  for: 150ms");
        let start = Instant::now();
        p.batch();
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(150), "{waited:?}");
        let start = Instant::now();
        for _ in 0..100 {
            assert_eq!(run(&*p, json!({"a": 1})), Some(json!({"a": 1})));
        }
        assert!(
            start.elapsed() < Duration::from_millis(150),
            "events do not wait"
        );
    }

    #[test]
    fn for_takes_data_preppers_durations() {
        for yaml in ["PT0.2S", "200ms", "200"] {
            let p = processor(&format!("delay:\n  for: {yaml}"));
            let start = Instant::now();
            p.batch();
            assert!(start.elapsed() >= Duration::from_millis(200), "{yaml}");
        }
        // Data Prepper's default: one second.
        let p = processor("delay:");
        let start = Instant::now();
        p.batch();
        assert!(start.elapsed() >= Duration::from_secs(1));
        let e = invalid("delay:\n  for: soon");
        assert!(e.contains("for"), "{e}");
        let e = invalid("delay:\n  delay: 1s");
        assert!(e.contains("unknown field `delay`"), "{e}");
    }
}
