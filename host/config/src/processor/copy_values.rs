//! `copy_values`: copies values to other keys, as Data Prepper's `CopyValueProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::{ProcessorConfig, Unsupported};
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - copy_values:
///     entries:
///       - from_key: "message"
///         to_key: "newMessage"
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CopyValues {
    /// The copies, in order. Required.
    #[serde(default)]
    pub entries: Vec<CopyEntry>,
    #[serde(default)]
    pub from_list: Option<Unsupported>,
    #[serde(default)]
    pub to_list: Option<Unsupported>,
    #[serde(default)]
    pub overwrite_if_to_list_exists: Option<Unsupported>,
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
    }
}
