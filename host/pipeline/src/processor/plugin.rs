//! A processor plugin as a stage: its instance, configured with the block's options within its
//! limits, following new versions of its plugin between batches (hot reload).

use sluice_plugin::{Catalog, Event, Limits, Plugin, Processed, Processor};
use tokio::sync::watch;

use super::{Process, Stage};
use crate::run::PipelineError;

/// One processor plugin of one worker: its instance, and how it follows new versions of its
/// plugin.
pub struct PluginStage {
    processor: Processor,
    /// New versions of the plugin, published by the catalog.
    updates: watch::Receiver<Plugin>,
    /// The processor's options, for `configure` on a new instance.
    options: Vec<(String, String)>,
    limits: Limits,
}

/// The stage of the plugin `processor`: its current version, instantiated and configured (off
/// the reactor) within the limits its block sets, subscribed to new versions.
pub(crate) async fn build(
    pipeline: &str,
    processor: &sluice_config::PluginProcessor,
    plugins: &Catalog,
) -> Result<Stage, PipelineError> {
    let updates =
        plugins
            .subscribe(&processor.name)
            .ok_or_else(|| PipelineError::MissingProcessor {
                pipeline: pipeline.to_owned(),
                plugin: processor.name.clone(),
            })?;
    let plugin = updates.borrow().clone();
    let limits = crate::run::limits(&processor.limits);
    let options = processor.option_pairs();
    let built = {
        let options = options.clone();
        tokio::task::spawn_blocking(move || Processor::new(plugin, options, limits))
            .await
            .expect("building a processor does not panic")
    };
    let processor = built.map_err(|error| PipelineError::Plugin {
        pipeline: pipeline.to_owned(),
        error,
    })?;
    Ok(Box::new(PluginStage {
        processor,
        updates,
        options,
        limits,
    }))
}

#[async_trait::async_trait]
impl Process for PluginStage {
    fn name(&self) -> &str {
        self.processor.plugin().name()
    }

    fn process(&mut self, events: &[Event<'_>]) -> Vec<Processed> {
        self.processor.process(events)
    }

    /// Builds the processor from the newest version of its plugin (instantiate and
    /// `configure`, off the reactor), between batches. If that fails the running one is kept
    /// and the error logged, as for the deserializer.
    async fn follow(&mut self, pipeline: &str) {
        if !self.updates.has_changed().unwrap_or(false) {
            return;
        }
        let plugin = self.updates.borrow_and_update().clone();
        if plugin.sha256() == self.processor.plugin().sha256() {
            return;
        }
        let (options, limits) = (self.options.clone(), self.limits);
        let built = tokio::task::spawn_blocking(move || Processor::new(plugin, options, limits))
            .await
            .expect("building a processor does not panic");
        match built {
            Ok(next) => {
                tracing::info!(pipeline, processor = next.plugin().name(), from = %&self.processor.plugin().sha256()[..12], to = %&next.plugin().sha256()[..12], "switched to the new processor version");
                self.processor = next;
            }
            Err(error) => {
                tracing::error!(pipeline, %error, "the new processor version cannot start here; keeping the running one");
            }
        }
    }
}
