//! `select_entries`, as Data Prepper's `SelectEntriesProcessor`: when `select_when` holds (or
//! is absent), the event keeps only `include_keys` (a nested key keeps its path) and the
//! top-level keys matching `include_keys_regex`.

use regex::Regex;
use serde_json::{Map, Value};
use sluice_config::processor::select_entries as config;
use sluice_event::{Event, Expression, Key};

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// `select_entries`, built: the config, with `include_keys_regex` compiled.
pub struct SelectEntries {
    config: config::SelectEntries,
    regexes: Vec<Regex>,
}

impl BuildProcessor for config::SelectEntries {
    type Processor = SelectEntries;

    fn when(&self) -> Option<&Expression> {
        self.select_when.as_ref()
    }

    fn build(&self) -> Result<SelectEntries, BuildError> {
        Ok(SelectEntries {
            config: self.clone(),
            regexes: self
                .include_keys_regex
                .iter()
                .map(|r| crate::whole(r))
                .collect(),
        })
    }
}

impl Apply for SelectEntries {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        let old = std::mem::replace(&mut event.data, Value::Object(Map::new()));
        for key in &self.config.include_keys {
            // A null or missing value is left out, as Data Prepper.
            if let Some(value) = key.get(&old).filter(|v| !v.is_null()) {
                // Cannot fail: the new event has only the objects made on the way.
                let _ = event.put(key, value.clone());
            }
        }
        if let (false, Value::Object(map)) = (self.regexes.is_empty(), old) {
            for (name, value) in map {
                if self.regexes.iter().any(|r| r.is_match(&name)) {
                    let _ = event.put(&Key::field(&name), value);
                }
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
    fn keeps_only_the_keys_named() {
        let p = processor(
            "select_entries:\n  include_keys: [key1, /n/a]\n  include_keys_regex: ['keep.*', 'ke']",
        );
        assert_eq!(
            run(
                &*p,
                json!({"key1": 1, "key2": 2, "n": {"a": 1, "b": 2}, "keep_me": 3})
            ),
            Some(json!({"key1": 1, "n": {"a": 1}, "keep_me": 3}))
        );
    }

    #[test]
    fn leaves_events_the_condition_does_not_select() {
        let p = processor("select_entries:\n  include_keys: [a]\n  select_when: '/t == \"x\"'");
        assert_eq!(
            run(&*p, json!({"a": 1, "t": "y"})),
            Some(json!({"a": 1, "t": "y"}))
        );
        assert_eq!(run(&*p, json!({"a": 1, "t": "x"})), Some(json!({"a": 1})));
    }
}
