//! `delete_entries`, as Data Prepper's `DeleteEntryProcessor`: when `delete_when` holds (or
//! is absent), removes each of `with_keys`, and every top-level key matching a
//! `with_keys_regex` that `exclude_from_delete` does not name.

use regex::Regex;
use sluice_config::processor::delete_entries::DeleteEntries;
use sluice_event::{Event, Expression, Key};

use crate::{BuildProcessor, Fate, Processor, when};

struct Delete {
    keys: Vec<Key>,
    regexes: Vec<Regex>,
    exclude: Vec<Key>,
    when: Option<Expression>,
}

impl BuildProcessor for DeleteEntries {
    fn build(&self) -> Result<Box<dyn Processor>, crate::BuildError> {
        Ok(Box::new(Delete {
            keys: self.with_keys.clone(),
            regexes: self
                .with_keys_regex
                .iter()
                .map(|r| crate::whole(r))
                .collect(),
            exclude: self.exclude_from_delete.clone(),
            when: self.delete_when.clone(),
        }))
    }
}

impl Processor for Delete {
    fn name(&self) -> &'static str {
        "delete_entries"
    }

    fn process(&self, event: &mut Event) -> Fate {
        if !when(self.when.as_ref(), event) {
            return Fate::Keep;
        }
        for key in &self.keys {
            event.delete(key);
        }
        if !self.regexes.is_empty()
            && let Some(map) = event.data.as_object_mut()
        {
            let exclude = &self.exclude;
            map.retain(|name, _| {
                !self.regexes.iter().any(|r| r.is_match(name))
                    || exclude.iter().any(|k| k.segments() == [name.as_str()])
            });
        }
        Fate::Keep
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{processor, run};

    #[test]
    fn deletes_keys_nested_keys_and_regex_matches() {
        let p = processor("delete_entries:\n  with_keys: [message, /a/b]");
        assert_eq!(
            run(&*p, json!({"message": "x", "a": {"b": 1, "c": 2}, "k": 3})),
            Some(json!({"a": {"c": 2}, "k": 3}))
        );
        let p = processor(
            "delete_entries:\n  with_keys_regex: ['tmp_.*']\n  exclude_from_delete: [tmp_keep]",
        );
        assert_eq!(
            run(&*p, json!({"tmp_a": 1, "tmp_keep": 2, "b": 3})),
            Some(json!({"tmp_keep": 2, "b": 3}))
        );
    }

    #[test]
    fn deletes_only_when_the_condition_holds() {
        let p = processor("delete_entries:\n  with_keys: [m]\n  delete_when: '/m == \"---\"'");
        assert_eq!(run(&*p, json!({"m": "---"})), Some(json!({})));
        assert_eq!(run(&*p, json!({"m": "x"})), Some(json!({"m": "x"})));
    }
}
