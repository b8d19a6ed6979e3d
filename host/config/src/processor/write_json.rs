//! `write_json`: writes a value of the event as JSON text, as Data Prepper's
//! `WriteJsonProcessorConfig`.

use serde::Deserialize;
use sluice_event::Key;

use super::ProcessorConfig;
use crate::error::Errors;

/// ```yaml
/// - write_json:
///     source: details
///     target: details_json
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteJson {
    /// The key whose value (an object, a list, text, a number, ...) is written as JSON text;
    /// an event without it (or with `null`) is left as it was. Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub source: Key,
    /// Where the JSON text goes. Default: `source` (the value is replaced by its text).
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub target: Option<Key>,
}

impl WriteJson {
    /// Where the JSON text goes: `target`, else `source`.
    pub fn target(&self) -> &Key {
        self.target.as_ref().unwrap_or(&self.source)
    }
}

impl ProcessorConfig for WriteJson {
    fn check(&self, path: &str, errors: &mut Errors) {
        super::check_not_root(
            path,
            [
                ("source", Some(&self.source)),
                ("target", self.target.as_ref()),
            ],
            "a key of the event",
            errors,
        );
    }
}
