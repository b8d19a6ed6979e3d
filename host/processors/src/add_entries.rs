//! `add_entries`, as Data Prepper's `AddEntryProcessor`: for each entry in order, if its
//! `add_when` holds, the value (fixed, formatted, or an expression's) goes to the key or
//! metadata attribute: added when absent, replaced with `overwrite_if_key_exists`, made a
//! list with `append_if_key_exists`, else left as it was. An entry that fails (a format whose
//! key is missing, a key through a non-object) is skipped and logged; the rest still apply.
//!
//! With `iterate_on`, the entry goes into each element of a list of objects instead (the list
//! is written back; a list with an element that is not an object is left as is): `key` is one
//! literal key of the element (`flatten_key`, the default) or a path in it; `format` and
//! `value_expression` read the element (or the event, `disable_root_keys: false`);
//! `add_to_element_when` is evaluated on the event, or on each element
//! (`evaluate_when_on_element`), an element being an event of its data and the event's
//! metadata. As Data Prepper, whether the key exists is asked of the element's literal key
//! even when `flatten_key: false` reads it as a path.

use serde_json::Value;
use sluice_config::processor::add_entries::{self as config, Target};
use sluice_event::{Event, Expression, Key, Template};

use crate::{Apply, BuildError, BuildProcessor, Failure, Failures, Fate, when};

/// `add_entries`, built: its entries.
pub struct AddEntries {
    entries: Vec<Entry>,
}

/// One entry: its config, with its target and value read once.
struct Entry {
    config: config::AddEntry,
    target: Where,
    value: What,
}

/// Where an entry goes: a key, one a format string makes per event, or a metadata attribute.
enum Where {
    Key(Key),
    Format(Template),
    Metadata(String),
}

/// An entry's value: fixed, formatted, or an expression's.
enum What {
    Value(Value),
    Format(Template),
    Expression(Expression),
}

impl BuildProcessor for config::AddEntries {
    type Processor = AddEntries;

    fn build(&self) -> Result<AddEntries, BuildError> {
        Ok(AddEntries {
            entries: self.entries.iter().map(entry).collect(),
        })
    }
}

fn entry(e: &config::AddEntry) -> Entry {
    let template = |t: &str| Template::parse(t).expect("checked at validate");
    Entry {
        config: e.clone(),
        target: match e.target() {
            Target::Key(key) => Where::Key(key),
            Target::Format(format) => Where::Format(template(&format)),
            Target::Metadata(name) => Where::Metadata(name),
        },
        value: match (&e.value, &e.format, &e.value_expression) {
            (Some(v), _, _) => What::Value(v.clone()),
            (_, Some(f), _) => What::Format(template(f)),
            (_, _, Some(x)) => What::Expression(x.clone()),
            _ => unreachable!("checked: one of value, format, value_expression"),
        },
    }
}

impl Apply for AddEntries {
    fn apply(&self, event: &mut Event, name: &'static str) -> Result<Fate, Failure> {
        // An entry that fails is skipped; the rest still apply.
        let mut failures = Failures::default();
        for entry in &self.entries {
            if !when(name, entry.config.add_when.as_ref(), event) {
                continue;
            }
            if let Err(reason) = entry.apply(event, name) {
                failures.add(reason);
            }
        }
        failures.into_result()
    }
}

impl Entry {
    /// The entry's value, read from `context`.
    fn value(&self, context: &Event) -> Result<Value, String> {
        Ok(match &self.value {
            What::Value(v) => v.clone(),
            What::Format(t) => Value::String(t.render(context).map_err(|e| e.to_string())?),
            What::Expression(x) => x.evaluate(context).map_err(|e| e.to_string())?,
        })
    }

    fn apply(&self, event: &mut Event, processor: &'static str) -> Result<(), String> {
        if let Some(list) = &self.config.iterate_on {
            return self.apply_each(event, list, processor);
        }
        let value = self.value(event)?;
        let key = match &self.target {
            Where::Metadata(name) => {
                let attributes = &mut event.metadata.attributes;
                match attributes.get_mut(name) {
                    None => {
                        attributes.insert(name.clone(), value);
                    }
                    Some(slot) if self.config.overwrite_if_key_exists => *slot = value,
                    Some(slot) if self.config.append_if_key_exists => merge(slot, value),
                    Some(_) => {}
                }
                return Ok(());
            }
            Where::Key(key) => std::borrow::Cow::Borrowed(key),
            Where::Format(t) => {
                let text = t.render(event).map_err(|e| e.to_string())?;
                std::borrow::Cow::Owned(Key::parse(&text).map_err(|e| e.to_string())?)
            }
        };
        match event.get_mut(&key) {
            None => event.put(&key, value).map_err(|e| e.to_string()),
            Some(slot) if self.config.overwrite_if_key_exists => {
                *slot = value;
                Ok(())
            }
            Some(slot) if self.config.append_if_key_exists => {
                merge(slot, value);
                Ok(())
            }
            Some(_) => Ok(()),
        }
    }
}

impl Entry {
    /// `iterate_on`: the entry into each element of the list (all or none: an element that is
    /// not an object, or a value that cannot be had, leaves the list as it was).
    fn apply_each(
        &self,
        event: &mut Event,
        on: &Key,
        processor: &'static str,
    ) -> Result<(), String> {
        let config = &self.config;
        let element_when = config.add_to_element_when.as_ref();
        let list = match event.get(on) {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(list)) if list.is_empty() => return Ok(()),
            Some(Value::Array(list)) if list.iter().all(Value::is_object) => list.clone(),
            Some(_) => return Err(format!("`{on}` is not a list of objects")),
        };
        // The key is made on the event, before any element is read.
        let text = match &self.target {
            Where::Key(key) => key.as_str().to_owned(),
            Where::Format(t) => t.render(event).map_err(|e| e.to_string())?,
            Where::Metadata(_) => unreachable!("checked: no metadata_key with iterate_on"),
        };
        let path = Key::parse(&text).map_err(|e| e.to_string())?;
        if !config.evaluate_when_on_element && !when(processor, element_when, event) {
            return Ok(());
        }
        let mut out = Vec::with_capacity(list.len());
        for item in list {
            let mut element = Event::new(item, event.metadata.clone());
            if config.evaluate_when_on_element && !when(processor, element_when, &element) {
                out.push(element.data);
                continue;
            }
            // `disable_root_keys: false` reads the event.
            let value = self.value(if config.disable_root_keys {
                &element
            } else {
                event
            })?;
            let exists = element
                .data
                .as_object()
                .is_some_and(|m| m.contains_key(&text));
            if !exists || config.overwrite_if_key_exists {
                if config.flatten_key {
                    if let Some(map) = element.data.as_object_mut() {
                        map.insert(text.clone(), value);
                    }
                } else {
                    element.put(&path, value).map_err(|e| e.to_string())?;
                }
            } else if config.append_if_key_exists {
                let slot = if config.flatten_key {
                    element.data.as_object_mut().and_then(|m| m.get_mut(&text))
                } else {
                    element.get_mut(&path)
                };
                match slot {
                    Some(slot) => merge(slot, value),
                    // Data Prepper appends to the `null` it reads at a path that is not there.
                    None => element
                        .put(&path, Value::Array(vec![Value::Null, value]))
                        .map_err(|e| e.to_string())?,
                }
            }
            out.push(element.data);
        }
        event.put(on, Value::Array(out)).map_err(|e| e.to_string())
    }
}

/// `append_if_key_exists`: the existing value becomes a list (if it is not one) with the new
/// value at its end, as one element even when it is a list (as Data Prepper).
fn merge(slot: &mut Value, value: Value) {
    let mut list = match slot.take() {
        Value::Array(list) => list,
        other => vec![other],
    };
    list.push(value);
    *slot = Value::Array(list);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{invalid, processor, run};

    #[test]
    fn adds_a_value_and_leaves_an_existing_key_unless_told() {
        let p = processor("add_entries:\n  entries:\n    - key: newMessage\n      value: 3");
        assert_eq!(
            run(&*p, json!({"message": "hello"})),
            Some(json!({"message": "hello", "newMessage": 3}))
        );
        assert_eq!(
            run(&*p, json!({"newMessage": 1})),
            Some(json!({"newMessage": 1}))
        );
        let p = processor(
            "add_entries:\n  entries:\n    - key: m\n      value: 3\n      overwrite_if_key_exists: true",
        );
        assert_eq!(run(&*p, json!({"m": 1})), Some(json!({"m": 3})));
    }

    #[test]
    fn appends_to_make_a_list() {
        let p = processor(
            "add_entries:\n  entries:\n    - key: m\n      value: [b, c]\n      append_if_key_exists: true",
        );
        assert_eq!(
            run(&*p, json!({"m": "a"})),
            Some(json!({"m": ["a", ["b", "c"]]}))
        );
        assert_eq!(
            run(&*p, json!({"m": ["a"]})),
            Some(json!({"m": ["a", ["b", "c"]]}))
        );
    }

    #[test]
    fn formats_expressions_and_conditions() {
        let p = processor(
            "add_entries:\n  entries:\n    - key: /n/id\n      format: \"${/a}-${/b}\"\n    - key: len\n      value_expression: length(/a)\n      add_when: /b == 2",
        );
        assert_eq!(
            run(&*p, json!({"a": "xy", "b": 2})),
            Some(json!({"a": "xy", "b": 2, "n": {"id": "xy-2"}, "len": 2}))
        );
        assert_eq!(
            run(&*p, json!({"a": "xy", "b": 3})),
            Some(json!({"a": "xy", "b": 3, "n": {"id": "xy-3"}}))
        );
    }

    #[test]
    fn iterate_on_adds_to_each_element_by_a_literal_key() {
        let p = processor(
            "add_entries:\n  entries:\n    - key: a/b\n      value: 1\n      iterate_on: items",
        );
        assert_eq!(
            run(&*p, json!({"items": [{"x": 1}, {"a/b": 0}]})),
            Some(json!({"items": [{"x": 1, "a/b": 1}, {"a/b": 0}]}))
        );
        // Missing, empty, not a list, a list with an element that is not an object: unchanged.
        for data in [
            json!({"x": 1}),
            json!({"items": []}),
            json!({"items": "text"}),
            json!({"items": [{"x": 1}, 2]}),
        ] {
            assert_eq!(run(&*p, data.clone()), Some(data));
        }
    }

    #[test]
    fn iterate_on_with_a_path_and_values_from_the_element_or_the_root() {
        let p = processor(
            "add_entries:\n  entries:\n    - key: /n/len\n      value_expression: length(/name)\n      iterate_on: /l\n      flatten_key: false\n    - key: tag\n      format: \"${/name}-${/env}\"\n      iterate_on: /l\n    - key: env\n      value_expression: /env\n      iterate_on: /l\n      disable_root_keys: false",
        );
        assert_eq!(
            run(&*p, json!({"env": "prod", "l": [{"name": "ab"}]})),
            Some(
                json!({"env": "prod", "l": [{"name": "ab", "n": {"len": 2}, "tag": "ab-", "env": "prod"}]})
            )
        );
    }

    #[test]
    fn iterate_on_overwrites_and_appends_in_elements() {
        let p = processor(
            "add_entries:\n  entries:\n    - key: t\n      value: b\n      iterate_on: l\n      append_if_key_exists: true\n    - key: o\n      value: 2\n      iterate_on: l\n      overwrite_if_key_exists: true",
        );
        assert_eq!(
            run(&*p, json!({"l": [{"t": "a", "o": 1}, {}]})),
            Some(json!({"l": [{"t": ["a", "b"], "o": 2}, {"t": "b", "o": 2}]}))
        );
    }

    #[test]
    fn add_to_element_when_is_read_on_the_event_or_on_each_element() {
        let once = processor(
            "add_entries:\n  entries:\n    - key: k\n      value: 1\n      iterate_on: l\n      add_to_element_when: '/go == true'",
        );
        assert_eq!(
            run(&*once, json!({"go": true, "l": [{"a": 1}, {"a": 2}]})),
            Some(json!({"go": true, "l": [{"a": 1, "k": 1}, {"a": 2, "k": 1}]}))
        );
        assert_eq!(
            run(&*once, json!({"go": false, "l": [{"a": 1}]})),
            Some(json!({"go": false, "l": [{"a": 1}]}))
        );
        let each = processor(
            "add_entries:\n  entries:\n    - key: k\n      value: 1\n      iterate_on: l\n      add_to_element_when: '/a == 2'\n      evaluate_when_on_element: true",
        );
        assert_eq!(
            run(&*each, json!({"a": 2, "l": [{"a": 1}, {"a": 2}]})),
            Some(json!({"a": 2, "l": [{"a": 1}, {"a": 2, "k": 1}]}))
        );
        // An element sees the event's metadata.
        let meta = processor(
            "add_entries:\n  entries:\n    - metadata_key: m\n      value: yes\n    - key: k\n      value: 1\n      iterate_on: l\n      add_to_element_when: 'getMetadata(\"m\") == \"yes\"'\n      evaluate_when_on_element: true",
        );
        assert_eq!(
            run(&*meta, json!({"l": [{}]})),
            Some(json!({"l": [{"k": 1}]}))
        );
    }

    #[test]
    fn iterate_options_need_iterate_on() {
        for (yaml, key) in [
            ("flatten_key: false", "flatten_key"),
            ("disable_root_keys: false", "disable_root_keys"),
            ("add_to_element_when: '/a == 1'", "add_to_element_when"),
            ("evaluate_when_on_element: true", "evaluate_when_on_element"),
        ] {
            let err = invalid(&format!(
                "add_entries:\n  entries:\n    - key: k\n      value: 1\n      {yaml}"
            ));
            assert!(
                err.contains(&format!("entries[0].{key}` only applies with")),
                "{err}"
            );
        }
        let err = invalid(
            "add_entries:\n  entries:\n    - key: k\n      value: 1\n      iterate_on: l\n      evaluate_when_on_element: true",
        );
        assert!(
            err.contains("both `iterate_on` and `add_to_element_when`"),
            "{err}"
        );
        let err = invalid(
            "add_entries:\n  entries:\n    - metadata_key: k\n      value: 1\n      iterate_on: l",
        );
        assert!(err.contains("not to metadata"), "{err}");
    }
}
