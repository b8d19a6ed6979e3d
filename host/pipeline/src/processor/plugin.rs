//! A processor plugin as a stage: its instance, configured with the block's options within its
//! limits, following new versions of its plugin between batches (hot reload, `Following`).

use sluice_config::PluginSettings;
use sluice_plugin::{Catalog, Event, Processed, Processor};

use super::Process;
use crate::follow::{Following, Unstarted};
use crate::run::PipelineError;

/// The stage of the plugin `settings` names: started (off the reactor) within its limits,
/// subscribed to new versions.
pub(crate) async fn build(
    pipeline: &str,
    settings: &PluginSettings,
    plugins: &Catalog,
) -> Result<Box<dyn Process>, PipelineError> {
    let stage = Following::<Processor>::start(pipeline, settings, plugins)
        .await
        .map_err(|e| match e {
            Unstarted::Missing => PipelineError::MissingProcessor {
                pipeline: pipeline.to_owned(),
                plugin: settings.name.clone(),
            },
            Unstarted::Failed(error) => PipelineError::Plugin {
                pipeline: pipeline.to_owned(),
                error,
            },
        })?;
    Ok(Box::new(stage))
}

#[async_trait::async_trait]
impl Process for Following<Processor> {
    fn name(&self) -> &str {
        self.current.plugin().name()
    }

    fn deadline(&self) -> Option<std::time::Duration> {
        Some(self.limits().timeout)
    }

    fn sees_metadata(&self) -> bool {
        self.current.sees_metadata()
    }

    fn process(&mut self, events: &[Event<'_>]) -> Vec<Processed> {
        self.measured(|p| p.process(events))
    }

    async fn follow(&mut self) {
        Following::follow(self).await;
    }
}
