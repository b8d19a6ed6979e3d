//! Processor stages: a [`Stage`] is a built-in processor (`sluice-processors`: Data Prepper's,
//! run on parsed events) or a plugin's ([`Process`], on event text), made by `build` from
//! `sluice_config`'s processor list. The worker runs the stages in order (`worker::process`),
//! a run of consecutive built-ins on events parsed once, and never names a concrete processor.

pub mod plugin;

use std::sync::Arc;

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
    /// A plugin's, one instance per worker.
    Plugin(Box<dyn Process>),
}

/// One worker's stage for the processor `processor` of pipeline `pipeline`: a built-in, or a
/// plugin's instance (a plugin with a built-in's name replaces it: the config says which).
pub(crate) async fn build(
    pipeline: &str,
    processor: &sluice_config::Processor,
    plugins: &Catalog,
) -> Result<Stage, PipelineError> {
    match processor {
        sluice_config::Processor::Builtin(builtin) => sluice_processors::build(builtin)
            .map(|p| Stage::Builtin(Arc::from(p)))
            .map_err(|error| PipelineError::Builtin {
                pipeline: pipeline.to_owned(),
                processor: builtin.plugin_name(),
                error,
            }),
        sluice_config::Processor::Plugin(p) => {
            if sluice_config::BuiltinProcessor::NAMES.contains(&p.name.as_str()) {
                tracing::info!(pipeline, processor = %p.name, "the plugin in the plugin folder replaces the built-in processor of that name");
            }
            plugin::build(pipeline, &p.settings(), plugins)
                .await
                .map(Stage::Plugin)
        }
    }
}
