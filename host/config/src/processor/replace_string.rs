//! `replace_string`: replaces every occurrence of a text (not a regular expression) in a text
//! value, as Data Prepper's `ReplaceStringProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - replace_string:
///     entries:
///       - source: "message"
///         from: "ab"
///         to: "ef"
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaceString {
    /// The replacements, in order. Required.
    pub entries: Vec<ReplaceEntry>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaceEntry {
    /// The key whose text is changed; other values are left as they are. Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub source: Key,
    /// The text to replace, as written (not a regular expression: see `substitute_string`).
    /// Required.
    pub from: String,
    /// What replaces each occurrence of `from`. Required.
    pub to: String,
    /// Replace only in events for which this condition is true. Default: every event.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub replace_when: Option<Expression>,
}

impl ProcessorConfig for ReplaceString {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.entries.is_empty() {
            let key = join(path, "entries");
            errors.at(
                &key,
                format!("`{key}` is empty; add an entry of `source`, `from` and `to`"),
            );
        }
    }
}
