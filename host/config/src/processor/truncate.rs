//! `truncate`: keeps part of text values (from `start_at`, at most `length` characters), as
//! Data Prepper's `TruncateProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - truncate:
///     entries:
///       - source_keys: ["message"]
///         length: 5
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Truncate {
    /// The truncations, in order. Required, at least one.
    pub entries: Vec<TruncateEntry>,
}

/// One truncation: which keys, where to start, how much to keep, when.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TruncateEntry {
    /// The keys whose text is truncated. Default: every key at the top of the event (an
    /// empty list `[]` truncates nothing, as in Data Prepper).
    #[serde(default, deserialize_with = "crate::event::opt_keys")]
    pub source_keys: Option<Vec<Key>>,
    /// Where the kept part starts, counted in Java characters (UTF-16 units: 1 for most
    /// characters, 2 for emoji and others beyond U+FFFF). Default 0. One of `start_at` and
    /// `length` is required. A value that starts past the end of a text is an error that
    /// stops the event's remaining truncations (logged), as in Data Prepper.
    #[serde(default)]
    pub start_at: Option<i32>,
    /// How many characters (UTF-16 units) to keep. Default: up to the end.
    #[serde(default)]
    pub length: Option<i32>,
    /// Also truncate inside objects, at any depth. Default false: objects are left as they
    /// are. Text in lists is truncated either way.
    #[serde(default)]
    pub recursive: bool,
    /// Truncate only in events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub truncate_when: Option<Expression>,
}

impl ProcessorConfig for Truncate {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.entries.is_empty() {
            errors.at(
                &join(path, "entries"),
                format!("`{path}.entries` is empty; add at least one entry, e.g. `- source_keys: [message]` with `length: 100`"),
            );
        }
        for (i, entry) in self.entries.iter().enumerate() {
            let path = format!("{}[{i}]", join(path, "entries"));
            let negative = |v: Option<i32>| v.is_some_and(|v| v < 0);
            if (entry.start_at.is_none() && entry.length.is_none())
                || negative(entry.start_at)
                || negative(entry.length)
            {
                errors.at(
                    &path,
                    format!("`{path}`: at least one of `start_at` or `length` or both must be specified and the values must be positive integers"),
                );
            }
        }
    }
}
