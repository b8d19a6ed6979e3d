//! The `file` source: reads a file line by line, each line one record (a pull source).

use std::borrow::Cow;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer};

use super::deserializer::{DeserializerConfig, check_deserializer, deserializer_name_or_map};
use super::{CheckSource, SourceConfig, SourceKind};
use crate::context::Context;
use crate::error::Errors;
use crate::location::join;
use crate::secret::SecretError;

/// The `file` source: reads a file line by line, each line one record, then (with `tail`)
/// waits for more lines.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSource {
    /// The file to read. Required.
    pub path: PathBuf,
    /// Keep reading lines appended after the end, like `tail -f`. Default false: stop at the end.
    #[serde(default)]
    pub tail: bool,
    /// The deserializer for each line. Default `json`.
    #[serde(default, deserialize_with = "deserializer_name_or_map")]
    pub deserializer: DeserializerConfig,
}

/// What the `file` source reads.
#[derive(Debug, Clone)]
pub struct FileSettings {
    /// The file to read.
    pub path: PathBuf,
    /// Keep reading lines appended after the end.
    pub tail: bool,
}

impl SourceConfig for FileSource {
    const KIND: SourceKind = SourceKind::Pull;
    fn read<'de, D: Deserializer<'de>>(_: &'static str, d: D) -> Result<Self, D::Error> {
        Self::deserialize(d)
    }
    fn deserializer(&self) -> Cow<'_, DeserializerConfig> {
        Cow::Borrowed(&self.deserializer)
    }
}

impl crate::Resolve for FileSource {
    type Settings = FileSettings;
    type Error = SecretError;
    fn resolve(&self, _pipeline: &str) -> Result<FileSettings, SecretError> {
        Ok(FileSettings {
            path: self.path.clone(),
            tail: self.tail,
        })
    }
}

impl CheckSource for FileSource {
    fn check(&self, path: &str, errors: &mut Errors, context: Context<'_>) {
        check_deserializer(
            &self.deserializer,
            &join(path, "deserializer"),
            errors,
            context,
        );
    }
}
