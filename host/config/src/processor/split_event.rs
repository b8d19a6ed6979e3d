//! `split_event`: makes one event per part of a text value (split at a delimiter) or per element
//! of a list, as Data Prepper's `SplitEventProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::{ProcessorConfig, regexes};
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - split_event:
///     field: query
///     delimiter: ' '
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SplitEvent {
    /// The key whose value is split: text at `delimiter` or `delimiter_regex`, or, with
    /// neither, a list (one event per element). Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub field: Key,
    /// The one character to split the text at. Not with `delimiter_regex`. Default: none.
    #[serde(default)]
    pub delimiter: Option<String>,
    /// The regular expression to split the text at. Not with `delimiter`. Default: none.
    #[serde(default)]
    pub delimiter_regex: Option<String>,
    /// Split only events for which this condition is true; the others go on unchanged.
    /// Default: every event.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub split_when: Option<Expression>,
}

impl SplitEvent {
    /// The delimiter, if one is written (Data Prepper reads an empty one as none).
    pub fn delimiter(&self) -> Option<&str> {
        self.delimiter.as_deref().filter(|d| !d.is_empty())
    }

    /// The delimiter regular expression, if one is written (empty is none).
    pub fn delimiter_regex(&self) -> Option<&str> {
        self.delimiter_regex.as_deref().filter(|d| !d.is_empty())
    }
}

impl ProcessorConfig for SplitEvent {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.field.is_root() {
            errors.at(
                &join(path, "field"),
                format!("`{path}.field` is empty; write the key whose value is split"),
            );
        }
        // Data Prepper: `@Size(min = 1, max = 1)` (one UTF-16 unit).
        if let Some(d) = &self.delimiter
            && d.encode_utf16().count() != 1
        {
            let key = join(path, "delimiter");
            errors.at(
                &key,
                format!(
                    "`{key}` is {d:?}; it must be one character (for a longer delimiter use `delimiter_regex`)"
                ),
            );
        }
        match (self.delimiter(), self.delimiter_regex()) {
            (Some(_), Some(_)) => errors.at(
                path,
                format!("`{path}` has both `delimiter` and `delimiter_regex`; keep one of them"),
            ),
            (None, Some(regex)) => {
                regexes(&[regex.to_owned()], &join(path, "delimiter_regex"), errors)
            }
            _ => {}
        }
    }
}
