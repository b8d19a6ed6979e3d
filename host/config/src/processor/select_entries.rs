//! `select_entries`: keeps only the given keys of each event, as Data Prepper's
//! `SelectEntriesProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::{ProcessorConfig, regexes};
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - select_entries:
///     include_keys: ["key1", "key2"]
///     select_when: '/some_key == "test"'
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelectEntries {
    /// The keys to keep (nested keys keep their parents). One of `include_keys` and
    /// `include_keys_regex` is required.
    #[serde(default, deserialize_with = "crate::event::keys")]
    pub include_keys: Vec<Key>,
    /// Top-level keys matching any of these regular expressions are kept too.
    #[serde(default)]
    pub include_keys_regex: Vec<String>,
    /// Select only in events for which this condition is true; others keep every key.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub select_when: Option<Expression>,
}

impl ProcessorConfig for SelectEntries {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.include_keys.is_empty() && self.include_keys_regex.is_empty() {
            errors.at(
                path,
                format!(
                    "`{path}` needs `include_keys` (or `include_keys_regex`): the keys to keep"
                ),
            );
        }
        regexes(
            &self.include_keys_regex,
            &join(path, "include_keys_regex"),
            errors,
        );
    }
}
