//! The Kafka buffer's counts and gauges, with Data Prepper's metric names.

use sluice_buffer::Count;

/// Counts of one Kafka buffer. Exported as `<prefix>_<name>{pipeline}` with Data Prepper's
/// names; the prefix is `custom_metric_prefix`, by default `kafka_buffer`.
#[derive(Debug)]
pub struct KafkaStats {
    /// numberOfRecordsProduced: records Kafka acknowledged to the producer.
    pub records_written: Count,
    /// numberOfWriteFailures: writes Kafka refused or did not acknowledge in time.
    pub write_failures: Count,
    /// numberOfProducerQueueFull: writes refused because the producer's local queue stayed full.
    pub write_timeouts: Count,
    /// numberOfRecordsConsumed.
    pub records_consumed: Count,
    /// numberOfBytesConsumed (payload bytes).
    pub bytes_consumed: Count,
    /// numberOfRecordsCommitted: offsets moved by commits.
    pub records_committed: Count,
    /// numberOfPositiveAcknowledgements: batches the pipeline acknowledged.
    pub positive_acknowledgements: Count,
    /// numberOfNegativeAcknowledgements: batches dropped unacknowledged (their offsets are
    /// not committed; they are read again after a restart or rebalance).
    pub negative_acknowledgements: Count,
    /// numberOfPollErrors: poll and client errors (broker down, ...).
    pub poll_errors: Count,
    /// numberOfPollAuthErrors.
    pub poll_auth_errors: Count,
    /// numberOfPartitionsRevoked.
    pub partitions_revoked: Count,
    /// numberOfRecordsUnreadable: records whose envelope this build cannot open.
    pub records_unreadable: Count,
    /// numberOfRecordsFailedToDecrypt: sealed records that did not open (wrong key or
    /// context, a changed byte, KMS refused), or that this buffer has no key for.
    pub decrypt_failures: Count,
    /// recordsInFlight: records handed to the workers and not yet acknowledged.
    pub(crate) in_flight: metrics::Gauge,
    /// The last lag seen per partition this process consumes (for a buffer policy's view).
    lags: std::sync::Mutex<std::collections::BTreeMap<i32, i64>>,
    /// Whether the last produce failed (a buffer policy sees the tier as unavailable).
    pub(crate) produce_failing: std::sync::atomic::AtomicBool,
    prefix: String,
    pipeline: String,
}

impl KafkaStats {
    /// Registers the metrics of `pipeline`'s buffer under `prefix`.
    pub fn new(prefix: &str, pipeline: &str) -> Self {
        let count = |name: &str| Count::new(&format!("{prefix}_{name}"), pipeline);
        Self {
            records_written: count("numberOfRecordsProduced"),
            write_failures: count("numberOfWriteFailures"),
            write_timeouts: count("numberOfProducerQueueFull"),
            records_consumed: count("numberOfRecordsConsumed"),
            bytes_consumed: count("numberOfBytesConsumed"),
            records_committed: count("numberOfRecordsCommitted"),
            positive_acknowledgements: count("numberOfPositiveAcknowledgements"),
            negative_acknowledgements: count("numberOfNegativeAcknowledgements"),
            poll_errors: count("numberOfPollErrors"),
            poll_auth_errors: count("numberOfPollAuthErrors"),
            partitions_revoked: count("numberOfPartitionsRevoked"),
            records_unreadable: count("numberOfRecordsUnreadable"),
            decrypt_failures: count("numberOfRecordsFailedToDecrypt"),
            in_flight: metrics::gauge!(format!("{prefix}_recordsInFlight"), "pipeline" => pipeline.to_owned()),
            lags: Default::default(),
            produce_failing: Default::default(),
            prefix: prefix.to_owned(),
            pipeline: pipeline.to_owned(),
        }
    }

    /// Sets the lag gauge of one partition.
    pub(crate) fn consumer_lag(&self, partition: i32, lag: i64) {
        self.lags
            .lock()
            .expect("lag lock")
            .insert(partition, lag.max(0));
        metrics::gauge!(
            format!("{}_consumerLag", self.prefix),
            "pipeline" => self.pipeline.clone(),
            "partition" => partition.to_string()
        )
        .set(lag as f64);
    }

    /// The lag summed over the partitions this process consumes, as last seen.
    pub fn lag(&self) -> u64 {
        let lags = self.lags.lock().expect("lag lock");
        lags.values().map(|l| u64::try_from(*l).unwrap_or(0)).sum()
    }
}
