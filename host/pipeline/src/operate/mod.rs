//! The operator's loop: what the `sluice` commands an on-call engineer runs need from the
//! pipelines, running or stopped.
//!
//! - [`dead_letters`]: reading a dead-letter file back, choosing entries, marks of replays.
//! - [`replay`]: dead letters back into the buffer (records, events) or their sink.
//! - [`rewind`]: a window of a Kafka buffer's history through the pipeline again.
//! - [`tap`]: a live sample of a pipeline's events at one point.
//! - [`Registry`]: the running pipelines, as the admin endpoint (on the metrics listener)
//!   reaches them; filled by [`crate::run()`].
//! - [`offline`]: the same reach into a pipeline whose process is stopped: its Kafka topic
//!   (written, never consumed), its dead-letter file, its sinks.

pub mod dead_letters;
pub mod replay;
pub mod rewind;
pub mod tap;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use sluice_buffer::BufferWriter;

use crate::sink::Output;
use crate::sink::dlq::DeadLetters;

/// One running pipeline, as the operator's commands reach it.
pub struct Handle {
    pub config: sluice_config::Pipeline,
    /// Its buffer's write half (what its source writes to).
    pub writer: Arc<dyn BufferWriter>,
    pub dead_letters: Arc<DeadLetters>,
    /// Where its dead-letter file is.
    pub dlq_path: PathBuf,
    /// Its sinks' outputs for replays, built on first use.
    pub sinks: ConfiguredSinks,
    /// Where `sluice tap` listens to its events.
    pub tap: Arc<tap::Tap>,
}

impl Handle {
    /// Replays what `select` picks of its dead-letter file.
    pub async fn replay(
        &self,
        select: &dead_letters::Select,
        dry_run: bool,
    ) -> Result<replay::Report, replay::ReplayError> {
        let target = replay::Target {
            pipeline: &self.config.name,
            writer: self.writer.clone(),
            dead_letters: self.dead_letters.clone(),
            sinks: &self.sinks,
        };
        replay::replay(&self.dlq_path, select, dry_run, &target).await
    }
}

/// The pipelines of this process, by name. Cheap to clone; empty until they are built.
#[derive(Clone, Default)]
pub struct Registry {
    pipelines: Arc<RwLock<HashMap<String, Arc<Handle>>>>,
}

impl Registry {
    pub(crate) fn insert(&self, handle: Handle) {
        self.pipelines
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(handle.config.name.clone(), Arc::new(handle));
    }

    /// The pipeline `name`, if this process runs it.
    pub fn get(&self, name: &str) -> Option<Arc<Handle>> {
        self.pipelines
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    /// The names of the running pipelines, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .pipelines
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("pipelines", &self.names())
            .finish()
    }
}

/// A pipeline's sinks as their config says, each output built the first time a replay needs
/// it (a second client beside the running sink's: replays are rare), the others never.
pub struct ConfiguredSinks {
    pipeline: String,
    sinks: Vec<sluice_config::Sink>,
    read_delay: std::time::Duration,
    built: tokio::sync::Mutex<HashMap<String, Arc<dyn Output>>>,
}

impl ConfiguredSinks {
    pub fn new(p: &sluice_config::Pipeline) -> Self {
        Self {
            pipeline: p.name.clone(),
            sinks: p.sink.iter().map(|s| s.sink.clone()).collect(),
            read_delay: p.delay,
            built: tokio::sync::Mutex::default(),
        }
    }
}

#[async_trait::async_trait]
impl replay::Sinks for ConfiguredSinks {
    async fn output(&self, name: &str) -> Result<Arc<dyn Output>, String> {
        let mut built = self.built.lock().await;
        if let Some(output) = built.get(name) {
            return Ok(output.clone());
        }
        let Some(config) = self.sinks.iter().find(|s| s.name() == name) else {
            return Err(format!(
                "the pipeline has no sink `{name}` now (its sinks: {})",
                self.sinks
                    .iter()
                    .map(sluice_config::Sink::name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        let connections = crate::sink::pipeline::Connections::default();
        let cx = crate::sink::SinkBuild {
            pipeline: &self.pipeline,
            connections: &connections,
            read_delay: self.read_delay,
        };
        let output = crate::sink::build(&cx, config).await.map_err(|e| {
            tracing::warn!(pipeline = %self.pipeline, error = %e, "a sink cannot be opened for a replay");
            e.to_string()
        })?;
        built.insert(name.to_owned(), output.clone());
        Ok(output)
    }
}

/// Why a stopped pipeline cannot be reached.
#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    #[error(
        "pipeline `{0}`: its buffer is not kafka, so nothing outlives the process; start sluice and replay through it"
    )]
    NotKafka(String),
    #[error("pipeline `{pipeline}`: {error}")]
    Buffer {
        pipeline: String,
        error: crate::buffer::BufferError,
    },
    #[error("pipeline `{pipeline}`: {error}")]
    DeadLetters {
        pipeline: String,
        error: crate::sink::SinkError,
    },
}

/// Pipeline `p` of a stopped process whose data dir is `data_dir` (which the caller holds
/// locked): its Kafka topic written to straight (with the pipeline's envelope and encryption;
/// no consumer joins its group), its dead-letter file, its sinks.
pub async fn offline(
    p: &sluice_config::Pipeline,
    data_dir: &std::path::Path,
) -> Result<Handle, OfflineError> {
    let sluice_config::Buffer::Builtin(sluice_config::Tier::Kafka(kafka)) = &p.buffer else {
        return Err(OfflineError::NotKafka(p.name.clone()));
    };
    let buffer = crate::buffer::kafka::connect_writer(p, kafka, data_dir)
        .await
        .map_err(|error| OfflineError::Buffer {
            pipeline: p.name.clone(),
            error,
        })?;
    let dlq_path = dlq_path(p, data_dir);
    let dead_letters = DeadLetters::open(&dlq_path, &p.name)
        .await
        .map_err(|error| OfflineError::DeadLetters {
            pipeline: p.name.clone(),
            error,
        })?;
    Ok(Handle {
        config: p.clone(),
        writer: Arc::new(buffer),
        dead_letters: Arc::new(dead_letters),
        dlq_path,
        sinks: ConfiguredSinks::new(p),
        tap: Arc::default(),
    })
}

/// Where pipeline `p`'s dead-letter file is: its `dlq_path`, or `<data-dir>/dlq/<name>.jsonl`.
pub fn dlq_path(p: &sluice_config::Pipeline, data_dir: &std::path::Path) -> PathBuf {
    p.dlq_path
        .clone()
        .unwrap_or_else(|| crate::sink::dlq::default_path(data_dir, &p.name))
}
