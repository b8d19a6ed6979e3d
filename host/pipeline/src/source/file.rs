//! The `file` source: each line of the file is one record. It waits for room in the buffer
//! (a pull source can always wait), and with `tail` keeps reading lines appended later.

use std::sync::Arc;
use std::time::Duration;

use sluice_buffer::{BufferWriter, Record};
use sluice_config::FileSettings;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;

use super::{Build, Source, SourceContext, SourceError, write_waiting};
use crate::counters::Counters;

/// Lines written to the buffer per write.
const LINES_PER_WRITE: usize = 100;

/// How long one write waits for room before it tries again.
const EACH_TRY: Duration = Duration::from_secs(1);

/// Why the file source stopped early.
#[derive(Debug, thiserror::Error)]
#[error("cannot read `{path}`: {source}")]
pub struct FileSourceError {
    path: String,
    source: std::io::Error,
}

/// The file source, ready to read.
pub struct FileLines {
    settings: FileSettings,
    cx: SourceContext,
}

impl FileLines {
    pub fn new(settings: FileSettings, cx: SourceContext) -> Self {
        Self { settings, cx }
    }
}

impl Build for FileSettings {
    async fn build(self, cx: SourceContext) -> Result<Box<dyn Source>, SourceError> {
        Ok(Box::new(FileLines::new(self, cx)))
    }
}

#[async_trait::async_trait]
impl Source for FileLines {
    async fn run(self: Box<Self>, stop: watch::Receiver<bool>) {
        let SourceContext {
            pipeline,
            writer,
            counters,
            ..
        } = self.cx;
        if let Err(e) = run(self.settings, writer, counters, stop).await {
            tracing::error!(pipeline = %pipeline, error = %e, "file source stopped");
        }
    }
}

/// Reads until the end (or, with `tail`, until `stop`), writing lines to `writer`.
async fn run(
    config: FileSettings,
    writer: Arc<dyn BufferWriter>,
    counters: Arc<Counters>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), FileSourceError> {
    let path = config.path.display().to_string();
    let error = |source| FileSourceError {
        path: path.clone(),
        source,
    };
    let file = tokio::fs::File::open(&config.path).await.map_err(error)?;
    let mut reader = BufReader::new(file);
    let origin = format!("file:{path}");
    let mut line_number = 0u64;
    let mut pending = Vec::new();
    // A line without its newline yet (tail: it is still being written) stays here.
    let mut line = Vec::new();
    loop {
        tokio::select! {
            n = reader.read_until(b'\n', &mut line) => n.map_err(error)?,
            _ = stop.wait_for(|s| *s) => break,
        };
        let complete = line.ends_with(b"\n");
        let at_end = !complete;
        if complete || (at_end && !config.tail && !line.is_empty()) {
            line_number += 1;
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if !text.is_empty() {
                pending.push(Record {
                    payload: text.to_vec(),
                    key: None,
                    received_at_ms: super::now_ms(),
                    origin: format!("{origin}:{line_number}"),
                    content_type: None,
                    headers: Vec::new(),
                    ..Default::default()
                });
            }
            line.clear();
        }
        if pending.len() >= LINES_PER_WRITE || (at_end && !pending.is_empty()) {
            let records = std::mem::take(&mut pending);
            if write_waiting(&*writer, records, &counters, EACH_TRY).await.is_err() {
                break;
            }
        }
        if at_end {
            if !config.tail {
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                _ = stop.wait_for(|s| *s) => break,
            }
        }
    }
    if !pending.is_empty() {
        let _ = write_waiting(&*writer, pending, &counters, EACH_TRY).await;
    }
    tracing::info!(path = %path, lines = line_number, "file source finished");
    Ok(())
}
