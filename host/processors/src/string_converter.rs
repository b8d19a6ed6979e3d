//! `string_converter`, as Data Prepper's `StringProcessor`: every text value at the event's top
//! level is uppercased (`upper_case: true`, the default) or lowercased, with Unicode's full case
//! mapping as Java's `toUpperCase()` (`ß` becomes `SS`). Values in nested objects and lists,
//! and values of other types, are left as they are; the metadata is kept. It has no condition
//! and no `tags_on_failure` in Data Prepper, nor here.

use serde_json::Value;
use sluice_config::processor::string_converter as config;
use sluice_event::Event;

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// `string_converter`, built: which way it converts.
pub struct StringConverter {
    upper_case: bool,
}

impl BuildProcessor for config::StringConverter {
    type Processor = StringConverter;

    fn build(&self) -> Result<StringConverter, BuildError> {
        Ok(StringConverter {
            upper_case: self.upper_case,
        })
    }
}

impl Apply for StringConverter {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        let Some(map) = event.data.as_object_mut() else {
            return Ok(Fate::Keep);
        };
        for value in map.values_mut() {
            if let Value::String(text) = value {
                *text = if self.upper_case {
                    text.to_uppercase()
                } else {
                    text.to_lowercase()
                };
            }
        }
        Ok(Fate::Keep)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{invalid, processor, run};

    #[test]
    fn converts_the_top_level_text_only() {
        let input = json!({"a": "Straße", "n": 5, "o": {"b": "x"}, "l": ["y"]});
        let p = processor("string_converter:");
        assert_eq!(
            run(&*p, input.clone()),
            Some(json!({"a": "STRASSE", "n": 5, "o": {"b": "x"}, "l": ["y"]}))
        );
        let p = processor("string_converter:\n  upper_case: false");
        assert_eq!(
            run(&*p, json!({"a": "ÀB", "o": {"b": "X"}})),
            Some(json!({"a": "àb", "o": {"b": "X"}}))
        );
    }

    #[test]
    fn its_one_key_is_checked() {
        let e = invalid("string_converter:\n  uppercase: true");
        assert!(e.contains("unknown field `uppercase`"), "{e}");
        let e = invalid("string_converter:\n  upper_case: yes please");
        assert!(e.contains("upper_case"), "{e}");
    }
}
