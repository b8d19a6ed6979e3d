//! `flatten`: turns a nested object into one level of keys joined with a separator
//! (`{"a": {"b": 1}}` → `{"a.b": 1}`; list elements `a[0].b`), as Data Prepper's
//! `FlattenProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - flatten:
///     source: ""
///     target: ""
///     remove_processed_fields: true
///     exclude_keys: ["key2"]
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flatten {
    /// The object to flatten (`key2`, `/log/request`); `""` is the whole event. Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub source: Key,
    /// Where the flattened keys go: an object put at this key (replacing its value); `""`
    /// puts each flattened key at the top level of the event (a `/` in it nests). Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub target: Key,
    /// Delete the source's keys once flattened (all but `exclude_keys`): a nested source is
    /// left as `{}`. Also written `remove_processed_fields`. Default false.
    #[serde(default, alias = "remove_processed_fields")]
    pub remove_source_keys: bool,
    /// Drop list indexes from the flattened keys (`a[0].b`, `a[1].b` → `a[].b`), the values
    /// of keys that become the same gathered into a list in index order. Also written
    /// `remove_list_indices`. Default false.
    #[serde(default, alias = "remove_list_indices")]
    pub remove_list_elements: bool,
    /// With `remove_list_elements`, drop the brackets too (`a.b`). Default false.
    #[serde(default)]
    pub remove_brackets: bool,
    /// Keys of the source (`key2`, `key2/key3`) left as they are, not flattened. Default:
    /// none.
    #[serde(default)]
    pub exclude_keys: Vec<String>,
    /// The one character between the levels of a flattened key. Default `.`.
    #[serde(default = "default_separator")]
    pub flatten_separator: String,
    /// Tags added to an event that could not be flattened (no source, a flattened key that
    /// cannot be a key). Default: none.
    #[serde(default)]
    pub tags_on_failure: Vec<String>,
    /// Flatten only events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub flatten_when: Option<Expression>,
}

fn default_separator() -> String {
    ".".to_owned()
}

impl Flatten {
    /// The separator (`check` made sure it is one character).
    pub fn separator(&self) -> char {
        self.flatten_separator.chars().next().unwrap_or('.')
    }

    /// Where each of `exclude_keys` is in the event: under `source`.
    pub fn excluded(&self) -> Vec<Key> {
        let base = self.source.as_str().trim_end_matches('/');
        self.exclude_keys
            .iter()
            .map(|k| Key::unchecked(&format!("{base}/{}", k.trim_start_matches('/'))))
            .collect()
    }
}

impl ProcessorConfig for Flatten {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.flatten_separator.chars().count() != 1 {
            let at = join(path, "flatten_separator");
            errors.at(
                &at,
                format!(
                    "`{at}` is `{}`: it must be exactly one character, e.g. `_`",
                    self.flatten_separator
                ),
            );
        }
        if self.remove_brackets && !self.remove_list_elements {
            let at = join(path, "remove_brackets");
            errors.at(
                &at,
                format!("`{at}` can only be true with `remove_list_indices: true`"),
            );
        }
        let at = join(path, "exclude_keys");
        for key in &self.exclude_keys {
            if let Err(e) = Key::parse(key) {
                errors.at(&at, format!("`{at}`: {e}"));
            }
        }
    }
}
