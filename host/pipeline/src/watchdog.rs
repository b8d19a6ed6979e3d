//! Which workers are stuck in their plugin. A worker marks when it hands a batch to its
//! deserializer and when it gets the outcomes back; a batch that has been in the plugin longer
//! than the plugin's per-call deadline (faults and their retries, or a call the deadline failed
//! to end) is a stall. Stalls make `/health` answer 503 naming the pipeline, show in the
//! `sluice_workers_stalled{pipeline}` gauge while they last, and are counted per batch in
//! `sluice_worker_stalls{pipeline, plugin}`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Every worker's slot. Cheap to clone; shared by the run loop and the health endpoint.
#[derive(Debug, Clone, Default)]
pub struct Watchdog {
    // A std mutex: held only to push or copy the list, never across an await.
    slots: Arc<Mutex<Vec<Arc<Slot>>>>,
}

/// One worker's mark: when its current batch went into the plugin (0: not in the plugin).
#[derive(Debug)]
pub struct Slot {
    pipeline: String,
    worker: usize,
    plugin: String,
    deadline: Duration,
    since_nanos: AtomicU64,
}

/// A worker whose batch has been in its plugin longer than the deadline.
#[derive(Debug, Clone, PartialEq)]
pub struct Stall {
    pub pipeline: String,
    pub worker: usize,
    pub plugin: String,
    /// How long the batch has been in the plugin so far.
    pub busy: Duration,
    /// The plugin's per-call deadline.
    pub deadline: Duration,
}

impl Watchdog {
    /// A slot for worker `worker` of `pipeline`, whose plugin has a per-call `deadline`.
    pub fn slot(
        &self,
        pipeline: &str,
        worker: usize,
        plugin: &str,
        deadline: Duration,
    ) -> Arc<Slot> {
        let slot = Arc::new(Slot {
            pipeline: pipeline.to_owned(),
            worker,
            plugin: plugin.to_owned(),
            deadline,
            since_nanos: AtomicU64::new(0),
        });
        self.slots
            .lock()
            .expect("watchdog lock is never poisoned")
            .push(slot.clone());
        slot
    }

    /// The workers stalled right now.
    pub fn stalled(&self) -> Vec<Stall> {
        let slots = self
            .slots
            .lock()
            .expect("watchdog lock is never poisoned")
            .clone();
        let now = nanos();
        slots
            .iter()
            .filter_map(|slot| {
                let since = slot.since_nanos.load(Ordering::Relaxed);
                let busy = Duration::from_nanos(now.saturating_sub(since));
                (since != 0 && busy > slot.deadline).then(|| Stall {
                    pipeline: slot.pipeline.clone(),
                    worker: slot.worker,
                    plugin: slot.plugin.clone(),
                    busy,
                    deadline: slot.deadline,
                })
            })
            .collect()
    }

    /// Stalled workers per pipeline, every pipeline with a slot listed (0 when none).
    pub fn stalled_per_pipeline(&self) -> Vec<(String, usize)> {
        let slots = self
            .slots
            .lock()
            .expect("watchdog lock is never poisoned")
            .clone();
        let stalled = self.stalled();
        let mut out: Vec<(String, usize)> = Vec::new();
        for slot in &slots {
            if !out.iter().any(|(p, _)| *p == slot.pipeline) {
                let n = stalled
                    .iter()
                    .filter(|s| s.pipeline == slot.pipeline)
                    .count();
                out.push((slot.pipeline.clone(), n));
            }
        }
        out
    }
}

impl Slot {
    /// The batch goes into the plugin.
    pub fn begin(&self) {
        self.since_nanos.store(nanos().max(1), Ordering::Relaxed);
    }

    /// The outcomes came back. True when the batch was in the plugin longer than the deadline.
    pub fn end(&self) -> bool {
        let since = self.since_nanos.swap(0, Ordering::Relaxed);
        since != 0 && Duration::from_nanos(nanos().saturating_sub(since)) > self.deadline
    }
}

/// Nanoseconds since the first call in this process (never 0 after the first nanosecond).
fn nanos() -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    let base = *BASE.get_or_init(Instant::now);
    u64::try_from(base.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_in_the_plugin_longer_than_the_deadline_is_a_stall_until_it_returns() {
        let watchdog = Watchdog::default();
        let slot = watchdog.slot("p", 0, "sleepy", Duration::from_millis(20));
        let other = watchdog.slot("q", 0, "json", Duration::from_secs(60));
        assert!(
            watchdog.stalled().is_empty(),
            "idle workers are not stalled"
        );
        slot.begin();
        other.begin();
        assert!(watchdog.stalled().is_empty(), "within the deadline");
        std::thread::sleep(Duration::from_millis(40));
        let stalled = watchdog.stalled();
        assert_eq!(stalled.len(), 1, "{stalled:?}");
        assert_eq!(stalled[0].pipeline, "p");
        assert_eq!(stalled[0].plugin, "sleepy");
        assert!(stalled[0].busy >= Duration::from_millis(40));
        assert_eq!(
            watchdog.stalled_per_pipeline(),
            vec![("p".to_owned(), 1), ("q".to_owned(), 0)]
        );
        assert!(slot.end(), "the batch was stalled");
        assert!(watchdog.stalled().is_empty());
        other.begin();
        assert!(!other.end(), "a quick batch was not");
    }
}
