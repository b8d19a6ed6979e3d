//! `delete_entries`, as Data Prepper's `DeleteEntryProcessor`: for each entry in order (the
//! top-level keys make one), when its `delete_when` holds (or is absent), removes each of
//! `with_keys`, and every top-level key matching a `with_keys_regex` that
//! `exclude_from_delete` does not name. With `iterate_on`, it does so in each element of that
//! list for which `delete_from_element_when` holds (evaluated on an event of the element's
//! data and the event's metadata), and writes the list back. A value at `iterate_on` that is
//! not a list of objects stops the event's remaining entries (Data Prepper's exception); a
//! missing one skips the entry.

use regex::Regex;
use serde_json::Value;
use sluice_config::processor::delete_entries::{self as config, DeleteEntry};
use sluice_event::{Event, Key};

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate, when};

/// `delete_entries`, built: its entries (the top-level keys make one).
pub struct DeleteEntries {
    entries: Vec<Entry>,
}

/// One entry: its config, with `with_keys_regex` compiled.
struct Entry {
    config: DeleteEntry,
    regexes: Vec<Regex>,
}

impl BuildProcessor for config::DeleteEntries {
    type Processor = DeleteEntries;

    fn build(&self) -> Result<DeleteEntries, BuildError> {
        Ok(DeleteEntries {
            entries: self
                .all_entries()
                .into_iter()
                .map(|e| Entry {
                    regexes: e.with_keys_regex.iter().map(|r| crate::whole(r)).collect(),
                    config: e,
                })
                .collect(),
        })
    }
}

impl Apply for DeleteEntries {
    fn apply(&self, event: &mut Event, name: &'static str) -> Result<Fate, Failure> {
        for entry in &self.entries {
            if !when(name, entry.config.delete_when.as_ref(), event) {
                continue;
            }
            match &entry.config.iterate_on {
                None => entry.delete(&mut event.data),
                Some(on) => entry
                    .delete_each(event, on, name)
                    .map_err(|reason| format!("{reason}; the event's remaining entries skipped"))?,
            }
        }
        Ok(Fate::Keep)
    }
}

impl Entry {
    /// Deletes the entry's keys from `data` (an object).
    fn delete(&self, data: &mut Value) {
        for key in &self.config.with_keys {
            key.delete(data);
        }
        if !self.regexes.is_empty()
            && let Some(map) = data.as_object_mut()
        {
            let exclude = &self.config.exclude_from_delete;
            map.retain(|name, _| {
                !self.regexes.iter().any(|r| r.is_match(name))
                    || exclude.iter().any(|k| k.segments() == [name.as_str()])
            });
        }
    }

    /// `iterate_on`: deletes from each element of the list at `on` that
    /// `delete_from_element_when` selects.
    fn delete_each(
        &self,
        event: &mut Event,
        on: &Key,
        processor: &'static str,
    ) -> Result<(), String> {
        let list = match event.get(on) {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(list)) if list.iter().all(Value::is_object) => list.clone(),
            Some(_) => return Err(format!("`{on}` is not a list of objects")),
        };
        let mut out = Vec::with_capacity(list.len());
        for item in list {
            let mut element = Event::new(item, event.metadata.clone());
            if when(
                processor,
                self.config.delete_from_element_when.as_ref(),
                &element,
            ) {
                self.delete(&mut element.data);
            }
            out.push(element.data);
        }
        event.put(on, Value::Array(out)).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{invalid, processor, run};

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

    /// delete-entries.md, "Combining multiple deletion rules".
    #[test]
    fn the_documented_entries_example() {
        let p = processor(
            "delete_entries:\n  entries:\n    - with_keys: [ \"message\" ]\n    - with_keys_regex: [ \"^tes.*\" ]\n      exclude_from_delete: [ \"test\" ]",
        );
        assert_eq!(
            run(
                &*p,
                json!({"message": "hello", "message2": "goodbye", "test": "friends", "test2": "are", "test3": "kind"})
            ),
            Some(json!({"message2": "goodbye", "test": "friends"}))
        );
    }

    #[test]
    fn entries_have_their_own_conditions_and_may_mix_keys_and_regexes() {
        let p = processor(
            "delete_entries:\n  entries:\n    - with_keys: [a]\n      with_keys_regex: ['x.*']\n    - with_keys: [b]\n      delete_when: '/c == 1'",
        );
        assert_eq!(
            run(&*p, json!({"a": 1, "x1": 1, "b": 1, "c": 2})),
            Some(json!({"b": 1, "c": 2}))
        );
        assert_eq!(run(&*p, json!({"b": 1, "c": 1})), Some(json!({"c": 1})));
    }

    #[test]
    fn iterate_on_deletes_in_the_elements_a_condition_selects() {
        let p = processor(
            "delete_entries:\n  with_keys: [secret, /n/x]\n  iterate_on: users\n  delete_from_element_when: '/role != \"admin\"'",
        );
        assert_eq!(
            run(
                &*p,
                json!({"secret": 0, "users": [{"role": "admin", "secret": 1}, {"role": "user", "secret": 2, "n": {"x": 1, "y": 2}}]})
            ),
            Some(
                json!({"secret": 0, "users": [{"role": "admin", "secret": 1}, {"role": "user", "n": {"y": 2}}]})
            )
        );
        let p = processor(
            "delete_entries:\n  entries:\n    - with_keys_regex: ['tmp.*']\n      iterate_on: /l",
        );
        assert_eq!(
            run(&*p, json!({"tmp": 1, "l": [{"tmp1": 1, "k": 2}, {}]})),
            Some(json!({"tmp": 1, "l": [{"k": 2}, {}]}))
        );
        // Missing or empty: unchanged.
        assert_eq!(run(&*p, json!({"a": 1})), Some(json!({"a": 1})));
        assert_eq!(run(&*p, json!({"l": []})), Some(json!({"l": []})));
    }

    #[test]
    fn a_list_of_non_objects_stops_the_remaining_entries() {
        let p = processor(
            "delete_entries:\n  entries:\n    - with_keys: [a]\n    - with_keys: [k]\n      iterate_on: l\n    - with_keys: [b]",
        );
        assert_eq!(
            run(&*p, json!({"a": 1, "b": 2, "l": [{"k": 1}, "text"]})),
            Some(json!({"b": 2, "l": [{"k": 1}, "text"]}))
        );
    }

    #[test]
    fn entries_and_the_top_level_keys_do_not_mix() {
        let err = invalid("delete_entries:\n  with_keys: [a]\n  entries:\n    - with_keys: [b]");
        assert!(err.contains("takes only one of"), "{err}");
        let err = invalid("delete_entries:\n  with_keys: [a]\n  with_keys_regex: [b]");
        assert!(err.contains("put them in one item of `entries`"), "{err}");
        let err =
            invalid("delete_entries:\n  delete_when: '/a == 1'\n  entries:\n    - with_keys: [b]");
        assert!(
            err.contains("delete_when` does not apply with `entries`"),
            "{err}"
        );
        let err = invalid(
            "delete_entries:\n  entries:\n    - with_keys: [b]\n      delete_from_element_when: '/a == 1'",
        );
        assert!(
            err.contains("entries[0].delete_from_element_when` only applies with `iterate_on`"),
            "{err}"
        );
        let err = invalid("delete_entries:\n  entries:\n    - delete_when: '/a == 1'");
        assert!(err.contains("entries[0]` needs `with_keys`"), "{err}");
    }
}
