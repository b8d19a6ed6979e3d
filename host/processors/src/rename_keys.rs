//! `rename_keys`, as Data Prepper's `RenameKeyProcessor`: for each entry in order, when its
//! `rename_when` holds, the value at `from_key` (or at each top-level key matching
//! `from_key_regex`) moves to `to_key`, unless `to_key` exists and
//! `overwrite_if_to_key_exists` is false.
//!
//! `transform_key` renames every key instead, as Data Prepper's `transformEvent`: in each
//! object, key by key in order, its nested objects first (not inside lists), the value moves
//! to the transformed key (replacing, in its place, a key of that name). A key that is not a
//! valid key, or has a `/`, is left as it is (Data Prepper cannot read it as a path).

use regex::Regex;
use serde_json::{Map, Value};
use sluice_config::processor::rename_keys::{self as config, RenameEntry, TransformKey};
use sluice_event::{Event, Key};

use crate::{Apply, BuildError, BuildProcessor, Failure, Failures, Fate, when};

/// `rename_keys`, built: its entries, and `transform_key`.
pub struct RenameKeys {
    entries: Vec<Entry>,
    transform: TransformKey,
}

/// One entry: its config, with what it renames read once.
struct Entry {
    config: RenameEntry,
    from: From,
}

/// What an entry renames: a key, or the top-level keys a regular expression matches.
enum From {
    Key(Key),
    Regex(Regex),
}

impl BuildProcessor for config::RenameKeys {
    type Processor = RenameKeys;

    fn build(&self) -> Result<RenameKeys, BuildError> {
        Ok(RenameKeys {
            entries: self.entries.iter().map(entry).collect(),
            transform: self.transform_key,
        })
    }
}

fn entry(e: &RenameEntry) -> Entry {
    let from = match (&e.from_key, &e.from_key_regex) {
        (Some(key), _) => From::Key(key.clone()),
        (None, Some(regex)) => From::Regex(crate::whole(regex)),
        (None, None) => unreachable!("checked: one of from_key and from_key_regex"),
    };
    Entry {
        config: e.clone(),
        from,
    }
}

impl Apply for RenameKeys {
    fn apply(&self, event: &mut Event, name: &'static str) -> Result<Fate, Failure> {
        if self.transform != TransformKey::None {
            if let Some(map) = event.data.as_object_mut() {
                transform(map, self.transform);
            }
            return Ok(Fate::Keep);
        }
        // A rename that fails is skipped; the rest still apply.
        let mut failures = Failures::default();
        for entry in &self.entries {
            if !when(name, entry.config.rename_when.as_ref(), event) {
                continue;
            }
            match &entry.from {
                From::Key(from) => {
                    if let Err(reason) = entry.rename(event, from) {
                        failures.add(reason);
                    }
                }
                From::Regex(regex) => {
                    let matching: Vec<Key> = event
                        .data
                        .as_object()
                        .map(|m| {
                            m.keys()
                                .filter(|k| regex.is_match(k))
                                .map(|k| Key::field(k))
                                .collect()
                        })
                        .unwrap_or_default();
                    for from in &matching {
                        if let Err(reason) = entry.rename(event, from) {
                            failures.add(reason);
                        }
                    }
                }
            }
        }
        failures.into_result()
    }
}

impl Entry {
    fn rename(&self, event: &mut Event, from: &Key) -> Result<(), String> {
        let to = &self.config.to_key;
        if from.segments() == to.segments() || !event.contains(from) {
            return Ok(());
        }
        if event.contains(to) && !self.config.overwrite_if_to_key_exists {
            return Ok(());
        }
        // A key through a list (`/list/0`) can be read but not deleted: nothing to move.
        let Some(value) = event.delete(from) else {
            return Ok(());
        };
        if let Err(e) = event.put(to, value.clone()) {
            // Put it back: a rename that cannot complete changes nothing.
            let _ = event.put(from, value);
            return Err(format!("`{from}` not renamed to `{to}`: {e}"));
        }
        Ok(())
    }
}

/// `transform_key` on `map` and the objects in it.
fn transform(map: &mut Map<String, Value>, how: TransformKey) {
    let names: Vec<String> = map.keys().cloned().collect();
    for name in names {
        if let Some(Value::Object(child)) = map.get_mut(&name) {
            transform(child, how);
        }
        if name.contains('/') || Key::parse(&name).is_err() {
            continue;
        }
        // Valid keys are ASCII, so Java's `toLowerCase`/`toUpperCase` are ASCII's here.
        let renamed = match how {
            TransformKey::None => continue,
            TransformKey::Lowercase => name.to_ascii_lowercase(),
            TransformKey::Uppercase => name.to_ascii_uppercase(),
            TransformKey::Capitalize => {
                let mut chars = name.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                    // Data Prepper's `substring(0, 1)` throws: the key is left.
                    None => continue,
                }
            }
        };
        // Data Prepper: `delete(name)` then `put(renamed, value)`; a key already named
        // `renamed` keeps its place and takes the value.
        if let Some(value) = map.shift_remove(&name) {
            map.insert(renamed, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{invalid, processor, run};

    #[test]
    fn renames_unless_the_target_exists() {
        let p = processor(
            "rename_keys:\n  entries:\n    - from_key: message\n      to_key: newMessage",
        );
        assert_eq!(
            run(&*p, json!({"message": "x"})),
            Some(json!({"newMessage": "x"}))
        );
        assert_eq!(
            run(&*p, json!({"message": "x", "newMessage": 1})),
            Some(json!({"message": "x", "newMessage": 1}))
        );
        let p = processor(
            "rename_keys:\n  entries:\n    - from_key: message\n      to_key: newMessage\n      overwrite_if_to_key_exists: true",
        );
        assert_eq!(
            run(&*p, json!({"message": "x", "newMessage": 1})),
            Some(json!({"newMessage": "x"}))
        );
    }

    #[test]
    fn a_key_inside_a_list_is_left_where_it_is() {
        let p = processor("rename_keys:\n  entries:\n    - from_key: /l/0\n      to_key: x");
        assert_eq!(run(&*p, json!({"l": [1]})), Some(json!({"l": [1]})));
    }

    #[test]
    fn entries_chain_in_order_and_regexes_rename_top_level_keys() {
        let p = processor(
            "rename_keys:\n  entries:\n    - from_key: a\n      to_key: b\n    - from_key: b\n      to_key: /c/d",
        );
        assert_eq!(run(&*p, json!({"a": 1})), Some(json!({"c": {"d": 1}})));
        let p =
            processor("rename_keys:\n  entries:\n    - from_key_regex: 'old.*'\n      to_key: new");
        assert_eq!(
            run(&*p, json!({"old1": 1, "x": 2})),
            Some(json!({"x": 2, "new": 1}))
        );
    }

    #[test]
    fn transform_key_renames_nested_keys_not_in_lists() {
        let p = processor("rename_keys:\n  transform_key: lowercase");
        assert_eq!(
            run(&*p, json!({"A": {"BcD": 1, "L": [{"X": 1}]}, "e": 2})),
            Some(json!({"a": {"bcd": 1, "l": [{"X": 1}]}, "e": 2}))
        );
        let p = processor("rename_keys:\n  transform_key: uppercase");
        assert_eq!(
            run(&*p, json!({"ab": {"cd": 1}})),
            Some(json!({"AB": {"CD": 1}}))
        );
        let p = processor("rename_keys:\n  transform_key: capitalize");
        assert_eq!(
            run(&*p, json!({"abc": 1, "xY": {"zz": 2}, "": 3})),
            Some(json!({"": 3, "Abc": 1, "XY": {"Zz": 2}}))
        );
        let p = processor(
            "rename_keys:\n  transform_key: none\n  entries:\n    - from_key: a\n      to_key: b",
        );
        assert_eq!(
            run(&*p, json!({"A": 1, "a": 2})),
            Some(json!({"A": 1, "b": 2}))
        );
    }

    #[test]
    fn transform_key_collisions_and_keys_it_cannot_read() {
        // `A` moves into `a`'s place; then `a` keeps the value it now has (Data Prepper reads
        // it again).
        let p = processor("rename_keys:\n  transform_key: lowercase");
        assert_eq!(run(&*p, json!({"A": 1, "a": 2})), Some(json!({"a": 1})));
        assert_eq!(
            run(&*p, json!({"X/Y": 1, "P%Q": 2, "B": 3})),
            Some(json!({"X/Y": 1, "P%Q": 2, "b": 3}))
        );
    }

    #[test]
    fn transform_key_and_entries_are_one_or_the_other() {
        let err = invalid(
            "rename_keys:\n  transform_key: uppercase\n  entries:\n    - from_key: a\n      to_key: b",
        );
        assert!(
            err.contains("takes one of `entries` and `transform_key`"),
            "{err}"
        );
        let err = invalid("rename_keys:\n  transform_key: none");
        assert!(err.contains("needs `entries`"), "{err}");
        let err = invalid("rename_keys:\n  transform_key: title");
        assert!(err.contains("title"), "{err}");
    }
}
