//! The `buffer` of a pipeline: which one (`bounded_blocking`, `kafka`) and the in-memory
//! buffer's shape and rules. The kafka buffer's are in [`crate::kafka`].

use serde::Deserialize;

use crate::error::Errors;
use crate::kafka::KafkaBuffer;
use crate::location::join;

/// A buffer: one key naming the plugin.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[expect(
    clippy::large_enum_variant,
    reason = "one value per pipeline, parsed once at start: boxing saves nothing that matters"
)]
pub enum Buffer {
    /// An in-memory bounded queue of raw records. Fast; lost if the process dies.
    BoundedBlocking(BoundedBlocking),
    /// A Kafka topic: accepted records survive a crash of sluice; offsets are committed only
    /// after the sinks took the events.
    Kafka(KafkaBuffer),
}

impl Buffer {
    /// The start of the buffer's metric names: the kafka buffer's `custom_metric_prefix`, else
    /// the buffer's name (`kafka_buffer`, `bounded_blocking`).
    pub fn metric_prefix(&self) -> String {
        match self {
            Buffer::Kafka(k) => k.metric_prefix(),
            Buffer::BoundedBlocking(_) => "bounded_blocking".to_owned(),
        }
    }

    /// The plugin name, as written in the file.
    pub fn plugin_name(&self) -> &'static str {
        match self {
            Buffer::BoundedBlocking(_) => "bounded_blocking",
            Buffer::Kafka(_) => "kafka",
        }
    }
}

impl Default for Buffer {
    fn default() -> Self {
        Buffer::BoundedBlocking(BoundedBlocking::default())
    }
}

/// The `bounded_blocking` buffer, as in Data Prepper.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoundedBlocking {
    /// The most records (request bodies) held at once, counting those being processed. When
    /// full, sources refuse new data (http answers 503 with `Retry-After`). Default 12800.
    #[serde(default = "default_buffer_size")]
    pub buffer_size: usize,
    /// The most records handed to the deserializer in one batch. Default 200.
    #[serde(default = "default_batch_size")]
    pub batch_size: usize,
}

/// Data Prepper's bounded_blocking defaults.
const fn default_buffer_size() -> usize {
    12_800
}

const fn default_batch_size() -> usize {
    200
}

impl Default for BoundedBlocking {
    fn default() -> Self {
        Self {
            buffer_size: default_buffer_size(),
            batch_size: default_batch_size(),
        }
    }
}

/// The in-memory buffer's rules; `path` is its key path (`<pipeline>.buffer.bounded_blocking`).
pub(crate) fn check_bounded_blocking(b: &BoundedBlocking, path: &str, errors: &mut Errors) {
    if b.buffer_size == 0 {
        errors.at(
            &join(path, "buffer_size"),
            format!("`{path}.buffer_size` must be at least 1"),
        );
    }
    if b.batch_size == 0 {
        errors.at(
            &join(path, "batch_size"),
            format!("`{path}.batch_size` must be at least 1"),
        );
    } else if b.batch_size > b.buffer_size && b.buffer_size > 0 {
        errors.at(
            &join(path, "batch_size"),
            format!(
                "`{path}.batch_size` ({}) is larger than `buffer_size` ({}); a batch cannot be larger than the buffer",
                b.batch_size, b.buffer_size
            ),
        );
    }
}
