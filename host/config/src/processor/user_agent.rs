//! `user_agent`: parses a user agent string into the browser, its version, the operating
//! system and the device, as Data Prepper's `UserAgentProcessorConfig`.

use serde::Deserialize;
use sluice_event::Key;

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - user_agent:
///     source: ua
///     target: user_agent
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserAgent {
    /// The key holding the user agent string. Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub source: Key,
    /// The key the parsed object is written to: `name`, `version`, `os` (`name`,
    /// `version`, `full`), `device` (`name`) and `original`. Default `user_agent`.
    #[serde(default = "user_agent", deserialize_with = "crate::event::key")]
    pub target: Key,
    /// Leave `original` (the user agent string) out of the parsed object. Default false.
    #[serde(default)]
    pub exclude_original: bool,
    /// How many parsed user agent strings are kept to be reused. Default 1000.
    #[serde(default = "default_cache_size")]
    pub cache_size: usize,
    /// Tags added to an event whose source is missing, `null` or not text. Default: none.
    #[serde(default)]
    pub tags_on_parse_failure: Vec<String>,
}

fn user_agent() -> Key {
    Key::unchecked("user_agent")
}

/// Data Prepper's `DEFAULT_CACHE_SIZE`.
const fn default_cache_size() -> usize {
    1000
}

impl ProcessorConfig for UserAgent {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.source.is_root() {
            let at = join(path, "source");
            errors.at(
                &at,
                format!("`{at}` is empty; write the key holding the user agent string"),
            );
        }
        if self.target.is_root() {
            let at = join(path, "target");
            errors.at(&at, format!("`{at}` is empty; write the key to write the parsed user agent to (default `user_agent`)"));
        }
    }
}
