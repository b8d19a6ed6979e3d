//! `lowercase_string`, `uppercase_string`, `trim_string`, as Data Prepper's
//! `AbstractStringProcessor`s: the text at each of `with_keys` is changed; a value that is not
//! text, or a missing key, is left as it is.

use serde_json::Value;
use sluice_config::processor::with_keys as config;
use sluice_event::Event;

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// The three, built: the block they share, and the change each makes.
pub struct WithKeys {
    config: config::WithKeys,
    change: fn(&str) -> String,
}

impl BuildProcessor for config::LowercaseString {
    type Processor = WithKeys;

    fn build(&self) -> Result<WithKeys, BuildError> {
        Ok(WithKeys {
            config: self.0.clone(),
            change: str::to_lowercase,
        })
    }
}

impl BuildProcessor for config::UppercaseString {
    type Processor = WithKeys;

    fn build(&self) -> Result<WithKeys, BuildError> {
        Ok(WithKeys {
            config: self.0.clone(),
            change: str::to_uppercase,
        })
    }
}

impl BuildProcessor for config::TrimString {
    type Processor = WithKeys;

    fn build(&self) -> Result<WithKeys, BuildError> {
        Ok(WithKeys {
            config: self.0.clone(),
            // Java's `String.trim`: code points up to U+0020 at either end.
            change: |s| s.trim_matches(|c: char| c <= ' ').to_owned(),
        })
    }
}

impl Apply for WithKeys {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        for key in &self.config.with_keys {
            if let Some(Value::String(text)) = event.get_mut(key) {
                *text = (self.change)(text);
            }
        }
        Ok(Fate::Keep)
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
