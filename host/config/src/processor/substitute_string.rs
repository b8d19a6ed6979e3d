//! `substitute_string`: replaces every match of a regular expression in a text value, as
//! Data Prepper's `SubstituteStringProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::{ProcessorConfig, regexes};
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - substitute_string:
///     entries:
///       - source: "message"
///         from: ":"
///         to: "-"
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubstituteString {
    /// The substitutions, in order. Required.
    pub entries: Vec<SubstituteEntry>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubstituteEntry {
    /// The key whose text is changed. Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub source: Key,
    /// The regular expression to replace (Java syntax; `$1` in `to` is its first group).
    /// Required.
    pub from: String,
    /// What replaces each match. Required.
    pub to: String,
    /// Substitute only in events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub substitute_when: Option<Expression>,
}

impl ProcessorConfig for SubstituteString {
    fn check(&self, path: &str, errors: &mut Errors) {
        for (i, entry) in self.entries.iter().enumerate() {
            let path = format!("{}[{i}]", join(path, "entries"));
            regexes(
                std::slice::from_ref(&entry.from),
                &join(&path, "from"),
                errors,
            );
        }
    }
}
