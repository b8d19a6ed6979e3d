//! `split_string`, as Data Prepper's `SplitStringProcessor`: for each entry in order, when its
//! `split_when` holds, the text at `source` becomes the list of its parts between `delimiter`
//! (or matches of `delimiter_regex`). As Java's `Pattern.split`, empty parts at the end are
//! dropped.

use regex::Regex;
use serde_json::Value;
use sluice_config::processor::split_string::{self as config, SplitEntry};
use sluice_event::Event;

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate, when};

/// `split_string`, built: its entries.
pub struct SplitString {
    entries: Vec<Entry>,
}

/// One entry: its config, with its delimiter as a regular expression.
struct Entry {
    config: SplitEntry,
    at: Regex,
}

impl BuildProcessor for config::SplitString {
    type Processor = SplitString;

    fn build(&self) -> Result<SplitString, BuildError> {
        Ok(SplitString {
            entries: self
                .entries
                .iter()
                .map(|e| {
                    let pattern = match (&e.delimiter, &e.delimiter_regex) {
                        (Some(d), _) => regex::escape(d),
                        (None, Some(r)) => r.clone(),
                        (None, None) => unreachable!("checked: one of the two"),
                    };
                    Entry {
                        config: e.clone(),
                        at: Regex::new(&pattern).expect("checked at validate"),
                    }
                })
                .collect(),
        })
    }
}

impl Apply for SplitString {
    fn apply(&self, event: &mut Event, name: &'static str) -> Result<Fate, Failure> {
        for entry in &self.entries {
            if !when(name, entry.config.split_when.as_ref(), event) {
                continue;
            }
            if let Some(value @ Value::String(_)) = event.get_mut(&entry.config.source) {
                let Value::String(text) = value else {
                    unreachable!("matched above")
                };
                let mut parts: Vec<&str> = entry.at.split(text).collect();
                while parts.len() > 1 && parts.last() == Some(&"") {
                    parts.pop();
                }
                let list = parts
                    .into_iter()
                    .map(|p| Value::String(p.to_owned()))
                    .collect();
                *value = Value::Array(list);
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
    fn splits_text_into_a_list() {
        let p = processor("split_string:\n  entries:\n    - source: message\n      delimiter: ','");
        assert_eq!(
            run(&*p, json!({"message": "hello,world,,"})),
            Some(json!({"message": ["hello", "world"]}))
        );
        let p =
            processor("split_string:\n  entries:\n    - source: m\n      delimiter_regex: '\\s+'");
        assert_eq!(
            run(&*p, json!({"m": "a  b\tc"})),
            Some(json!({"m": ["a", "b", "c"]}))
        );
    }
}
