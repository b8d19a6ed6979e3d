//! `delay`: waits a while before each batch goes on, for testing and debugging, as Data
//! Prepper's `DelayProcessor.Configuration`.

use std::time::Duration;

use serde::Deserialize;

use super::ProcessorConfig;

/// ```yaml
/// - delay:
///     for: 2s
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delay {
    /// How long each batch waits (`2s`, `1000ms`, ISO-8601 `PT10M`; a bare integer is
    /// milliseconds). Default `1s`, as Data Prepper's.
    #[serde(
        rename = "for",
        default = "one_second",
        deserialize_with = "crate::units::duration"
    )]
    pub delay_for: Duration,
}

/// Data Prepper's default: `Duration.ofSeconds(1)`.
const fn one_second() -> Duration {
    Duration::from_secs(1)
}

impl ProcessorConfig for Delay {}
