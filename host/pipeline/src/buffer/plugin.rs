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
use sluice_plugin::{BufferPolicy, Catalog, Limits, Plugin};
use tokio::sync::watch;

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
        tiers.push(super::build_builtin(p, tier, data_dir).await?);
    }
    let mut updates = plugins
        .subscribe(&b.name)
        .ok_or_else(|| BufferError::MissingPolicy(b.name.clone()))?;
    let plugin = updates.borrow_and_update().clone();
    let (options, limits) = (b.option_pairs(), crate::run::limits(&b.limits));
    let (o, l) = (options.clone(), limits);
    // Instantiating runs guest code: off the reactor.
    let current = tokio::task::spawn_blocking(move || BufferPolicy::new(plugin, o, l))
        .await
        .expect("building a buffer policy does not panic")?;
    let policy = Reloading {
        pipeline: p.name.clone(),
        updates,
        options,
        limits,
        current,
    };
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

/// The policy, following new versions of its plugin: before a call, a version the plugin
/// folder changed to is started and configured with the same options; if it cannot start, the
/// running one stays. The policy's key-value state is the host's, so it carries over.
struct Reloading {
    pipeline: String,
    updates: watch::Receiver<Plugin>,
    options: Vec<(String, String)>,
    limits: Limits,
    current: BufferPolicy,
}

impl Reloading {
    /// Switches to a new version if there is one (calls run on blocking threads: starting one
    /// here does not stall the reactor).
    fn follow(&mut self) {
        if !self.updates.has_changed().unwrap_or(false) {
            return;
        }
        let plugin = self.updates.borrow_and_update().clone();
        let (pipeline, name) = (&self.pipeline, plugin.name().to_owned());
        let (from, to) = (
            self.current.plugin().sha256()[..12].to_owned(),
            plugin.sha256()[..12].to_owned(),
        );
        match BufferPolicy::new(plugin, self.options.clone(), self.limits) {
            Ok(next) => {
                if next.headers() != self.current.headers() {
                    // The http source asked once, at start, which headers to keep.
                    tracing::warn!(%pipeline, policy = %name, running = ?self.current.headers(), new = ?next.headers(), "the new buffer policy version reads other request headers; the source keeps passing the ones the first version asked for until sluice restarts");
                }
                self.current = next;
                tracing::info!(%pipeline, policy = %name, %from, %to, "switched to the new buffer policy version");
            }
            Err(error) => {
                tracing::error!(%pipeline, policy = %name, %to, %error, "the new buffer policy version cannot start here; keeping the running one");
            }
        }
    }
}

impl Policy for Reloading {
    fn wanted_headers(&self) -> Vec<String> {
        self.current.wanted_headers()
    }

    fn on_write(
        &mut self,
        cx: &mut Context,
        records: &[Incoming],
    ) -> Result<Result<Vec<Placement>, Refusal>, PolicyFault> {
        self.follow();
        self.current.on_write(cx, records)
    }

    fn next_read(&mut self, cx: &mut Context, worker: u32) -> Result<Option<usize>, PolicyFault> {
        self.follow();
        self.current.next_read(cx, worker)
    }

    fn tick(&mut self, cx: &mut Context) -> Result<Vec<Move>, PolicyFault> {
        self.follow();
        self.current.tick(cx)
    }

    fn recycle(&mut self) {
        self.current.recycle();
    }
}
