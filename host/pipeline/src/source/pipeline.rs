//! The `pipeline` source: it receives nothing itself. The upstream pipelines' `pipeline` sinks
//! write into this pipeline's buffer (`crate::sink::pipeline`): NDJSON records of events with
//! their metadata, which its workers read natively (`worker::outcome::split_connected`).

use sluice_config::source::pipeline::PipelineSourceSettings;
use tokio::sync::watch;

use super::{Build, Source, SourceContext, SourceError};

/// The source of a pipeline fed by other pipelines.
pub struct FromPipelines {
    pipeline: String,
    upstream: Vec<String>,
}

impl Build for PipelineSourceSettings {
    async fn build(self, cx: SourceContext) -> Result<Box<dyn Source>, SourceError> {
        Ok(Box::new(FromPipelines {
            pipeline: cx.pipeline,
            upstream: self.upstream,
        }))
    }
}

#[async_trait::async_trait]
impl Source for FromPipelines {
    async fn run(self: Box<Self>, mut stop: watch::Receiver<bool>) {
        tracing::debug!(pipeline = %self.pipeline, upstream = ?self.upstream, "reading what upstream pipelines send");
        let _ = stop.wait_for(|stop| *stop).await;
    }
}
