//! `map_to_list`, as Data Prepper's `MapToListProcessor`: each entry of the source object, in
//! order, but for `exclude_keys`, becomes an item `{key_name: key, value_name: value}` (or
//! `[key, value]` with `convert_field_to_list`) of the list put at `target` (replacing its
//! value). `remove_processed_fields` first deletes the listed entries from the source: at the
//! top level each by its key read as a key path (a `/` in it reaches deeper, as Data
//! Prepper's `delete`); a nested source is replaced by an object of its excluded entries.
//!
//! A source that is missing or not an object, or a target through a value that is not an
//! object, tags the event `tags_on_failure`; it goes on as it is (with the source's entries
//! already removed, in the second case, as Data Prepper's).

use std::collections::HashSet;

use serde_json::{Map, Value};
use sluice_config::processor::map_to_list as config;
use sluice_event::{Event, Expression, Key};

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// `map_to_list`, built: the config, with `exclude_keys` as a set.
pub struct MapToList {
    config: config::MapToList,
    exclude: HashSet<String>,
}

impl BuildProcessor for config::MapToList {
    type Processor = MapToList;

    fn when(&self) -> Option<&Expression> {
        self.map_to_list_when.as_ref()
    }

    fn tags_on_failure(&self) -> &[String] {
        &self.tags_on_failure
    }

    fn build(&self) -> Result<MapToList, BuildError> {
        Ok(MapToList {
            config: self.clone(),
            exclude: self.exclude_keys.iter().cloned().collect(),
        })
    }
}

impl Apply for MapToList {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        self.convert(event)?;
        Ok(Fate::Keep)
    }
}

impl MapToList {
    fn convert(&self, event: &mut Event) -> Result<(), String> {
        let config = &self.config;
        let source = match event.get(&config.source) {
            Some(Value::Object(map)) => map,
            Some(_) => return Err(format!("`{}` is not an object", config.source)),
            None => return Err(format!("no value at `{}`", config.source)),
        };
        let list: Vec<Value> = source
            .iter()
            .filter(|(k, _)| !self.exclude.contains(*k))
            .map(|(k, v)| {
                if config.convert_field_to_list {
                    Value::Array(vec![Value::String(k.clone()), v.clone()])
                } else {
                    let mut item = Map::new();
                    item.insert(config.key_name.clone(), Value::String(k.clone()));
                    item.insert(config.value_name.clone(), v.clone());
                    Value::Object(item)
                }
            })
            .collect();
        if config.remove_processed_fields {
            self.remove_processed(event);
        }
        event
            .put(&config.target, Value::Array(list))
            .map_err(|e| e.to_string())
    }

    fn remove_processed(&self, event: &mut Event) {
        let Some(Value::Object(source)) = event.get_mut(&self.config.source) else {
            return;
        };
        if !self.config.source.is_root() {
            source.retain(|k, _| self.exclude.contains(k));
            return;
        }
        // At the top level Data Prepper deletes each key as a key path; that is just
        // removing the key unless it has a `/` or `~`.
        let paths: Vec<Key> = source
            .keys()
            .filter(|k| !self.exclude.contains(*k) && k.contains(['/', '~']))
            .map(|k| Key::unchecked(k))
            .collect();
        source.retain(|k, _| self.exclude.contains(k) || k.contains(['/', '~']));
        for path in paths {
            event.delete(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use sluice_event::{Event, Metadata};

    use crate::testing::{invalid, processor, run};

    fn doc_input() -> Value {
        json!({"my-map": {"key1": "value1", "key2": "value2", "key3": "value3"}})
    }

    #[test]
    fn doc_default_names() {
        // map-to-list.md:37
        let p = processor("map_to_list:\n  source: my-map\n  target: my-list");
        assert_eq!(
            run(&*p, doc_input()),
            Some(json!({
                "my-list": [
                    {"key": "key1", "value": "value1"},
                    {"key": "key2", "value": "value2"},
                    {"key": "key3", "value": "value3"}
                ],
                "my-map": {"key1": "value1", "key2": "value2", "key3": "value3"}
            }))
        );
    }

    #[test]
    fn doc_key_name_and_value_name() {
        // map-to-list.md:90
        let p = processor(
            "map_to_list:\n  source: my-map\n  target: my-list\n  key_name: name\n  value_name: data",
        );
        assert_eq!(
            run(&*p, doc_input()).unwrap()["my-list"],
            json!([
                {"name": "key1", "data": "value1"},
                {"name": "key2", "data": "value2"},
                {"name": "key3", "data": "value3"}
            ])
        );
    }

    #[test]
    fn doc_exclude_keys_and_remove_processed_fields() {
        // map-to-list.md:144
        let p = processor(
            "map_to_list:\n  source: my-map\n  target: my-list\n  exclude_keys: [key1]\n  remove_processed_fields: true",
        );
        assert_eq!(
            run(&*p, doc_input()),
            Some(json!({
                "my-list": [
                    {"key": "key2", "value": "value2"},
                    {"key": "key3", "value": "value3"}
                ],
                "my-map": {"key1": "value1"}
            }))
        );
    }

    #[test]
    fn doc_convert_field_to_list() {
        // map-to-list.md:191
        let p = processor(
            "map_to_list:\n  source: my-map\n  target: my-list\n  convert_field_to_list: true",
        );
        assert_eq!(
            run(&*p, doc_input()).unwrap()["my-list"],
            json!([["key1", "value1"], ["key2", "value2"], ["key3", "value3"]])
        );
    }

    #[test]
    fn doc_root_source() {
        // map-to-list.md:235
        let p = processor("map_to_list:\n  source: \"\"\n  target: my-list");
        assert_eq!(
            run(
                &*p,
                json!({"key1": "value1", "key2": "value2", "key3": "value3"})
            ),
            Some(json!({
                "my-list": [
                    {"key": "key1", "value": "value1"},
                    {"key": "key2", "value": "value2"},
                    {"key": "key3", "value": "value3"}
                ],
                "key1": "value1", "key2": "value2", "key3": "value3"
            }))
        );
    }

    #[test]
    fn root_source_removed_but_for_the_excluded_keys() {
        let p = processor(
            "map_to_list:\n  source: \"\"\n  target: l\n  exclude_keys: [keep]\n  remove_processed_fields: true\n  convert_field_to_list: true",
        );
        assert_eq!(
            run(&*p, json!({"a": 1, "keep": 2, "b": {"c": 3}})),
            Some(json!({"keep": 2, "l": [["a", 1], ["b", {"c": 3}]]}))
        );
        // A `/` in a top-level key is a path to Data Prepper's delete: `x/y` deletes
        // `y` inside `x`, the key `x/y` stays.
        let p = processor(
            "map_to_list:\n  source: \"\"\n  target: l\n  remove_processed_fields: true\n  exclude_keys: [x]",
        );
        assert_eq!(
            run(&*p, json!({"x/y": 1, "x": {"y": 2, "z": 3}})).unwrap(),
            json!({"x/y": 1, "x": {"z": 3}, "l": [{"key": "x/y", "value": 1}]})
        );
    }

    #[test]
    fn the_same_key_name_and_value_name_keep_the_value() {
        let p = processor("map_to_list:\n  source: m\n  target: l\n  key_name: k\n  value_name: k");
        assert_eq!(
            run(&*p, json!({"m": {"a": 1}})).unwrap()["l"],
            json!([{"k": 1}])
        );
    }

    #[test]
    fn bad_input_tags_the_event_and_keeps_it() {
        let yaml = "map_to_list:\n  source: m\n  target: l\n  tags_on_failure: [m2l]";
        for input in [
            json!({"x": 1}),
            json!({"m": [1]}),
            json!({"m": null}),
            json!({"m": "t"}),
        ] {
            let p = processor(yaml);
            let mut event = Event::new(input.clone(), Metadata::new("LOG", 0));
            p.process(&mut event);
            assert_eq!(
                (event.data, event.metadata.tags),
                (input, vec!["m2l".to_owned()])
            );
        }
        // A target through a value that is not an object: the entries were already
        // removed, as Data Prepper's.
        let p = processor(
            "map_to_list:\n  source: m\n  target: x/y\n  remove_processed_fields: true\n  tags_on_failure: [m2l]",
        );
        let mut event = Event::new(json!({"x": 1, "m": {"a": 1}}), Metadata::new("LOG", 0));
        p.process(&mut event);
        assert_eq!(event.data, json!({"x": 1, "m": {}}));
        assert_eq!(event.metadata.tags, ["m2l"]);
    }

    #[test]
    fn map_to_list_when_selects_the_events() {
        let p =
            processor("map_to_list:\n  source: m\n  target: l\n  map_to_list_when: /go == true");
        assert_eq!(
            run(&*p, json!({"go": false, "m": {"a": 1}})),
            Some(json!({"go": false, "m": {"a": 1}}))
        );
        assert_eq!(
            run(&*p, json!({"go": true, "m": {"a": 1}})).unwrap()["l"],
            json!([{"key": "a", "value": 1}])
        );
    }

    #[test]
    fn config_rules_name_the_key() {
        let e = invalid("map_to_list:\n  source: m\n  target: \"\"");
        assert!(
            e.contains("`p.processor[0].map_to_list.target` is empty"),
            "{e}"
        );
        let e = invalid("map_to_list:\n  source: m");
        assert!(e.contains("target"), "{e}");
        let e = invalid("map_to_list:\n  source: m\n  target: l\n  remove_source_keys: true");
        assert!(e.contains("remove_source_keys"), "{e}");
    }
}
