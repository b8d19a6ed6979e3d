//! Which workers are stuck in a plugin. A worker marks when it hands a batch to a plugin (its
//! deserializer, then each processor in turn) and when it gets the answer back; a batch that
//! has been in one plugin longer than that plugin's per-call deadline (faults and their
//! retries, or a call the deadline failed to end) is a stall. Stalls make `/health` answer 503
//! naming the pipeline and the stage (plugin and kind), and show in the
//! `sluice_workers_stalled{pipeline}` gauge while they last; each plugin counts its own in
//! `sluice_worker_stalls{pipeline, plugin, kind}` (`crate::follow`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Every worker's slot. Cheap to clone; shared by the run loop and the health endpoint.
#[derive(Debug, Clone, Default)]
pub struct Watchdog {
    // A std mutex: held only to push or copy the list, never across an await.
    slots: Arc<Mutex<Vec<Arc<Slot>>>>,
}

/// One worker's mark: the plugin its batch is in now, if any.
#[derive(Debug)]
pub struct Slot {
    pipeline: String,
    worker: usize,
    // A std mutex: held only to set, clear or copy the mark.
    busy: Mutex<Option<Busy>>,
}

/// A batch in a plugin.
#[derive(Debug, Clone)]
struct Busy {
    plugin: String,
    kind: &'static str,
    deadline: Duration,
    since: Instant,
}

/// A worker whose batch has been in a plugin longer than the plugin's deadline.
#[derive(Debug, Clone, PartialEq)]
pub struct Stall {
    pub pipeline: String,
    pub worker: usize,
    /// The stage it is stuck in: the plugin's name and kind (`deserializer`, `processor`).
    pub plugin: String,
    pub kind: &'static str,
    /// How long the batch has been in the plugin so far.
    pub busy: Duration,
    /// The plugin's per-call deadline.
    pub deadline: Duration,
}

impl Watchdog {
    /// A slot for worker `worker` of `pipeline`.
    pub fn slot(&self, pipeline: &str, worker: usize) -> Arc<Slot> {
        let slot = Arc::new(Slot {
            pipeline: pipeline.to_owned(),
            worker,
            busy: Mutex::new(None),
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
        slots
            .iter()
            .filter_map(|slot| {
                let busy = slot.busy.lock().expect("slot lock").clone()?;
                let so_far = busy.since.elapsed();
                (so_far > busy.deadline).then(|| Stall {
                    pipeline: slot.pipeline.clone(),
                    worker: slot.worker,
                    plugin: busy.plugin,
                    kind: busy.kind,
                    busy: so_far,
                    deadline: busy.deadline,
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
    /// The batch goes into the `kind` plugin `plugin`, whose per-call deadline is `deadline`.
    pub fn enter(&self, plugin: &str, kind: &'static str, deadline: Duration) {
        *self.busy.lock().expect("slot lock") = Some(Busy {
            plugin: plugin.to_owned(),
            kind,
            deadline,
            since: Instant::now(),
        });
    }

    /// The plugin answered.
    pub fn leave(&self) {
        *self.busy.lock().expect("slot lock") = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_in_the_plugin_longer_than_the_deadline_is_a_stall_until_it_returns() {
        let watchdog = Watchdog::default();
        let slot = watchdog.slot("p", 0);
        let other = watchdog.slot("q", 0);
        assert!(
            watchdog.stalled().is_empty(),
            "idle workers are not stalled"
        );
        // Half a second: the check right after cannot be descheduled past it on a loaded
        // machine.
        slot.enter("sleepy", "processor", Duration::from_millis(500));
        other.enter("json", "deserializer", Duration::from_secs(60));
        assert!(watchdog.stalled().is_empty(), "within the deadline");
        std::thread::sleep(Duration::from_millis(600));
        let stalled = watchdog.stalled();
        assert_eq!(stalled.len(), 1, "{stalled:?}");
        assert_eq!(stalled[0].pipeline, "p");
        assert_eq!(
            (stalled[0].plugin.as_str(), stalled[0].kind),
            ("sleepy", "processor")
        );
        assert!(stalled[0].busy >= Duration::from_millis(600));
        assert_eq!(
            watchdog.stalled_per_pipeline(),
            vec![("p".to_owned(), 1), ("q".to_owned(), 0)]
        );
        slot.leave();
        assert!(watchdog.stalled().is_empty(), "the plugin answered");
    }
}
