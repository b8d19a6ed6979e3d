//! `lowercase_string`, `uppercase_string`, `trim_string`, as Data Prepper's
//! `AbstractStringProcessor`s: the text at each of `with_keys` is changed; a value that is not
//! text, or a missing key, is left as it is.

use serde_json::Value;
use sluice_config::processor::with_keys::{LowercaseString, TrimString, UppercaseString};
use sluice_event::{Event, Key};

use crate::{BuildProcessor, Fate, Processor};

struct WithKeys {
    name: &'static str,
    keys: Vec<Key>,
    change: fn(&str) -> String,
}

impl BuildProcessor for LowercaseString {
    fn build(&self) -> Result<Box<dyn Processor>, crate::BuildError> {
        Ok(Box::new(WithKeys {
            name: "lowercase_string",
            keys: self.0.with_keys.clone(),
            change: str::to_lowercase,
        }))
    }
}

impl BuildProcessor for UppercaseString {
    fn build(&self) -> Result<Box<dyn Processor>, crate::BuildError> {
        Ok(Box::new(WithKeys {
            name: "uppercase_string",
            keys: self.0.with_keys.clone(),
            change: str::to_uppercase,
        }))
    }
}

impl BuildProcessor for TrimString {
    fn build(&self) -> Result<Box<dyn Processor>, crate::BuildError> {
        Ok(Box::new(WithKeys {
            name: "trim_string",
            keys: self.0.with_keys.clone(),
            // Java's `String.trim`: code points up to U+0020 at either end.
            change: |s| s.trim_matches(|c: char| c <= ' ').to_owned(),
        }))
    }
}

impl Processor for WithKeys {
    fn name(&self) -> &'static str {
        self.name
    }

    fn process(&self, event: &mut Event) -> Fate {
        for key in &self.keys {
            if let Some(Value::String(text)) = event.get_mut(key) {
                *text = (self.change)(text);
            }
        }
        Fate::Keep
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{processor, run};

    #[test]
    fn changes_text_and_leaves_other_values() {
        let p = processor("lowercase_string:\n  with_keys: [a, /n/b, c]");
        assert_eq!(
            run(&*p, json!({"a": "MiXed", "n": {"b": "ÀB"}, "c": 5})),
            Some(json!({"a": "mixed", "n": {"b": "àb"}, "c": 5}))
        );
        let p = processor("uppercase_string:\n  with_keys: [a]");
        assert_eq!(run(&*p, json!({"a": "abc"})), Some(json!({"a": "ABC"})));
        let p = processor("trim_string:\n  with_keys: [a]");
        assert_eq!(
            run(&*p, json!({"a": " \t abc \n"})),
            Some(json!({"a": "abc"}))
        );
    }
}
