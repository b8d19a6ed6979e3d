//! Building and running every pipeline of a config, and the shutdown protocol: stop the
//! sources (in-flight requests finish), close the buffers, let the workers drain them through
//! the sinks within `drain_timeout`, then return.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use sluice_buffer::Buffer as _;
use sluice_buffer::memory::MemoryBuffer;
use sluice_config::{Buffer, Config, Sink, Source};
use sluice_plugin::{Decoder, Limits, Plugin, PluginError};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::sink::{LineSink, SinkError, default_dlq_path};
use crate::worker::{self, Counters, Outputs};

/// Settings of a run that are not in the pipeline file.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Default home of dead-letter files.
    pub data_dir: PathBuf,
    /// How long shutdown may take to drain the buffers.
    pub drain_timeout: Duration,
}

/// Why pipelines could not start.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("pipeline `{pipeline}`: deserializer `{plugin}` is not loaded")]
    MissingPlugin { pipeline: String, plugin: String },
    #[error("pipeline `{pipeline}`: {source}")]
    Plugin {
        pipeline: String,
        source: PluginError,
    },
    #[error("pipeline `{pipeline}`: {source}")]
    Sink { pipeline: String, source: SinkError },
    #[error("pipeline `{pipeline}`: cannot listen on port {port}: {source}")]
    Listen {
        pipeline: String,
        port: u16,
        source: std::io::Error,
    },
}

struct Built {
    name: String,
    buffer: MemoryBuffer,
    listener: tokio::net::TcpListener,
    router: axum::Router,
    workers: Vec<(Box<dyn sluice_buffer::BufferReader>, Decoder)>,
    outputs: Arc<Outputs>,
}

/// Runs every pipeline until `shutdown` resolves, then drains and returns. `ready` is called
/// once all pipelines listen.
pub async fn run(
    config: Config,
    plugins: &HashMap<String, Plugin>,
    options: RunOptions,
    shutdown: impl Future<Output = ()>,
    ready: impl FnOnce(),
) -> Result<(), PipelineError> {
    let mut built = Vec::new();
    for p in config.pipelines {
        built.push(build(p, plugins, &options).await?);
    }
    ready();

    let (stop_tx, stop_rx) = watch::channel(false);
    let mut servers = JoinSet::new();
    let mut workers = JoinSet::new();
    let mut pipelines = Vec::new();
    for b in built {
        let mut stop = stop_rx.clone();
        let serve = axum::serve(b.listener, b.router).with_graceful_shutdown(async move {
            let _ = stop.wait_for(|s| *s).await;
        });
        let name = b.name.clone();
        servers.spawn(async move {
            if let Err(e) = serve.await {
                tracing::error!(pipeline = %name, error = %e, "http source stopped");
            }
        });
        for (reader, decoder) in b.workers {
            workers.spawn(worker::run(reader, decoder, b.outputs.clone()));
        }
        pipelines.push((b.name, b.buffer, b.outputs));
    }

    shutdown.await;
    tracing::info!("shutting down: stopping sources, then draining buffers");
    let _ = stop_tx.send(true);
    let deadline = tokio::time::Instant::now() + options.drain_timeout;
    let _ = tokio::time::timeout_at(deadline, async {
        while servers.join_next().await.is_some() {}
    })
    .await;
    for (_, buffer, _) in &pipelines {
        buffer.close();
    }
    let drained = tokio::time::timeout_at(deadline, async {
        while workers.join_next().await.is_some() {}
    })
    .await;
    for (name, buffer, outputs) in &pipelines {
        let c = &outputs.counters;
        tracing::info!(
            pipeline = %name,
            accepted = c.accepted.load(Ordering::Relaxed),
            refused = c.refused.load(Ordering::Relaxed),
            consumed = c.consumed.load(Ordering::Relaxed),
            events = c.events.load(Ordering::Relaxed),
            dead_lettered = c.dead_lettered.load(Ordering::Relaxed),
            left_in_buffer = buffer.used(),
            "pipeline stopped"
        );
    }
    if drained.is_err() {
        tracing::error!(drain_timeout = ?options.drain_timeout, "drain timed out; records still in the buffers are lost");
    }
    Ok(())
}

async fn build(
    p: sluice_config::Pipeline,
    plugins: &HashMap<String, Plugin>,
    options: &RunOptions,
) -> Result<Built, PipelineError> {
    let name = p.name.clone();
    let Source::Http(http) = &p.source;
    let deserializer = p.source.deserializer();
    let plugin = plugins
        .get(&deserializer.name)
        .ok_or_else(|| PipelineError::MissingPlugin {
            pipeline: name.clone(),
            plugin: deserializer.name.clone(),
        })?;
    let limits = Limits {
        max_memory: usize::try_from(deserializer.max_memory.bytes()).unwrap_or(usize::MAX),
        timeout: deserializer.timeout,
    };
    let Buffer::BoundedBlocking(bb) = &p.buffer;
    let buffer = MemoryBuffer::new(bb.buffer_size, bb.batch_size, p.delay);

    let mut sinks = Vec::new();
    for sink in &p.sink {
        let sink = match sink {
            Sink::Stdout(_) => LineSink::stdout(),
            Sink::File(f) => {
                LineSink::file(&f.path)
                    .await
                    .map_err(|source| PipelineError::Sink {
                        pipeline: name.clone(),
                        source,
                    })?
            }
        };
        sinks.push(Arc::new(sink));
    }
    let dlq_path = p
        .dlq_path
        .clone()
        .unwrap_or_else(|| default_dlq_path(&options.data_dir, &name));
    let dlq = Arc::new(
        LineSink::file(&dlq_path)
            .await
            .map_err(|source| PipelineError::Sink {
                pipeline: name.clone(),
                source,
            })?,
    );
    let counters = Arc::new(Counters::default());
    let outputs = Arc::new(Outputs {
        pipeline: name.clone(),
        sinks,
        dlq,
        counters: counters.clone(),
    });

    let mut workers = Vec::new();
    for _ in 0..p.workers {
        let decoder = Decoder::new(plugin.clone(), deserializer.option_pairs(), limits).map_err(
            |source| PipelineError::Plugin {
                pipeline: name.clone(),
                source,
            },
        )?;
        workers.push((buffer.reader(), decoder));
    }
    let listener = tokio::net::TcpListener::bind(("0.0.0.0", http.port))
        .await
        .map_err(|source| PipelineError::Listen {
            pipeline: name.clone(),
            port: http.port,
            source,
        })?;
    let router = crate::source::http::router(&name, http, buffer.writer(), counters);
    tracing::info!(pipeline = %name, port = http.port, path = %http.path, deserializer = %plugin.name(), workers = p.workers, dlq = %dlq_path.display(), "pipeline ready");
    Ok(Built {
        name,
        buffer,
        listener,
        router,
        workers,
        outputs,
    })
}
