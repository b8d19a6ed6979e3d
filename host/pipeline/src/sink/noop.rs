//! The `noop` sink: every event taken at once, kept nowhere.

use std::sync::Arc;

use bytes::Bytes;

use super::{Output, Provenance, SendError};

/// Takes everything.
pub struct NoopSink;

impl super::BuildOutput for sluice_config::sink::noop::NoopSink {
    type Error = std::convert::Infallible;
    async fn build(self, _: &str, _: &super::SinkBuild<'_>) -> Result<Arc<dyn Output>, Self::Error> {
        Ok(Arc::new(NoopSink))
    }
}

#[async_trait::async_trait]
impl Output for NoopSink {
    async fn send(&self, _: &[Bytes], _: &Provenance) -> Result<(), SendError> {
        Ok(())
    }
}
