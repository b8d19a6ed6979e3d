//! `list_to_map`, as Data Prepper's `ListToMapProcessor`: each object of the source list is
//! filed under the text of its `key` field (or, with `use_source_key`, under each of its own
//! keys); a key's value is the object, its `value_key` field (`null` when missing), or with
//! `use_source_key` + `extract_value` the key's value. Without `flatten` every value is a list
//! of what was filed under the key, in list order; with it, the first or last one. The made
//! object goes to `target`, or key by key to the top level (a key read as a key path: `/`
//! nests).
//!
//! Order: Data Prepper builds a `HashMap`, so its keys come out in no set order; here they are
//! in the order they first appear in the list (the same every time).
//!
//! A source that is missing or not a list, an element that is not an object, a `key` field
//! missing or not text, a made key that cannot be a key at the top level (a character Data
//! Prepper refuses, or empty), or a target through a value that is not an object tags the
//! event `tags_on_failure`, and it goes on unchanged (Data Prepper may have written some keys
//! at the top level before a bad one; here they are all checked first).

use serde_json::{Map, Value};
use sluice_config::processor::list_to_map::{self as config, FlattenedElement};
use sluice_event::{Event, Expression};

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// `list_to_map`, built: the config, with how each object is filed read once.
pub struct ListToMap {
    config: config::ListToMap,
    by: By,
}

/// How each object is filed.
enum By {
    /// Under the text of its field `key`: the object, or its field `value_key`.
    Field {
        key: String,
        value_key: Option<String>,
    },
    /// Under each of its keys: the object, or (`extract_value`) the key's value.
    OwnKeys { extract_value: bool },
}

impl BuildProcessor for config::ListToMap {
    type Processor = ListToMap;

    fn when(&self) -> Option<&Expression> {
        self.list_to_map_when.as_ref()
    }

    fn tags_on_failure(&self) -> &[String] {
        &self.tags_on_failure
    }

    fn build(&self) -> Result<ListToMap, BuildError> {
        let by = match (&self.key, self.use_source_key) {
            (_, true) => By::OwnKeys {
                extract_value: self.extract_value,
            },
            (Some(key), false) => By::Field {
                key: key.clone(),
                value_key: self.value_key.clone(),
            },
            (None, false) => {
                return Err(BuildError {
                    key: "key".to_owned(),
                    message: "`key` is required unless `use_source_key` is true".to_owned(),
                });
            }
        };
        Ok(ListToMap {
            config: self.clone(),
            by,
        })
    }
}

impl Apply for ListToMap {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        self.convert(event)?;
        Ok(Fate::Keep)
    }
}

impl ListToMap {
    fn convert(&self, event: &mut Event) -> Result<(), String> {
        let source = &self.config.source;
        let list = match event.get(source) {
            Some(Value::Array(list)) => list,
            Some(_) => return Err(format!("`{source}` is not a list")),
            None => return Err(format!("no value at `{source}`")),
        };
        let mut map = Map::new();
        for item in list {
            let Value::Object(item) = item else {
                return Err(format!("an element of `{source}` is not an object"));
            };
            match &self.by {
                By::Field { key, value_key } => {
                    let name = match item.get(key) {
                        Some(Value::String(name)) => name,
                        Some(_) => return Err(format!("field `{key}` of an element is not text")),
                        None => return Err(format!("an element has no field `{key}`")),
                    };
                    self.file(&mut map, name, || match value_key {
                        Some(v) => item.get(v).cloned().unwrap_or(Value::Null),
                        None => Value::Object(item.clone()),
                    });
                }
                By::OwnKeys { extract_value } => {
                    for (name, value) in item {
                        self.file(&mut map, name, || match extract_value {
                            true => value.clone(),
                            false => Value::Object(item.clone()),
                        });
                    }
                }
            }
        }
        match &self.config.target {
            Some(target) => event
                .put(target, Value::Object(map))
                .map_err(|e| e.to_string()),
            None => crate::put_all(event, map, "made"),
        }
    }

    /// Files `value()` under `name`: appended to its list, or (with `flatten`) kept when it
    /// is the first, or replacing the one before with `last`. A key keeps the place it first
    /// had.
    fn file(&self, map: &mut Map<String, Value>, name: &str, value: impl FnOnce() -> Value) {
        let flatten = self.config.flatten.then_some(self.config.flattened_element);
        match (flatten, map.get_mut(name)) {
            (None, Some(Value::Array(list))) => list.push(value()),
            (None, _) => {
                map.insert(name.to_owned(), Value::Array(vec![value()]));
            }
            (Some(_), None) => {
                map.insert(name.to_owned(), value());
            }
            (Some(FlattenedElement::Last), Some(slot)) => *slot = value(),
            (Some(FlattenedElement::First), Some(_)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::testing::{invalid, processor, run};

    /// The documented input event (list-to-map.md:34).
    fn doc_input() -> Value {
        json!({"mylist": [
            {"name": "a", "value": "val-a"},
            {"name": "b", "value": "val-b1"},
            {"name": "b", "value": "val-b2"},
            {"name": "c", "value": "val-c"}
        ]})
    }

    /// The documented input with `more` added.
    fn with(more: Value) -> Value {
        let mut out = doc_input();
        for (k, v) in more.as_object().unwrap() {
            out[k] = v.clone();
        }
        out
    }

    fn tagged(yaml: &str, input: Value) -> (Value, Vec<String>) {
        crate::testing::tagged(&*processor(yaml), input)
    }

    #[test]
    fn doc_flatten_to_the_top_level() {
        // list-to-map.md:41
        let p = processor(
            "list_to_map:\n  key: name\n  source: mylist\n  value_key: value\n  flatten: true",
        );
        let out = run(&*p, doc_input()).unwrap();
        assert_eq!(
            out,
            with(json!({"a": "val-a", "b": "val-b1", "c": "val-c"}))
        );
        let keys: Vec<&str> = out
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["mylist", "a", "b", "c"]);
    }

    #[test]
    fn doc_flatten_to_a_target() {
        // list-to-map.md:91
        let p = processor(
            "list_to_map:\n  key: name\n  source: mylist\n  target: mymap\n  value_key: value\n  flatten: true",
        );
        assert_eq!(
            run(&*p, doc_input()),
            Some(with(
                json!({"mymap": {"a": "val-a", "b": "val-b1", "c": "val-c"}})
            ))
        );
    }

    #[test]
    fn doc_whole_objects_without_value_key() {
        // list-to-map.md:144
        let p = processor("list_to_map:\n  key: name\n  source: mylist\n  flatten: true");
        assert_eq!(
            run(&*p, doc_input()),
            Some(with(json!({
                "a": {"name": "a", "value": "val-a"},
                "b": {"name": "b", "value": "val-b1"},
                "c": {"name": "c", "value": "val-c"}
            })))
        );
    }

    #[test]
    fn doc_flattened_element_last() {
        // list-to-map.md:202. The docs show the keys at the top level though `target` is
        // `mymap` (doc_suspect); Data Prepper puts them in `mymap`.
        let p = processor(
            "list_to_map:\n  key: name\n  source: mylist\n  target: mymap\n  value_key: value\n  flatten: true\n  flattened_element: last",
        );
        assert_eq!(
            run(&*p, doc_input()),
            Some(with(
                json!({"mymap": {"a": "val-a", "b": "val-b2", "c": "val-c"}})
            ))
        );
    }

    #[test]
    fn doc_lists_without_flatten() {
        // list-to-map.md:255, in `mymap` as Data Prepper does (doc_suspect, as above).
        let p = processor(
            "list_to_map:\n  key: name\n  source: mylist\n  target: mymap\n  value_key: value\n  flatten: false",
        );
        assert_eq!(
            run(&*p, doc_input()),
            Some(with(json!({"mymap": {
                "a": ["val-a"], "b": ["val-b1", "val-b2"], "c": ["val-c"]
            }})))
        );
    }

    #[test]
    fn doc_use_source_key_and_extract_value() {
        // list-to-map.md:313
        let p = processor(
            "list_to_map:\n  source: mylist\n  use_source_key: true\n  extract_value: true",
        );
        assert_eq!(
            run(&*p, doc_input()),
            Some(with(json!({
                "name": ["a", "b", "b", "c"],
                "value": ["val-a", "val-b1", "val-b2", "val-c"]
            })))
        );
    }

    #[test]
    fn use_source_key_without_extract_value_files_the_objects() {
        let p = processor(
            "list_to_map:\n  source: l\n  target: t\n  use_source_key: true\n  flatten: true\n  flattened_element: last",
        );
        assert_eq!(
            run(&*p, json!({"l": [{"x": 1, "y": 2}, {"x": 3}]})).unwrap()["t"],
            json!({"x": {"x": 3}, "y": {"x": 1, "y": 2}})
        );
        // `extract_value` is only read with `use_source_key`.
        let p =
            processor("list_to_map:\n  source: l\n  target: t\n  key: k\n  extract_value: true");
        assert_eq!(
            run(&*p, json!({"l": [{"k": "a", "v": 1}]})).unwrap()["t"],
            json!({"a": [{"k": "a", "v": 1}]})
        );
    }

    #[test]
    fn a_missing_value_key_is_null_and_keys_keep_their_first_place() {
        let p = processor("list_to_map:\n  source: l\n  target: t\n  key: k\n  value_key: v");
        let out = run(
            &*p,
            json!({"l": [{"k": "b", "v": 1}, {"k": "a"}, {"k": "b", "v": 2}]}),
        )
        .unwrap();
        assert_eq!(out["t"], json!({"b": [1, 2], "a": [null]}));
        let keys: Vec<&str> = out["t"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["b", "a"]);
        // An empty list makes an empty object.
        assert_eq!(run(&*p, json!({"l": []})).unwrap()["t"], json!({}));
    }

    #[test]
    fn a_slash_in_a_made_key_nests_at_the_top_level() {
        let p = processor("list_to_map:\n  source: l\n  key: k\n  value_key: v\n  flatten: true");
        assert_eq!(
            run(&*p, json!({"l": [{"k": "x/y", "v": 1}]})),
            Some(json!({"l": [{"k": "x/y", "v": 1}], "x": {"y": 1}}))
        );
    }

    #[test]
    fn bad_input_tags_the_event_and_leaves_it_unchanged() {
        let yaml = "list_to_map:\n  source: l\n  key: k\n  value_key: v\n  tags_on_failure: [l2m]";
        for input in [
            json!({"x": 1}),                                      // no source
            json!({"l": {"k": "a"}}),                             // not a list
            json!({"l": "text"}),                                 // not a list
            json!({"l": [{"k": "a", "v": 1}, 5]}),                // an element not an object
            json!({"l": [{"k": "a", "v": 1}, {"v": 2}]}),         // no `key` field
            json!({"l": [{"k": "a", "v": 1}, {"k": 7, "v": 2}]}), // `key` not text
            json!({"l": [{"k": "a", "v": 1}, {"k": null}]}),      // `key` null
            json!({"l": [{"k": "a", "v": 1}, {"k": "b:c"}]}),     // a key Data Prepper refuses
            json!({"l": [{"k": "a", "v": 1}, {"k": ""}]}),        // an empty key
        ] {
            let (data, tags) = tagged(yaml, input.clone());
            assert_eq!((data, tags), (input, vec!["l2m".to_owned()]));
        }
        // A target through a value that is not an object.
        let yaml = "list_to_map:\n  source: l\n  target: x/y\n  key: k\n  tags_on_failure: [l2m]";
        let input = json!({"x": 1, "l": [{"k": "a"}]});
        assert_eq!(tagged(yaml, input.clone()), (input, vec!["l2m".to_owned()]));
    }

    #[test]
    fn list_to_map_when_selects_the_events() {
        let p = processor(
            "list_to_map:\n  source: l\n  target: t\n  key: k\n  list_to_map_when: /go == true",
        );
        assert_eq!(
            run(&*p, json!({"go": false, "l": []})),
            Some(json!({"go": false, "l": []}))
        );
        assert_eq!(
            run(&*p, json!({"go": true, "l": []})).unwrap()["t"],
            json!({})
        );
    }

    #[test]
    fn config_rules_name_the_key() {
        let e = invalid("list_to_map:\n  source: l");
        assert!(
            e.contains("`p.processor[0].list_to_map` needs `key`"),
            "{e}"
        );
        let e = invalid("list_to_map:\n  source: \"\"\n  key: k");
        assert!(
            e.contains("`p.processor[0].list_to_map.source` is empty"),
            "{e}"
        );
        let e = invalid("list_to_map:\n  source: l\n  key: k\n  target: \"\"");
        assert!(
            e.contains("`p.processor[0].list_to_map.target` is empty"),
            "{e}"
        );
        let e = invalid("list_to_map:\n  source: l\n  key: k\n  flattened_element: LAST");
        assert!(e.contains("flattened_element") && e.contains("LAST"), "{e}");
    }
}
