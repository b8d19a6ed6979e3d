//! `replace_string`, as Data Prepper's `ReplaceStringProcessor`: for each entry in order, when
//! the value at `source` is text and `replace_when` holds, every occurrence of `from` in it is
//! replaced by `to` (Java's `String.replace`: literal text, left to right, an empty `from`
//! matching between every two characters). Values that are not text are left as they are.

use serde_json::Value;
use sluice_config::processor::replace_string as config;
use sluice_event::Event;

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate, when};

/// `replace_string`, built: its config as is.
pub struct ReplaceString {
    config: config::ReplaceString,
}

impl BuildProcessor for config::ReplaceString {
    type Processor = ReplaceString;

    fn build(&self) -> Result<ReplaceString, BuildError> {
        Ok(ReplaceString {
            config: self.clone(),
        })
    }
}

impl Apply for ReplaceString {
    fn apply(&self, event: &mut Event, name: &'static str) -> Result<Fate, Failure> {
        for entry in &self.config.entries {
            if !matches!(event.get(&entry.source), Some(Value::String(_)))
                || !when(name, entry.replace_when.as_ref(), event)
            {
                continue;
            }
            if let Some(Value::String(text)) = event.get_mut(&entry.source)
                && text.contains(&entry.from)
            {
                *text = text.replace(&entry.from, &entry.to);
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
    fn replaces_literal_text() {
        let p = processor(
            "replace_string:\n  entries:\n    - source: message\n      from: 'a.'\n      to: '$1'\n    - source: n\n      from: '1'\n      to: '2'",
        );
        assert_eq!(
            run(&*p, json!({"message": "a.b:ab:a.", "n": 1})),
            Some(json!({"message": "$1b:ab:$1", "n": 1}))
        );
        let p = processor(
            "replace_string:\n  entries:\n    - source: m\n      from: ''\n      to: '-'",
        );
        assert_eq!(run(&*p, json!({"m": "ab"})), Some(json!({"m": "-a-b-"})));
    }

    #[test]
    fn replace_when_selects_per_entry() {
        let p = processor(
            "replace_string:\n  entries:\n    - source: m\n      from: x\n      to: y\n      replace_when: '/go == true'\n    - source: k\n      from: x\n      to: z",
        );
        assert_eq!(
            run(&*p, json!({"m": "xx", "k": "x", "go": false})),
            Some(json!({"m": "xx", "k": "z", "go": false}))
        );
        assert_eq!(
            run(&*p, json!({"m": "xx", "go": true})),
            Some(json!({"m": "yy", "go": true}))
        );
    }

    #[test]
    fn every_key_of_an_entry_is_required() {
        let e = invalid("replace_string:\n  entries:\n    - source: m\n      from: x");
        assert!(e.contains("missing field `to`"), "{e}");
        let e = invalid("replace_string:\n  entries: []");
        assert!(e.contains("replace_string.entries` is empty"), "{e}");
    }
}
