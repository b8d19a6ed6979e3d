//! The `stdout` sink: event lines on standard output, flushed per batch.

use tokio::io::AsyncWriteExt;
use tokio::sync::Mutex;

use bytes::Bytes;

use std::sync::Arc;

use super::{Output, Provenance, SendError};

/// Standard output. The tokio Mutex keeps one batch's lines together when several workers
/// write at once (it is held across the write).
pub struct StdoutSink {
    out: Mutex<tokio::io::Stdout>,
}

impl Default for StdoutSink {
    fn default() -> Self {
        Self {
            out: Mutex::new(tokio::io::stdout()),
        }
    }
}

impl super::BuildOutput for sluice_config::sink::stdout::StdoutSink {
    type Error = std::convert::Infallible;
    async fn build(
        self,
        _: &str,
        _: &super::SinkBuild<'_>,
    ) -> Result<Arc<dyn Output>, Self::Error> {
        Ok(Arc::new(StdoutSink::default()))
    }
}

#[async_trait::async_trait]
impl Output for StdoutSink {
    async fn send(&self, events: &[Bytes], _: &Provenance) -> Result<(), SendError> {
        let lines = super::codec::lines(events);
        let mut out = self.out.lock().await;
        let result = async {
            out.write_all(&lines).await?;
            out.flush().await
        }
        .await;
        result.map_err(|e| SendError::Retry(e.to_string()))
    }
}
