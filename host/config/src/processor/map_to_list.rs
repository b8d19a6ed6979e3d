//! `map_to_list`: turns an object into a list of its entries (`{"key": k, "value": v}` or
//! `[k, v]`), as Data Prepper's `MapToListProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - map_to_list:
///     source: my-map
///     target: my-list
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapToList {
    /// The object whose entries are listed; `""` is the whole event. Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub source: Key,
    /// Where the list goes (replacing its value). Required; not the whole event.
    #[serde(deserialize_with = "crate::event::key")]
    pub target: Key,
    /// The field of each list item holding the entry's key. Default `key`.
    #[serde(default = "default_key_name")]
    pub key_name: String,
    /// The field of each list item holding the entry's value. Default `value`.
    #[serde(default = "default_value_name")]
    pub value_name: String,
    /// Keys of the source left out of the list. Default: none.
    #[serde(default)]
    pub exclude_keys: Vec<String>,
    /// Delete the listed entries from the source (the excluded ones stay). Default false.
    #[serde(default)]
    pub remove_processed_fields: bool,
    /// Make each item a list `[key, value]` instead of an object. Default false.
    #[serde(default)]
    pub convert_field_to_list: bool,
    /// Tags added to an event whose source is not an object. Default: none.
    #[serde(default)]
    pub tags_on_failure: Vec<String>,
    /// Convert only in events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub map_to_list_when: Option<Expression>,
}

fn default_key_name() -> String {
    "key".to_owned()
}

fn default_value_name() -> String {
    "value".to_owned()
}

impl ProcessorConfig for MapToList {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.target.is_root() {
            let at = join(path, "target");
            errors.at(
                &at,
                format!("`{at}` is empty: name the key the list goes to, e.g. `my-list`"),
            );
        }
    }
}
