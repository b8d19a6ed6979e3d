//! The `file` source: reads a file line by line, each line one record (a pull source).

use std::borrow::Cow;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer};

use super::deserializer::{DeserializerConfig, check_deserializer, opt_deserializer};
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
    /// Data Prepper's way to read each line: `plain` (the event is `{"message": "<line>"}`) or
    /// `json` (a line that is a JSON object is the event; any other line is still
    /// `{"message": ...}`). It picks the built-in `plain` deserializer; give it or
    /// `deserializer`, not both. Without either, each line is read by `json` (sluice's
    /// default: a line that is not JSON is dead-lettered), not as Data Prepper's `plain`.
    #[serde(default)]
    pub format: Option<FileFormat>,
    /// Data Prepper's record type, `event` or `string` (its 1.x string records). Accepted for
    /// its configurations; sluice's records are events either way.
    #[serde(default)]
    pub record_type: Option<RecordType>,
    /// The deserializer for each line. Default `json` (or `plain` with `format`).
    #[serde(default, deserialize_with = "opt_deserializer")]
    pub deserializer: Option<DeserializerConfig>,
}

/// Data Prepper's `format` of the `file` source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileFormat {
    /// Each line is `{"message": "<line>"}`.
    Plain,
    /// Each line that is a JSON object is the event; any other is `{"message": "<line>"}`.
    Json,
}

/// Data Prepper's `record_type` (both read as events).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordType {
    /// Events.
    Event,
    /// Data Prepper 1.x's strings.
    String,
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
        match (&self.deserializer, self.format) {
            (Some(d), _) => Cow::Borrowed(d),
            (None, None) => Cow::Owned(DeserializerConfig::default()),
            (None, Some(format)) => {
                let format = match format {
                    FileFormat::Plain => "plain",
                    FileFormat::Json => "json",
                };
                Cow::Owned(DeserializerConfig {
                    name: "plain".to_owned(),
                    options: [("format".to_owned(), format.into())].into(),
                    ..DeserializerConfig::default()
                })
            }
        }
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
        if self.format.is_some() && self.deserializer.is_some() {
            errors.at(
                &join(path, "format"),
                format!(
                    "`{path}` has both `format` and `deserializer`: `format` picks the `plain` \
                     deserializer; remove one"
                ),
            );
        }
        check_deserializer(
            &self.deserializer(),
            &join(path, "deserializer"),
            errors,
            context,
        );
    }
}
