//! `split_string`: splits a text value into a list, as Data Prepper's
//! `SplitStringProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::{ProcessorConfig, regexes};
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - split_string:
///     entries:
///       - source: "message"
///         delimiter: ","
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SplitString {
    /// The splits, in order. Required.
    pub entries: Vec<SplitEntry>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SplitEntry {
    /// The key whose text is split into a list. Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub source: Key,
    /// The text to split at. One of `delimiter` and `delimiter_regex` is required.
    #[serde(default)]
    pub delimiter: Option<String>,
    /// The regular expression to split at.
    #[serde(default)]
    pub delimiter_regex: Option<String>,
    /// Split only in events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub split_when: Option<Expression>,
}

impl ProcessorConfig for SplitString {
    fn check(&self, path: &str, errors: &mut Errors) {
        for (i, entry) in self.entries.iter().enumerate() {
            let path = format!("{}[{i}]", join(path, "entries"));
            match (&entry.delimiter, &entry.delimiter_regex) {
                (Some(_), Some(_)) | (None, None) => errors.at(
                    &path,
                    format!("`{path}` takes one of `delimiter` and `delimiter_regex`"),
                ),
                (Some(d), None) if d.is_empty() => errors.at(
                    &join(&path, "delimiter"),
                    format!("`{path}.delimiter` is empty; write the text to split at"),
                ),
                (None, Some(regex)) => regexes(
                    std::slice::from_ref(regex),
                    &join(&path, "delimiter_regex"),
                    errors,
                ),
                _ => {}
            }
        }
    }
}
