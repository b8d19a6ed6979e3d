//! `delete_entries`: removes keys from each event, as Data Prepper's
//! `DeleteEntryProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::{ProcessorConfig, regexes};
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - delete_entries:
///     with_keys: ["message", "/nested/secret"]
/// - delete_entries:
///     entries:
///       - with_keys: ["message"]
///       - with_keys_regex: ["^tes.*"]
///         exclude_from_delete: ["test"]
///       - with_keys: ["secret"]
///         iterate_on: "/users"
///         delete_from_element_when: '/role != "admin"'
/// ```
///
/// The top-level keys other than `entries` make one entry; with `entries` they cannot be used.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteEntries {
    /// The keys to delete. Exactly one of `with_keys`, `with_keys_regex` and `entries` is
    /// required.
    #[serde(default, deserialize_with = "crate::event::keys")]
    pub with_keys: Vec<Key>,
    /// Top-level keys matching any of these regular expressions (the whole key) are deleted.
    #[serde(default)]
    pub with_keys_regex: Vec<String>,
    /// Keys `with_keys_regex` must not delete.
    #[serde(default, deserialize_with = "crate::event::keys")]
    pub exclude_from_delete: Vec<Key>,
    /// Delete only from events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub delete_when: Option<Expression>,
    /// A list of objects (`/users`): the keys are deleted from each of its elements instead of
    /// the event.
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub iterate_on: Option<Key>,
    /// With `iterate_on`: delete only from the elements for which this condition is true
    /// (evaluated on the element: its data, the event's metadata).
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub delete_from_element_when: Option<Expression>,
    /// Several deletions, in order, each with its own keys and conditions.
    #[serde(default)]
    pub entries: Vec<DeleteEntry>,
}

/// One item of `entries`: the same keys as the top level (here `with_keys` and
/// `with_keys_regex` may go together).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteEntry {
    /// The keys to delete. One of `with_keys` and `with_keys_regex` is required.
    #[serde(default, deserialize_with = "crate::event::keys")]
    pub with_keys: Vec<Key>,
    /// Top-level keys matching any of these regular expressions (the whole key) are deleted.
    #[serde(default)]
    pub with_keys_regex: Vec<String>,
    /// Keys `with_keys_regex` must not delete.
    #[serde(default, deserialize_with = "crate::event::keys")]
    pub exclude_from_delete: Vec<Key>,
    /// Apply this entry only to events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub delete_when: Option<Expression>,
    /// A list of objects: the keys are deleted from each of its elements instead.
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub iterate_on: Option<Key>,
    /// With `iterate_on`: delete only from the elements for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub delete_from_element_when: Option<Expression>,
}

impl DeleteEntries {
    /// The deletions in order: `entries`, or the one the top-level keys make.
    pub fn all_entries(&self) -> Vec<DeleteEntry> {
        if !self.entries.is_empty() {
            return self.entries.clone();
        }
        vec![DeleteEntry {
            with_keys: self.with_keys.clone(),
            with_keys_regex: self.with_keys_regex.clone(),
            exclude_from_delete: self.exclude_from_delete.clone(),
            delete_when: self.delete_when.clone(),
            iterate_on: self.iterate_on.clone(),
            delete_from_element_when: self.delete_from_element_when.clone(),
        }]
    }
}

impl ProcessorConfig for DeleteEntries {
    fn check(&self, path: &str, errors: &mut Errors) {
        let given = [
            !self.entries.is_empty(),
            !self.with_keys.is_empty(),
            !self.with_keys_regex.is_empty(),
        ];
        match given.iter().filter(|&&g| g).count() {
            0 => errors.at(
                path,
                format!("`{path}` needs `with_keys`, `with_keys_regex` or `entries`: the keys to delete"),
            ),
            1 => {}
            _ => errors.at(
                path,
                format!("`{path}` takes only one of `with_keys`, `with_keys_regex` and `entries`; to use both `with_keys` and `with_keys_regex`, put them in one item of `entries`"),
            ),
        }
        if self.entries.is_empty() {
            check_entry(
                path,
                &self.with_keys_regex,
                &self.exclude_from_delete,
                self.iterate_on.is_some(),
                self.delete_from_element_when.is_some(),
                errors,
            );
        } else {
            let ignored = [
                ("exclude_from_delete", !self.exclude_from_delete.is_empty()),
                ("delete_when", self.delete_when.is_some()),
                ("iterate_on", self.iterate_on.is_some()),
                (
                    "delete_from_element_when",
                    self.delete_from_element_when.is_some(),
                ),
            ];
            for (key, _) in ignored.iter().filter(|(_, set)| *set) {
                errors.at(
                    &join(path, key),
                    format!("`{path}.{key}` does not apply with `entries`; move it into the items of `entries`"),
                );
            }
        }
        for (i, entry) in self.entries.iter().enumerate() {
            let path = format!("{}[{i}]", join(path, "entries"));
            if entry.with_keys.is_empty() && entry.with_keys_regex.is_empty() {
                errors.at(
                    &path,
                    format!(
                        "`{path}` needs `with_keys` (or `with_keys_regex`): the keys to delete"
                    ),
                );
            }
            check_entry(
                &path,
                &entry.with_keys_regex,
                &entry.exclude_from_delete,
                entry.iterate_on.is_some(),
                entry.delete_from_element_when.is_some(),
                errors,
            );
        }
    }
}

/// The rules of one entry (the top level's or an item's), `path` its key path.
fn check_entry(
    path: &str,
    with_keys_regex: &[String],
    exclude_from_delete: &[Key],
    iterate_on: bool,
    delete_from_element_when: bool,
    errors: &mut Errors,
) {
    if !exclude_from_delete.is_empty() && with_keys_regex.is_empty() {
        errors.at(
            &join(path, "exclude_from_delete"),
            format!("`{path}.exclude_from_delete` only applies with `with_keys_regex`"),
        );
    }
    if delete_from_element_when && !iterate_on {
        errors.at(
            &join(path, "delete_from_element_when"),
            format!("`{path}.delete_from_element_when` only applies with `iterate_on` (the list whose elements it selects); add it or remove the condition"),
        );
    }
    regexes(with_keys_regex, &join(path, "with_keys_regex"), errors);
}
