//! The `stdin` source (Data Prepper's): reads standard input line by line, each line the event
//! `{"message": "<line>"}`, until the end of the input (or a line `exit`, as Data Prepper
//! stops at it); then the run drains and `sluice run` exits 0.

use std::borrow::Cow;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::deserializer::DeserializerConfig;
use super::{CheckSource, SourceConfig, SourceKind};
use crate::context::Context;
use crate::error::Errors;
use crate::location::join;
use crate::secret::SecretError;
use crate::units;

/// The `stdin` source.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StdinSource {
    /// How long one write waits for room in the buffer before it is tried again (no line is
    /// dropped: the input waits). Integer milliseconds as Data Prepper's, or `5s`. Default
    /// 5000.
    #[serde(default = "default_write_timeout", deserialize_with = "units::duration")]
    pub write_timeout: Duration,
}

/// What the `stdin` source runs with.
#[derive(Debug, Clone)]
pub struct StdinSettings {
    /// See [`StdinSource::write_timeout`].
    pub write_timeout: Duration,
}

/// Data Prepper's `write_timeout`.
const fn default_write_timeout() -> Duration {
    Duration::from_millis(5000)
}

impl SourceConfig for StdinSource {
    // Its input cannot be read again: the kafka buffer keeps it.
    const KIND: SourceKind = SourceKind::Push;
    const ENDS: bool = true;
    fn read<'de, D: Deserializer<'de>>(_: &'static str, d: D) -> Result<Self, D::Error> {
        Self::deserialize(d)
    }
    fn deserializer(&self) -> Cow<'_, DeserializerConfig> {
        // Each record is the event's JSON, as Data Prepper makes it.
        Cow::Owned(DeserializerConfig::default())
    }
}

impl crate::Resolve for StdinSource {
    type Settings = StdinSettings;
    type Error = SecretError;
    fn resolve(&self, _pipeline: &str) -> Result<StdinSettings, SecretError> {
        Ok(StdinSettings {
            write_timeout: self.write_timeout,
        })
    }
}

impl CheckSource for StdinSource {
    fn check(&self, path: &str, errors: &mut Errors, _: Context<'_>) {
        if self.write_timeout.is_zero() {
            errors.at(
                &join(path, "write_timeout"),
                format!("`{path}.write_timeout` must be more than zero, e.g. `5000`"),
            );
        }
    }
}
