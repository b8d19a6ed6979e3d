//! A buffer policy component over built-in buffers (`buffer: { NAME: { tiers: [...] } }`): the
//! tiers built as the built-ins are, the policy loaded from the plugin folder, and the records it
//! drops written to the pipeline's dead-letter file with its reason.

use std::sync::Arc;

use sluice_buffer::Buffer;
use sluice_buffer::memory::MemoryBuffer;
use sluice_buffer::tiered::{State, SystemClock, TieredBuffer};
use sluice_config::{PluginBuffer, Tier};
use sluice_plugin::{BufferPolicy, Catalog};

use super::BufferError;
use crate::sink::dlq::{self, DeadLetters, Rejected};

/// The most entries a policy's key-value state holds (expired ones are purged first). A dedup
/// policy with a 10-minute TTL remembers ~1,600 writes a second at this size.
const MAX_STATE_ENTRIES: usize = 1_000_000;

/// Builds the tiers, loads and configures the policy, and puts them together.
pub async fn build(
    p: &sluice_config::Pipeline,
    b: &PluginBuffer,
    plugins: &Catalog,
    dead_letters: Arc<DeadLetters>,
    data_dir: &std::path::Path,
) -> Result<TieredBuffer, BufferError> {
    let mut tiers: Vec<Arc<dyn Buffer>> = Vec::new();
    for tier in &b.tiers {
        tiers.push(match tier {
            Tier::BoundedBlocking(bb) => Arc::new(MemoryBuffer::new(
                &p.name,
                bb.buffer_size,
                bb.batch_size,
                p.delay,
            )),
            Tier::Kafka(k) => Arc::new(super::kafka::connect(p, k, data_dir).await?),
        });
    }
    let plugin = plugins
        .subscribe(&b.name)
        .ok_or_else(|| BufferError::Policy(format!("no plugin `{}` in the plugin folder", b.name)))?
        .borrow()
        .clone();
    let (options, limits) = (b.option_pairs(), crate::run::limits(&b.limits));
    // Instantiating runs guest code: off the reactor.
    let policy = tokio::task::spawn_blocking(move || BufferPolicy::new(plugin, options, limits))
        .await
        .expect("building a buffer policy does not panic")
        .map_err(|e| BufferError::Policy(e.to_string()))?;
    let pipeline = p.name.clone();
    let dropped = Arc::new(move |dropped: Vec<(sluice_buffer::Record, String)>| {
        let entries: Vec<_> = dropped
            .iter()
            .map(|(r, reason)| {
                let rejected = Rejected {
                    origin: &r.origin,
                    payload: &r.payload,
                    key: r.key.as_deref(),
                    content_type: r.content_type.as_deref(),
                    received_at_ms: r.received_at_ms,
                };
                dlq::entry(
                    &pipeline,
                    rejected,
                    &format!("dropped by the buffer policy: {reason}"),
                )
            })
            .collect();
        let (dead_letters, pipeline) = (dead_letters.clone(), pipeline.clone());
        Box::pin(async move {
            if let Err(e) = dead_letters.write(&entries).await {
                tracing::error!(%pipeline, error = %e, records = entries.len(), "cannot dead-letter records the buffer policy dropped");
            }
        }) as std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
    });
    Ok(TieredBuffer::new(
        &p.name,
        tiers,
        Box::new(policy),
        Arc::new(State::new(MAX_STATE_ENTRIES)),
        Arc::new(SystemClock),
        dropped,
    ))
}
