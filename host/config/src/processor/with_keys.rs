//! `lowercase_string`, `uppercase_string`, `trim_string`: one change to the text at each of
//! `with_keys`, as Data Prepper's `WithKeysConfig` (the three take the same block).

use serde::Deserialize;
use sluice_event::Key;

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - lowercase_string:
///     with_keys: ["uppercaseField"]
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WithKeys {
    /// The keys whose text values are changed; other values are left as they are. Required.
    #[serde(deserialize_with = "crate::event::keys")]
    pub with_keys: Vec<Key>,
}

/// `lowercase_string`.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct LowercaseString(pub WithKeys);

/// `uppercase_string`.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct UppercaseString(pub WithKeys);

/// `trim_string`: removes white space at both ends.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct TrimString(pub WithKeys);

fn check(with_keys: &WithKeys, path: &str, errors: &mut Errors) {
    if with_keys.with_keys.is_empty() {
        errors.at(
            &join(path, "with_keys"),
            format!("`{path}.with_keys` is empty; name the keys to change"),
        );
    }
}

impl ProcessorConfig for LowercaseString {
    fn check(&self, path: &str, errors: &mut Errors) {
        check(&self.0, path, errors);
    }
}

impl ProcessorConfig for UppercaseString {
    fn check(&self, path: &str, errors: &mut Errors) {
        check(&self.0, path, errors);
    }
}

impl ProcessorConfig for TrimString {
    fn check(&self, path: &str, errors: &mut Errors) {
        check(&self.0, path, errors);
    }
}
