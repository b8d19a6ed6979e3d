//! `grok`: captures named parts of text with grok patterns (`%{IPORHOST:clientip}`), as Data
//! Prepper's `GrokProcessorConfig`. The patterns are compiled when the pipeline is checked
//! (`sluice validate`), by the processors crate: an unknown pattern or a bad regular
//! expression is an error naming the `match` key.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde::de::Deserializer;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - grok:
///     match:
///       message: ['%{COMMONAPACHELOG}']
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grok {
    /// Which key's text to match against which patterns, tried in order: `key: [patterns]`.
    /// Required.
    #[serde(deserialize_with = "ordered_patterns")]
    pub r#match: Vec<(Key, Vec<String>)>,
    /// Where the captures go (a key replaced by an object of them). Default: the event's top
    /// level.
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub target_key: Option<Key>,
    /// Stop at the first pattern that captures anything. Default true.
    #[serde(default = "crate::yes")]
    pub break_on_match: bool,
    /// Keep the named captures that took no part in the match, as `null`. Default false.
    #[serde(default)]
    pub keep_empty_captures: bool,
    /// Keep only named captures (`%{WORD:name}`), not `%{WORD}`. Default true.
    #[serde(default = "crate::yes")]
    pub named_captures_only: bool,
    /// Keys a capture replaces; at any other existing key a capture makes a list of the old and
    /// new values. Default: none.
    #[serde(default)]
    pub keys_to_overwrite: Vec<String>,
    /// Patterns of your own: `NAME: regex`, usable as `%{NAME}`.
    #[serde(default)]
    pub pattern_definitions: BTreeMap<String, String>,
    /// Folders of pattern files (lines `NAME regex`), read at startup.
    #[serde(default)]
    pub patterns_directories: Vec<PathBuf>,
    /// Which files of `patterns_directories` to read. Default `*`.
    #[serde(default = "all_files")]
    pub patterns_files_glob: String,
    /// The longest one event may take to match, in milliseconds; past it the event is tagged
    /// with `tags_on_timeout` and left as it was. 0: no limit. Default 30000.
    #[serde(default = "default_timeout")]
    pub timeout_millis: u64,
    /// Tags added to an event no pattern matched.
    #[serde(default)]
    pub tags_on_match_failure: Vec<String>,
    /// Tags added to an event whose matching timed out. Default: `tags_on_match_failure`.
    #[serde(default)]
    pub tags_on_timeout: Vec<String>,
    /// Match only events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub grok_when: Option<Expression>,
    /// Adds metadata attributes `_total_grok_patterns_attempted` and
    /// `_total_grok_processing_time` (milliseconds), summed over the grok processors an event
    /// went through. Default false.
    #[serde(default)]
    pub performance_metadata: bool,
}

fn all_files() -> String {
    "*".to_owned()
}

/// Data Prepper's default (`GrokProcessorConfig.DEFAULT_TIMEOUT_MILLIS`).
const fn default_timeout() -> u64 {
    30_000
}

/// `match` in the order written: the patterns of the first key are tried first.
fn ordered_patterns<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(Key, Vec<String>)>, D::Error> {
    use serde::de::Error as _;
    let map = serde_yaml::Mapping::deserialize(d)?;
    map.into_iter()
        .map(|(k, v)| {
            let k = k
                .as_str()
                .ok_or_else(|| D::Error::custom("a `match` key must be text: the key to match"))?;
            let key = Key::parse(k).map_err(D::Error::custom)?;
            let patterns = match v {
                serde_yaml::Value::String(one) => vec![one],
                other => Vec::<String>::deserialize(other).map_err(|e| {
                    D::Error::custom(format!("`{k}` takes a list of grok patterns: {e}"))
                })?,
            };
            Ok((key, patterns))
        })
        .collect()
}

impl ProcessorConfig for Grok {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.r#match.is_empty() || self.r#match.iter().any(|(_, p)| p.is_empty()) {
            errors.at(
                &join(path, "match"),
                format!("`{path}.match` needs a key and its patterns, e.g. `message: ['%{{COMMONAPACHELOG}}']`"),
            );
        }
    }
}
