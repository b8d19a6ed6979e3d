//! The `stdout` sink: event lines on standard output, flushed per batch.

use tokio::io::AsyncWriteExt;
use tokio::sync::Mutex;

use bytes::Bytes;

use std::sync::Arc;

use super::{Output, SendError, SinkError};

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

impl super::BuildOutput for sluice_config::StdoutSink {
    async fn build(&self, _: &super::SinkBuild<'_>) -> Result<Arc<dyn Output>, SinkError> {
        Ok(Arc::new(StdoutSink::default()))
    }
}

#[async_trait::async_trait]
impl Output for StdoutSink {
    fn name(&self) -> &str {
        "stdout"
    }

    async fn send(&self, events: &[Bytes]) -> Result<(), SendError> {
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
