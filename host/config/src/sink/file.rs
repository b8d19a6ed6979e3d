//! The `file` sink: each event as one JSON line appended to a file.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The `file` sink.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSink {
    /// The file to append to; created (with its folder) if missing. Required.
    pub path: PathBuf,
    /// sluice's, not Data Prepper's: from a kafka buffer, write each event once, even when a
    /// crash makes the pipeline read a batch again. The sink keeps, beside the file,
    /// `<path>.offsets`: the buffer offsets the file holds and its length. `false`: at least
    /// once (a batch read again after a crash is written again). Default true.
    #[serde(default = "crate::yes")]
    pub exactly_once: bool,
}

/// The name of a file sink writing `path` (and of the dead-letter file): `file:<path>`.
pub fn name(path: &Path) -> String {
    format!("file:{}", path.display())
}

impl super::SinkConfig for FileSink {
    fn name(&self) -> String {
        name(&self.path)
    }
}

crate::resolve::resolves_to_itself!(FileSink);
