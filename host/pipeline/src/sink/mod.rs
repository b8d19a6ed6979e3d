//! Sinks: where events go. Each takes a whole batch and returns once it is written (and, for
//! files, flushed), so the worker can acknowledge the batch.

use std::path::{Path, PathBuf};

use tokio::io::AsyncWriteExt;
use tokio::sync::Mutex;

/// Why a sink could not take a batch. The worker retries with backoff.
#[derive(Debug, thiserror::Error)]
#[error("sink `{sink}`: {source}")]
pub struct SinkError {
    pub sink: String,
    pub source: std::io::Error,
}

/// A destination for JSON lines: standard output or an appended file. The tokio Mutex keeps
/// one batch's lines together when several workers write at once (it is held across the write).
pub struct LineSink {
    name: String,
    target: Mutex<Target>,
}

enum Target {
    Stdout(tokio::io::Stdout),
    File(tokio::fs::File),
}

impl LineSink {
    pub fn stdout() -> Self {
        Self {
            name: "stdout".to_owned(),
            target: Mutex::new(Target::Stdout(tokio::io::stdout())),
        }
    }

    /// Opens `path` for appending, creating it and its folder.
    pub async fn file(path: &Path) -> Result<Self, SinkError> {
        let name = format!("file {}", path.display());
        let open = async {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                tokio::fs::create_dir_all(dir).await?;
            }
            tokio::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .await
        };
        match open.await {
            Ok(file) => Ok(Self {
                name,
                target: Mutex::new(Target::File(file)),
            }),
            Err(source) => Err(SinkError { sink: name, source }),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Writes `lines` (each already ending in `\n`) and flushes.
    pub async fn write(&self, lines: &[u8]) -> Result<(), SinkError> {
        if lines.is_empty() {
            return Ok(());
        }
        let mut target = self.target.lock().await;
        let result = match &mut *target {
            Target::Stdout(out) => {
                async {
                    out.write_all(lines).await?;
                    out.flush().await
                }
                .await
            }
            Target::File(file) => {
                async {
                    file.write_all(lines).await?;
                    file.flush().await
                }
                .await
            }
        };
        result.map_err(|source| SinkError {
            sink: self.name.clone(),
            source,
        })
    }
}

/// The default dead-letter path of a pipeline.
pub fn default_dlq_path(data_dir: &Path, pipeline: &str) -> PathBuf {
    data_dir.join("dlq").join(format!("{pipeline}.jsonl"))
}
