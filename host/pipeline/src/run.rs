//! Building and running every pipeline of a config, and the shutdown protocol: stop the
//! sources (in-flight requests finish), close the buffers, let the workers drain them through
//! the sinks within `drain_timeout`, wait for each buffer's last work (Kafka: the last commit),
//! then return.
//!
//! This file names no concrete source, buffer, processor or sink: each is built from its config
//! by [`crate::source::build`], [`crate::buffer::build`], `crate::processor::stages` and
//! [`crate::sink::build`], and driven through its trait.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sluice_buffer::{Buffer, BufferReader};
use sluice_config::Config;
use sluice_plugin::{Catalog, Decoder, PluginError};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::buffer::BufferError;
use crate::counters::Counters;
use crate::follow::{Following, Unstarted};
use crate::sink::SinkError;
use crate::sink::dlq::DeadLetters;
use crate::source::{Source, SourceContext, SourceError};
use crate::watchdog::Watchdog;
use crate::worker::{self, Delivery, Stage};

/// Settings of a run that are not in the pipeline file.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Default home of dead-letter files.
    pub data_dir: PathBuf,
    /// How long shutdown may take to drain the buffers.
    pub drain_timeout: Duration,
    /// The plugin folder to watch for new and changed `.wasm` files, and how often to look
    /// (`None`: no hot reload).
    pub reload: Option<(PathBuf, Duration)>,
    /// Where workers mark the time their batches spend in the plugin (read by `/health`).
    pub watchdog: Watchdog,
    /// Where the running pipelines are registered for the admin endpoint.
    pub registry: crate::operate::Registry,
}

/// Why pipelines could not start.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("pipeline `{pipeline}`: deserializer `{plugin}` is not loaded")]
    MissingPlugin { pipeline: String, plugin: String },
    #[error("pipeline `{pipeline}`: processor `{plugin}` is not loaded")]
    MissingProcessor { pipeline: String, plugin: String },
    #[error("pipeline `{pipeline}`: processor `{processor}`: `{}`: {}", .error.key, .error.message)]
    Builtin {
        pipeline: String,
        processor: &'static str,
        error: sluice_processors::BuildError,
    },
    #[error("pipeline `{pipeline}`: {error}")]
    Plugin {
        pipeline: String,
        error: PluginError,
    },
    #[error("pipeline `{pipeline}`: {error}")]
    Sink { pipeline: String, error: SinkError },
    #[error("pipeline `{pipeline}`: {error}")]
    Buffer {
        pipeline: String,
        error: BufferError,
    },
    #[error("pipeline `{pipeline}`: {error}")]
    Source {
        pipeline: String,
        error: SourceError,
    },
}

/// One worker's reader, deserializer and processor stages.
type Worker = (Box<dyn BufferReader>, Following<Decoder>, Vec<Stage>);

/// A pipeline, built and ready to run.
struct Built {
    name: String,
    buffer: Arc<dyn Buffer>,
    source: Box<dyn Source>,
    /// The source's input ends (`stdin`): the run stops when it has.
    ends: bool,
    workers: Vec<Worker>,
    /// The flusher's stages, when a processor keeps events past their batch.
    flusher: Option<Vec<Stage>>,
    delivery: Arc<Delivery>,
}

/// Runs every pipeline until `shutdown` resolves, then drains and returns. `ready` is called
/// once all pipelines listen.
pub async fn run(
    config: Config,
    plugins: &Arc<Catalog>,
    options: RunOptions,
    shutdown: impl Future<Output = ()>,
    ready: impl FnOnce(),
) -> Result<(), PipelineError> {
    // Downstream pipelines first, so that a `pipeline` sink finds the buffer it writes to;
    // then upstream first again, the order shutdown drains them in. The pipelines of one level
    // do not write to each other, so they are built at once: each connects its buffer (the
    // topic made, the group joined) while the others do (50 pipelines took 6-9 s one by one).
    let levels = sluice_config::connection::levels(&config.pipelines);
    let mut by_level: BTreeMap<usize, Vec<sluice_config::Pipeline>> = BTreeMap::new();
    for (level, p) in levels.into_iter().zip(config.pipelines) {
        by_level.entry(level).or_default().push(p);
    }
    let mut connections = crate::sink::pipeline::Connections::default();
    let mut built = Vec::new();
    for (level, pipelines) in by_level.into_iter().rev() {
        let builds = pipelines
            .into_iter()
            .map(|p| build(p, plugins, &options, &connections));
        // In reverse, as `built` is reversed below: each level in the file's order.
        for b in futures_util::future::try_join_all(builds)
            .await?
            .into_iter()
            .rev()
        {
            connections.insert(&b.name, b.buffer.writer());
            built.push((level, b));
        }
    }
    built.reverse();
    ready();

    let (stop_tx, stop_rx) = watch::channel(false);
    let mut sources = JoinSet::new();
    // Each level's workers (see `levels`): shutdown drains one level before it closes the
    // buffers of the next, which the first level's `pipeline` sinks write to.
    let mut workers: Vec<JoinSet<()>> = Vec::new();
    // Each level's flushers (`worker::flush`), told where the level's shutdown is.
    let mut flushers: Vec<(JoinSet<()>, watch::Sender<worker::Phase>)> = Vec::new();
    let mut pipelines = Vec::new();
    // A buffer may wait longer than the default for its batches (Kafka: its `drain_timeout`).
    let mut drain_timeout = options.drain_timeout;
    // Dropped by each source whose input ends (`stdin`) as it finishes: once all have, the
    // run stops as on `shutdown`.
    let (ended_tx, mut ended_rx) = mpsc::channel::<()>(1);
    let ending = built.iter().any(|(_, b)| b.ends);
    for (level, b) in built {
        let name = b.name;
        let source = b.source.run(stop_rx.clone());
        if b.ends {
            let ended = ended_tx.clone();
            sources.spawn(async move {
                source.await;
                drop(ended);
            });
        } else {
            sources.spawn(source);
        }
        if workers.len() <= level {
            workers.resize_with(level + 1, JoinSet::new);
            flushers.resize_with(level + 1, || {
                (JoinSet::new(), watch::channel(worker::Phase::Running).0)
            });
        }
        if let Some(stages) = b.flusher {
            let (set, phase) = &mut flushers[level];
            let slot = options.watchdog.slot(&name, b.workers.len());
            set.spawn(worker::flush(
                stages,
                b.delivery.clone(),
                slot,
                phase.subscribe(),
            ));
        }
        for (i, (reader, decoder, stages)) in b.workers.into_iter().enumerate() {
            let slot = options.watchdog.slot(&name, i);
            workers[level].spawn(crate::on_own_thread(worker::run(
                reader,
                decoder,
                stages,
                b.delivery.clone(),
                slot,
            )));
        }
        if let Some(own) = b.buffer.drain_timeout() {
            drain_timeout = drain_timeout.max(own);
        }
        pipelines.push((level, name, b.buffer, b.delivery));
    }

    let buffers: Vec<Arc<dyn Buffer>> = pipelines.iter().map(|(_, _, b, _)| b.clone()).collect();
    let watchdog = options.watchdog.clone();
    let gauge_task = tokio::spawn(async move {
        loop {
            for buffer in &buffers {
                buffer.update_gauges();
            }
            for (pipeline, n) in watchdog.stalled_per_pipeline() {
                metrics::gauge!("sluice_workers_stalled", "pipeline" => pipeline).set(n as f64);
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });

    let reload_task = options
        .reload
        .clone()
        .map(|(dir, every)| tokio::spawn(crate::reload::watch(plugins.clone(), dir, every)));

    drop(ended_tx);
    let input_ended = async {
        if ending {
            // `None` once every sender is dropped: each ending source has finished.
            ended_rx.recv().await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = shutdown => {}
        () = input_ended => tracing::info!("every source's input ended"),
    }
    gauge_task.abort();
    if let Some(task) = reload_task {
        task.abort();
    }
    tracing::info!("shutting down: stopping sources, then draining buffers");
    let _ = stop_tx.send(true);
    let deadline = tokio::time::Instant::now() + drain_timeout;
    let _ = tokio::time::timeout_at(deadline, async {
        while sources.join_next().await.is_some() {}
    })
    .await;
    // Stateful processors, at every level, let go of what they hold: an upstream level's
    // batches wait for what the levels after it hold.
    for (_, phase) in &flushers {
        let _ = phase.send(worker::Phase::Draining);
    }
    let mut drained = true;
    for (level, workers) in workers.iter_mut().enumerate() {
        let here = || pipelines.iter().filter(move |(l, ..)| *l == level);
        for (_, _, buffer, delivery) in here() {
            buffer.close();
            // Staging sinks send now: the buffer's readers end only once what they read is
            // acknowledged, and a staged batch is acknowledged only once sent.
            for sink in &delivery.sinks {
                sink.drain();
            }
        }
        let done = tokio::time::timeout_at(deadline, async {
            while workers.join_next().await.is_some() {}
        })
        .await;
        if done.is_err() {
            // Batches still held by workers are dropped: the memory buffer loses them; the
            // kafka buffer does not commit them, so they are read again after a restart.
            drained = false;
            workers.abort_all();
            while workers.join_next().await.is_some() {}
        }
        // The flushers' last flush, then they end: before the staged sinks send what they hold.
        let (set, phase) = &mut flushers[level];
        let _ = phase.send(worker::Phase::Last);
        if tokio::time::timeout_at(deadline, async { while set.join_next().await.is_some() {} })
            .await
            .is_err()
        {
            drained = false;
            set.abort_all();
        }
        // Sinks that stage events send what they hold, so its batches are acknowledged before
        // the buffers' last commit (and a `pipeline` sink's reach the next level's buffer
        // before it closes).
        let flushed = tokio::time::timeout_at(deadline, async {
            for (_, _, _, delivery) in here() {
                for sink in &delivery.sinks {
                    sink.close().await;
                }
            }
        })
        .await;
        if flushed.is_err() {
            tracing::error!(drain_timeout = ?drain_timeout, "sinks did not deliver what they staged in time; those batches are not acknowledged (kafka buffers read them again after a restart)");
        }
    }
    for (_, _, buffer, _) in &pipelines {
        buffer.join().await;
    }
    for (_, name, buffer, delivery) in &pipelines {
        delivery.counters.log_summary(name);
        buffer.log_summary();
    }
    if !drained {
        tracing::error!(drain_timeout = ?drain_timeout, "drain timed out; records not yet in the sinks are lost from memory buffers, and read again from kafka buffers after a restart");
    }
    Ok(())
}

/// A worker's deserializer for pipeline `name`, following new versions of its plugin.
pub(crate) async fn start_decoder(
    name: &str,
    deserializer: &sluice_config::PluginSettings,
    plugins: &Catalog,
) -> Result<Following<Decoder>, PipelineError> {
    Following::<Decoder>::start(name, deserializer, plugins)
        .await
        .map_err(|e| match e {
            Unstarted::Missing => PipelineError::MissingPlugin {
                pipeline: name.to_owned(),
                plugin: deserializer.name.clone(),
            },
            Unstarted::Failed(error) => PipelineError::Plugin {
                pipeline: name.to_owned(),
                error,
            },
        })
}

async fn build(
    p: sluice_config::Pipeline,
    plugins: &Catalog,
    options: &RunOptions,
    connections: &crate::sink::pipeline::Connections,
) -> Result<Built, PipelineError> {
    let name = p.name.clone();
    let deserializer = p.source.deserializer().settings();
    // Each worker's plugins first: a missing or broken plugin fails the start before anything
    // connects.
    let prepared = crate::processor::prepare(&name, &p.processor)?;
    let mut plugin_stages = Vec::new();
    for _ in 0..p.workers {
        let decoder = start_decoder(&name, &deserializer, plugins).await?;
        let stages = crate::processor::stages(&name, &prepared, plugins).await?;
        plugin_stages.push((decoder, stages));
    }
    let flusher = if crate::processor::keeps_events(&prepared) {
        Some(crate::processor::stages(&name, &prepared, plugins).await?)
    } else {
        None
    };
    let sink_error = |error| PipelineError::Sink {
        pipeline: name.clone(),
        error,
    };
    let dlq_path = crate::operate::dlq_path(&p, &options.data_dir);
    let dead_letters = Arc::new(
        DeadLetters::open(&dlq_path, &name)
            .await
            .map_err(sink_error)?,
    );
    let buffer = crate::buffer::build(&p, &options.data_dir, plugins, dead_letters.clone())
        .await
        .map_err(|error| PipelineError::Buffer {
            pipeline: name.clone(),
            error,
        })?;
    let mut sinks = Vec::new();
    let cx = crate::sink::SinkBuild {
        pipeline: &name,
        connections,
        read_delay: p.delay,
    };
    for sink in &p.sink {
        let sink = crate::sink::Sink::open(&cx, &sink.sink, dead_letters.clone())
            .await
            .map_err(sink_error)?;
        sinks.push(Arc::new(sink));
    }
    let hands: Vec<bool> = sinks.iter().map(|s| s.hands_events()).collect();
    let stateful = plugin_stages
        .iter()
        .any(|(_, stages)| stages.iter().any(|s| matches!(s, Stage::Stateful(_))));
    let per_record = !stateful && sinks.iter().any(|s| s.cuts_by_offsets());
    let counters = Arc::new(Counters::new(&name, &p.buffer.metric_prefix()));
    let tap = crate::operate::tap::Tap::new(
        plugin_stages
            .first()
            .into_iter()
            .flat_map(|(_, stages)| stages.iter().map(Stage::name)),
        sinks.iter().map(|s| s.name()),
    );
    let delivery = Arc::new(Delivery {
        pipeline: name.clone(),
        event_type: p.source.event_type(),
        connected: p.source.carries_events(),
        router: crate::worker::Router::new(&p.route, &p.sink)
            .handing(&hands)
            .encoding(sinks.iter().map(|s| s.encoder()).collect()),
        sinks,
        dead_letters,
        counters: counters.clone(),
        per_record,
        tap: Arc::new(tap),
        decorate: crate::source::decorator(&p.source),
    });

    let workers = plugin_stages
        .into_iter()
        .map(|(decoder, stages)| (buffer.reader(), decoder, stages))
        .collect();
    let cx = SourceContext {
        pipeline: name.clone(),
        writer: buffer.writer(),
        counters,
        keyed: p.buffer.partitions_by_key(),
    };
    let ends = p.source.ends();
    let source =
        crate::source::build(&p.source, cx)
            .await
            .map_err(|error| PipelineError::Source {
                pipeline: name.clone(),
                error,
            })?;
    tracing::info!(pipeline = %name, source = p.source.plugin_name(), buffer = p.buffer.plugin_name(), deserializer = %deserializer.name, workers = p.workers, dlq = %dlq_path.display(), "pipeline ready");
    options.registry.insert(crate::operate::Handle {
        sinks: crate::operate::ConfiguredSinks::new(&p),
        writer: buffer.writer(),
        dead_letters: delivery.dead_letters.clone(),
        tap: delivery.tap.clone(),
        dlq_path,
        config: p,
    });
    Ok(Built {
        name,
        buffer,
        source,
        ends,
        workers,
        flusher,
        delivery,
    })
}
