//! `wrap_entries`: turns each element of a list into an object of one key, as Data Prepper's
//! `WrapEntriesProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - wrap_entries:
///     source: "/names"
///     key: "name"
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrapEntries {
    /// The key of the list whose elements are wrapped. Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub source: Key,
    /// Where the list of objects goes. Default: `source` (the list is replaced).
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub target: Option<Key>,
    /// The name of the one key of each object (`name`: `"alice"` becomes
    /// `{"name": "alice"}`), taken as written, not as a path. Required.
    pub key: String,
    /// Leave out `null` and empty text elements. Default false.
    #[serde(default)]
    pub exclude_null_empty_values: bool,
    /// Append to the list already at `target` instead of replacing it (an event whose
    /// `target` holds something other than a list is tagged `tags_on_failure`). Default false.
    #[serde(default)]
    pub append_if_target_exists: bool,
    /// Wrap only in events for which this condition is true. Default: every event.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub wrap_entries_when: Option<Expression>,
    /// Tags added to an event whose `source` (or, appending, `target`) is not a list.
    /// Default: none.
    #[serde(default)]
    pub tags_on_failure: Vec<String>,
}

impl WrapEntries {
    /// Where the list of objects goes: `target`, else `source`.
    pub fn target(&self) -> &Key {
        self.target.as_ref().unwrap_or(&self.source)
    }
}

impl ProcessorConfig for WrapEntries {
    fn check(&self, path: &str, errors: &mut Errors) {
        super::check_not_root(
            path,
            [
                ("source", Some(&self.source)),
                ("target", self.target.as_ref()),
            ],
            "the key of the list",
            errors,
        );
        if self.key.is_empty() {
            let at = join(path, "key");
            errors.at(
                &at,
                format!("`{at}` is empty; write the name each element is wrapped under"),
            );
        }
    }
}
