//! `add_entries`: adds keys (or metadata attributes) to each event, with a fixed value, a
//! format string or an expression's value, as Data Prepper's `AddEntryProcessorConfig`.

use serde::Deserialize;
use serde_json::Value;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
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
    /// A list of objects (`/items`): the entry is added to each of its elements instead of the
    /// event, and the list written back. Only when it is a non-empty list of objects; not with
    /// `metadata_key`.
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub iterate_on: Option<Key>,
    /// With `iterate_on`: add to the elements only when this condition is true, evaluated once
    /// on the event (all elements or none), or on each element with
    /// `evaluate_when_on_element`.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub add_to_element_when: Option<Expression>,
    /// With `iterate_on`: `key` is one key of each element, taken literally (`a/b` is one
    /// key); false reads it as a path inside the element. Default true.
    #[serde(default = "crate::yes")]
    pub flatten_key: bool,
    /// With `iterate_on`: `format` and `value_expression` read the element (true) or the whole
    /// event (false). Default true.
    #[serde(default = "crate::yes")]
    pub disable_root_keys: bool,
    /// With `iterate_on` and `add_to_element_when`: evaluate the condition on each element
    /// (its data, the event's metadata) instead of once on the event. Default false.
    #[serde(default)]
    pub evaluate_when_on_element: bool,
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
            let iterates = entry.iterate_on.is_some();
            let mut only_with = |key: &str, set: bool, needs: &str| {
                if set {
                    errors.at(
                        &join(&path, key),
                        format!(
                            "`{path}.{key}` only applies with {needs}; add it or remove `{key}`"
                        ),
                    );
                }
            };
            only_with(
                "flatten_key",
                !iterates && !entry.flatten_key,
                "`iterate_on`",
            );
            only_with(
                "disable_root_keys",
                !iterates && !entry.disable_root_keys,
                "`iterate_on`",
            );
            only_with(
                "add_to_element_when",
                !iterates && entry.add_to_element_when.is_some(),
                "`iterate_on`",
            );
            only_with(
                "evaluate_when_on_element",
                entry.evaluate_when_on_element
                    && (!iterates || entry.add_to_element_when.is_none()),
                "both `iterate_on` and `add_to_element_when`",
            );
            if iterates && entry.metadata_key.is_some() {
                errors.at(
                    &join(&path, "iterate_on"),
                    format!("`{path}.iterate_on` adds to list elements, not to metadata; use `key` instead of `metadata_key`, or remove `iterate_on`"),
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
