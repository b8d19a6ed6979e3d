//! `list_to_map`: turns a list of objects into an object keyed by a field of each (or by
//! their own keys), as Data Prepper's `ListToMapProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - list_to_map:
///     source: mylist
///     key: name
///     value_key: value
///     flatten: true
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListToMap {
    /// The key of the list of objects. Required; not the whole event.
    #[serde(deserialize_with = "crate::event::key")]
    pub source: Key,
    /// Where the made object goes (replacing its value). Default: each of its keys goes to
    /// the top level of the event (a `/` in one nests).
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub target: Option<Key>,
    /// The field of each object whose text is its key in the made object (`name`). Required
    /// unless `use_source_key` is true.
    #[serde(default)]
    pub key: Option<String>,
    /// The field of each object whose value is kept (a missing one is `null`). Default: the
    /// whole object is kept.
    #[serde(default)]
    pub value_key: Option<String>,
    /// Key the made object by each object's own keys instead of `key`'s value. Default
    /// false.
    #[serde(default)]
    pub use_source_key: bool,
    /// With `use_source_key`, keep each key's value instead of the whole object. Default
    /// false.
    #[serde(default)]
    pub extract_value: bool,
    /// Keep one value per key (see `flattened_element`) instead of a list of all of them in
    /// the order of the list. Default false.
    #[serde(default)]
    pub flatten: bool,
    /// With `flatten`, which value of a key is kept: `first` or `last`. Default `first`.
    #[serde(default)]
    pub flattened_element: FlattenedElement,
    /// Tags added to an event whose source is not a list of objects with text `key`s.
    /// Default: none.
    #[serde(default)]
    pub tags_on_failure: Vec<String>,
    /// Convert only in events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub list_to_map_when: Option<Expression>,
}

/// `flattened_element`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlattenedElement {
    #[default]
    First,
    Last,
}

impl ProcessorConfig for ListToMap {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.source.is_root() {
            let at = join(path, "source");
            errors.at(
                &at,
                format!("`{at}` is empty: name the key of the list, e.g. `mylist`"),
            );
        }
        if self.target.as_ref().is_some_and(Key::is_root) {
            let at = join(path, "target");
            errors.at(
                &at,
                format!(
                    "`{at}` is empty: name a key, or remove it to put the keys at the top level"
                ),
            );
        }
        if self.key.is_none() && !self.use_source_key {
            errors.at(
                path,
                format!("`{path}` needs `key` (the field whose value keys the map, e.g. `key: name`) or `use_source_key: true`"),
            );
        }
    }
}
