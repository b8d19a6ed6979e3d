//! `parse_xml`: parses XML text from a key into the event (its top level, or a
//! `destination`), as Data Prepper's `ParseXmlProcessorConfig` (the keys of `parse_json`
//! without `depth` and `normalize_keys`).

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use super::drop_events::HandleFailedEvents;
use super::parse_json::ParseJson;
use crate::error::Errors;

/// ```yaml
/// - parse_xml:
///     source: my_xml
///     destination: parsed
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParseXml {
    /// The key holding the XML text. Default `message`.
    #[serde(default = "message", deserialize_with = "crate::event::key")]
    pub source: Key,
    /// Where the parsed document goes, whole. Default: none, each of its keys goes to the
    /// event's top level. Cannot be empty, white space or `/`.
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub destination: Option<Key>,
    /// A JSON pointer into the parsed document (`/outer/inner`): only the value there is
    /// written, as `parse_json`'s `pointer`. Default: none.
    #[serde(default)]
    pub pointer: Option<String>,
    /// Replace keys (or the `destination`) that already exist. Default true.
    #[serde(default = "crate::yes")]
    pub overwrite_if_destination_exists: bool,
    /// Remove `source` after parsing. Default false.
    #[serde(default)]
    pub delete_source: bool,
    /// Tags added to an event whose text is not an XML document (the event is left as it
    /// was). Default: none.
    #[serde(default)]
    pub tags_on_failure: Vec<String>,
    /// `skip` (the default: the event goes on, the failure is logged) or `skip_silently`
    /// (not logged). `drop` and `drop_silently` are not allowed, as in Data Prepper.
    #[serde(default = "skip")]
    pub handle_failed_events: HandleFailedEvents,
    /// Parse only events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub parse_when: Option<Expression>,
}

fn message() -> Key {
    Key::unchecked("message")
}

const fn skip() -> HandleFailedEvents {
    HandleFailedEvents::Skip
}

impl ParseXml {
    /// The same keys as `parse_json` reads them (`depth` 0, `normalize_keys` false, as Data
    /// Prepper's `ParseXmlProcessorConfig` answers), for the runtime they share.
    pub fn as_parse_json(&self) -> ParseJson {
        ParseJson {
            source: self.source.clone(),
            destination: self.destination.clone(),
            pointer: self.pointer.clone(),
            depth: 0,
            overwrite_if_destination_exists: self.overwrite_if_destination_exists,
            delete_source: self.delete_source,
            tags_on_failure: self.tags_on_failure.clone(),
            handle_failed_events: self.handle_failed_events,
            normalize_keys: false,
            parse_when: self.parse_when.clone(),
        }
    }
}

impl ProcessorConfig for ParseXml {
    fn check(&self, path: &str, errors: &mut Errors) {
        // Its rules are parse_json's: `source`, `destination` and `handle_failed_events`.
        self.as_parse_json().check(path, errors);
    }
}
