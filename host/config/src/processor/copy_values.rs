//! `copy_values`: copies values to other keys, as Data Prepper's `CopyValueProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - copy_values:
///     entries:
///       - from_key: "message"
///         to_key: "newMessage"
/// - copy_values:
///     from_list: mylist
///     to_list: newlist
///     entries:
///       - from_key: name
///         to_key: fruit_name
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CopyValues {
    /// The copies, in order. Required.
    #[serde(default)]
    pub entries: Vec<CopyEntry>,
    /// A list of objects to copy from, with `to_list`: `to_list` becomes a new list with one
    /// object per element, holding the entries' `to_key`s copied from its `from_key`s (each a
    /// single key of the element, taken literally; `overwrite_if_to_key_exists` does not
    /// apply).
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub from_list: Option<Key>,
    /// Where the new list goes, with `from_list`.
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub to_list: Option<Key>,
    /// With `to_list`: replace it when it exists. Default false: the event is left as is.
    #[serde(default)]
    pub overwrite_if_to_list_exists: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CopyEntry {
    /// The key to copy from. Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub from_key: Key,
    /// The key to copy to. Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub to_key: Key,
    /// Replace `to_key`'s value when it exists. Default false: the copy is skipped.
    #[serde(default)]
    pub overwrite_if_to_key_exists: bool,
    /// Copy only in events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub copy_when: Option<Expression>,
}

impl ProcessorConfig for CopyValues {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.entries.is_empty() {
            errors.at(
                &join(path, "entries"),
                format!("`{path}` needs `entries`, e.g. `- from_key: a` with `to_key: b`"),
            );
        }
        match (&self.from_list, &self.to_list) {
            (Some(_), None) => errors.at(
                &join(path, "to_list"),
                format!("`{path}` has `from_list` but no `to_list`: both are needed to copy between lists"),
            ),
            (None, Some(_)) => errors.at(
                &join(path, "from_list"),
                format!("`{path}` has `to_list` but no `from_list`: both are needed to copy between lists"),
            ),
            (None, None) if self.overwrite_if_to_list_exists => errors.at(
                &join(path, "overwrite_if_to_list_exists"),
                format!("`{path}.overwrite_if_to_list_exists` only applies with `from_list` and `to_list`"),
            ),
            _ => {}
        }
    }
}
