//! `decompress`: turns base64 text of compressed bytes back into the text, as Data Prepper's
//! `DecompressProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - decompress:
///     keys: ["compressed_log"]
///     type: gzip
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decompress {
    /// The keys whose values (base64 text of compressed bytes) are replaced by the
    /// decompressed text (UTF-8). Required, at least one.
    #[serde(deserialize_with = "crate::event::keys")]
    pub keys: Vec<Key>,
    /// The compression: `gzip` (the only one Data Prepper has). Required.
    pub r#type: DecompressionType,
    /// Tags added to an event when a key cannot be decoded or decompressed (its value is
    /// left as it was). Default `["_decompression_failure"]`.
    #[serde(default = "default_tags")]
    pub tags_on_failure: Vec<String>,
    /// Decompress only events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub decompress_when: Option<Expression>,
}

/// `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecompressionType {
    Gzip,
}

/// Data Prepper's default `tags_on_failure`.
fn default_tags() -> Vec<String> {
    vec!["_decompression_failure".to_owned()]
}

impl ProcessorConfig for Decompress {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.keys.is_empty() {
            let at = join(path, "keys");
            errors.at(&at, format!("`{at}` is empty; list the keys to decompress"));
        }
        for (i, key) in self.keys.iter().enumerate() {
            if key.is_root() {
                let at = format!("{}[{i}]", join(path, "keys"));
                errors.at(
                    &at,
                    format!("`{at}` cannot be empty: name a key to decompress"),
                );
            }
        }
    }
}
