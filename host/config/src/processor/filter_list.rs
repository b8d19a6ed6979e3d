//! `filter_list`: keeps the elements of a list for which a condition is true, as Data Prepper's
//! `FilterListProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use crate::error::Errors;

/// ```yaml
/// - filter_list:
///     iterate_on: items
///     keep_element_when: '/status == "active"'
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterList {
    /// The key of the list to filter (`outer/list` for a nested one). Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub iterate_on: Key,
    /// Where the filtered list goes (objects on the way are made). Default: `iterate_on`.
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub target: Option<Key>,
    /// The elements to keep: evaluated on each element as if it were an event (an object's
    /// keys are its keys; any other element is `/value`). Required.
    #[serde(deserialize_with = "crate::event::condition")]
    pub keep_element_when: Expression,
    /// Filter only in events for which this condition (on the whole event) is true. Default:
    /// every event.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub filter_list_when: Option<Expression>,
    /// Tags added to an event whose `iterate_on` is not a list, or for one of whose elements
    /// `keep_element_when` could not be evaluated. Default: none.
    #[serde(default)]
    pub tags_on_failure: Vec<String>,
}

impl FilterList {
    /// Where the filtered list goes: `target`, else `iterate_on`.
    pub fn target(&self) -> &Key {
        self.target.as_ref().unwrap_or(&self.iterate_on)
    }
}

impl ProcessorConfig for FilterList {
    fn check(&self, path: &str, errors: &mut Errors) {
        super::check_not_root(
            path,
            [
                ("iterate_on", Some(&self.iterate_on)),
                ("target", self.target.as_ref()),
            ],
            "the key of the list",
            errors,
        );
    }
}
