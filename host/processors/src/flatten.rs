//! `flatten`, as Data Prepper's `FlattenProcessor` (with json-flattener 0.16.6, reserved
//! characters ignored): the source's nested keys are joined with the separator (`a.b`), list
//! elements get their index (`a[0].b`), an empty object or list is kept as `{}` / `[]`,
//! `null` is kept; keys containing the separator or brackets are not quoted. A source that is
//! not an object flattens as json-flattener does: a value is `{"root": value}`, a list's
//! elements are `[0]`, `[1]`... The result goes to `target` as one object, or (target `""`)
//! key by key to the top level of the event, where a key is read as a key path (`/` nests;
//! a character Data Prepper refuses in a key fails the event).
//!
//! Steps, in Data Prepper's order: `exclude_keys` are set aside; the source is flattened;
//! `remove_source_keys` deletes the source's keys; `remove_list_elements` drops the indexes
//! (values of keys that then collide are gathered into a list, in index order; the keys are
//! in the order they first appear, where Data Prepper's `HashMap` has none); the result is
//! written; the set-aside keys are put back (at the end of their object, as Data Prepper
//! deletes and puts them), even when a step failed. A failure (no source; `remove_source_keys`
//! on a source that is not an object; a flattened key that cannot be a key; a target through
//! a value that is not an object) tags the event `tags_on_failure`, and it goes on as the
//! steps before the failure left it, as Data Prepper's.
//!
//! Depth: the walk keeps its own stack of iterators (as json-flattener does), it does not
//! recurse, so however deep the source is nested it cannot overflow the thread's stack.

use std::fmt::Write as _;

use serde_json::{Map, Value};
use sluice_config::processor::flatten as config;
use sluice_event::{Event, Expression, Key};

use crate::{Apply, BuildError, BuildProcessor, Failure, Failures, Fate};

/// `flatten`, built: the config, with its excluded keys and separator read once.
pub struct Flatten {
    config: config::Flatten,
    excluded: Vec<Key>,
    separator: char,
}

impl BuildProcessor for config::Flatten {
    type Processor = Flatten;

    fn when(&self) -> Option<&Expression> {
        self.flatten_when.as_ref()
    }

    fn tags_on_failure(&self) -> &[String] {
        &self.tags_on_failure
    }

    fn build(&self) -> Result<Flatten, BuildError> {
        Ok(Flatten {
            config: self.clone(),
            excluded: self.excluded(),
            separator: self.separator(),
        })
    }
}

impl Apply for Flatten {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        let set_aside: Vec<(&Key, Value)> = self
            .excluded
            .iter()
            .filter_map(|key| event.delete(key).map(|value| (key, value)))
            .collect();
        let mut failures = Failures::default();
        if let Err(reason) = self.flatten(event) {
            failures.add(reason);
        }
        for (key, value) in set_aside {
            if let Err(e) = event.put(key, value) {
                failures.add(format!("an excluded key could not be put back: {e}"));
            }
        }
        failures.into_result()
    }
}

impl Flatten {
    fn flatten(&self, event: &mut Event) -> Result<(), String> {
        let config = &self.config;
        let source = event
            .get(&config.source)
            .ok_or_else(|| format!("no value at `{}`", config.source))?;
        let mut flat = flatten(source, self.separator);
        if config.remove_source_keys {
            self.remove_source_keys(event)?;
        }
        if config.remove_list_elements {
            flat = remove_indexes(flat, config.remove_brackets);
        }
        // An empty target: each flattened key to the top level.
        if config.target.is_root() {
            return crate::put_all(event, flat, "flattened");
        }
        event
            .put(&config.target, Value::Object(flat))
            .map_err(|e| e.to_string())
    }

    /// Deletes every key of the source object, each as Data Prepper does, by its path
    /// `<source>/<key>` (so a `/` in a key reaches deeper); when no key has a `/` or `~` (the
    /// usual case), that is emptying the object.
    fn remove_source_keys(&self, event: &mut Event) -> Result<(), String> {
        let source = &self.config.source;
        let Some(Value::Object(map)) = event.get_mut(source) else {
            return Err(format!("`{source}` is not an object"));
        };
        if !map.keys().any(|k| k.contains(['/', '~'])) {
            map.clear();
            return Ok(());
        }
        let base = source.as_str().trim_end_matches('/');
        let paths: Vec<Key> = map
            .keys()
            .map(|k| Key::unchecked(&format!("{base}/{k}")))
            .collect();
        for path in paths {
            event.delete(&path);
        }
        Ok(())
    }
}

/// A level of the walk: the entries (or elements) still to visit, and the length of the key
/// of the level itself.
struct Level<'v> {
    items: Items<'v>,
    key_len: usize,
}

/// What a level of the walk has left to visit: an object's entries or a list's elements.
enum Items<'v> {
    Object(serde_json::map::Iter<'v>),
    List(std::iter::Enumerate<std::slice::Iter<'v, Value>>),
}

/// json-flattener's `flattenAsMap` with `ignoreReservedCharacters` and `separator`: one
/// entry per leaf (a scalar, `null`, an empty object or list), in document order.
fn flatten(source: &Value, separator: char) -> Map<String, Value> {
    let mut flat = Map::new();
    let Some(items) = container(source) else {
        // The source itself is a leaf: json-flattener's `root` key, but not for `{}`.
        if source.as_object().is_none_or(|m| !m.is_empty()) {
            flat.insert("root".to_owned(), source.clone());
        }
        return flat;
    };
    let mut key = String::new();
    let mut stack = vec![Level { items, key_len: 0 }];
    while let Some(level) = stack.last_mut() {
        key.truncate(level.key_len);
        let next = match &mut level.items {
            Items::Object(entries) => entries.next().map(|(name, value)| {
                // json-flattener adds the separator only after a non-empty prefix.
                if !key.is_empty() {
                    key.push(separator);
                }
                key.push_str(name);
                value
            }),
            Items::List(elements) => elements.next().map(|(i, value)| {
                let _ = write!(key, "[{i}]");
                value
            }),
        };
        let Some(value) = next else {
            stack.pop();
            continue;
        };
        match container(value) {
            Some(items) => stack.push(Level {
                items,
                key_len: key.len(),
            }),
            None => {
                flat.insert(key.clone(), value.clone());
            }
        }
    }
    flat
}

/// The entries of a non-empty object or list, which the walk goes into; `None` for a leaf.
fn container(value: &Value) -> Option<Items<'_>> {
    match value {
        Value::Object(map) if !map.is_empty() => Some(Items::Object(map.iter())),
        Value::Array(list) if !list.is_empty() => Some(Items::List(list.iter().enumerate())),
        _ => None,
    }
}

/// `remove_list_elements`: `[<digits>]` in each key becomes `[]` (or nothing); the values of
/// keys that become the same are gathered, as Data Prepper's `addFieldsToMapWithMerge`: a
/// second value makes a list of both, later ones are appended (also to a value that was a
/// list, an empty `[]`).
fn remove_indexes(flat: Map<String, Value>, remove_brackets: bool) -> Map<String, Value> {
    let mut merged = Map::new();
    for (key, value) in flat {
        let key = without_indexes(&key, remove_brackets);
        match merged.get_mut(&key) {
            None => {
                merged.insert(key, value);
            }
            Some(Value::Array(list)) => list.push(value),
            Some(slot) => {
                let first = slot.take();
                *slot = Value::Array(vec![first, value]);
            }
        }
    }
    merged
}

/// `key.replaceAll("\\[\\d+\\]", remove_brackets ? "" : "[]")`.
fn without_indexes(key: &str, remove_brackets: bool) -> String {
    let mut out = String::with_capacity(key.len());
    let mut rest = key;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && after.as_bytes().get(digits) == Some(&b']') {
            if !remove_brackets {
                out.push_str("[]");
            }
            rest = &after[digits + 1..];
        } else {
            out.push('[');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use sluice_event::{Event, Metadata};

    use super::{flatten, without_indexes};
    use crate::testing::{invalid, processor, run};

    /// The documented input event of flatten.md (lines 48, 92, 149, 209).
    fn doc_input() -> Value {
        json!({
            "key1": "val1",
            "key2": {"key3": {"key4": "val2"}},
            "list1": [{"list2": [
                {"name": "name1", "value": "value1"},
                {"name": "name2", "value": "value2"}
            ]}]
        })
    }

    /// The processor, and the event it makes of `input` with its tags.
    fn tagged(yaml: &str, input: Value) -> (Value, Vec<String>) {
        crate::testing::tagged(&*processor(yaml), input)
    }

    #[test]
    fn doc_flattens_a_key_into_a_target() {
        // flatten.md:36
        let p = processor("flatten:\n  source: key2\n  target: flattened-key2");
        assert_eq!(
            run(
                &*p,
                json!({"key1": "val1", "key2": {"key3": {"key4": "val2"}}})
            ),
            Some(json!({
                "key1": "val1",
                "key2": {"key3": {"key4": "val2"}},
                "flattened-key2": {"key3.key4": "val2"}
            }))
        );
    }

    #[test]
    fn doc_flattens_the_whole_event_in_place() {
        // flatten.md:79
        let p =
            processor("flatten:\n  source: \"\"\n  target: \"\"\n  remove_processed_fields: true");
        let out = run(&*p, doc_input()).unwrap();
        assert_eq!(
            out,
            json!({
                "key1": "val1",
                "key2.key3.key4": "val2",
                "list1[0].list2[0].name": "name1",
                "list1[0].list2[0].value": "value1",
                "list1[0].list2[1].name": "name2",
                "list1[0].list2[1].value": "value2"
            })
        );
        // In the source's order.
        let keys: Vec<&str> = out
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys[..3],
            ["key1", "key2.key3.key4", "list1[0].list2[0].name"]
        );
    }

    #[test]
    fn doc_exclude_keys_are_left_nested() {
        // flatten.md:135
        let p = processor(
            "flatten:\n  source: \"\"\n  target: \"\"\n  remove_processed_fields: true\n  exclude_keys: [key2]",
        );
        assert_eq!(
            run(&*p, doc_input()),
            Some(json!({
                "key1": "val1",
                "key2": {"key3": {"key4": "val2"}},
                "list1[0].list2[0].name": "name1",
                "list1[0].list2[0].value": "value1",
                "list1[0].list2[1].name": "name2",
                "list1[0].list2[1].value": "value2"
            }))
        );
    }

    #[test]
    fn doc_remove_list_indices_gathers_the_values() {
        // flatten.md:195
        let p = processor(
            "flatten:\n  source: \"\"\n  target: \"\"\n  remove_processed_fields: true\n  remove_list_indices: true",
        );
        assert_eq!(
            run(&*p, doc_input()),
            Some(json!({
                "key1": "val1",
                "key2.key3.key4": "val2",
                "list1[].list2[].name": ["name1", "name2"],
                "list1[].list2[].value": ["value1", "value2"]
            }))
        );
    }

    #[test]
    fn doc_separator_and_a_nested_source_left_empty() {
        // flatten.md:249. The docs leave out `log`; Data Prepper deletes the source's keys,
        // not the source, so `log` stays as `{}` (doc_suspect).
        let p = processor(
            "flatten:\n  source: log\n  target: \"\"\n  flatten_separator: _\n  remove_processed_fields: true",
        );
        let input = json!({
            "timestamp": "2026-07-29T12:00:00Z",
            "service": "user-service",
            "log": {
                "request": {"method": "POST", "url": "/api/v1/users",
                            "headers": {"content_type": "application/json"}},
                "response": {"status": 200, "body": {"user_id": "usr_12345"}}
            }
        });
        assert_eq!(
            run(&*p, input),
            Some(json!({
                "timestamp": "2026-07-29T12:00:00Z",
                "service": "user-service",
                "log": {},
                "request_method": "POST",
                "request_url": "/api/v1/users",
                "request_headers_content_type": "application/json",
                "response_status": 200,
                "response_body_user_id": "usr_12345"
            }))
        );
    }

    #[test]
    fn the_real_key_names_and_brackets_removed() {
        let p = processor(
            "flatten:\n  source: \"\"\n  target: \"\"\n  remove_source_keys: true\n  remove_list_elements: true\n  remove_brackets: true",
        );
        assert_eq!(
            run(&*p, doc_input()),
            Some(json!({
                "key1": "val1",
                "key2.key3.key4": "val2",
                "list1.list2.name": ["name1", "name2"],
                "list1.list2.value": ["value1", "value2"]
            }))
        );
    }

    #[test]
    fn without_removing_a_root_flatten_keeps_the_nested_fields() {
        let p = processor("flatten:\n  source: \"\"\n  target: \"\"");
        let out = run(&*p, json!({"a": {"b": 1}})).unwrap();
        assert_eq!(out, json!({"a": {"b": 1}, "a.b": 1}));
    }

    /// Data Prepper's `FlattenProcessorTest.excludeKeysTestArguments`.
    #[test]
    fn exclude_keys_as_data_prepper_tests_them() {
        let input = json!({
            "key1": "val1",
            "key2": {"key3": {"key.4": "val2"}},
            "list1": [{"list2": [
                {"name": "name1", "value": "value1"},
                {"name": "name2", "value": "value2"}
            ]}]
        });
        let list1 = input["list1"].clone();
        let flat = |source: &str, target: &str, exclude: &str| {
            let p = processor(&format!(
                "flatten:\n  source: \"{source}\"\n  target: \"{target}\"\n  remove_processed_fields: true\n  remove_list_indices: true\n  exclude_keys: {exclude}"
            ));
            run(&*p, input.clone()).unwrap()
        };
        assert_eq!(
            flat("", "", "[list1, no_such_key]"),
            json!({"key1": "val1", "key2.key3.key.4": "val2", "list1": list1})
        );
        assert_eq!(
            flat("", "unmapped", "[key1]"),
            json!({"key1": "val1", "unmapped": {
                "key2.key3.key.4": "val2",
                "list1[].list2[].name": ["name1", "name2"],
                "list1[].list2[].value": ["value1", "value2"]
            }})
        );
        assert_eq!(
            flat("", "unmapped", "[key1, list1]"),
            json!({"key1": "val1", "list1": list1, "unmapped": {"key2.key3.key.4": "val2"}})
        );
        assert_eq!(
            flat("", "unmapped", "[key1, key2/key3]"),
            json!({
                "key1": "val1",
                "key2": {"key3": {"key.4": "val2"}},
                "unmapped": {
                    "key2": {},
                    "list1[].list2[].name": ["name1", "name2"],
                    "list1[].list2[].value": ["value1", "value2"]
                }
            })
        );
        assert_eq!(
            flat("key2", "unmapped", "[key3]"),
            json!({
                "key1": "val1",
                "key2": {"key3": {"key.4": "val2"}},
                "list1": list1,
                "unmapped": {}
            })
        );
    }

    #[test]
    fn leaves_are_kept_and_keys_are_not_quoted() {
        let source = json!({
            "a.b": {"c": 1}, "e": {}, "l": [], "n": null,
            "m": [[1, 2], {"x": true}], "": {"y": 2}, "z": {"": 3}
        });
        assert_eq!(
            flatten(&source, '.'),
            *json!({
                "a.b.c": 1, "e": {}, "l": [], "n": null,
                "m[0][0]": 1, "m[0][1]": 2, "m[1].x": true, "y": 2, "z.": 3
            })
            .as_object()
            .unwrap()
        );
        // A source that is not an object, as json-flattener has it.
        assert_eq!(
            flatten(&json!("t"), '.'),
            *json!({"root": "t"}).as_object().unwrap()
        );
        assert_eq!(
            flatten(&json!([]), '.'),
            *json!({"root": []}).as_object().unwrap()
        );
        assert_eq!(flatten(&json!({}), '.'), serde_json::Map::new());
        assert_eq!(
            flatten(&json!([1, {"a": 2}]), '_'),
            *json!({"[0]": 1, "[1]_a": 2}).as_object().unwrap()
        );
    }

    #[test]
    fn only_digit_indexes_are_removed() {
        assert_eq!(
            without_indexes("a[0].b[12][x][]c[3", false),
            "a[].b[][x][]c[3"
        );
        assert_eq!(without_indexes("[[1]]", true), "[]");
    }

    #[test]
    fn colliding_keys_merge_into_a_list_even_into_an_empty_list() {
        let p = processor("flatten:\n  source: a\n  target: t\n  remove_list_indices: true");
        assert_eq!(
            run(
                &*p,
                json!({"a": {"x": [[], 5, 6], "y": [{"k": 1}, {"k": 2}, {"k": [3]}]}})
            )
            .unwrap()["t"],
            json!({"x[]": [5, 6], "y[].k": [1, 2], "y[].k[]": 3})
        );
    }

    #[test]
    fn failures_tag_the_event_and_keep_it() {
        let yaml = "flatten:\n  source: nope\n  target: t\n  tags_on_failure: [flatten_failed]";
        let (data, tags) = tagged(yaml, json!({"a": 1}));
        assert_eq!(
            (data, tags),
            (json!({"a": 1}), vec!["flatten_failed".to_owned()])
        );
        // A source that is not an object cannot have its keys removed.
        let yaml = "flatten:\n  source: s\n  target: t\n  remove_source_keys: true\n  tags_on_failure: [f]";
        let (data, tags) = tagged(yaml, json!({"s": "text"}));
        assert_eq!((data, tags), (json!({"s": "text"}), vec!["f".to_owned()]));
        // Without removing, it flattens as json-flattener does.
        let p = processor("flatten:\n  source: s\n  target: t");
        assert_eq!(
            run(&*p, json!({"s": "text"})),
            Some(json!({"s": "text", "t": {"root": "text"}}))
        );
        // A flattened key Data Prepper refuses as a key (`:`), at the top level.
        let yaml = "flatten:\n  source: s\n  target: \"\"\n  tags_on_failure: [f]";
        let (data, tags) = tagged(yaml, json!({"s": {"a:b": 1, "c": 2}}));
        assert_eq!(tags, ["f"]);
        assert_eq!(data, json!({"s": {"a:b": 1, "c": 2}}));
        // A target through a value that is not an object; excluded keys still go back.
        let yaml =
            "flatten:\n  source: s\n  target: x/y\n  exclude_keys: [k]\n  tags_on_failure: [f]";
        let (data, tags) = tagged(yaml, json!({"x": 1, "s": {"k": 1, "m": {"n": 2}}}));
        assert_eq!(tags, ["f"]);
        assert_eq!(data, json!({"x": 1, "s": {"m": {"n": 2}, "k": 1}}));
    }

    #[test]
    fn a_slash_in_a_flattened_key_nests_at_the_top_level() {
        let p = processor("flatten:\n  source: s\n  target: \"\"");
        assert_eq!(
            run(&*p, json!({"s": {"a/b": {"c": 1}}})),
            Some(json!({"s": {"a/b": {"c": 1}}, "a": {"b.c": 1}}))
        );
    }

    #[test]
    fn flatten_when_selects_the_events() {
        let p = processor("flatten:\n  source: s\n  target: t\n  flatten_when: /go == true");
        assert_eq!(
            run(&*p, json!({"go": false, "s": {"a": {"b": 1}}})),
            Some(json!({"go": false, "s": {"a": {"b": 1}}}))
        );
        assert_eq!(
            run(&*p, json!({"go": true, "s": {"a": {"b": 1}}})).unwrap()["t"],
            json!({"a.b": 1})
        );
    }

    #[test]
    fn a_deeply_nested_source_does_not_overflow_the_stack() {
        // Far deeper than the 128 levels serde_json parses; built and taken apart by hand,
        // as serde_json's own drop would recurse.
        const DEPTH: usize = 100_000;
        let mut deep = json!(1);
        for _ in 0..DEPTH {
            deep = Value::Array(vec![deep]);
        }
        // Not `json!({"a": deep})`: it serializes `deep`, recursively.
        let mut data = serde_json::Map::new();
        data.insert("a".to_owned(), deep);
        let mut event = Event::new(Value::Object(data), Metadata::new("LOG", 0));
        processor("flatten:\n  source: \"\"\n  target: flat").process(&mut event);
        let flat = event.data["flat"].as_object().unwrap();
        assert_eq!(flat.len(), 1);
        let (key, value) = flat.iter().next().unwrap();
        assert_eq!(key.len(), 1 + 3 * DEPTH);
        assert_eq!(value, &json!(1));
        // Take the nesting apart without recursion.
        let mut at = event.data["a"].take();
        while let Value::Array(mut list) = at {
            at = list.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn config_rules_name_the_key() {
        let e = invalid("flatten:\n  source: a\n  target: b\n  flatten_separator: \"::\"");
        assert!(e.contains("`p.processor[0].flatten.flatten_separator` is `::`: it must be exactly one character"), "{e}");
        let e = invalid("flatten:\n  source: a\n  target: b\n  remove_brackets: true");
        assert!(
            e.contains("can only be true with `remove_list_indices: true`"),
            "{e}"
        );
        let e = invalid("flatten:\n  source: a");
        assert!(e.contains("target"), "{e}");
        let e = invalid("flatten:\n  source: a\n  target: b\n  exclude_keys: [\"a:b\"]");
        assert!(e.contains("key `a:b` has `:`"), "{e}");
        let e = invalid("flatten:\n  source: a\n  target: b\n  remove_processed: true");
        assert!(e.contains("remove_processed"), "{e}");
    }
}
