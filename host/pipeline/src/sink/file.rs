//! The `file` sink: appends event lines to a file, flushing each batch, and reopens the file
//! after a failed write (it may have been rotated, or its disk freed). Also the dead-letter
//! file's storage (see [`super::dlq`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::sync::Mutex;

use bytes::Bytes;

use super::{Output, SendError, SinkError};

/// An appended file. The tokio Mutex keeps one batch's lines together when several workers
/// write at once (it is held across the write).
pub struct FileSink {
    name: String,
    path: PathBuf,
    /// `None` after a failed write: the next write reopens the path.
    file: Mutex<Option<tokio::fs::File>>,
}

impl FileSink {
    /// Opens `path` for appending, creating it and its folder.
    pub async fn open(path: &Path) -> Result<Self, SinkError> {
        let name = format!("file:{}", path.display());
        match open_append(path).await {
            Ok(file) => Ok(Self {
                name,
                path: path.to_owned(),
                file: Mutex::new(Some(file)),
            }),
            Err(source) => Err(SinkError::new(&name, source)),
        }
    }
}

impl super::BuildOutput for sluice_config::FileSink {
    async fn build(&self, _: &super::SinkBuild<'_>) -> Result<Arc<dyn Output>, SinkError> {
        Ok(Arc::new(FileSink::open(&self.path).await?))
    }
}

#[async_trait::async_trait]
impl Output for FileSink {
    fn name(&self) -> &str {
        &self.name
    }

    async fn send(&self, events: &[Bytes]) -> Result<(), SendError> {
        self.write(&super::codec::lines(events))
            .await
            .map_err(|e| SendError::Retry(e.source.to_string()))
    }
}

impl FileSink {
    /// For logs: `file:<path>`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Appends `lines` and flushes; all or, on error, to be written again whole.
    pub async fn write(&self, lines: &[u8]) -> Result<(), SinkError> {
        if lines.is_empty() {
            return Ok(());
        }
        let mut slot = self.file.lock().await;
        let result = async {
            let file = match &mut *slot {
                Some(file) => file,
                None => slot.insert(open_append(&self.path).await?),
            };
            file.write_all(lines).await?;
            file.flush().await
        }
        .await;
        if result.is_err() {
            // Part of the batch may be in the file: reopening cuts the torn line, and the
            // retry writes the whole batch.
            *slot = None;
        }
        result.map_err(|source| SinkError::new(&self.name, source))
    }
}

/// Opens `path` for appending, creating it and its folder. A last line without its newline
/// (the process died mid-write) is cut off: its batch was not acknowledged, so its events are
/// written again, whole.
async fn open_append(path: &Path) -> std::io::Result<tokio::fs::File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        tokio::fs::create_dir_all(dir).await?;
    }
    let file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)
        .await?;
    let file = file.into_std().await;
    let file = tokio::task::spawn_blocking(move || trim_torn_line(&file).map(|()| file))
        .await
        .map_err(std::io::Error::other)??;
    Ok(tokio::fs::File::from_std(file))
}

fn trim_torn_line(file: &std::fs::File) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let len = file.metadata()?.len();
    if len == 0 || !file.metadata()?.is_file() {
        return Ok(());
    }
    let mut reader = file;
    // Look back in blocks for the last newline.
    let mut end = len;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let start = end.saturating_sub(buf.len() as u64);
        let n = (end - start) as usize;
        reader.seek(SeekFrom::Start(start))?;
        reader.read_exact(&mut buf[..n])?;
        if end == len && buf[n - 1] == b'\n' {
            return Ok(());
        }
        if let Some(i) = buf[..n].iter().rposition(|b| *b == b'\n') {
            let keep = start + i as u64 + 1;
            tracing::warn!(
                cut = len - keep,
                "the sink file ended in a torn line (a crash mid-write); cutting it, its events are written again"
            );
            return file.set_len(keep);
        }
        if start == 0 {
            tracing::warn!(
                cut = len,
                "the sink file holds only a torn line; cutting it"
            );
            return file.set_len(0);
        }
        end = start;
    }
}

#[cfg(test)]
mod tests {
    use super::FileSink;

    #[tokio::test]
    async fn a_torn_last_line_is_cut_when_the_file_is_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, "{\"n\":1}\n{\"n\":2}\n{\"n\":").unwrap();
        let sink = FileSink::open(&path).await.unwrap();
        sink.write(b"{\"n\":3}\n").await.unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n"
        );
    }

    #[tokio::test]
    async fn batches_append_whole_and_an_empty_batch_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/events.jsonl");
        let sink = FileSink::open(&path).await.unwrap();
        sink.write(b"{\"n\":1}\n").await.unwrap();
        sink.write(b"").await.unwrap();
        sink.write(b"{\"n\":2}\n{\"n\":3}\n").await.unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n"
        );
    }
}
