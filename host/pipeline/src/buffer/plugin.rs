//! A buffer policy component over built-in buffers (`buffer: { NAME: { tiers: [...] } }`): the
//! tiers built as the built-ins are, the policy loaded from the plugin folder, and the records it
//! drops written to the pipeline's dead-letter file with its reason. The policy follows new
//! versions of its plugin (hot reload) between calls.

use std::sync::Arc;

use sluice_buffer::Buffer;
use sluice_buffer::tiered::{
    Context, Incoming, Move, Placement, Policy, PolicyFault, Refusal, State, SystemClock,
    TieredBuffer,
};
use sluice_config::PluginBuffer;
use sluice_plugin::{BufferPolicy, Catalog};

use super::BufferError;
use crate::follow::{Following, Unstarted};
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
        tiers.push(super::build_builtin(p, tier, data_dir).await?);
    }
    let settings = b.settings();
    let policy = Following::<BufferPolicy>::start(&p.name, &settings, plugins)
        .await
        .map_err(|e| match e {
            Unstarted::Missing => BufferError::MissingPolicy(settings.name.clone()),
            Unstarted::Failed(error) => BufferError::Policy(error),
        })?;
    let pipeline = p.name.clone();
    let dropped = Arc::new(move |dropped: Vec<(sluice_buffer::Record, String)>| {
        let entries: Vec<_> = dropped
            .iter()
            .map(|(r, reason)| {
                let rejected = Rejected {
                    stage: dlq::Stage::Buffer,
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
        Arc::new(State::new(MAX_STATE_ENTRIES).with_max_bytes(b.max_state_size.bytes())),
        Arc::new(SystemClock),
        dropped,
    ))
}

/// The policy follows new versions of its plugin before each call: its key-value state is the
/// host's, so it carries over.
impl Policy for Following<BufferPolicy> {
    fn name(&self) -> &str {
        self.current.plugin().name()
    }

    fn wanted_headers(&self) -> Vec<String> {
        self.current.wanted_headers()
    }

    fn on_write(
        &mut self,
        cx: &mut Context,
        records: &[Incoming],
    ) -> Result<Result<Vec<Placement>, Refusal>, PolicyFault> {
        self.follow_here();
        self.measured(|p| p.on_write(cx, records))
    }

    fn next_read(&mut self, cx: &mut Context, worker: u32) -> Result<Option<usize>, PolicyFault> {
        self.follow_here();
        self.measured(|p| p.next_read(cx, worker))
    }

    fn tick(&mut self, cx: &mut Context) -> Result<Vec<Move>, PolicyFault> {
        self.follow_here();
        self.measured(|p| p.tick(cx))
    }

    fn recycle(&mut self) {
        self.current.recycle();
    }
}
