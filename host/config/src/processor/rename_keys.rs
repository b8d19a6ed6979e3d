//! `rename_keys`: moves values to new keys, as Data Prepper's `RenameKeyProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::{ProcessorConfig, regexes};
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - rename_keys:
///     entries:
///       - from_key: "message"
///         to_key: "newMessage"
///         overwrite_if_to_key_exists: true
/// - rename_keys:
///     transform_key: lowercase
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenameKeys {
    /// The renames, in order. This or a `transform_key` other than `none` is required.
    #[serde(default)]
    pub entries: Vec<RenameEntry>,
    /// Renames every key of the event instead, in nested objects too (not in lists):
    /// `lowercase`, `uppercase`, `capitalize` (the first character upper-cased) or `none`.
    /// Default `none`.
    #[serde(default)]
    pub transform_key: TransformKey,
}

/// How `transform_key` renames keys (Data Prepper's `TransformOption`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransformKey {
    /// Keys are left as they are (`""` too).
    #[default]
    #[serde(alias = "")]
    None,
    Lowercase,
    Uppercase,
    /// The first character upper-cased, the rest as it is.
    Capitalize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenameEntry {
    /// The key to rename. One of `from_key` and `from_key_regex` is required.
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub from_key: Option<Key>,
    /// Renames every top-level key matching this regular expression to `to_key`.
    #[serde(default)]
    pub from_key_regex: Option<String>,
    /// The new key. Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub to_key: Key,
    /// Replace `to_key`'s value when it exists. Default false: the rename is skipped.
    #[serde(default)]
    pub overwrite_if_to_key_exists: bool,
    /// Rename only in events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub rename_when: Option<Expression>,
}

impl ProcessorConfig for RenameKeys {
    fn check(&self, path: &str, errors: &mut Errors) {
        match (self.entries.is_empty(), self.transform_key) {
            (true, TransformKey::None) => errors.at(
                path,
                format!("`{path}` needs `entries`, e.g. `- from_key: a` with `to_key: b` (or `transform_key`)"),
            ),
            (false, TransformKey::None) | (true, _) => {}
            (false, _) => errors.at(
                path,
                format!("`{path}` takes one of `entries` and `transform_key`; keep one (or a second `rename_keys` for the other)"),
            ),
        }
        for (i, entry) in self.entries.iter().enumerate() {
            let path = format!("{}[{i}]", join(path, "entries"));
            if entry.from_key.is_some() == entry.from_key_regex.is_some() {
                errors.at(
                    &path,
                    format!("`{path}` takes one of `from_key` and `from_key_regex`"),
                );
            }
            if let Some(regex) = &entry.from_key_regex {
                regexes(
                    std::slice::from_ref(regex),
                    &join(&path, "from_key_regex"),
                    errors,
                );
            }
        }
    }
}
