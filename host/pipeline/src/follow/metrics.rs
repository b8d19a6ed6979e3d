//! The metrics of one plugin of a pipeline (its deserializer, a processor, its buffer policy),
//! labelled `{pipeline, plugin, kind}` and updated after each call from the plugin's own
//! counters.

use std::time::Duration;

use sluice_plugin::CallStats;

/// Metrics of one plugin of one pipeline.
pub(super) struct PluginMetrics {
    calls: metrics::Counter,
    faults: metrics::Counter,
    deadline_hits: metrics::Counter,
    recycled: metrics::Counter,
    pub(super) swaps: metrics::Counter,
    memory: metrics::Gauge,
    call_seconds: metrics::Histogram,
    /// Calls (a batch with its retries) that took longer than the plugin's deadline.
    stalls: metrics::Counter,
}

impl PluginMetrics {
    /// `kind` as the label reads: `deserializer`, `processor`, `buffer_policy`.
    pub(super) fn new(pipeline: &str, plugin: &str, kind: &str) -> Self {
        let labels = [
            ("pipeline", pipeline.to_owned()),
            ("plugin", plugin.to_owned()),
            ("kind", kind.to_owned()),
        ];
        Self {
            calls: metrics::counter!("sluice_plugin_calls", &labels),
            faults: metrics::counter!("sluice_plugin_traps", &labels),
            deadline_hits: metrics::counter!("sluice_plugin_deadline_hits", &labels),
            recycled: metrics::counter!("sluice_plugin_instances_recycled", &labels),
            swaps: metrics::counter!("sluice_plugin_versions_switched", &labels),
            memory: metrics::gauge!("sluice_plugin_memory_bytes", &labels),
            call_seconds: metrics::histogram!("sluice_plugin_batch_seconds", &labels),
            stalls: metrics::counter!("sluice_worker_stalls", &labels),
        }
    }

    /// Records what one call cost, from the plugin's counters before and after it; a call
    /// longer than `deadline` is a stall.
    pub(super) fn call(
        &self,
        before: CallStats,
        after: CallStats,
        took: Duration,
        deadline: Duration,
    ) {
        self.calls
            .increment(after.calls.saturating_sub(before.calls));
        self.faults
            .increment(after.faults.saturating_sub(before.faults));
        self.deadline_hits
            .increment(after.deadline_hits.saturating_sub(before.deadline_hits));
        self.recycled
            .increment(after.recycled.saturating_sub(before.recycled));
        // The peak over this instance set (the gauge shows the last worker to report).
        self.memory.set(after.peak_memory as f64);
        self.call_seconds.record(took.as_secs_f64());
        if took > deadline {
            self.stalls.increment(1);
        }
    }
}
