//! `copy_values`, as Data Prepper's `CopyValueProcessor`: for each entry in order, when its
//! `copy_when` holds, the value at `from_key` is copied to `to_key`, unless `to_key` exists and
//! `overwrite_if_to_key_exists` is false.
//!
//! With `from_list` and `to_list` (unless `to_list` exists and `overwrite_if_to_list_exists`
//! is false), `to_list` becomes a new list of one object per element of `from_list`: each
//! entry whose `copy_when` holds on the event (evaluated once) copies the element's
//! `from_key` (a literal key of the element) to the object's `to_key`. A `from_list` that is
//! missing, or not a list of objects, changes nothing.

use serde_json::{Map, Value};
use sluice_config::processor::copy_values::{self as config, CopyEntry};
use sluice_event::{Event, Key};

use crate::{Apply, BuildError, BuildProcessor, Failure, Failures, Fate, when};

/// `copy_values`, built: its config as is.
pub struct CopyValues {
    config: config::CopyValues,
}

impl BuildProcessor for config::CopyValues {
    type Processor = CopyValues;

    fn build(&self) -> Result<CopyValues, BuildError> {
        Ok(CopyValues {
            config: self.clone(),
        })
    }
}

impl Apply for CopyValues {
    fn apply(&self, event: &mut Event, name: &'static str) -> Result<Fate, Failure> {
        let config = &self.config;
        if let (Some(from), Some(to)) = (&config.from_list, &config.to_list) {
            self.copy_lists(event, from, to, name)?;
            return Ok(Fate::Keep);
        }
        // An entry that fails is skipped; the rest still apply.
        let mut failures = Failures::default();
        for entry in &config.entries {
            if !when(name, entry.copy_when.as_ref(), event) {
                continue;
            }
            let Some(value) = event.get(&entry.from_key).cloned() else {
                continue;
            };
            if event.contains(&entry.to_key) && !entry.overwrite_if_to_key_exists {
                continue;
            }
            if let Err(e) = event.put(&entry.to_key, value) {
                failures.add(format!("`{}` not written: {e}", entry.to_key));
            }
        }
        failures.into_result()
    }
}

impl CopyValues {
    /// `from_list` to `to_list`: lists not copied are `Err`.
    fn copy_lists(
        &self,
        event: &mut Event,
        from: &Key,
        to: &Key,
        processor: &'static str,
    ) -> Result<(), String> {
        if event.contains(to) && !self.config.overwrite_if_to_list_exists {
            return Ok(());
        }
        let list = match event.get(from) {
            Some(Value::Array(list)) => list,
            Some(_) => return Err(format!("`{from}` is not a list")),
            None => return Err(format!("`{from}` is missing")),
        };
        let copying: Vec<&CopyEntry> = self
            .config
            .entries
            .iter()
            .filter(|e| when(processor, e.copy_when.as_ref(), event))
            .collect();
        let mut out = Vec::with_capacity(list.len());
        for element in list {
            let Value::Object(element) = element else {
                return Err(format!("`{from}` has an element that is not an object"));
            };
            let mut item = Map::new();
            for entry in &copying {
                if let Some(value) = element.get(entry.from_key.as_str()) {
                    item.insert(entry.to_key.as_str().to_owned(), value.clone());
                }
            }
            out.push(Value::Object(item));
        }
        event.put(to, Value::Array(out)).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{invalid, processor, run};

    #[test]
    fn copies_unless_the_target_exists() {
        let p =
            processor("copy_values:\n  entries:\n    - from_key: message\n      to_key: /copy/m");
        assert_eq!(
            run(&*p, json!({"message": "x"})),
            Some(json!({"message": "x", "copy": {"m": "x"}}))
        );
        let p = processor("copy_values:\n  entries:\n    - from_key: a\n      to_key: b");
        assert_eq!(
            run(&*p, json!({"a": 1, "b": 2})),
            Some(json!({"a": 1, "b": 2}))
        );
        assert_eq!(run(&*p, json!({"c": 1})), Some(json!({"c": 1})));
    }

    /// copy-values.md:105.
    #[test]
    fn the_documented_list_example() {
        let p = processor(
            "copy_values:\n  from_list: mylist\n  to_list: newlist\n  entries:\n    - from_key: name\n      to_key: fruit_name",
        );
        let mylist =
            json!([{"name": "apple", "color": "red"}, {"name": "orange", "color": "orange"}]);
        assert_eq!(
            run(&*p, json!({"mylist": mylist})),
            Some(
                json!({"mylist": mylist, "newlist": [{"fruit_name": "apple"}, {"fruit_name": "orange"}]})
            )
        );
    }

    #[test]
    fn list_mode_edges() {
        let p = processor(
            "copy_values:\n  from_list: /a/l\n  to_list: out\n  entries:\n    - from_key: x\n      to_key: y\n    - from_key: z\n      to_key: w\n      copy_when: '/go == true'",
        );
        // Every element makes an object, even an empty one; copy_when is read on the event.
        assert_eq!(
            run(
                &*p,
                json!({"go": false, "a": {"l": [{"x": 1, "z": 2}, {"q": 3}]}})
            ),
            Some(
                json!({"go": false, "a": {"l": [{"x": 1, "z": 2}, {"q": 3}]}, "out": [{"y": 1}, {}]})
            )
        );
        assert_eq!(
            run(&*p, json!({"go": true, "a": {"l": [{"x": 1, "z": 2}]}})),
            Some(json!({"go": true, "a": {"l": [{"x": 1, "z": 2}]}, "out": [{"y": 1, "w": 2}]}))
        );
        // An existing to_list stays; a missing list, or one of non-objects, changes nothing.
        for data in [
            json!({"a": {"l": [{"x": 1}]}, "out": 0}),
            json!({"b": 1}),
            json!({"a": {"l": [1, 2]}}),
        ] {
            assert_eq!(run(&*p, data.clone()), Some(data));
        }
        assert_eq!(
            run(&*p, json!({"a": {"l": []}})),
            Some(json!({"a": {"l": []}, "out": []}))
        );
        let p = processor(
            "copy_values:\n  from_list: l\n  to_list: out\n  overwrite_if_to_list_exists: true\n  entries:\n    - from_key: x\n      to_key: y",
        );
        assert_eq!(
            run(&*p, json!({"l": [{"x": 1}], "out": 0})),
            Some(json!({"l": [{"x": 1}], "out": [{"y": 1}]}))
        );
    }

    #[test]
    fn from_list_and_to_list_go_together() {
        let err =
            invalid("copy_values:\n  from_list: l\n  entries:\n    - from_key: x\n      to_key: y");
        assert!(err.contains("both are needed"), "{err}");
        let err = invalid(
            "copy_values:\n  overwrite_if_to_list_exists: true\n  entries:\n    - from_key: x\n      to_key: y",
        );
        assert!(err.contains("only applies with `from_list`"), "{err}");
    }
}
