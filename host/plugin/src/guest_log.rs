//! Where a plugin's stdout and stderr go: into tracing at debug level, tagged with the plugin
//! name, never back to the host's own stdout. Writes always succeed (a full buffer must not
//! make a chatty plugin trap, as wasmtime-wasi's `MemoryOutputPipe` would) and each is cut to
//! [`MAX_LINE`] bytes; with debug logging off they cost a level check.

use std::sync::Arc;

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// The most bytes of one write that reach the log.
const MAX_LINE: usize = 1024;

/// One of a plugin's output streams.
#[derive(Clone)]
pub(crate) struct GuestLog {
    plugin: Arc<str>,
    stream: &'static str,
}

impl GuestLog {
    pub(crate) fn new(plugin: &str, stream: &'static str) -> Self {
        Self {
            plugin: plugin.into(),
            stream,
        }
    }
}

impl IsTerminal for GuestLog {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestLog {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    /// The WASI p3 path, which no supported plugin uses yet: discarded.
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(tokio::io::sink())
    }
}

#[async_trait::async_trait]
impl OutputStream for GuestLog {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        if tracing::enabled!(tracing::Level::DEBUG) {
            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_LINE)]);
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                tracing::debug!(plugin = %self.plugin, stream = self.stream, "{line}");
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        Ok(64 * 1024)
    }
}

#[async_trait::async_trait]
impl Pollable for GuestLog {
    async fn ready(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_never_fail_however_much_is_written() {
        let mut log = GuestLog::new("p", "stdout");
        for _ in 0..64 {
            log.write(Bytes::from(vec![b'x'; 64 * 1024])).unwrap();
        }
        assert_eq!(log.check_write().unwrap(), 64 * 1024);
    }
}
