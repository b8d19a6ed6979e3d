//! `wrap_entries`, as Data Prepper's `WrapEntriesProcessor`: each element of the list at
//! `source` becomes `{key: element}` (so `add_entries`' `iterate_on` can work on a list of
//! text), written to `target` (default: `source`), or appended to the list there with
//! `append_if_target_exists`.
//!
//! A missing `source` leaves the event as it was; an empty list too (nothing is written, even
//! to another `target`). A `source` that is not a list (`null` included), or an existing
//! `target` that is not a list when appending, fails: the event is tagged `tags_on_failure`
//! and left as it was. `exclude_null_empty_values` leaves out `null` and `""` elements; when
//! every element is left out, `[]` is written.

use serde_json::{Map, Value};
use sluice_config::processor::wrap_entries as config;
use sluice_event::{Event, Expression};

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// `wrap_entries`, built: its config as is.
pub struct WrapEntries {
    config: config::WrapEntries,
}

impl BuildProcessor for config::WrapEntries {
    type Processor = WrapEntries;

    fn when(&self) -> Option<&Expression> {
        self.wrap_entries_when.as_ref()
    }

    fn tags_on_failure(&self) -> &[String] {
        &self.tags_on_failure
    }

    fn build(&self) -> Result<WrapEntries, BuildError> {
        Ok(WrapEntries {
            config: self.clone(),
        })
    }
}

impl Apply for WrapEntries {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        let config = &self.config;
        let list = match event.get(&config.source) {
            None => return Ok(Fate::Keep),
            Some(Value::Array(list)) if list.is_empty() => return Ok(Fate::Keep),
            Some(Value::Array(list)) => list,
            Some(_) => return Err(Failure::new("the source is not a list")),
        };
        let wrapped = list
            .iter()
            .filter(|element| {
                let null_or_empty = match element {
                    Value::Null => true,
                    Value::String(s) => s.is_empty(),
                    _ => false,
                };
                !(config.exclude_null_empty_values && null_or_empty)
            })
            .map(|element| {
                let mut object = Map::with_capacity(1);
                object.insert(config.key.clone(), element.clone());
                Value::Object(object)
            })
            .collect::<Vec<_>>();
        let target = config.target();
        let value = match event.get(target) {
            Some(existing) if config.append_if_target_exists => {
                let Value::Array(existing) = existing else {
                    return Err(Failure::new("the target exists and is not a list"));
                };
                let mut all = existing.clone();
                all.extend(wrapped);
                all
            }
            _ => wrapped,
        };
        event
            .put(target, Value::Array(value))
            .map_err(|e| e.to_string())?;
        Ok(Fate::Keep)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{invalid, processor, run, tagged};

    #[test]
    fn wraps_each_element_in_place_or_at_a_target() {
        let p = processor("wrap_entries:\n  source: /names\n  key: name");
        assert_eq!(
            run(&*p, json!({"names": ["alice", null, ""]})),
            Some(json!({"names": [{"name": "alice"}, {"name": null}, {"name": ""}]}))
        );
        assert_eq!(run(&*p, json!({"names": []})), Some(json!({"names": []})));
        assert_eq!(run(&*p, json!({"other": 1})), Some(json!({"other": 1})));
        let p = processor(
            "wrap_entries:\n  source: items\n  target: out/list\n  key: a/b\n  exclude_null_empty_values: true",
        );
        assert_eq!(
            run(&*p, json!({"items": [null, "", 3]})),
            Some(json!({"items": [null, "", 3], "out": {"list": [{"a/b": 3}]}}))
        );
        assert_eq!(
            run(&*p, json!({"items": [null, ""]})),
            Some(json!({"items": [null, ""], "out": {"list": []}}))
        );
    }

    #[test]
    fn appends_to_an_existing_list_and_tags_what_is_not_a_list() {
        let p = processor(
            "wrap_entries:\n  source: s\n  target: t\n  key: k\n  append_if_target_exists: true\n  tags_on_failure: [wrap_failed]",
        );
        assert_eq!(
            tagged(&*p, json!({"s": [1], "t": [{"k": 0}]})),
            (json!({"s": [1], "t": [{"k": 0}, {"k": 1}]}), vec![])
        );
        assert_eq!(
            tagged(&*p, json!({"s": [1]})),
            (json!({"s": [1], "t": [{"k": 1}]}), vec![])
        );
        assert_eq!(
            tagged(&*p, json!({"s": [1], "t": "x"})),
            (json!({"s": [1], "t": "x"}), vec!["wrap_failed".to_owned()])
        );
        assert_eq!(
            tagged(&*p, json!({"s": null})),
            (json!({"s": null}), vec!["wrap_failed".to_owned()])
        );
    }

    #[test]
    fn wrap_entries_when_selects() {
        let p = processor(
            "wrap_entries:\n  source: s\n  key: k\n  wrap_entries_when: '/type == \"tagged\"'",
        );
        assert_eq!(
            run(&*p, json!({"s": [1], "type": "other"})),
            Some(json!({"s": [1], "type": "other"}))
        );
        assert_eq!(
            run(&*p, json!({"s": [1], "type": "tagged"})),
            Some(json!({"s": [{"k": 1}], "type": "tagged"}))
        );
    }

    #[test]
    fn source_and_key_are_required() {
        let e = invalid("wrap_entries:\n  source: s");
        assert!(e.contains("missing field `key`"), "{e}");
        let e = invalid("wrap_entries:\n  source: s\n  key: ''");
        assert!(e.contains("wrap_entries.key` is empty"), "{e}");
    }
}
