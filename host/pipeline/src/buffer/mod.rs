//! Building a pipeline's buffer from its config. [`build`] is the one place that maps a
//! configured buffer to its implementation (adding a buffer: a new crate or file, plus one
//! line there); everything after that goes through the [`sluice_buffer::Buffer`] trait.
//!
//! - `bounded_blocking`: [`sluice_buffer::memory::MemoryBuffer`], built in one line here.
//! - `kafka`: [`kafka`] turns the config into `sluice_kafka`'s settings and connects.
//! - any other name: [`plugin`], a buffer policy component over built-in buffers as its tiers.

pub mod kafka;
pub mod plugin;

use std::path::Path;
use std::sync::Arc;

use sluice_buffer::Buffer;
use sluice_buffer::memory::MemoryBuffer;

/// Why a buffer could not start.
#[derive(Debug, thiserror::Error)]
pub enum BufferError {
    #[error("kafka buffer: {0}")]
    Kafka(#[from] sluice_kafka::KafkaBufferError),
    /// A secret or key could not be resolved (SASL password, encryption key).
    #[error("kafka buffer: {0}")]
    KafkaSecurity(String),
    /// The buffer policy plugin is missing, cannot start, or refused its options.
    #[error("buffer policy: {0}")]
    Policy(String),
}

/// The buffer a pipeline's `buffer:` configures. `data_dir` makes the Kafka buffer's default
/// static group instance id.
pub async fn build(
    p: &sluice_config::Pipeline,
    data_dir: &Path,
    plugins: &sluice_plugin::Catalog,
    dead_letters: Arc<crate::sink::dlq::DeadLetters>,
) -> Result<Arc<dyn Buffer>, BufferError> {
    Ok(match &p.buffer {
        sluice_config::Buffer::BoundedBlocking(bb) => Arc::new(MemoryBuffer::new(
            &p.name,
            bb.buffer_size,
            bb.batch_size,
            p.delay,
        )),
        sluice_config::Buffer::Kafka(k) => Arc::new(kafka::connect(p, k, data_dir).await?),
        sluice_config::Buffer::Plugin(b) => {
            Arc::new(plugin::build(p, b, plugins, dead_letters, data_dir).await?)
        }
    })
}
