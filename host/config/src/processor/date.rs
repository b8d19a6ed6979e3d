//! `date`: reads a date from a key with Java `DateTimeFormatter` patterns (or takes the time
//! the event was received) and writes it, formatted, to `destination`, as Data Prepper's
//! `DateProcessorConfig`. The patterns, zones and locale are checked when the pipeline is
//! (`sluice validate`), by the processors crate.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - date:
///     match:
///       - key: timestamp
///         patterns: ["dd/MMM/yyyy:HH:mm:ss Z"]
///     destination: "@timestamp"
///     source_timezone: America/Los_Angeles
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Date {
    /// The key to read and its patterns, tried in order (Java `DateTimeFormatter` patterns,
    /// or `epoch_second`, `epoch_milli`, `epoch_micro`, `epoch_nano`). Exactly one entry;
    /// this or `from_time_received` is required.
    #[serde(default)]
    pub r#match: Vec<DateMatch>,
    /// Use the time the event was received instead of a key. Default false.
    #[serde(default)]
    pub from_time_received: bool,
    /// Where the formatted date goes. Default `@timestamp`.
    #[serde(
        default = "default_destination",
        deserialize_with = "crate::event::key"
    )]
    pub destination: Key,
    /// How the date is written: a Java pattern or `epoch_second`, `epoch_milli`,
    /// `epoch_micro`, `epoch_nano`. Default `yyyy-MM-dd'T'HH:mm:ss.SSSXXX`.
    #[serde(default = "default_output_format")]
    pub output_format: String,
    /// The zone of dates whose text has none (`America/Los_Angeles`, `+05:30`, `UTC`).
    /// Default UTC (Data Prepper: the JVM's zone).
    #[serde(default)]
    pub source_timezone: Option<String>,
    /// The zone the date is written in. Default UTC (Data Prepper: the JVM's zone).
    #[serde(default)]
    pub destination_timezone: Option<String>,
    /// The locale of month and day names (`en-US`, `en_US`, `ROOT`). English only. Default
    /// `ROOT`.
    #[serde(default)]
    pub locale: Option<String>,
    /// Process only events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub date_when: Option<Expression>,
    /// Also keep the date read from `match` as the event's origination time (its metadata's
    /// `external_origination_time_ms`). Not with `from_time_received`, whose time is not
    /// kept so. Alias `to_origination_metadata`. Default false.
    #[serde(default, alias = "to_origination_metadata")]
    pub origination_timestamp_to_metadata: bool,
}

/// One `match` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DateMatch {
    /// The key holding the date. Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub key: Key,
    /// Its patterns, tried in order. At least one.
    pub patterns: Vec<String>,
}

fn default_destination() -> Key {
    Key::unchecked("@timestamp")
}

/// Data Prepper's `DateProcessorConfig.DEFAULT_OUTPUT_FORMAT`.
fn default_output_format() -> String {
    "yyyy-MM-dd'T'HH:mm:ss.SSSXXX".to_owned()
}

/// The `epoch_*` names, for `match` patterns and `output_format`.
pub const EPOCHS: [&str; 4] = ["epoch_second", "epoch_milli", "epoch_micro", "epoch_nano"];

impl ProcessorConfig for Date {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.r#match.is_empty() != self.from_time_received {
            errors.at(
                path,
                format!("`{path}` takes one of `match` and `from_time_received: true`"),
            );
        }
        if self.r#match.len() > 1 || self.r#match.iter().any(|m| m.patterns.is_empty()) {
            errors.at(
                &join(path, "match"),
                format!("`{path}.match` takes exactly one entry, with at least one pattern"),
            );
        }
        for m in &self.r#match {
            if m.patterns
                .iter()
                .filter(|p| p.starts_with("epoch_"))
                .count()
                > 1
            {
                errors.at(
                    &join(path, "match"),
                    format!("`{path}.match` takes at most one `epoch_*` pattern"),
                );
            }
        }
    }
}
