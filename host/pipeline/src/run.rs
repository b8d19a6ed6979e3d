//! Building and running every pipeline of a config, and the shutdown protocol: stop the
//! sources (in-flight requests finish), close the buffers, let the workers drain them through
//! the sinks within `drain_timeout`, then return.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sluice_buffer::memory::MemoryBuffer;
use sluice_config::{Buffer, Config, Sink, Source};
use sluice_kafka::{Encryption, KafkaBuffer, KafkaBufferConfig, KafkaBufferError};
use sluice_plugin::{Catalog, Decoder, Limits, PluginError};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::sink::{LineSink, SinkError, default_dlq_path};
use crate::watchdog::Watchdog;
use crate::worker::{self, Counters, Outputs};

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
}

/// Why pipelines could not start.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("pipeline `{pipeline}`: deserializer `{plugin}` is not loaded")]
    MissingPlugin { pipeline: String, plugin: String },
    #[error("pipeline `{pipeline}`: {error}")]
    Plugin {
        pipeline: String,
        error: PluginError,
    },
    #[error("pipeline `{pipeline}`: {error}")]
    Sink { pipeline: String, error: SinkError },
    #[error("pipeline `{pipeline}`: kafka buffer: {error}")]
    Kafka {
        pipeline: String,
        error: KafkaBufferError,
    },
    #[error("pipeline `{pipeline}`: kafka buffer: {reason}")]
    Security { pipeline: String, reason: String },
    #[error("pipeline `{pipeline}`: cannot listen on port {port}: {error}")]
    Listen {
        pipeline: String,
        port: u16,
        error: std::io::Error,
    },
}

struct Built {
    name: String,
    buffer: PipelineBuffer,
    source: SourceRunner,
    workers: Vec<(Box<dyn sluice_buffer::BufferReader>, Decoder)>,
    swap: worker::Swap,
    outputs: Arc<Outputs>,
}

/// A pipeline's buffer, whichever it is.
enum PipelineBuffer {
    Memory(MemoryBuffer),
    Kafka(KafkaBuffer),
}

impl PipelineBuffer {
    fn get(&self) -> &dyn sluice_buffer::Buffer {
        match self {
            PipelineBuffer::Memory(b) => b,
            PipelineBuffer::Kafka(b) => b,
        }
    }

    /// Logs what the buffer saw, at shutdown.
    fn log_summary(&self, pipeline: &str) {
        match self {
            PipelineBuffer::Memory(b) => {
                tracing::info!(pipeline, left_in_buffer = b.used(), "memory buffer stopped")
            }
            PipelineBuffer::Kafka(b) => {
                let s = b.stats();
                tracing::info!(
                    pipeline,
                    records_written = s.records_written.get(),
                    write_failures = s.write_failures.get(),
                    records_consumed = s.records_consumed.get(),
                    records_committed = s.records_committed.get(),
                    positive_acknowledgements = s.positive_acknowledgements.get(),
                    negative_acknowledgements = s.negative_acknowledgements.get(),
                    "kafka buffer stopped"
                );
            }
        }
    }
}

/// A pipeline's source, ready to run.
enum SourceRunner {
    Http {
        listener: tokio::net::TcpListener,
        router: axum::Router,
        limits: crate::source::http::server::Limits,
    },
    File {
        config: sluice_config::FileSource,
        writer: Arc<dyn sluice_buffer::BufferWriter>,
    },
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
    let mut built = Vec::new();
    for p in config.pipelines {
        built.push(build(p, plugins, &options).await?);
    }
    ready();

    let (stop_tx, stop_rx) = watch::channel(false);
    let mut sources = JoinSet::new();
    let mut workers = JoinSet::new();
    let mut pipelines = Vec::new();
    // Kafka buffers may wait longer than the default for their batches.
    let mut drain_timeout = options.drain_timeout;
    for b in built {
        let name = b.name.clone();
        let stop = stop_rx.clone();
        match b.source {
            SourceRunner::Http {
                listener,
                router,
                limits,
            } => {
                sources.spawn(crate::source::http::server::serve(
                    listener, router, limits, name, stop,
                ));
            }
            SourceRunner::File { config, writer } => {
                let counters = b.outputs.counters.clone();
                sources.spawn(async move {
                    if let Err(e) = crate::source::file::run(config, writer, counters, stop).await {
                        tracing::error!(pipeline = %name, error = %e, "file source stopped");
                    }
                });
            }
        }
        for (i, (reader, decoder)) in b.workers.into_iter().enumerate() {
            let slot =
                options
                    .watchdog
                    .slot(&b.name, i, decoder.plugin().name(), b.swap.limits.timeout);
            workers.spawn(worker::run(
                reader,
                decoder,
                b.swap.clone(),
                b.outputs.clone(),
                slot,
            ));
        }
        if let PipelineBuffer::Kafka(_) = &b.buffer {
            drain_timeout = drain_timeout.max(b.outputs.drain_timeout);
        }
        pipelines.push((b.name, b.buffer, b.outputs));
    }

    // The memory buffers' gauges (the kafka buffer keeps its own).
    let gauges: Vec<(MemoryBuffer, metrics::Gauge, metrics::Gauge)> = pipelines
        .iter()
        .filter_map(|(name, buffer, _)| match buffer {
            PipelineBuffer::Memory(b) => Some((
                b.clone(),
                metrics::gauge!("bounded_blocking_recordsInFlight", "pipeline" => name.clone()),
                metrics::gauge!("bounded_blocking_bufferUsage", "pipeline" => name.clone()),
            )),
            PipelineBuffer::Kafka(_) => None,
        })
        .collect();
    let watchdog = options.watchdog.clone();
    let gauge_task = tokio::spawn(async move {
        loop {
            for (buffer, in_flight, usage) in &gauges {
                in_flight.set(buffer.used() as f64);
                usage.set(buffer.used() as f64 / buffer.capacity().max(1) as f64);
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

    shutdown.await;
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
    for (_, buffer, _) in &pipelines {
        buffer.get().close();
    }
    let drained = tokio::time::timeout_at(deadline, async {
        while workers.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        // Batches still held by workers are dropped: the memory buffer loses them; the kafka
        // buffer does not commit them, so they are read again after a restart.
        workers.abort_all();
        while workers.join_next().await.is_some() {}
    }
    for (_, buffer, _) in &pipelines {
        if let PipelineBuffer::Kafka(kafka) = buffer {
            kafka.join().await;
        }
    }
    for (name, buffer, outputs) in &pipelines {
        let c = &outputs.counters;
        tracing::info!(
            pipeline = %name,
            accepted = c.accepted.get(),
            refused = c.refused.get(),
            consumed = c.consumed.get(),
            events = c.events.get(),
            dead_lettered = c.dead_lettered.get(),
            "pipeline stopped"
        );
        buffer.log_summary(name);
    }
    if drained.is_err() {
        tracing::error!(drain_timeout = ?drain_timeout, "drain timed out; records not yet in the sinks are lost from memory buffers, and read again from kafka buffers after a restart");
    }
    Ok(())
}

/// The start of a buffer's metric names: `custom_metric_prefix`, else the buffer's name
/// (`kafka_buffer`, `bounded_blocking`).
pub(crate) fn buffer_metric_prefix(buffer: &Buffer) -> String {
    match buffer {
        Buffer::Kafka(k) => k
            .custom_metric_prefix
            .clone()
            .unwrap_or_else(|| "kafka_buffer".to_owned()),
        Buffer::BoundedBlocking(_) => "bounded_blocking".to_owned(),
    }
}

/// The key source of the kafka buffer's `encryption`, if any.
async fn encryption(k: &sluice_config::KafkaBuffer) -> Result<Option<Encryption>, String> {
    use base64::Engine as _;
    let Some(e) = &k.encryption else {
        return Ok(None);
    };
    let decode = |text: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|_| "the key is not base64".to_owned())
    };
    let (keys, lifetime): (Arc<dyn sluice_crypt::KeySource>, Duration) = if let Some(kms) = &e.kms {
        let keys = sluice_crypt::KmsKeys::new(
            kms.key_id.clone(),
            kms.region.clone(),
            kms.endpoint.clone(),
            kms.encryption_context.clone().into_iter().collect(),
        )
        .await;
        (Arc::new(keys), kms.data_key_lifetime)
    } else {
        let bytes = match (&e.key, &e.key_file) {
            (Some(key), _) => decode(&key.0)?,
            (None, Some(path)) => {
                let raw = std::fs::read(path)
                    .map_err(|err| format!("cannot read `key_file` {}: {err}", path.display()))?;
                if raw.len() == 32 {
                    raw
                } else {
                    decode(&String::from_utf8_lossy(&raw))
                        .map_err(|err| format!("`key_file` {}: {err}", path.display()))?
                }
            }
            (None, None) => return Err("no key given".to_owned()),
        };
        let key = sluice_crypt::StaticKey::new(&bytes).map_err(|err| err.to_string())?;
        (Arc::new(key), Duration::from_secs(3600))
    };
    Ok(Some(Encryption {
        keys,
        data_key_lifetime: lifetime,
    }))
}

/// The kafka buffer's settings from the pipeline file. `data_dir` makes the default static
/// group instance id.
fn kafka_config(
    p: &sluice_config::Pipeline,
    k: &sluice_config::KafkaBuffer,
    data_dir: &std::path::Path,
) -> KafkaBufferConfig {
    let topic = &k.topics[0];
    KafkaBufferConfig {
        bootstrap_servers: k.bootstrap_servers.clone(),
        topic: topic.name.clone(),
        group_id: topic.group_id.clone(),
        consumers: topic.workers,
        batch_size: topic.max_poll_records,
        delay: p.delay,
        commit_interval: topic.commit_interval,
        auto_offset_reset: topic.auto_offset_reset.as_str().to_owned(),
        session_timeout: topic.session_timeout,
        max_poll_interval: topic.max_poll_interval,
        group_instance_id: topic.static_membership.then(|| {
            topic
                .group_instance_id
                .clone()
                .unwrap_or_else(|| default_instance_id(&p.name, data_dir))
        }),
        produce_timeout: k.produce_timeout,
        drain_timeout: k.drain_timeout,
        max_request_size: usize::try_from(k.max_request_size.bytes()).unwrap_or(usize::MAX),
        create_topic: topic
            .create_topic
            .then_some((topic.number_of_partitions, topic.replication_factor)),
        sasl: None,
        tls: k
            .encryption_in_transit
            .as_ref()
            .filter(|t| t.kind == sluice_config::TransitType::Ssl)
            .map(|t| (t.certificate.clone(), t.insecure)),
        producer_properties: k.producer_properties.clone(),
        consumer_properties: k.consumer_properties.clone(),
        encryption: None,
        pipeline: p.name.clone(),
        metric_prefix: buffer_metric_prefix(&p.buffer),
    }
}

/// The default static group instance id: `sluice-<hostname>-<pipeline>-<hash of the data
/// dir>`. Stable across restarts of one process (same host, same data dir); distinct for any
/// other live process, since two processes on one host cannot hold the same data dir (the
/// binary locks it) and other hosts have other names. Only letters, digits, `.`, `_`, `-`.
pub fn default_instance_id(pipeline: &str, data_dir: &std::path::Path) -> String {
    use sha2::Digest as _;
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_owned());
    let dir = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_owned());
    let digest = sha2::Sha256::digest(dir.as_os_str().as_encoded_bytes());
    let clean = |text: &str| -> String {
        text.trim()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .take(60)
            .collect()
    };
    format!(
        "sluice-{}-{}-{}",
        clean(&hostname),
        clean(pipeline),
        hex::encode(&digest[..4])
    )
}

async fn build(
    p: sluice_config::Pipeline,
    plugins: &Catalog,
    options: &RunOptions,
) -> Result<Built, PipelineError> {
    let name = p.name.clone();
    let deserializer = p.source.deserializer();
    let missing = || PipelineError::MissingPlugin {
        pipeline: name.clone(),
        plugin: deserializer.name.clone(),
    };
    let updates = plugins.subscribe(&deserializer.name).ok_or_else(missing)?;
    let plugin = updates.borrow().clone();
    let limits = Limits {
        max_memory: usize::try_from(deserializer.max_memory.bytes()).unwrap_or(usize::MAX),
        timeout: deserializer.timeout,
        recycle_after: deserializer.recycle_after,
    };
    let mut drain_timeout = options.drain_timeout;
    let buffer = match &p.buffer {
        Buffer::BoundedBlocking(bb) => {
            PipelineBuffer::Memory(MemoryBuffer::new(bb.buffer_size, bb.batch_size, p.delay))
        }
        Buffer::Kafka(k) => {
            drain_timeout = k.drain_timeout;
            let mut config = kafka_config(&p, k, &options.data_dir);
            if let Some((mechanism, c)) = k
                .authentication
                .as_ref()
                .and_then(|a| a.sasl.as_ref())
                .and_then(|sasl| sasl.mechanism())
            {
                let password = c
                    .resolved_password()
                    .map_err(|reason| PipelineError::Security {
                        pipeline: name.clone(),
                        reason: format!("authentication: {reason}"),
                    })?;
                config.sasl = Some((mechanism.to_owned(), c.username.clone(), password));
            }
            config.encryption = encryption(k)
                .await
                .map_err(|reason| PipelineError::Security {
                    pipeline: name.clone(),
                    reason,
                })?;
            let kafka =
                KafkaBuffer::connect(config)
                    .await
                    .map_err(|error| PipelineError::Kafka {
                        pipeline: name.clone(),
                        error,
                    })?;
            tracing::info!(pipeline = %name, topic = %k.topics[0].name, group_id = %k.topics[0].group_id, consumers = k.topics[0].workers, "kafka buffer connected");
            PipelineBuffer::Kafka(kafka)
        }
    };

    let mut sinks = Vec::new();
    for sink in &p.sink {
        let sink = match sink {
            Sink::Stdout(_) => LineSink::stdout(),
            Sink::File(f) => {
                LineSink::file(&f.path)
                    .await
                    .map_err(|error| PipelineError::Sink {
                        pipeline: name.clone(),
                        error,
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
            .map_err(|error| PipelineError::Sink {
                pipeline: name.clone(),
                error,
            })?,
    );
    let counters = Arc::new(Counters::new(&name, &buffer_metric_prefix(&p.buffer)));
    let outputs = Arc::new(Outputs {
        pipeline: name.clone(),
        sinks,
        dlq,
        counters: counters.clone(),
        drain_timeout,
    });

    let mut workers = Vec::new();
    for _ in 0..p.workers {
        // Instantiating runs guest code (start functions, `configure`): off the reactor.
        let (plugin, options) = (plugin.clone(), deserializer.option_pairs());
        let decoder = tokio::task::spawn_blocking(move || Decoder::new(plugin, options, limits))
            .await
            .expect("building a decoder does not panic")
            .map_err(|error| PipelineError::Plugin {
                pipeline: name.clone(),
                error,
            })?;
        workers.push((buffer.get().reader(), decoder));
    }
    let source = match &p.source {
        Source::Http(http) => {
            let listener = tokio::net::TcpListener::bind(("0.0.0.0", http.port))
                .await
                .map_err(|error| PipelineError::Listen {
                    pipeline: name.clone(),
                    port: http.port,
                    error,
                })?;
            let router = crate::source::http::router(&name, http, buffer.get().writer(), counters);
            tracing::info!(pipeline = %name, port = http.port, path = %http.path, "http source listening");
            SourceRunner::Http {
                listener,
                router,
                limits: crate::source::http::server::Limits::of(http),
            }
        }
        Source::File(file) => SourceRunner::File {
            config: file.clone(),
            writer: buffer.get().writer(),
        },
    };
    tracing::info!(pipeline = %name, source = p.source.plugin_name(), buffer = p.buffer.plugin_name(), deserializer = %plugin.name(), workers = p.workers, dlq = %dlq_path.display(), "pipeline ready");
    Ok(Built {
        name,
        buffer,
        source,
        workers,
        swap: worker::Swap {
            updates,
            options: deserializer.option_pairs(),
            limits,
        },
        outputs,
    })
}
