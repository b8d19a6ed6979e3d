//! The `random` source (Data Prepper's load generator): one event `{"message": "<a random
//! UUID>"}` every `wait_delay`, until the run stops.

use std::borrow::Cow;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::deserializer::DeserializerConfig;
use super::{CheckSource, SourceConfig, SourceKind};
use crate::context::Context;
use crate::error::Errors;
use crate::secret::SecretError;
use crate::units;

/// The `random` source.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomSource {
    /// The time between two events: `500ms`, `5s`, an ISO-8601 duration (`PT0.5S`) or integer
    /// milliseconds; `0` writes as fast as the buffer takes them. Default `500ms`, as Data
    /// Prepper's.
    #[serde(default = "default_wait_delay", deserialize_with = "units::duration")]
    pub wait_delay: Duration,
}

/// What the `random` source runs with.
#[derive(Debug, Clone)]
pub struct RandomSettings {
    /// See [`RandomSource::wait_delay`].
    pub wait_delay: Duration,
}

/// Data Prepper's `wait_delay`.
const fn default_wait_delay() -> Duration {
    Duration::from_millis(500)
}

impl SourceConfig for RandomSource {
    // It can always make more: writing its events to Kafka keeps nothing worth keeping.
    const KIND: SourceKind = SourceKind::Pull;
    fn read<'de, D: Deserializer<'de>>(_: &'static str, d: D) -> Result<Self, D::Error> {
        Self::deserialize(d)
    }
    fn deserializer(&self) -> Cow<'_, DeserializerConfig> {
        // Each record is the event's JSON.
        Cow::Owned(DeserializerConfig::default())
    }
}

impl crate::Resolve for RandomSource {
    type Settings = RandomSettings;
    type Error = SecretError;
    fn resolve(&self, _pipeline: &str) -> Result<RandomSettings, SecretError> {
        Ok(RandomSettings {
            wait_delay: self.wait_delay,
        })
    }
}

impl CheckSource for RandomSource {
    fn check(&self, _: &str, _: &mut Errors, _: Context<'_>) {}
}
