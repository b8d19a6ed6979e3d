//! Processor stages: a [`Stage`] is a built-in processor (`sluice-processors`: Data Prepper's,
//! run on parsed events, built once per pipeline by `prepare` and shared by its workers) or a
//! plugin's ([`Process`], on event text, one instance per worker by `stages`), from
//! `sluice_config`'s processor list. The worker runs the stages in order (`worker::process`),
//! a run of consecutive built-ins on events parsed once, and never names a concrete processor.

pub mod plugin;

use std::sync::Arc;

use sluice_config::PluginSettings;
use sluice_plugin::{Catalog, Event, Processed};

use crate::run::PipelineError;

/// One processor of one worker, called on the worker's blocking thread.
#[async_trait::async_trait]
pub trait Process: Send {
    /// The processor's name, for dead-letter reasons and logs.
    fn name(&self) -> &str;

    /// Its per-call deadline, if it has one (a plugin's `timeout`): a batch in it for longer
    /// is a stall (`/health`).
    fn deadline(&self) -> Option<std::time::Duration> {
        None
    }

    /// Whether it reads and sets event metadata (a 0.3 plugin), so the worker passes each
    /// event's ([`Event::metadata`]) and applies what comes back.
    fn sees_metadata(&self) -> bool {
        false
    }

    /// What becomes of each of `events`: one result per event, in order.
    fn process(&mut self, events: &[Event<'_>]) -> Vec<Processed>;

    /// Between batches: switches to a new version of the processor if there is one (a
    /// plugin's hot reload). Nothing by default.
    async fn follow(&mut self) {}
}

/// A processor stage as the workers hold it.
pub enum Stage {
    /// Data Prepper's processor, built in; shared by the pipeline's workers.
    Builtin(Arc<dyn sluice_processors::Processor>),
    /// A built-in that keeps events past their batch (`otel_traces`, `service_map`,
    /// `aggregate`): one for the pipeline, its state shared by the workers and the pipeline's
    /// flusher (`worker::flush`), which lets go of what it held when its time comes.
    Stateful(Arc<dyn sluice_processors::Stateful>),
    /// A plugin's, one instance per worker.
    Plugin(Box<dyn Process>),
}

impl Stage {
    /// The processor's name, as the pipeline file gives it.
    pub fn name(&self) -> &str {
        match self {
            Stage::Builtin(p) => p.name(),
            Stage::Stateful(p) => p.name(),
            Stage::Plugin(p) => p.name(),
        }
    }
}

/// A processor of a pipeline's list, ready for its workers: a built-in, built once and shared
/// (grok compiles its patterns here), or a plugin's settings, started per worker.
pub(crate) enum Prepared {
    Builtin(Arc<dyn sluice_processors::Processor>),
    Stateful(Arc<dyn sluice_processors::Stateful>),
    Plugin(PluginSettings),
}

/// Whether any of `prepared` keeps events past their batch (the pipeline then has a flusher).
pub(crate) fn keeps_events(prepared: &[Prepared]) -> bool {
    prepared.iter().any(|p| matches!(p, Prepared::Stateful(_)))
}

/// Prepares a pipeline's processor list. A plugin with a built-in's name replaces it (the
/// config says which), and the start says so, once.
#[expect(
    clippy::result_large_err,
    reason = "once per pipeline at start, with the error the pipeline's async builders return"
)]
pub(crate) fn prepare(
    pipeline: &str,
    list: &[sluice_config::Processor],
) -> Result<Vec<Prepared>, PipelineError> {
    list.iter()
        .map(|processor| match processor {
            sluice_config::Processor::Builtin(builtin) => sluice_processors::build(builtin)
                .map(|built| match built {
                    sluice_processors::Built::Each(p) => Prepared::Builtin(Arc::from(p)),
                    sluice_processors::Built::Stateful(p) => Prepared::Stateful(Arc::from(p)),
                })
                .map_err(|error| PipelineError::Builtin {
                    pipeline: pipeline.to_owned(),
                    processor: builtin.plugin_name(),
                    error,
                }),
            sluice_config::Processor::Plugin(p) => {
                if sluice_config::BuiltinProcessor::NAMES.contains(&p.name.as_str()) {
                    tracing::info!(pipeline, processor = %p.name, "the plugin in the plugin folder replaces the built-in processor of that name");
                }
                Ok(Prepared::Plugin(p.settings()))
            }
        })
        .collect()
}

/// One worker's stages: the shared built-ins, and an instance of each plugin.
pub(crate) async fn stages(
    pipeline: &str,
    prepared: &[Prepared],
    plugins: &Catalog,
) -> Result<Vec<Stage>, PipelineError> {
    let mut stages = Vec::with_capacity(prepared.len());
    for p in prepared {
        stages.push(match p {
            Prepared::Builtin(shared) => Stage::Builtin(shared.clone()),
            Prepared::Stateful(shared) => Stage::Stateful(shared.clone()),
            Prepared::Plugin(settings) => {
                Stage::Plugin(plugin::build(pipeline, settings, plugins).await?)
            }
        });
    }
    Ok(stages)
}
