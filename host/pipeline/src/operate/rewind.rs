//! `sluice buffer replay`: a window of a Kafka buffer's history through the pipeline's
//! deserializer and processors again, into its sinks (or the named ones), read by a consumer of
//! its own (`sluice_kafka::rewind`): the live group's committed offsets do not move.
//!
//! The records carry no buffer position, so the sinks take them as new events (a file sink's
//! record of offsets would skip what it already holds). What cannot be parsed or processed goes
//! to a dead-letter file of the rewind's own, `<dlq>.rewind.jsonl` beside the pipeline's (which
//! the running process may be writing).

use std::sync::Arc;

use sluice_kafka::rewind::{Progress, Rewind, Window};
use sluice_plugin::Catalog;

use crate::counters::Counters;
use crate::sink::dlq::DeadLetters;
use crate::worker::{self, Delivery};
use crate::{PipelineError, buffer::BufferError};

/// Why a rewind could not run.
#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    #[error("pipeline `{0}`: its buffer is not kafka: there is no history to read again")]
    NotKafka(String),
    #[error("pipeline `{pipeline}`: {error}")]
    Buffer {
        pipeline: String,
        error: BufferError,
    },
    #[error("pipeline `{pipeline}`: {error}")]
    Kafka {
        pipeline: String,
        error: sluice_kafka::KafkaBufferError,
    },
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    #[error("pipeline `{pipeline}` has no sink `{sink}` (its sinks: {sinks})")]
    NoSink {
        pipeline: String,
        sink: String,
        sinks: String,
    },
}

/// What a rewind did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Rewound {
    /// Records read from the buffer.
    pub records: u64,
    /// Events the sinks took.
    pub events: u64,
    /// Records and events dead-lettered (into `dead_letters`).
    pub dead_lettered: u64,
    pub dead_letters: std::path::PathBuf,
    /// The sinks written to.
    pub sinks: Vec<String>,
}

/// Reads `window` of `p`'s Kafka buffer again through its deserializer (from `plugins`) and
/// processors into its sinks, or those of `sinks` (a sink's type, `file`, or its name,
/// `file:/var/out.jsonl`); `progress` is called with what was read so far, about 5 times a
/// second.
pub async fn rewind(
    mut p: sluice_config::Pipeline,
    plugins: &Catalog,
    window: Window,
    sinks: &[String],
    data_dir: &std::path::Path,
    progress: impl Fn(&Progress),
) -> Result<Rewound, RewindError> {
    let name = p.name.clone();
    let sluice_config::Buffer::Builtin(sluice_config::Tier::Kafka(kafka)) = &p.buffer else {
        return Err(RewindError::NotKafka(name));
    };
    let config = crate::buffer::kafka::settings(&p, kafka, data_dir)
        .await
        .map_err(|error| RewindError::Buffer {
            pipeline: name.clone(),
            error,
        })?;
    let dlq_path = super::dlq_path(&p, data_dir).with_extension("rewind.jsonl");
    let dead_letters = Arc::new(DeadLetters::open(&dlq_path, &name).await.map_err(|error| {
        PipelineError::Sink {
            pipeline: name.clone(),
            error,
        }
    })?);
    let connections = crate::sink::pipeline::Connections::default();
    let cx = crate::sink::SinkBuild {
        pipeline: &name,
        connections: &connections,
        read_delay: p.delay,
    };
    // Only the sinks written to are opened: another sink's file is not touched, its client
    // not connected. A sink is chosen by its type (`file`) or its name (`file:/var/out.jsonl`).
    let chosen = |routed: &sluice_config::RoutedSink, wanted: &str| {
        wanted == routed.sink.plugin_name() || wanted == routed.sink.name()
    };
    if let Some(missing) = sinks
        .iter()
        .find(|wanted| !p.sink.iter().any(|routed| chosen(routed, wanted)))
    {
        return Err(RewindError::NoSink {
            pipeline: name,
            sink: missing.clone(),
            sinks: p
                .sink
                .iter()
                .map(|routed| routed.sink.name())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    p.sink
        .retain(|routed| sinks.is_empty() || sinks.iter().any(|wanted| chosen(routed, wanted)));
    let mut opened = Vec::new();
    for routed in &p.sink {
        let sink = crate::sink::Sink::open(&cx, &routed.sink, dead_letters.clone())
            .await
            .map_err(|error| PipelineError::Sink {
                pipeline: name.clone(),
                error,
            })?;
        opened.push(Arc::new(sink));
    }

    let deserializer = p.source.deserializer().settings();
    let decoder = crate::run::start_decoder(&name, &deserializer, plugins).await?;
    let prepared = crate::processor::prepare(&name, &p.processor)?;
    let stages = crate::processor::stages(&name, &prepared, plugins).await?;
    let flusher = if crate::processor::keeps_events(&prepared) {
        Some(crate::processor::stages(&name, &prepared, plugins).await?)
    } else {
        None
    };
    let hands: Vec<bool> = opened.iter().map(|s| s.hands_events()).collect();
    let counters = Arc::new(Counters::new(
        &format!("{name}-rewind"),
        &p.buffer.metric_prefix(),
    ));
    let delivery = Arc::new(Delivery {
        pipeline: name.clone(),
        event_type: p.source.event_type(),
        connected: false,
        router: crate::worker::Router::new(&p.route, &p.sink)
            .handing(&hands)
            .encoding(opened.iter().map(|s| s.encoder()).collect()),
        sinks: opened,
        dead_letters,
        counters: counters.clone(),
        per_record: false,
        tap: Arc::default(),
        decorate: None,
    });

    let rewind = Rewind::start(config, window)
        .await
        .map_err(|error| RewindError::Kafka {
            pipeline: name.clone(),
            error,
        })?;
    let watchdog = crate::watchdog::Watchdog::default();
    let (phase, phases) = tokio::sync::watch::channel(worker::Phase::Running);
    let flush = flusher.map(|stages| {
        tokio::spawn(worker::flush(
            stages,
            delivery.clone(),
            watchdog.slot(&name, 1),
            phases,
        ))
    });
    let mut work = tokio::spawn(worker::run(
        rewind.reader(),
        decoder,
        stages,
        delivery.clone(),
        watchdog.slot(&name, 0),
    ));
    let shown = rewind.progress();
    loop {
        tokio::select! {
            _ = &mut work => break,
            () = tokio::time::sleep(std::time::Duration::from_millis(200)) => progress(&shown),
        }
    }
    progress(&shown);
    let _ = phase.send(worker::Phase::Last);
    if let Some(flush) = flush {
        let _ = flush.await;
    }
    for sink in &delivery.sinks {
        sink.drain();
    }
    for sink in &delivery.sinks {
        sink.close().await;
    }
    Ok(Rewound {
        records: shown.read.load(std::sync::atomic::Ordering::Relaxed),
        events: counters.events.get(),
        dead_lettered: counters.dead_lettered.get(),
        dead_letters: dlq_path,
        sinks: delivery.sinks.iter().map(|s| s.name().to_owned()).collect(),
    })
}
