//! Building a pipeline's buffer from its config. [`build`] maps a configured buffer to its
//! implementation: a built-in through `build_builtin`, made from `sluice_config`'s buffer list
//! (adding a buffer: its config file, its runtime file here implementing `BuildBuffer`, and
//! its line in the list); everything after that goes through the [`sluice_buffer::Buffer`]
//! trait.
//!
//! - `bounded_blocking`: `memory`, [`sluice_buffer::memory::MemoryBuffer`].
//! - `kafka`: [`kafka`] turns the config into `sluice_kafka`'s settings and connects.
//! - any other name: [`plugin`], a buffer policy component over built-in buffers as its tiers.
//!
//! A pipeline whose source reads its input itself (the `kafka` source's topics, the `s3`
//! source's queue) reads it in place of a buffer: [`build`] connects the source's readers
//! (`crate::source::kafka::connect`, `crate::source::s3::connect`), as many batches waiting
//! as its `bounded_blocking` buffer's `buffer_size` holds records.

pub mod kafka;
mod memory;
pub mod plugin;

use std::path::Path;
use std::sync::Arc;

use sluice_buffer::Buffer;

/// Why a buffer could not start.
#[derive(Debug, thiserror::Error)]
pub enum BufferError {
    #[error("kafka buffer: {0}")]
    Kafka(#[from] sluice_kafka::KafkaBufferError),
    /// The `kafka` source's consumers could not start.
    #[error("kafka source: {0}")]
    KafkaSource(sluice_kafka::KafkaBufferError),
    /// The `s3` source's queue cannot be read.
    #[error("s3 source: {0}")]
    S3Source(#[from] sluice_s3::source::S3SourceError),
    /// The `s3` source's settings could not be resolved.
    #[error("s3 source: {0}")]
    S3SourceSecret(sluice_config::SecretError),
    /// The `kafka` source's SASL password could not be read.
    #[error("kafka source: authentication: {0}")]
    KafkaSourceSecret(sluice_config::SecretError),
    /// A secret or key could not be resolved (SASL password, encryption key).
    #[error("kafka buffer: {0}")]
    KafkaSettings(#[from] sluice_config::kafka::resolved::KafkaResolveError),
    /// The static encryption key was refused.
    #[error("kafka buffer: {0}")]
    KafkaKey(#[from] sluice_crypt::CryptError),
    /// The buffer policy plugin is not in the plugin folder.
    #[error("buffer policy: no plugin `{0}` in the plugin folder")]
    MissingPolicy(String),
    /// The buffer policy plugin cannot start, or refused its options.
    #[error("buffer policy: {0}")]
    Policy(#[from] sluice_plugin::PluginError),
}

/// The buffer a pipeline's `buffer:` configures. `data_dir` makes the Kafka buffer's default
/// static group instance id.
pub async fn build(
    p: &sluice_config::Pipeline,
    data_dir: &Path,
    plugins: &sluice_plugin::Catalog,
    dead_letters: Arc<crate::sink::dlq::DeadLetters>,
) -> Result<Arc<dyn Buffer>, BufferError> {
    if let sluice_config::Source::Kafka(k) = &p.source {
        let settings = sluice_config::Resolve::resolve(&**k, &p.name)
            .map_err(BufferError::KafkaSourceSecret)?;
        let buffer = own_buffer(p);
        let batch = settings.topics.iter().map(|t| t.max_poll_records).max();
        // At least one waiting batch per consumer, as the kafka buffer's channel holds.
        let consumers = settings.topics.iter().map(|t| t.workers).sum::<usize>();
        let queued = (buffer.buffer_size / batch.unwrap_or(1).max(1)).max(consumers);
        let source = crate::source::kafka::connect(p, settings, queued, &buffer, data_dir)
            .await
            .map_err(BufferError::KafkaSource)?;
        return Ok(Arc::new(source));
    }
    if let sluice_config::Source::S3(s3) = &p.source {
        let settings =
            sluice_config::Resolve::resolve(&**s3, &p.name).map_err(BufferError::S3SourceSecret)?;
        let buffer = own_buffer(p);
        // At least one waiting batch per queue reader.
        let queued = (buffer.buffer_size / buffer.batch_size.max(1)).max(settings.workers);
        let source = crate::source::s3::connect(p, settings, queued, &buffer, data_dir).await?;
        return Ok(Arc::new(source));
    }
    match &p.buffer {
        sluice_config::Buffer::Builtin(tier) => build_builtin(p, tier, data_dir).await,
        sluice_config::Buffer::Plugin(b) => Ok(Arc::new(
            plugin::build(p, b, plugins, dead_letters, data_dir).await?,
        )),
    }
}

/// The `bounded_blocking` buffer of a pipeline whose source reads its input itself: it
/// bounds what the source reads ahead (validation refuses any other buffer there).
fn own_buffer(p: &sluice_config::Pipeline) -> sluice_config::BoundedBlocking {
    match &p.buffer {
        sluice_config::Buffer::Builtin(sluice_config::Tier::BoundedBlocking(b)) => b.clone(),
        _ => sluice_config::BoundedBlocking::default(),
    }
}

/// How a built-in buffer's config type becomes its buffer; each type of `sluice_config`'s
/// buffer list implements it in its runtime file.
pub(crate) trait BuildBuffer {
    /// Starts (connects) the buffer for pipeline `p`.
    async fn build(
        &self,
        p: &sluice_config::Pipeline,
        data_dir: &Path,
    ) -> Result<Arc<dyn Buffer>, BufferError>;
}

macro_rules! build_builtin {
    ($( $(#[$doc:meta])* $variant:ident($config:ty) = $name:literal, )*) => {
        /// A built-in buffer, as a pipeline's buffer or a tier: one arm per line of the buffer
        /// list, each its config type's [`BuildBuffer`].
        pub(crate) async fn build_builtin(
            p: &sluice_config::Pipeline,
            tier: &sluice_config::Tier,
            data_dir: &Path,
        ) -> Result<Arc<dyn Buffer>, BufferError> {
            match tier {
                $( sluice_config::Tier::$variant(config) => config.build(p, data_dir).await, )*
            }
        }
    };
}
sluice_config::for_each_buffer!(build_builtin);
