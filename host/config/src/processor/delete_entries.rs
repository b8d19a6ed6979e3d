//! `delete_entries`: removes keys from each event, as Data Prepper's
//! `DeleteEntryProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::{ProcessorConfig, Unsupported, regexes};
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - delete_entries:
///     with_keys: ["message", "/nested/secret"]
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteEntries {
    /// The keys to delete. One of `with_keys` and `with_keys_regex` is required.
    #[serde(default, deserialize_with = "crate::event::keys")]
    pub with_keys: Vec<Key>,
    /// Top-level keys matching any of these regular expressions are deleted.
    #[serde(default)]
    pub with_keys_regex: Vec<String>,
    /// Keys `with_keys_regex` must not delete.
    #[serde(default, deserialize_with = "crate::event::keys")]
    pub exclude_from_delete: Vec<Key>,
    /// Delete only from events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub delete_when: Option<Expression>,
    #[serde(default)]
    pub iterate_on: Option<Unsupported>,
    #[serde(default)]
    pub delete_from_element_when: Option<Unsupported>,
    #[serde(default)]
    pub entries: Option<Unsupported>,
}

impl ProcessorConfig for DeleteEntries {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.with_keys.is_empty() && self.with_keys_regex.is_empty() {
            errors.at(
                path,
                format!("`{path}` needs `with_keys` (or `with_keys_regex`): the keys to delete"),
            );
        }
        if !self.exclude_from_delete.is_empty() && self.with_keys_regex.is_empty() {
            errors.at(
                &join(path, "exclude_from_delete"),
                format!("`{path}.exclude_from_delete` only applies with `with_keys_regex`"),
            );
        }
        regexes(
            &self.with_keys_regex,
            &join(path, "with_keys_regex"),
            errors,
        );
    }
}
