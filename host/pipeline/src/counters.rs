//! A pipeline's counts: what its sources accepted and refused, what its workers read,
//! delivered and dead-lettered. Shared by the sources (which count writes) and the workers
//! (which count reads and deliveries); exported as metrics and logged at shutdown.

use sluice_buffer::Count;

/// Counts of one pipeline, exported as metrics (`<buffer prefix>_<name>{pipeline}` for the
/// buffer's, `sluice_<name>{pipeline}` for the rest) and logged at shutdown.
#[derive(Debug)]
pub struct Counters {
    /// recordsWritten: records the sources handed to the buffer.
    pub accepted: Count,
    /// writeTimeouts: writes refused because the buffer stayed full.
    pub write_timeouts: Count,
    /// numberOfBufferSizeOverflows: writes refused as larger than the buffer takes.
    pub overflows: Count,
    /// requestsRefused (sluice_): requests refused for any reason (full, closing, Kafka down).
    pub refused: Count,
    /// recordsRead: records read from the buffer.
    pub consumed: Count,
    /// numberOfRecordsFailedToParse: records the deserializer rejected or trapped on.
    pub failed_to_parse: Count,
    /// eventsWritten (sluice_): events written to the sinks.
    pub events: Count,
    /// recordsDeadLettered (sluice_): records (and events a processor failed) sent to the
    /// dead-letter file.
    pub dead_lettered: Count,
    /// eventsDropped (sluice_): events a processor dropped on purpose.
    pub dropped: Count,
    /// eventsFailedInProcessors (sluice_): events a processor failed or trapped on.
    pub processor_failed: Count,
    /// eventsUnrouted (sluice_): events no sink took (their routes matched no sink's).
    pub unrouted: Count,
    /// batchesAcknowledged (sluice_).
    pub acknowledged: Count,
}

impl Counters {
    pub fn new(pipeline: &str, buffer_prefix: &str) -> Self {
        let buffer = |name: &str| Count::new(&format!("{buffer_prefix}_{name}"), pipeline);
        let own = |name: &str| Count::new(&format!("sluice_{name}"), pipeline);
        Self {
            accepted: buffer("recordsWritten"),
            write_timeouts: buffer("writeTimeouts"),
            overflows: buffer("numberOfBufferSizeOverflows"),
            refused: own("requestsRefused"),
            consumed: buffer("recordsRead"),
            failed_to_parse: buffer("numberOfRecordsFailedToParse"),
            events: own("eventsWritten"),
            dead_lettered: own("recordsDeadLettered"),
            dropped: own("eventsDropped"),
            processor_failed: own("eventsFailedInProcessors"),
            unrouted: own("eventsUnrouted"),
            acknowledged: own("batchesAcknowledged"),
        }
    }
}

impl Counters {
    /// Logs the pipeline's counts, once, at shutdown.
    pub fn log_summary(&self, pipeline: &str) {
        tracing::info!(
            pipeline,
            accepted = self.accepted.get(),
            refused = self.refused.get(),
            consumed = self.consumed.get(),
            events = self.events.get(),
            dead_lettered = self.dead_lettered.get(),
            "pipeline stopped"
        );
    }
}
