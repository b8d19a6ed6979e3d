//! `parse_json`: parses JSON text from a key into the event (its top level, or a
//! `destination`), as Data Prepper's `ParseJsonProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use super::drop_events::HandleFailedEvents;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - parse_json:
///     source: message
///     destination: parsed
///     tags_on_failure: [json_parse_failure]
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParseJson {
    /// The key holding the JSON text (a number or boolean is read as its text). Default
    /// `message`.
    #[serde(default = "message", deserialize_with = "crate::event::key")]
    pub source: Key,
    /// Where the parsed object goes, whole. Default: none, each of its keys goes to the
    /// event's top level. Cannot be empty, white space or `/`.
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub destination: Option<Key>,
    /// A JSON pointer into the parsed object (`/outer/inner`, `/list/0`): only the value there
    /// is written, under the pointer's last segment (`inner`; `list.0` for a list index; the
    /// whole pointer with `/` as `.` when the event already has that key and there is no
    /// `destination`). A pointer that is not in the object writes the whole object. Default:
    /// none.
    #[serde(default)]
    pub pointer: Option<String>,
    /// How many levels of objects are kept as objects: objects deeper than this become their
    /// JSON text. 0 to 10; 0 (the default) keeps every level.
    #[serde(default)]
    pub depth: u8,
    /// Replace keys (or the `destination`) that already exist. Default true.
    #[serde(default = "crate::yes")]
    pub overwrite_if_destination_exists: bool,
    /// Remove `source` after parsing. Default false.
    #[serde(default)]
    pub delete_source: bool,
    /// Tags added to an event whose text is not a JSON object (the event is left as it was).
    /// Default: none.
    #[serde(default)]
    pub tags_on_failure: Vec<String>,
    /// `skip` (the default: the event goes on, the failure is logged) or `skip_silently`
    /// (not logged). `drop` and `drop_silently` are not allowed, as in Data Prepper.
    #[serde(default = "skip")]
    pub handle_failed_events: HandleFailedEvents,
    /// Replace the characters a key cannot have with `_` in the parsed object's keys (nested
    /// ones; at the top level too when there is a `destination`). Default false.
    #[serde(default)]
    pub normalize_keys: bool,
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

impl ProcessorConfig for ParseJson {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.source.as_str().trim().is_empty() {
            errors.at(
                &join(path, "source"),
                format!("`{path}.source` is empty; write the key holding the JSON text"),
            );
        }
        if let Some(destination) = &self.destination {
            let text = destination.as_str().trim();
            if text.is_empty() || text == "/" {
                errors.at(
                    &join(path, "destination"),
                    format!("`{path}.destination` cannot be empty, white space or `/`; leave it out to write to the top level"),
                );
            }
        }
        if self.depth > 10 {
            errors.at(
                &join(path, "depth"),
                format!(
                    "`{path}.depth` is {}; it is 0 (every level) to 10",
                    self.depth
                ),
            );
        }
        if self.handle_failed_events.drops() {
            errors.at(
                &join(path, "handle_failed_events"),
                format!("`{path}.handle_failed_events` must be `skip` or `skip_silently`"),
            );
        }
    }
}
