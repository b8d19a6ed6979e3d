//! The metrics of a pipeline's deserializer plugin, as one worker updates them per batch.

use std::time::Duration;

use sluice_plugin::DecoderStats;

/// Metrics of one pipeline's deserializer plugin, labelled `{pipeline, plugin}`.
pub(super) struct PluginMetrics {
    calls: metrics::Counter,
    faults: metrics::Counter,
    deadline_hits: metrics::Counter,
    recycled: metrics::Counter,
    pub(super) swaps: metrics::Counter,
    memory: metrics::Gauge,
    batch_seconds: metrics::Histogram,
    /// Batches that spent longer than the plugin's deadline in it (see `watchdog`).
    pub(super) stalls: metrics::Counter,
}

impl PluginMetrics {
    pub(super) fn new(pipeline: &str, plugin: &str) -> Self {
        let labels = [
            ("pipeline", pipeline.to_owned()),
            ("plugin", plugin.to_owned()),
        ];
        Self {
            calls: metrics::counter!("sluice_plugin_calls", &labels),
            faults: metrics::counter!("sluice_plugin_traps", &labels),
            deadline_hits: metrics::counter!("sluice_plugin_deadline_hits", &labels),
            recycled: metrics::counter!("sluice_plugin_instances_recycled", &labels),
            swaps: metrics::counter!("sluice_plugin_versions_switched", &labels),
            memory: metrics::gauge!("sluice_plugin_memory_bytes", &labels),
            batch_seconds: metrics::histogram!("sluice_plugin_batch_seconds", &labels),
            stalls: metrics::counter!("sluice_worker_stalls", &labels),
        }
    }

    /// Records what one batch cost, from the decoder's counters before and after it.
    pub(super) fn batch(&self, before: DecoderStats, after: DecoderStats, took: Duration) {
        self.calls.increment(after.calls - before.calls);
        self.faults.increment(after.faults - before.faults);
        self.deadline_hits
            .increment(after.deadline_hits - before.deadline_hits);
        self.recycled.increment(after.recycled - before.recycled);
        // The peak over this worker's instances (the gauge shows the last worker to report).
        self.memory.set(after.peak_memory as f64);
        self.batch_seconds.record(took.as_secs_f64());
    }
}
