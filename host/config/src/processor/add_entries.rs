//! `add_entries`: adds keys (or metadata attributes) to each event, with a fixed value, a
//! format string or an expression's value, as Data Prepper's `AddEntryProcessorConfig`.

use serde::Deserialize;
use serde_json::Value;
use sluice_event::{Expression, Key};

use super::{ProcessorConfig, Unsupported};
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - add_entries:
///     entries:
///       - key: "/response/status"
///         value: 200
///       - metadata_key: "source"
///         format: "${/host}-${/service}"
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddEntries {
    /// The entries to add, in order. Required.
    pub entries: Vec<AddEntry>,
}

/// One entry: where (`key` or `metadata_key`), what (exactly one of `value`, `format`,
/// `value_expression`), and when.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddEntry {
    /// The key to add (`my_key`, `/nested/key`); may be a format string (`${/a}-${/b}`).
    /// One of `key` and `metadata_key` is required.
    #[serde(default)]
    pub key: Option<String>,
    /// The metadata attribute to add instead of a key (`getMetadata("name")` reads it).
    #[serde(default)]
    pub metadata_key: Option<String>,
    /// A fixed value: text, number, boolean, list or map.
    #[serde(default)]
    pub value: Option<Value>,
    /// A format string: `${/key}` is the key's value, `${expression}` an expression's.
    #[serde(default)]
    pub format: Option<String>,
    /// An expression whose value is added (`length(/message)`, `/other_key`).
    #[serde(default, deserialize_with = "crate::event::opt_expression")]
    pub value_expression: Option<Expression>,
    /// Replace the key's value if it exists. Default false: an existing key is left as is.
    #[serde(default)]
    pub overwrite_if_key_exists: bool,
    /// Append to the key's value if it exists (making it a list). Default false.
    #[serde(default)]
    pub append_if_key_exists: bool,
    /// Add the entry only to events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub add_when: Option<Expression>,
    #[serde(default)]
    pub iterate_on: Option<Unsupported>,
    #[serde(default)]
    pub add_to_element_when: Option<Unsupported>,
    #[serde(default)]
    pub flatten_key: Option<Unsupported>,
    #[serde(default)]
    pub disable_root_keys: Option<Unsupported>,
    #[serde(default)]
    pub evaluate_when_on_element: Option<Unsupported>,
}

/// Where an entry goes, read from `key` / `metadata_key`.
#[derive(Debug, Clone)]
pub enum Target {
    Key(Key),
    /// A key made per event from a format string.
    Format(String),
    Metadata(String),
}

impl AddEntry {
    /// Where the entry goes (`check` made sure there is exactly one).
    pub fn target(&self) -> Target {
        match (&self.key, &self.metadata_key) {
            (Some(key), _) if key.contains("${") => Target::Format(key.clone()),
            (Some(key), _) => Target::Key(Key::unchecked(key)),
            (None, Some(name)) => Target::Metadata(name.clone()),
            (None, None) => unreachable!("checked: one of key and metadata_key"),
        }
    }
}

impl ProcessorConfig for AddEntries {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.entries.is_empty() {
            errors.at(
                &join(path, "entries"),
                format!("`{path}.entries` is empty; add at least one entry, e.g. `- key: new_key` with `value: 1`"),
            );
        }
        for (i, entry) in self.entries.iter().enumerate() {
            let path = format!("{}[{i}]", join(path, "entries"));
            match (&entry.key, &entry.metadata_key) {
                (Some(_), Some(_)) => errors.at(
                    &path,
                    format!("`{path}` has both `key` and `metadata_key`; keep one"),
                ),
                (None, None) => errors.at(
                    &path,
                    format!("`{path}` needs `key` (or `metadata_key`): where to add the entry"),
                ),
                (Some(key), None) if !key.contains("${") => {
                    if let Err(e) = Key::parse(key) {
                        errors.at(&join(&path, "key"), format!("`{path}.key`: {e}"));
                    }
                }
                _ => {}
            }
            let values = [
                entry.value.is_some(),
                entry.format.is_some(),
                entry.value_expression.is_some(),
            ];
            if values.iter().filter(|&&v| v).count() != 1 {
                errors.at(
                    &path,
                    format!(
                        "`{path}` takes exactly one of `value`, `format` and `value_expression`"
                    ),
                );
            }
            if entry.overwrite_if_key_exists && entry.append_if_key_exists {
                errors.at(
                    &path,
                    format!("`{path}`: `overwrite_if_key_exists` and `append_if_key_exists` cannot both be true"),
                );
            }
        }
    }
}
